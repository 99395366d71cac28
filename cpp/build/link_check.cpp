// opweave core: what the link of a module from units checks (see link_check.hpp).
#include "build/link_check.hpp"

#include <cctype>
#include <sstream>
#include <string_view>

#include "opweave/errors.hpp"

namespace opweave::cache {

namespace {

constexpr std::string_view k_undefined = "undefined reference to ";
// GNU ld names the function a report is about on a line of its own.
constexpr std::string_view k_in_function = ": in function ";

// The symbol a linker line reports as undefined ("... undefined reference
// to `name'" from GNU ld, "... 'name'" from gold), or empty.
std::string undefined_symbol(std::string_view line) {
    const std::size_t at = line.find(k_undefined);
    if (at == std::string_view::npos) {
        return {};
    }
    std::string_view rest = line.substr(at + k_undefined.size());
    if (rest.size() < 2 || (rest.front() != '`' && rest.front() != '\'')) {
        return {};
    }
    rest.remove_prefix(1);
    const std::size_t end = rest.rfind('\'');
    return std::string(end == std::string_view::npos ? rest : rest.substr(0, end));
}

// Python's symbols, resolved when the interpreter loads the module, and
// names reserved to the implementation (a sanitizer's runtime, say, which
// clang does not link into shared libraries).
bool is_expected(std::string_view symbol) {
    return symbol.rfind("Py", 0) == 0 || symbol.rfind("_Py", 0) == 0 ||
           symbol.rfind("__", 0) == 0;
}

// The names a linker reports as defined more than once: GNU ld ("multiple
// definition of `f()'"), gold ("... of 'f()'") and lld ("duplicate symbol:
// f()").
std::vector<std::string> duplicate_symbols(const std::string& diagnostics) {
    constexpr std::string_view k_multiple = "multiple definition of ";
    constexpr std::string_view k_duplicate = "duplicate symbol: ";
    std::vector<std::string> names;
    std::istringstream lines(diagnostics);
    for (std::string line; std::getline(lines, line);) {
        std::size_t at = line.find(k_multiple);
        if (at != std::string::npos && at + k_multiple.size() + 1 < line.size()) {
            const std::size_t begin = at + k_multiple.size() + 1;  // after ` or '
            const std::size_t end = line.find('\'', begin);
            names.push_back(line.substr(begin, end == std::string::npos ? end : end - begin));
        } else if ((at = line.find(k_duplicate)) != std::string::npos) {
            names.push_back(line.substr(at + k_duplicate.size()));
        }
    }
    return names;
}

// The identifier a demangled name ends with: "ns::f(int)" -> "f".
std::string_view bare_name(std::string_view name) {
    name = name.substr(0, name.find('('));
    const std::size_t colon = name.rfind("::");
    return colon == std::string_view::npos ? name : name.substr(colon + 2);
}

bool is_word_char(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
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

}  // namespace

bool duplicates_from_shared_code(const std::string& diagnostics,
                                 const std::vector<std::string>& shared_code) {
    const std::vector<std::string> duplicates = duplicate_symbols(diagnostics);
    for (const std::string& name : duplicates) {
        const std::string_view bare = bare_name(name);
        std::size_t pieces = 0;
        for (const std::string& code : shared_code) {
            pieces += (!bare.empty() && names(code, bare)) ? 1 : 0;
        }
        if (pieces != 1) {
            return false;
        }
    }
    return !duplicates.empty();
}

std::vector<std::string> link_check_flags() {
    return {"-Wl,--no-undefined", "-Wl,--warn-unresolved-symbols"};
}

void check_undefined_symbols(CompileResult& result) {
    std::istringstream lines(result.diagnostics);
    std::string kept;
    std::string pending;  // an "in function" line, kept unless a dropped report follows
    std::vector<std::string> missing;
    for (std::string line; std::getline(lines, line);) {
        if (line.find(k_in_function) != std::string::npos && line.back() == ':') {
            kept += pending;
            pending = line + "\n";
            continue;
        }
        const std::string symbol = undefined_symbol(line);
        if (!symbol.empty() && is_expected(symbol)) {
            pending.clear();  // the reports it heads are dropped with it
            continue;
        }
        kept += pending + line + "\n";
        pending.clear();
        if (!symbol.empty()) {
            missing.push_back(symbol);
        }
    }
    result.diagnostics = kept;
    if (missing.empty()) {
        return;
    }
    std::string names;
    for (const std::string& symbol : missing) {
        if (names.find("'" + symbol + "'") == std::string::npos) {
            names += (names.empty() ? "'" : ", '") + symbol + "'";
        }
    }
    throw CompileError("the module's code uses symbols that nothing defines: " + names +
                           " (not in its code, the runtime or a declared library: "
                           "c_libraries)",
                       result.commands.empty() ? std::vector<std::string>{}
                                               : result.commands.back(),
                       result.diagnostics, {}, 1);
}

}  // namespace opweave::cache
