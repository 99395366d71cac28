// opweave core (internal): what a module's cache key covers, and the key.
//
// A key is a SHA-256 over typed, length-prefixed fields: the layout
// version, the compiler's identity (its path and version; not the launcher,
// which does not change the binary), the job's flags, directories (made
// absolute; those whose headers the caller material covers are named by a
// placeholder, so that venvs at other paths share keys), libraries,
// optimisation and debug settings, the caller material, and the source
// (for a module linked from units: also the units' keys).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "opweave/compiler.hpp"
#include "opweave/module_builder.hpp"

namespace opweave::builder {

// The job as its keys see it (see above); `absolute` has its directories
// made absolute already.
CompileJob keyed_job(const CompileJob& absolute, const std::vector<std::string>& covered);

// The key of `source` and its text, in one pass: the one recipe of module
// and unit keys. `kind` is empty for a module of one source, "unit" for a
// unit and "linked" for a module linked from units (`units`: their keys).
KeyedText keyed_text_of(std::string_view source, const Compiler& compiler,
                        const CompileJob& keyed, std::string_view extra,
                        std::string_view kind = {}, const std::vector<std::string>& units = {});

// The keys (and texts) of the request's units, in order.
std::vector<KeyedText> unit_keys_of(const CompileJob& keyed, const Compiler& compiler,
                                    const ModuleRequest& request);

// The key (and text) of the module of `request`, whose units have `units`.
KeyedText request_key_of(const CompileJob& keyed, const Compiler& compiler,
                         const ModuleRequest& request, const std::vector<KeyedText>& units);

}  // namespace opweave::builder
