// `mixlab-cli check`'s refusal checks: calls outside an op's contract, which both backends
// must refuse before running anything, in the same words.
#pragma once
#include "mixlab/backend_check.h"

#include <optional>
#include <string>

namespace mixlab {

// The words a backend refused a call with (its Error's text after "<name> backend: "), or
// nothing where the call threw nothing: no wording can pass for a call that ran.
using Refusal = std::optional<std::string>;

// Why a candidate's answer to a bad call fails its check, given the reference's: empty
// when both refused it in the same words. The check's one rule, apart for its tests.
std::string refusal_disagreement(const Refusal& reference, const Refusal& candidate);

// Each call once on each backend; names start "refuses/".
std::vector<CheckResult> run_refusal_checks(Backend& reference, Backend& candidate,
                                            std::uint64_t seed, const std::string& filter);

} // namespace mixlab
