// opweave core: module cache keys (see cpp/cache/module_key.hpp and
// include/opweave/module_builder.hpp).
#include "cache/module_key.hpp"

#include <algorithm>
#include <filesystem>

#include "cache/build_support.hpp"
#include "opweave/hash.hpp"

namespace opweave {

namespace cache {

namespace {

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

CompileJob keyed_job(const CompileJob& absolute, const std::vector<std::string>& covered) {
    std::vector<std::string> normal;
    for (const std::string& cover : covered) {
        const std::filesystem::path path(cover);
        normal.push_back(
            (path.is_absolute() ? path : std::filesystem::absolute(path)).lexically_normal());
    }
    CompileJob keyed = absolute;
    for (std::string& dir : keyed.include_dirs) {
        if (std::find(normal.begin(), normal.end(), dir) != normal.end()) {
            dir = "<covered by extra>";
        }
    }
    return keyed;
}

std::string material_of(const Compiler& compiler, const CompileJob& keyed,
                        std::string_view extra) {
    std::string text = "layout: " + std::to_string(k_module_layout_version) + "\n";
    text += compiler.identity().key_material();
    text += describe_list("flags", keyed.flags);
    text += describe_list("include_dirs", keyed.include_dirs);
    text += describe_list("lib_dirs", keyed.lib_dirs);
    text += describe_list("libraries", keyed.libraries);
    text += "opt_level: " + std::to_string(static_cast<int>(keyed.opt_level)) + "\n";
    text += "debug_info: " + std::to_string(static_cast<int>(keyed.debug_info)) + "\n";
    text += "extra: ";
    text += extra;
    text += "\n";
    return text;
}

std::string key_of(std::string_view source, const Compiler& compiler, const CompileJob& keyed,
                   std::string_view extra, std::string_view kind,
                   const std::vector<std::string>& units) {
    KeyHasher hasher;
    hasher.add("layout", std::to_string(k_module_layout_version));
    hasher.add("compiler", compiler.identity().key_material());
    hasher.add(keyed.flags);
    hasher.add(keyed.include_dirs);
    hasher.add(keyed.lib_dirs);
    hasher.add(keyed.libraries);
    hasher.add(static_cast<std::int64_t>(keyed.opt_level));
    hasher.add(static_cast<std::int64_t>(keyed.debug_info));
    hasher.add("extra", extra);
    hasher.add("source", source);
    if (!kind.empty()) {
        hasher.add("kind", kind);
        hasher.add(units);
    }
    return hasher.hex_digest();
}

std::vector<std::string> unit_keys_of(const CompileJob& keyed, const Compiler& compiler,
                                      const ModuleRequest& request) {
    std::vector<std::string> keys;
    for (const TranslationUnit& unit : request.units) {
        keys.push_back(key_of(unit.source, compiler, keyed, request.extra, "unit"));
    }
    return keys;
}

std::string request_key_of(const CompileJob& keyed, const Compiler& compiler,
                           const ModuleRequest& request,
                           const std::vector<std::string>& unit_keys) {
    return request.units.empty()
               ? key_of(request.source, compiler, keyed, request.extra)
               : key_of(request.source, compiler, keyed, request.extra, "linked", unit_keys);
}

}  // namespace cache

std::string module_key_material(const Compiler& compiler, const CompileJob& job,
                                std::string_view extra) {
    return cache::material_of(compiler, cache::absolute_dirs(job), extra);
}

std::string module_key(std::string_view source, const Compiler& compiler, const CompileJob& job,
                       std::string_view extra) {
    return cache::key_of(source, compiler, cache::absolute_dirs(job), extra);
}

std::string unit_key(const TranslationUnit& unit, const Compiler& compiler,
                     const CompileJob& job, std::string_view extra) {
    return cache::key_of(unit.source, compiler, cache::absolute_dirs(job), extra, "unit");
}

std::string module_key(const Compiler& compiler, const ModuleRequest& request) {
    const CompileJob keyed =
        cache::keyed_job(cache::absolute_dirs(request.job), request.covered_header_dirs);
    return cache::request_key_of(keyed, compiler, request,
                                 cache::unit_keys_of(keyed, compiler, request));
}

}  // namespace opweave
