// Short names of the backend's enums, as check names and GEMM plan reports spell them
// ("gemm/f16->f32/reduced/TN/37x19x53/bias_grad_a").
#pragma once
#include "mixlab/backend.h"

namespace mixlab {

const char* dtype_short_name(DType t);  // "f32", "f16", "bf16", "i32", "u8"
const char* epilogue_name(Epilogue e);  // "none", "bias", "bias_relu", "bias_gelu", "bias_grad_a"
const char* math_mode_name(MathMode m); // "pedantic", "tf32", "reduced"

} // namespace mixlab
