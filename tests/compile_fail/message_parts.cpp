// validate::require's message parts that must not compile (backend_validate.h's
// static_asserts): a bool would print as 0 or 1 and a char as its code, both likelier a
// mistake than intent. tests/CMakeLists.txt compiles this file once per case; a refused
// case passes only on its static_assert's own words, so a failure for any other reason
// (a missing include, a renamed function) fails the test. MIXLAB_CASE_ACCEPTED, the
// control, must compile.
#include "backends/backend_validate.h"

void check_part(bool ok, char c)
{
#if defined(MIXLAB_CASE_BOOL)
    mixlab::validate::require(ok, "cpu", "op", "flag ", ok);
#elif defined(MIXLAB_CASE_CHAR)
    mixlab::validate::require(ok, "cpu", "op", "letter ", c);
#elif defined(MIXLAB_CASE_ACCEPTED)
    mixlab::validate::require(ok, "cpu", "op", "flag ", ok ? "true" : "false", ", code ", int(c));
#else
#error "define one of MIXLAB_CASE_BOOL, MIXLAB_CASE_CHAR, MIXLAB_CASE_ACCEPTED"
#endif
}
