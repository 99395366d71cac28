// opweave core (internal): header manifests (see header_manifest.hpp).
#include "cache/header_manifest.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <optional>
#include <set>
#include <string_view>
#include <utility>

#include "cache/file_digest.hpp"
#include "cache/header_watch.hpp"
#include "util/fd.hpp"

namespace opweave::cache {

namespace {

constexpr std::int64_t k_ns_per_second = 1000000000;

bool is_below(const std::filesystem::path& path, const std::filesystem::path& dir) {
    auto p = path.begin();
    for (auto d = dir.begin(); d != dir.end(); ++d, ++p) {
        if (d->empty() && std::next(d) == dir.end()) {
            return true;  // a trailing separator
        }
        if (p == path.end() || *p != *d) {
            return false;
        }
    }
    return true;
}

// Whether the header's times leave open what the compiler read.
bool is_racy(const struct stat& st, std::int64_t compile_start_ns, std::int64_t recorded_ns) {
    if (std::max(ns_of(st.st_mtim), ns_of(st.st_ctim)) > recorded_ns + k_ns_per_second) {
        return false;  // from the future: the clocks disagree, the times say nothing
    }
    return changed_since(st, compile_start_ns);
}

// Whether `path` names a regular file itself, not through a symbolic link
// (what a watch on it follows).
bool is_plain_file(const std::string& path) {
    struct stat st {};
    return ::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// One dependency token of a rule line, unescaped; `i` moves past it.
std::string next_token(std::string_view line, std::size_t& i) {
    std::string token;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t') {
        const char c = line[i];
        if (c == '\\' && i + 1 < line.size() && (line[i + 1] == ' ' || line[i + 1] == '#')) {
            token += line[i + 1];
            i += 2;
        } else if (c == '$' && i + 1 < line.size() && line[i + 1] == '$') {
            token += '$';
            i += 2;
        } else {
            token += c;
            ++i;
        }
    }
    return token;
}

// The position just after the colon that ends a rule's targets, or npos. A
// colon followed by a separator or the line's end; "C:\x"-style drive
// letters do not occur on the systems we run on.
std::size_t rule_colon(std::string_view line) {
    for (std::size_t i = 0; i < line.size(); ++i) {
        if (line[i] == '\\') {
            ++i;
        } else if (line[i] == ':' && (i + 1 == line.size() || line[i + 1] == ' ' ||
                                      line[i + 1] == '\t')) {
            return i + 1;
        }
    }
    return std::string_view::npos;
}

// The record of the header at `path`, watched first (unless `watched` is
// null).
HeaderRecord record_header(const std::string& path, WatchedHeaders* watched,
                           std::int64_t compile_start_ns, std::int64_t recorded_ns) {
    HeaderRecord record;
    record.path = path;
    const bool watching =
        watched != nullptr && watched->watch(record.path);
    // Non-blocking: a FIFO (or a device) at a header's path must not hang
    // the build; it is no regular file, so it gets no hash.
    util::Fd file(::open(record.path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
    struct stat st {};
    if (!file || ::fstat(file.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
        return record;  // no hash: rebuilt next time
    }
    record.size = static_cast<std::uint64_t>(st.st_size);
    record.mtime_ns = ns_of(st.st_mtim);
    record.ctime_ns = ns_of(st.st_ctim);
    if (!is_racy(st, compile_start_ns, recorded_ns)) {
        record.sha256 = file_sha256(file.get(), st, Memo::machine).value_or("");
        // Changed while we hashed it: the hash may not be of the recorded
        // version (nor of what the compiler read).
        struct stat after {};
        if (::fstat(file.get(), &after) != 0 || after.st_size != st.st_size ||
            ns_of(after.st_mtim) != record.mtime_ns || ns_of(after.st_ctim) != record.ctime_ns) {
            record.sha256.clear();
        }
    }
    if (watching && !record.sha256.empty() && is_plain_file(record.path)) {
        watched->verified(record);
    }
    return record;
}

}  // namespace

std::vector<std::string> parse_depfile(std::string_view text) {
    // Join continuation lines ("\\\n") into logical lines.
    std::vector<std::string> lines(1);
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (text[i] == '\\' && i + 1 < text.size() && text[i + 1] == '\n') {
            lines.back() += ' ';
            ++i;
        } else if (text[i] == '\\' && i + 2 < text.size() && text[i + 1] == '\r' &&
                   text[i + 2] == '\n') {
            lines.back() += ' ';
            i += 2;
        } else if (text[i] == '\n') {
            lines.emplace_back();
        } else {
            lines.back() += text[i];
        }
    }
    std::vector<std::string> dependencies;
    for (const std::string& line : lines) {
        std::size_t i = rule_colon(line);
        if (i == std::string_view::npos) {
            continue;
        }
        while (i < line.size()) {
            if (line[i] == ' ' || line[i] == '\t' || line[i] == '\r') {
                ++i;
                continue;
            }
            std::string token = next_token(line, i);
            if (!token.empty()) {
                dependencies.push_back(std::move(token));
            }
        }
    }
    return dependencies;
}

std::vector<HeaderRecord> record_headers(const std::vector<std::string>& dependencies,
                                         const HeaderFilter& filter,
                                         std::int64_t compile_start_ns) {
    std::vector<std::filesystem::path> skip_dirs;
    for (const auto& dir : filter.skip_dirs) {
        skip_dirs.push_back(dir.lexically_normal());
        std::error_code error;
        const auto real = std::filesystem::canonical(dir, error);
        if (!error) {
            skip_dirs.push_back(real);
        }
    }
    struct timespec now {};
    ::clock_gettime(CLOCK_REALTIME, &now);
    const std::int64_t recorded_ns = ns_of(now);

    // Each header counts as seen, and once watched, is watched before its
    // stat, as a check would watch it (header_watch.hpp).
    WatchedHeaders watched;
    std::vector<HeaderRecord> records;
    std::set<std::string> seen;
    for (const std::string& dependency : dependencies) {
        std::filesystem::path path(dependency);
        if (path.is_relative()) {
            path = filter.working_dir / path;
        }
        const std::filesystem::path normal = path.lexically_normal();
        if (normal == filter.source.lexically_normal() ||
            std::any_of(skip_dirs.begin(), skip_dirs.end(),
                        [&](const auto& dir) { return is_below(normal, dir); }) ||
            !seen.insert(path.string()).second) {
            continue;
        }
        records.push_back(record_header(path.string(), &watched, compile_start_ns, recorded_ns));
    }
    return records;
}

namespace {

// Headers come in few directories (a hundred libc headers in a dozen): each
// directory is opened once and its headers stat'ed by name, instead of
// walking every header's whole path. Plain string work: this is on the path
// of every cache hit.
class HeaderDirs {
public:
    // Stats `path` (not following a final symbolic link with `no_follow`).
    bool stat(const std::string& path, struct stat& st, bool no_follow) {
        const std::string_view view(path);
        const std::size_t slash = view.rfind('/');
        const std::string_view dir_name = slash == 0 ? "/" : view.substr(0, slash);
        auto dir = std::find_if(m_dirs.begin(), m_dirs.end(),
                                [&](const auto& item) { return item.first == dir_name; });
        if (dir == m_dirs.end()) {
            util::Fd fd(::open(std::string(dir_name).c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
            m_dirs.emplace_back(dir_name, std::move(fd));
            dir = m_dirs.end() - 1;
        }
        const bool by_name = dir->second.valid() && slash != std::string_view::npos;
        const char* name = by_name ? path.c_str() + slash + 1 : path.c_str();
        return ::fstatat(by_name ? dir->second.get() : AT_FDCWD, name, &st,
                         no_follow ? AT_SYMLINK_NOFOLLOW : 0) == 0;
    }

private:
    std::vector<std::pair<std::string_view, util::Fd>> m_dirs;
};

}  // namespace

std::string check_headers(const std::vector<HeaderRecord>& headers, Memo memo) {
    // A header found as recorded is watched (header_watch.hpp), and needs no
    // stat while nothing happens to it.
    std::optional<WatchedHeaders> watched;
    if (memo == Memo::use) {
        watched.emplace();
    }
    HeaderDirs dirs;
    for (const HeaderRecord& header : headers) {
        if (header.sha256.empty()) {
            return "header " + header.path + " changed while it was being compiled";
        }
        if (watched && watched->known(header)) {
            continue;
        }
        // Watched before its stat, so that no change after the stat is missed.
        bool watching = watched && watched->watch(header.path);
        struct stat st {};
        if (!dirs.stat(header.path, st, watching)) {
            return "header " + header.path + " is gone";
        }
        if (S_ISLNK(st.st_mode)) {  // the watch is on the link, not on what it names
            watching = false;
            if (!dirs.stat(header.path, st, false)) {
                return "header " + header.path + " is gone";
            }
        }
        if (static_cast<std::uint64_t>(st.st_size) == header.size &&
            ns_of(st.st_mtim) == header.mtime_ns && ns_of(st.st_ctim) == header.ctime_ns) {
            if (watching) {
                watched->verified(header);
            }
            continue;
        }
        const util::Fd file(
            ::open(header.path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
        if (!file || ::fstat(file.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
            return "header " + header.path + " cannot be read";
        }
        const Memo sources = memo == Memo::use ? Memo::machine : memo;
        if (file_sha256(file.get(), st, sources) != header.sha256) {
            return "header " + header.path + " changed";
        }
    }
    return {};
}

}  // namespace opweave::cache

namespace opweave {

std::string headers_changed(const std::vector<HeaderRecord>& headers) {
    return cache::check_headers(headers, cache::Memo::use);
}

std::string files_changed(const std::vector<HeaderRecord>& files) {
    for (const HeaderRecord& file : files) {
        if (file.sha256.empty()) {
            return "file " + file.path +
                   " has no recorded content (it changed while it was read, or what ran was not"
                   " its content)";
        }
        struct stat st {};
        if (::stat(file.path.c_str(), &st) != 0) {
            return "file " + file.path + " is gone";
        }
        if (static_cast<std::uint64_t>(st.st_size) == file.size &&
            cache::ns_of(st.st_mtim) == file.mtime_ns && cache::ns_of(st.st_ctim) == file.ctime_ns) {
            continue;
        }
        const util::Fd fd(::open(file.path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
        if (!fd || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
            return "file " + file.path + " cannot be read";
        }
        if (cache::file_sha256(fd.get(), st, cache::Memo::machine) != file.sha256) {
            return "file " + file.path + " changed";
        }
    }
    return {};
}

std::vector<HeaderRecord> record_files(const std::vector<std::string>& paths,
                                       std::int64_t since_ns) {
    std::vector<HeaderRecord> records;
    records.reserve(paths.size());
    const std::int64_t recorded_ns = cache::filesystem_now_ns();
    for (const std::string& path : paths) {
        records.push_back(cache::record_header(path, nullptr, since_ns, recorded_ns));
    }
    return records;
}

std::int64_t filesystem_now_ns() noexcept { return cache::filesystem_now_ns(); }

}  // namespace opweave

namespace opweave::cache {

void merge_headers(std::vector<HeaderRecord>& headers, const std::vector<HeaderRecord>& more) {
    std::set<std::string> present;
    for (const HeaderRecord& header : headers) {
        present.insert(header.path);
    }
    for (const HeaderRecord& header : more) {
        if (present.insert(header.path).second) {
            headers.push_back(header);
        }
    }
}

}  // namespace opweave::cache
