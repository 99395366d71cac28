// opweave core (internal): an owned file descriptor.
#pragma once

#include <unistd.h>

#include <utility>

namespace opweave::util {

// Owns one file descriptor and closes it on destruction. Movable, not copyable.
class Fd {
public:
    Fd() noexcept = default;
    explicit Fd(int fd) noexcept : m_fd(fd) {}
    ~Fd() { reset(); }

    Fd(Fd&& other) noexcept : m_fd(std::exchange(other.m_fd, -1)) {}
    Fd& operator=(Fd&& other) noexcept {
        if (this != &other) {
            reset(std::exchange(other.m_fd, -1));
        }
        return *this;
    }
    Fd(const Fd&) = delete;
    Fd& operator=(const Fd&) = delete;

    int get() const noexcept { return m_fd; }
    bool valid() const noexcept { return m_fd >= 0; }
    explicit operator bool() const noexcept { return valid(); }

    // Gives up ownership without closing.
    int release() noexcept { return std::exchange(m_fd, -1); }

    // Closes the current descriptor (if any) and takes `fd`.
    void reset(int fd = -1) noexcept {
        if (m_fd >= 0) {
            ::close(m_fd);
        }
        m_fd = fd;
    }

private:
    int m_fd = -1;
};

}  // namespace opweave::util
