// opweave core: names that several objects of a module's link define.
//
// Support code that several translation units of a module hold (the same
// piece of text, compiled in each) defines its names in each of them; one
// translation unit would have held it once. Those copies, and only those,
// are merged: every copy but the first is made weak (objcopy
// --weaken-symbol), as the copies of an inline function are, so the link
// keeps one. A name defined by two different texts, or that no piece
// defines, is an error naming the objects that define it: one unit would
// have failed to compile ("redefinition"), and a link that kept one of them
// would run the other's callers on the wrong code. There is no
// -z muldefs.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "opweave/build_monitor.hpp"

namespace opweave::builder {

// One object of a link: the file, the source it was compiled from and what
// it is (shown in errors).
struct LinkedObject {
    std::filesystem::path path;
    const std::string* source = nullptr;
    std::string label;
};

// The names a linker reports as defined more than once: GNU ld ("multiple
// definition of `f()'"), gold ("... of 'f()'") and lld ("duplicate symbol:
// f()"), as it shows them (demangled).
std::vector<std::string> duplicate_symbols(const std::string& diagnostics);

// Whether `piece` defines the identifier `word` at its top level: a
// function with a body, or a variable that is not `extern` (a declaration
// only names it).
bool defines(const std::string& piece, const std::string& word);

// After a link of `objects` failed with `diagnostics`: false when it
// reports no name defined twice (the caller rethrows). Otherwise, for each
// such name, the objects that define it (as `nm` lists them, by the
// compiler at `compiler`'s -print-prog-name) must all hold one piece of
// `shared_code`, the only one that names it, and that piece must define it:
// then every copy but the first is made weak and true is returned, for the
// caller to link again. Else a CompileError names the name and the objects
// that define it.
bool weaken_shared_duplicates(const std::string& diagnostics,
                              const std::vector<LinkedObject>& objects,
                              const std::vector<std::string>& shared_code,
                              const std::string& compiler, BuildMonitor* monitor);

}  // namespace opweave::builder
