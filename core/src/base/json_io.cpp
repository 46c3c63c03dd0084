// Numbers written one way in every MixLab document, format versions, and JsonReader: the
// strict reading of logs, experiment files and explain output.
#include "mixlab/json_io.h"

#include "base/json_util.h"
#include "mixlab/error.h"

#include <nlohmann/json.hpp>

#include <charconv>
#include <cmath>
#include <limits>

namespace mixlab {

nlohmann::ordered_json json_number(float value)
{
    if (!std::isfinite(value)) return nullptr;
    char buf[32];
    const auto r = std::to_chars(buf, buf + sizeof buf, value);
    double d = 0;
    std::from_chars(buf, r.ptr, d);
    return float(d) == value ? d : double(value);
}

nlohmann::ordered_json json_number(double value)
{
    if (!std::isfinite(value)) return nullptr;
    return value;
}

std::optional<int> format_version(std::string_view format, std::string_view family)
{
    if (format.substr(0, family.size()) != family) return std::nullopt;
    const std::string_view n = format.substr(family.size());
    int version = 0;
    const auto r = std::from_chars(n.data(), n.data() + n.size(), version);
    // Written as MixLab writes it: "1", never "01" or "+1".
    if (r.ec != std::errc() || version < 1 || n != std::to_string(version)) return std::nullopt;
    return version;
}

JsonReader::JsonReader(const nlohmann::json& value, std::string where, std::string name)
    : m_value(&value), m_where(std::move(where)), m_name(std::move(name))
{}

void JsonReader::fail(const std::string& message) const
{
    throw InputError(m_where.empty() ? message : m_where + ": " + message);
}

void JsonReader::fail_type(std::string_view want) const
{
    const std::string subject = m_name.empty() ? std::string() : m_name + " ";
    fail(subject + "must be " + std::string(want) + ", got " + json_util::shown(*m_value));
}

bool JsonReader::is_null() const { return m_value->is_null(); }

std::string JsonReader::string() const
{
    if (!m_value->is_string()) fail_type("a string");
    return m_value->get<std::string>();
}

bool JsonReader::boolean() const
{
    if (!m_value->is_boolean()) fail_type("true or false");
    return m_value->get<bool>();
}

std::int64_t JsonReader::int64() const
{
    if (!m_value->is_number_integer() ||
        (m_value->is_number_unsigned() &&
         m_value->get<std::uint64_t>() > std::uint64_t(std::numeric_limits<std::int64_t>::max())))
        fail_type("an integer");
    return m_value->get<std::int64_t>();
}

int JsonReader::int32() const
{
    const std::int64_t v = m_value->is_number_integer() ? int64() : 0;
    if (!m_value->is_number_integer() || v < std::numeric_limits<int>::min() ||
        v > std::numeric_limits<int>::max())
        fail_type("an integer between " + std::to_string(std::numeric_limits<int>::min()) +
                  " and " + std::to_string(std::numeric_limits<int>::max()));
    return int(v);
}

double JsonReader::number() const
{
    if (m_value->is_null()) return std::numeric_limits<double>::quiet_NaN();
    if (!m_value->is_number()) fail_type("a number or null");
    return m_value->get<double>();
}

JsonReader JsonReader::as_object() const
{
    if (!m_value->is_object()) fail_type("an object");
    return *this;
}

JsonReader JsonReader::at(std::string_view key) const
{
    as_object();
    const auto it = m_value->find(key);
    if (it == m_value->end()) fail(json_util::quoted(key) + " is missing");
    return JsonReader(*it, m_where, json_util::quoted(key));
}

std::optional<JsonReader> JsonReader::find(std::string_view key) const
{
    as_object();
    const auto it = m_value->find(key);
    if (it == m_value->end() || it->is_null()) return std::nullopt;
    return JsonReader(*it, m_where, json_util::quoted(key));
}

JsonReader JsonReader::object(std::string_view key) const
{
    const JsonReader field = at(key);
    field.as_object();
    std::string where = m_where;
    if (!where.empty()) where += ' ';
    where += key;
    return JsonReader(*field.m_value, std::move(where));
}

JsonReader JsonReader::array(std::string_view key) const
{
    const JsonReader field = at(key);
    if (!field.m_value->is_array()) field.fail_type("an array");
    return field;
}

std::size_t JsonReader::size() const
{
    if (!m_value->is_array()) fail_type("an array");
    return m_value->size();
}

JsonReader JsonReader::element(std::size_t i, std::string_view noun) const
{
    size();
    std::string where = m_where.empty() ? std::string() : m_where + " ";
    where += std::string(noun) + " " + std::to_string(i + 1);
    return JsonReader((*m_value)[i], std::move(where));
}

JsonReader JsonReader::cell(std::size_t i, std::string name) const
{
    size();
    return JsonReader((*m_value)[i], m_where, std::move(name));
}

} // namespace mixlab
