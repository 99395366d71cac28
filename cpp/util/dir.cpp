// opweave core (internal): Dir (see dir.hpp).
#include "util/dir.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "util/fs.hpp"

namespace opweave::util {

namespace {

constexpr int k_dir_flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;

// Calls `visit(name, d_type)` for each entry of the open directory `dir_fd`
// but "." and "..". The scan uses a duplicate, so `dir_fd` stays usable.
template <typename Visit>
bool for_each_entry(int dir_fd, Visit visit) noexcept {
    const int scan_fd = ::fcntl(dir_fd, F_DUPFD_CLOEXEC, 0);
    if (scan_fd < 0) {
        return false;
    }
    DIR* dir = ::fdopendir(scan_fd);
    if (dir == nullptr) {
        ::close(scan_fd);
        return false;
    }
    ::rewinddir(dir);  // the duplicate shares the original's offset
    while (const dirent* entry = ::readdir(dir)) {
        if (std::strcmp(entry->d_name, ".") != 0 && std::strcmp(entry->d_name, "..") != 0) {
            visit(entry->d_name);
        }
    }
    ::closedir(dir);  // also closes scan_fd
    return true;
}

bool remove_contents(int dir_fd) noexcept {
    bool ok = true;
    const bool listed = for_each_entry(dir_fd, [&](const char* name) {
        if (::unlinkat(dir_fd, name, 0) == 0 || errno == ENOENT) {
            return;
        }
        if (errno != EISDIR && errno != EPERM) {
            ok = false;
            return;
        }
        Fd child(::openat(dir_fd, name, k_dir_flags));
        if (!child) {
            ok = ok && errno == ENOENT;
            return;
        }
        ok = remove_contents(child.get()) && ok;
        if (::unlinkat(dir_fd, name, AT_REMOVEDIR) != 0 && errno != ENOENT) {
            ok = false;
        }
    });
    return listed && ok;
}

std::uint64_t size_below(int dir_fd) noexcept {
    std::uint64_t total = 0;
    for_each_entry(dir_fd, [&](const char* name) {
        struct stat st {};
        if (::fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
            return;
        }
        if (S_ISREG(st.st_mode)) {
            total += static_cast<std::uint64_t>(st.st_size);
        } else if (S_ISDIR(st.st_mode)) {
            Fd child(::openat(dir_fd, name, k_dir_flags));
            if (child) {
                total += size_below(child.get());
            }
        }
    });
    return total;
}

}  // namespace

Owners Owners::with(uid_t uid) const noexcept {
    Owners more = *this;
    if (!contains(uid) && m_count < 2) {
        more.m_also[more.m_count++] = uid;
    }
    return more;
}

bool Owners::contains(uid_t uid) const noexcept {
    if (uid == ::geteuid()) {
        return true;
    }
    for (int i = 0; i < m_count; ++i) {
        if (m_also[i] == uid) {
            return true;
        }
    }
    return false;
}

Trust check_trust(const struct stat& st, bool want_dir) noexcept {
    return check_trust(st, want_dir, Owners());
}

Trust check_trust(const struct stat& st, bool want_dir, const Owners& owners) noexcept {
    if (want_dir ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode)) {
        return Trust::wrong_type;
    }
    if (!owners.contains(st.st_uid)) {
        return Trust::foreign_owner;
    }
    if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
        return Trust::writable_by_others;
    }
    return Trust::ok;
}

std::string describe_trust(Trust trust, const struct stat& st) {
    switch (trust) {
    case Trust::ok:
        return "is trusted";
    case Trust::wrong_type:
        if (S_ISLNK(st.st_mode)) {
            return "is a symlink";
        }
        return S_ISDIR(st.st_mode) ? "is a directory, not a file" : "is not a directory";
    case Trust::foreign_owner:
        return "is owned by uid " + std::to_string(st.st_uid) + ", not by this user (uid " +
               std::to_string(::geteuid()) + ")";
    case Trust::writable_by_others:
        return "is writable by group or others (mode " + octal_mode(st.st_mode) + ")";
    }
    return "is not trusted";
}

std::optional<Dir> Dir::open(const std::filesystem::path& path) {
    Fd fd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!fd) {
        return std::nullopt;
    }
    return Dir(std::move(fd), path);
}

std::optional<struct stat> Dir::stat(std::string_view name) const {
    struct stat st {};
    if (::fstatat(fd(), std::string(name).c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
        return std::nullopt;
    }
    return st;
}

std::optional<struct stat> Dir::stat_self() const {
    struct stat st {};
    if (::fstat(fd(), &st) != 0) {
        return std::nullopt;
    }
    return st;
}

std::optional<Dir> Dir::open_dir(std::string_view name) const {
    const std::string text(name);
    Fd child(::openat(fd(), text.c_str(), k_dir_flags));
    if (!child) {
        return std::nullopt;
    }
    return Dir(std::move(child), m_path / text);
}

bool Dir::make_dir(std::string_view name, unsigned mode) const {
    const std::string text(name);
    if (::mkdirat(fd(), text.c_str(), 0700) != 0) {
        return false;
    }
    // mkdir's mode passes through the umask; make it exact.
    Fd made(::openat(fd(), text.c_str(), k_dir_flags));
    if (made && ::fchmod(made.get(), static_cast<mode_t>(mode)) != 0) {
        return false;
    }
    return made.valid();
}

Fd Dir::open_file(std::string_view name, int flags, unsigned mode) const {
    Fd file(::openat(fd(), std::string(name).c_str(), flags | O_NOFOLLOW | O_CLOEXEC,
                     static_cast<mode_t>(mode)));
    if (file && (flags & O_CREAT) != 0) {
        struct stat st {};
        // A file we just created gets the exact mode; an existing one keeps its own.
        if (::fstat(file.get(), &st) == 0 && st.st_uid == ::geteuid() &&
            (st.st_mode & 07777) != (mode & 07777)) {
            if (::fchmod(file.get(), static_cast<mode_t>(mode)) != 0) {
                return Fd();
            }
        }
    }
    return file;
}

bool Dir::write_file(std::string_view name, std::string_view content, unsigned mode,
                     Sync sync) const {
    const std::string tmp = "." + std::string(name) + ".tmp." + random_suffix();
    {
        Fd file = open_file(tmp, O_WRONLY | O_CREAT | O_EXCL, mode);
        if (!file) {
            return false;
        }
        if (!write_all(file.get(), content) || (sync == Sync::yes && ::fsync(file.get()) != 0)) {
            const int saved = errno;
            ::unlinkat(fd(), tmp.c_str(), 0);
            errno = saved;
            return false;
        }
    }
    if (::renameat(fd(), tmp.c_str(), fd(), std::string(name).c_str()) != 0) {
        const int saved = errno;
        ::unlinkat(fd(), tmp.c_str(), 0);
        errno = saved;
        return false;
    }
    return true;
}

std::optional<std::string> Dir::read_file(std::string_view name, std::size_t max_bytes) const {
    Fd file = open_file(name, O_RDONLY);
    struct stat st {};
    if (!file || ::fstat(file.get(), &st) != 0 || !S_ISREG(st.st_mode) ||
        static_cast<std::uint64_t>(st.st_size) > max_bytes) {
        return std::nullopt;
    }
    return read_all(file.get(), max_bytes);
}

bool Dir::rename(std::string_view name, const Dir& to, std::string_view new_name) const noexcept {
    return ::renameat(fd(), std::string(name).c_str(), to.fd(), std::string(new_name).c_str()) ==
           0;
}

bool Dir::remove(std::string_view name) const noexcept {
    try {
        return remove_tree_at(fd(), std::string(name).c_str());
    } catch (...) {
        return false;  // std::string allocation
    }
}

bool Dir::touch(std::string_view name) const noexcept {
    try {
        return ::utimensat(fd(), std::string(name).c_str(), nullptr, AT_SYMLINK_NOFOLLOW) == 0;
    } catch (...) {
        return false;
    }
}

bool Dir::set_mode(unsigned mode) const noexcept {
    return ::fchmod(fd(), static_cast<mode_t>(mode)) == 0;
}

std::vector<std::string> Dir::list() const {
    std::vector<std::string> names;
    for_each_entry(fd(), [&](const char* name) { names.emplace_back(name); });
    std::sort(names.begin(), names.end());
    return names;
}

void Dir::sync() const noexcept { ::fsync(fd()); }

bool remove_tree_at(int dir_fd, const char* name) noexcept {
    if (::unlinkat(dir_fd, name, 0) == 0 || errno == ENOENT) {
        return true;
    }
    if (errno != EISDIR && errno != EPERM) {
        return false;
    }
    Fd dir(::openat(dir_fd, name, k_dir_flags));
    if (!dir) {
        return errno == ENOENT;
    }
    const bool ok = remove_contents(dir.get());
    dir.reset();
    return (::unlinkat(dir_fd, name, AT_REMOVEDIR) == 0 || errno == ENOENT) && ok;
}

namespace {

constexpr int k_max_symlinks = 40;

// Why a walk may not pass through the directory `path` (`st`), or "".
std::string passage_problem(const std::filesystem::path& path, const struct stat& st,
                            const Owners& owners) {
    if (st.st_uid != 0 && !owners.contains(st.st_uid)) {
        return path.string() + " is owned by uid " + std::to_string(st.st_uid) +
               ", which is neither this user (uid " + std::to_string(::geteuid()) +
               "), root, nor a shared owner you named";
    }
    if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0 && (st.st_mode & S_ISVTX) == 0) {
        return path.string() + " is writable by group or others (mode " +
               octal_mode(st.st_mode) + ") and not sticky";
    }
    return {};
}

// Pushes the names of `path` onto `pending` so that the first comes off
// the back first.
void push_names(const std::filesystem::path& path, std::vector<std::string>& pending) {
    std::vector<std::string> names;
    for (const std::filesystem::path& part : path.relative_path()) {
        names.push_back(part.string());
    }
    pending.insert(pending.end(), names.rbegin(), names.rend());
}

std::optional<Dir> refuse(std::string& problem, std::string why) {
    problem = std::move(why);
    return std::nullopt;
}

}  // namespace

std::optional<Dir> open_through_trusted(const std::filesystem::path& path, const Owners& owners,
                                        std::string& problem) {
    std::vector<Dir> walked;  // from "/" to where the walk is
    walked.emplace_back(Fd(::open("/", k_dir_flags)), "/");
    if (!walked.back().valid()) {
        return refuse(problem, std::string("cannot open /: ") + std::strerror(errno));
    }
    std::vector<std::string> pending;
    push_names(std::filesystem::absolute(path), pending);
    int links = 0;
    while (!pending.empty()) {
        const std::string name = std::move(pending.back());
        pending.pop_back();
        if (name.empty() || name == ".") {
            continue;
        }
        if (name == "..") {
            if (walked.size() > 1) {
                walked.pop_back();
            }
            continue;
        }
        const Dir& here = walked.back();
        const std::optional<struct stat> here_st = here.stat_self();
        std::string why = here_st ? passage_problem(here.path(), *here_st, owners)
                                  : here.path().string() + " cannot be read";
        if (!why.empty()) {
            return refuse(problem, std::move(why));
        }
        const std::optional<struct stat> st = here.stat(name);
        if (st && S_ISLNK(st->st_mode)) {
            char target[4096];
            const ssize_t size = ::readlinkat(here.fd(), name.c_str(), target, sizeof target);
            if (size <= 0 || static_cast<std::size_t>(size) >= sizeof target ||
                ++links > k_max_symlinks) {
                return refuse(problem, "cannot follow the symlink " + here.path_of(name).string());
            }
            const std::filesystem::path link_target(std::string(target, static_cast<std::size_t>(size)));
            if (link_target.is_absolute()) {
                walked.resize(1);
            }
            push_names(link_target, pending);
            continue;
        }
        std::optional<Dir> next = here.open_dir(name);
        if (!next) {
            return refuse(problem, "cannot open " + here.path_of(name).string() + ": " +
                                       std::strerror(errno));
        }
        walked.push_back(std::move(*next));
    }
    return std::move(walked.back());
}

std::uint64_t tree_size(const Dir& parent, std::string_view name) noexcept {
    try {
        const auto dir = parent.open_dir(name);
        return dir ? size_below(dir->fd()) : 0;
    } catch (...) {
        return 0;
    }
}

double mtime_seconds(const struct stat& st) noexcept {
    return static_cast<double>(st.st_mtim.tv_sec) + 1e-9 * static_cast<double>(st.st_mtim.tv_nsec);
}

std::string octal_mode(unsigned mode) {
    char text[8];
    std::snprintf(text, sizeof(text), "%04o", mode & 07777u);
    return text;
}

}  // namespace opweave::util
