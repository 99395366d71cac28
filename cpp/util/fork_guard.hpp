// opweave core (internal): lock descriptors that a forked child must not keep.
//
// An flock(2) lock belongs to an open file description, and fork() gives
// the child a descriptor of every description the parent has open
// (close-on-exec only helps at exec). A child that kept a copy would hold
// the parent's lock too, and would keep it held after the parent dies. So
// every lock descriptor is registered here, and a pthread_atfork child
// handler closes the child's copies (which drops the child's reference
// only: the parent keeps its lock).
#pragma once

namespace opweave::util {

// Registers `fd` to be closed in every child forked from now on.
void close_in_forked_children(int fd);

// Unregisters `fd` (before it is closed). Never throws.
void keep_in_forked_children(int fd) noexcept;

}  // namespace opweave::util
