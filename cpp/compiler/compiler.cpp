// opweave core: compiler identity text for cache keys, and finding the
// compiler and launcher executables (see include/opweave/compiler.hpp and
// cpp/compiler/compiler_lookup.hpp).
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <utility>

#include "compiler/compiler_lookup.hpp"
#include "opweave/compiler.hpp"
#include "opweave/errors.hpp"

namespace opweave {

namespace {

// Bump when the layout of key_material() changes, so that old cache keys
// cannot collide with new ones.
constexpr const char* k_key_material_header = "opweave-compiler-identity v2\n";

// The compilers tried, in order, when neither `cxx` nor $CXX names one.
constexpr const char* k_default_compilers[] = {"c++", "g++", "clang++"};

constexpr std::string_view k_whitespace = " \t\n\r\f\v";

// "label <byte count>:<value>\n". The length prefix makes every field
// self-delimiting, whatever it contains (the version text has newlines).
void append_field(std::string& out, std::string_view label, std::string_view value) {
    out += label;
    out += ' ';
    out += std::to_string(value.size());
    out += ':';
    out += value;
    out += '\n';
}

std::string path_variable() {
    if (const char* path = std::getenv("PATH")) {
        return path;
    }
    // Unset PATH: the system default, as execvp() would use.
    const std::size_t size = ::confstr(_CS_PATH, nullptr, 0);
    if (size == 0) {
        return "/bin:/usr/bin";
    }
    std::string value(size, '\0');
    ::confstr(_CS_PATH, value.data(), size);
    value.resize(size - 1);  // drop the terminating NUL
    return value;
}

bool is_executable_file(const std::filesystem::path& path) {
    struct stat info {};
    // stat() follows symlinks: a `g++ -> ccache` link is a regular file.
    if (::stat(path.c_str(), &info) != 0 || !S_ISREG(info.st_mode)) {
        return false;
    }
    return ::access(path.c_str(), X_OK) == 0;
}

// Makes `path` absolute and drops "." components, without touching ".."
// or symlinks: "/a/link/../x" is not "/a/x" when link is a symlink.
std::filesystem::path absolute_without_dots(const std::filesystem::path& path) {
    std::error_code error;
    std::filesystem::path absolute = std::filesystem::absolute(path, error);
    if (error) {
        absolute = path;
    }
    std::filesystem::path cleaned;
    for (const auto& part : absolute) {
        if (part != "." && !part.empty()) {
            cleaned /= part;
        }
    }
    return cleaned;
}

bool is_blank(std::string_view text) {
    return text.find_first_not_of(k_whitespace) == std::string_view::npos;
}

// The options are named as opweave.config names them (`cxx`, `cxx_launcher`);
// C++ callers set the fields of CompilerOptions (`cxx`, `launcher`).
constexpr const char* k_compiler_hint =
    " Set the `cxx` option or $CXX to a compiler on PATH or to its full path "
    "(a launcher goes first, as in CXX=\"ccache g++\", or in the `cxx_launcher` option; "
    "CompilerOptions::launcher in C++).";
constexpr const char* k_launcher_hint =
    " Install it, set the `cxx_launcher` option (CompilerOptions::launcher in C++) to its "
    "full path, or leave the option empty to compile without a launcher.";

// Resolves one program word. `role` ("C++ compiler", "launcher"), `origin`
// ("the cxx option '...'", "$CXX='...'") and `how` (what to do about it) only
// shape the error message.
std::filesystem::path require_executable(const std::string& name, const std::string& role,
                                         const std::string& origin, const char* how) {
    if (auto found = compiler::find_executable(name)) {
        return *found;
    }
    if (name.find('/') != std::string::npos) {
        throw Error(role + " '" + name + "' (from " + origin +
                    ") does not exist or is not an executable file." + how);
    }
    throw Error(role + " '" + name + "' (from " + origin +
                ") was not found on PATH (searched PATH=" + path_variable() + ")." + how);
}

compiler::CompilerCommand resolve_words(const std::vector<std::string>& words,
                                               const std::string& origin) {
    const std::string& last = words.back();
    if (last.front() == '-') {
        throw Error("the C++ compiler spec from " + origin + " ends with the flag '" + last +
                    "'; it must end with the compiler (optionally after a launcher, as in "
                    "\"ccache g++\"). Pass compiler flags as job flags instead.");
    }
    compiler::CompilerCommand command;
    command.compiler = require_executable(last, "C++ compiler", origin, k_compiler_hint);
    if (words.size() > 1) {
        command.launcher.assign(words.begin(), words.end() - 1);
        command.launcher.front() =
            require_executable(command.launcher.front(), "launcher", origin, k_compiler_hint)
                .string();
    }
    return command;
}

}  // namespace

std::string CompilerIdentity::key_material() const {
    std::string out = k_key_material_header;
    append_field(out, "path", path);
    append_field(out, "version", version);
    return out;
}

std::filesystem::path find_compiler(std::string_view cxx) {
    return compiler::resolve_compiler_command(cxx).compiler;
}

namespace compiler {

std::vector<std::string> split_words(std::string_view text) {
    std::vector<std::string> words;
    std::size_t position = 0;
    while (true) {
        const std::size_t begin = text.find_first_not_of(k_whitespace, position);
        if (begin == std::string_view::npos) {
            break;
        }
        const std::size_t end = text.find_first_of(k_whitespace, begin);
        words.emplace_back(text.substr(begin, end == std::string_view::npos ? end : end - begin));
        if (end == std::string_view::npos) {
            break;
        }
        position = end;
    }
    return words;
}

std::optional<std::filesystem::path> find_executable(std::string_view name) {
    if (name.empty()) {
        return std::nullopt;
    }
    if (name.find('/') != std::string_view::npos) {
        std::filesystem::path path = absolute_without_dots(std::filesystem::path(name));
        if (is_executable_file(path)) {
            return path;
        }
        return std::nullopt;
    }
    const std::string search = path_variable();
    std::size_t begin = 0;
    while (begin <= search.size()) {
        std::size_t end = search.find(':', begin);
        if (end == std::string::npos) {
            end = search.size();
        }
        const std::string_view directory(search.data() + begin, end - begin);
        // An empty entry means the working directory to a shell; we skip it
        // rather than run whatever `g++` the current directory holds.
        if (!directory.empty()) {
            std::filesystem::path candidate =
                absolute_without_dots(std::filesystem::path(directory) / std::string(name));
            if (is_executable_file(candidate)) {
                return candidate;
            }
        }
        begin = end + 1;
    }
    return std::nullopt;
}

CompilerCommand resolve_compiler_command(std::string_view cxx) {
    if (!is_blank(cxx)) {
        return resolve_words(split_words(cxx), "the cxx option '" + std::string(cxx) + "'");
    }
    const char* env_cxx = std::getenv("CXX");
    if (env_cxx != nullptr && !is_blank(env_cxx)) {
        return resolve_words(split_words(env_cxx), "$CXX='" + std::string(env_cxx) + "'");
    }
    std::string tried;
    for (const char* name : k_default_compilers) {
        if (auto found = find_executable(name)) {
            return CompilerCommand{std::move(*found), {}};
        }
        tried += tried.empty() ? "" : ", ";
        tried += name;
    }
    throw Error("no C++ compiler found: the cxx option is empty, $CXX is not set, and none of " +
                tried + " is on PATH (searched PATH=" + path_variable() +
                "). Install g++ or clang++, or set the `cxx` option or $CXX to the compiler "
                "to use (a name on PATH or a full path).");
}

std::vector<std::string> resolve_launcher(std::string_view launcher) {
    std::vector<std::string> words = split_words(launcher);
    if (words.empty()) {
        return words;
    }
    const std::string origin = "the cxx_launcher option '" + std::string(launcher) + "'";
    words.front() = require_executable(words.front(), "launcher", origin, k_launcher_hint).string();
    return words;
}

}  // namespace compiler

}  // namespace opweave
