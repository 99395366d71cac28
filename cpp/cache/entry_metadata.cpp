// opweave core (internal): meta.json (see entry_metadata.hpp).
#include "cache/entry_metadata.hpp"

#include "util/json.hpp"

namespace opweave::cache {

namespace {

using util::Json;

bool is_sha256(const std::string& text) {
    if (text.size() != 64) {
        return false;
    }
    for (const char c : text) {
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
            return false;
        }
    }
    return true;
}

bool read_string(const Json& object, const char* name, std::string& out) {
    const Json* value = object.find(name);
    if (value == nullptr || value->string() == nullptr) {
        return false;
    }
    out = *value->string();
    return true;
}

bool read_number(const Json& object, const char* name, double& out) {
    const Json* value = object.find(name);
    const auto number = value != nullptr ? value->number() : std::nullopt;
    if (!number) {
        return false;
    }
    out = *number;
    return true;
}

// [name, size, sha256]
std::optional<EntryFile> read_file_record(Json& item) {
    Json::Array* fields = item.array();
    if (fields == nullptr || fields->size() != 3) {
        return std::nullopt;
    }
    auto* name = (*fields)[0].string();
    const auto size = (*fields)[1].integer();
    auto* sha256 = (*fields)[2].string();
    if (name == nullptr || name->empty() || name->find('/') != std::string::npos || !size ||
        *size < 0 || sha256 == nullptr || !is_sha256(*sha256)) {
        return std::nullopt;
    }
    return EntryFile{std::move(*name), static_cast<std::uint64_t>(*size), std::move(*sha256)};
}

// [path, size, mtime_ns, ctime_ns, sha256 or ""]
std::optional<HeaderRecord> read_header_record(Json& item) {
    Json::Array* fields = item.array();
    if (fields == nullptr || fields->size() != 5) {
        return std::nullopt;
    }
    auto* path = (*fields)[0].string();
    const auto size = (*fields)[1].integer();
    const auto mtime = (*fields)[2].integer();
    const auto ctime = (*fields)[3].integer();
    auto* sha256 = (*fields)[4].string();
    if (path == nullptr || path->empty() || !size || *size < 0 || !mtime || !ctime ||
        sha256 == nullptr || !(sha256->empty() || is_sha256(*sha256))) {
        return std::nullopt;
    }
    return HeaderRecord{std::move(*path), static_cast<std::uint64_t>(*size), *mtime, *ctime,
                        std::move(*sha256)};
}

template <typename Record, typename Read>
bool read_records(Json& object, const char* name, Read read, std::vector<Record>& out) {
    Json* value = object.find(name);
    if (value == nullptr || value->array() == nullptr) {
        return false;
    }
    out.reserve(value->array()->size());
    for (Json& item : *value->array()) {
        std::optional<Record> record = read(item);
        if (!record) {
            return false;
        }
        out.push_back(std::move(*record));
    }
    return true;
}

}  // namespace

std::string metadata_json(const Entry& entry) {
    Json::Array files;
    for (const EntryFile& file : entry.files) {
        files.emplace_back(Json::Array{file.name, file.size, file.sha256});
    }
    Json::Array headers;
    for (const HeaderRecord& header : entry.headers) {
        headers.emplace_back(
            Json::Array{header.path, header.size, header.mtime_ns, header.ctime_ns, header.sha256});
    }
    const Json::Object object = {
        {"format", k_metadata_format},
        {"key", entry.key},
        {"kind", entry.kind},
        {"label", entry.label},
        {"key_material", entry.key_material},
        {"command", entry.command},
        {"compile_seconds", entry.compile_seconds},
        {"created", entry.created},
        {"files", std::move(files)},
        {"headers", std::move(headers)},
    };
    // One member per line, for people who read the file.
    std::string text = "{";
    bool first = true;
    for (const auto& [name, value] : object) {
        text += first ? "\n" : ",\n";
        first = false;
        text += Json(name).dump() + ": " + value.dump();
    }
    return text + "\n}\n";
}

std::optional<Entry> parse_metadata(std::string_view text) {
    std::optional<Json> json = Json::parse(text);
    if (!json || json->object() == nullptr) {
        return std::nullopt;
    }
    const Json* format = json->find("format");
    if (format == nullptr || format->integer() != k_metadata_format) {
        return std::nullopt;
    }
    Entry entry;
    const bool complete =
        read_string(*json, "key", entry.key) && read_string(*json, "kind", entry.kind) &&
        read_string(*json, "label", entry.label) &&
        read_string(*json, "key_material", entry.key_material) &&
        read_string(*json, "command", entry.command) &&
        read_number(*json, "compile_seconds", entry.compile_seconds) &&
        read_number(*json, "created", entry.created) &&
        read_records<EntryFile>(*json, "files", read_file_record, entry.files) &&
        read_records<HeaderRecord>(*json, "headers", read_header_record, entry.headers);
    if (!complete) {
        return std::nullopt;
    }
    return entry;
}

}  // namespace opweave::cache
