// What every JSON document MixLab writes shares (logs, experiment files, explain output):
// numbers written one way, a format's version read one way, and JsonReader, the strict
// reader whose messages say where in the file a field is missing or mistyped.
#pragma once
#include <nlohmann/json_fwd.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace mixlab {

// A float as the shortest decimal that reads back to it (0.3, not 0.30000001192092896),
// when reading that decimal as a double and narrowing gives the same float (nearly
// always); otherwise the float's exact double. Non-finite values are null: JSON has no
// NaN, and readers take null back as NaN.
nlohmann::ordered_json json_number(float value);
// A double as it is (printed shortest), or null when it is not finite.
nlohmann::ordered_json json_number(double value);

// The N of a format string "<family>N" ("mixlab-log/" and "mixlab-log/1" give 1), or
// none when `format` is not of the family or N is not a whole number from 1, written
// without a sign or leading zeros.
std::optional<int> format_version(std::string_view format, std::string_view family);

// One value of a document and where it sits, read strictly: a missing field, a value of
// the wrong type or a name nobody knows throws InputError saying where and what, e.g.
//   run 2 profile: "sum_of_phases_ms" must be a number or null, got "fast"
// Fields the reader does not ask for are ignored. The JSON must outlive the reader.
class JsonReader {
public:
    // `where` places the value for messages ("run 2"; empty for a document's root);
    // `name` is what the value is called there ("\"loss\""; empty for an element,
    // which its `where` names).
    explicit JsonReader(const nlohmann::json& value, std::string where = {}, std::string name = {});

    const nlohmann::json& json() const { return *m_value; }
    const std::string& where() const { return m_where; }
    const std::string& name() const { return m_name; }
    // Throws InputError("<where>: <message>").
    [[noreturn]] void fail(const std::string& message) const;
    // Throws InputError("<where>: <name> must be <want>, got <the value>").
    [[noreturn]] void fail_type(std::string_view want) const;

    // This value, which must be of the type asked for. number() takes null as NaN (the
    // writers' non-finite values); the integers must fit their type.
    bool is_null() const;
    std::string string() const;
    bool boolean() const;
    std::int64_t int64() const;
    int int32() const;
    double number() const;
    float number_float() const { return float(number()); }

    // A field of this value, which must be an object. at(): the field, which must be
    // there; find(): none when it is absent or null. object() also checks that the field
    // is an object and places its own fields under it ("run 2" -> "run 2 profile");
    // array() checks that it is an array.
    JsonReader at(std::string_view key) const;
    std::optional<JsonReader> find(std::string_view key) const;
    JsonReader object(std::string_view key) const;
    JsonReader array(std::string_view key) const;
    // This value as an object (a checked element, or a document's root).
    JsonReader as_object() const;

    // Elements of this value, which must be an array (array() checked it). element():
    // the i-th, placed as "<where> <noun> <i+1>"; cell(): the i-th under a name, at
    // this value's place (a table row's cells, named by their columns).
    std::size_t size() const;
    JsonReader element(std::size_t i, std::string_view noun) const;
    JsonReader cell(std::size_t i, std::string name) const;

private:
    const nlohmann::json* m_value;
    std::string m_where;
    std::string m_name;
};

} // namespace mixlab
