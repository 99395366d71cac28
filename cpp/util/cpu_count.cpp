// opweave core (internal): usable CPUs (see cpu_count.hpp).
//
// The cgroup files are pseudo-files of the kernel, but the path could name
// something else in an odd setup (a FIFO in a test tree, a stale mount), so
// every file is opened O_NONBLOCK and read once, at most k_max_read bytes:
// reading never blocks and never throws.
#include "util/cpu_count.hpp"

#include <fcntl.h>
#include <sched.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <thread>

#include "util/fd.hpp"
#include "util/fs.hpp"

namespace opweave::util {

namespace {

constexpr std::size_t k_max_read = 4096;
// A cgroup path deeper than this is not walked further up.
constexpr int k_max_depth = 64;

std::optional<std::string> read_small(const std::filesystem::path& path) {
    const Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
    if (!fd) {
        return std::nullopt;
    }
    return read_all(fd.get(), k_max_read);
}

// The leading number of `text` (after blanks), if there is one.
std::optional<double> leading_number(std::string_view text) {
    const std::string copy(text);
    const char* begin = copy.c_str();
    char* end = nullptr;
    const double value = std::strtod(begin, &end);
    if (end == begin || !std::isfinite(value)) {
        return std::nullopt;
    }
    return value;
}

std::optional<double> ratio(std::optional<double> quota, std::optional<double> period) {
    if (!quota || !period || *quota <= 0 || *period <= 0) {
        return std::nullopt;  // -1 (v1) or unreadable: no limit
    }
    return *quota / *period;
}

// The limit set in one cgroup directory, v2 or v1.
std::optional<double> limit_in(const std::filesystem::path& dir, bool v2) {
    if (v2) {
        const std::optional<std::string> text = read_small(dir / "cpu.max");
        if (!text || text->rfind("max", 0) == 0) {
            return std::nullopt;
        }
        const std::size_t blank = text->find(' ');
        if (blank == std::string::npos) {
            return std::nullopt;
        }
        return ratio(leading_number(*text), leading_number(text->substr(blank + 1)));
    }
    const auto quota = read_small(dir / "cpu.cfs_quota_us");
    const auto period = read_small(dir / "cpu.cfs_period_us");
    return ratio(quota ? leading_number(*quota) : std::nullopt,
                 period ? leading_number(*period) : std::nullopt);
}

std::optional<double> smaller(std::optional<double> a, std::optional<double> b) {
    if (!a) {
        return b;
    }
    return (b && *b < *a) ? b : a;
}

// The smallest limit along `cgroup` (an absolute cgroup path) and its
// parents, below `mount`.
std::optional<double> limit_along(const std::filesystem::path& mount, std::string_view cgroup,
                                  bool v2) {
    std::optional<double> limit;
    std::filesystem::path relative = std::filesystem::path(cgroup).relative_path();
    for (int depth = 0; depth < k_max_depth; ++depth) {
        limit = smaller(limit, limit_in(mount / relative, v2));
        if (relative.empty()) {
            break;
        }
        relative = relative.parent_path();
    }
    return limit;
}

// `name` is one of the comma-separated controllers in `list`.
bool lists(std::string_view list, std::string_view name) {
    while (!list.empty()) {
        const std::size_t comma = list.find(',');
        if (list.substr(0, comma) == name) {
            return true;
        }
        list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
    }
    return false;
}

}  // namespace

std::optional<double> cgroup_cpu_limit(const std::filesystem::path& cgroup_fs,
                                       std::string_view self_cgroup) noexcept {
    try {
        std::optional<double> limit;
        while (!self_cgroup.empty()) {
            const std::size_t newline = self_cgroup.find('\n');
            const std::string_view line = self_cgroup.substr(0, newline);
            self_cgroup = newline == std::string_view::npos ? std::string_view()
                                                            : self_cgroup.substr(newline + 1);
            // "hierarchy-id:controllers:path"; v2 is "0::path".
            const std::size_t first = line.find(':');
            const std::size_t second =
                first == std::string_view::npos ? first : line.find(':', first + 1);
            if (second == std::string_view::npos) {
                continue;
            }
            const std::string_view controllers = line.substr(first + 1, second - first - 1);
            const std::string_view path = line.substr(second + 1);
            if (line.substr(0, first) == "0" && controllers.empty()) {
                limit = smaller(limit, limit_along(cgroup_fs, path, true));
            } else if (lists(controllers, "cpu")) {
                // A v1 hierarchy is mounted under its controllers' names
                // ("cpu,cpuacct", often with a "cpu" link to it).
                limit = smaller(limit, limit_along(cgroup_fs / std::string(controllers), path,
                                                   false));
            }
        }
        return limit;
    } catch (...) {
        return std::nullopt;  // out of memory: no limit known
    }
}

int cpus_allowed(int affinity, std::optional<double> limit) noexcept {
    int cpus = affinity;
    if (cpus <= 0) {
        cpus = static_cast<int>(std::thread::hardware_concurrency());
    }
    if (limit && *limit > 0 && (cpus <= 0 || std::ceil(*limit) < cpus)) {
        cpus = static_cast<int>(std::ceil(*limit));
    }
    return cpus > 0 ? cpus : 1;
}

int usable_cpus() noexcept {
    int affinity = 0;
    cpu_set_t set;
    CPU_ZERO(&set);
    if (::sched_getaffinity(0, sizeof(set), &set) == 0) {
        affinity = CPU_COUNT(&set);
    }
    std::optional<double> limit;
    try {
        const std::optional<std::string> self = read_small("/proc/self/cgroup");
        if (self) {
            limit = cgroup_cpu_limit("/sys/fs/cgroup", *self);
        }
    } catch (...) {
        limit = std::nullopt;
    }
    return cpus_allowed(affinity, limit);
}

}  // namespace opweave::util
