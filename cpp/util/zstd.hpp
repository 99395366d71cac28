// opweave core (internal): Zstandard compression, when the system has it.
//
// libzstd.so.1 is loaded at run time (dlopen), the first time it is asked
// for, so that building opweave needs no Zstandard headers and a system
// without the library still works: available() is then false, and callers
// keep their bytes as they are. Only the stable part of libzstd's API is
// used (single-shot compress and decompress of one frame).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace opweave::util {

// Whether libzstd could be loaded (once per process).
bool zstd_available();

// `data` as one Zstandard frame at `level` (1..19), which records its
// content size; nothing when the library is missing or fails.
std::optional<std::string> zstd_compress(std::string_view data, int level);

// The content of the one frame `frame`, if it is whole, well formed, records
// its content size and that size is at most `max_bytes`; nothing otherwise
// (or when the library is missing).
std::optional<std::string> zstd_decompress(std::string_view frame, std::size_t max_bytes);

}  // namespace opweave::util
