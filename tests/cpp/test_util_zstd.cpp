// Tests of Zstandard through dlopen (util/zstd.hpp): round trips, and
// frames that are damaged, truncated, or larger than the caller allows.
// The suite needs libzstd.so.1 (every Debian and Ubuntu system has it):
// precompiled preludes are kept compressed where it loads.
#include <string>

#include "check.hpp"
#include "util/zstd.hpp"

using namespace opweave;

OPWEAVE_TEST(libzstd_is_loaded) {
    CHECK(util::zstd_available());
}

OPWEAVE_TEST(round_trip_keeps_every_byte) {
    std::string data;
    for (int i = 0; i < 200000; ++i) {
        data += static_cast<char>((i * 7919) % 251);
    }
    data += std::string(100000, '\0');
    const std::string frame = util::zstd_compress(data, 3).value();
    CHECK(frame.size() < data.size());
    CHECK_EQ(util::zstd_decompress(frame, data.size()).value(), data);
    CHECK_EQ(util::zstd_decompress(util::zstd_compress("", 3).value(), 0).value(), std::string());
}

OPWEAVE_TEST(bad_frames_give_nothing) {
    const std::string data(50000, 'a');
    const std::string frame = util::zstd_compress(data, 3).value();
    CHECK(!util::zstd_decompress(frame, data.size() - 1));  // over the caller's limit
    CHECK(!util::zstd_decompress(frame.substr(0, frame.size() - 1), data.size()));
    CHECK(!util::zstd_decompress(frame.substr(0, 3), data.size()));
    CHECK(!util::zstd_decompress("", data.size()));
    CHECK(!util::zstd_decompress(std::string(64, 'x'), data.size()));
    std::string flipped = frame;
    flipped[flipped.size() / 2] = static_cast<char>(flipped[flipped.size() / 2] ^ 0x5a);
    const auto damaged = util::zstd_decompress(flipped, data.size());
    CHECK(!damaged || *damaged != data);
}
