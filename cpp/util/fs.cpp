// opweave core (internal): filesystem helpers (see fs.hpp).
#include "util/fs.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <random>

#include "opweave/errors.hpp"
#include "util/fd.hpp"

namespace opweave::util {

namespace {

[[noreturn]] void throw_errno(const std::string& what, const std::filesystem::path& path) {
    throw CacheError(what + " " + path.string() + ": " + std::strerror(errno), path);
}

// Removes everything inside the directory open as `dir_fd`.
bool remove_contents(int dir_fd) noexcept {
    const int scan_fd = ::dup(dir_fd);
    if (scan_fd < 0) {
        return false;
    }
    DIR* dir = ::fdopendir(scan_fd);
    if (dir == nullptr) {
        ::close(scan_fd);
        return false;
    }
    bool ok = true;
    while (const dirent* entry = ::readdir(dir)) {
        const char* name = entry->d_name;
        if (std::strcmp(name, ".") == 0 || std::strcmp(name, "..") == 0) {
            continue;
        }
        if (::unlinkat(dir_fd, name, 0) == 0 || errno == ENOENT) {
            continue;
        }
        if (errno != EISDIR && errno != EPERM) {
            ok = false;
            continue;
        }
        Fd child(::openat(dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
        if (!child) {
            ok = ok && errno == ENOENT;
            continue;
        }
        ok = remove_contents(child.get()) && ok;
        if (::unlinkat(dir_fd, name, AT_REMOVEDIR) != 0 && errno != ENOENT) {
            ok = false;
        }
    }
    ::closedir(dir);  // also closes scan_fd
    return ok;
}

}  // namespace

void make_dirs(const std::filesystem::path& dir, unsigned mode) {
    if (dir.empty()) {
        return;
    }
    struct stat st {};
    if (::stat(dir.c_str(), &st) == 0) {
        if (!S_ISDIR(st.st_mode)) {
            throw CacheError("not a directory: " + dir.string(), dir);
        }
        return;
    }
    if (dir.has_parent_path() && dir.parent_path() != dir) {
        make_dirs(dir.parent_path(), mode);
    }
    if (::mkdir(dir.c_str(), static_cast<mode_t>(mode)) != 0 && errno != EEXIST) {
        throw_errno("cannot create directory", dir);
    }
}

bool remove_tree(const std::filesystem::path& path) noexcept {
    if (::unlink(path.c_str()) == 0 || errno == ENOENT) {
        return true;
    }
    Fd dir(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!dir) {
        return errno == ENOENT;
    }
    const bool ok = remove_contents(dir.get());
    dir.reset();
    return (::rmdir(path.c_str()) == 0 || errno == ENOENT) && ok;
}

void write_file_atomic(const std::filesystem::path& path, std::string_view content) {
    const std::filesystem::path tmp =
        path.parent_path() / ("." + path.filename().string() + ".tmp." + random_suffix());
    {
        Fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
        if (!fd) {
            throw_errno("cannot create", tmp);
        }
        const char* data = content.data();
        std::size_t left = content.size();
        while (left > 0) {
            const ssize_t n = ::write(fd.get(), data, left);
            if (n < 0 && errno == EINTR) {
                continue;
            }
            if (n <= 0) {
                const int saved = errno;
                ::unlink(tmp.c_str());
                errno = saved;
                throw_errno("cannot write", tmp);
            }
            data += n;
            left -= static_cast<std::size_t>(n);
        }
    }
    if (::rename(tmp.c_str(), path.c_str()) != 0) {
        const int saved = errno;
        ::unlink(tmp.c_str());
        errno = saved;
        throw_errno("cannot rename into place", path);
    }
}

std::optional<std::string> read_file(const std::filesystem::path& path) {
    Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd) {
        return std::nullopt;
    }
    std::string content;
    char buffer[8192];
    for (;;) {
        const ssize_t n = ::read(fd.get(), buffer, sizeof(buffer));
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            return std::nullopt;
        }
        if (n == 0) {
            return content;
        }
        content.append(buffer, static_cast<std::size_t>(n));
    }
}

void sync_dir(const std::filesystem::path& dir) noexcept {
    Fd dir_fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!dir_fd) {
        return;
    }
    try {
        for (const std::string& name : list_dir(dir)) {
            Fd file(::openat(dir_fd.get(), name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
            struct stat st {};
            if (file && ::fstat(file.get(), &st) == 0 && S_ISREG(st.st_mode)) {
                ::fsync(file.get());
            }
        }
    } catch (...) {
        // list_dir only throws on allocation failure; the flush is best effort.
    }
    ::fsync(dir_fd.get());
}

std::vector<std::string> list_dir(const std::filesystem::path& dir) {
    std::vector<std::string> names;
    if (DIR* handle = ::opendir(dir.c_str())) {
        while (const dirent* entry = ::readdir(handle)) {
            const std::string name = entry->d_name;
            if (name != "." && name != "..") {
                names.push_back(name);
            }
        }
        ::closedir(handle);
    }
    std::sort(names.begin(), names.end());
    return names;
}

std::uint64_t tree_size(const std::filesystem::path& dir) noexcept {
    std::uint64_t total = 0;
    std::error_code ec;
    std::filesystem::recursive_directory_iterator it(dir, ec);
    for (; !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
        std::error_code size_ec;
        if (it->is_regular_file(size_ec)) {
            const auto size = it->file_size(size_ec);
            if (!size_ec) {
                total += size;
            }
        }
    }
    return total;
}

double now_seconds() noexcept {
    using namespace std::chrono;
    return duration<double>(system_clock::now().time_since_epoch()).count();
}

std::string random_suffix() {
    // Reseeded in a forked child, which would otherwise repeat its parent's names.
    static thread_local std::mt19937_64 engine;
    static thread_local pid_t seeded_for = 0;
    if (seeded_for != ::getpid()) {
        seeded_for = ::getpid();
        engine.seed(std::random_device{}() ^ static_cast<std::uint64_t>(seeded_for));
    }
    static constexpr char k_alphabet[] = "0123456789abcdefghijklmnopqrstuvwxyz";
    std::uniform_int_distribution<int> pick(0, 35);
    std::string out(10, '0');
    for (char& c : out) {
        c = k_alphabet[pick(engine)];
    }
    return out;
}

}  // namespace opweave::util
