// opweave core: the node index (see node_index.hpp) and
// ModuleCache::find_export.
//
// Concurrency: no lock. Writers publish each index file by a rename of a
// temporary file in the same directory, so a reader sees a whole file, old
// or new. Races, and why each is harmless:
//  1. A reader finds an index file naming an entry that is evicted (or
//     replaced) before it looks the entry up: lookup() misses, the file is
//     removed, find_export misses. The entry's next build writes it again.
//  2. A reader (or evict) decides to remove an index file while a builder
//     renames a new one over it: the remover compares the device and inode
//     it read with what the name holds just before unlinking, so a file
//     renamed into place meanwhile is left alone (only one renamed in
//     between that check and the unlink is lost: a miss, then a rebuild of
//     the index on the next hit of its entry).
//  3. An index is written after its entry is evicted: it names a missing
//     entry, and is removed by the next find_export or verify.
// A killed writer leaves a temporary ".<node>.tmp.<random>" file; verify
// reports (and removes) one older than an hour.
#include "cache/node_index.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <map>
#include <optional>
#include <stdexcept>

#include "cache/entry_metadata.hpp"
#include "cache/layout.hpp"
#include "cache/module_cache_impl.hpp"
#include "util/fs.hpp"

namespace opweave {

namespace cache {

namespace {

// An index file holds a key of at most 128 characters and a newline.
constexpr std::size_t k_max_index_bytes = 129;
// A temporary file this old was left by a killed writer.
constexpr double k_temporary_grace_seconds = 3600.0;

enum class IndexState { missing, ok, bad };

// What reading one index file found.
struct IndexFile {
    IndexState state = IndexState::missing;
    std::string entry_key;  // when ok
    std::string problem;    // when bad
    dev_t dev = 0;          // of the name as it was found (lstat), for removing it
    ino_t ino = 0;
};

IndexFile bad_index(std::string problem, const struct stat& st) {
    return {IndexState::bad, {}, std::move(problem), st.st_dev, st.st_ino};
}

// Reads the index file `name` of `shard`, trusted if it belongs to one of
// `owners` and nobody else can write it.
IndexFile read_index(const util::Dir& shard, std::string_view name, const util::Owners& owners) {
    const std::optional<struct stat> st = shard.stat(name);
    if (!st) {
        return {};
    }
    const util::Trust trust = util::check_trust(*st, false, owners);
    if (trust != util::Trust::ok) {
        return bad_index(util::describe_trust(trust, *st), *st);
    }
    // O_NONBLOCK: should a FIFO replace the file after the lstat, opening it
    // must not hang.
    const util::Fd fd = shard.open_file(name, O_RDONLY | O_NONBLOCK);
    struct stat opened {};
    if (!fd || ::fstat(fd.get(), &opened) != 0) {
        return errno == ENOENT ? IndexFile{} : bad_index("cannot be opened", *st);
    }
    if (opened.st_dev != st->st_dev || opened.st_ino != st->st_ino) {
        return {};  // replaced meanwhile: as good as a miss
    }
    if (static_cast<std::uint64_t>(opened.st_size) > k_max_index_bytes) {
        return bad_index("holds " + std::to_string(opened.st_size) + " bytes", *st);
    }
    std::optional<std::string> text = util::read_all(fd.get(), k_max_index_bytes);
    if (!text || text->empty() || text->back() != '\n' ||
        !ModuleCache::is_key(std::string_view(*text).substr(0, text->size() - 1))) {
        return bad_index("does not hold an entry key", *st);
    }
    text->pop_back();
    return {IndexState::ok, std::move(*text), {}, st->st_dev, st->st_ino};
}

// Removes `name` from `shard` if it is still the file `found` read (see
// race 2 at the top). Returns whether it was removed.
bool remove_if_same(const util::Dir& shard, std::string_view name, const IndexFile& found) {
    const std::optional<struct stat> st = shard.stat(name);
    if (!st || st->st_dev != found.dev || st->st_ino != found.ino) {
        return false;
    }
    return shard.remove(name);  // a directory in a file's place too, never through a symlink
}

bool lists(const std::vector<std::string>& exports, std::string_view node_key) {
    return std::find(exports.begin(), exports.end(), node_key) != exports.end();
}

// A directory of a read-only cache: one of `owners`', writable by nobody
// else, not a symlink.
std::optional<util::Dir> open_read_only_dir(const std::optional<util::Dir>& parent,
                                            const std::string& name, const util::Owners& owners) {
    const std::optional<struct stat> st = parent ? parent->stat(name) : std::nullopt;
    if (!st || util::check_trust(*st, true, owners) != util::Trust::ok) {
        return std::nullopt;
    }
    return parent->open_dir(name);
}

// A directory of this cache that a walk may enter (ours, private, not a
// symlink).
std::optional<util::Dir> open_own_dir(const util::Dir& parent, std::string_view name) {
    const std::optional<struct stat> st = parent.stat(name);
    if (!st || util::check_trust(*st, true) != util::Trust::ok) {
        return std::nullopt;
    }
    return parent.open_dir(name);
}

bool is_shard_name(std::string_view name) {
    return name.size() == 2 && ModuleCache::is_key(std::string(name) + "000000");
}

// A temporary file of Dir::write_file (".<name>.tmp.<random>") that a
// writer may still be renaming into place.
bool is_young_temporary(const util::Dir& shard, const std::string& name) {
    if (name.empty() || name.front() != '.' || name.find(".tmp.") == std::string::npos) {
        return false;
    }
    const std::optional<struct stat> st = shard.stat(name);
    return st && util::now_seconds() - util::mtime_seconds(*st) < k_temporary_grace_seconds;
}

// Why the index file `name` of the shard `dir_name` is wrong, or "" (also
// when it vanished meanwhile); `found` is what was read.
std::string index_problem(const util::Dir& entries, const util::Dir& shard,
                          const std::string& dir_name, const std::string& name,
                          IndexFile& found) {
    const std::optional<struct stat> st = shard.stat(name);
    if (!st) {
        return {};
    }
    if (!ModuleCache::is_key(name) || shard_name(name) != dir_name) {
        found = bad_index({}, *st);
        return "is not named by a node key of its directory";
    }
    found = read_index(shard, name, util::Owners());
    if (found.state != IndexState::ok) {
        return found.state == IndexState::bad ? "node index " + name + " " + found.problem
                                              : std::string();
    }
    const std::string& key = found.entry_key;
    const std::optional<util::Dir> entry_shard = open_own_dir(entries, shard_name(key));
    const std::optional<util::Dir> entry = entry_shard ? open_own_dir(*entry_shard, key)
                                                       : std::nullopt;
    if (!entry) {
        return "node index " + name + " points to entry " + key + ", which does not exist";
    }
    const std::optional<std::string> text = entry->read_file(ModuleCache::k_metadata_file);
    const std::optional<Entry> metadata = text ? parse_metadata(*text) : std::nullopt;
    if (!metadata || !lists(metadata->exports, name)) {
        return "node index " + name + " points to entry " + key + " which does not export it";
    }
    return {};
}

}  // namespace

void check_node_keys(const std::vector<std::string>& exports, std::string_view where) {
    for (const std::string& node : exports) {
        if (!ModuleCache::is_key(node)) {
            throw std::invalid_argument("invalid node key '" + node.substr(0, 140) + "' in " +
                                        std::string(where) +
                                        ": expected 8 to 128 characters of [0-9A-Za-z_-]");
        }
    }
}

bool index_exports(const util::Dir& version, std::string_view entry_key,
                   const std::vector<std::string>& exports, Overwrite overwrite) noexcept {
    if (exports.empty()) {
        return true;
    }
    try {
        const util::Dir nodes = require_layout_dir(version, k_nodes_dir, nullptr);
        const std::string content = std::string(entry_key) + "\n";
        std::map<std::string, util::Dir> shards;
        bool all = true;
        for (const std::string& node : exports) {
            const std::string name = shard_name(node);
            auto shard = shards.find(name);
            if (shard == shards.end()) {
                shard = shards.emplace(name, require_layout_dir(nodes, name, nullptr)).first;
            }
            if (overwrite == Overwrite::no && shard->second.stat(node)) {
                continue;
            }
            all = shard->second.write_file(node, content, 0600, util::Sync::no) && all;
        }
        return all;
    } catch (...) {
        return false;  // an unusable index directory: the index is only an accelerator
    }
}

void unindex_exports(const util::Dir& version, std::string_view entry_key,
                     const std::vector<std::string>& exports) noexcept {
    if (exports.empty()) {
        return;
    }
    try {
        const std::optional<util::Dir> nodes = open_own_dir(version, k_nodes_dir);
        for (const std::string& node : exports) {
            const std::optional<util::Dir> shard =
                nodes ? open_own_dir(*nodes, shard_name(node)) : std::nullopt;
            if (!shard) {
                continue;
            }
            const IndexFile found = read_index(*shard, node, util::Owners());
            if (found.state == IndexState::ok && found.entry_key == entry_key) {
                remove_if_same(*shard, node, found);
            }
        }
    } catch (...) {
        // Best effort: a file left behind is removed by the next find_export.
    }
}

std::vector<std::string> recorded_exports(const util::Dir& shard, std::string_view key) {
    const std::optional<util::Dir> dir = open_own_dir(shard, key);
    const std::optional<std::string> text =
        dir ? dir->read_file(ModuleCache::k_metadata_file) : std::nullopt;
    std::optional<Entry> entry = text ? parse_metadata(*text) : std::nullopt;
    return entry ? std::move(entry->exports) : std::vector<std::string>();
}

bool drop_node_index(const util::Dir& version) noexcept {
    try {
        return version.stat(k_nodes_dir) && discard(version, version, k_nodes_dir);
    } catch (...) {
        return false;
    }
}

void verify_node_index(const util::Dir& version, const util::Dir& entries, Repair repair,
                       VerifyReport& report) {
    const std::optional<util::Dir> nodes =
        open_layout_dir(version, k_nodes_dir, Create::no, nullptr);
    if (!nodes) {
        return;
    }
    for (const std::string& dir_name : nodes->list()) {
        const std::optional<struct stat> st = nodes->stat(dir_name);
        if (!st) {
            continue;
        }
        const util::Trust trust = util::check_trust(*st, true);
        if (trust != util::Trust::ok || !is_shard_name(dir_name)) {
            VerifyProblem problem{nodes->path_of(dir_name),
                                  trust != util::Trust::ok
                                      ? util::describe_trust(trust, *st)
                                      : std::string("is not a directory of the node index")};
            if (repair == Repair::yes && trust != util::Trust::foreign_owner) {
                problem.repaired = discard(version, *nodes, dir_name);
            }
            report.problems.push_back(std::move(problem));
            continue;
        }
        const std::optional<util::Dir> shard = nodes->open_dir(dir_name);
        for (const std::string& name : shard ? shard->list() : std::vector<std::string>()) {
            if (is_young_temporary(*shard, name)) {
                continue;
            }
            IndexFile found;
            std::string problem = index_problem(entries, *shard, dir_name, name, found);
            if (!problem.empty()) {
                // Checked again: an entry published or an index file
                // rewritten meanwhile is not a problem.
                problem = index_problem(entries, *shard, dir_name, name, found);
            }
            if (problem.empty()) {
                continue;
            }
            VerifyProblem reported{shard->path_of(name), std::move(problem)};
            if (repair == Repair::yes) {
                reported.repaired = remove_if_same(*shard, name, found);
            }
            report.problems.push_back(std::move(reported));
        }
    }
}

}  // namespace cache

std::optional<Entry> ModuleCache::find_export(std::string_view node_key,
                                              std::vector<CacheEvent>* events,
                                              BuildMonitor* monitor) {
    check_key(node_key);
    if (m_options.read_only) {
        return find_export_read_only(node_key, events);
    }
    const cache::Places places = cache::open_places(m_root, events, m_impl->ancestors);
    const std::optional<util::Dir> nodes =
        cache::open_layout_dir(places.version, cache::k_nodes_dir, cache::Create::no, events);
    const std::optional<util::Dir> shard =
        nodes ? cache::open_layout_dir(*nodes, cache::shard_name(node_key), cache::Create::no,
                                       events)
              : std::nullopt;
    const cache::IndexFile found =
        shard ? cache::read_index(*shard, node_key, util::Owners()) : cache::IndexFile();
    if (found.state == cache::IndexState::ok) {
        std::optional<Entry> entry = lookup(found.entry_key, events, monitor);
        if (entry && cache::lists(entry->exports, node_key)) {
            return entry;
        }
    }
    if (found.state != cache::IndexState::missing) {
        cache::remove_if_same(*shard, node_key, found);
    }
    for (const std::unique_ptr<ModuleCache>& layer : m_impl->layers) {
        if (std::optional<Entry> shared = layer->find_export_read_only(node_key, events)) {
            return shared;
        }
    }
    return std::nullopt;
}

std::optional<Entry> ModuleCache::find_export_read_only(std::string_view node_key,
                                                        std::vector<CacheEvent>* events) const {
    const util::Owners& owners = m_impl->owners;
    std::string problem;
    std::optional<util::Dir> dir = util::open_through_trusted(m_root, owners, problem);
    for (const std::string& name : {cache::version_dir_name(), std::string(cache::k_nodes_dir),
                                    cache::shard_name(node_key)}) {
        dir = cache::open_read_only_dir(dir, name, owners);
    }
    const cache::IndexFile found =
        dir ? cache::read_index(*dir, node_key, owners) : cache::IndexFile();
    if (found.state != cache::IndexState::ok) {
        return std::nullopt;
    }
    std::optional<Entry> entry = lookup_read_only(found.entry_key, events);
    if (entry && cache::lists(entry->exports, node_key)) {
        return entry;
    }
    return std::nullopt;
}

}  // namespace opweave
