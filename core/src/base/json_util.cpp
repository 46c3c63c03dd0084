// Shared reading of MixLab's JSON documents: file loading, parsing, the format check and
// the "did you mean" hints that make a typo's message point at the fix.
#include "base/json_util.h"

#include "mixlab/error.h"
#include "mixlab/json_io.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace mixlab::json_util {

using nlohmann::json;

namespace {

[[noreturn]] void fail(const DocumentKind& kind, const std::string& message)
{
    if (kind.spec_errors) throw SpecError(message);
    throw InputError(message);
}

std::size_t edit_distance(std::string_view a, std::string_view b)
{
    std::vector<std::size_t> row(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        std::size_t diag = row[0];
        row[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            const std::size_t up = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] != b[j - 1])});
            diag = up;
        }
    }
    return row[b.size()];
}

// Length of the well-formed UTF-8 sequence starting at text[i] (Unicode's table 3-7:
// no overlong forms, no surrogates, nothing past U+10FFFF), or 0 when there is none.
std::size_t utf8_sequence_length(std::string_view text, std::size_t i)
{
    const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[i + k]); };
    const unsigned char lead = byte(0);
    if (lead < 0x80) return 1;
    std::size_t n = 0;
    unsigned char lo = 0x80, hi = 0xBF; // the second byte's range
    if (lead >= 0xC2 && lead <= 0xDF) {
        n = 2;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
        n = 3;
        if (lead == 0xE0) lo = 0xA0;
        if (lead == 0xED) hi = 0x9F;
    } else if (lead >= 0xF0 && lead <= 0xF4) {
        n = 4;
        if (lead == 0xF0) lo = 0x90;
        if (lead == 0xF4) hi = 0x8F;
    } else {
        return 0;
    }
    if (i + n > text.size() || byte(1) < lo || byte(1) > hi) return 0;
    for (std::size_t k = 2; k < n; ++k)
        if ((byte(k) & 0xC0) != 0x80) return 0;
    return n;
}

// Accepts kind.format; with `version`, also the family's older versions, whose number
// it sets (kind.format's own when that is the one).
void check_format(const json& doc, const DocumentKind& kind, int* version)
{
    const std::string expected(kind.format);
    const std::string noun(kind.noun);
    if (!doc.contains("format"))
        fail(kind,
             "the " + noun + " has no \"format\"; start it with \"format\": \"" + expected + "\"");
    const json& f = doc.at("format");
    if (!f.is_string())
        fail(kind, "\"format\" must be the string \"" + expected + "\", got " + shown(f));
    const auto s = f.get<std::string>();
    // "mixlab-model/1" -> family "mixlab-model/", version 1.
    const std::string family = expected.substr(0, expected.find('/') + 1);
    const int ours = format_version(expected, family).value_or(1);
    if (const auto theirs = format_version(s, family)) {
        if (*theirs > ours)
            fail(kind, "the " + noun + " is format \"" + s +
                           "\", written by a newer MixLab; this version reads \"" + expected +
                           "\"");
        if (*theirs == ours || version) {
            if (version) *version = *theirs;
            return;
        }
    }
    if (s.rfind(kind.other_family, 0) == 0)
        fail(kind, "this is a " + std::string(kind.other_noun) + " (\"" + s + "\"), not a " + noun +
                       " (\"" + expected + "\")");
    fail(kind, "\"format\" must be \"" + expected + "\", got " + shown(f));
}

} // namespace

std::string shown(const json& v)
{
    std::string s = v.dump();
    if (s.size() > 48) {
        // Cut at the start of a character: half of a multibyte one would leave the
        // message (and any JSON log that quotes it) invalid UTF-8.
        std::size_t cut = 45;
        while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
        s = s.substr(0, cut) + "...";
    }
    return s;
}

std::string printable_utf8(std::string_view text)
{
    std::string out;
    out.reserve(text.size());
    for (std::size_t i = 0; i < text.size();) {
        if (const std::size_t n = utf8_sequence_length(text, i)) {
            out.append(text.substr(i, n));
            i += n;
        } else {
            static constexpr char k_hex[] = "0123456789ABCDEF";
            const auto b = static_cast<unsigned char>(text[i++]);
            out += "\\x";
            out += k_hex[b >> 4];
            out += k_hex[b & 0xF];
        }
    }
    return out;
}

// nlohmann's what() starts with "[json.exception.parse_error.101] "; the rest carries
// the line and column the user needs. It quotes the bytes it last read as they are,
// broken UTF-8 included.
std::string json_error_text(const std::exception& e)
{
    std::string s = printable_utf8(e.what());
    if (!s.empty() && s.front() == '[') {
        const auto close = s.find("] ");
        if (close != std::string::npos) s = s.substr(close + 2);
    }
    return s;
}

std::string did_you_mean(std::string_view word, const std::vector<std::string_view>& known)
{
    std::string_view best;
    std::size_t best_d = 3;
    for (auto k : known) {
        const std::size_t d = edit_distance(word, k);
        if (d < best_d) {
            best_d = d;
            best = k;
        }
    }
    return best.empty() ? std::string() : "; did you mean \"" + std::string(best) + "\"?";
}

std::string quoted(std::string_view word)
{
    // Appended, not "\"" + ...: GCC 12 warns (-Wrestrict) falsely on a prepended literal.
    std::string s(1, '"');
    s += word;
    s += '"';
    return s;
}

std::string join(const std::vector<std::string_view>& words)
{
    std::string out;
    for (auto w : words) {
        if (!out.empty()) out += ", ";
        out += w;
    }
    return out;
}

std::optional<std::string> unknown_field(const json& object,
                                         const std::vector<std::string_view>& known)
{
    for (const auto& item : object.items())
        if (std::find(known.begin(), known.end(), item.key()) == known.end()) return item.key();
    return std::nullopt;
}

std::string read_document_file(const std::string& path, const DocumentKind& kind)
{
    namespace fs = std::filesystem;
    const std::string what = std::string(kind.file_noun) + " \"" + path + "\"";
    std::error_code ec;
    const auto status = fs::status(path, ec);
    if (!fs::exists(status)) throw InputError(what + " does not exist");
    if (fs::is_directory(status)) throw InputError(what + " is a directory, not a JSON file");
    std::ifstream in(path, std::ios::binary);
    if (!in) throw InputError("cannot open " + what + ": " + std::strerror(errno));
    std::ostringstream text;
    text << in.rdbuf();
    if (in.bad()) throw InputError("cannot read " + what);
    std::string s = text.str();
    if (s.find_first_not_of(" \t\r\n") == std::string::npos) throw InputError(what + " is empty");
    return s;
}

json parse_document(std::string_view text, const DocumentKind& kind, int* version)
{
    json doc;
    try {
        doc = json::parse(text.begin(), text.end());
    } catch (const json::exception& e) {
        // Not only syntax errors: a number too large for a double (1e999) throws
        // out_of_range while parsing, and is just as much a broken file.
        fail(kind, "the " + std::string(kind.noun) + " is not valid JSON: " + json_error_text(e));
    }
    check_document(doc, kind, version);
    return doc;
}

void check_document(const json& doc, const DocumentKind& kind, int* version)
{
    if (!doc.is_object())
        fail(kind, "the " + std::string(kind.noun) + " must be a JSON object like {\"format\": \"" +
                       std::string(kind.format) + "\", " + std::string(kind.example) + "}, got " +
                       shown(doc));
    check_format(doc, kind, version);
}

} // namespace mixlab::json_util
