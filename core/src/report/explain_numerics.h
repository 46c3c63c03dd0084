// The explain rules that read a run's numerics samples (RunFacts::numerics): whether fp16
// needs loss scaling for this run's gradients (for an fp32 run also with a mixed_fp16 run's
// scale), which layer's updates fp16 weights lose and from which step, which layer's outputs
// come close to fp16's overflow, whether bf16 is safe for the model, each layer's fp8
// headroom, and what tf32 changes. Part of explain(); private to the engine.
#pragma once
#include "mixlab/explain.h"

#include <vector>

namespace mixlab {

void explain_numerics(const std::vector<RunFacts>& group, Reader reader,
                      std::vector<Explanation>& out);

} // namespace mixlab
