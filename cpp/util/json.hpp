// opweave core (internal): the JSON of on-disk metadata.
//
// A small JSON value: null, booleans, integers (int64, exact: file sizes and
// nanosecond timestamps do not fit a double), other numbers (double),
// strings, arrays and objects. Strings are byte strings: the writer escapes
// '"', '\\' and control characters and passes other bytes through (paths need
// not be UTF-8); the reader decodes every JSON escape. The reader refuses
// anything it does not fully understand (trailing text, nesting deeper than
// k_max_depth) instead of guessing, so a damaged file reads as "invalid".
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace opweave::util {

class Json {
public:
    using Array = std::vector<Json>;
    using Object = std::map<std::string, Json>;

    static constexpr int k_max_depth = 32;

    Json() = default;  // null
    Json(std::nullptr_t) {}
    Json(bool value) : m_value(value) {}
    Json(int value) : m_value(static_cast<std::int64_t>(value)) {}
    Json(std::int64_t value) : m_value(value) {}
    Json(std::uint64_t value) : m_value(static_cast<std::int64_t>(value)) {}
    Json(double value) : m_value(value) {}
    Json(const char* value) : m_value(std::string(value)) {}
    Json(std::string value) : m_value(std::move(value)) {}
    Json(Array value) : m_value(std::move(value)) {}
    Json(Object value) : m_value(std::move(value)) {}

    bool is_null() const { return std::holds_alternative<std::monostate>(m_value); }
    const std::string* string() const { return std::get_if<std::string>(&m_value); }
    const Array* array() const { return std::get_if<Array>(&m_value); }
    const Object* object() const { return std::get_if<Object>(&m_value); }
    // The same, for taking the value apart (moving its strings out).
    std::string* string() { return std::get_if<std::string>(&m_value); }
    Array* array() { return std::get_if<Array>(&m_value); }
    Object* object() { return std::get_if<Object>(&m_value); }
    // The value as an integer: an integer, or a double with no fraction.
    std::optional<std::int64_t> integer() const;
    // The value as a number: an integer or a double.
    std::optional<double> number() const;

    // The member `name` of an object; nullptr if this is not an object or
    // has no such member.
    const Json* find(std::string_view name) const;
    Json* find(std::string_view name);

    // The compact text of this value, one line.
    std::string dump() const;

    // Parses a whole text; nothing if it is not exactly one JSON value.
    static std::optional<Json> parse(std::string_view text);

private:
    void dump_to(std::string& out) const;

    std::variant<std::monostate, bool, std::int64_t, double, std::string, Array, Object> m_value;
};

}  // namespace opweave::util
