// Tests of where the compile slots live (build/slot_dir.hpp): the
// configured directory, $XDG_RUNTIME_DIR/opweave, <tmp>/opweave-<uid>, then
// the cache's lock directory, each taken only when it is safe.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "builder/slot_dir.hpp"
#include "check.hpp"
#include "opweave/errors.hpp"
#include "temp_dir.hpp"
#include "util/fs.hpp"

using namespace opweave;
using opweave_test::TempDir;

namespace {

// A choice whose every candidate is in `dir`: runtime/, tmp/, cache/.
builder::SlotDirChoice choice_in(const TempDir& dir) {
    builder::SlotDirChoice choice;
    choice.runtime_dir = (dir / "runtime").string();
    choice.tmp = dir / "tmp";
    choice.cache_root = dir / "cache";
    util::make_dirs(dir / "runtime", 0700);
    util::make_dirs(dir / "tmp", 0700);
    return choice;
}

std::string tmp_name() { return "opweave-" + std::to_string(::geteuid()); }

unsigned mode_of(const std::filesystem::path& path) {
    struct stat st {};
    ::lstat(path.c_str(), &st);
    return st.st_mode & 07777;
}

}  // namespace

OPWEAVE_TEST(the_configured_directory_comes_first_and_is_made_private) {
    TempDir dir;
    builder::SlotDirChoice choice = choice_in(dir);
    choice.configured = dir / "mine/slots";
    CHECK_EQ(builder::open_slot_dir(choice).path(), dir / "mine/slots");
    CHECK_EQ(mode_of(dir / "mine/slots"), 0700u);
}

OPWEAVE_TEST(a_configured_directory_that_others_may_write_is_refused) {
    TempDir dir;
    builder::SlotDirChoice choice = choice_in(dir);
    choice.configured = dir / "open";
    util::make_dirs(choice.configured, 0777);
    CHECK_THROWS_AS(builder::open_slot_dir(choice), CacheError);
}

OPWEAVE_TEST(the_runtime_dir_comes_next) {
    TempDir dir;
    const builder::SlotDirChoice choice = choice_in(dir);
    CHECK_EQ(builder::open_slot_dir(choice).path(), dir / "runtime/opweave");
    CHECK_EQ(mode_of(dir / "runtime/opweave"), 0700u);
}

OPWEAVE_TEST(an_unsafe_or_relative_runtime_dir_is_skipped_for_tmp) {
    TempDir dir;
    builder::SlotDirChoice choice = choice_in(dir);
    CHECK_EQ(::chmod((dir / "runtime").c_str(), 0777), 0);
    CHECK_EQ(builder::open_slot_dir(choice).path(), dir / "tmp" / tmp_name());
    CHECK(!std::filesystem::exists(dir / "runtime/opweave"));
    CHECK_EQ(mode_of(dir / "tmp" / tmp_name()), 0700u);
    choice.runtime_dir = "relative/runtime";
    CHECK_EQ(builder::open_slot_dir(choice).path(), dir / "tmp" / tmp_name());
    choice.runtime_dir = (dir / "missing").string();
    CHECK_EQ(builder::open_slot_dir(choice).path(), dir / "tmp" / tmp_name());
}

OPWEAVE_TEST(a_tmp_dir_that_others_may_write_falls_back_to_the_cache) {
    TempDir dir;
    builder::SlotDirChoice choice = choice_in(dir);
    choice.runtime_dir.clear();
    util::make_dirs(dir / "tmp" / tmp_name(), 0777);
    CHECK_EQ(builder::open_slot_dir(choice).path(), dir / "cache/v2/locks");
    CHECK_EQ(mode_of(dir / "tmp" / tmp_name()), 0777u);  // not repaired
}

OPWEAVE_TEST(a_symlink_in_tmp_is_not_followed) {
    TempDir dir;
    builder::SlotDirChoice choice = choice_in(dir);
    choice.runtime_dir.clear();
    util::make_dirs(dir / "elsewhere", 0700);
    std::filesystem::create_directory_symlink(dir / "elsewhere", dir / "tmp" / tmp_name());
    CHECK_EQ(builder::open_slot_dir(choice).path(), dir / "cache/v2/locks");
    CHECK(std::filesystem::is_symlink(dir / "tmp" / tmp_name()));
}

OPWEAVE_TEST(another_users_tmp_dir_falls_back_to_the_cache) {
    if (::geteuid() != 0) {
        return;  // only root can give a directory away
    }
    TempDir dir;
    builder::SlotDirChoice choice = choice_in(dir);
    choice.runtime_dir.clear();
    util::make_dirs(dir / "tmp" / tmp_name(), 0700);
    CHECK_EQ(::chown((dir / "tmp" / tmp_name()).c_str(), 4242, 4242), 0);
    CHECK_EQ(builder::open_slot_dir(choice).path(), dir / "cache/v2/locks");
}

OPWEAVE_TEST(a_cache_chooses_by_its_options_and_the_environment) {
    CacheOptions options;
    options.slot_dir = "/some/where";
    const builder::SlotDirChoice configured = builder::slot_dir_choice(options, "/a/cache");
    CHECK_EQ(configured.configured, std::filesystem::path("/some/where"));
    CHECK_EQ(configured.cache_root, std::filesystem::path("/a/cache"));
    CHECK_EQ(configured.tmp, std::filesystem::path("/tmp"));
    ::setenv("XDG_RUNTIME_DIR", "/run/user/4242", 1);
    CHECK_EQ(builder::slot_dir_choice(CacheOptions(), "/a").runtime_dir,
             std::string("/run/user/4242"));
    ::unsetenv("XDG_RUNTIME_DIR");
    CHECK(builder::slot_dir_choice(CacheOptions(), "/a").runtime_dir.empty());
}
