// opweave core (internal): knowing that recorded headers are unchanged
// without a stat of each, through the kernel's file notifications.
//
// Every cache hit checks the headers its entry was compiled with (about two
// hundred for a module that includes Python's and NumPy's headers), a stat
// each. A header a process has recorded or checked often enough
// (k_sightings_before_watch times: compiles and checks of other modules
// count, as modules share most headers) is then watched with inotify: its
// file (a write, a truncation, new times or links, through any path), each
// directory of its path (an entry on the way renamed, replaced or removed),
// and the mount table (/proc/self/mounts signals a mount or an unmount).
// Until an event about it arrives, a later check of the same record needs
// no stat: one read of the event queue and one poll of the mount table for
// all headers. Any doubt means a stat, as without the watch:
//  - a path with a symbolic link in it, or on a filesystem whose files may
//    change on another machine (NFS, SMB, FUSE, 9p, ...), is not watched;
//  - a queue overflow, a watch the kernel drops, a directory on the way
//    moved, and a forked child (which closes the parent's queue and starts
//    its own) forget what is known;
//  - when the kernel refuses a watch (inotify's per-user limits), the header
//    is checked by stat every time.
// Not seen: writes through a shared memory mapping, which inotify does not
// report; compilers and editors do not write headers that way.
//
// Why not at once: the kernel closes an inotify queue slowly (it waits for
// a grace period of its notification marks), and a process's exit closes
// it: one watch made a fresh process's exit 8 ms slower here, two hundred
// 15 ms, while a check without the watch costs two hundred stats (0.17 ms).
// So a process that compiles or loads one or two modules (a script, a
// fresh process's hit or one-op build) never makes the queue; one that
// sees the same headers again and again (it makes functions of the same
// graph, or of many graphs) makes it at the third sighting, and its later
// checks cost microseconds.
#pragma once

#include <string>

#include "opweave/module_cache.hpp"

namespace opweave::cache {

// The process's watch, held (one check at a time in the process) while
// this object lives. Events that arrived since the last check are read
// when it is made.
class WatchedHeaders {
public:
    WatchedHeaders();
    ~WatchedHeaders();
    WatchedHeaders(const WatchedHeaders&) = delete;
    WatchedHeaders& operator=(const WatchedHeaders&) = delete;

    // Whether `header` was checked against this very record, watched, and
    // nothing has happened to it since.
    bool known(const HeaderRecord& header) const;

    // How many times a process records or checks a header before it
    // watches it (see the top).
    static constexpr int k_sightings_before_watch = 3;

    // Counts a sighting of the path `path` (absolute) and watches it from
    // the k_sightings_before_watch-th: call it before the check whose
    // result verified() records. False when it is not watched (not yet, or
    // it cannot be).
    bool watch(const std::string& path);

    // Records that `header`, watched, was just found as recorded (its stat,
    // not following a symbolic link, matched the record).
    void verified(const HeaderRecord& header);
};

}  // namespace opweave::cache
