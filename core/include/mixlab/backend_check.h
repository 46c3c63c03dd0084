// Op-by-op comparison of a candidate backend (CUDA) against the CPU reference, in the
// manner of ggml's test-backend-ops: fresh seeded inputs on both, outputs poisoned with
// NaN first, per-dtype tolerances |got - ref| <= atol + rtol * |ref|.
#pragma once
#include "mixlab/backend.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mixlab {

struct CheckResult {
    std::string name; // e.g. "gemm/f16->f32/reduced/TN/37x19x53/bias_grad_a"
    bool passed = false;
    double max_abs_err = 0; // over every compared element
    double max_rel_err = 0; // over elements whose |ref| is above their atol
    std::string detail;     // the first failure, or a short summary
};

// Runs every check whose name contains `filter` (all when empty). Never throws for a
// failing op: an exception becomes a failed result with the message as detail.
std::vector<CheckResult> run_backend_checks(Backend& reference, Backend& candidate,
                                            std::uint64_t seed, const std::string& filter = "");

} // namespace mixlab
