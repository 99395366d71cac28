// Tests of how many CPUs a process may use (util/cpu_count.hpp): the cgroup
// limits are read from a fake cgroup tree in a temporary directory.
#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <optional>
#include <string>
#include <thread>

#include "check.hpp"
#include "temp_dir.hpp"
#include "util/cpu_count.hpp"
#include "util/fs.hpp"

using namespace opweave;
using opweave_test::TempDir;

namespace {

void put(const std::filesystem::path& file, const std::string& text) {
    util::make_dirs(file.parent_path());
    util::write_file_atomic(file, text);
}

bool near(std::optional<double> value, double expected) {
    return value && std::fabs(*value - expected) < 1e-9;
}

}  // namespace

OPWEAVE_TEST(cpus_allowed_is_the_affinity_lowered_to_the_rounded_up_limit) {
    CHECK_EQ(util::cpus_allowed(8, std::nullopt), 8);
    CHECK_EQ(util::cpus_allowed(8, 2.0), 2);
    CHECK_EQ(util::cpus_allowed(8, 1.5), 2);
    CHECK_EQ(util::cpus_allowed(8, 0.25), 1);
    CHECK_EQ(util::cpus_allowed(2, 16.0), 2);
    const int cores = static_cast<int>(std::thread::hardware_concurrency());
    CHECK_EQ(util::cpus_allowed(0, std::nullopt), cores > 0 ? cores : 1);
    CHECK_EQ(util::cpus_allowed(-1, 1.0), 1);
}

OPWEAVE_TEST(a_v2_cpu_max_limits_and_max_does_not) {
    TempDir fs;
    put(fs / "job/cpu.max", "150000 100000\n");
    CHECK(near(util::cgroup_cpu_limit(fs.path(), "0::/job\n"), 1.5));
    put(fs / "job/cpu.max", "max 100000\n");
    CHECK(!util::cgroup_cpu_limit(fs.path(), "0::/job\n"));
}

OPWEAVE_TEST(the_smallest_limit_along_the_cgroup_path_wins) {
    TempDir fs;
    put(fs / "cpu.max", "300000 100000\n");  // a container's root
    put(fs / "a/cpu.max", "max 100000\n");
    put(fs / "a/b/cpu.max", "50000 100000\n");
    put(fs / "a/b/c/cpu.max", "200000 100000\n");
    CHECK(near(util::cgroup_cpu_limit(fs.path(), "0::/a/b/c\n"), 0.5));
    // A path the process sees but the mount lacks (a container without a
    // cgroup namespace): the root's limit still counts.
    CHECK(near(util::cgroup_cpu_limit(fs.path(), "0::/docker/0123abcd\n"), 3.0));
}

OPWEAVE_TEST(a_v1_cfs_quota_limits_and_minus_one_does_not) {
    TempDir fs;
    put(fs / "cpu,cpuacct/batch/cpu.cfs_quota_us", "250000\n");
    put(fs / "cpu,cpuacct/batch/cpu.cfs_period_us", "100000\n");
    put(fs / "cpu,cpuacct/cpu.cfs_quota_us", "-1\n");
    put(fs / "cpu,cpuacct/cpu.cfs_period_us", "100000\n");
    const std::string self = "12:memory:/batch\n4:cpu,cpuacct:/batch\n0::/\n";
    CHECK(near(util::cgroup_cpu_limit(fs.path(), self), 2.5));
    CHECK(!util::cgroup_cpu_limit(fs.path(), "4:cpu,cpuacct:/\n"));
    // The memory controller's directory is not read for a CPU limit.
    put(fs / "memory/batch/cpu.cfs_quota_us", "10000\n");
    CHECK(!util::cgroup_cpu_limit(fs.path(), "12:memory:/batch\n"));
}

OPWEAVE_TEST(unreadable_or_odd_cgroup_files_mean_no_limit) {
    TempDir fs;
    CHECK(!util::cgroup_cpu_limit(fs.path(), "0::/nothing/here\n"));
    CHECK(!util::cgroup_cpu_limit(fs.path(), "garbage without colons"));
    CHECK(!util::cgroup_cpu_limit(fs.path(), ""));
    put(fs / "odd/cpu.max", "lots\n");
    CHECK(!util::cgroup_cpu_limit(fs.path(), "0::/odd\n"));
    put(fs / "zero/cpu.max", "0 0\n");
    CHECK(!util::cgroup_cpu_limit(fs.path(), "0::/zero\n"));
    // A FIFO where a file belongs: read without blocking.
    util::make_dirs(fs / "fifo");
    CHECK_EQ(::mkfifo((fs / "fifo/cpu.max").c_str(), 0600), 0);
    CHECK(!util::cgroup_cpu_limit(fs.path(), "0::/fifo\n"));
}

OPWEAVE_TEST(usable_cpus_is_at_least_one_and_at_most_the_affinity) {
    const int cpus = util::usable_cpus();
    CHECK(cpus >= 1);
    cpu_set_t set;
    CPU_ZERO(&set);
    if (::sched_getaffinity(0, sizeof(set), &set) == 0) {
        CHECK(cpus <= CPU_COUNT(&set));
    }
}
