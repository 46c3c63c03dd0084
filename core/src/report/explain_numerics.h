// The explain rules that read a run's numerics samples (RunFacts::numerics): whether fp16
// needs loss scaling for this run's gradients, and which layer's updates 16-bit weights
// lose. Part of explain(); private to the engine.
#pragma once
#include "mixlab/explain.h"

#include <vector>

namespace mixlab {

void explain_numerics(const std::vector<RunFacts>& group, Reader reader,
                      std::vector<Explanation>& out);

} // namespace mixlab
