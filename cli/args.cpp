// ArgParser: option declarations, parsing, --help text and validated numbers.
#include "args.h"

#include "mixlab/error.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace mixlab::cli {
namespace {

std::string quoted(std::string_view s) { return "'" + std::string(s) + "'"; }

std::string range_text(double min, double max)
{
    auto fmt = [](double v) {
        char buf[32];
        const auto r = std::to_chars(buf, buf + sizeof buf, v);
        return std::string(buf, r.ptr);
    };
    if (max == std::numeric_limits<double>::max()) return "at least " + fmt(min);
    return "between " + fmt(min) + " and " + fmt(max);
}

} // namespace

ArgParser::ArgParser(std::string usage, std::string description)
    : m_usage(std::move(usage)), m_description(std::move(description))
{}

void ArgParser::add_option(const std::string& name, const std::string& value_name,
                           const std::string& help)
{
    m_specs.push_back(Spec{name, value_name, help, true});
}

void ArgParser::add_flag(const std::string& name, const std::string& help)
{
    m_specs.push_back(Spec{name, "", help, false});
}

const ArgParser::Spec* ArgParser::find(std::string_view name) const
{
    for (const Spec& s : m_specs)
        if (s.name == name) return &s;
    return nullptr;
}

const ArgParser::Spec& ArgParser::declared(const std::string& name) const
{
    const Spec* s = find(name);
    // A typo in our own code, not in the user's input.
    if (!s) throw std::logic_error("ArgParser: option " + name + " was never declared");
    return *s;
}

std::string ArgParser::valid_options() const
{
    std::string list;
    for (const Spec& s : m_specs) list += (list.empty() ? "" : ", ") + s.name;
    return list + (list.empty() ? "" : ", ") + "--help";
}

void ArgParser::parse(int argc, char** argv)
{
    std::vector<std::string> args;
    for (int i = 1; i < argc; ++i) args.emplace_back(argv[i]);
    parse(args);
}

void ArgParser::accept_positional(const std::string& value_name) { m_positional_name = value_name; }

void ArgParser::add_short(char letter, const std::string& name)
{
    if (!declared(name).takes_value)
        throw std::logic_error("ArgParser: -" + std::string(1, letter) + " for a flag");
    m_shorts[letter] = name;
}

void ArgParser::parse(const std::vector<std::string>& given)
{
    // Short forms first: "-o FILE" is "--output FILE", "-oFILE" is "--output=FILE".
    std::vector<std::string> args;
    for (const std::string& arg : given) {
        const auto s = arg.size() >= 2 && arg[0] == '-' && arg[1] != '-' ? m_shorts.find(arg[1])
                                                                         : m_shorts.end();
        if (s == m_shorts.end())
            args.push_back(arg);
        else if (arg.size() == 2)
            args.push_back(s->second);
        else
            args.push_back(s->second + "=" + arg.substr(2));
    }
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string& arg = args[i];
        if (arg == "--help" || arg == "-h") {
            m_help = true;
            continue;
        }
        const bool option = arg.size() >= 3 && arg.compare(0, 2, "--") == 0;
        if (!option && !m_positional_name.empty() && !m_positional && !arg.empty() &&
            arg[0] != '-') {
            m_positional = arg;
            continue;
        }
        if (!option && m_positional)
            throw InputError("unexpected argument " + quoted(arg) + "; one " + m_positional_name +
                             " is given already (" + quoted(*m_positional) + ")");
        if (!option)
            throw InputError("unexpected argument " + quoted(arg) +
                             "; options start with -- (valid options: " + valid_options() + ")");
        const auto eq = arg.find('=');
        const std::string name = arg.substr(0, eq);
        const Spec* spec = find(name);
        if (!spec)
            throw InputError("unknown option " + quoted(name) +
                             "; valid options: " + valid_options());
        if (m_values.count(name)) throw InputError("option " + name + " is given more than once");
        std::string value;
        if (spec->takes_value) {
            if (eq != std::string::npos) {
                value = arg.substr(eq + 1);
            } else {
                // "--batch --epochs 3" is a forgotten value, not a batch named "--epochs".
                if (i + 1 >= args.size() || args[i + 1].compare(0, 2, "--") == 0)
                    throw InputError("option " + name + " needs a value (" + name + " " +
                                     spec->value_name + ")");
                value = args[++i];
            }
            if (value.empty())
                throw InputError("option " + name + " needs a value (" + name + " " +
                                 spec->value_name + "), got an empty one");
        } else if (eq != std::string::npos) {
            throw InputError("option " + name + " is a flag and takes no value");
        }
        m_values[name] = value;
    }
}

std::string ArgParser::help_text() const
{
    // Help starts in a column wide enough for most options; a longer one puts its help
    // on the next line rather than push every line to the right.
    constexpr std::size_t k_column = 24;
    std::string out = "usage: " + m_usage + "\n\n" + m_description + "\n\noptions:\n";
    auto line = [&](std::string left, const std::string& help) {
        if (left.size() > k_column) {
            out += "  " + left + "\n";
            left.clear();
        }
        left.resize(k_column, ' ');
        out += "  " + left + "  " + help + "\n";
    };
    for (const Spec& s : m_specs)
        line(s.takes_value ? s.name + " " + s.value_name : s.name, s.help);
    line("--help", "print this help and exit");
    return out;
}

bool ArgParser::has(const std::string& name) const
{
    declared(name);
    return m_values.count(name) != 0;
}

bool ArgParser::flag(const std::string& name) const { return has(name); }

std::optional<std::string> ArgParser::value(const std::string& name) const
{
    declared(name);
    const auto it = m_values.find(name);
    if (it == m_values.end()) return std::nullopt;
    return it->second;
}

std::string ArgParser::value_or(const std::string& name, const std::string& fallback) const
{
    return value(name).value_or(fallback);
}

std::optional<std::int64_t> ArgParser::integer(const std::string& name, std::int64_t min,
                                               std::int64_t max) const
{
    const auto v = value(name);
    if (!v) return std::nullopt;
    return parse_integer(name, *v, min, max);
}

std::optional<std::uint64_t> ArgParser::unsigned_integer(const std::string& name) const
{
    const auto v = value(name);
    if (!v) return std::nullopt;
    std::uint64_t out = 0;
    const char* end = v->data() + v->size();
    const auto r = std::from_chars(v->data(), end, out);
    if (r.ec == std::errc::result_out_of_range)
        throw InputError(name + " must be at most 18446744073709551615, got " + *v);
    if (r.ec != std::errc() || r.ptr != end)
        throw InputError(name + " expects a non-negative integer, got " + quoted(*v));
    return out;
}

std::optional<double> ArgParser::real(const std::string& name, double min, double max) const
{
    const auto v = value(name);
    if (!v) return std::nullopt;
    return parse_real(name, *v, min, max);
}

std::optional<std::string> ArgParser::choice(const std::string& name,
                                             const std::vector<std::string>& choices) const
{
    const auto v = value(name);
    if (!v) return std::nullopt;
    std::string list;
    for (const std::string& c : choices) {
        if (*v == c) return v;
        list += (list.empty() ? "" : ", ") + c;
    }
    throw InputError(name + " must be one of " + list + "; got " + quoted(*v));
}

std::int64_t parse_integer(std::string_view what, std::string_view text, std::int64_t min,
                           std::int64_t max)
{
    std::int64_t out = 0;
    const char* end = text.data() + text.size();
    const auto r = std::from_chars(text.data(), end, out);
    const std::string range =
        max == std::numeric_limits<std::int64_t>::max()
            ? "at least " + std::to_string(min)
            : "between " + std::to_string(min) + " and " + std::to_string(max);
    if (r.ec == std::errc::result_out_of_range)
        throw InputError(std::string(what) + " must be " + range + ", got " + std::string(text));
    if (r.ec != std::errc() || r.ptr != end)
        throw InputError(std::string(what) + " expects an integer, got " + quoted(text));
    if (out < min || out > max)
        throw InputError(std::string(what) + " must be " + range + ", got " + std::string(text));
    return out;
}

double parse_real(std::string_view what, std::string_view text, double min, double max)
{
    double out = 0;
    const char* end = text.data() + text.size();
    // from_chars accepts "nan" and "inf"; those are refused below as not finite.
    const auto r = std::from_chars(text.data(), end, out);
    if (r.ec == std::errc::result_out_of_range ||
        (r.ec == std::errc() && r.ptr == end && !std::isfinite(out)))
        throw InputError(std::string(what) + " must be a finite number, got " + quoted(text));
    if (r.ec != std::errc() || r.ptr != end)
        throw InputError(std::string(what) + " expects a number, got " + quoted(text));
    if (out < min || out > max)
        throw InputError(std::string(what) + " must be " + range_text(min, max) + ", got " +
                         std::string(text));
    return out;
}

std::vector<std::string> split_list(std::string_view what, std::string_view text)
{
    std::vector<std::string> items;
    std::size_t start = 0;
    while (true) {
        const auto comma = text.find(',', start);
        const std::string_view item = text.substr(
            start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
        if (item.empty())
            throw InputError(std::string(what) + ": empty item in " + quoted(text) +
                             " (expected a comma-separated list such as fp32,mixed_fp16)");
        items.emplace_back(item);
        if (comma == std::string_view::npos) break;
        start = comma + 1;
    }
    return items;
}

} // namespace mixlab::cli
