// Unit tests of opweave's SHA-256 (FIPS 180-4 vectors, incremental feeding,
// padding boundaries) and of the typed KeyHasher encoding.
#include "check.hpp"

#include "hash/sha256_x86.hpp"
#include "opweave/hash.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

using opweave::KeyHasher;
using opweave::Sha256;
using opweave::to_hex;

namespace {

std::string hex_of(const std::string& message) {
    return to_hex(Sha256::of(message));
}

// "abc...zabc..." of the given length; expected digests below were computed
// with python3: hashlib.sha256(bytes(ord('a') + i % 26 for i in range(n))).
std::string alphabet_pattern(std::size_t length) {
    std::string text;
    for (std::size_t i = 0; i < length; ++i) {
        text.push_back(static_cast<char>('a' + static_cast<int>(i % 26)));
    }
    return text;
}

// 200 bytes covering the whole byte range, high bit included; python3:
// hashlib.sha256(bytes((i * 37 + 11) & 0xff for i in range(200))).
std::string binary_message() {
    std::string text;
    for (std::size_t i = 0; i < 200; ++i) {
        text.push_back(static_cast<char>(static_cast<unsigned char>((i * 37 + 11) & 0xffu)));
    }
    return text;
}

bool is_lower_hex(const std::string& text) {
    for (const char c : text) {
        const bool digit = c >= '0' && c <= '9';
        const bool letter = c >= 'a' && c <= 'f';
        if (!digit && !letter) {
            return false;
        }
    }
    return true;
}

}  // namespace

// ---- SHA-256: FIPS 180-4 / NIST example vectors -----------------------------

OPWEAVE_TEST(sha256_empty_message) {
    CHECK_EQ(hex_of(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

OPWEAVE_TEST(sha256_abc) {
    CHECK_EQ(hex_of("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

OPWEAVE_TEST(sha256_448_bit_message) {
    CHECK_EQ(hex_of("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
             "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

OPWEAVE_TEST(sha256_896_bit_message) {
    CHECK_EQ(hex_of("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmno"
                    "ijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu"),
             "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
}

OPWEAVE_TEST(sha256_one_million_a_in_uneven_chunks) {
    const std::string expected =
        "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0";
    const std::size_t total = 1000000;
    const std::string source(1000, 'a');
    const std::vector<std::size_t> chunk_sizes = {1, 63, 64, 65, 1000, 127, 128, 129, 7, 999};

    Sha256 sha;
    std::size_t fed = 0;
    std::size_t next = 0;
    while (fed < total) {
        std::size_t chunk = chunk_sizes[next % chunk_sizes.size()];
        ++next;
        if (chunk > total - fed) {
            chunk = total - fed;
        }
        sha.update(source.data(), chunk);
        fed += chunk;
    }
    CHECK_EQ(to_hex(sha.finish()), expected);

    // The one-shot path agrees.
    CHECK_EQ(hex_of(std::string(total, 'a')), expected);
}

// ---- SHA-256: incremental feeding and reset ---------------------------------

OPWEAVE_TEST(sha256_every_split_point_matches_one_shot) {
    const std::string message = binary_message();
    const std::string expected =
        "5e48d64839a8bff5e2471507af6a49f9990817df437857f4a2007df41266e1b5";
    CHECK_EQ(hex_of(message), expected);

    for (std::size_t split = 0; split <= message.size(); ++split) {
        Sha256 sha;
        sha.update(message.data(), split);
        sha.update(message.data() + split, message.size() - split);
        // The split point is part of both sides so a failure names it.
        const std::string label = "split " + std::to_string(split) + ": ";
        CHECK_EQ(label + to_hex(sha.finish()), label + expected);
    }
}

OPWEAVE_TEST(sha256_byte_at_a_time_matches_one_shot) {
    const std::string message = binary_message();
    Sha256 sha;
    for (const char c : message) {
        sha.update(&c, 1);
    }
    CHECK_EQ(to_hex(sha.finish()), hex_of(message));
}

OPWEAVE_TEST(sha256_empty_updates_change_nothing) {
    Sha256 sha;
    sha.update(nullptr, 0);
    sha.update("ab");
    sha.update(std::string_view{});
    sha.update("c");
    sha.update(nullptr, 0);
    CHECK_EQ(to_hex(sha.finish()),
             "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

OPWEAVE_TEST(sha256_finish_resets) {
    Sha256 sha;
    sha.update("abc");
    const std::string first = to_hex(sha.finish());
    sha.update("abc");
    const std::string second = to_hex(sha.finish());
    CHECK_EQ(first, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    CHECK_EQ(second, first);

    // Nothing fed since the last finish(): the empty-message digest.
    CHECK_EQ(to_hex(sha.finish()),
             "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

OPWEAVE_TEST(sha256_finish_resets_after_partial_block) {
    // A long, unaligned message leaves bytes buffered; none may leak into the
    // next message.
    Sha256 sha;
    sha.update(alphabet_pattern(100));
    (void)sha.finish();
    sha.update("abc");
    CHECK_EQ(to_hex(sha.finish()),
             "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

// ---- SHA-256: padding boundaries --------------------------------------------
// 55 bytes is the longest message whose padding fits in one block; 56 forces a
// second block; 63/64/65 straddle the block size; 119/120 repeat this one block
// later.

OPWEAVE_TEST(sha256_padding_boundaries) {
    struct Case {
        std::size_t length;
        const char* expected;
    };
    const std::vector<Case> cases = {
        {55, "595615dbe4f0f407ae397d08b4c2cb870cb9b0e11937416f950c5160acf9c005"},
        {56, "784f623b787495078e93ff28a25b581df0584055a7e71d8cd90c454716b92f51"},
        {63, "5ca3e1ef5207490eac01a795e5cc94d59582a5118bf9534665c8668d87aa647c"},
        {64, "2fcd5a0d60e4c941381fcc4e00a4bf8be422c3ddfafb93c809e8d1e2bfffae8e"},
        {65, "1b3cd1877ab2f2f19f7be001722554f336cb799df0329de0bb4c118dc6abc06d"},
        {119, "faef67da856d6fd9c8d12f9ed0a4fefd3cf0ce085ab43e2907418d457e3c354b"},
        {120, "c9512b08619c19fbb503c7da6b46ef20301e5f7a7a5f43989182398536f5c5c8"},
    };
    for (const Case& c : cases) {
        CHECK_EQ(hex_of(alphabet_pattern(c.length)), std::string(c.expected));
    }
}

OPWEAVE_TEST(to_hex_is_lower_case_and_64_chars) {
    opweave::Digest digest{};
    for (std::size_t i = 0; i < digest.size(); ++i) {
        digest[i] = static_cast<std::uint8_t>(i * 8 + 7);
    }
    const std::string text = to_hex(digest);
    CHECK_EQ(text.size(), std::size_t{64});
    CHECK_EQ(text.substr(0, 8), "070f171f");
    CHECK_EQ(text.substr(56), "e7eff7ff");
    CHECK(is_lower_hex(text));
}

// ---- KeyHasher ---------------------------------------------------------------

OPWEAVE_TEST(key_hasher_list_boundaries_matter) {
    const std::string split = KeyHasher{}.add(std::vector<std::string>{"-I", "-O2"}).hex_digest();
    const std::string joined = KeyHasher{}.add(std::vector<std::string>{"-I-O2"}).hex_digest();
    CHECK(split != joined);
}

OPWEAVE_TEST(key_hasher_string_and_int_differ) {
    const std::string text = KeyHasher{}.add("1").hex_digest();
    const std::string number = KeyHasher{}.add(std::int64_t{1}).hex_digest();
    CHECK(text != number);
}

OPWEAVE_TEST(key_hasher_string_boundaries_matter) {
    const std::string left = KeyHasher{}.add("a").add("bc").hex_digest();
    const std::string right = KeyHasher{}.add("ab").add("c").hex_digest();
    CHECK(left != right);
}

OPWEAVE_TEST(key_hasher_named_field_boundaries_matter) {
    const std::string left = KeyHasher{}.add("a", "bc").hex_digest();
    const std::string right = KeyHasher{}.add("ab", "c").hex_digest();
    CHECK(left != right);
}

OPWEAVE_TEST(key_hasher_list_differs_from_separate_strings) {
    const std::string list = KeyHasher{}.add(std::vector<std::string>{"a", "b"}).hex_digest();
    const std::string strings = KeyHasher{}.add("a").add("b").hex_digest();
    CHECK(list != strings);
}

OPWEAVE_TEST(key_hasher_is_deterministic) {
    const auto build = [] {
        return KeyHasher{}
            .add("compiler")
            .add(std::int64_t{-42})
            .add(std::vector<std::string>{"-O2", "-fPIC", ""})
            .add("std", "c++17")
            .hex_digest();
    };
    CHECK_EQ(build(), build());
}

OPWEAVE_TEST(key_hasher_hex_digest_resets) {
    KeyHasher hasher;
    const std::string first = hasher.add("abc").add(std::int64_t{7}).hex_digest();
    const std::string second = hasher.add("abc").add(std::int64_t{7}).hex_digest();
    CHECK_EQ(first, second);
    // With nothing added since the reset, the digest is SHA-256 of no bytes.
    CHECK_EQ(hasher.hex_digest(),
             "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

OPWEAVE_TEST(key_hasher_digest_is_64_lower_hex) {
    const std::string digest = KeyHasher{}.add("anything").hex_digest();
    CHECK_EQ(digest.size(), std::size_t{64});
    CHECK(is_lower_hex(digest));
}

// Pinned encodings. Each expected value is hashlib.sha256 of bytes built by
// hand in python3, with s(b) = b's' + struct.pack('<Q', len(b)) + b.

OPWEAVE_TEST(key_hasher_pinned_string_then_int) {
    // s(b'abc') + b'i' + struct.pack('<Q', 8) + struct.pack('<q', 7)
    CHECK_EQ(KeyHasher{}.add("abc").add(std::int64_t{7}).hex_digest(),
             "8f1f076d232ab015a10a441330ad652095edfc0b7fd490430d7e0abec0ecf93c");
}

OPWEAVE_TEST(key_hasher_pinned_negative_int) {
    // b'i' + struct.pack('<Q', 8) + struct.pack('<q', -1)
    CHECK_EQ(KeyHasher{}.add(std::int64_t{-1}).hex_digest(),
             "61292111452091fad1e109034f11d4160b0788b2a90efa38284460a6b0a6813b");
}

OPWEAVE_TEST(key_hasher_pinned_list) {
    // b'l' + struct.pack('<Q', 2) + s(b'-I') + s(b'-O2')
    CHECK_EQ(KeyHasher{}.add(std::vector<std::string>{"-I", "-O2"}).hex_digest(),
             "7e4aab178d0a751fc9201ee057f28890f2f596627261802212186b6827240c0d");
    // b'l' + struct.pack('<Q', 0)
    CHECK_EQ(KeyHasher{}.add(std::vector<std::string>{}).hex_digest(),
             "9a87cc3076dc0da4df27eb28fb2a51793333aff1d678ed34602edebbedf61d0e");
}

OPWEAVE_TEST(key_hasher_pinned_named_field) {
    // b'n' + struct.pack('<Q', 1) + b'a' + s(b'bc')
    CHECK_EQ(KeyHasher{}.add("a", "bc").hex_digest(),
             "49d490769f13f24142ec0d66b3c06dfb64f591b6699b90bd35424c19634cd5c1");
}

// Where the CPU has the SHA extensions, every test above ran them; these run
// the portable code too, and compare the two on messages of many lengths.
OPWEAVE_TEST(sha256_portable_and_accelerated_agree) {
    std::string message;
    std::uint32_t seed = 12345;
    std::vector<std::string> accelerated;
    for (std::size_t length = 0; length < 700; length += 7) {
        while (message.size() < length) {
            seed = seed * 1664525u + 1013904223u;
            message.push_back(static_cast<char>(seed >> 24));
        }
        accelerated.push_back(hex_of(message));
    }
    opweave::hash::sha256_x86_force_portable(true);
    CHECK_EQ(hex_of("abc"),
             std::string("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"));
    std::size_t index = 0;
    for (std::size_t length = 0; length < 700; length += 7, ++index) {
        CHECK_EQ(hex_of(message.substr(0, length)), accelerated[index]);
    }
    opweave::hash::sha256_x86_force_portable(false);
}

OPWEAVE_TEST(named_fields_are_hashed_and_shown_in_one_pass) {
    KeyHasher hasher;
    hasher.add("layout", "3")
        .add("opt_level", std::int64_t{2})
        .add("flags", std::vector<std::string>{"-O2", "-DX=1"})
        .add("compiler", "g++\nversion 12")
        .add("source", std::string(KeyHasher::k_shown_bytes + 1, 'x'));
    CHECK_EQ(hasher.text(), std::string("layout: 3\nopt_level: 2\nflags: -O2 -DX=1\n"
                                        "compiler:\n  g++\n  version 12\nsource: <4097 bytes>\n"));
    const std::string key = hasher.hex_digest();
    CHECK(hasher.text().empty());  // reset with the digest

    // The name is part of the key; a named integer is not the named text.
    CHECK(KeyHasher().add("opt_level", std::int64_t{2}).hex_digest() !=
          KeyHasher().add("opt_level", "2").hex_digest());
    CHECK(KeyHasher().add("a", std::vector<std::string>{"x"}).hex_digest() !=
          KeyHasher().add("b", std::vector<std::string>{"x"}).hex_digest());
    // A value not shown whole still counts whole.
    std::string other(KeyHasher::k_shown_bytes + 1, 'x');
    other.back() = 'y';
    CHECK(KeyHasher().add("source", other).hex_digest() !=
          KeyHasher().add("source", std::string(KeyHasher::k_shown_bytes + 1, 'x')).hex_digest());
    CHECK_EQ(key.size(), std::size_t{64});
}
