// opweave core: module cache keys (see cpp/builder/module_key.hpp and
// include/opweave/module_builder.hpp).
#include "builder/module_key.hpp"

#include <algorithm>
#include <filesystem>

#include "builder/build_support.hpp"
#include "opweave/hash.hpp"

namespace opweave {

namespace builder {

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

KeyedText keyed_text_of(std::string_view source, const Compiler& compiler,
                        const CompileJob& keyed, std::string_view extra, std::string_view kind,
                        const std::vector<std::string>& units) {
    KeyHasher hasher = builder::entry_key_hasher("module");
    builder::add_compile_fields(hasher, compiler, keyed, KeyedLinks::yes);
    hasher.add("extra", extra);
    hasher.add("source", source);
    if (!kind.empty()) {
        hasher.add("kind", kind);
        hasher.add("units", units);
    }
    return hasher.finish();
}

std::vector<KeyedText> unit_keys_of(const CompileJob& keyed, const Compiler& compiler,
                                    const ModuleRequest& request) {
    std::vector<KeyedText> keys;
    for (const TranslationUnit& unit : request.units) {
        keys.push_back(keyed_text_of(unit.source, compiler, keyed, request.extra, "unit"));
    }
    return keys;
}

KeyedText request_key_of(const CompileJob& keyed, const Compiler& compiler,
                         const ModuleRequest& request, const std::vector<KeyedText>& units) {
    if (request.units.empty()) {
        return keyed_text_of(request.source, compiler, keyed, request.extra);
    }
    std::vector<std::string> unit_keys;
    for (const KeyedText& unit : units) {
        unit_keys.push_back(unit.key);
    }
    return keyed_text_of(request.source, compiler, keyed, request.extra, "linked", unit_keys);
}

}  // namespace builder

KeyedText module_key_text(std::string_view source, const Compiler& compiler,
                          const CompileJob& job, std::string_view extra) {
    return builder::keyed_text_of(source, compiler, builder::absolute_dirs(job), extra);
}

std::string module_key(std::string_view source, const Compiler& compiler, const CompileJob& job,
                       std::string_view extra) {
    return module_key_text(source, compiler, job, extra).key;
}

std::string unit_key(const TranslationUnit& unit, const Compiler& compiler,
                     const CompileJob& job, std::string_view extra) {
    const CompileJob keyed = builder::absolute_dirs(job);
    return builder::keyed_text_of(unit.source, compiler, keyed, extra, "unit").key;
}

std::vector<std::string> unit_keys(const Compiler& compiler, const ModuleRequest& request) {
    const CompileJob keyed =
        builder::keyed_job(builder::absolute_dirs(request.job), request.covered_header_dirs);
    std::vector<std::string> keys;
    for (KeyedText& unit : builder::unit_keys_of(keyed, compiler, request)) {
        keys.push_back(std::move(unit.key));
    }
    return keys;
}

std::string module_key(const Compiler& compiler, const ModuleRequest& request) {
    const CompileJob keyed =
        builder::keyed_job(builder::absolute_dirs(request.job), request.covered_header_dirs);
    return builder::request_key_of(keyed, compiler, request,
                                 builder::unit_keys_of(keyed, compiler, request))
        .key;
}

}  // namespace opweave
