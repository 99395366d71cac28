// opweave core: build_module (see include/opweave/module_builder.hpp).
#include "opweave/module_builder.hpp"

#include "opweave/errors.hpp"
#include "opweave/hash.hpp"
#include "util/fs.hpp"

namespace opweave {

namespace {

constexpr const char* k_source_name = "module.cpp";
constexpr const char* k_library_name = "module.so";

std::string join_command(const std::vector<std::string>& command) {
    std::string text;
    for (const std::string& word : command) {
        if (!text.empty()) {
            text += ' ';
        }
        text += word;
    }
    return text;
}

// Replaces every occurrence of `from` in `text` with `to`.
std::string replace_all(std::string text, const std::string& from, const std::string& to) {
    if (from.empty()) {
        return text;
    }
    for (std::size_t at = text.find(from); at != std::string::npos;
         at = text.find(from, at + to.size())) {
        text.replace(at, from.size(), to);
    }
    return text;
}

// Compiles `staged`. Unkeyed flags may change how fast a module compiles,
// never what it compiles to, so a compile that exits with an error while
// using them is run again without them: a prelude that is damaged, or that a
// concurrent `cache clear` removed after it was found, must not fail a build.
// A genuine error in the source fails the second compile too, and that one is
// reported. A timeout or a signal is not retried (it would only double the
// wait).
CompileResult compile_with_fallback(const Compiler& compiler, CompileJob staged) {
    if (staged.unkeyed_flags.empty()) {
        return compiler.compile(staged);
    }
    try {
        return compiler.compile(staged);
    } catch (const CompileError& error) {
        if (error.exit_status() <= 0) {
            throw;
        }
    }
    staged.unkeyed_flags.clear();
    return compiler.compile(staged);
}

std::string describe_list(std::string_view name, const std::vector<std::string>& items) {
    std::string text(name);
    text += ':';
    for (const std::string& item : items) {
        text += ' ';
        text += item;
    }
    return text + "\n";
}

}  // namespace

std::string module_key_material(const Compiler& compiler, const CompileJob& job,
                                std::string_view extra) {
    std::string text = "layout: " + std::to_string(k_module_layout_version) + "\n";
    text += compiler.identity().key_material();
    text += describe_list("flags", job.flags);
    text += describe_list("include_dirs", job.include_dirs);
    text += describe_list("lib_dirs", job.lib_dirs);
    text += describe_list("libraries", job.libraries);
    text += "opt_level: " + std::to_string(static_cast<int>(job.opt_level)) + "\n";
    text += "debug_info: " + std::to_string(static_cast<int>(job.debug_info)) + "\n";
    text += "extra: ";
    text += extra;
    text += "\n";
    return text;
}

std::string module_key(std::string_view source, const Compiler& compiler, const CompileJob& job,
                       std::string_view extra) {
    KeyHasher hasher;
    hasher.add("layout", std::to_string(k_module_layout_version));
    hasher.add("compiler", compiler.identity().key_material());
    hasher.add(job.flags);
    hasher.add(job.include_dirs);
    hasher.add(job.lib_dirs);
    hasher.add(job.libraries);
    hasher.add(static_cast<std::int64_t>(job.opt_level));
    hasher.add(static_cast<std::int64_t>(job.debug_info));
    hasher.add("extra", extra);
    hasher.add("source", source);
    return hasher.hex_digest();
}

BuiltModule build_module(ModuleCache& cache, std::string_view source, const Compiler& compiler,
                         const CompileJob& job, std::string_view extra) {
    const std::string key = module_key(source, compiler, job, extra);
    const std::string entry = cache.entry_dir(key).string();
    const BuildFn build = [&](const std::filesystem::path& staging) {
        CompileJob staged = job;
        staged.source = staging / k_source_name;
        staged.output = staging / k_library_name;
        util::write_file_atomic(staged.source, source);
        try {
            const CompileResult result = compile_with_fallback(compiler, staged);
            std::string command;
            for (const auto& words : result.commands) {
                command += (command.empty() ? "" : "\n") + join_command(words);
            }
            // Record the command as it reads for the published entry.
            command = replace_all(command, staging.string(), entry);
            return BuildRecord{module_key_material(compiler, job, extra), command, result.seconds};
        } catch (const CompileError& error) {
            // The staging directory dies with this exception; keep the source
            // where the user can open it.
            // Point the message and diagnostics at the kept copy.
            const std::filesystem::path kept = cache.keep_failed_source(key, source);
            const std::string staged_source = staged.source.string();
            throw CompileError(replace_all(error.what(), staged_source, kept.string()),
                               error.command(),
                               replace_all(error.diagnostics(), staged_source, kept.string()),
                               kept, error.exit_status());
        }
    };
    const CacheResult result = cache.get_or_build(key, build);
    return {result.dir, result.dir / k_library_name, result.dir / k_source_name, result.outcome};
}

}  // namespace opweave
