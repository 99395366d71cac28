// opweave core (internal): this process's decompressed precompiled preludes.
//
// A prelude entry keeps its precompiled header compressed (see
// precompiled_header.hpp), and a compile needs it as a file. Decompressing
// it takes about 15 ms, a tenth of a small module's compile, so a process
// decompresses each prelude once, into a private directory of its own in
// the cache's tmp/ (a StagingDir: mode 0700, with an owner lock, so a
// sweep removes it once the process is gone), and each build hard-links
// that copy into its own staging directory.
//
// The process that made the copies removes them at exit. A forked child
// starts with none: the parent's directories stay the parent's (their lock
// descriptors are closed in the child, see util/fork_guard.hpp).
//
// A copy is written where the cache's other processes find it when it can
// be (cache/unpacked_preludes.hpp): then it is that shared copy, which this
// process neither removes nor checks (it wrote it from verified bytes).
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "cache/staging_dir.hpp"

namespace opweave::builder {

class PreludeCopies {
public:
    // The one of this process (never destroyed: see remove_at_exit).
    static PreludeCopies& get();

    struct Copy {
        std::filesystem::path path;
        bool shared = false;  // in v2/unpacked/, else in this process's directory
    };

    // The copy, in the cache whose tmp/ is `tmp`, of the prelude whose
    // compressed file has the SHA-256 `sha256`, if this process made one.
    std::optional<Copy> find(const std::filesystem::path& tmp, const std::string& sha256);

    // Keeps `content` (decompressed from a file with the SHA-256 `sha256`,
    // the frame of the prelude `key`) as that copy, shared when it can be,
    // and returns it; nothing when it cannot be written.
    std::optional<Copy> keep(const std::filesystem::path& tmp, const std::string& key,
                             const std::string& sha256, std::string_view content);

private:
    PreludeCopies();
    // Under m_mutex: forgets, without removing, what a parent process made.
    void forget_if_forked();
    static void remove_at_exit() noexcept;

    std::mutex m_mutex;
    pid_t m_pid;
    std::map<std::filesystem::path, std::unique_ptr<StagingDir>> m_dirs;  // by tmp/
    std::map<std::pair<std::filesystem::path, std::string>, Copy> m_copies;
};

}  // namespace opweave::builder
