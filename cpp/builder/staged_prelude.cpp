// opweave core (internal): staged preludes (see staged_prelude.hpp).
#include "builder/staged_prelude.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

#include "builder/prelude_copies.hpp"
#include "cache/unpacked_preludes.hpp"
#include "cache/file_digest.hpp"
#include "opweave/hash.hpp"
#include "opweave/precompiled_header.hpp"
#include "util/fd.hpp"
#include "util/fs.hpp"
#include "util/zstd.hpp"

namespace opweave::builder {

namespace {

// A compressed precompiled header is far below this, and its content below
// the second: more is not a prelude.
constexpr std::size_t k_max_frame_bytes = 256u << 20;
constexpr std::size_t k_max_gch_bytes = 2048u << 20;

// `path` opened for reading without following a symlink or blocking on a
// FIFO, with its stat in `st`, if it is a regular file; else an invalid Fd.
util::Fd open_regular(const std::filesystem::path& path, struct stat& st) {
    util::Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
    if (!fd || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
        return util::Fd();
    }
    return fd;
}

// The content of the regular file `path` (see open_regular), if it holds
// at most `max_bytes`.
std::optional<std::string> read_regular(const std::filesystem::path& path, std::size_t max_bytes) {
    struct stat st {};
    const util::Fd fd = open_regular(path, st);
    if (!fd || static_cast<std::uint64_t>(st.st_size) > max_bytes) {
        return std::nullopt;
    }
    return util::read_all(fd.get(), max_bytes);
}

// Puts the file `from` at `to`: a hard link, or a copy where linking is
// refused (another filesystem, or fs.protected_hardlinks on a file of
// another user). Neither follows a symlink or blocks on a FIFO at `from`.
bool link_or_copy(const std::filesystem::path& from, const std::filesystem::path& to) {
    if (::linkat(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), 0) == 0) {
        return true;
    }
    const std::optional<std::string> bytes = read_regular(from, SIZE_MAX);
    if (!bytes) {
        return false;
    }
    util::write_file_atomic(to, *bytes);
    return true;
}

// Whether `path` is a regular file (opened without following a symlink or
// blocking on a FIFO) of `size` bytes with the SHA-256 `sha256`.
bool has_content(const std::filesystem::path& path, std::uint64_t size, const std::string& sha256) {
    struct stat st {};
    const util::Fd fd = open_regular(path, st);
    if (!fd || static_cast<std::uint64_t>(st.st_size) != size) {
        return false;
    }
    return cache::file_sha256(fd.get(), st, cache::Memo::use) == sha256;
}

}  // namespace

std::optional<StagedPrelude> StagedPrelude::stage(const std::filesystem::path& entry_dir,
                                                  const std::filesystem::path& into) {
    StagedPrelude staged(entry_dir, into);
    std::error_code absent;
    const bool compressed = std::filesystem::is_regular_file(entry_dir / k_prelude_zst_name, absent);
    if (!staged.link(k_prelude_header_name) ||
        !(compressed ? staged.decompress(k_prelude_zst_name) : staged.link(k_prelude_gch_name))) {
        return std::nullopt;
    }
    return std::optional<StagedPrelude>(std::move(staged));
}

bool StagedPrelude::present(const std::filesystem::path& entry_dir) {
    std::error_code absent;
    return std::filesystem::is_regular_file(entry_dir / k_prelude_zst_name, absent) ||
           std::filesystem::is_regular_file(entry_dir / k_prelude_gch_name, absent);
}

bool StagedPrelude::link(const std::string& name) {
    m_files.push_back({name, name, 0, {}, {}, {}});  // removed by the destructor, from now on
    return link_or_copy(m_from / name, m_dir / name);
}

bool StagedPrelude::decompress(const std::string& name) {
    struct stat st {};
    const util::Fd fd = open_regular(m_from / name, st);
    if (!fd || static_cast<std::uint64_t>(st.st_size) > k_max_frame_bytes) {
        return false;
    }
    const std::filesystem::path tmp = m_dir.parent_path();
    const std::string key = m_from.filename().string();
    // This version of the file decompressed before, by this process (its
    // frame had the hash verify() compares) or by another that shared it
    // (checked before the compile is kept): link that copy.
    if (const std::optional<std::string> known = cache::file_sha256(fd.get(), st, cache::Memo::use)) {
        m_files.push_back({name, k_prelude_gch_name, static_cast<std::uint64_t>(st.st_size),
                           *known, {}, {}});
        if (const std::optional<PreludeCopies::Copy> own = PreludeCopies::get().find(tmp, *known)) {
            if (stage_copy(*own)) {
                return true;
            }
        } else if (const std::optional<cache::UnpackedCopy> shared =
                       cache::find_unpacked(tmp.parent_path(), key, *known)) {
            m_files.back().copy = shared->path;
            m_files.back().copy_sha256 = shared->sha256;
            if (stage_copy({shared->path, true})) {
                return true;
            }
        }
        m_files.pop_back();
    }
    if (::lseek(fd.get(), 0, SEEK_SET) != 0) {
        return false;
    }
    const std::optional<std::string> frame = util::read_all(fd.get(), k_max_frame_bytes);
    const std::optional<std::string> content =
        frame ? util::zstd_decompress(*frame, k_max_gch_bytes) : std::nullopt;
    if (!content) {
        return false;  // damaged (verification says so), or no libzstd here
    }
    const std::string sha256 = to_hex(Sha256::of(*frame));
    m_files.push_back({name, k_prelude_gch_name, frame->size(), sha256, {}, {}});
    const std::optional<PreludeCopies::Copy> copy =
        PreludeCopies::get().keep(tmp, key, sha256, *content);
    if (!copy || !stage_copy(*copy)) {
        util::write_file_atomic(m_dir / k_prelude_gch_name, *content);
    }
    return true;
}

bool StagedPrelude::stage_copy(const PreludeCopies::Copy& copy) const {
    const std::filesystem::path staged = m_dir / k_prelude_gch_name;
    // A shared copy by a symbolic link, which leaves its ctime (its version)
    // as it is; this process's own by a hard link.
    return copy.shared ? ::symlink(copy.path.c_str(), staged.c_str()) == 0
                       : ::linkat(AT_FDCWD, copy.path.c_str(), AT_FDCWD, staged.c_str(), 0) == 0;
}

bool StagedPrelude::check_copies() {
    if (!m_copies_hold) {
        bool hold = true;
        for (const File& file : m_files) {
            if (!file.copy_sha256.empty() && !cache::has_sha256(file.copy, file.copy_sha256)) {
                // Not left for the next process to compile with and check
                // again: it decompresses the frame and shares a good copy.
                ::unlink(file.copy.c_str());
                hold = false;
            }
        }
        m_copies_hold = hold;
    }
    return *m_copies_hold;
}

StagedPrelude::StagedPrelude(StagedPrelude&& other) noexcept
    : m_from(std::move(other.m_from)),
      m_dir(std::move(other.m_dir)),
      m_files(std::move(other.m_files)),
      m_headers(std::move(other.m_headers)),
      m_copies_hold(other.m_copies_hold) {
    other.m_dir.clear();
}

StagedPrelude::~StagedPrelude() {
    if (m_dir.empty()) {
        return;
    }
    for (const File& file : m_files) {
        ::unlink((m_dir / file.staged_name).c_str());
    }
}

bool StagedPrelude::verify(const Entry& verified) {
    if (!check_copies()) {
        return false;
    }
    for (const File& staged : m_files) {
        bool recorded = false;
        for (const EntryFile& file : verified.files) {
            recorded = recorded ||
                       (file.name == staged.entry_name &&
                        (staged.sha256.empty()
                             ? has_content(m_dir / staged.staged_name, file.size, file.sha256)
                             : staged.size == file.size && staged.sha256 == file.sha256));
        }
        if (!recorded) {
            return false;
        }
    }
    m_headers = verified.headers;
    return !m_files.empty();
}

std::vector<std::string> StagedPrelude::include_flags() const {
    return prelude_include_flags(m_dir);
}

void StagedPrelude::cite_entry(CompileResult& result) const {
    const std::string staged = (m_dir / k_prelude_header_name).string();
    for (std::vector<std::string>& command : result.commands) {
        for (std::string& word : command) {
            if (word == staged) {
                word = (m_from / k_prelude_header_name).string();
            }
        }
    }
}

}  // namespace opweave::builder
