// opweave core: SHA-256 (FIPS 180-4, section 6.2) and hex spelling of digests.
#include "opweave/hash.hpp"

#include <algorithm>
#include <cstring>

#include "hash/sha256_x86.hpp"

namespace opweave {

namespace {

// FIPS 180-4 section 4.2.2: the first 32 bits of the fractional parts of the
// cube roots of the first 64 primes.
constexpr std::array<std::uint32_t, 64> k_round_constants = {
    0x428a2f98u, 0x71374491u, 0xb5c0fbcfu, 0xe9b5dba5u, 0x3956c25bu, 0x59f111f1u,
    0x923f82a4u, 0xab1c5ed5u, 0xd807aa98u, 0x12835b01u, 0x243185beu, 0x550c7dc3u,
    0x72be5d74u, 0x80deb1feu, 0x9bdc06a7u, 0xc19bf174u, 0xe49b69c1u, 0xefbe4786u,
    0x0fc19dc6u, 0x240ca1ccu, 0x2de92c6fu, 0x4a7484aau, 0x5cb0a9dcu, 0x76f988dau,
    0x983e5152u, 0xa831c66du, 0xb00327c8u, 0xbf597fc7u, 0xc6e00bf3u, 0xd5a79147u,
    0x06ca6351u, 0x14292967u, 0x27b70a85u, 0x2e1b2138u, 0x4d2c6dfcu, 0x53380d13u,
    0x650a7354u, 0x766a0abbu, 0x81c2c92eu, 0x92722c85u, 0xa2bfe8a1u, 0xa81a664bu,
    0xc24b8b70u, 0xc76c51a3u, 0xd192e819u, 0xd6990624u, 0xf40e3585u, 0x106aa070u,
    0x19a4c116u, 0x1e376c08u, 0x2748774cu, 0x34b0bcb5u, 0x391c0cb3u, 0x4ed8aa4au,
    0x5b9cca4fu, 0x682e6ff3u, 0x748f82eeu, 0x78a5636fu, 0x84c87814u, 0x8cc70208u,
    0x90befffau, 0xa4506cebu, 0xbef9a3f7u, 0xc67178f2u,
};

// FIPS 180-4 section 5.3.3: the first 32 bits of the fractional parts of the
// square roots of the first 8 primes.
constexpr std::array<std::uint32_t, 8> k_initial_state = {
    0x6a09e667u, 0xbb67ae85u, 0x3c6ef372u, 0xa54ff53au,
    0x510e527fu, 0x9b05688cu, 0x1f83d9abu, 0x5be0cd19u,
};

constexpr std::size_t k_block_size = 64;
// Padding needs one 0x80 byte plus the 8-byte bit length after the message.
constexpr std::size_t k_length_field_offset = k_block_size - 8;

constexpr std::uint32_t rotate_right(std::uint32_t value, unsigned count) noexcept {
    return (value >> count) | (value << (32u - count));
}

// FIPS 180-4 section 4.1.2, functions (4.2) to (4.7).
constexpr std::uint32_t choose(std::uint32_t x, std::uint32_t y, std::uint32_t z) noexcept {
    return (x & y) ^ (~x & z);
}

constexpr std::uint32_t majority(std::uint32_t x, std::uint32_t y, std::uint32_t z) noexcept {
    return (x & y) ^ (x & z) ^ (y & z);
}

constexpr std::uint32_t big_sigma0(std::uint32_t x) noexcept {
    return rotate_right(x, 2) ^ rotate_right(x, 13) ^ rotate_right(x, 22);
}

constexpr std::uint32_t big_sigma1(std::uint32_t x) noexcept {
    return rotate_right(x, 6) ^ rotate_right(x, 11) ^ rotate_right(x, 25);
}

constexpr std::uint32_t small_sigma0(std::uint32_t x) noexcept {
    return rotate_right(x, 7) ^ rotate_right(x, 18) ^ (x >> 3);
}

constexpr std::uint32_t small_sigma1(std::uint32_t x) noexcept {
    return rotate_right(x, 17) ^ rotate_right(x, 19) ^ (x >> 10);
}

// Words are read and written big-endian byte by byte, so the result does not
// depend on the host's byte order or on the alignment of the input.
std::uint32_t load_big_endian(const std::uint8_t* bytes) noexcept {
    return (static_cast<std::uint32_t>(bytes[0]) << 24) |
           (static_cast<std::uint32_t>(bytes[1]) << 16) |
           (static_cast<std::uint32_t>(bytes[2]) << 8) |
           static_cast<std::uint32_t>(bytes[3]);
}

}  // namespace

std::string to_hex(const Digest& digest) {
    static constexpr char k_hex_digits[] = "0123456789abcdef";
    std::string text;
    text.reserve(digest.size() * 2);
    for (const std::uint8_t byte : digest) {
        text.push_back(k_hex_digits[byte >> 4]);
        text.push_back(k_hex_digits[byte & 0x0fu]);
    }
    return text;
}

Sha256::Sha256() noexcept : m_state{}, m_buffer{}, m_buffered{0}, m_total_bytes{0} {
    reset();
}

void Sha256::reset() noexcept {
    m_state = k_initial_state;
    m_buffer.fill(0);
    m_buffered = 0;
    m_total_bytes = 0;
}

void Sha256::compress(const std::uint8_t* blocks, std::size_t count) noexcept {
    if (hash::sha256_x86_available()) {
        hash::sha256_x86_compress(m_state.data(), blocks, count);
        return;
    }
    for (; count > 0; --count, blocks += k_block_size) {
        compress_portable(blocks);
    }
}

void Sha256::compress_portable(const std::uint8_t* block) noexcept {
    // Message schedule, FIPS 180-4 section 6.2.2 step 1.
    std::array<std::uint32_t, 64> schedule{};
    for (std::size_t t = 0; t < 16; ++t) {
        schedule[t] = load_big_endian(block + 4 * t);
    }
    for (std::size_t t = 16; t < 64; ++t) {
        schedule[t] = small_sigma1(schedule[t - 2]) + schedule[t - 7] +
                      small_sigma0(schedule[t - 15]) + schedule[t - 16];
    }

    std::uint32_t a = m_state[0];
    std::uint32_t b = m_state[1];
    std::uint32_t c = m_state[2];
    std::uint32_t d = m_state[3];
    std::uint32_t e = m_state[4];
    std::uint32_t f = m_state[5];
    std::uint32_t g = m_state[6];
    std::uint32_t h = m_state[7];

    for (std::size_t t = 0; t < 64; ++t) {
        const std::uint32_t t1 =
            h + big_sigma1(e) + choose(e, f, g) + k_round_constants[t] + schedule[t];
        const std::uint32_t t2 = big_sigma0(a) + majority(a, b, c);
        h = g;
        g = f;
        f = e;
        e = d + t1;
        d = c;
        c = b;
        b = a;
        a = t1 + t2;
    }

    m_state[0] += a;
    m_state[1] += b;
    m_state[2] += c;
    m_state[3] += d;
    m_state[4] += e;
    m_state[5] += f;
    m_state[6] += g;
    m_state[7] += h;
}

void Sha256::update(const void* data, std::size_t size) noexcept {
    if (size == 0) {
        // data may legitimately be null here (an empty string_view).
        return;
    }
    const auto* bytes = static_cast<const std::uint8_t*>(data);
    m_total_bytes += size;

    // Top up a partially filled buffer first.
    if (m_buffered > 0) {
        const std::size_t take = std::min(size, k_block_size - m_buffered);
        std::memcpy(m_buffer.data() + m_buffered, bytes, take);
        m_buffered += take;
        bytes += take;
        size -= take;
        if (m_buffered < k_block_size) {
            return;
        }
        compress(m_buffer.data(), 1);
        m_buffered = 0;
    }

    // Whole blocks straight from the input, avoiding a copy.
    const std::size_t whole = size / k_block_size;
    if (whole > 0) {
        compress(bytes, whole);
        bytes += whole * k_block_size;
        size -= whole * k_block_size;
    }

    if (size > 0) {
        std::memcpy(m_buffer.data(), bytes, size);
        m_buffered = size;
    }
}

Digest Sha256::finish() noexcept {
    // FIPS 180-4 section 5.1.1: append a 1 bit, zeros, then the message length
    // in bits as a 64-bit big-endian integer, filling out the last block. The
    // length is taken modulo 2^64 bits, as the standard's limit allows.
    const std::uint64_t total_bits = m_total_bytes * 8u;

    m_buffer[m_buffered] = 0x80u;
    ++m_buffered;
    if (m_buffered > k_length_field_offset) {
        // No room left for the length: pad out this block and start another.
        std::fill(m_buffer.begin() + static_cast<std::ptrdiff_t>(m_buffered), m_buffer.end(),
                  std::uint8_t{0});
        compress(m_buffer.data(), 1);
        m_buffered = 0;
    }
    std::fill(m_buffer.begin() + static_cast<std::ptrdiff_t>(m_buffered),
              m_buffer.begin() + static_cast<std::ptrdiff_t>(k_length_field_offset),
              std::uint8_t{0});
    for (std::size_t i = 0; i < 8; ++i) {
        m_buffer[k_length_field_offset + i] =
            static_cast<std::uint8_t>(total_bits >> (56 - 8 * i));
    }
    compress(m_buffer.data(), 1);

    Digest digest{};
    for (std::size_t i = 0; i < m_state.size(); ++i) {
        digest[4 * i + 0] = static_cast<std::uint8_t>(m_state[i] >> 24);
        digest[4 * i + 1] = static_cast<std::uint8_t>(m_state[i] >> 16);
        digest[4 * i + 2] = static_cast<std::uint8_t>(m_state[i] >> 8);
        digest[4 * i + 3] = static_cast<std::uint8_t>(m_state[i]);
    }
    reset();
    return digest;
}

Digest Sha256::of(std::string_view bytes) noexcept {
    Sha256 sha;
    sha.update(bytes);
    return sha.finish();
}

}  // namespace opweave
