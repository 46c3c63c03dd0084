// What the CUDA backend's convolutions really ran, for logs, tests and `mixlab-cli
// check`: one entry per (geometry, dtype, math) plan. Plain C++ (no CUDA headers).
#pragma once
#include "mixlab/backend.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mixlab::cuda {

struct ConvPlanRecord {
    ConvGeometry geometry;
    DType dtype = DType::F32;
    MathMode math = MathMode::Pedantic;
    ConvPlanInfo info;
    bool timed = false;                    // chosen by timing cuDNN's candidates (FindEx)
    bool backward_data_as_forward = false; // backward data as a forward conv on flipped weights
    float forward_ms = 0, backward_data_ms = 0, backward_filter_ms = 0; // when timed
    std::int64_t calls = 0; // forward + backward calls run with this plan
};

// Empty for a backend that is not the CUDA one.
std::vector<ConvPlanRecord> conv_plans(const Backend& backend);
// "conv 128x32x32x64 -> 64 3x3/1 pad 1 f16 reduced: fwd implicit_precomp_gemm
// (tensor cores) 0.052 ms, ..." (one line).
std::string describe(const ConvPlanRecord& p);

} // namespace mixlab::cuda
