// opweave core (internal): appends generated and user code to a module text,
// counting lines, recording where each user fragment landed and emitting
// #line directives around fragments that came from files.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "opweave/module_source.hpp"

namespace opweave::assembly {

class SourceWriter {
public:
    SourceWriter(const std::vector<CodeOrigin>& origins, std::string source_name);

    // The name of the macro that holds the path of the generated source:
    // the module's own lines are attributed to it, so that a build can name
    // the file where the cache keeps the source (-D<macro>="<path>") and a
    // compiler diagnostic, debug information or a sanitizer report cites a
    // path that exists. Without the flag it is `source_name`.
    static constexpr const char* k_source_macro = "OPWEAVE_MODULE_SOURCE";

    // opweave's own text, written as is.
    void raw(std::string_view text);
    // The macro's default and a #line directive attributing what follows to
    // it; written once, at the top.
    void source_preamble();
    // A user fragment on lines of its own, recorded in the line map.
    void fragment(const CodeFragment& fragment);

    const std::string& text() const noexcept { return m_text; }
    std::string take_text() { return std::move(m_text); }
    std::vector<LineRange> take_line_map() { return std::move(m_line_map); }

private:
    void start_line();
    void line_directive(int line, std::string_view file);
    void source_directive(int line);

    const std::vector<CodeOrigin>& m_origins;
    std::string m_source_name;
    std::string m_text;
    int m_line = 1;  // the line the next character goes on
    std::vector<LineRange> m_line_map;
};

}  // namespace opweave::assembly
