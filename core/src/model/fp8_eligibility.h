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

// A layer's in and out must be a multiple of this: the fp8 GEMMs write bfloat16 Y
// (batch x out) and dX (batch x in) and float32 dW (out x in), and we keep every output
// row on a 16-byte boundary, the tensor-core rule of the 16-bit GEMMs (cuBLASLt's fp8
// GEMMs were run with n = 1000 and 3000, not with widths off 8). k needs no rule: fp8_quantize pads the
// operands' rows to a multiple of 16 (mixlab/backend.h's fp8_padded), the batch's too.
inline constexpr int k_fp8_width_multiple = 8;

// Why the layer stays out of fp8, or "" when it runs in fp8. `dtype` is what the layer
// computes in (bfloat16 under mixed_fp8 unless "dtype": "float32"); in and out are the
// widths it runs at (a padded input's stored width).
std::string fp8_ineligibility(const LayerSpec& spec, DType dtype, std::int64_t in,
                              std::int64_t out);

// The same for a dense layer of a walked graph (explain): its dtype under mixed_fp8 from
// the spec, its input width as stored (`stored_in`, the feeder's padded width or 0).
std::string fp8_ineligibility(const GraphLayer& layer, std::int64_t stored_in);

} // namespace mixlab
