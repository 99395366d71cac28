// opweave core: the sweep after an upgrade (see upgrade_sweep.hpp).
#include "cache/upgrade_sweep.hpp"

#include <sys/stat.h>

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "cache/entry_metadata.hpp"
#include "cache/layout.hpp"
#include "opweave/module_cache.hpp"

namespace opweave::cache {

namespace {

using Clock = std::chrono::steady_clock;

// The recipe an entry's key material names on its first line
// ("layout: module 3"), or nothing.
std::optional<int> recipe_of(const util::Dir& shard, const std::string& key) {
    const auto dir = open_trusted(shard, key);
    const auto text = dir ? dir->read_file(ModuleCache::k_metadata_file) : std::nullopt;
    const auto entry = text ? parse_metadata(*text) : std::nullopt;
    if (!entry) {
        return std::nullopt;  // damaged: verify's and lookup's to deal with
    }
    const std::string_view material = entry->key_material;
    const std::string_view first = material.substr(0, material.find('\n'));
    constexpr std::string_view prefix = "layout: ";
    const std::size_t space = first.rfind(' ');
    if (first.substr(0, prefix.size()) != prefix || space < prefix.size()) {
        return std::nullopt;
    }
    const std::string_view number = first.substr(space + 1);
    if (number.empty() || number.size() > 6 ||
        number.find_first_not_of("0123456789") != std::string_view::npos) {
        return std::nullopt;
    }
    return std::stoi(std::string(number));
}

}  // namespace

std::size_t upgrade_sweep(const util::Dir& root, int recipe, double budget_seconds) noexcept {
    const auto deadline =
        Clock::now() + std::chrono::duration_cast<Clock::duration>(
                           std::chrono::duration<double>(budget_seconds));
    const std::string done = std::to_string(recipe) + " done\n";
    const std::string going = std::to_string(recipe) + " from ";
    std::size_t renamed = 0;
    try {
        // Nothing is repaired here (a repair is reported by the operation
        // that makes it): a layout directory that is not as it should be
        // means no sweep now.
        const std::optional<util::Dir> version = open_trusted(root, version_dir_name());
        const std::optional<std::string> marker =
            version ? version->read_file(k_recipe_file, 256) : std::nullopt;
        if (!version || marker == done) {
            return 0;
        }
        const std::optional<util::Dir> entries = open_trusted(*version, k_entries_dir);
        const std::optional<util::Dir> trash = version->stat(k_trash_dir)
                                                   ? open_trusted(*version, k_trash_dir)
                                                   : require_layout_dir(*version, k_trash_dir,
                                                                        nullptr);
        if (!entries || !trash) {
            return 0;
        }
        std::string from;
        if (marker && marker->rfind(going, 0) == 0 && marker->back() == '\n') {
            from = marker->substr(going.size(), marker->size() - going.size() - 1);
        }
        for (const std::string& name : root.list()) {
            const auto old = is_older_layout(name) ? open_trusted(root, name) : std::nullopt;
            const auto old_entries = old ? old->stat(k_entries_dir) : std::nullopt;
            if (old_entries && S_ISDIR(old_entries->st_mode) &&
                root.rename(name, *trash, unique_name(name))) {
                ++renamed;
            }
        }
        std::string stopped;
        for (const std::string& shard_name : entries->list()) {
            if (shard_name < from) {
                continue;
            }
            if (Clock::now() > deadline) {
                stopped = shard_name;
                break;
            }
            const auto shard = open_trusted(*entries, shard_name);
            for (const std::string& key : shard ? shard->list() : std::vector<std::string>{}) {
                const std::optional<int> found = recipe_of(*shard, key);
                if (found && *found != recipe && shard->rename(key, *trash, unique_name(key))) {
                    ++renamed;
                }
            }
        }
        version->write_file(k_recipe_file, stopped.empty() ? done : going + stopped + "\n", 0600,
                            util::Sync::no);
        for (const std::string& name : trash->list()) {
            if (Clock::now() > deadline) {
                break;  // the next sweep removes the rest
            }
            trash->remove(name);
        }
    } catch (...) {
        // An unusable directory: lookups and builds report it.
    }
    return renamed;
}

}  // namespace opweave::cache
