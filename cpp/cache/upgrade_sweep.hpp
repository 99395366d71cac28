// opweave core (internal): the first open of a root after an upgrade.
// Entries of an older key recipe can never be hit again (no key computed
// now names them), and older layouts' directories are never read: the
// first process that opens the root for writing renames them into trash
// and removes them, within a time budget, so that an upgrade does not wait
// for a size limit or a prune to reclaim the space.
#pragma once

#include <cstddef>

#include "cache/module_cache_impl.hpp"

namespace opweave::cache {

// `<version>/recipe`: "<recipe> done", or "<recipe> from <shard>" while a
// sweep is under way (the next open goes on from that shard).
inline constexpr const char* k_recipe_file = "recipe";

// The time the sweep may take on the caller's path; what is left is done by
// the next open, and trash by the next sweep.
inline constexpr double k_upgrade_budget_seconds = 0.05;

// In the cache at `root` (opened): unless the recipe file says `recipe` is
// done, renames the older layouts' directories and the entries whose key
// material's first line is "layout: <kind> <n>" with n != recipe into trash
// (in shard order, from where an earlier open stopped), then removes trash,
// stopping when `budget_seconds` have passed. Entries of no recipe are left
// alone. Repairs nothing: a layout directory that is not trusted as it is
// (or is missing) means no sweep. Returns how many were renamed. Never throws.
std::size_t upgrade_sweep(const util::Dir& root, int recipe, double budget_seconds) noexcept;

}  // namespace opweave::cache
