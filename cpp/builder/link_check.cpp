// opweave core: what the link of a module from units checks (see link_check.hpp).
#include "builder/link_check.hpp"

#include <sstream>
#include <string_view>

#include "opweave/errors.hpp"

namespace opweave::builder {

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

}  // namespace

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

}  // namespace opweave::builder
