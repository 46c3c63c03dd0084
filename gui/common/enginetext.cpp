// Engine names and step times as text; one definition, used by every part of the app.
#include "common/enginetext.h"

QString fromView(std::string_view s) { return QString::fromUtf8(s.data(), qsizetype(s.size())); }

QString policyText(mixlab::Policy p) { return fromView(mixlab::policy_name(p)); }

// Three decimals below 10 ms, two below 100, one above: the precision the step's own
// timing has, and a column of them lines up. (The profiling log line once wrote one
// decimal from 10 ms up: "12.3"; it reads "12.35" now, as the max-batch table did.)
QString msText(double ms) { return QString::number(ms, 'f', ms < 10 ? 3 : ms < 100 ? 2 : 1); }
