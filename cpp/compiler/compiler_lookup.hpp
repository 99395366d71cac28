// opweave core (internal): finding the compiler and launcher executables.
//
// Shared by find_compiler() (compiler.cpp) and SystemCompiler
// (system_compiler.cpp). A compiler spec, from the `cxx` option or $CXX, may
// hold several whitespace-separated words, as in CXX="ccache g++": the last
// word is the compiler, the words before it are a launcher.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace opweave::compiler {

// Splits `text` on ASCII whitespace; no quoting is understood.
std::vector<std::string> split_words(std::string_view text);

// The absolute path of the executable `name`, or nullopt. A name containing a
// slash is made absolute against the working directory; a bare name is
// searched in the directories of $PATH (empty entries skipped). Either way the
// result must be a regular file we may execute. Symlinks are not resolved
// (ccache works through a `g++ -> ccache` symlink).
std::optional<std::filesystem::path> find_executable(std::string_view name);

// A resolved compiler spec.
struct CompilerCommand {
    std::filesystem::path compiler;     // absolute path of the compiler
    std::vector<std::string> launcher;  // launcher words, the first one absolute; may be empty
};

// Resolves `cxx`; when it is empty (or blank), $CXX; when that is unset or
// blank, the first of c++, g++, clang++ found on PATH. Throws Error saying
// what was searched and how to configure the compiler when nothing is found.
CompilerCommand resolve_compiler_command(std::string_view cxx);

// Resolves a launcher spec such as "ccache" or "/usr/bin/sccache": the first
// word is found with find_executable(), the rest are kept as arguments.
// Returns an empty vector for a blank spec. Throws Error when the launcher
// program is not found.
std::vector<std::string> resolve_launcher(std::string_view launcher);

}  // namespace opweave::compiler
