// opweave core: the C++ compiler driver.
//
// Compiler is a small interface (identity + compile) so that the cache and its
// tests can run with a fake compiler. SystemCompiler drives a real g++ or
// clang++: it finds the executable, reports its identity for cache keys, builds
// the command line from a CompileJob, and runs it with posix_spawnp, capturing
// the combined output, under a timeout.
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "opweave/build_monitor.hpp"

namespace opweave {

enum class OptLevel { o0, o1, o2, o3 };
enum class DebugInfo { no, yes };

// What to compile: one source file into one shared library (or, with
// Compiler::compile_header, one header into a precompiled header; with
// Compiler::compile_object, one source into an object file; with
// Compiler::link, object files into one shared library).
struct CompileJob {
    std::filesystem::path source;
    std::filesystem::path output;            // the shared library to produce
    // Non-empty: the compile step also writes a make-style list of every
    // file it read here (-MD -MF <depfile>). Enters no key.
    std::filesystem::path depfile;
    std::vector<std::string> flags;          // extra flags, passed to compile and link
    // Flags passed to the compile step (not the link) after `flags`, and left
    // out of every cache key: only for flags that change how fast a module
    // compiles, never what it compiles to, such as `-include` of a
    // precompiled prelude (see precompiled_header.hpp).
    std::vector<std::string> unkeyed_flags;
    std::vector<std::string> include_dirs;   // -I
    std::vector<std::string> lib_dirs;       // -L
    std::vector<std::string> libraries;      // -l, names without the "-l"
    OptLevel opt_level = OptLevel::o2;
    DebugInfo debug_info = DebugInfo::no;
    // Non-empty: the commands run in this directory, and the source, output
    // and depfile are named relative to it when they are below it, so that
    // a compile in one directory reads, to a compiler launcher, exactly as
    // the same compile in another (ccache and sccache then hit across
    // staging directories and machines). Enters no key.
    std::filesystem::path working_dir;
    // Non-empty (with a working_dir): the name the compile records for its
    // working directory, in debug information and __FILE__, in place of the
    // directory's path. A staging directory is gone after the build, and
    // its path changes with every build and cache root, so a launcher that
    // saw it would never hit; this name is fixed by the caller. See
    // system_compiler.cpp for how. Enters no key.
    std::filesystem::path debug_dir;
    // Non-empty (with a launcher): the program the launcher runs in place of
    // the compiler, a file holding CompilerIdentity::launcher_wrapper. Enters
    // no key.
    std::filesystem::path launched_compiler;
};

// The compiler that is run, and what changes the binary it produces.
struct CompilerIdentity {
    std::string path;                   // resolved absolute path of the compiler
    std::string version;                // its full `--version` output
    // e.g. {"/usr/bin/ccache"}; empty when none. A launcher caches or
    // distributes compiles; it does not change what they produce.
    std::vector<std::string> launcher;
    // Non-empty: a shell script that a compile with a debug_dir must give
    // the launcher in place of the compiler (CompileJob::launched_compiler),
    // because the launcher alone cannot record the debug_dir (GCC under
    // sccache; see system_compiler.cpp). The caller writes it to a file it
    // owns. It only runs the compiler at `path`; it is not in key_material.
    // sccache hashes it in place of the compiler, so it holds the first
    // line of `version` and the SHA-256 of the compiler's file.
    std::string launcher_wrapper;

    // A stable text form of the path and the version (not the launcher),
    // for cache keys.
    std::string key_material() const;
};

// What a successful compile did.
struct CompileResult {
    std::vector<std::vector<std::string>> commands;  // every command run, in order
    std::filesystem::path working_dir;               // where they ran; empty: here
    std::string diagnostics;                         // compiler output (warnings)
    double seconds = 0.0;                            // wall time of all commands
};

// The compiler interface. compile() and compile_header() throw CompileError
// on failure, and Interrupted when `monitor` (polled while the compiler
// runs; may be null) asks to stop.
class Compiler {
public:
    virtual ~Compiler() = default;
    virtual const CompilerIdentity& identity() const = 0;
    virtual CompileResult compile(const CompileJob& job, BuildMonitor* monitor) const = 0;
    // Compiles the header `job.source` into the precompiled header
    // `job.output`, with the language and code generation flags compile()
    // would use for `job`; libraries and library dirs are not used.
    virtual CompileResult compile_header(const CompileJob& job, BuildMonitor* monitor) const = 0;
    // Compiles `job.source` into the object file `job.output` (position
    // independent, as compile() would compile it), through the launcher if
    // there is one; libraries and library dirs are not used.
    virtual CompileResult compile_object(const CompileJob& job, BuildMonitor* monitor) const = 0;
    // Links `objects` into the shared library `job.output` with the job's
    // flags, library dirs and libraries; `job.source` is not used.
    virtual CompileResult link(const CompileJob& job,
                               const std::vector<std::filesystem::path>& objects,
                               BuildMonitor* monitor) const = 0;
};

struct CompilerOptions {
    // The compiler to use. Empty: $CXX, else the first of c++, g++, clang++
    // on PATH. A bare name is looked up on PATH; a path is used as given.
    std::string cxx;
    // Optional launcher prefixed to compile commands, e.g. "ccache". Empty:
    // none. With a launcher, compiling is two steps (-c to an object file,
    // then a link without the launcher), because ccache and sccache do not
    // cache a one-step `-shared` build.
    std::string launcher;
    // Kill the compiler (and its children) after this many seconds; the limit
    // applies to each command (with a launcher: compile, then link).
    double timeout_seconds = 600.0;
};

// What a SystemCompiler may keep of its compiler between processes: the
// output of `--version`, for which a fresh process otherwise runs the
// compiler (about 10 ms). Used only for a compiler that is an ELF
// executable (after symbolic links: `file`), whose `--version` output is its
// own; a script may print what its environment makes it print. `find` gives
// the output kept for `file` as it is now (its owner names it by the file's
// identity and times, so that an upgraded or replaced compiler is asked
// again), or nothing; `keep` keeps it.
struct VersionMemo {
    std::function<std::optional<std::string>(const std::filesystem::path& file)> find;
    std::function<void(const std::filesystem::path& file, const std::string& version)> keep;
};

// Returns the absolute path of the compiler that `cxx` names (see
// CompilerOptions::cxx for the search order). Throws Error if none is found.
std::filesystem::path find_compiler(std::string_view cxx);

// A real g++ or clang++ run as a child process.
class SystemCompiler final : public Compiler {
public:
    // Resolves the compiler and the launcher and runs `<cxx> --version`,
    // unless `memo` (used while constructing only) has its output. Throws
    // Error if either cannot be found or the version query fails.
    explicit SystemCompiler(CompilerOptions options = {}, const VersionMemo* memo = nullptr);

    // What one command of a job does; it shapes error messages.
    enum class Step { compile_and_link, compile_object, link };

    const CompilerIdentity& identity() const override { return m_identity; }

    // The command lines compile() would run for `job`: one, or two with a
    // launcher (compile to an object, then link).
    std::vector<std::vector<std::string>> command_lines(const CompileJob& job) const;

    // The command line compile_header() runs for `job`: the compile step of
    // command_lines() with `-x c++-header` before the source, no `-shared`,
    // no link inputs and never the launcher (ccache does not cache a
    // precompiled header without extra configuration).
    std::vector<std::string> header_command_line(const CompileJob& job) const;

    // The command lines compile_object() and link() run.
    std::vector<std::string> object_command_line(const CompileJob& job) const;
    std::vector<std::string> link_command_line(
        const CompileJob& job, const std::vector<std::filesystem::path>& objects) const;

    // Runs the commands, each in its own process group that is killed if
    // this process dies. Throws CompileError carrying the failing command,
    // the full diagnostics and the source path on a non-zero exit, a
    // signal, a timeout, or a failure to start the compiler; Interrupted
    // (after killing the compiler) when `monitor` asks to stop.
    CompileResult compile(const CompileJob& job, BuildMonitor* monitor = nullptr) const override;

    // Runs header_command_line(job); fails like compile().
    CompileResult compile_header(const CompileJob& job,
                                 BuildMonitor* monitor = nullptr) const override;

    // Run object_command_line(job) and link_command_line(job, objects); fail
    // like compile().
    CompileResult compile_object(const CompileJob& job,
                                 BuildMonitor* monitor = nullptr) const override;
    CompileResult link(const CompileJob& job, const std::vector<std::filesystem::path>& objects,
                       BuildMonitor* monitor = nullptr) const override;

private:
    CompileResult run_commands(const std::vector<std::vector<std::string>>& commands,
                               const std::vector<Step>& steps, const CompileJob& job,
                               BuildMonitor* monitor) const;

    CompilerOptions m_options;
    CompilerIdentity m_identity;
};

}  // namespace opweave
