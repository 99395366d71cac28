// opweave core: a store of whole cache entries that machines share (a
// remote tier), on the model of ccache's storage back ends.
//
// build_module (module_builder.hpp) consults it on a local miss, under the
// key's lock, before anything is compiled: bytes it returns are an entry
// pack (ModuleCache::export_entry), published only once they verify as a
// local entry would (ModuleCache::adopt); bytes that do not verify are a
// miss, reported as a `refused` CacheEvent. After it publishes a module it
// built, build_module puts that entry's pack.
//
// The storage is trusted with availability only, never with correctness:
// whatever get() returns is verified. A storage that shares entries between
// users should also authenticate them (opweave's Redis client signs each
// pack with an HMAC bound to its key).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace opweave {

class RemoteStorage {
public:
    RemoteStorage() = default;
    RemoteStorage(const RemoteStorage&) = delete;
    RemoteStorage& operator=(const RemoteStorage&) = delete;
    virtual ~RemoteStorage() = default;

    // The pack stored under `key`, or nothing (none stored, or the storage
    // failed). get() is called with the key's lock held, so that other
    // processes wanting the key wait for it: it must return within a bound
    // of its own (a deadline on every network operation). An exception is
    // treated as nothing, reported as a `refused` event.
    virtual std::optional<std::string> get(std::string_view key) = 0;

    // Stores `pack` under `key`, or gives up; called without any lock. An
    // exception is ignored (the module is built and published already).
    virtual void put(std::string_view key, std::string_view pack) = 0;
};

}  // namespace opweave
