// opweave core: KeyHasher, which feeds typed, length-prefixed fields to
// SHA-256 so that distinct field sequences never share a byte stream.
#include "opweave/hash.hpp"

#include <algorithm>
#include <utility>

namespace opweave {

namespace {

constexpr char k_tag_string = 's';
constexpr char k_tag_int = 'i';
constexpr char k_tag_list = 'l';
constexpr char k_tag_named = 'n';

// Lengths and integers are written little-endian byte by byte so the key is
// the same on every host, whatever its native byte order.
std::array<std::uint8_t, 8> little_endian(std::uint64_t value) {
    std::array<std::uint8_t, 8> bytes{};
    for (std::size_t i = 0; i < bytes.size(); ++i) {
        bytes[i] = static_cast<std::uint8_t>(value >> (8 * i));
    }
    return bytes;
}

// The tag and the 8-byte length field that open every field. For a list the
// "length" is the element count, which is why this is separate from the
// payload: the list's payload is the element fields that follow.
void write_header(Sha256& sha, char tag, std::uint64_t length) {
    const auto tag_byte = static_cast<std::uint8_t>(tag);
    sha.update(&tag_byte, 1);
    const auto length_bytes = little_endian(length);
    sha.update(length_bytes.data(), length_bytes.size());
}

}  // namespace

void KeyHasher::add_tagged(char tag, const void* data, std::size_t size) {
    write_header(m_sha, tag, static_cast<std::uint64_t>(size));
    m_sha.update(data, size);
}

KeyHasher& KeyHasher::add(std::string_view text) {
    add_tagged(k_tag_string, text.data(), text.size());
    return *this;
}

KeyHasher& KeyHasher::add(std::int64_t number) {
    // Converting to unsigned is well defined (modulo 2^64) and yields exactly
    // the two's-complement bit pattern, negative values included.
    const auto payload = little_endian(static_cast<std::uint64_t>(number));
    add_tagged(k_tag_int, payload.data(), payload.size());
    return *this;
}

KeyHasher& KeyHasher::add(const std::vector<std::string>& list) {
    write_header(m_sha, k_tag_list, static_cast<std::uint64_t>(list.size()));
    for (const std::string& element : list) {
        add_tagged(k_tag_string, element.data(), element.size());
    }
    return *this;
}

void KeyHasher::add_name(std::string_view name) {
    add_tagged(k_tag_named, name.data(), name.size());
}

void KeyHasher::show(std::string_view name, std::string_view value) {
    m_text += name;
    m_text += ':';
    if (value.size() > k_shown_bytes) {
        m_text += " <" + std::to_string(value.size()) + " bytes>\n";
    } else if (value.find('\n') == std::string_view::npos) {
        m_text += ' ';
        m_text += value;
        m_text += '\n';
    } else {  // each line indented below the name
        m_text += '\n';
        std::size_t start = 0;
        while (start < value.size()) {
            const std::size_t end = std::min(value.find('\n', start), value.size());
            m_text += "  ";
            m_text += value.substr(start, end - start);
            m_text += '\n';
            start = end + 1;
        }
    }
}

KeyHasher& KeyHasher::add(std::string_view name, std::string_view value) {
    add_name(name);
    add(value);
    show(name, value);
    return *this;
}

KeyHasher& KeyHasher::add(std::string_view name, std::int64_t number) {
    add_name(name);
    add(number);
    show(name, std::to_string(number));
    return *this;
}

KeyHasher& KeyHasher::add(std::string_view name, const std::vector<std::string>& list) {
    add_name(name);
    add(list);
    std::string joined;
    for (const std::string& element : list) {
        joined += joined.empty() ? "" : " ";
        joined += element;
    }
    show(name, joined);
    return *this;
}

KeyedText KeyHasher::finish() {
    KeyedText out;
    out.text = std::move(m_text);
    out.key = hex_digest();
    return out;
}

std::string KeyHasher::hex_digest() {
    // Sha256::finish() resets the underlying state, which resets this hasher.
    m_text.clear();
    return to_hex(m_sha.finish());
}

}  // namespace opweave
