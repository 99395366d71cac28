// opweave core (internal): verifying an entry before anyone loads it, and
// sealing a staged one before it is published.
//
// An entry is valid when its directory and every file it lists are what
// they should be (a directory and regular files, owned by this user, not
// writable by others, none reached through a symlink), its metadata reads
// and names its own key, every listed file has the recorded size and
// SHA-256, and every recorded header still has its recorded content. A file
// whose version this process verified before is not hashed again (see
// file_digest.hpp), so the hit path hashes each file once per process.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "cache/file_digest.hpp"
#include "opweave/module_cache.hpp"
#include "util/dir.hpp"

namespace opweave::cache {

enum class EntryState {
    missing,  // no entry
    valid,
    stale,    // whole, but a header it was built from changed
    damaged,  // unusable: quarantine it
    foreign,  // belongs to another user: neither usable nor ours to move
};

struct EntryCheck {
    EntryState state = EntryState::missing;
    std::string problem;  // why it is not valid, for messages
    Entry entry;          // what its metadata says (when it could be read)
};

// Checks the entry `key` in the shard directory `shard`. With Memo::bypass
// every file is hashed again. Owned by one of `owners` (this user, and for a
// read-only shared cache root and its named owner) is owned well enough.
EntryCheck check_entry(const util::Dir& shard, std::string_view key, Memo memo);
EntryCheck check_entry(const util::Dir& shard, std::string_view key, Memo memo,
                       const util::Owners& owners);

// Gives every file in `staging` its final mode (0700 for .so files, 0600 for
// the rest), flushes it to disk, and returns the list with sizes and hashes.
// Throws CacheError if the staging directory holds anything but regular
// files.
std::vector<EntryFile> seal_files(const util::Dir& staging);

}  // namespace opweave::cache
