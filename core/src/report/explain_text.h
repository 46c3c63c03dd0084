// What every explain rule file writes its findings with: printf-style sentences (a
// finding's numbers are formatted where they are said) and one Explanation.
#pragma once
#include "mixlab/explain.h"

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>

namespace mixlab::explain_text {

// Up to 640 characters: a sentence, not a paragraph.
inline std::string fmt(const char* format, ...) __attribute__((format(printf, 1, 2)));
inline std::string fmt(const char* format, ...)
{
    char buf[640];
    va_list args;
    va_start(args, format);
    std::vsnprintf(buf, sizeof buf, format, args);
    va_end(args);
    return buf;
}

// A share (0..1) as a percentage that never reads as all or nothing when it is not: a
// part of 99.8% is "99.8%", not "100%" (which would say no layer was left out), and one of
// 0.3% is "0.3%", not "0%". Whole percentages otherwise.
inline std::string share_percent(double share)
{
    const double p = 100.0 * share;
    for (int digits = 0; digits < 4; ++digits) {
        const std::string text = fmt("%.*f", digits, p);
        const double shown = std::strtod(text.c_str(), nullptr);
        if ((shown < 100.0 || p >= 100.0) && (shown > 0.0 || p <= 0.0)) return text + "%";
    }
    return fmt("%.3g%%", p);
}

inline Explanation make(std::string id, Explanation::Severity sev, int run, std::string sentence,
                        std::string suggestion = {})
{
    Explanation e;
    e.id = std::move(id);
    e.severity = sev;
    e.run = run;
    e.sentence = std::move(sentence);
    e.suggestion = std::move(suggestion);
    return e;
}

} // namespace mixlab::explain_text
