// opweave core (internal): SHA-256 with the x86 SHA extensions (see
// sha256_x86.hpp).
//
// The instructions keep the state as two vectors, ABEF and CDGH (Intel's
// SHA extensions reference, "New Instructions Supporting the Secure Hash
// Algorithm on Intel Architecture Processors", 2013): sha256rnds2 does two
// rounds, sha256msg1 and sha256msg2 compute the message schedule four words
// at a time. Four rounds take one vector of schedule words W[i] plus round
// constants; for i >= 4,
//   W[i] = msg2(msg1(W[i-4], W[i-3]) + alignr(W[i-1], W[i-2], 4), W[i-1]),
// which is FIPS 180-4's sigma1(w[t-2]) + w[t-7] + sigma0(w[t-15]) + w[t-16]
// for four t at once. Only the last four W are live; they rotate in w[4].
#include "hash/sha256_x86.hpp"

#include <atomic>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <immintrin.h>
#define OPWEAVE_SHA_X86 1
#endif

namespace opweave::hash {

namespace {

std::atomic<bool> g_force_portable{false};

}  // namespace

void sha256_x86_force_portable(bool portable) noexcept { g_force_portable.store(portable); }

#if defined(OPWEAVE_SHA_X86)

namespace {

alignas(16) constexpr std::uint32_t k_round_constants[64] = {
    0x428a2f98u, 0x71374491u, 0xb5c0fbcfu, 0xe9b5dba5u, 0x3956c25bu, 0x59f111f1u, 0x923f82a4u,
    0xab1c5ed5u, 0xd807aa98u, 0x12835b01u, 0x243185beu, 0x550c7dc3u, 0x72be5d74u, 0x80deb1feu,
    0x9bdc06a7u, 0xc19bf174u, 0xe49b69c1u, 0xefbe4786u, 0x0fc19dc6u, 0x240ca1ccu, 0x2de92c6fu,
    0x4a7484aau, 0x5cb0a9dcu, 0x76f988dau, 0x983e5152u, 0xa831c66du, 0xb00327c8u, 0xbf597fc7u,
    0xc6e00bf3u, 0xd5a79147u, 0x06ca6351u, 0x14292967u, 0x27b70a85u, 0x2e1b2138u, 0x4d2c6dfcu,
    0x53380d13u, 0x650a7354u, 0x766a0abbu, 0x81c2c92eu, 0x92722c85u, 0xa2bfe8a1u, 0xa81a664bu,
    0xc24b8b70u, 0xc76c51a3u, 0xd192e819u, 0xd6990624u, 0xf40e3585u, 0x106aa070u, 0x19a4c116u,
    0x1e376c08u, 0x2748774cu, 0x34b0bcb5u, 0x391c0cb3u, 0x4ed8aa4au, 0x5b9cca4fu, 0x682e6ff3u,
    0x748f82eeu, 0x78a5636fu, 0x84c87814u, 0x8cc70208u, 0x90befffau, 0xa4506cebu, 0xbef9a3f7u,
    0xc67178f2u,
};

bool detect() noexcept {
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (__get_cpuid(1, &a, &b, &c, &d) == 0) {
        return false;
    }
    const bool ssse3 = (c & (1u << 9)) != 0;
    const bool sse41 = (c & (1u << 19)) != 0;
    if (__get_cpuid_count(7, 0, &a, &b, &c, &d) == 0) {
        return false;
    }
    const bool sha = (b & (1u << 29)) != 0;
    return ssse3 && sse41 && sha;
}

}  // namespace

bool sha256_x86_available() noexcept {
    static const bool available = detect();
    return available && !g_force_portable.load(std::memory_order_relaxed);
}

__attribute__((target("sha,sse4.1,ssse3"))) void sha256_x86_compress(
    std::uint32_t state[8], const std::uint8_t* blocks, std::size_t count) noexcept {
    // Message bytes are big-endian words: reverse the bytes of each word.
    const __m128i byte_swap = _mm_set_epi64x(0x0c0d0e0f08090a0bLL, 0x0405060700010203LL);

    // state is a b c d | e f g h; the instructions want ABEF and CDGH.
    const __m128i dcba = _mm_loadu_si128(reinterpret_cast<const __m128i*>(state));
    const __m128i hgfe = _mm_loadu_si128(reinterpret_cast<const __m128i*>(state + 4));
    const __m128i cdab = _mm_shuffle_epi32(dcba, 0xB1);
    const __m128i efgh = _mm_shuffle_epi32(hgfe, 0x1B);
    __m128i abef = _mm_alignr_epi8(cdab, efgh, 8);
    __m128i cdgh = _mm_blend_epi16(efgh, cdab, 0xF0);

    for (; count > 0; --count, blocks += 64) {
        const __m128i abef_before = abef;
        const __m128i cdgh_before = cdgh;
        __m128i w[4];
        for (int i = 0; i < 16; ++i) {
            if (i < 4) {
                const __m128i raw =
                    _mm_loadu_si128(reinterpret_cast<const __m128i*>(blocks + 16 * i));
                w[i] = _mm_shuffle_epi8(raw, byte_swap);
            } else {
                __m128i next = _mm_sha256msg1_epu32(w[i & 3], w[(i - 3) & 3]);
                next = _mm_add_epi32(next, _mm_alignr_epi8(w[(i - 1) & 3], w[(i - 2) & 3], 4));
                w[i & 3] = _mm_sha256msg2_epu32(next, w[(i - 1) & 3]);
            }
            __m128i words = _mm_add_epi32(
                w[i & 3],
                _mm_load_si128(reinterpret_cast<const __m128i*>(k_round_constants + 4 * i)));
            cdgh = _mm_sha256rnds2_epu32(cdgh, abef, words);
            words = _mm_shuffle_epi32(words, 0x0E);  // the other two rounds' words
            abef = _mm_sha256rnds2_epu32(abef, cdgh, words);
        }
        abef = _mm_add_epi32(abef, abef_before);
        cdgh = _mm_add_epi32(cdgh, cdgh_before);
    }

    // Back to a b c d | e f g h.
    const __m128i feba = _mm_shuffle_epi32(abef, 0x1B);
    const __m128i dchg = _mm_shuffle_epi32(cdgh, 0xB1);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(state), _mm_blend_epi16(feba, dchg, 0xF0));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(state + 4), _mm_alignr_epi8(dchg, feba, 8));
}

#else

bool sha256_x86_available() noexcept { return false; }

void sha256_x86_compress(std::uint32_t*, const std::uint8_t*, std::size_t) noexcept {}

#endif

}  // namespace opweave::hash
