// Tests of the machine-wide compile slots (build/compile_slots.hpp) and of
// run_parallel (util/parallel.hpp), which compiles a module's units.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "builder/compile_slots.hpp"
#include "check.hpp"
#include "opweave/errors.hpp"
#include "temp_dir.hpp"
#include "util/cpu_count.hpp"
#include "util/dir.hpp"
#include "util/fs.hpp"
#include "util/parallel.hpp"

using namespace opweave;
using opweave_test::TempDir;

namespace {

class StopAfter final : public BuildMonitor {
public:
    explicit StopAfter(int polls) : m_polls(polls) {}
    bool interrupted() override { return --m_polls < 0; }

private:
    int m_polls;
};

util::Dir open(const TempDir& dir) { return *util::Dir::open(dir.path()); }

using Clock = std::chrono::steady_clock;

}  // namespace

OPWEAVE_TEST(compile_jobs_defaults_to_the_usable_cpus) {
    CHECK_EQ(builder::compile_jobs(0), util::usable_cpus());
    CHECK_EQ(builder::compile_jobs(-2), util::usable_cpus());
    CHECK_EQ(builder::compile_jobs(3), 3);
}

OPWEAVE_TEST(at_most_jobs_slots_are_held_at_once) {
    TempDir dir;
    builder::CompileSlot first(open(dir), 2, 5.0, nullptr);
    builder::CompileSlot second(open(dir), 2, 5.0, nullptr);
    CHECK(first.index() != second.index());
    CHECK_THROWS_AS(builder::CompileSlot(open(dir), 2, 0.1, nullptr), LockTimeout);
}

OPWEAVE_TEST(a_released_slot_is_taken_by_a_waiter) {
    TempDir dir;
    auto held = std::make_unique<builder::CompileSlot>(open(dir), 1, 5.0, nullptr);
    std::thread release([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        held.reset();
    });
    const auto start = std::chrono::steady_clock::now();
    const builder::CompileSlot taken(open(dir), 1, 5.0, nullptr);
    release.join();
    CHECK_EQ(taken.index(), 0);
    CHECK(std::chrono::steady_clock::now() - start >= std::chrono::milliseconds(90));
}

OPWEAVE_TEST(a_slot_wait_stops_when_the_monitor_asks) {
    TempDir dir;
    const builder::CompileSlot held(open(dir), 1, 5.0, nullptr);
    StopAfter monitor(3);
    CHECK_THROWS_AS(builder::CompileSlot(open(dir), 1, 5.0, &monitor), Interrupted);
}

OPWEAVE_TEST(caches_with_different_roots_share_the_slots_of_one_directory) {
    TempDir dir;
    CacheOptions options;
    options.compile_jobs = 1;
    options.lock_timeout_seconds = 0.1;
    options.slot_dir = dir / "slots";
    options.root = dir / "one";
    const ModuleCache one(options);
    options.root = dir / "two";
    const ModuleCache two(options);
    {
        const builder::CompileSlot held(one, nullptr);
        CHECK_THROWS_AS(builder::CompileSlot(two, nullptr), LockTimeout);
    }
    const builder::CompileSlot taken(two, nullptr);
    CHECK(std::filesystem::exists(dir / "slots/compile-slot-0.lock"));
    CHECK(!std::filesystem::exists(dir / "one/v2/locks/compile-slot-0.lock"));
}

OPWEAVE_TEST(without_a_slot_dir_the_slots_go_to_the_runtime_dir) {
    TempDir dir;
    util::make_dirs(dir / "runtime", 0700);
    ::setenv("XDG_RUNTIME_DIR", (dir / "runtime").c_str(), 1);
    CacheOptions options;
    options.compile_jobs = 1;
    options.root = dir / "cache";
    const ModuleCache cache(options);
    {
        const builder::CompileSlot held(cache, nullptr);
    }
    ::unsetenv("XDG_RUNTIME_DIR");
    CHECK(std::filesystem::exists(dir / "runtime/opweave/compile-slot-0.lock"));
}

OPWEAVE_TEST(a_waiter_takes_a_freed_slot_within_100_ms) {
    TempDir dir;
    std::vector<double> delays;
    for (int run = 0; run < 5; ++run) {
        auto held = std::make_unique<builder::CompileSlot>(open(dir), 1, 5.0, nullptr);
        std::atomic<Clock::rep> released{0};
        std::thread release([&] {
            std::this_thread::sleep_for(std::chrono::milliseconds(60));
            released = Clock::now().time_since_epoch().count();
            held.reset();
        });
        const builder::CompileSlot taken(open(dir), 1, 5.0, nullptr);
        const auto now = Clock::now().time_since_epoch().count();
        release.join();
        delays.push_back(std::chrono::duration<double>(Clock::duration(now - released)).count());
    }
    std::sort(delays.begin(), delays.end());
    CHECK(delays[2] < 0.1);
}

OPWEAVE_TEST(a_forked_child_does_not_keep_a_slot_when_its_parent_dies) {
    TempDir dir;
    const pid_t holder = ::fork();
    if (holder == 0) {
        const builder::CompileSlot held(open(dir), 1, 5.0, nullptr);
        if (::fork() == 0) {
            ::usleep(1500 * 1000);  // outlives its parent by far
            ::_exit(0);
        }
        ::_exit(0);  // dies holding the slot, as if killed
    }
    CHECK(holder > 0);
    int status = 0;
    ::waitpid(holder, &status, 0);
    CHECK_EQ(builder::CompileSlot(open(dir), 1, 0.3, nullptr).index(), 0);
}

OPWEAVE_TEST(run_parallel_runs_every_task_on_at_most_the_threads) {
    std::atomic<int> running{0};
    std::atomic<int> most{0};
    std::atomic<int> done{0};
    std::vector<util::Task> tasks;
    for (int k = 0; k < 12; ++k) {
        tasks.emplace_back([&](BuildMonitor*) {
            const int now = ++running;
            int seen = most.load();
            while (now > seen && !most.compare_exchange_weak(seen, now)) {
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
            --running;
            ++done;
        });
    }
    util::run_parallel(tasks, 3, nullptr);
    CHECK_EQ(done.load(), 12);
    CHECK(most.load() <= 3);
    CHECK(most.load() >= 2);
}

OPWEAVE_TEST(run_parallel_rethrows_the_first_failure_and_stops_the_rest) {
    std::atomic<int> started{0};
    std::vector<util::Task> tasks;
    tasks.emplace_back([&](BuildMonitor*) {
        ++started;
        throw std::runtime_error("task 0 failed");
    });
    for (int k = 0; k < 20; ++k) {
        tasks.emplace_back([&](BuildMonitor* monitor) {
            ++started;
            // A long task that polls its monitor, as a compile does.
            for (int i = 0; i < 200 && !monitor->interrupted(); ++i) {
                std::this_thread::sleep_for(std::chrono::milliseconds(5));
            }
            if (monitor->interrupted()) {
                throw Interrupted("stopped");
            }
        });
    }
    bool thrown = false;
    try {
        util::run_parallel(tasks, 1, nullptr);
    } catch (const std::runtime_error& error) {
        thrown = std::string(error.what()) == "task 0 failed";
    }
    CHECK(thrown);
    CHECK(started.load() < 21);
}

OPWEAVE_TEST(run_parallel_stops_when_the_monitor_asks) {
    std::atomic<int> stopped{0};
    std::vector<util::Task> tasks;
    for (int k = 0; k < 2; ++k) {
        tasks.emplace_back([&](BuildMonitor* monitor) {
            while (!monitor->interrupted()) {
                std::this_thread::sleep_for(std::chrono::milliseconds(5));
            }
            ++stopped;
        });
    }
    StopAfter monitor(2);
    CHECK_THROWS_AS(util::run_parallel(tasks, 2, &monitor), Interrupted);
    CHECK_EQ(stopped.load(), 2);
}
