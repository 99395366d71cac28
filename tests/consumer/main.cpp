// A consumer of the installed opweave C++ package, with no Python involved.
//
// Usage: consumer <cache root>
//
// Compiles a trivial shared library through opweave::build_module into the
// cache at <cache root>, checks that ModuleCache::lookup finds the same entry,
// loads the library with dlopen, calls its function, and prints
// "answer=<n> outcome=<built|hit|built_by_other>". Exits 0 on success and
// non-zero, with a message on stderr, otherwise.
#include <dlfcn.h>

#include <exception>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <string_view>

#include "opweave/compiler.hpp"
#include "opweave/errors.hpp"
#include "opweave/module_builder.hpp"
#include "opweave/module_cache.hpp"

namespace {

constexpr std::string_view k_source =
    "extern \"C\" __attribute__((visibility(\"default\"))) int opweave_consumer_answer() {\n"
    "    return 42;\n"
    "}\n";

constexpr std::string_view k_extra = "consumer";

const char* outcome_name(opweave::Outcome outcome) {
    switch (outcome) {
        case opweave::Outcome::hit:
            return "hit";
        case opweave::Outcome::built:
            return "built";
        case opweave::Outcome::built_by_other:
            return "built_by_other";
    }
    return "unknown";
}

int run(const std::filesystem::path& root) {
    opweave::CacheOptions options;
    options.root = root;
    opweave::ModuleCache cache(options);
    opweave::SystemCompiler compiler;
    const opweave::CompileJob job;

    const opweave::BuiltModule module =
        opweave::build_module(cache, k_source, compiler, job, k_extra);

    const std::string key = opweave::module_key(k_source, compiler, job, k_extra);
    const std::optional<opweave::Entry> found = cache.lookup(key);
    if (!found) {
        std::cerr << "consumer: lookup(" << key << ") found nothing after build_module\n";
        return 1;
    }
    if (std::filesystem::weakly_canonical(found->dir) !=
        std::filesystem::weakly_canonical(module.dir)) {
        std::cerr << "consumer: lookup returned " << found->dir << " but build_module returned "
                  << module.dir << "\n";
        return 1;
    }

    void* handle = dlopen(module.library.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
        const char* error = dlerror();
        std::cerr << "consumer: dlopen(" << module.library
                  << ") failed: " << (error != nullptr ? error : "unknown error") << "\n";
        return 1;
    }
    dlerror();  // clear any stale error before dlsym
    void* symbol = dlsym(handle, "opweave_consumer_answer");
    if (symbol == nullptr) {
        const char* error = dlerror();
        std::cerr << "consumer: dlsym(opweave_consumer_answer) failed: "
                  << (error != nullptr ? error : "symbol is null") << "\n";
        dlclose(handle);
        return 1;
    }
    using AnswerFn = int (*)();
    const int answer = reinterpret_cast<AnswerFn>(symbol)();
    dlclose(handle);

    std::cout << "answer=" << answer << " outcome=" << outcome_name(module.outcome) << "\n";
    if (answer != 42) {
        std::cerr << "consumer: expected 42, got " << answer << "\n";
        return 1;
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::cerr << "usage: " << (argc > 0 ? argv[0] : "consumer") << " <cache root>\n";
        return 2;
    }
    try {
        return run(argv[1]);
    } catch (const opweave::CompileError& error) {
        std::cerr << "consumer: opweave::CompileError: " << error.what() << "\n"
                  << error.diagnostics() << "\n";
    } catch (const opweave::Error& error) {
        std::cerr << "consumer: opweave::Error: " << error.what() << "\n";
    } catch (const std::exception& error) {
        std::cerr << "consumer: " << error.what() << "\n";
    }
    return 1;
}
