// opweave core (internal): Zstandard through dlopen (see zstd.hpp).
//
// The prototypes are libzstd's stable API (zstd.h, "stable API" section,
// unchanged since v1.0); they are declared here as function pointer types,
// so no header of the library is needed.
#include "util/zstd.hpp"

#include <dlfcn.h>

namespace opweave::util {

namespace {

using CompressFn = std::size_t (*)(void*, std::size_t, const void*, std::size_t, int);
using DecompressFn = std::size_t (*)(void*, std::size_t, const void*, std::size_t);
using BoundFn = std::size_t (*)(std::size_t);
using IsErrorFn = unsigned (*)(std::size_t);
using ContentSizeFn = unsigned long long (*)(const void*, std::size_t);

// ZSTD_CONTENTSIZE_UNKNOWN and ZSTD_CONTENTSIZE_ERROR are the two largest
// values; any real content size is below both.
constexpr unsigned long long k_not_a_size = 0ULL - 2;

struct Library {
    CompressFn compress = nullptr;
    DecompressFn decompress = nullptr;
    BoundFn bound = nullptr;
    IsErrorFn is_error = nullptr;
    ContentSizeFn content_size = nullptr;

    bool loaded() const noexcept {
        return compress && decompress && bound && is_error && content_size;
    }
};

template <typename Fn>
Fn symbol(void* handle, const char* name) {
    return reinterpret_cast<Fn>(::dlsym(handle, name));
}

// Loaded once; the handle is kept for the life of the process.
const Library& library() {
    static const Library loaded = [] {
        Library found;
        void* handle = ::dlopen("libzstd.so.1", RTLD_NOW | RTLD_LOCAL);
        if (handle == nullptr) {
            return found;
        }
        found.compress = symbol<CompressFn>(handle, "ZSTD_compress");
        found.decompress = symbol<DecompressFn>(handle, "ZSTD_decompress");
        found.bound = symbol<BoundFn>(handle, "ZSTD_compressBound");
        found.is_error = symbol<IsErrorFn>(handle, "ZSTD_isError");
        found.content_size = symbol<ContentSizeFn>(handle, "ZSTD_getFrameContentSize");
        return found;
    }();
    return loaded;
}

}  // namespace

bool zstd_available() {
    return library().loaded();
}

std::optional<std::string> zstd_compress(std::string_view data, int level) {
    const Library& zstd = library();
    if (!zstd.loaded()) {
        return std::nullopt;
    }
    std::string frame(zstd.bound(data.size()), '\0');
    const std::size_t written =
        zstd.compress(frame.data(), frame.size(), data.data(), data.size(), level);
    if (zstd.is_error(written) != 0) {
        return std::nullopt;
    }
    frame.resize(written);
    return frame;
}

std::optional<std::string> zstd_decompress(std::string_view frame, std::size_t max_bytes) {
    const Library& zstd = library();
    if (!zstd.loaded()) {
        return std::nullopt;
    }
    const unsigned long long size = zstd.content_size(frame.data(), frame.size());
    if (size >= k_not_a_size || size > max_bytes) {
        return std::nullopt;
    }
    std::string data(static_cast<std::size_t>(size), '\0');
    const std::size_t written =
        zstd.decompress(data.data(), data.size(), frame.data(), frame.size());
    if (zstd.is_error(written) != 0 || written != data.size()) {
        return std::nullopt;
    }
    return data;
}

}  // namespace opweave::util
