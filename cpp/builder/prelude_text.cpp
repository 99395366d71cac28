// opweave core: the text of a precompiled prelude (see precompiled_header.hpp).
//
// A prelude is compiled into a module by `-include`, before the module's
// first line; the module then includes the same headers again, and their
// guards make that a no-op. That is exact only when the prelude is the very
// lines the module's includes start with: a header the module does not
// include, or includes later, would change what the module sees (a name it
// did not ask for, a macro defined in another order). So a prelude's text is
// a prefix of the include block of every source compiled with it, and the
// builder checks that before it passes the flag. The lines it may hold are
// the Python prelude (k_python_prelude) and includes, by angle brackets, of
// the C and C++ standard headers and NumPy's: headers that resolve the same
// from any directory, and that are the same for every module of a machine,
// so that a few preludes serve all its modules.
#include <algorithm>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include "opweave/module_source.hpp"
#include "opweave/precompiled_header.hpp"

namespace opweave {

namespace {

// Whether `line` (without its newline) includes a header a prelude may hold.
bool prelude_include(std::string_view line) {
    constexpr std::string_view include = "#include ";
    return line.substr(0, include.size()) == include &&
           is_standard_header(line.substr(include.size()));
}

// Whether `line` may come before the Python prelude: a blank line, a
// comment, or what the layout writes there (the default of the source
// macro and a #line directive; see source_writer.hpp). Anything else (an
// include, a macro) could change what the prelude's headers mean.
bool layout_line(std::string_view line) {
    constexpr std::string_view allowed[] = {
        "//", "#ifndef OPWEAVE_MODULE_SOURCE", "#define OPWEAVE_MODULE_SOURCE ", "#endif", "#line ",
    };
    return line.find_first_not_of(" \t\r") == std::string_view::npos ||
           std::any_of(std::begin(allowed), std::end(allowed), [&](std::string_view start) {
               return line.substr(0, start.size()) == start;
           });
}

// Where `source`'s Python prelude starts, or npos: on a line of its own,
// after layout lines only.
std::size_t python_prelude_at(std::string_view source) {
    for (std::size_t at = 0; at < source.size();) {
        if (source.substr(at, k_python_prelude.size()) == k_python_prelude) {
            return at;
        }
        const std::size_t newline = source.find('\n', at);
        if (newline == std::string_view::npos || !layout_line(source.substr(at, newline - at))) {
            break;
        }
        at = newline + 1;
    }
    return std::string_view::npos;
}

// The length of `source`'s include block from `at` (its Python prelude):
// the prelude's lines, then the includes a prelude may hold, each with its
// newline.
std::size_t include_block_size(std::string_view source, std::size_t at) {
    std::size_t end = at + k_python_prelude.size();
    while (end < source.size()) {
        const std::size_t newline = source.find('\n', end);
        if (newline == std::string_view::npos ||
            !prelude_include(source.substr(end, newline - end))) {
            break;
        }
        end = newline + 1;
    }
    return end - at;
}

}  // namespace

std::string prelude_text_of(const std::vector<std::string_view>& sources) {
    std::string_view common;
    bool any = false;
    for (const std::string_view source : sources) {
        const std::size_t at = python_prelude_at(source);
        if (at == std::string_view::npos) {
            continue;  // it includes nothing a prelude holds, and compiles without one
        }
        const std::string_view block = source.substr(at, include_block_size(source, at));
        if (!any) {
            common = block, any = true;
            continue;
        }
        std::size_t same = 0;
        for (std::size_t line = 0; line < std::min(common.size(), block.size());) {
            const std::size_t newline = common.find('\n', line);
            if (common.compare(line, newline + 1 - line, block, line, newline + 1 - line) != 0) {
                break;
            }
            same = line = newline + 1;
        }
        common = common.substr(0, same);
    }
    return std::string(common);
}

bool starts_with_prelude(std::string_view source, std::string_view prelude) {
    const std::size_t at = python_prelude_at(source);
    return at != std::string_view::npos && !prelude.empty() && prelude.back() == '\n' &&
           source.substr(at, prelude.size()) == prelude;
}

}  // namespace opweave
