// The engine's names and numbers as the app writes them: its enum names ("mixed_fp16",
// "relu"), which the engine hands out as string_views, and step times in milliseconds.
#pragma once
#include "mixlab/policy.h"

#include <QString>

#include <string_view>

// An engine name (policy_name, activation_name, layer_type_name, ...) as a QString. The
// view's size counts: it need not end with a NUL.
QString fromView(std::string_view s);
// "fp32", "mixed_fp16", ...
QString policyText(mixlab::Policy p);
// A step time with about four significant digits: "0.532", "12.35", "123.4".
QString msText(double ms);
