// opweave core: the headers every translation unit of a module shares (see
// is_standard_header in module_source.hpp).
#include <algorithm>
#include <iterator>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "opweave/module_source.hpp"

namespace opweave {

namespace {

// The standard C headers and the C++ headers modules include in practice.
constexpr std::string_view k_standard_headers[] = {
    "algorithm", "array",     "assert.h",   "atomic",        "bitset",
    "cassert",   "cctype",    "cerrno",     "cfloat",        "climits",
    "cmath",     "complex",   "complex.h",  "cstddef",       "cstdint",
    "cstdio",    "cstdlib",   "cstring",    "ctype.h",       "deque",
    "errno.h",   "fenv.h",    "float.h",    "functional",    "inttypes.h",
    "iostream",  "iso646.h",  "iterator",   "limits",        "limits.h",
    "list",      "locale.h",  "map",        "math.h",        "memory",
    "new",       "numeric",   "random",     "set",           "setjmp.h",
    "signal.h",  "sstream",   "stdalign.h", "stdarg.h",      "stdbool.h",
    "stddef.h",  "stdexcept", "stdint.h",   "stdio.h",       "stdlib.h",
    "string",    "string.h",  "tgmath.h",   "time.h",        "tuple",
    "type_traits", "unordered_map", "unordered_set", "utility", "vector",
    "wchar.h",   "wctype.h",  "cinttypes",  "cstdarg",
};

}  // namespace

bool is_standard_header(std::string_view header) {
    if (header.size() < 3 || header.front() != '<' || header.back() != '>') {
        return false;
    }
    const std::string_view name = header.substr(1, header.size() - 2);
    if (name.substr(0, 6) == "numpy/") {
        return name.find("..") == std::string_view::npos &&
               name.find_first_of(" \t\"<>") == std::string_view::npos;
    }
    return std::find(std::begin(k_standard_headers), std::end(k_standard_headers), name) !=
           std::end(k_standard_headers);
}

std::vector<std::string> shared_headers(const ModuleSpec& spec) {
    std::vector<std::string> shared;
    std::unordered_set<std::string> seen;
    const auto take = [&](const std::vector<std::string>& headers) {
        for (const std::string& header : headers) {
            if (header.empty() || seen.count(header) != 0) {
                continue;
            }
            if (!is_standard_header(header)) {
                return false;
            }
            seen.insert(header);
            shared.push_back(header);
        }
        return true;
    };
    if (take(spec.headers)) {
        for (const UnitSpec& unit : spec.units) {
            if (!take(unit.headers)) {
                break;
            }
        }
    }
    return shared;
}

}  // namespace opweave
