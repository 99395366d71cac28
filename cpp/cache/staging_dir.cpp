// opweave core: StagingDir (see cpp/cache/staging_dir.hpp).
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
#include "cache/staging_dir.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "util/dir.hpp"
#include "util/fs.hpp"

namespace opweave {

namespace {

constexpr std::string_view k_lock_suffix = ".lock";
constexpr int k_owner_lock_timeout_seconds = 10;

bool ends_with(const std::string& text, std::string_view suffix) {
    return text.size() >= suffix.size() &&
           text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

int duplicate(int fd, const std::filesystem::path& path) {
    const int copy = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (copy < 0) {
        throw CacheError("cannot use directory " + path.string() + ": " + std::strerror(errno),
                         path);
    }
    return copy;
}

util::Fd open_parent(const std::filesystem::path& parent) {
    util::make_dirs(parent);
    util::Fd fd(::open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!fd) {
        throw CacheError("cannot open " + parent.string() + ": " + std::strerror(errno), parent);
    }
    return fd;
}

}  // namespace

StagingDir::StagingDir(const std::filesystem::path& parent, std::string_view prefix)
    : StagingDir(open_parent(parent).get(), parent, prefix) {}

StagingDir::StagingDir(int parent_fd, const std::filesystem::path& parent, std::string_view prefix)
    : m_owner(std::filesystem::path()) {
    // Owned here until the directory exists, so that a throw closes it.
    util::Fd parent_copy(duplicate(parent_fd, parent));
    const util::Dir dir(util::Fd(duplicate(parent_fd, parent)), parent);
    for (int attempt = 0; attempt < 100; ++attempt) {
        const std::string name = std::string(prefix) + "." + std::to_string(::getpid()) + "." +
                                 util::random_suffix();
        const std::string lock_name = name + std::string(k_lock_suffix);
        FileLock owner(parent_copy.get(), lock_name, parent / lock_name);
        // Only a sweeper can hold a fresh name's lock, and only for an instant.
        owner.acquire(std::chrono::seconds(k_owner_lock_timeout_seconds));
        if (dir.make_dir(name, 0700)) {
            m_parent_fd = parent_copy.release();
            m_name = name;
            m_path = parent / name;
            m_owner = std::move(owner);
            return;
        }
        const int saved = errno;
        if (saved != EEXIST) {
            owner.release_and_remove();
            throw CacheError("cannot create staging directory " + (parent / name).string() +
                                 ": " + std::strerror(saved),
                             parent / name);
        }
        owner.release();  // the name is taken: leave that directory's lock file alone
    }
    throw CacheError("cannot find a free staging directory name", parent);
}

StagingDir::~StagingDir() {
    discard();
    if (m_parent_fd >= 0) {
        ::close(m_parent_fd);
    }
}

void StagingDir::discard() noexcept {
    if (!m_active) {
        return;
    }
    m_active = false;
    util::remove_tree_at(m_parent_fd, m_name.c_str());
    m_owner.release_and_remove();
}

Published StagingDir::publish(int dir_fd, std::string_view name) {
    if (!m_active) {
        throw CacheError("staging directory was already published or discarded", m_path);
    }
    if (::renameat(m_parent_fd, m_name.c_str(), dir_fd, std::string(name).c_str()) == 0) {
        m_active = false;
        m_owner.release_and_remove();
        return Published::yes;
    }
    const int saved = errno;
    if (saved == EEXIST || saved == ENOTEMPTY) {
        discard();
        return Published::lost_race;
    }
    throw CacheError("cannot publish " + m_path.string() + " as " + std::string(name) + ": " +
                         std::strerror(saved),
                     m_path);
}

Published StagingDir::publish(const std::filesystem::path& destination) {
    const util::Fd parent(
        ::open(destination.parent_path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!parent) {
        if (!m_active) {
            throw CacheError("staging directory was already published or discarded", m_path);
        }
        throw CacheError("cannot open " + destination.parent_path().string() + ": " +
                             std::strerror(errno),
                         destination);
    }
    return publish(parent.get(), destination.filename().string());
}

std::size_t StagingDir::sweep(const std::filesystem::path& parent, double grace_seconds) noexcept {
    const util::Fd fd(::open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    return fd ? sweep(fd.get(), grace_seconds) : 0;
}

std::size_t StagingDir::sweep(int parent_fd, double grace_seconds) noexcept {
    std::vector<std::string> names;
    std::optional<util::Dir> parent;
    try {
        parent.emplace(util::Fd(::fcntl(parent_fd, F_DUPFD_CLOEXEC, 0)), std::filesystem::path());
        if (!parent->valid()) {
            return 0;
        }
        names = parent->list();
    } catch (...) {
        return 0;
    }
    std::size_t removed = 0;
    const double now = util::now_seconds();
    for (const std::string& name : names) {
        try {
            if (ends_with(name, k_lock_suffix)) {
                // A lock file whose directory is gone: its owner died between
                // removing the directory and removing the lock file.
                const std::string dir = name.substr(0, name.size() - k_lock_suffix.size());
                if (!parent->stat(dir) && errno == ENOENT) {
                    FileLock orphan(parent_fd, name, name);
                    if (orphan.try_acquire()) {
                        orphan.release_and_remove();
                    }
                }
                continue;
            }
            const std::string lock_name = name + std::string(k_lock_suffix);
            if (parent->stat(lock_name)) {
                FileLock owner(parent_fd, lock_name, lock_name);
                if (owner.try_acquire()) {
                    removed += parent->remove(name) ? 1 : 0;
                    owner.release_and_remove();
                }
                continue;
            }
            const auto st = parent->stat(name);
            if (st && now - util::mtime_seconds(*st) > grace_seconds) {
                removed += parent->remove(name) ? 1 : 0;
            }
        } catch (...) {
            // Unreadable or vanished: nothing to clean.
        }
    }
    return removed;
}

}  // namespace opweave
