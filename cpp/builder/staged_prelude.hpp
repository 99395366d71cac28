// opweave core (internal): the prelude a compile reads, staged in the
// build's private directory.
//
// GCC finds a precompiled header by name, next to the header that
// `-include` names, and reads it while the prelude's entry may be checked
// on another thread (or replaced by another process). So a compile never
// reads the prelude where its entry keeps it: the header and the
// precompiled header are hard-linked into the build's private staging
// directory (copied where linking is refused, e.g. across filesystems),
// hashed there, and only a build whose staged files have the content the
// verified entry records keeps the compile that read them. A compressed
// precompiled header (precompiled_header.hpp) is read once, hashed as read,
// and decompressed into the staging directory: what the compile reads comes
// from the bytes that were hashed. A decompressed copy another process
// shared (cache/unpacked_preludes.hpp) is linked instead, and its content
// checked (check_copies) before a compile that read it is kept.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "builder/prelude_copies.hpp"
#include "opweave/compiler.hpp"
#include "opweave/module_cache.hpp"

namespace opweave::builder {

class StagedPrelude {
public:
    // Stages the prelude of the entry at `entry_dir` in `into`, before it
    // is verified: a hard link changes the file's ctime, which the
    // per-process memo of hashed versions keys on, so the verification
    // that follows hashes the staged inode once and verify() finds it in
    // the memo. Nothing when either file is missing, not a regular file,
    // or cannot be staged.
    static std::optional<StagedPrelude> stage(const std::filesystem::path& entry_dir,
                                              const std::filesystem::path& into);
    // Whether the entry at `entry_dir` holds a precompiled header (as it is
    // or compressed) to stage.
    static bool present(const std::filesystem::path& entry_dir);

    StagedPrelude(StagedPrelude&& other) noexcept;
    StagedPrelude& operator=(StagedPrelude&&) = delete;
    StagedPrelude(const StagedPrelude&) = delete;
    StagedPrelude& operator=(const StagedPrelude&) = delete;
    // Removes the staged files, so that they are never published with an
    // entry.
    ~StagedPrelude();

    // Whether each staged copy another process shared has the SHA-256 its
    // name says (see cache/unpacked_preludes.hpp); one that has not is
    // removed. May run on another thread while the compile reads the files;
    // verify() runs it if it has not.
    bool check_copies();
    // Whether the staged files are exactly those `verified` (the prelude's
    // entry, just verified) records, shared copies checked; if so, its
    // headers become headers().
    bool verify(const Entry& verified);
    // The compiler flags that include the staged prelude.
    std::vector<std::string> include_flags() const;
    // `result`'s commands with the staged header named where its entry keeps
    // it, as the entry's record shows them (the staged one is gone after the
    // build).
    void cite_entry(CompileResult& result) const;
    // The headers the prelude's build read (those of the verified entry;
    // none before verify()).
    const std::vector<HeaderRecord>& headers() const noexcept { return m_headers; }

private:
    StagedPrelude(std::filesystem::path from, std::filesystem::path dir)
        : m_from(std::move(from)), m_dir(std::move(dir)) {}

    // A file of the entry and its staged form: a link to it (`sha256`
    // empty: hashed when verified), or its decompressed content (then the
    // size and SHA-256 of the bytes read from the entry); `copy`: the copy
    // of that content another process shared, which must have the SHA-256
    // `copy_sha256` (empty: nothing to check).
    struct File {
        std::string entry_name;
        std::string staged_name;
        std::uint64_t size = 0;
        std::string sha256;
        std::filesystem::path copy;
        std::string copy_sha256;
    };

    // Links `name`, or decompresses it into the staged precompiled header.
    bool link(const std::string& name);
    bool decompress(const std::string& name);
    // Puts `copy` (a decompressed precompiled header) in the staging directory.
    bool stage_copy(const PreludeCopies::Copy& copy) const;

    std::filesystem::path m_from;  // the entry's directory
    std::filesystem::path m_dir;   // where it is staged; empty once moved from
    std::vector<File> m_files;     // the files staged
    std::vector<HeaderRecord> m_headers;
    std::optional<bool> m_copies_hold;  // what check_copies() found, once it ran
};

}  // namespace opweave::builder
