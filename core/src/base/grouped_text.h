// Whole numbers with thousands separators, 1234567 -> "1,234,567": counts and limits in
// reports and messages read at a glance.
#pragma once
#include <cstdint>
#include <string>

namespace mixlab {

inline std::string grouped_text(std::int64_t v)
{
    std::string digits = std::to_string(v < 0 ? -v : v), out;
    for (std::size_t i = 0; i < digits.size(); ++i) {
        if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
        out += digits[i];
    }
    return v < 0 ? "-" + out : out;
}

} // namespace mixlab
