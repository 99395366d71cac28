// opweave core (internal): JSON values (see json.hpp).
#include "util/json.hpp"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace opweave::util {

namespace {

void append_string(std::string& out, std::string_view text) {
    out += '"';
    for (const char c : text) {
        switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\n': out += "\\n"; break;
        case '\t': out += "\\t"; break;
        case '\r': out += "\\r"; break;
        default:
            if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
                char escaped[8];
                std::snprintf(escaped, sizeof(escaped), "\\u%04x",
                              static_cast<unsigned>(static_cast<unsigned char>(c)));
                out += escaped;
            } else {
                out += c;
            }
        }
    }
    out += '"';
}

void append_utf8(std::string& out, std::uint32_t code) {
    if (code < 0x80) {
        out += static_cast<char>(code);
    } else if (code < 0x800) {
        out += static_cast<char>(0xC0 | (code >> 6));
        out += static_cast<char>(0x80 | (code & 0x3F));
    } else if (code < 0x10000) {
        out += static_cast<char>(0xE0 | (code >> 12));
        out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (code & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (code >> 18));
        out += static_cast<char>(0x80 | ((code >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (code & 0x3F));
    }
}

// A cursor over the input. Every parse_* returns false on malformed text.
class Parser {
public:
    explicit Parser(std::string_view text) : m_text(text) {}

    bool parse_document(Json& out) {
        skip_space();
        if (!parse_value(out, 0)) {
            return false;
        }
        skip_space();
        return m_pos == m_text.size();
    }

private:
    bool parse_value(Json& out, int depth) {
        if (depth > Json::k_max_depth || m_pos >= m_text.size()) {
            return false;
        }
        const char c = m_text[m_pos];
        if (c == '{') {
            return parse_object(out, depth);
        }
        if (c == '[') {
            return parse_array(out, depth);
        }
        if (c == '"') {
            std::string text;
            if (!parse_string(text)) {
                return false;
            }
            out = Json(std::move(text));
            return true;
        }
        if (take_word("null")) {
            out = Json();
            return true;
        }
        if (take_word("true")) {
            out = Json(true);
            return true;
        }
        if (take_word("false")) {
            out = Json(false);
            return true;
        }
        return parse_number(out);
    }

    bool parse_object(Json& out, int depth) {
        ++m_pos;  // '{'
        Json::Object object;
        skip_space();
        if (take('}')) {
            out = Json(std::move(object));
            return true;
        }
        for (;;) {
            std::string key;
            skip_space();
            if (!parse_string(key)) {
                return false;
            }
            skip_space();
            if (!take(':')) {
                return false;
            }
            skip_space();
            Json value;
            if (!parse_value(value, depth + 1)) {
                return false;
            }
            object[std::move(key)] = std::move(value);
            skip_space();
            if (take('}')) {
                out = Json(std::move(object));
                return true;
            }
            if (!take(',')) {
                return false;
            }
        }
    }

    bool parse_array(Json& out, int depth) {
        ++m_pos;  // '['
        Json::Array array;
        skip_space();
        if (take(']')) {
            out = Json(std::move(array));
            return true;
        }
        array.reserve(8);
        for (;;) {
            skip_space();
            if (!parse_value(array.emplace_back(), depth + 1)) {
                return false;
            }
            skip_space();
            if (take(']')) {
                out = Json(std::move(array));
                return true;
            }
            if (!take(',')) {
                return false;
            }
        }
    }

    bool parse_number(Json& out) {
        const std::size_t start = m_pos;
        bool integral = true;
        if (m_pos < m_text.size() && m_text[m_pos] == '-') {
            ++m_pos;
        }
        const std::size_t digits = m_pos;
        while (m_pos < m_text.size()) {
            const char c = m_text[m_pos];
            if (c >= '0' && c <= '9') {
                ++m_pos;
            } else if (c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-') {
                integral = false;
                ++m_pos;
            } else {
                break;
            }
        }
        if (m_pos == digits) {
            return false;
        }
        if (integral && m_pos - digits <= 19) {
            // Nineteen digits fit a uint64 without overflow: no strtoll.
            std::uint64_t value = 0;
            for (std::size_t i = digits; i < m_pos; ++i) {
                value = value * 10 + static_cast<std::uint64_t>(m_text[i] - '0');
            }
            constexpr std::uint64_t k_max = static_cast<std::uint64_t>(INT64_MAX);
            if (value <= k_max) {
                const auto magnitude = static_cast<std::int64_t>(value);
                out = Json(digits > start ? -magnitude : magnitude);
                return true;
            }
        }
        // from_chars, unlike strtod, ignores the locale: a process that set
        // LC_NUMERIC to a comma-decimal locale still reads "0.5".
        const char* first = m_text.data() + start;
        const char* last = m_text.data() + m_pos;
        double value = 0.0;
        const auto [end, error] = std::from_chars(first, last, value);
        if (error != std::errc() || end != last || !std::isfinite(value)) {
            return false;
        }
        out = Json(value);
        return true;
    }

    bool parse_string(std::string& out) {
        if (!take('"')) {
            return false;
        }
        while (m_pos < m_text.size()) {
            // Plain characters up to the next quote or escape, in one append.
            const std::size_t run = m_pos;
            while (m_pos < m_text.size() && m_text[m_pos] != '"' && m_text[m_pos] != '\\' &&
                   static_cast<unsigned char>(m_text[m_pos]) >= 0x20) {
                ++m_pos;
            }
            out.append(m_text.data() + run, m_pos - run);
            if (m_pos >= m_text.size()) {
                break;
            }
            const char c = m_text[m_pos++];
            if (c == '"') {
                return true;
            }
            if (c != '\\') {
                return false;  // a control character
            }
            if (m_pos >= m_text.size()) {
                return false;
            }
            const char escape = m_text[m_pos++];
            switch (escape) {
            case '"': out += '"'; break;
            case '\\': out += '\\'; break;
            case '/': out += '/'; break;
            case 'b': out += '\b'; break;
            case 'f': out += '\f'; break;
            case 'n': out += '\n'; break;
            case 'r': out += '\r'; break;
            case 't': out += '\t'; break;
            case 'u':
                if (!parse_unicode_escape(out)) {
                    return false;
                }
                break;
            default:
                return false;
            }
        }
        return false;
    }

    // After "\u": four hex digits, and a low surrogate after a high one.
    bool parse_unicode_escape(std::string& out) {
        std::uint32_t code = 0;
        if (!parse_hex4(code)) {
            return false;
        }
        if (code >= 0xD800 && code <= 0xDBFF) {
            std::uint32_t low = 0;
            if (!take('\\') || !take('u') || !parse_hex4(low) || low < 0xDC00 || low > 0xDFFF) {
                return false;
            }
            code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
        } else if (code >= 0xDC00 && code <= 0xDFFF) {
            return false;
        }
        append_utf8(out, code);
        return true;
    }

    bool parse_hex4(std::uint32_t& code) {
        if (m_pos + 4 > m_text.size()) {
            return false;
        }
        code = 0;
        for (int i = 0; i < 4; ++i) {
            const char c = m_text[m_pos++];
            code <<= 4;
            if (c >= '0' && c <= '9') {
                code |= static_cast<std::uint32_t>(c - '0');
            } else if (c >= 'a' && c <= 'f') {
                code |= static_cast<std::uint32_t>(c - 'a' + 10);
            } else if (c >= 'A' && c <= 'F') {
                code |= static_cast<std::uint32_t>(c - 'A' + 10);
            } else {
                return false;
            }
        }
        return true;
    }

    bool take_word(std::string_view word) {
        if (m_text.substr(m_pos, word.size()) != word) {
            return false;
        }
        m_pos += word.size();
        return true;
    }

    bool take(char c) {
        if (m_pos < m_text.size() && m_text[m_pos] == c) {
            ++m_pos;
            return true;
        }
        return false;
    }

    void skip_space() {
        while (m_pos < m_text.size() &&
               (m_text[m_pos] == ' ' || m_text[m_pos] == '\n' || m_text[m_pos] == '\t' ||
                m_text[m_pos] == '\r')) {
            ++m_pos;
        }
    }

    std::string_view m_text;
    std::size_t m_pos = 0;
};

}  // namespace

std::optional<std::int64_t> Json::integer() const {
    if (const auto* value = std::get_if<std::int64_t>(&m_value)) {
        return *value;
    }
    if (const auto* value = std::get_if<double>(&m_value)) {
        if (std::trunc(*value) == *value && std::fabs(*value) < 9.2e18) {
            return static_cast<std::int64_t>(*value);
        }
    }
    return std::nullopt;
}

std::optional<double> Json::number() const {
    if (const auto* value = std::get_if<std::int64_t>(&m_value)) {
        return static_cast<double>(*value);
    }
    if (const auto* value = std::get_if<double>(&m_value)) {
        return *value;
    }
    return std::nullopt;
}

const Json* Json::find(std::string_view name) const {
    const Object* members = object();
    if (members == nullptr) {
        return nullptr;
    }
    const auto it = members->find(std::string(name));
    return it == members->end() ? nullptr : &it->second;
}

Json* Json::find(std::string_view name) {
    return const_cast<Json*>(static_cast<const Json&>(*this).find(name));
}

std::string Json::dump() const {
    std::string out;
    dump_to(out);
    return out;
}

void Json::dump_to(std::string& out) const {
    if (is_null()) {
        out += "null";
    } else if (const auto* flag = std::get_if<bool>(&m_value)) {
        out += *flag ? "true" : "false";
    } else if (const auto* whole = std::get_if<std::int64_t>(&m_value)) {
        out += std::to_string(*whole);
    } else if (const auto* real = std::get_if<double>(&m_value)) {
        // JSON has no NaN or infinity. to_chars, unlike printf, ignores the
        // locale, and gives the shortest text that reads back exactly.
        char buffer[32];
        const double value = std::isfinite(*real) ? *real : 0.0;
        const auto [end, error] = std::to_chars(buffer, buffer + sizeof(buffer), value);
        out.append(buffer, error == std::errc() ? end : buffer);
    } else if (const auto* text = string()) {
        append_string(out, *text);
    } else if (const auto* items = array()) {
        out += '[';
        for (std::size_t i = 0; i < items->size(); ++i) {
            out += i == 0 ? "" : ",";
            (*items)[i].dump_to(out);
        }
        out += ']';
    } else if (const auto* members = object()) {
        out += '{';
        bool first = true;
        for (const auto& [name, value] : *members) {
            out += first ? "" : ",";
            first = false;
            append_string(out, name);
            out += ':';
            value.dump_to(out);
        }
        out += '}';
    }
}

std::optional<Json> Json::parse(std::string_view text) {
    Json out;
    Parser parser(text);
    if (!parser.parse_document(out)) {
        return std::nullopt;
    }
    return out;
}

}  // namespace opweave::util
