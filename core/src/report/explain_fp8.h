// The explain rules of mixed_fp8 runs: which dense layers ran in fp8 and why the others
// did not (with the units that would put them in), what fp8 did to the layers' and the
// step's time against a mixed_bf16 run of the group, and to the test accuracy, and that
// the CPU only emulates it. Part of explain(); private to the engine.
#pragma once
#include "mixlab/explain.h"

#include <vector>

namespace mixlab {

void explain_fp8(const std::vector<RunFacts>& group, Reader reader, std::vector<Explanation>& out);

} // namespace mixlab
