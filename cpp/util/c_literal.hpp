// opweave core (internal): text as the body of a C string literal.
#pragma once

#include <string>
#include <string_view>

namespace opweave::util {

// `text` as a C string literal body: backslashes and quotes escaped, control
// characters dropped (a file name in a #line directive or a -D value cannot
// hold them).
inline std::string c_string_body(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (char c : text) {
        if (c == '\\' || c == '"') {
            out += '\\';
        } else if (static_cast<unsigned char>(c) < 0x20) {
            continue;
        }
        out += c;
    }
    return out;
}

}  // namespace opweave::util
