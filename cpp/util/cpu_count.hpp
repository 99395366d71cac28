// opweave core (internal): how many CPUs this process may use.
//
// The number of cores in the machine overstates it in a container or a
// batch job: the affinity mask (taskset, cpusets) narrows which CPUs the
// process may run on, and a cgroup CPU quota (docker --cpus, systemd
// CPUQuota=, Kubernetes limits) caps how much time it gets on them. Nothing
// here fails: what cannot be read counts as no limit.
#pragma once

#include <filesystem>
#include <optional>
#include <string_view>

namespace opweave::util {

// The CPU limit, in CPUs (quota / period, e.g. 1.5), that the cgroups of
// this process set, read below the cgroup filesystem `cgroup_fs`
// (/sys/fs/cgroup) for the cgroups listed in `self_cgroup` (the text of
// /proc/self/cgroup). cgroup v2 gives `cpu.max` ("max 100000" is no
// limit); v1 gives `cpu.cfs_quota_us` and `cpu.cfs_period_us` (-1: none).
// Each cgroup's directory and those of its parents are read, and the
// smallest limit wins; a directory that is absent (a container that sees
// its own cgroup as the root) is skipped. Nothing if there is no limit.
std::optional<double> cgroup_cpu_limit(const std::filesystem::path& cgroup_fs,
                                       std::string_view self_cgroup) noexcept;

// `affinity` CPUs (0 or less: unknown, then the number of cores), lowered
// to ceil(`limit`) when there is a limit; at least 1.
int cpus_allowed(int affinity, std::optional<double> limit) noexcept;

// cpus_allowed() of this process: its sched_getaffinity() count and the
// limit of its cgroups.
int usable_cpus() noexcept;

}  // namespace opweave::util
