// opweave core: StagingDir (see include/opweave/staging_dir.hpp).
//
// Ownership protocol. The owner first takes the lock `<name>.lock`, and only
// then creates `<name>/` with mkdir. It keeps the lock until the directory is
// published (renamed away) or removed, and removes the lock file last. So a
// directory never exists without a held lock while its owner lives, and a
// sweeper that can take `<name>.lock` knows the owner's process is dead (the
// kernel released its flock) and may remove `<name>/`.
//
// Races with sweepers:
//  - A sweeper may take `<name>.lock` in the instant between the owner's
//    open(O_CREAT) and its flock, see no directory, and remove the file as an
//    orphan. FileLock notices that the file it locked lost its name and
//    retries, and the owner's acquire() waits out the sweeper's brief hold.
//  - A directory with no lock file at all can only be left by an older layout
//    or a manual copy; it is removed once older than the grace period.
#include "opweave/staging_dir.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "util/fs.hpp"

namespace opweave {

namespace {

constexpr std::string_view k_lock_suffix = ".lock";
constexpr int k_owner_lock_timeout_seconds = 10;

std::filesystem::path lock_path_for(const std::filesystem::path& dir) {
    return std::filesystem::path(dir.string() + std::string(k_lock_suffix));
}

bool ends_with(const std::string& text, std::string_view suffix) {
    return text.size() >= suffix.size() &&
           text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

StagingDir::StagingDir(const std::filesystem::path& parent, std::string_view prefix,
                       unsigned mode)
    : m_owner(std::filesystem::path()) {
    util::make_dirs(parent, mode);
    for (int attempt = 0; attempt < 100; ++attempt) {
        const std::filesystem::path candidate =
            parent / (std::string(prefix) + "." + std::to_string(::getpid()) + "." +
                      util::random_suffix());
        FileLock owner(lock_path_for(candidate));
        // Only a sweeper can hold a fresh name's lock, and only for an instant.
        owner.acquire(std::chrono::seconds(k_owner_lock_timeout_seconds));
        if (::mkdir(candidate.c_str(), static_cast<mode_t>(mode)) == 0) {
            m_path = candidate;
            m_owner = std::move(owner);
            return;
        }
        const int saved = errno;
        if (saved != EEXIST) {
            owner.release_and_remove();
            throw CacheError("cannot create staging directory " + candidate.string() + ": " +
                                 std::strerror(saved),
                             candidate);
        }
        owner.release();  // the name is taken: leave that directory's lock file alone
    }
    throw CacheError("cannot find a free staging directory name", parent);
}

StagingDir::~StagingDir() { discard(); }

void StagingDir::discard() noexcept {
    if (!m_active) {
        return;
    }
    m_active = false;
    util::remove_tree(m_path);
    m_owner.release_and_remove();
}

Published StagingDir::publish(const std::filesystem::path& destination) {
    if (!m_active) {
        throw CacheError("staging directory was already published or discarded", m_path);
    }
    if (::rename(m_path.c_str(), destination.c_str()) == 0) {
        m_active = false;
        m_owner.release_and_remove();
        return Published::yes;
    }
    const int saved = errno;
    if (saved == EEXIST || saved == ENOTEMPTY) {
        discard();
        return Published::lost_race;
    }
    throw CacheError("cannot publish " + m_path.string() + " as " + destination.string() + ": " +
                         std::strerror(saved),
                     destination);
}

std::size_t StagingDir::sweep(const std::filesystem::path& parent, double grace_seconds) noexcept {
    std::vector<std::string> names;
    try {
        names = util::list_dir(parent);
    } catch (...) {
        return 0;
    }
    std::size_t removed = 0;
    const double now = util::now_seconds();
    for (const std::string& name : names) {
        if (ends_with(name, k_lock_suffix)) {
            // A lock file whose directory is gone: its owner died between
            // removing the directory and removing the lock file.
            const std::filesystem::path dir = parent / name.substr(0, name.size() - k_lock_suffix.size());
            struct stat st {};
            if (::lstat(dir.c_str(), &st) != 0 && errno == ENOENT) {
                FileLock orphan(parent / name);
                try {
                    if (orphan.try_acquire()) {
                        orphan.release_and_remove();
                    }
                } catch (...) {
                }
            }
            continue;
        }
        const std::filesystem::path dir = parent / name;
        const std::filesystem::path lock_path = lock_path_for(dir);
        struct stat lock_st {};
        if (::stat(lock_path.c_str(), &lock_st) == 0) {
            FileLock owner(lock_path);
            bool owner_gone = false;
            try {
                owner_gone = owner.try_acquire();
            } catch (...) {
                owner_gone = false;
            }
            if (owner_gone) {
                removed += util::remove_tree(dir) ? 1 : 0;
                owner.release_and_remove();
            }
            continue;
        }
        struct stat dir_st {};
        if (::lstat(dir.c_str(), &dir_st) == 0 &&
            now - static_cast<double>(dir_st.st_mtime) > grace_seconds) {
            removed += util::remove_tree(dir) ? 1 : 0;
        }
    }
    return removed;
}

}  // namespace opweave
