// The current UTC time as text in a strftime format: cache entries and reports stamp
// when they were made.
#pragma once
#include <ctime>
#include <string>

namespace mixlab {

inline std::string utc_now_text(const char* strftime_format)
{
    const std::time_t now = std::time(nullptr);
    std::tm tm{};
    gmtime_r(&now, &tm);
    char text[64];
    std::strftime(text, sizeof text, strftime_format, &tm);
    return text;
}

} // namespace mixlab
