// opweave core: cache entries as packs (cache/entry_pack.hpp), and
// ModuleCache::export_entry, the one way an entry leaves the cache.
#include "cache/entry_pack.hpp"

#include <cstdint>
#include <limits>
#include <optional>
#include <string>

#include "cache/entry_metadata.hpp"
#include "opweave/errors.hpp"
#include "opweave/hash.hpp"
#include "util/dir.hpp"
#include "util/json.hpp"

namespace opweave {

namespace {

constexpr std::string_view k_magic = "OPWEAVE-ENTRY 1\n";
// The JSON line of a pack is short (a key and file names): a longer one is
// not read.
constexpr std::size_t k_header_limit = 1u << 20;

[[noreturn]] void damaged(const std::string& what) {
    throw CacheError("a damaged opweave cache entry (" + what + ")", {});
}

// `value` as a size, or nothing.
std::optional<std::size_t> size_of(const util::Json* value) {
    const std::optional<std::int64_t> number = value ? value->integer() : std::nullopt;
    if (!number || *number < 0) {
        return std::nullopt;
    }
    return static_cast<std::size_t>(*number);
}

// The bytes of the file `name` of `dir` if they are `file`'s as recorded.
std::optional<std::string> recorded_content(const util::Dir& dir, const EntryFile& file) {
    if (file.size >= std::numeric_limits<std::size_t>::max()) {
        return std::nullopt;
    }
    std::optional<std::string> content =
        dir.read_file(file.name, static_cast<std::size_t>(file.size));
    if (!content || content->size() != file.size ||
        to_hex(Sha256::of(*content)) != file.sha256) {
        return std::nullopt;
    }
    return content;
}

}  // namespace

namespace cache {

std::string pack_entry(std::string_view key, const ForeignEntry& entry) {
    util::Json::Array files;
    std::size_t total = entry.metadata.size();
    for (const auto& [name, content] : entry.files) {
        files.emplace_back(util::Json::Array{name, static_cast<std::uint64_t>(content.size())});
        total += content.size();
    }
    const util::Json header(util::Json::Object{
        {"key", std::string(key)},
        {"meta", static_cast<std::uint64_t>(entry.metadata.size())},
        {"files", std::move(files)},
    });
    const std::string line = header.dump();
    std::string pack;
    pack.reserve(k_magic.size() + line.size() + 1 + total);
    pack.append(k_magic).append(line).append("\n").append(entry.metadata);
    for (const auto& file : entry.files) {
        pack.append(file.second);
    }
    return pack;
}

ForeignEntry unpack_entry(std::string_view key, std::string_view pack) {
    if (pack.substr(0, k_magic.size()) != k_magic) {
        throw CacheError("not an opweave cache entry", {});
    }
    const std::size_t end = pack.find('\n', k_magic.size());
    if (end == std::string_view::npos || end - k_magic.size() > k_header_limit) {
        damaged("header");
    }
    const std::optional<util::Json> header =
        util::Json::parse(pack.substr(k_magic.size(), end - k_magic.size()));
    const util::Json* packed_key = header ? header->find("key") : nullptr;
    const std::optional<std::size_t> meta_size = size_of(header ? header->find("meta") : nullptr);
    const util::Json* files = header ? header->find("files") : nullptr;
    if (!packed_key || !packed_key->string() || !meta_size || !files || !files->array()) {
        damaged("header");
    }
    if (*packed_key->string() != key) {
        throw CacheError("the entry stored for " + std::string(key.substr(0, 16)) +
                             "... is the entry of " + packed_key->string()->substr(0, 16) + "...",
                         {});
    }
    std::vector<std::pair<std::string, std::size_t>> sizes;
    std::size_t total = *meta_size;
    for (const util::Json& file : *files->array()) {
        const util::Json::Array* pair = file.array();
        const std::optional<std::size_t> size =
            pair && pair->size() == 2 ? size_of(&(*pair)[1]) : std::nullopt;
        if (!size || !(*pair)[0].string() || *size > pack.size()) {
            damaged("header");
        }
        sizes.emplace_back(*(*pair)[0].string(), *size);
        total += *size;
    }
    std::size_t at = end + 1;
    if (*meta_size > pack.size() || total != pack.size() - at) {
        damaged("its sizes do not add up");
    }
    ForeignEntry entry;
    entry.metadata = std::string(pack.substr(at, *meta_size));
    at += *meta_size;
    for (auto& [name, size] : sizes) {
        entry.files.emplace_back(std::move(name), std::string(pack.substr(at, size)));
        at += size;
    }
    return entry;
}

}  // namespace cache

std::optional<std::string> ModuleCache::export_entry(std::string_view key) {
    const std::optional<Entry> entry = lookup(key);
    const std::optional<util::Dir> dir = entry ? util::Dir::open(entry->dir) : std::nullopt;
    if (!dir) {
        return std::nullopt;
    }
    // The metadata and files as read now, checked against each other: an
    // entry replaced or evicted since the lookup is not exported half.
    cache::ForeignEntry foreign;
    std::optional<std::string> metadata = dir->read_file(k_metadata_file);
    std::optional<Entry> read = metadata ? cache::parse_metadata(*metadata) : std::nullopt;
    if (!read || read->key != key) {
        return std::nullopt;
    }
    foreign.metadata = std::move(*metadata);
    for (const EntryFile& file : read->files) {
        std::optional<std::string> content = recorded_content(*dir, file);
        if (!content) {
            return std::nullopt;
        }
        foreign.files.emplace_back(file.name, std::move(*content));
    }
    return cache::pack_entry(key, foreign);
}

std::optional<std::string> ModuleCache::read_entry_file(std::string_view key,
                                                        std::string_view name,
                                                        std::vector<CacheEvent>* events) {
    const std::optional<Entry> entry = lookup_layers_last(key, events);
    const std::optional<util::Dir> dir = entry ? util::Dir::open(entry->dir) : std::nullopt;
    if (!dir) {
        return std::nullopt;
    }
    for (const EntryFile& file : entry->files) {
        if (file.name == name) {
            return recorded_content(*dir, file);
        }
    }
    return std::nullopt;
}

}  // namespace opweave
