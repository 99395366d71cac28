// opweave core (internal): the flat JSON objects used for on-disk metadata.
//
// Only what the metadata needs: one object whose values are strings or
// numbers. Writing escapes every control character; reading rejects anything
// else (nested values, trailing text) rather than guessing.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

namespace opweave::util {

using JsonValue = std::variant<std::string, double>;
using JsonObject = std::map<std::string, JsonValue>;

// One "key": value pair per line, keys sorted, ending with a newline.
std::string to_json(const JsonObject& object);

// Parses a flat object; nothing if the text is not one.
std::optional<JsonObject> parse_flat_json(std::string_view text);

}  // namespace opweave::util
