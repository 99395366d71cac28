// opweave core (internal): the node index, which entry exports a node.
//
// A compiled module may export per-node functions, each under a node key
// (BuildRecord::exports, recorded in the entry's meta.json). The index maps
// a node key to the entry that holds it:
//
//   <root>/v2/nodes/<n2>/<node key>    a regular file (0600): "<entry key>\n"
//
// It is derived state, an accelerator and never a source of truth: it is
// written after an entry is published (the last writer wins when several
// entries export one node), and a reader (ModuleCache::find_export) trusts
// an entry only once lookup() verified it and its verified metadata lists
// the node. So a failure to write the index fails nothing, and an index file
// that is wrong (garbage, a symlink, an entry gone or not exporting the
// node) is removed and counts as a miss.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "opweave/module_cache.hpp"
#include "util/dir.hpp"

namespace opweave::cache {

inline constexpr const char* k_nodes_dir = "nodes";

enum class Overwrite { no, yes };

// Throws std::invalid_argument, naming `where`, unless every node of
// `exports` passes ModuleCache::is_key.
void check_node_keys(const std::vector<std::string>& exports, std::string_view where);

// Writes the index file of each node of `exports` (keys) naming the entry
// `entry_key`: with Overwrite::no only where there is none. Best effort:
// returns whether every file was written; never throws.
bool index_exports(const util::Dir& version, std::string_view entry_key,
                   const std::vector<std::string>& exports, Overwrite overwrite) noexcept;

// Removes the index files of `exports` that still name `entry_key` (another
// entry may have taken one since). Best effort; never throws.
void unindex_exports(const util::Dir& version, std::string_view entry_key,
                     const std::vector<std::string>& exports) noexcept;

// The exports that the metadata of the entry `key` of `shard` lists, read
// without verifying the entry; none if it cannot be read.
std::vector<std::string> recorded_exports(const util::Dir& shard, std::string_view key);

// Removes the whole index (for clear()). Returns whether there was one.
bool drop_node_index(const util::Dir& version) noexcept;

// verify()'s check of the index: every file below nodes/ must be a regular
// file of this user, named by a key, in the directory of its first two
// characters, naming an entry (in `entries`) whose metadata lists that key.
// What is not is added to report.problems (removed with Repair::yes).
void verify_node_index(const util::Dir& version, const util::Dir& entries, Repair repair,
                       VerifyReport& report);

}  // namespace opweave::cache
