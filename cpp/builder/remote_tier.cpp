// opweave core: build_module's use of a RemoteStorage (remote_tier.hpp).
#include "builder/remote_tier.hpp"

#include <stdexcept>
#include <string>
#include <system_error>

#include "cache/entry_pack.hpp"
#include "opweave/errors.hpp"

namespace opweave::builder {

std::optional<BuildRecord> fetch_remote(RemoteStorage& remote, std::string_view key,
                                        const std::filesystem::path& staging,
                                        const std::filesystem::path& entry_dir,
                                        std::vector<CacheEvent>& events) {
    std::optional<cache::ForeignEntry> foreign;
    try {
        const std::optional<std::string> pack = remote.get(key);
        if (!pack) {
            return std::nullopt;
        }
        foreign = cache::unpack_entry(key, *pack);
        return cache::stage_foreign(key, *foreign, staging);
    } catch (const Interrupted&) {
        throw;
    } catch (const std::runtime_error& error) {  // CacheError included
        // Nothing of it may be published with the build that follows.
        if (foreign) {
            for (const auto& file : foreign->files) {
                std::error_code ignored;
                std::filesystem::remove(staging / file.first, ignored);
            }
        }
        events.push_back({CacheEvent::Kind::remote_failed, entry_dir, error.what()});
        return std::nullopt;
    }
}

void store_remote(RemoteStorage& remote, ModuleCache& cache, std::string_view key,
                  std::vector<CacheEvent>& events) {
    const std::optional<std::string> pack = cache.export_entry(key);
    if (!pack) {
        return;  // evicted at once (a tiny max_total_bytes)
    }
    try {
        remote.put(key, *pack);
    } catch (const Interrupted&) {
        throw;
    } catch (const std::runtime_error& error) {
        events.push_back({CacheEvent::Kind::remote_failed, cache.entry_dir(key),
                          std::string("storing it failed: ") + error.what()});
    }
}

}  // namespace opweave::builder
