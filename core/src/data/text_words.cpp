// TextWordReader: UTF-8 decoding, Python's whitespace and line ends, and the messages
// that name where a file stops being text.
#include "data/text_words.h"

#include "mixlab/error.h"

#include <cstdio>

namespace mixlab::data {

namespace {

// Python's str.isspace() code points, which str.split() separates words at: ASCII
// whitespace, the information separators 0x1C-0x1F, NEL, no-break and the other Unicode
// spaces. Line ends (\n, \r) are handled before this is asked.
bool is_python_space(std::uint32_t c)
{
    if (c < 0x80) return c == ' ' || (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x1F);
    return c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 ||
           c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

} // namespace

TextWordReader::TextWordReader(const std::vector<std::uint8_t>& bytes, std::string file,
                               std::int64_t max_line_bytes)
    : m_data(bytes.data()), m_size(bytes.size()), m_file(std::move(file)),
      m_max_line_bytes(max_line_bytes)
{}

void TextWordReader::fail(const std::string& problem, std::size_t offset) const
{
    throw DataError(m_file + " is not a text file: " + problem + " on line " +
                    std::to_string(m_line) + " (byte " + std::to_string(offset) +
                    "); a corpus split must be UTF-8 text");
}

void TextWordReader::check_line_length() const
{
    if (std::int64_t(m_pos - m_line_start) > m_max_line_bytes)
        throw DataError(m_file + ": line " + std::to_string(m_line) + " is longer than " +
                        std::to_string(m_max_line_bytes) + " bytes (" +
                        std::to_string(m_max_line_bytes >> 20) +
                        " MiB), the limit for one line of a corpus; is it text with line breaks?");
}

std::uint32_t TextWordReader::decode(int& length) const
{
    const std::uint8_t b0 = m_data[m_pos];
    if (b0 == 0) fail("a NUL byte", m_pos);
    if (b0 < 0x80) {
        length = 1;
        return b0;
    }
    std::uint32_t c = 0, min = 0;
    if ((b0 & 0xE0) == 0xC0) {
        length = 2, c = b0 & 0x1F, min = 0x80;
    } else if ((b0 & 0xF0) == 0xE0) {
        length = 3, c = b0 & 0x0F, min = 0x800;
    } else if ((b0 & 0xF8) == 0xF0) {
        length = 4, c = b0 & 0x07, min = 0x10000;
    } else {
        char hex[8];
        std::snprintf(hex, sizeof hex, "0x%02X", b0);
        fail(std::string("invalid UTF-8 byte ") + hex, m_pos);
    }
    if (m_pos + std::size_t(length) > m_size)
        fail("a UTF-8 sequence cut off by the file's end", m_pos);
    for (int i = 1; i < length; ++i) {
        const std::uint8_t b = m_data[m_pos + std::size_t(i)];
        if ((b & 0xC0) != 0x80) fail("an invalid UTF-8 sequence", m_pos);
        c = (c << 6) | (b & 0x3F);
    }
    // Overlong forms, UTF-16 surrogates and values past U+10FFFF are not UTF-8 either.
    if (c < min || (c >= 0xD800 && c <= 0xDFFF) || c > 0x10FFFF)
        fail("an invalid UTF-8 sequence", m_pos);
    return c;
}

TextWordReader::Item TextWordReader::next(std::string_view& word)
{
    while (m_pos < m_size) {
        const std::uint8_t b = m_data[m_pos];
        if (b == '\n' || b == '\r') {
            m_pos += (b == '\r' && m_pos + 1 < m_size && m_data[m_pos + 1] == '\n') ? 2 : 1;
            m_line_start = m_pos;
            m_line_open = false;
            ++m_line;
            return Item::LineEnd;
        }
        m_line_open = true;
        int length = 1;
        if (is_python_space(decode(length))) {
            m_pos += std::size_t(length);
            check_line_length();
            continue;
        }
        const std::size_t start = m_pos;
        m_pos += std::size_t(length);
        while (m_pos < m_size && m_data[m_pos] != '\n' && m_data[m_pos] != '\r') {
            const std::uint32_t c = decode(length);
            if (is_python_space(c)) break;
            m_pos += std::size_t(length);
        }
        check_line_length();
        word = std::string_view(reinterpret_cast<const char*>(m_data) + start, m_pos - start);
        return Item::Word;
    }
    if (m_line_open) {
        m_line_open = false;
        return Item::LineEnd;
    }
    return Item::End;
}

} // namespace mixlab::data
