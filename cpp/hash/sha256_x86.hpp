// opweave core (internal): SHA-256 with the x86 SHA extensions (SHA-NI).
//
// Hashing a 20 MB precompiled header or a few hundred headers per compile is
// on the path of every compile; the SHA instructions make it about six
// times faster than the portable code. Chosen at run time: the portable code
// runs wherever they are missing.
#pragma once

#include <cstddef>
#include <cstdint>

namespace opweave::hash {

// Whether this CPU has the SHA extensions (and the SSE4.1 and SSSE3 they
// are used with). Always false on other architectures.
bool sha256_x86_available() noexcept;

// Tests: makes sha256_x86_available() report false (or the truth again), so
// that the portable code can be tested on a CPU with the extensions.
void sha256_x86_force_portable(bool portable) noexcept;

// Runs the SHA-256 compression function over `count` 64-byte blocks,
// updating `state` (a, b, ..., h). Only call when sha256_x86_available().
void sha256_x86_compress(std::uint32_t state[8], const std::uint8_t* blocks,
                         std::size_t count) noexcept;

}  // namespace opweave::hash
