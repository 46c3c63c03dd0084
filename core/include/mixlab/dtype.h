// Element types and the host-side rounding that emulates fp16/bf16/tf32 storage.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace mixlab {

// I16 holds the low halves of split fp32 masters (hd_math.h's split_master): raw
// 16-bit integers, never an operand of a layer. F8E4M3 / F8E5M2 hold mixed_fp8's scaled
// GEMM operands (Backend::fp8_quantize), never a layer's activations or parameters.
enum class DType : std::uint8_t { F32, F16, BF16, I32, U8, I16, F8E4M3, F8E5M2 };

std::string_view dtype_name(DType t); // "float32", "float16", "bfloat16", "int32", "uint8", "int16"
std::size_t dtype_size(DType t);      // bytes per element on the device
bool is_floating(DType t);            // F32, F16, BF16: what layers compute in
bool is_fp8(DType t);                 // F8E4M3, F8E5M2

// IEEE binary16 conversions, round to nearest even; overflow gives inf, tiny values
// become subnormals or zero exactly as on the GPU.
std::uint16_t float_to_half_bits(float f);
float half_bits_to_float(std::uint16_t h);
// bfloat16: the top 16 bits of a float, round to nearest even; NaN stays NaN.
std::uint16_t float_to_bf16_bits(float f);
float bf16_bits_to_float(std::uint16_t b);

// The value a float becomes when stored as type t (identity for F32).
float round_to(DType t, float f);
// round_to over a whole array in place: the CPU backend's storage emulation, written
// as tight per-dtype loops because it runs on every tensor of every emulated step.
void round_span(DType t, float* values, std::size_t n);
// TF32 operand rounding: 10 explicit mantissa bits, round to nearest (cuBLAS rounds
// tf32 operands to nearest; the CPU backend emulates that).
float round_to_tf32(float f);

} // namespace mixlab
