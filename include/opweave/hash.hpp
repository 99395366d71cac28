// opweave core: SHA-256 and the typed key hasher built on it.
//
// Cache keys are SHA-256 digests. Sha256 is the plain FIPS 180-4 hash.
// KeyHasher feeds it *typed, length-prefixed* fields, so that no two different
// field sequences produce the same byte stream: ("-I", "-O2") and ("-I-O2")
// hash differently, and so do a string "1" and an integer 1.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace opweave {

using Digest = std::array<std::uint8_t, 32>;

// Lower-case hexadecimal spelling of a digest (64 characters).
std::string to_hex(const Digest& digest);

// Incremental SHA-256. Feed bytes with update(), then call finish() once.
// After finish() the object is reset and may hash a new message.
class Sha256 {
public:
    Sha256() noexcept;

    // Feeds `size` bytes; (nullptr, 0) is allowed.
    void update(const void* data, std::size_t size) noexcept;
    void update(std::string_view bytes) noexcept { update(bytes.data(), bytes.size()); }

    // Returns the digest of everything fed since construction or the last
    // finish(), and resets the state.
    Digest finish() noexcept;

    // One-shot helper: the digest of `bytes`.
    static Digest of(std::string_view bytes) noexcept;

private:
    void reset() noexcept;
    // Runs the compression function over `count` 64-byte blocks, with the
    // CPU's SHA instructions where it has them.
    void compress(const std::uint8_t* blocks, std::size_t count) noexcept;
    void compress_portable(const std::uint8_t* block) noexcept;

    std::array<std::uint32_t, 8> m_state;
    std::array<std::uint8_t, 64> m_buffer;
    std::size_t m_buffered;
    std::uint64_t m_total_bytes;
};

// A cache key and the readable text of everything it covers ("name: value"
// lines, shown by `opweave cache list`), made in one pass (KeyHasher::finish).
struct KeyedText {
    std::string key;
    std::string text;
};

// Builds a key from typed fields. The byte encoding is part of every cache
// key, so it is fixed:
//   string  's', length as 8 little-endian bytes, the bytes
//   integer 'i', 8 (as 8 LE bytes), the value as 8 LE bytes (two's complement)
//   list    'l', the element count as 8 LE bytes, then each element as a string
//   named   'n'-tagged name (encoded like a string), then the value (a string,
//           an integer or a list, as above)
//
// A named field is also written, as it is hashed, into text(): one
// "name: value" line (a list's elements separated by spaces, a value of
// several lines indented below its name, a value longer than
// k_shown_bytes by its size), as ccache's debug hash records its input. A
// key and the readable text of what it covers come from one pass, so they
// cannot drift apart.
class KeyHasher {
public:
    static constexpr std::size_t k_shown_bytes = 4096;

    KeyHasher& add(std::string_view text);
    KeyHasher& add(std::int64_t number);
    KeyHasher& add(const std::vector<std::string>& list);
    // Named fields: the name ('n'), then the value.
    KeyHasher& add(std::string_view name, std::string_view value);
    KeyHasher& add(std::string_view name, std::int64_t number);
    KeyHasher& add(std::string_view name, const std::vector<std::string>& list);

    // The "name: value" lines of the named fields so far.
    const std::string& text() const noexcept { return m_text; }

    // The digest of all fields so far, as 64 hex characters. The hasher is
    // reset afterwards (its text too).
    std::string hex_digest();

    // The digest and the text of all fields so far; the hasher is reset.
    KeyedText finish();

private:
    void add_tagged(char tag, const void* data, std::size_t size);
    void add_name(std::string_view name);
    void show(std::string_view name, std::string_view value);

    Sha256 m_sha;
    std::string m_text;
};

}  // namespace opweave
