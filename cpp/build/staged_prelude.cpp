// opweave core (internal): staged preludes (see staged_prelude.hpp).
#include "build/staged_prelude.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "cache/file_digest.hpp"
#include "opweave/precompiled_header.hpp"
#include "util/fd.hpp"
#include "util/fs.hpp"

namespace opweave::cache {

namespace {

constexpr const char* k_staged_names[] = {k_prelude_header_name, k_prelude_gch_name};

// Puts the file `from` at `to`: a hard link, or a copy where linking is
// refused (another filesystem, or fs.protected_hardlinks on a file of
// another user). Neither follows a symlink or blocks on a FIFO at `from`.
bool link_or_copy(const std::filesystem::path& from, const std::filesystem::path& to) {
    if (::linkat(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), 0) == 0) {
        return true;
    }
    const util::Fd fd(::open(from.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
    struct stat st {};
    if (!fd || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
        return false;
    }
    const std::optional<std::string> bytes = util::read_all(fd.get());
    if (!bytes) {
        return false;
    }
    util::write_file_atomic(to, *bytes);
    return true;
}

// Whether `path` is a regular file (opened without following a symlink or
// blocking on a FIFO) of `size` bytes with the SHA-256 `sha256`.
bool has_content(const std::filesystem::path& path, std::uint64_t size, const std::string& sha256) {
    const util::Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
    struct stat st {};
    if (!fd || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) ||
        static_cast<std::uint64_t>(st.st_size) != size) {
        return false;
    }
    return file_sha256(fd.get(), st, Memo::use) == sha256;
}

}  // namespace

std::optional<StagedPrelude> StagedPrelude::stage(const std::filesystem::path& entry_dir,
                                                  const std::filesystem::path& into) {
    StagedPrelude staged(entry_dir, into);
    for (const char* name : k_staged_names) {
        staged.m_names.emplace_back(name);  // removed by the destructor, from now on
        if (!link_or_copy(entry_dir / name, into / name)) {
            return std::nullopt;
        }
    }
    return std::optional<StagedPrelude>(std::move(staged));
}

StagedPrelude::StagedPrelude(StagedPrelude&& other) noexcept
    : m_from(std::move(other.m_from)),
      m_dir(std::move(other.m_dir)),
      m_names(std::move(other.m_names)),
      m_headers(std::move(other.m_headers)) {
    other.m_dir.clear();
}

StagedPrelude::~StagedPrelude() {
    if (m_dir.empty()) {
        return;
    }
    for (const std::string& name : m_names) {
        ::unlink((m_dir / name).c_str());
    }
}

bool StagedPrelude::verify(const Entry& verified) {
    for (const std::string& name : m_names) {
        bool recorded = false;
        for (const EntryFile& file : verified.files) {
            recorded = recorded ||
                       (file.name == name && has_content(m_dir / name, file.size, file.sha256));
        }
        if (!recorded) {
            return false;
        }
    }
    m_headers = verified.headers;
    return !m_names.empty();
}

std::vector<std::string> StagedPrelude::include_flags() const {
    return prelude_include_flags(m_dir);
}

void StagedPrelude::cite_entry(CompileResult& result) const {
    const std::string staged = (m_dir / k_prelude_header_name).string();
    for (std::vector<std::string>& command : result.commands) {
        for (std::string& word : command) {
            if (word == staged) {
                word = (m_from / k_prelude_header_name).string();
            }
        }
    }
}

}  // namespace opweave::cache
