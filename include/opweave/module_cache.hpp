// opweave core: the on-disk, content-addressed module cache.
//
// Layout under the root (format version 2):
//
//   <root>/CACHEDIR.TAG                 marks the tree for backup tools
//   <root>/v2/entries/<k2>/<key>/       one published entry: the builder's files
//                                       plus meta.json, written last
//   <root>/v2/locks/<key>.lock          per-key lock, held while building,
//                                       replacing or quarantining the entry
//   <root>/v2/tmp/                      staging directories of builds in flight
//   <root>/v2/trash/                    entries being deleted
//   <root>/v2/quarantine/               damaged entries, kept a while for inspection
//   <root>/v2/failed/<key>.cpp          source of the last failed build of a key
//   <root>/v2/nodes/<n2>/<node key>     which entry exports a node: that entry's
//                                       key and "\n" (an index; see find_export)
//   <root>/v2/stats.json                persistent counters (hits, builds, ...)
//   <root>/v2/records/<kind>/<r2>/<name>  a small record of derived state (read_record)
//
// where <k2> (<n2>) is the first two characters of the key (node key). meta.json records the
// size and SHA-256 of every file of the entry and the headers its build read
// (path, size, times, SHA-256). An entry is verified against it before it is
// returned: a damaged entry is quarantined and built again, never returned,
// and an entry whose headers changed is built again and replaced.
//
// Readers take no lock: an entry is published by one rename, so it is absent
// or whole, and a published file is never rewritten (the last-use time is the
// entry directory's own mtime). A build takes only its own key's lock, so
// different keys build in parallel. Below the root nothing is followed
// through a symlink, nothing owned by another user or writable by group or
// others is trusted, and nothing outside the root is ever written or
// deleted. Files get mode 0600 (0700 for .so files), directories 0700,
// whatever the umask.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <sys/types.h>

#include "opweave/build_monitor.hpp"

namespace opweave {

struct CacheOptions {
    std::filesystem::path root;  // empty: ModuleCache::default_root()
    // How long a build waits for another process building the same key. Longer
    // than a compile with a launcher (two steps of at most 600 s each).
    double lock_timeout_seconds = 1800.0;
    // After a build, the least recently used entries are evicted until the
    // cache holds at most this many bytes. Nothing: no limit. The entries
    // are listed at the first build of this object, then only when its own
    // builds take the size it last listed past the limit (what other
    // processes add is seen at their builds, or at this one's next listing).
    std::optional<std::uint64_t> max_total_bytes;
    // How many compiler processes the builds of this user's processes run at
    // once, at most, whatever their caches (see slot_dir). 0: the number of
    // CPUs this process may use (its affinity mask, limited by a cgroup CPU
    // quota).
    int compile_jobs = 0;
    // Where the compile slots (lock files) live. Empty: a private directory
    // shared by all of this user's processes on the machine,
    // $XDG_RUNTIME_DIR/opweave, else /tmp/opweave-<uid>, else (when neither
    // is safe to use) this cache's own lock directory.
    std::filesystem::path slot_dir;
    // Use the entries below the root and never write there: no entries,
    // locks, statistics, last-use times, quarantines or sweeps. lookup()
    // verifies as always; an entry that fails is reported (an `unusable`
    // event) and left as it is. get_or_build() and the calls that change
    // the cache throw CacheError. The root must exist, belong to this user,
    // root or shared_owner, and be writable by nobody but its owner; entries
    // owned by any of those three are trusted as this user's are.
    bool read_only = false;
    // Read-only caches (as with read_only) looked up, in this order, before
    // this one. A miss is built in this one.
    std::vector<std::filesystem::path> shared_roots;
    // Another user trusted besides this one and root: a read-only cache may
    // belong to them, and so may the directories above any cache root. Never
    // whoever happens to own a path: nothing else is trusted.
    std::optional<uid_t> shared_owner;
    // The key recipe this cache's entries answer to: an entry whose key
    // material begins "layout: <kind> <n>" with another n can never be hit
    // again. The first writable open after it changes renames those entries
    // (and older layouts' directories) into trash and removes them, within
    // 50 ms, going on at the next open (cpp/cache/upgrade_sweep.hpp). 0: no
    // such sweep.
    int recipe = 0;
};

// A file of an entry, as recorded when the entry was published.
struct EntryFile {
    std::string name;
    std::uint64_t size = 0;
    std::string sha256;  // 64 lower-case hex characters
};

// A header that a build read, recorded right after the compile. The entry is
// stale when the header's content changes: its stat data is compared first,
// and its content hashed only when that differs.
struct HeaderRecord {
    std::string path;  // absolute
    std::uint64_t size = 0;
    std::int64_t mtime_ns = 0;
    std::int64_t ctime_ns = 0;
    // Empty when the header changed while the build ran (its times are not
    // older than the compile's start): what the compiler read is unknown, so
    // the next lookup builds again.
    std::string sha256;
};

// Empty when every header of `headers` still has its recorded content (the
// check a lookup makes of an entry's headers); otherwise why not, e.g.
// "header /src/ops/x.h changed". A module loaded from an entry earlier in
// the process passes it before it is used again: its files are in memory
// already, so only its sources can have moved on.
std::string headers_changed(const std::vector<HeaderRecord>& headers);

// Records the files `paths` (absolute) that a step read, a step that began
// at `since_ns` (filesystem_now_ns() then), for callers that keep lists of
// what they depend on (opweave's graph records) and check them with
// headers_changed(): each file with its size, times and SHA-256; without a
// hash (so that a check finds it changed) when it changed at or after
// `since_ns`, since what the step read is then unknown, or when it is not a
// regular file that can be read.
std::vector<HeaderRecord> record_files(const std::vector<std::string>& paths,
                                       std::int64_t since_ns);

// Empty when every file of `files` (record_files()) still has its recorded
// content; otherwise why not, e.g. "file /src/helper.py changed". One
// stat(2) a file; a file is hashed only when its stat differs (and then
// found in the machine's memo when it was hashed before: see
// ModuleCache::keep_file_digests). Unlike headers_changed(), nothing is
// watched: for lists checked once in a process.
std::string files_changed(const std::vector<HeaderRecord>& files);

// The current time as the filesystem's timestamps read it (the kernel's
// coarse clock), in nanoseconds since the epoch.
std::int64_t filesystem_now_ns() noexcept;

// What a builder reports about the build it did; stored in meta.json.
struct BuildRecord {
    std::string kind;          // what sort of entry, e.g. "module" or "prelude"
    std::string label;         // what it holds, e.g. the op names; for listings
    // The caller's name for the environment it was built in (e.g. a hash of
    // the compiler, Python and NumPy versions): exports and imports compare it.
    std::string environment;
    std::string key_material;  // human-readable text of what the key covers
    std::string command;       // the compile command, for display
    double compile_seconds = 0.0;
    std::vector<HeaderRecord> headers;  // checked on every lookup
    // The node keys whose code the entry holds (each must pass
    // ModuleCache::is_key): recorded in its metadata and indexed under
    // nodes/, so that find_export can tell which entry holds a node.
    std::vector<std::string> exports;
};

// Builds one entry: writes its files into the given (empty, private) staging
// directory. Only regular files directly in it are published. Throws to
// abort; nothing is published then.
using BuildFn = std::function<BuildRecord(const std::filesystem::path& staging_dir)>;

enum class Outcome {
    hit,             // found without taking a lock
    built,           // this call built and published it
    built_by_other,  // another process built it while this one waited
};

// A published entry, as its metadata describes it: the record of the build
// that made it (kind, label, environment, key text, command, seconds,
// headers, exports), and where and what it is on disk.
struct Entry : BuildRecord {
    std::string key;
    std::filesystem::path dir;
    double created = 0.0;         // seconds since the epoch
    double last_used = 0.0;       // seconds since the epoch
    std::uint64_t size_bytes = 0;  // of the files on disk
    std::vector<EntryFile> files;

    // The path of the first file whose name ends with `suffix`, or empty.
    std::filesystem::path file_ending(std::string_view suffix) const;
};

// Something found wrong on disk, and what was done about it.
struct CacheEvent {
    enum class Kind {
        quarantined,  // a damaged or untrusted entry was moved aside (and is rebuilt)
        repaired,     // a cache directory's unsafe mode was fixed
        stale,        // a header of the entry changed: it is rebuilt and replaced
        unusable,     // an entry of a read-only cache does not verify: not used, left as is
        fetched,      // the entry came from the remote storage (remote_storage.hpp)
        remote_failed,  // the remote storage failed, or its entry does not verify: not used
    };
    Kind kind;
    std::filesystem::path path;
    std::string problem;  // e.g. "module-1f2e.so has 100 bytes, 21568 recorded"
};

struct CacheResult {
    Entry entry;  // verified
    Outcome outcome = Outcome::hit;
    std::vector<CacheEvent> events;  // in the order they happened
};

// Counters kept on disk across processes (reset by clear()).
struct CacheCounters {
    std::uint64_t hits = 0;          // get_or_build found a valid entry
    std::uint64_t misses = 0;        // it did not (then built, or waited for a builder)
    std::uint64_t builds = 0;        // builds published
    std::uint64_t quarantines = 0;   // damaged entries set aside
    std::uint64_t evictions = 0;     // entries removed by the size limit or prune
    double compile_seconds = 0.0;    // spent by those builds
    double saved_seconds = 0.0;      // the compile time of every entry hit
};

struct CacheStats {
    std::size_t entries = 0;
    std::uint64_t total_bytes = 0;
    std::size_t builds_in_flight = 0;  // staging directories present
    std::size_t failed_sources = 0;    // sources of failed compiles kept (failed/)
    double oldest_use = 0.0;           // earliest last_used; 0 when empty
    double newest_use = 0.0;           // latest last_used; 0 when empty
    CacheCounters counters;
};

struct PruneResult {
    std::size_t removed = 0;
    std::uint64_t freed_bytes = 0;
};

enum class Repair { no, yes };

struct VerifyProblem {
    std::filesystem::path path;
    std::string problem;
    bool repaired = false;  // quarantined (or fixed)
};

struct VerifyReport {
    std::size_t entries_checked = 0;
    std::vector<VerifyProblem> problems;
    std::vector<VerifyProblem> stale;  // entries whose headers changed: rebuilt on next use
};

class ModuleCache {
public:
    // Each member is defined in the file its section names
    // (tests/python/test_cpp_structure.py checks it).

    // --- cpp/cache/module_cache.cpp: opening, keys, building and publishing.

    static constexpr int k_format_version = 2;

    static constexpr const char* k_metadata_file = "meta.json";

    // Opens (creating if needed, with mode 0700) the cache at options.root.
    // Throws CacheError if the root is not a directory owned by this user, or
    // if other users (group or others) can write to it: they could plant code
    // that this user then loads. The message says how to fix it.
    explicit ModuleCache(CacheOptions options = {});

    // Writes the counters not yet on disk.
    ~ModuleCache();

    ModuleCache(const ModuleCache&) = delete;

    ModuleCache& operator=(const ModuleCache&) = delete;

    // $XDG_CACHE_HOME/opweave when XDG_CACHE_HOME is set (and absolute), else
    // $HOME/.cache/opweave. Throws CacheError if neither can be determined.
    static std::filesystem::path default_root();

    // The root with symlinks resolved.
    const std::filesystem::path& root() const noexcept { return m_root; }

    const CacheOptions& options() const noexcept { return m_options; }

    // Whether `key` is 8 to 128 characters of [0-9A-Za-z_-]; keys name
    // directories, so nothing else is accepted.
    static bool is_key(std::string_view key) noexcept;

    // Throws std::invalid_argument unless is_key(key).
    static void check_key(std::string_view key);

    // The directory of `key`'s entry, whether or not it exists.
    std::filesystem::path entry_dir(std::string_view key) const;

    // Returns the entry, building it with `build` when there is no valid one:
    // takes the key's lock (waiting at most the configured timeout, else
    // LockTimeout; polling `monitor`, else Interrupted), looks again, builds
    // into a staging directory, records every file's size and hash, writes
    // the metadata, and publishes (replacing a stale entry). If `build`
    // throws, nothing is published and the exception propagates. Exactly one
    // process builds a key at a time. Then enforces max_total_bytes. The
    // node index of the entry's exports is written after it is published (and
    // on a hit, for exports that have no index file): a failure to write it
    // is ignored. Throws std::invalid_argument (publishing nothing) if the
    // build records an export that is not a key.
    CacheResult get_or_build(std::string_view key, const BuildFn& build,
                             BuildMonitor* monitor = nullptr);

    // Builds the entry of `key` with `build` and publishes it in this cache
    // in place of any entry of `key` it holds, valid or not (the shared
    // read-only caches are not asked): for an entry whose content the caller
    // found no longer right for it, e.g. a graph record whose dependencies
    // changed. Under the key's lock, as get_or_build builds; then enforces
    // max_total_bytes. Counted neither as a miss nor as a build (nothing is
    // compiled). Throws as get_or_build does.
    CacheResult replace(std::string_view key, const BuildFn& build,
                        BuildMonitor* monitor = nullptr);

    // Moves the entry of `key` into quarantine (under its lock) because a
    // caller found it unusable, e.g. a verified module that still fails to
    // load: only if it still holds the file `holding` (when given), so that
    // an entry replaced or removed meanwhile by another process is left
    // alone. Returns whether an entry was moved.
    bool quarantine(std::string_view key, std::string_view problem,
                    std::string_view holding = {}, BuildMonitor* monitor = nullptr);

    // Notes that a build of `key` was wanted and returns whether one was
    // wanted before, by this process or another (a file `<root>/v2/wants/<key>`,
    // kept at most 7 days). So a build that pays off only when used again (a
    // precompiled prelude) starts at the second want. False in a read-only
    // cache, which builds nothing.
    bool wanted_before(std::string_view key);

    // Stores the source of a failed build as `<root>/v2/failed/<key>.cpp` and
    // returns that path, so an error message can name a file that outlives
    // the build's staging directory. Throws CacheError.
    std::filesystem::path keep_failed_source(std::string_view key, std::string_view source);

    // Writes the counters this object gathered to stats.json now (they are
    // written at most once a second otherwise, and on destruction).
    void flush_counters();

    // Counts a hit that a caller served from lookup() without get_or_build
    // (an index of its own named the entry), and the seconds it saved.
    void note_hit(double saved_seconds = 0.0);

    // --- cpp/cache/entry_lookup.cpp: lookups.

    // The entry if it is published, whole and current, without a lock. A
    // damaged one is quarantined first (under the key's lock, so a fresh
    // entry published meanwhile is never moved aside); a stale one (a header
    // changed) is left for the next build to replace. What was found goes to
    // `events` if given. With Blocking::no, a damaged entry whose lock is
    // busy (another process is rebuilding it) is reported missing at once.
    // Refreshes the last-use time at most once a minute. Throws CacheError
    // when the entry's place is unusable (owned by another user and cannot
    // be moved aside).
    std::optional<Entry> lookup(std::string_view key, std::vector<CacheEvent>* events = nullptr,
                                BuildMonitor* monitor = nullptr, Blocking wait = Blocking::yes);

    // --- cpp/cache/node_index.cpp: the node index.

    // The verified entry that exports the node `node_key` (see
    // BuildRecord::exports), or nothing. Reads the node index
    // (nodes/<n2>/<node key>: a regular file of this user, never a symlink,
    // holding an entry key), looks that entry up as lookup() does, and
    // returns it only if its verified metadata lists `node_key`. An index
    // file that is not such a file, names no usable entry or one that does
    // not export the node is removed (left as it is in a read-only cache),
    // and nothing is returned for it. Then the read-only caches of
    // shared_roots are tried in the same way. Takes no lock but lookup()'s.
    // Throws std::invalid_argument unless is_key(node_key), and CacheError
    // as lookup() does.
    std::optional<Entry> find_export(std::string_view node_key,
                                     std::vector<CacheEvent>* events = nullptr,
                                     BuildMonitor* monitor = nullptr);

    // --- cpp/cache/entry_pack.cpp: entries as bytes.

    // The one way an entry leaves the cache: the verified entry of `key` as
    // one byte string (a pack: its metadata and every file it lists, as
    // published), or nothing when there is no valid entry (or it was
    // evicted while being read). Layout: "OPWEAVE-ENTRY 1\n", one JSON line
    // {"key", "meta", "files": [[name, size], ...]} ("meta": the size of the
    // metadata), then the metadata and each file's bytes, in that order.
    std::optional<std::string> export_entry(std::string_view key);

    // The bytes of the file `name` of the verified entry of `key` (this
    // cache's, else a shared read-only cache's: an entry of this cache comes
    // first, as replace() makes it in place of a layer's), read
    // without following a symlink and returned only if they have the size
    // and SHA-256 its metadata records; nothing otherwise. What the lookup
    // did goes to `events` if given. Callers read an entry's data through
    // this, never by opening its files.
    std::optional<std::string> read_entry_file(std::string_view key, std::string_view name,
                                               std::vector<CacheEvent>* events = nullptr);

    // --- cpp/cache/entry_adopt.cpp: publishing another cache's entry.

    // Publishes the pack of another cache (export_entry: an export file, a
    // remote storage) as the entry of `key` after verifying it as a lookup
    // verifies a local entry: it is the pack of `key`; its metadata names
    // `key`; it brings exactly the files the metadata lists, each with its
    // recorded size and SHA-256; every header it records has the recorded
    // content here (the entry records this machine's times for them). Under
    // the key's lock; an entry that is valid here already is kept (outcome
    // built_by_other). Throws CacheError saying what does not verify;
    // nothing is published then.
    CacheResult adopt(std::string_view key, std::string_view pack,
                      BuildMonitor* monitor = nullptr);

    // --- cpp/cache/cache_maintenance.cpp: listing, checking and removing entries.

    // Every published entry as its metadata says (not verified), sorted by
    // key. Entries whose metadata cannot be read are listed with kind
    // "damaged".
    std::vector<Entry> list() const;

    CacheStats stats() const;

    // Checks every entry: its directory, metadata, files (sizes and hashes,
    // hashed again even if this process verified them), owners and modes.
    // An entry that looks bad is checked again (under its lock with
    // Repair::yes) before it is reported, so that one replaced or evicted
    // meanwhile is not. With Repair::yes, each bad entry is quarantined, and
    // so is anything in the entries' directories that is not an entry.
    // Every file of the node index must be a regular file of this user named
    // by a key, in the directory of its first two characters, naming an
    // entry whose metadata lists that key; the others are problems, removed
    // with Repair::yes.
    VerifyReport verify(Repair repair);

    // Removes one entry (and the node index files that name it). Returns
    // whether it existed.
    bool evict(std::string_view key);

    // Removes every entry, the node index and the records, and resets the counters.
    // Returns how many entries were removed.
    std::size_t clear();

    // Removes entries last used more than `older_than_seconds` ago, then the
    // least recently used ones until the total size is at most
    // `max_total_bytes`. Either limit may be omitted. The entry of `keep`, if
    // given, is never removed. The node index files that name a removed
    // entry are removed too.
    PruneResult prune(std::optional<std::uint64_t> max_total_bytes,
                      std::optional<double> older_than_seconds, std::string_view keep = {});

    // Removes what killed processes left behind (staging directories of dead
    // builds), trash, old quarantined entries, and the directories of older
    // layout versions. Returns how many directories were removed.
    std::size_t sweep();

    // --- cpp/cache/record_store.cpp: records.

    // Records: small pieces of derived state that callers keep beside the
    // entries to skip work on this machine (what a compiler's -march=native
    // stands for, the hashes of files), never a source of truth. A
    // record is a regular file of this user, mode 0600, at
    // records/<kind>/<r2>/<name> (<r2>: the first two characters of the
    // name), holding "OPWEAVE-RECORD 1 <SHA-256 of the data>\n" and the
    // data, published by one rename, so a reader sees it whole or not at
    // all. `kind` is 1 to 16 characters of [a-z]; `name` passes is_key;
    // data is at most k_max_record_bytes. Callers never open these files
    // themselves: what is read has passed the cache's checks.
    static constexpr std::size_t k_max_record_bytes = 16u << 20;

    // The data of the record, or nothing: none, or not trusted (a symlink,
    // not a regular file, another owner's, writable by others: left alone),
    // or damaged (its hash does not hold: removed, unless read-only). The
    // read-only caches of shared_roots are asked after this one. Throws
    // std::invalid_argument for a bad kind or name; an unusable directory
    // is a miss, never a CacheError.
    std::optional<std::string> read_record(std::string_view kind, std::string_view name);

    // Publishes the record; false when it cannot be written (a read-only
    // cache, an unusable directory, a full disk). Throws
    // std::invalid_argument for a bad kind or name, or data too large.
    bool write_record(std::string_view kind, std::string_view name, std::string_view data);

    // Removes the record of this cache; returns whether there was one.
    bool remove_record(std::string_view kind, std::string_view name);

    // The names of this cache's records of `kind` (not the shared roots'),
    // sorted.
    std::vector<std::string> record_names(std::string_view kind) const;

    // Makes this cache's records (kind "digests") the machine's memo of the
    // hashes of source files (headers, the files a graph's code came from),
    // like ccache's inode cache: a file whose times changed and content did
    // not (a checkout, a reinstall) is then hashed once per machine, not
    // once per process; a check of such a file that finds it recorded reads
    // a record instead. A cache entry's own files are hashed once per
    // process as before, whatever this says. Nothing for a read-only cache.
    void keep_file_digests();

private:
    // --- cpp/cache/module_cache.cpp.
    // Holds the cache to max_total_bytes after this process published an
    // entry of `added` bytes (`keep`): prunes when the size this process
    // last listed (at its first build, the size stats.json records) plus
    // what it published since passes the limit, so that a build does not
    // list every entry.
    void enforce_size_limit(std::string_view keep, std::uint64_t added);
    // The size stats.json records, when a listing found it less than a day
    // ago; -1 otherwise.
    std::int64_t recorded_bytes() const;
    // What get_or_build and replace do once their build is over: count it,
    // hold the size limit, write the counters when due.
    void after_build(std::string_view key, const CacheResult& result, const CacheCounters& counts);
    // Throws CacheError when the cache is read-only: it does not `what`.
    void refuse_if_read_only(const char* what) const;

    // --- cpp/cache/entry_lookup.cpp.
    // lookup() in this (writable) cache only, past its layers.
    std::optional<Entry> lookup_here(std::string_view key, std::vector<CacheEvent>* events,
                                     BuildMonitor* monitor, Blocking wait);
    // lookup() with this cache before its layers (for entries named by
    // what they are for, not by their content: this cache's replaces a
    // layer's).
    std::optional<Entry> lookup_layers_last(std::string_view key,
                                            std::vector<CacheEvent>* events);
    // The first valid entry of `key` among the read-only layers (shared_roots).
    std::optional<Entry> lookup_in_layers(std::string_view key,
                                          std::vector<CacheEvent>* events) const;
    std::optional<Entry> lookup_read_only(std::string_view key,
                                          std::vector<CacheEvent>* events) const;

    // --- cpp/cache/node_index.cpp.
    // find_export in this cache, without removing anything (read_only or
    // a shared layer).
    std::optional<Entry> find_export_read_only(std::string_view node_key,
                                               std::vector<CacheEvent>* events) const;

    // --- cpp/cache/record_store.cpp.
    // read_record in this cache, trusting its owners, without removing.
    std::optional<std::string> read_record_read_only(std::string_view kind,
                                                     std::string_view name) const;

    class Impl;
    std::filesystem::path m_root;
    CacheOptions m_options;
    std::unique_ptr<Impl> m_impl;
};

}  // namespace opweave
