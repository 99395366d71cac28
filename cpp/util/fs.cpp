// opweave core (internal): filesystem helpers (see fs.hpp).
#include "util/fs.hpp"

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
    if (::mkdir(dir.c_str(), 0700) != 0) {
        if (errno == EEXIST) {
            return;
        }
        throw_errno("cannot create directory", dir);
    }
    // mkdir's mode passes through the umask; make it exact.
    if (::chmod(dir.c_str(), static_cast<mode_t>(mode)) != 0) {
        throw_errno("cannot set the mode of", dir);
    }
}

bool remove_tree(const std::filesystem::path& path) noexcept {
    return remove_tree_at(AT_FDCWD, path.c_str());
}

bool write_all(int fd, std::string_view content) noexcept {
    const char* data = content.data();
    std::size_t left = content.size();
    while (left > 0) {
        const ssize_t n = ::write(fd, data, left);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return false;
        }
        data += n;
        left -= static_cast<std::size_t>(n);
    }
    return true;
}

std::optional<std::string> read_all(int fd, std::size_t max_bytes) {
    std::string content;
    char buffer[16384];
    for (;;) {
        const ssize_t n = ::read(fd, buffer, sizeof(buffer));
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
        if (content.size() > max_bytes) {
            return std::nullopt;
        }
    }
}

void write_file_atomic(const std::filesystem::path& path, std::string_view content,
                       unsigned mode) {
    const std::filesystem::path tmp =
        path.parent_path() / ("." + path.filename().string() + ".tmp." + random_suffix());
    {
        Fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
        if (!fd) {
            throw_errno("cannot create", tmp);
        }
        if (::fchmod(fd.get(), static_cast<mode_t>(mode)) != 0 || !write_all(fd.get(), content)) {
            const int saved = errno;
            ::unlink(tmp.c_str());
            errno = saved;
            throw_errno("cannot write", tmp);
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
    return read_all(fd.get());
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
