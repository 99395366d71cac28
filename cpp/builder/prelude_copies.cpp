// opweave core (internal): decompressed preludes (see prelude_copies.hpp).
#include "builder/prelude_copies.hpp"

#include <pthread.h>
#include <unistd.h>

#include <cstdlib>

#include "cache/unpacked_preludes.hpp"
#include "opweave/errors.hpp"
#include "util/fs.hpp"

namespace opweave::builder {

PreludeCopies& PreludeCopies::get() {
    // Leaked on purpose: a child forked from this process must not run the
    // destructors of its parent's directories.
    static PreludeCopies* const copies = [] {
        auto* made = new PreludeCopies();
        std::atexit(&PreludeCopies::remove_at_exit);
        // A fork while another thread holds the mutex must not leave it held
        // in the child, where that thread does not exist.
        ::pthread_atfork([] { get().m_mutex.lock(); }, [] { get().m_mutex.unlock(); },
                         [] { get().m_mutex.unlock(); });
        return made;
    }();
    return *copies;
}

PreludeCopies::PreludeCopies() : m_pid(::getpid()) {}

void PreludeCopies::forget_if_forked() {
    if (m_pid == ::getpid()) {
        return;
    }
    for (auto& [tmp, dir] : m_dirs) {
        static_cast<void>(dir.release());  // the parent's: never removed here
    }
    m_dirs.clear();
    m_copies.clear();
    m_pid = ::getpid();
}

std::optional<PreludeCopies::Copy> PreludeCopies::find(const std::filesystem::path& tmp,
                                                      const std::string& sha256) {
    const std::lock_guard<std::mutex> held(m_mutex);
    forget_if_forked();
    const auto found = m_copies.find({tmp, sha256});
    if (found == m_copies.end()) {
        return std::nullopt;
    }
    return found->second;
}

std::optional<PreludeCopies::Copy> PreludeCopies::keep(const std::filesystem::path& tmp,
                                                      const std::string& key,
                                                      const std::string& sha256,
                                                      std::string_view content) {
    const std::lock_guard<std::mutex> held(m_mutex);
    forget_if_forked();
    if (const std::optional<cache::UnpackedCopy> shared =
            cache::share_unpacked(tmp.parent_path(), key, sha256, content)) {
        return m_copies[{tmp, sha256}] = Copy{shared->path, true};
    }
    try {
        std::unique_ptr<StagingDir>& dir = m_dirs[tmp];
        if (!dir) {
            dir = std::make_unique<StagingDir>(tmp, "preludes");
        }
        const std::filesystem::path copy = dir->path() / (sha256 + ".gch");
        util::write_file_atomic(copy, content);
        return m_copies[{tmp, sha256}] = Copy{copy, false};
    } catch (const CacheError&) {
        return std::nullopt;  // the build decompresses into its own directory
    }
}

void PreludeCopies::remove_at_exit() noexcept {
    PreludeCopies& copies = get();
    const std::lock_guard<std::mutex> held(copies.m_mutex);
    copies.forget_if_forked();
    copies.m_copies.clear();
    copies.m_dirs.clear();  // removes each directory and its owner lock
}

}  // namespace opweave::builder
