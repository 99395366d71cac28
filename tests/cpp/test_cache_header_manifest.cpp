// Tests of the header manifest (cache/header_manifest.hpp): what is not a
// regular file at a header's path never blocks a lookup or a record.
#include <sys/stat.h>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "cache/header_manifest.hpp"
#include "check.hpp"
#include "temp_dir.hpp"

using namespace opweave;
using opweave_test::TempDir;

OPWEAVE_TEST(a_fifo_at_a_header_path_is_not_read_and_does_not_block) {
    TempDir dir;
    const std::filesystem::path fifo = dir / "header.h";
    CHECK_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    // A lookup: the recorded header differs in its stat data, so it would be
    // opened and hashed; a FIFO with no writer would block a plain open.
    HeaderRecord recorded;
    recorded.path = fifo.string();
    recorded.size = 12;
    recorded.sha256 = std::string(64, 'a');
    CHECK_EQ(headers_changed({recorded}), "header " + fifo.string() + " cannot be read");
    // A record: no hash, so the entry is built again next time.
    cache::HeaderFilter filter;
    filter.working_dir = dir.path();
    filter.source = dir / "module.cpp";
    const std::vector<HeaderRecord> records = cache::record_headers({fifo.string()}, filter, 0);
    CHECK_EQ(records.size(), 1u);
    CHECK(records.at(0).sha256.empty());
}

OPWEAVE_TEST(a_regular_header_is_recorded_and_checked) {
    TempDir dir;
    const std::filesystem::path header = dir / "header.h";
    std::ofstream(header) << "#define X 1\n";
    // A compile that starts well after the header was written: not racy.
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const std::int64_t start = cache::filesystem_now_ns();
    cache::HeaderFilter filter;
    filter.working_dir = dir.path();
    filter.source = dir / "module.cpp";
    const std::vector<HeaderRecord> records =
        cache::record_headers({header.string()}, filter, start);
    CHECK_EQ(records.size(), 1u);
    CHECK_EQ(records.at(0).sha256.size(), 64u);
    CHECK_EQ(headers_changed(records), std::string());
}
