// opweave core (internal): meta.json (see entry_metadata.hpp).
#include "cache/entry_metadata.hpp"

#include "opweave/module_cache.hpp"
#include "util/fs.hpp"
#include "util/json.hpp"

namespace opweave::cache {

namespace {

std::filesystem::path metadata_path(const std::filesystem::path& entry_dir) {
    return entry_dir / ModuleCache::k_metadata_file;
}

std::string get_string(const util::JsonObject& object, const char* name) {
    const auto it = object.find(name);
    if (it == object.end()) {
        return {};
    }
    const auto* text = std::get_if<std::string>(&it->second);
    return text != nullptr ? *text : std::string();
}

double get_number(const util::JsonObject& object, const char* name) {
    const auto it = object.find(name);
    if (it == object.end()) {
        return 0.0;
    }
    const auto* number = std::get_if<double>(&it->second);
    return number != nullptr ? *number : 0.0;
}

}  // namespace

std::string to_json(const EntryMetadata& metadata) {
    util::JsonObject object;
    object["format"] = static_cast<double>(EntryMetadata::k_format);
    object["key"] = metadata.key;
    object["key_material"] = metadata.key_material;
    object["command"] = metadata.command;
    object["compile_seconds"] = metadata.compile_seconds;
    object["created"] = metadata.created;
    object["last_used"] = metadata.last_used;
    return util::to_json(object);
}

std::optional<EntryMetadata> read_metadata(const std::filesystem::path& entry_dir) {
    const auto text = util::read_file(metadata_path(entry_dir));
    if (!text) {
        return std::nullopt;
    }
    const auto object = util::parse_flat_json(*text);
    if (!object || get_number(*object, "format") != EntryMetadata::k_format) {
        return std::nullopt;
    }
    EntryMetadata metadata;
    metadata.key = get_string(*object, "key");
    metadata.key_material = get_string(*object, "key_material");
    metadata.command = get_string(*object, "command");
    metadata.compile_seconds = get_number(*object, "compile_seconds");
    metadata.created = get_number(*object, "created");
    metadata.last_used = get_number(*object, "last_used");
    return metadata;
}

void write_metadata(const std::filesystem::path& entry_dir, const EntryMetadata& metadata) {
    util::write_file_atomic(metadata_path(entry_dir), to_json(metadata));
}

}  // namespace opweave::cache
