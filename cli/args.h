// A small command-line option parser for mixlab-cli: `--name value`, `--name=value` and
// flags; every mistake is an InputError that names the option (and the valid ones).
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mixlab::cli {

class ArgParser {
public:
    // usage: the line after "usage:", e.g. "mixlab-cli train --model FILE [options]".
    ArgParser(std::string usage, std::string description);

    // An option with a value; value_name is what --help shows ("N", "FILE").
    void add_option(const std::string& name, const std::string& value_name,
                    const std::string& help);
    void add_flag(const std::string& name, const std::string& help);
    // The command takes one argument that is not an option (a file: `import FILE`,
    // `numerics LOG.json`), read back with positional(); a second one is refused.
    void accept_positional(const std::string& value_name);
    // `-X VALUE` and `-XVALUE` as another way to write an option with a value (-o FILE).
    void add_short(char letter, const std::string& name);

    // args excludes the command name. `--help`/`-h` is always known. Throws InputError
    // for unknown options, missing values, values given to flags, repeated options and
    // positional arguments.
    void parse(const std::vector<std::string>& args);
    void parse(int argc, char** argv); // argv[0] is the command name, skipped

    bool help_requested() const { return m_help; }
    std::string help_text() const;

    bool has(const std::string& name) const; // given on the command line
    bool flag(const std::string& name) const;
    std::optional<std::string> value(const std::string& name) const;
    // The accept_positional() argument, when one was given.
    const std::optional<std::string>& positional() const { return m_positional; }
    std::string value_or(const std::string& name, const std::string& fallback) const;

    // Numbers, validated: an InputError names the option, what it got and the range.
    std::optional<std::int64_t> integer(const std::string& name, std::int64_t min,
                                        std::int64_t max) const;
    std::optional<std::uint64_t> unsigned_integer(const std::string& name) const;
    // Finite only; nan/inf are refused.
    std::optional<double> real(const std::string& name, double min, double max) const;
    // One of `choices`, compared exactly.
    std::optional<std::string> choice(const std::string& name,
                                      const std::vector<std::string>& choices) const;

private:
    struct Spec {
        std::string name, value_name, help;
        bool takes_value = true;
    };
    const Spec* find(std::string_view name) const;
    const Spec& declared(const std::string& name) const; // logic_error when undeclared
    std::string valid_options() const;

    std::string m_usage, m_description;
    std::vector<Spec> m_specs;
    std::map<std::string, std::string> m_values; // flags map to ""
    bool m_help = false;
    std::string m_positional_name; // empty: no positional argument taken
    std::optional<std::string> m_positional;
    std::map<char, std::string> m_shorts; // -o -> --output
};

// Number parsing shared by the parser and by compound values such as --input 32x32x3.
// `what` names the option in the message ("--batch").
std::int64_t parse_integer(std::string_view what, std::string_view text, std::int64_t min,
                           std::int64_t max);
double parse_real(std::string_view what, std::string_view text, double min, double max);

// "a,b,c" split at commas; empty items are an InputError naming `what`.
std::vector<std::string> split_list(std::string_view what, std::string_view text);

} // namespace mixlab::cli
