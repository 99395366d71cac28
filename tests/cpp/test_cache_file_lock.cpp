// Tests of FileLock within one process (cross-process tests are in
// tests/python/test_file_lock.py, with real processes).
#include <unistd.h>

#include <chrono>
#include <filesystem>

#include "check.hpp"
#include "opweave/errors.hpp"
#include "cache/file_lock.hpp"
#include "temp_dir.hpp"

using opweave::FileLock;
using opweave::LockTimeout;
using opweave_test::TempDir;

OPWEAVE_TEST(acquire_creates_file_and_records_pid) {
    TempDir dir;
    FileLock lock(dir / "a.lock");
    CHECK(!lock.held());
    lock.acquire(std::chrono::seconds(1));
    CHECK(lock.held());
    CHECK(std::filesystem::exists(dir / "a.lock"));
    CHECK_EQ(FileLock::read_holder_pid(dir / "a.lock"), static_cast<long>(::getpid()));
}

OPWEAVE_TEST(second_lock_object_is_excluded_until_release) {
    TempDir dir;
    FileLock first(dir / "a.lock");
    FileLock second(dir / "a.lock");
    CHECK(first.try_acquire());
    CHECK(!second.try_acquire());
    first.release();
    CHECK(!first.held());
    CHECK(second.try_acquire());
}

OPWEAVE_TEST(timeout_names_file_and_holder) {
    TempDir dir;
    FileLock holder(dir / "k.lock");
    holder.acquire(std::chrono::seconds(1));
    FileLock waiter(dir / "k.lock");
    bool thrown = false;
    const auto start = std::chrono::steady_clock::now();
    try {
        waiter.acquire(std::chrono::milliseconds(150));
    } catch (const LockTimeout& e) {
        thrown = true;
        CHECK_EQ(e.lock_path(), dir / "k.lock");
        CHECK_EQ(e.holder_pid(), static_cast<long>(::getpid()));
        CHECK(e.waited_seconds() >= 0.15);
        const std::string message = e.what();
        CHECK(message.find("k.lock") != std::string::npos);
        CHECK(message.find(std::to_string(::getpid())) != std::string::npos);
    }
    CHECK(thrown);
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
    CHECK(!waiter.held());
}

OPWEAVE_TEST(release_and_remove_deletes_file_and_frees_lock) {
    TempDir dir;
    FileLock first(dir / "a.lock");
    first.acquire(std::chrono::seconds(1));
    first.release_and_remove();
    CHECK(!first.held());
    CHECK(!std::filesystem::exists(dir / "a.lock"));
    FileLock second(dir / "a.lock");
    CHECK(second.try_acquire());
}

OPWEAVE_TEST(waiter_on_removed_file_does_not_share_the_lock) {
    // A holds the lock; B waits. A removes the file and releases; C then
    // takes a lock under the same name. B must not believe it holds the lock
    // at the same time as C.
    TempDir dir;
    FileLock a(dir / "x.lock");
    a.acquire(std::chrono::seconds(1));
    FileLock b(dir / "x.lock");
    CHECK(!b.try_acquire());
    a.release_and_remove();
    FileLock c(dir / "x.lock");
    CHECK(c.try_acquire());
    CHECK(!b.try_acquire());
    c.release_and_remove();
    CHECK(b.try_acquire());
}

OPWEAVE_TEST(move_transfers_ownership) {
    TempDir dir;
    FileLock first(dir / "a.lock");
    first.acquire(std::chrono::seconds(1));
    FileLock moved(std::move(first));
    CHECK(moved.held());
    FileLock other(dir / "a.lock");
    CHECK(!other.try_acquire());
    moved.release();
    CHECK(other.try_acquire());
}

OPWEAVE_TEST(destructor_releases) {
    TempDir dir;
    {
        FileLock scoped(dir / "a.lock");
        scoped.acquire(std::chrono::seconds(1));
    }
    FileLock after(dir / "a.lock");
    CHECK(after.try_acquire());
}

OPWEAVE_TEST(unopenable_path_throws_cache_error) {
    TempDir dir;
    FileLock lock(dir / "missing-dir" / "a.lock");
    CHECK_THROWS_AS(lock.acquire(std::chrono::milliseconds(10)), opweave::CacheError);
}
