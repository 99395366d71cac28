// opweave core: compiler versions kept as cache records (see
// compiler_version_records in opweave/module_builder.hpp).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <optional>
#include <string>

#include "cache/file_digest.hpp"
#include "opweave/hash.hpp"
#include "opweave/module_builder.hpp"
#include "opweave/module_cache.hpp"
#include "util/fd.hpp"

namespace opweave {
namespace {

constexpr const char* k_record_kind = "compilers";
// Bump when what a name covers changes.
constexpr const char* k_name_recipe = "opweave compiler version 1";
// A `--version` output is a few lines; a record longer than this, or with a
// NUL, is not one (and the compiler is asked again).
constexpr std::size_t k_max_version_bytes = 64 * 1024;

// The record name of the compiler file `file` as it is now, or nothing when
// it cannot be read.
std::optional<std::string> record_name(const std::filesystem::path& file) {
    const util::Fd fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    struct stat st {};
    if (!fd || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
        return std::nullopt;
    }
    KeyHasher hasher;
    hasher.add("recipe", k_name_recipe);
    hasher.add("file", file.string());
    hasher.add("device", static_cast<std::int64_t>(st.st_dev));
    hasher.add("inode", static_cast<std::int64_t>(st.st_ino));
    hasher.add("size", static_cast<std::int64_t>(st.st_size));
    hasher.add("mtime_ns", cache::ns_of(st.st_mtim));
    hasher.add("ctime_ns", cache::ns_of(st.st_ctim));
    return hasher.hex_digest();
}

bool is_version(const std::string& text) {
    return !text.empty() && text.size() <= k_max_version_bytes &&
           text.find('\0') == std::string::npos;
}

}  // namespace

VersionMemo compiler_version_records(ModuleCache& cache) {
    VersionMemo memo;
    memo.find = [&cache](const std::filesystem::path& file) -> std::optional<std::string> {
        const std::optional<std::string> name = record_name(file);
        std::optional<std::string> found =
            name ? cache.read_record(k_record_kind, *name) : std::nullopt;
        return found && is_version(*found) ? found : std::nullopt;
    };
    memo.keep = [&cache](const std::filesystem::path& file, const std::string& version) {
        const std::optional<std::string> name = record_name(file);
        if (name && is_version(version)) {
            static_cast<void>(cache.write_record(k_record_kind, *name, version));
        }
    };
    return memo;
}

}  // namespace opweave
