// The explain rules that read a run's numerics samples (RunFacts::numerics): whether fp16
// needs loss scaling for this run's gradients, which layer's updates 16-bit weights lose,
// and which layer's outputs come close to fp16's overflow. Part of explain(); private to
// the engine.
#pragma once
#include "mixlab/explain.h"

#include <vector>

namespace mixlab {

void explain_numerics(const std::vector<RunFacts>& group, Reader reader,
                      std::vector<Explanation>& out);

} // namespace mixlab
