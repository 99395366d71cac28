// opweave core: ModuleCache::adopt, publishing an entry that was built
// elsewhere (see include/opweave/module_cache.hpp).
//
// What arrives is untrusted bytes: an export file, or a value fetched from a
// shared store. It is published only through the one publishing path
// (get_or_build: the key's lock, a staging directory, sealed files, the
// metadata last, one rename), and only once it verifies exactly as a local
// entry would: its metadata names the key, its files are the listed ones
// with their recorded sizes and hashes, and the headers it was built from
// have the same content on this machine. The entry records this machine's
// stat data for those headers, so that later lookups stat them as they do
// for entries built here.
#include <set>
#include <string>

#include "cache/entry_metadata.hpp"
#include "cache/entry_pack.hpp"
#include "cache/file_digest.hpp"
#include "cache/header_manifest.hpp"
#include "opweave/errors.hpp"
#include "opweave/hash.hpp"
#include "opweave/module_cache.hpp"
#include "util/fs.hpp"

namespace opweave {

namespace {

[[noreturn]] void refuse(std::string_view key, const std::string& why) {
    throw CacheError("the entry " + std::string(key.substr(0, 16)) + "... does not verify: " + why,
                     {});
}

// A name an entry may hold: a plain file name, not the metadata.
bool plain_name(const std::string& name) {
    return !name.empty() && name.size() <= 255 && name.front() != '.' &&
           name.find('/') == std::string::npos && name.find('\0') == std::string::npos &&
           name != ModuleCache::k_metadata_file;
}

// The metadata of `foreign`, checked against its files.
Entry checked_metadata(std::string_view key, const cache::ForeignEntry& foreign) {
    std::optional<Entry> entry = cache::parse_metadata(foreign.metadata);
    if (!entry) {
        refuse(key, "its metadata cannot be read");
    }
    if (entry->key != key) {
        refuse(key, "its metadata describes another key (" + entry->key.substr(0, 16) + "...)");
    }
    if (entry->files.size() != foreign.files.size()) {
        refuse(key, "it brings " + std::to_string(foreign.files.size()) + " files, " +
                        std::to_string(entry->files.size()) + " recorded");
    }
    std::set<std::string> seen;
    for (const auto& [name, content] : foreign.files) {
        if (!plain_name(name) || !seen.insert(name).second) {
            refuse(key, "it holds a file named '" + name.substr(0, 80) + "'");
        }
        bool recorded = false;
        for (const EntryFile& file : entry->files) {
            if (file.name == name) {
                recorded = file.size == content.size() &&
                           file.sha256 == to_hex(Sha256::of(content));
                if (!recorded) {
                    refuse(key, name + " does not have its recorded size and SHA-256");
                }
            }
        }
        if (!recorded) {
            refuse(key, name + " is not recorded in its metadata");
        }
    }
    return *entry;
}

// The entry's headers as found here, each with the recorded content.
std::vector<HeaderRecord> local_headers(std::string_view key,
                                        const std::vector<HeaderRecord>& recorded) {
    std::vector<std::string> paths;
    for (const HeaderRecord& header : recorded) {
        paths.push_back(header.path);
    }
    cache::HeaderFilter all;
    all.working_dir = "/";
    std::vector<HeaderRecord> here =
        cache::record_headers(paths, all, cache::filesystem_now_ns());
    for (const HeaderRecord& theirs : recorded) {
        bool same = false;
        for (const HeaderRecord& ours : here) {
            same = same || (ours.path == theirs.path && !ours.sha256.empty() &&
                            ours.sha256 == theirs.sha256);
        }
        if (!same) {
            refuse(key, "it was built with another version of " + theirs.path +
                            " than this machine has (or none)");
        }
    }
    return here;
}

// The record of `foreign` as the entry of `key`, verified: the metadata's
// record (get_or_build indexes its exports), with the headers as they are
// on this machine.
BuildRecord verified_record(std::string_view key, const cache::ForeignEntry& foreign) {
    const Entry entry = checked_metadata(key, foreign);
    BuildRecord record = entry;
    record.headers = local_headers(key, entry.headers);
    return record;
}

void write_files(const cache::ForeignEntry& foreign, const std::filesystem::path& staging) {
    for (const auto& [name, content] : foreign.files) {
        util::write_file_atomic(staging / name, content);
    }
}

}  // namespace

namespace cache {

BuildRecord stage_foreign(std::string_view key, const ForeignEntry& foreign,
                          const std::filesystem::path& staging) {
    BuildRecord record = verified_record(key, foreign);
    write_files(foreign, staging);
    return record;
}

}  // namespace cache

CacheResult ModuleCache::adopt(std::string_view key, std::string_view pack,
                               BuildMonitor* monitor) {
    check_key(key);
    const cache::ForeignEntry foreign = cache::unpack_entry(key, pack);
    // Verified before the lock is taken, and whether or not the key has a
    // valid entry here: bytes that do not verify are an error either way.
    const BuildRecord record = verified_record(key, foreign);
    const BuildFn publish = [&](const std::filesystem::path& staging) {
        write_files(foreign, staging);
        return record;
    };
    return get_or_build(key, publish, monitor);
}

}  // namespace opweave
