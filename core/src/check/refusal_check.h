// `mixlab-cli check`'s refusal checks: calls outside an op's contract, which both backends
// must refuse before running anything, in the same words.
#pragma once
#include "mixlab/backend_check.h"

namespace mixlab {

// Each call once on each backend; names start "refuses/".
std::vector<CheckResult> run_refusal_checks(Backend& reference, Backend& candidate,
                                            std::uint64_t seed, const std::string& filter);

} // namespace mixlab
