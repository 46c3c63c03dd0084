// Reading a text file's words as Python's str.split() sees them, line by line, with the
// checks that tell a text file from a binary one (text_corpus.cpp's loader uses it).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mixlab::data {

// Walks UTF-8 bytes: words separated by Unicode whitespace (str.isspace()'s set), and
// line ends at \n, \r\n or \r (Python's universal newlines); a last line without a line
// break still ends. Throws DataError naming `file`, the line and the byte offset on a
// NUL byte, invalid UTF-8, or a line longer than `max_line_bytes`.
class TextWordReader {
public:
    enum class Item { Word, LineEnd, End };

    TextWordReader(const std::vector<std::uint8_t>& bytes, std::string file,
                   std::int64_t max_line_bytes);
    // The next word (its bytes in `word`, valid while the bytes live), line end, or End.
    Item next(std::string_view& word);
    std::int64_t line() const { return m_line; } // 1-based number of the current line

private:
    // The code point at m_pos and its length in bytes; throws on invalid UTF-8.
    std::uint32_t decode(int& length) const;
    [[noreturn]] void fail(const std::string& problem, std::size_t offset) const;
    void check_line_length() const;

    const std::uint8_t* m_data;
    std::size_t m_size, m_pos = 0, m_line_start = 0;
    std::string m_file;
    std::int64_t m_max_line_bytes, m_line = 1;
    bool m_line_open = false; // bytes seen since the last line end
};

} // namespace mixlab::data
