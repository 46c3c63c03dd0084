// What the model-spec and run-config readers share: reading a JSON file, parsing it into
// a versioned object ("format": "mixlab-…/N"), and the small pieces of their error text.
#pragma once
#include <nlohmann/json.hpp>

#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mixlab::json_util {

// One kind of MixLab JSON document, as its messages name it.
struct DocumentKind {
    std::string_view noun;         // "model spec": "the model spec has no \"format\""
    std::string_view file_noun;    // "model file": "model file \"x.json\" does not exist"
    std::string_view format;       // "mixlab-model/1"
    std::string_view example;      // what follows "format" in the "must be an object like" hint
    std::string_view other_noun;   // the document it is most often confused with
    std::string_view other_family; // that document's format prefix, "mixlab-run/"
    bool spec_errors;              // throw SpecError rather than InputError
};

// A JSON value as the user wrote it, shortened so one message stays one line.
std::string shown(const nlohmann::json& v);

// `text` with every byte that is not part of well-formed UTF-8 written as \xNN, so a
// message quoting a damaged file stays valid text (dialogs, JSON logs).
std::string printable_utf8(std::string_view text);

// A JSON library error as one line for the user: its "[json.exception...] " tag dropped,
// the line and column kept, bytes that are not UTF-8 written as \xNN.
std::string json_error_text(const std::exception& e);

// "; did you mean "units"?" when one known word is a small typo away, else "".
std::string did_you_mean(std::string_view word, const std::vector<std::string_view>& known);

// The word in double quotes, as messages name a field: "units".
std::string quoted(std::string_view word);

// "a, b, c".
std::string join(const std::vector<std::string_view>& words);

// The first key of `object` that is not in `known`.
std::optional<std::string> unknown_field(const nlohmann::json& object,
                                         const std::vector<std::string_view>& known);

// The whole of a file's text; InputError when it is missing, a directory, unreadable or
// blank, naming it as `kind.file_noun`.
std::string read_document_file(const std::string& path, const DocumentKind& kind);

// Parses text into a JSON object whose "format" is kind.format; the error (SpecError or
// InputError, per kind) says what is wrong: bad JSON with its line and column, not an
// object, no or wrong format, a newer version, or the other kind of document. With
// `version`, older versions of the format are read too and *version says which it is.
nlohmann::json parse_document(std::string_view text, const DocumentKind& kind,
                              int* version = nullptr);
// The same checks of a document already parsed (one held inside another).
void check_document(const nlohmann::json& doc, const DocumentKind& kind, int* version = nullptr);

} // namespace mixlab::json_util
