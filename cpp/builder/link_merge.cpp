// opweave core: names that several objects of a module's link define (see
// link_merge.hpp).
#include "builder/link_merge.hpp"

#include <cxxabi.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <map>
#include <memory>
#include <sstream>
#include <string_view>

#include "opweave/errors.hpp"
#include "util/process.hpp"

namespace opweave::builder {

namespace {

constexpr double k_tool_timeout = 120.0;

bool is_word_char(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
}

// The identifier a demangled name ends with: "ns::f(int)" -> "f".
std::string bare_name(std::string_view name) {
    name = name.substr(0, name.find('('));
    const std::size_t colon = name.rfind("::");
    return std::string(colon == std::string_view::npos ? name : name.substr(colon + 2));
}

// Whether `text` holds `word` as a whole identifier.
bool names(std::string_view text, std::string_view word) {
    for (std::size_t at = text.find(word); at != std::string_view::npos;
         at = text.find(word, at + 1)) {
        const std::size_t end = at + word.size();
        if ((at == 0 || !is_word_char(text[at - 1])) &&
            (end == text.size() || !is_word_char(text[end]))) {
            return true;
        }
    }
    return false;
}

// `text` with comments, string and character literals blanked out (same
// length, so positions hold).
std::string code_only(const std::string& text) {
    std::string out = text;
    for (std::size_t i = 0; i < out.size(); ++i) {
        if (out.compare(i, 2, "//") == 0) {
            for (; i < out.size() && out[i] != '\n'; ++i) out[i] = ' ';
        } else if (out.compare(i, 2, "/*") == 0) {
            const std::size_t end = out.find("*/", i + 2);
            const std::size_t stop = end == std::string::npos ? out.size() : end + 2;
            for (; i < stop; ++i) out[i] = out[i] == '\n' ? '\n' : ' ';
            --i;
        } else if (out[i] == '"' || out[i] == '\'') {
            const char quote = out[i];
            for (++i; i < out.size() && out[i] != quote; ++i) {
                if (out[i] == '\\' && i + 1 < out.size()) out[i++] = ' ';
                out[i] = ' ';
            }
        }
    }
    return out;
}

// The brace depth at each position, not counting the braces of a namespace
// or of an extern "C" block (a definition there is still at the top level).
std::vector<int> block_depths(const std::string& code) {
    std::vector<int> depth(code.size() + 1, 0);
    std::vector<bool> counted;  // per open brace: whether it is a block
    int current = 0;
    for (std::size_t i = 0; i < code.size(); ++i) {
        depth[i] = current;
        if (code[i] == '{') {
            const std::size_t end = i == 0 ? std::string::npos : code.find_last_of(";{}", i - 1);
            const std::size_t start = end == std::string::npos ? 0 : end + 1;
            const std::string head = code.substr(start, i - start);
            const bool scope = names(head, "namespace") || head.find("extern") != std::string::npos;
            counted.push_back(!scope);
            current += scope ? 0 : 1;
        } else if (code[i] == '}' && !counted.empty()) {
            current -= counted.back() ? 1 : 0;
            counted.pop_back();
        }
    }
    depth[code.size()] = current;
    return depth;
}

// After the ')' closing the '(' at `open`: whether a '{' (a body) comes
// before a ';' or a ','.
bool has_body(const std::string& code, std::size_t open) {
    int parens = 0;
    std::size_t i = open;
    for (; i < code.size(); ++i) {
        parens += code[i] == '(' ? 1 : code[i] == ')' ? -1 : 0;
        if (parens == 0) break;
    }
    for (++i; i < code.size(); ++i) {
        if (code[i] == '{') return true;
        if (code[i] == ';' || code[i] == ',' || code[i] == '=') return false;
    }
    return false;
}

// Whether the statement holding position `at` (from the last ';', '{' or
// '}') is a declaration only: extern, typedef or using.
bool declares_only(const std::string& code, std::size_t at) {
    std::size_t start = code.find_last_of(";{}", at);
    start = start == std::string::npos ? 0 : start + 1;
    const std::string head = code.substr(start, at - start);
    return names(head, "extern") || names(head, "typedef") || names(head, "using") ||
           names(head, "return") || head.find('(') != std::string::npos;
}

std::string demangled(const std::string& name) {
    int status = 0;
    const std::unique_ptr<char, decltype(&std::free)> out(
        abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status), &std::free);
    return status == 0 && out ? std::string(out.get()) : name;
}

std::string trimmed(std::string text) {
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())) != 0) {
        text.pop_back();
    }
    return text;
}

// The program `tool` of the compiler at `compiler` (its -print-prog-name),
// else `tool` on PATH.
std::string tool_of(const std::string& compiler, const std::string& tool,
                    BuildMonitor* monitor) {
    util::ProcessOptions options;
    options.timeout_seconds = k_tool_timeout;
    options.monitor = monitor;
    const util::ProcessResult found =
        util::run_process({compiler, "-print-prog-name=" + tool}, options);
    const std::string path = found.succeeded() ? trimmed(found.output) : "";
    return path.empty() ? tool : path;
}

// The global symbols `object` defines strongly, demangled -> mangled.
std::map<std::string, std::string> strong_symbols(const std::string& nm,
                                                  const std::filesystem::path& object,
                                                  BuildMonitor* monitor) {
    util::ProcessOptions options;
    options.timeout_seconds = k_tool_timeout;
    options.monitor = monitor;
    const util::ProcessResult listed =
        util::run_process({nm, "-P", "-g", "--defined-only", object.string()}, options);
    if (!listed.succeeded()) {
        throw Error("cannot list the symbols of " + object.string() + " with " + nm + ": " +
                    listed.output);
    }
    std::map<std::string, std::string> symbols;
    std::istringstream lines(listed.output);
    for (std::string line; std::getline(lines, line);) {
        std::istringstream fields(line);
        std::string name, type;
        if ((fields >> name >> type) && type.size() == 1 &&
            std::string_view("wWvVU").find(type[0]) == std::string_view::npos) {
            symbols.emplace(demangled(name), name);
        }
    }
    return symbols;
}

[[noreturn]] void refuse(const std::string& name, const std::vector<const LinkedObject*>& in,
                         const std::string& why, const std::string& diagnostics) {
    std::string where;
    for (const LinkedObject* object : in) {
        where += (where.empty() ? "" : " and ") + object->label;
    }
    throw CompileError("'" + name + "' is defined more than once" +
                           (where.empty() ? "" : ", in " + where) + ": " + why +
                           "; one translation unit would not compile it (a redefinition), "
                           "so units do not link it either",
                       {}, diagnostics, {}, 1);
}

}  // namespace

std::vector<std::string> duplicate_symbols(const std::string& diagnostics) {
    constexpr std::string_view k_multiple = "multiple definition of ";
    constexpr std::string_view k_duplicate = "duplicate symbol: ";
    std::vector<std::string> found;
    std::istringstream lines(diagnostics);
    for (std::string line; std::getline(lines, line);) {
        std::size_t at = line.find(k_multiple);
        std::string name;
        if (at != std::string::npos && at + k_multiple.size() + 1 < line.size()) {
            const std::size_t begin = at + k_multiple.size() + 1;  // after ` or '
            const std::size_t end = line.find('\'', begin);
            name = line.substr(begin, end == std::string::npos ? end : end - begin);
        } else if ((at = line.find(k_duplicate)) != std::string::npos) {
            name = trimmed(line.substr(at + k_duplicate.size()));
        }
        if (!name.empty() && std::find(found.begin(), found.end(), name) == found.end()) {
            found.push_back(name);
        }
    }
    return found;
}

bool defines(const std::string& piece, const std::string& word) {
    const std::string code = code_only(piece);
    const std::vector<int> depth = block_depths(code);
    for (std::size_t at = code.find(word); at != std::string::npos;
         at = code.find(word, at + 1)) {
        const std::size_t end = at + word.size();
        if ((at > 0 && is_word_char(code[at - 1])) || (end < code.size() && is_word_char(code[end])) ||
            depth[at] != 0) {
            continue;
        }
        std::size_t next = end;
        while (next < code.size() && std::isspace(static_cast<unsigned char>(code[next])) != 0) {
            ++next;
        }
        if (next < code.size() && code[next] == '(') {
            if (has_body(code, next)) return true;
        } else if (next < code.size() && std::string_view("=;[{,").find(code[next]) !=
                                             std::string_view::npos) {
            if (!declares_only(code, at)) return true;
        }
    }
    return false;
}

bool weaken_shared_duplicates(const std::string& diagnostics,
                              const std::vector<LinkedObject>& objects,
                              const std::vector<std::string>& shared_code,
                              const std::string& compiler, BuildMonitor* monitor) {
    const std::vector<std::string> duplicates = duplicate_symbols(diagnostics);
    if (duplicates.empty()) {
        return false;
    }
    const std::string nm = tool_of(compiler, "nm", monitor);
    std::vector<std::map<std::string, std::string>> symbols;
    for (const LinkedObject& object : objects) {
        symbols.push_back(strong_symbols(nm, object.path, monitor));
    }
    std::vector<std::vector<std::string>> weakened(objects.size());
    for (const std::string& name : duplicates) {
        std::vector<const LinkedObject*> in;
        std::vector<std::size_t> at;
        for (std::size_t i = 0; i < objects.size(); ++i) {
            if (symbols[i].count(name) != 0) {
                in.push_back(&objects[i]);
                at.push_back(i);
            }
        }
        const std::string bare = bare_name(name);
        std::vector<const std::string*> naming;
        for (const std::string& piece : shared_code) {
            if (!bare.empty() && names(piece, bare)) naming.push_back(&piece);
        }
        if (in.size() < 2) {
            refuse(name, in, "the objects that define it cannot be told", diagnostics);
        }
        if (naming.size() != 1 || !defines(*naming[0], bare)) {
            refuse(name, in, "it is not one piece of support code repeated in several units",
                   diagnostics);
        }
        for (const LinkedObject* object : in) {
            if (object->source == nullptr || object->source->find(*naming[0]) == std::string::npos) {
                refuse(name, in, "different code defines it in " + object->label, diagnostics);
            }
        }
        for (std::size_t k = 1; k < at.size(); ++k) {
            weakened[at[k]].push_back(symbols[at[k]].at(name));
        }
    }
    const std::string objcopy = tool_of(compiler, "objcopy", monitor);
    for (std::size_t i = 0; i < objects.size(); ++i) {
        if (weakened[i].empty()) continue;
        std::vector<std::string> argv = {objcopy};
        for (const std::string& symbol : weakened[i]) argv.push_back("--weaken-symbol=" + symbol);
        argv.push_back(objects[i].path.string());
        util::ProcessOptions options;
        options.timeout_seconds = k_tool_timeout;
        options.monitor = monitor;
        const util::ProcessResult done = util::run_process(argv, options);
        if (!done.succeeded()) {
            throw Error("cannot merge the copies of shared support code in " +
                        objects[i].path.string() + " with " + objcopy + ": " + done.output);
        }
    }
    return true;
}

}  // namespace opweave::builder
