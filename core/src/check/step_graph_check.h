// `mixlab-cli check`'s whole-run checks of the recorded step: a training run replayed
// as a CUDA graph must give the very bits of the same run executed op by op.
#pragma once
#include "mixlab/backend_check.h"

namespace mixlab {

// Runs on `backend` alone (both runs of each pair on it); names start "step_graph/".
std::vector<CheckResult> run_step_graph_checks(Backend& backend, std::uint64_t seed,
                                               const std::string& filter);

} // namespace mixlab
