// opweave core (internal): where the compile slots live.
//
// The slots bound the compilers of all of this user's processes on the
// machine, whatever cache each one uses, so they live in a directory that
// does not depend on the cache: the first of these that is safe to use.
//
//  1. CacheOptions::slot_dir, when set (an error if it is not safe).
//  2. $XDG_RUNTIME_DIR/opweave, when XDG_RUNTIME_DIR is an absolute path to
//     a directory of this user that nobody else may write to (the per-login
//     tmpfs that systemd makes, /run/user/<uid>).
//  3. /tmp/opweave-<uid>, made with mode 0700. Another user may have made
//     that name first (to watch or block our compiles): it is used only if
//     it is a real directory (opened with O_NOFOLLOW) of this user that
//     nobody else may write to, and never repaired.
//  4. The cache's own lock directory (<root>/v2/locks): the slots are then
//     shared only by the processes that share the cache.
//
// "Safe" is util::check_trust() on the opened directory, reached through
// trusted ancestors (util::open_through_trusted), as for the cache.
#pragma once

#include <filesystem>
#include <string>

#include "opweave/module_cache.hpp"
#include "util/dir.hpp"

namespace opweave::builder {

// The candidates, in the order above; for tests, every one can be given.
struct SlotDirChoice {
    std::filesystem::path configured;    // empty: none
    std::string runtime_dir;             // the value of XDG_RUNTIME_DIR; empty: unset
    std::filesystem::path tmp = "/tmp";  // the parent of opweave-<uid>
    std::filesystem::path cache_root;    // the last resort's cache
    // Who may own the directories above each candidate (ancestor_owners).
    util::Owners ancestors;
};

// The candidates of a cache with `options` at `root` in this process (its
// environment's XDG_RUNTIME_DIR).
SlotDirChoice slot_dir_choice(const CacheOptions& options, const std::filesystem::path& root);

// Opens the first safe candidate of `choice`, creating the directory (mode
// 0700) if it is missing. Throws CacheError when the configured directory
// is not safe (the message says why), or when it falls back to the cache's
// lock directory and that cannot be used.
util::Dir open_slot_dir(const SlotDirChoice& choice);

}  // namespace opweave::builder
