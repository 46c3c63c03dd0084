// `mixlab-cli check`'s fp8 op checks (mixed_fp8, issue 18): fp8_quantize, fp8_update_scales
// and GEMMs on fp8 operands, each run through the Backend interface on the reference and
// the candidate and compared (bit for bit where both compute the same function).
#pragma once
#include "mixlab/backend_check.h"

namespace mixlab {

// Names start "fp8_quantize/", "fp8_update_scales/" or "fp8_gemm/".
std::vector<CheckResult> run_fp8_checks(Backend& reference, Backend& candidate, std::uint64_t seed,
                                        const std::string& filter);

} // namespace mixlab
