// opweave core (internal): the headers a build read, and whether they changed.
//
// Like ccache's direct mode: after a compile, the compiler's dependency file
// (-MD -MF) names every header it read; each one is recorded with its size,
// times and content hash (HeaderRecord). A lookup stats each header and
// compares; only when the stat data differs is the header hashed, and the
// entry is stale if the content differs.
//
// The racy case (git's "racily clean" index entry): a header modified during
// the compile, or in the same filesystem timestamp tick as its start, may
// have been read by the compiler in one version and hashed here in another.
// Such a header is recorded without a hash, so the next lookup builds again;
// a header modified after that has newer times than recorded and is hashed.
// Times further in the future than the recording itself (clock skew, an
// unpacked archive) say nothing about the compile and are not racy.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "cache/file_digest.hpp"
#include "opweave/module_cache.hpp"

namespace opweave::cache {

// The prerequisites of the rules in a make-style dependency file, as g++ and
// clang++ write it with -MD: everything after each rule's colon, with line
// continuations joined and "\ ", "\#" and "$$" unescaped.
std::vector<std::string> parse_depfile(std::string_view text);

// Which dependencies to record.
struct HeaderFilter {
    // Relative dependencies are taken from here (the compiler's working
    // directory).
    std::filesystem::path working_dir;
    // Headers below these directories are not recorded: the key covers them
    // already (Python's and NumPy's headers, by ABI and version) or they
    // belong to the cache (a precompiled prelude, verified as an entry).
    std::vector<std::filesystem::path> skip_dirs;
    // The compiled source itself.
    std::filesystem::path source;
};

// Records the headers among `dependencies` that `filter` keeps, for a
// compile that started at `compile_start_ns` (filesystem_now_ns(), in
// file_digest.hpp). A header
// that cannot be read is recorded without a hash (so the entry is rebuilt
// next time, when it will have settled). Duplicates are recorded once.
std::vector<HeaderRecord> record_headers(const std::vector<std::string>& dependencies,
                                         const HeaderFilter& filter,
                                         std::int64_t compile_start_ns);

// Empty if every header still has the recorded content; otherwise why not,
// e.g. "header /src/ops/x.h changed" (headers_changed(), declared in
// opweave/module_cache.hpp). With Memo::bypass, every header is stat'ed and,
// if its stat differs, hashed again; with Memo::use, a header watched since
// it was last found as recorded is not (header_watch.hpp).
std::string check_headers(const std::vector<HeaderRecord>& headers, Memo memo);

// `headers` plus those of `more` whose path it lacks.
void merge_headers(std::vector<HeaderRecord>& headers, const std::vector<HeaderRecord>& more);

}  // namespace opweave::cache
