// opweave core: SourceWriter (see source_writer.hpp).
#include "assembly/source_writer.hpp"

#include <algorithm>
#include <utility>

#include "util/c_literal.hpp"

namespace opweave::assembly {

namespace {

int count_newlines(std::string_view text) {
    return static_cast<int>(std::count(text.begin(), text.end(), '\n'));
}

// True if some line of text is a #line directive ("#line" or "# line", after
// optional blanks): such a fragment moves the compiler's idea of where it is,
// so the module's own numbering must be restored after it.
bool has_line_directive(std::string_view text) {
    std::size_t at = 0;
    while (at < text.size()) {
        std::size_t end = text.find('\n', at);
        if (end == std::string_view::npos) {
            end = text.size();
        }
        std::string_view line = text.substr(at, end - at);
        const std::size_t hash = line.find_first_not_of(" \t");
        if (hash != std::string_view::npos && line[hash] == '#') {
            const std::size_t word = line.find_first_not_of(" \t", hash + 1);
            if (word != std::string_view::npos && line.substr(word, 4) == "line" &&
                word + 4 < line.size() && (line[word + 4] == ' ' || line[word + 4] == '\t')) {
                return true;
            }
        }
        at = end + 1;
    }
    return false;
}

}  // namespace

SourceWriter::SourceWriter(const std::vector<CodeOrigin>& origins, std::string source_name)
    : m_origins(origins), m_source_name(std::move(source_name)) {}

void SourceWriter::raw(std::string_view text) {
    m_text.append(text);
    m_line += count_newlines(text);
}

void SourceWriter::start_line() {
    if (!m_text.empty() && m_text.back() != '\n') {
        raw("\n");
    }
}

void SourceWriter::line_directive(int line, std::string_view file) {
    raw("#line " + std::to_string(line) + " \"" + util::c_string_body(file) + "\"\n");
}

void SourceWriter::source_directive(int line) {
    raw("#line " + std::to_string(line) + " " + k_source_macro + "\n");
}

void SourceWriter::source_preamble() {
    raw(std::string("#ifndef ") + k_source_macro + "\n#define " + k_source_macro + " \"" +
        util::c_string_body(m_source_name) + "\"\n#endif\n");
    source_directive(m_line + 1);
}

void SourceWriter::fragment(const CodeFragment& fragment) {
    if (fragment.text.empty()) {
        return;
    }
    start_line();
    const CodeOrigin* origin =
        fragment.origin == k_no_origin ? nullptr : &m_origins[fragment.origin];
    const bool from_file = origin != nullptr && !origin->file.empty();
    if (from_file) {
        line_directive(origin->line, origin->file);
    }
    const int first = m_line;
    raw(fragment.text);
    start_line();
    if (fragment.origin != k_no_origin) {
        m_line_map.push_back(LineRange{first, m_line - 1, fragment.origin});
    }
    if (from_file || has_line_directive(fragment.text)) {
        // The directive's own line is m_line; the line after it is m_line + 1.
        source_directive(m_line + 1);
    }
}

}  // namespace opweave::assembly
