// Which dense layers run their GEMMs in fp8 under mixed_fp8, and why a layer does not:
// one rule for the dense node that decides (dense.cpp) and the explain rule that tells the
// user (explain_fp8.cpp), so the two can never disagree.
#pragma once
#include "mixlab/dtype.h"
#include "mixlab/graph.h"
#include "mixlab/model_spec.h"

#include <cstdint>
#include <string>

namespace mixlab {

// Hopper's fp8 GEMMs need k, and the leading dimensions, a multiple of this: the forward
// GEMM reads k = in, dX k = out, dW k = the batch's rows, so all three must be.
inline constexpr int k_fp8_multiple = 16;

// Why the layer stays out of fp8, or "" when it runs in fp8. `dtype` is what the layer
// computes in (bfloat16 under mixed_fp8 unless "dtype": "float32"); in and out are the
// widths it runs at (a padded input's stored width); rows the batch, or batch x bptt for a
// sequence.
std::string fp8_ineligibility(const LayerSpec& spec, DType dtype, std::int64_t in, std::int64_t out,
                              std::int64_t rows, bool sequence);

// The same for a dense layer of a walked graph (explain): its dtype under mixed_fp8 from
// the spec, its input width as stored (`stored_in`, the feeder's padded width or 0).
std::string fp8_ineligibility(const GraphLayer& layer, std::int64_t stored_in, std::int64_t rows,
                              bool sequence);

} // namespace mixlab
