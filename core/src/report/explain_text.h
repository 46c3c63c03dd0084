// What every explain rule file writes its findings with: printf-style sentences (a
// finding's numbers are formatted where they are said) and one Explanation.
#pragma once
#include "mixlab/explain.h"

#include <cstdarg>
#include <cstdio>
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
