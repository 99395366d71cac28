// opweave core (internal): flat JSON objects (see json.hpp).
#include "util/json.hpp"

#include <cctype>
#include <cmath>
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
            if (static_cast<unsigned char>(c) < 0x20) {
                char escaped[8];
                std::snprintf(escaped, sizeof(escaped), "\\u%04x", static_cast<unsigned>(c));
                out += escaped;
            } else {
                out += c;
            }
        }
    }
    out += '"';
}

void append_number(std::string& out, double value) {
    if (!std::isfinite(value)) {
        value = 0.0;  // JSON has no NaN or infinity
    }
    char buffer[32];
    std::snprintf(buffer, sizeof(buffer), "%.17g", value);
    out += buffer;
}

// A cursor over the input; every parse_* returns false on malformed text.
class Parser {
public:
    explicit Parser(std::string_view text) : m_text(text) {}

    std::optional<JsonObject> parse_object() {
        JsonObject object;
        skip_space();
        if (!take('{')) {
            return std::nullopt;
        }
        skip_space();
        if (take('}')) {
            return finish(std::move(object));
        }
        for (;;) {
            std::string key;
            skip_space();
            if (!parse_string(key)) {
                return std::nullopt;
            }
            skip_space();
            if (!take(':')) {
                return std::nullopt;
            }
            skip_space();
            JsonValue value;
            if (!parse_value(value)) {
                return std::nullopt;
            }
            object[key] = std::move(value);
            skip_space();
            if (take('}')) {
                return finish(std::move(object));
            }
            if (!take(',')) {
                return std::nullopt;
            }
        }
    }

private:
    std::optional<JsonObject> finish(JsonObject object) {
        skip_space();
        if (m_pos != m_text.size()) {
            return std::nullopt;
        }
        return object;
    }

    bool parse_value(JsonValue& value) {
        if (peek() == '"') {
            std::string text;
            if (!parse_string(text)) {
                return false;
            }
            value = std::move(text);
            return true;
        }
        const std::string rest(m_text.substr(m_pos, 40));
        char* end = nullptr;
        const double number = std::strtod(rest.c_str(), &end);
        if (end == rest.c_str()) {
            return false;
        }
        m_pos += static_cast<std::size_t>(end - rest.c_str());
        value = number;
        return true;
    }

    bool parse_string(std::string& out) {
        if (!take('"')) {
            return false;
        }
        while (m_pos < m_text.size()) {
            const char c = m_text[m_pos++];
            if (c == '"') {
                return true;
            }
            if (c != '\\') {
                out += c;
                continue;
            }
            if (m_pos >= m_text.size()) {
                return false;
            }
            const char e = m_text[m_pos++];
            switch (e) {
            case '"': out += '"'; break;
            case '\\': out += '\\'; break;
            case '/': out += '/'; break;
            case 'n': out += '\n'; break;
            case 't': out += '\t'; break;
            case 'r': out += '\r'; break;
            case 'b': out += '\b'; break;
            case 'f': out += '\f'; break;
            case 'u': {
                // Only the control characters this writer escapes (< 0x80).
                if (m_pos + 4 > m_text.size()) {
                    return false;
                }
                const std::string hex(m_text.substr(m_pos, 4));
                char* end = nullptr;
                const long code = std::strtol(hex.c_str(), &end, 16);
                if (end != hex.c_str() + 4 || code >= 0x80) {
                    return false;
                }
                out += static_cast<char>(code);
                m_pos += 4;
                break;
            }
            default: return false;
            }
        }
        return false;
    }

    void skip_space() {
        while (m_pos < m_text.size() && std::isspace(static_cast<unsigned char>(m_text[m_pos]))) {
            ++m_pos;
        }
    }
    char peek() const { return m_pos < m_text.size() ? m_text[m_pos] : '\0'; }
    bool take(char c) {
        if (peek() == c) {
            ++m_pos;
            return true;
        }
        return false;
    }

    std::string_view m_text;
    std::size_t m_pos = 0;
};

}  // namespace

std::string to_json(const JsonObject& object) {
    std::string out = "{\n";
    bool first = true;
    for (const auto& [key, value] : object) {
        if (!first) {
            out += ",\n";
        }
        first = false;
        out += "  ";
        append_string(out, key);
        out += ": ";
        if (const auto* text = std::get_if<std::string>(&value)) {
            append_string(out, *text);
        } else {
            append_number(out, std::get<double>(value));
        }
    }
    out += "\n}\n";
    return out;
}

std::optional<JsonObject> parse_flat_json(std::string_view text) {
    return Parser(text).parse_object();
}

}  // namespace opweave::util
