// opweave core: SystemCompiler, a real g++ or clang++ run with posix_spawnp
// (see include/opweave/compiler.hpp).
//
// Without a launcher a job is one command that compiles and links the shared
// library. With a launcher (ccache, sccache) it is two: the launcher compiles
// to an object file, then the compiler links it without the launcher, because
// those tools do not cache a one-step `-shared` build and only get in the way
// of a link.
//
// Unkeyed flags go to the compile step only, right after the job's flags. A
// precompiled header is one command without the launcher: `-x c++-header`
// then the header, with the compile step's flags and no link inputs.
//
// A job's debug_dir is recorded as its working directory's name without
// the directory's path ever appearing on the command line: ccache leaves
// -ffile-prefix-map out of its hash, but sccache hashes every argument, and
// the path differs with each build. So the commands run with
// PWD=/proc/self/cwd, which GCC and clang (and ccache) take as the name of
// the working directory, since it is that directory, and
// -ffile-prefix-map=/proc/self/cwd=<debug_dir> renames it in debug
// information and __FILE__. ccache hashes the working directory of a -g
// compile after applying that map (hash_dir), so it hashes the debug_dir.
// sccache runs the compiler without PWD (its client drops PWD from the
// environment it forwards): clang gets -fdebug-compilation-dir as well,
// which names the directory directly. GCC has no such option; without PWD
// it names the working directory's real path in its debug information and,
// with -g, in its preprocessed output, which sccache hashes, so no other
// root would hit. So under sccache, GCC is run through a wrapper script
// (CompilerIdentity::launcher_wrapper, which the cache writes into
// <root>/v2/tools/ and names as CompileJob::launched_compiler) that sets
// PWD=/proc/self/cwd and execs the compiler: sccache passes the environment
// on to its "compiler" otherwise intact. The script names only the
// compiler's absolute path, version and digest, so sccache, which hashes
// the compiler file's content (not its path), sees the same compiler in
// every root and on every machine with the same compiler at that path. (sccache's SCCACHE_BASEDIRS
// would make the hash ignore the root, but the object served would still
// name the root that compiled it first.) Verified with ccache 4.7,
// sccache 0.16, g++ 12 and clang++ 14.
#include <fcntl.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "compiler/compiler_lookup.hpp"
#include "opweave/compiler.hpp"
#include "opweave/errors.hpp"
#include "opweave/hash.hpp"
#include "util/fd.hpp"
#include "util/process.hpp"

namespace opweave {

namespace {

// `--version` is instant for a healthy compiler; a generous bound still
// protects against one that hangs (a stuck network mount, a wedged wrapper).
constexpr double k_version_timeout_seconds = 30.0;

using Step = SystemCompiler::Step;

// A path that names, to whoever opens it, its own working directory (Linux).
constexpr const char* k_own_working_dir = "/proc/self/cwd";

const char* opt_flag(OptLevel level) {
    switch (level) {
        case OptLevel::o0:
            return "-O0";
        case OptLevel::o1:
            return "-O1";
        case OptLevel::o2:
            return "-O2";
        case OptLevel::o3:
            return "-O3";
    }
    return "-O2";
}

std::string object_path(const CompileJob& job) {
    return job.output.string() + ".o";
}

// `path` as the command names it: relative to the job's working directory
// when it is below it (see CompileJob::working_dir), else as it is.
std::string named(const CompileJob& job, const std::filesystem::path& path) {
    if (!job.working_dir.empty() && path.parent_path() == job.working_dir) {
        return path.filename().string();
    }
    return path.string();
}

void append_code_generation_flags(std::vector<std::string>& command, const CompileJob& job) {
    command.emplace_back("-fPIC");
    command.emplace_back("-fvisibility=hidden");
    command.emplace_back(opt_flag(job.opt_level));
    if (job.debug_info == DebugInfo::yes) {
        command.emplace_back("-g");
    }
}

void append_flags(std::vector<std::string>& command, const CompileJob& job) {
    command.insert(command.end(), job.flags.begin(), job.flags.end());
}

bool has_debug_dir(const CompileJob& job) {
    return !job.debug_dir.empty() && !job.working_dir.empty();
}

bool is_clang(const CompilerIdentity& identity) {
    return identity.version.find("clang") != std::string::npos;
}

// `word` in single quotes, for a POSIX shell.
std::string single_quoted(const std::string& word) {
    std::string quoted = "'";
    for (const char c : word) {
        quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
    }
    return quoted + "'";
}

// The SHA-256 (hex) of the file at `path`; empty if it cannot be read.
std::string file_sha256(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    Sha256 hash;
    std::vector<char> buffer(1 << 16);
    while (in) {
        in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
        hash.update(buffer.data(), static_cast<std::size_t>(in.gcount()));
    }
    return in.eof() ? to_hex(hash.finish()) : std::string();
}

// The script GCC runs through under sccache (see the top of this file), or
// nothing. sccache hashes this file in place of the compiler, so it must not
// depend on where it is written, and it must change when the compiler does:
// it names the compiler's path, the first line of its version and the
// SHA-256 of its file (what sccache would have hashed).
std::string launcher_wrapper_of(const CompilerIdentity& identity) {
    if (identity.launcher.empty() || is_clang(identity) ||
        std::filesystem::path(identity.launcher.front()).filename() != "sccache") {
        return {};
    }
    const std::string version = identity.version.substr(0, identity.version.find('\n'));
    return "#!/bin/sh\n"
           "# Written by opweave: sccache does not pass PWD on to the compiler.\n"
           "# " + version + ", sha256 " + file_sha256(identity.path) + "\n"
           "PWD=" + std::string(k_own_working_dir) + "\n"
           "export PWD\n"
           "exec " + single_quoted(identity.path) + " \"$@\"\n";
}

// The flags that record job.debug_dir as the working directory (see the
// top of this file); the commands run with PWD=k_own_working_dir.
void append_debug_dir_flags(std::vector<std::string>& command, const CompileJob& job,
                            const CompilerIdentity& identity) {
    if (!has_debug_dir(job)) {
        return;
    }
    const std::string name = job.debug_dir.string();
    command.push_back("-ffile-prefix-map=" + std::string(k_own_working_dir) + "=" + name);
    if (is_clang(identity)) {
        command.push_back("-fdebug-compilation-dir=" + name);
    }
}

// The flags of a compile step: the job's flags, then its unkeyed flags,
// then the debug directory's and the dependency file's.
void append_compile_flags(std::vector<std::string>& command, const CompileJob& job,
                          const CompilerIdentity& identity) {
    append_flags(command, job);
    command.insert(command.end(), job.unkeyed_flags.begin(), job.unkeyed_flags.end());
    append_debug_dir_flags(command, job, identity);
    if (!job.depfile.empty()) {
        command.insert(command.end(), {"-MD", "-MF", named(job, job.depfile)});
    }
}

// Empty entries are dropped: a bare "-I" or "-L" would swallow the next word.
void append_prefixed(std::vector<std::string>& command, const char* prefix,
                     const std::vector<std::string>& values) {
    for (const std::string& value : values) {
        if (!value.empty()) {
            command.push_back(prefix + value);
        }
    }
}

void append_link_inputs(std::vector<std::string>& command, const CompileJob& job) {
    append_prefixed(command, "-L", job.lib_dirs);
    append_prefixed(command, "-l", job.libraries);
}

std::string format_seconds(double seconds) {
    std::ostringstream out;
    out << seconds;
    return out.str();
}

// "compiling /src/x.cpp" or "linking /out/x.so".
std::string activity(Step step, const CompileJob& job) {
    if (step == Step::link) {
        return "linking " + job.output.string();
    }
    return "compiling " + job.source.string();
}

// How a command failed, e.g. "failed with exit status 1".
std::string describe_failure(const util::ProcessResult& run, double timeout_seconds) {
    if (run.timed_out) {
        return "timed out after " + format_seconds(timeout_seconds) + " s";
    }
    if (run.term_signal != 0) {
        return "was killed by signal " + std::to_string(run.term_signal);
    }
    return "failed with exit status " + std::to_string(run.exit_status);
}

// The one-line summary of a failed command, e.g.
// "g++ failed with exit status 1 compiling /src/x.cpp".
std::string failure_summary(const std::string& program, Step step, const CompileJob& job,
                            const util::ProcessResult& run, double timeout_seconds) {
    return program + " " + describe_failure(run, timeout_seconds) + " " + activity(step, job);
}

// Removes the intermediate object file of a two-step build, whether the
// build succeeded or not; a failure to remove it is harmless.
class ObjectFileCleanup {
public:
    explicit ObjectFileCleanup(std::filesystem::path path) : m_path(std::move(path)) {}
    ~ObjectFileCleanup() {
        if (!m_path.empty()) {
            std::error_code ignored;
            std::filesystem::remove(m_path, ignored);
        }
    }
    ObjectFileCleanup(const ObjectFileCleanup&) = delete;
    ObjectFileCleanup& operator=(const ObjectFileCleanup&) = delete;

private:
    std::filesystem::path m_path;
};

// The file `path` names after symbolic links, when it is an ELF executable.
std::optional<std::filesystem::path> elf_file(const std::string& path) {
    std::error_code error;
    const std::filesystem::path file = std::filesystem::canonical(path, error);
    const util::Fd fd(error ? -1 : ::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    char magic[4] = {};
    if (!fd || ::read(fd.get(), magic, sizeof magic) != static_cast<ssize_t>(sizeof magic) ||
        std::string_view(magic, sizeof magic) != std::string_view("\x7f" "ELF", 4)) {
        return std::nullopt;
    }
    return file;
}

// The output of `<path> --version`; Error when it cannot be had.
std::string version_of(const std::string& path) {
    const std::vector<std::string> query = {path, "--version"};
    util::ProcessResult version;
    try {
        version = util::run_process(query, k_version_timeout_seconds);
    } catch (const Error& e) {
        throw Error("cannot query the C++ compiler version: " + std::string(e.what()));
    }
    if (!version.succeeded()) {
        throw Error("'" + path + " --version' " +
                    describe_failure(version, k_version_timeout_seconds) +
                    "; is it a working C++ compiler? Output:\n" + version.output);
    }
    return std::move(version.output);
}

}  // namespace

SystemCompiler::SystemCompiler(CompilerOptions options, const VersionMemo* memo)
    : m_options(std::move(options)) {
    compiler::CompilerCommand command =
        compiler::resolve_compiler_command(m_options.cxx);
    m_identity.path = command.compiler.string();

    // An explicit launcher option wins over one that came with $CXX.
    std::vector<std::string> configured = compiler::resolve_launcher(m_options.launcher);
    m_identity.launcher = configured.empty() ? std::move(command.launcher) : std::move(configured);

    const std::optional<std::filesystem::path> file =
        memo != nullptr ? elf_file(m_identity.path) : std::nullopt;
    std::optional<std::string> known = file && memo->find ? memo->find(*file) : std::nullopt;
    m_identity.version = known ? std::move(*known) : version_of(m_identity.path);
    if (file && !known && memo->keep) {
        memo->keep(*file, m_identity.version);
    }
    m_identity.launcher_wrapper = launcher_wrapper_of(m_identity);
}

std::vector<std::vector<std::string>> SystemCompiler::command_lines(const CompileJob& job) const {
    const std::string& cxx = m_identity.path;
    if (m_identity.launcher.empty()) {
        std::vector<std::string> command = {cxx, "-shared"};
        append_code_generation_flags(command, job);
        append_compile_flags(command, job, m_identity);
        append_prefixed(command, "-I", job.include_dirs);
        command.insert(command.end(), {"-o", named(job, job.output), named(job, job.source)});
        append_link_inputs(command, job);
        return {std::move(command)};
    }

    const std::filesystem::path object = object_path(job);
    CompileJob to_object = job;
    to_object.output = object;
    CompileJob to_library = job;
    return {object_command_line(to_object), link_command_line(to_library, {object})};
}

std::vector<std::string> SystemCompiler::object_command_line(const CompileJob& job) const {
    std::vector<std::string> command = m_identity.launcher;
    const bool wrapped = !command.empty() && !job.launched_compiler.empty();
    command.insert(command.end(),
                   {wrapped ? job.launched_compiler.string() : m_identity.path, "-c"});
    append_code_generation_flags(command, job);
    append_compile_flags(command, job, m_identity);
    append_prefixed(command, "-I", job.include_dirs);
    command.insert(command.end(), {"-o", named(job, job.output), named(job, job.source)});
    return command;
}

std::vector<std::string> SystemCompiler::link_command_line(
    const CompileJob& job, const std::vector<std::filesystem::path>& objects) const {
    std::vector<std::string> command = {m_identity.path, "-shared", "-fPIC"};
    append_flags(command, job);
    command.insert(command.end(), {"-o", named(job, job.output)});
    for (const std::filesystem::path& object : objects) {
        command.push_back(named(job, object));
    }
    append_link_inputs(command, job);
    return command;
}

std::vector<std::string> SystemCompiler::header_command_line(const CompileJob& job) const {
    std::vector<std::string> command = {m_identity.path};
    append_code_generation_flags(command, job);
    append_compile_flags(command, job, m_identity);
    append_prefixed(command, "-I", job.include_dirs);
    command.insert(command.end(),
                   {"-o", named(job, job.output), "-x", "c++-header", named(job, job.source)});
    return command;
}

CompileResult SystemCompiler::compile(const CompileJob& job, BuildMonitor* monitor) const {
    const std::vector<std::vector<std::string>> commands = command_lines(job);
    const ObjectFileCleanup cleanup(commands.size() == 2 ? std::filesystem::path(object_path(job))
                                                         : std::filesystem::path());
    if (commands.size() == 1) {
        return run_commands(commands, {Step::compile_and_link}, job, monitor);
    }
    return run_commands(commands, {Step::compile_object, Step::link}, job, monitor);
}

CompileResult SystemCompiler::compile_header(const CompileJob& job, BuildMonitor* monitor) const {
    return run_commands({header_command_line(job)}, {Step::compile_and_link}, job, monitor);
}

CompileResult SystemCompiler::compile_object(const CompileJob& job, BuildMonitor* monitor) const {
    return run_commands({object_command_line(job)}, {Step::compile_object}, job, monitor);
}

CompileResult SystemCompiler::link(const CompileJob& job,
                                   const std::vector<std::filesystem::path>& objects,
                                   BuildMonitor* monitor) const {
    return run_commands({link_command_line(job, objects)}, {Step::link}, job, monitor);
}

// Runs the commands (one compile and link, a header, an object or a link;
// or, with a launcher, compile an object then link), stopping at the first
// failure; steps[i] says what commands[i] does.
CompileResult SystemCompiler::run_commands(const std::vector<std::vector<std::string>>& commands,
                                           const std::vector<Step>& steps, const CompileJob& job,
                                           BuildMonitor* monitor) const {
    util::ProcessOptions options;
    options.timeout_seconds = m_options.timeout_seconds;
    options.monitor = monitor;
    options.die_with_parent = true;
    options.working_dir = job.working_dir.string();
    if (has_debug_dir(job)) {
        options.environment.push_back("PWD=" + std::string(k_own_working_dir));
    }
    CompileResult result;
    result.working_dir = job.working_dir;
    const std::string compiler_name = std::filesystem::path(m_identity.path).filename().string();

    for (std::size_t index = 0; index < commands.size(); ++index) {
        const std::vector<std::string>& command = commands[index];
        const Step step = steps[index];
        std::string program = compiler_name;
        if (step == Step::compile_object && !m_identity.launcher.empty()) {
            const std::filesystem::path launcher(m_identity.launcher.front());
            program += " (via " + launcher.filename().string() + ")";
        }

        util::ProcessResult run;
        try {
            run = util::run_process(command, options);
        } catch (const Interrupted&) {
            throw;
        } catch (const Error& e) {
            throw CompileError("could not start " + program + " " + activity(step, job) + ": " +
                                   e.what(),
                               command, result.diagnostics, job.source, -1);
        }
        result.commands.push_back(command);
        result.diagnostics += run.output;
        result.seconds += run.seconds;
        if (!run.succeeded()) {
            throw CompileError(failure_summary(program, step, job, run, m_options.timeout_seconds),
                               command, result.diagnostics, job.source,
                               run.timed_out ? -1 : run.exit_status);
        }
    }
    return result;
}

}  // namespace opweave
