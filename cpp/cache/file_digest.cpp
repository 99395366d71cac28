// opweave core (internal): file hashes (see file_digest.hpp).
//
// The memo is one map for the process, guarded by a mutex: the cache is used
// from several threads (a background prelude build next to the main
// thread's compiles). It is bounded; when full it starts over.
#include "cache/file_digest.hpp"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <vector>

#include "opweave/hash.hpp"

namespace opweave::cache {

namespace {

// Big enough to make the read calls cheap next to hashing, small enough to
// come from the heap without being zeroed or faulted in page by page.
constexpr std::size_t k_read_chunk = 64 << 10;
constexpr std::size_t k_max_memo_entries = 1 << 16;
constexpr std::int64_t k_ns_per_second = 1000000000;
constexpr std::int64_t k_coarse_tick_ns = 2 * k_ns_per_second;
// Smaller files are hashed faster than the machine's memo is read (a record
// of the cache, reached through checked directories): only larger ones go
// through it.
constexpr off_t k_machine_memo_min_bytes = 64 << 10;

using Version = std::tuple<dev_t, ino_t, off_t, long, long, long, long>;

Version version_of(const struct stat& st) {
    return {st.st_dev,         st.st_ino,          st.st_size,         st.st_mtim.tv_sec,
            st.st_mtim.tv_nsec, st.st_ctim.tv_sec, st.st_ctim.tv_nsec};
}

struct Memory {
    std::mutex mutex;
    std::map<Version, std::string> hashes;
    std::shared_ptr<MachineDigests> machine;
};

// Never destroyed, so that it outlives every user, even at exit.
Memory& memory() {
    static Memory* memo = new Memory();
    return *memo;
}

std::optional<std::string> hash_fd(int fd, off_t expected_size) {
    Sha256 hasher;
    const std::unique_ptr<char[]> buffer(new char[k_read_chunk]);
    off_t offset = 0;
    for (;;) {
        const ssize_t n = ::pread(fd, buffer.get(), k_read_chunk, offset);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            return std::nullopt;
        }
        if (n == 0) {
            break;
        }
        hasher.update(buffer.get(), static_cast<std::size_t>(n));
        offset += n;
    }
    if (offset != expected_size) {
        return std::nullopt;  // it changed while we read it
    }
    return to_hex(hasher.finish());
}

// The name of a file version in the machine's memo: a key (a hash of the
// version's fields).
std::string version_name(const struct stat& st) {
    const std::string fields =
        std::to_string(st.st_dev) + " " + std::to_string(st.st_ino) + " " +
        std::to_string(st.st_size) + " " + std::to_string(st.st_mtim.tv_sec) + "." +
        std::to_string(st.st_mtim.tv_nsec) + " " + std::to_string(st.st_ctim.tv_sec) + "." +
        std::to_string(st.st_ctim.tv_nsec);
    return to_hex(Sha256::of(fields)).substr(0, 40);
}

bool is_sha256(const std::string& text) {
    return text.size() == 64 && std::all_of(text.begin(), text.end(), [](char c) {
               return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
           });
}

std::shared_ptr<MachineDigests> machine_digests() {
    std::lock_guard<std::mutex> guard(memory().mutex);
    return memory().machine;
}

}  // namespace

void set_machine_digests(std::shared_ptr<MachineDigests> store) {
    std::lock_guard<std::mutex> guard(memory().mutex);
    memory().machine = std::move(store);
}

void clear_machine_digests(const MachineDigests* store) noexcept {
    std::lock_guard<std::mutex> guard(memory().mutex);
    if (memory().machine.get() == store) {
        memory().machine.reset();
    }
}

std::int64_t ns_of(const struct timespec& time) noexcept {
    return static_cast<std::int64_t>(time.tv_sec) * k_ns_per_second + time.tv_nsec;
}

std::int64_t filesystem_now_ns() noexcept {
    struct timespec now {};
    ::clock_gettime(CLOCK_REALTIME_COARSE, &now);
    return ns_of(now);
}

bool changed_since(const struct stat& st, std::int64_t since_ns) noexcept {
    const bool whole_seconds = st.st_mtim.tv_nsec == 0 && st.st_ctim.tv_nsec == 0;
    const std::int64_t tick = whole_seconds ? k_coarse_tick_ns : 0;
    return std::max(ns_of(st.st_mtim), ns_of(st.st_ctim)) + tick >= since_ns;
}

std::optional<std::string> file_sha256(int fd, const struct stat& st, Memo memo) {
    const Version version = version_of(st);
    if (memo != Memo::bypass) {
        std::lock_guard<std::mutex> guard(memory().mutex);
        const auto it = memory().hashes.find(version);
        if (it != memory().hashes.end()) {
            return it->second;
        }
    }
    // The machine's memo, for versions older than the clock's tick (the
    // same rule as the process's memo: see remember_sha256).
    const bool worth = st.st_size >= k_machine_memo_min_bytes;
    const std::shared_ptr<MachineDigests> machine =
        memo == Memo::machine && worth && !changed_since(st, filesystem_now_ns())
            ? machine_digests()
            : nullptr;
    const std::string name = machine ? version_name(st) : std::string();
    if (machine) {
        std::optional<std::string> kept = machine->find(name);
        if (kept && is_sha256(*kept)) {
            remember_sha256(st, *kept);
            return kept;
        }
    }
    std::optional<std::string> sha256 = hash_fd(fd, st.st_size);
    if (sha256) {
        remember_sha256(st, *sha256);
        if (machine) {
            machine->keep(name, *sha256);
        }
    }
    return sha256;
}

void remember_sha256(const struct stat& st, const std::string& sha256) {
    // A file changed within the current tick can change again without new
    // times (same tick, same size): that version is not trusted from memory.
    if (changed_since(st, filesystem_now_ns())) {
        return;
    }
    std::lock_guard<std::mutex> guard(memory().mutex);
    if (memory().hashes.size() >= k_max_memo_entries) {
        memory().hashes.clear();
    }
    memory().hashes[version_of(st)] = sha256;
}

}  // namespace opweave::cache
