// Tests of the machine-wide compile slots (cache/compile_slots.hpp) and of
// run_parallel (util/parallel.hpp), which compiles a module's units.
#include <atomic>
#include <memory>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "cache/compile_slots.hpp"
#include "check.hpp"
#include "opweave/errors.hpp"
#include "temp_dir.hpp"
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

}  // namespace

OPWEAVE_TEST(compile_jobs_defaults_to_the_cores) {
    CHECK(cache::compile_jobs(0) >= 1);
    CHECK_EQ(cache::compile_jobs(3), 3);
}

OPWEAVE_TEST(at_most_jobs_slots_are_held_at_once) {
    TempDir dir;
    cache::CompileSlot first(dir.path(), 2, 5.0, nullptr);
    cache::CompileSlot second(dir.path(), 2, 5.0, nullptr);
    CHECK(first.index() != second.index());
    CHECK_THROWS_AS(cache::CompileSlot(dir.path(), 2, 0.1, nullptr), LockTimeout);
}

OPWEAVE_TEST(a_released_slot_is_taken_by_a_waiter) {
    TempDir dir;
    auto held = std::make_unique<cache::CompileSlot>(dir.path(), 1, 5.0, nullptr);
    std::thread release([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        held.reset();
    });
    const auto start = std::chrono::steady_clock::now();
    const cache::CompileSlot taken(dir.path(), 1, 5.0, nullptr);
    release.join();
    CHECK_EQ(taken.index(), 0);
    CHECK(std::chrono::steady_clock::now() - start >= std::chrono::milliseconds(90));
}

OPWEAVE_TEST(a_slot_wait_stops_when_the_monitor_asks) {
    TempDir dir;
    const cache::CompileSlot held(dir.path(), 1, 5.0, nullptr);
    StopAfter monitor(3);
    CHECK_THROWS_AS(cache::CompileSlot(dir.path(), 1, 5.0, &monitor), Interrupted);
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
