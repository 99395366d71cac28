// opweave core (internal): meta.json (see entry_metadata.hpp).
#include "cache/entry_metadata.hpp"

#include <algorithm>
#include <charconv>

#include "opweave/module_cache.hpp"
#include "util/json.hpp"

namespace opweave::cache {

namespace {

using util::Json;

bool is_sha256(std::string_view text) {
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

// The header list is one JSON string of lines "<sha256 or -> <size>
// <mtime_ns> <ctime_ns> <path>": a hundred records parse as one string and a
// scan, without a JSON value per field (this is on every cache hit).
std::string header_lines(const std::vector<HeaderRecord>& headers) {
    std::string text;
    for (const HeaderRecord& header : headers) {
        text += header.sha256.empty() ? "-" : header.sha256;
        text += ' ' + std::to_string(header.size) + ' ' + std::to_string(header.mtime_ns) + ' ' +
                std::to_string(header.ctime_ns) + ' ' + header.path + '\n';
    }
    return text;
}

// The next space-separated field of `line` from `at`.
std::string_view field(std::string_view line, std::size_t& at) {
    const std::size_t end = std::min(line.find(' ', at), line.size());
    const std::string_view word = line.substr(at, end - at);
    at = end + 1;
    return word;
}

template <typename Integer>
bool read_integer(std::string_view text, Integer& out) {
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), out);
    return error == std::errc() && end == text.data() + text.size();
}

bool read_header_lines(std::string_view text, std::vector<HeaderRecord>& out) {
    out.reserve(static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')));
    while (!text.empty()) {
        const std::size_t newline = text.find('\n');
        if (newline == std::string_view::npos) {
            return false;
        }
        const std::string_view line = text.substr(0, newline);
        text.remove_prefix(newline + 1);
        std::size_t at = 0;
        HeaderRecord header;
        const std::string_view sha256 = field(line, at);
        if (!read_integer(field(line, at), header.size) ||
            !read_integer(field(line, at), header.mtime_ns) ||
            !read_integer(field(line, at), header.ctime_ns) || at >= line.size() ||
            !(sha256 == "-" || is_sha256(sha256))) {
            return false;
        }
        header.sha256 = sha256 == "-" ? std::string() : std::string(sha256);
        header.path = std::string(line.substr(at));
        out.push_back(std::move(header));
    }
    return true;
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

// "exports": a list of node keys; absent in older entries (none). Anything
// else makes the metadata unreadable: the keys name index files.
bool read_exports(Json& object, std::vector<std::string>& out) {
    Json* value = object.find("exports");
    if (value == nullptr) {
        return true;
    }
    if (value->array() == nullptr) {
        return false;
    }
    for (Json& item : *value->array()) {
        std::string* key = item.string();
        if (key == nullptr || !ModuleCache::is_key(*key)) {
            return false;
        }
        out.push_back(std::move(*key));
    }
    return true;
}

}  // namespace

std::string metadata_json(const Entry& entry) {
    Json::Array files;
    for (const EntryFile& file : entry.files) {
        files.emplace_back(Json::Array{file.name, file.size, file.sha256});
    }
    Json::Object object = {
        {"format", k_metadata_format},
        {"key", entry.key},
        {"kind", entry.kind},
        {"label", entry.label},
        {"environment", entry.environment},
        {"key_material", entry.key_material},
        {"command", entry.command},
        {"compile_seconds", entry.compile_seconds},
        {"created", entry.created},
        {"files", std::move(files)},
        {"headers", header_lines(entry.headers)},
    };
    if (!entry.exports.empty()) {
        // Only when there are some: an entry without exports reads as before.
        Json::Array exports(entry.exports.begin(), entry.exports.end());
        object.emplace("exports", std::move(exports));
    }
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
    std::string header_text;
    const bool complete =
        read_string(*json, "key", entry.key) && read_string(*json, "kind", entry.kind) &&
        read_string(*json, "label", entry.label) &&
        read_string(*json, "key_material", entry.key_material) &&
        read_string(*json, "command", entry.command) &&
        read_number(*json, "compile_seconds", entry.compile_seconds) &&
        read_number(*json, "created", entry.created) &&
        read_records<EntryFile>(*json, "files", read_file_record, entry.files) &&
        read_string(*json, "headers", header_text) &&
        read_header_lines(header_text, entry.headers) && read_exports(*json, entry.exports);
    if (!complete) {
        return std::nullopt;
    }
    if (json->find("environment") != nullptr && !read_string(*json, "environment", entry.environment)) {
        return std::nullopt;
    }
    return entry;
}

}  // namespace opweave::cache
