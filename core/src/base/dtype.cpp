// Element types and bit-exact host emulation of fp16 / bf16 / tf32 rounding, so the CPU
// backend stores the same values the GPU would.
#include "mixlab/dtype.h"

#include "base/hd_math.h"

#include <bit>
#include <cmath>
#include <cstring>

namespace mixlab {

std::string_view dtype_name(DType t)
{
    switch (t) {
    case DType::F32: return "float32";
    case DType::F16: return "float16";
    case DType::BF16: return "bfloat16";
    case DType::I32: return "int32";
    case DType::U8: return "uint8";
    case DType::I16: return "int16";
    case DType::F8E4M3: return "float8_e4m3fn"; // PyTorch's names
    case DType::F8E5M2: return "float8_e5m2";
    }
    return "unknown";
}

std::size_t dtype_size(DType t)
{
    switch (t) {
    case DType::F32: return 4;
    case DType::F16: return 2;
    case DType::BF16: return 2;
    case DType::I32: return 4;
    case DType::U8: return 1;
    case DType::I16: return 2;
    case DType::F8E4M3:
    case DType::F8E5M2: return 1;
    }
    return 0;
}

bool is_floating(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16; }
bool is_fp8(DType t) { return t == DType::F8E4M3 || t == DType::F8E5M2; }

namespace {

// Shifts `value` right by `shift` bits, rounding to nearest with ties to even.
std::uint32_t shift_right_rne(std::uint32_t value, unsigned shift)
{
    if (shift == 0) return value;
    if (shift > 31) return 0; // value < 2^32 is below half of 2^shift
    const std::uint32_t kept = value >> shift;
    const std::uint32_t rest = value & ((1u << shift) - 1u);
    const std::uint32_t half = 1u << (shift - 1);
    if (rest > half || (rest == half && (kept & 1u))) return kept + 1u;
    return kept;
}

} // namespace

std::uint16_t float_to_half_bits(float f)
{
    const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
    const std::uint16_t sign = std::uint16_t((x >> 16) & 0x8000u);
    const std::uint32_t ax = x & 0x7fffffffu;

    if (ax >= 0x7f800000u) {
        if (ax == 0x7f800000u) return sign | 0x7c00u;
        // NaN: keep the top payload bits and force the quiet bit, so a NaN never
        // truncates into an infinity.
        return std::uint16_t(sign | 0x7e00u | ((ax >> 13) & 0x3ffu));
    }
    // 65520 is halfway between 65504 (odd mantissa 0x3ff) and 2^16: ties to even go up,
    // and 2^16 does not exist in binary16, so everything from 65520 on is infinity.
    if (ax >= 0x477ff000u) return sign | 0x7c00u;

    if (ax >= 0x38800000u) {
        // Normal range (>= 2^-14): rebias the exponent (127 -> 15) and drop 13 mantissa
        // bits. A carry out of the mantissa correctly bumps the exponent.
        const std::uint32_t rebased = ax - ((127u - 15u) << 23);
        return std::uint16_t(sign | shift_right_rne(rebased, 13));
    }

    // Subnormal half: the value in units of 2^-24 is mant * 2^(exp - 126) where mant
    // holds the implicit bit; a carry to 1024 lands on the smallest normal, as it should.
    const std::uint32_t exp = ax >> 23;
    if (exp == 0) return sign; // float zero or float subnormal (< 2^-126): far below 2^-25
    const std::uint32_t mant = (ax & 0x7fffffu) | 0x800000u;
    return std::uint16_t(sign | shift_right_rne(mant, 126u - exp));
}

float half_bits_to_float(std::uint16_t h)
{
    const std::uint32_t sign = std::uint32_t(h & 0x8000u) << 16;
    const std::uint32_t exp = (h >> 10) & 0x1fu;
    const std::uint32_t mant = h & 0x3ffu;
    if (exp == 0) {
        // Zero or subnormal: mant * 2^-24 is exact in float.
        const float v = std::ldexp(float(mant), -24);
        return sign ? -v : v;
    }
    if (exp == 31) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));
    return std::bit_cast<float>(sign | ((exp + 127u - 15u) << 23) | (mant << 13));
}

std::uint16_t float_to_bf16_bits(float f)
{
    const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
    // A NaN whose payload sits only in the low 16 bits would truncate into infinity.
    if ((x & 0x7fffffffu) > 0x7f800000u) return std::uint16_t((x >> 16) | 0x0040u);
    // Adding 0x7fff (+1 when the kept part is odd) rounds to nearest even; values that
    // round past the largest bf16 carry into the exponent and become infinity.
    const std::uint32_t rounded = x + 0x7fffu + ((x >> 16) & 1u);
    return std::uint16_t(rounded >> 16);
}

float bf16_bits_to_float(std::uint16_t b) { return std::bit_cast<float>(std::uint32_t(b) << 16); }

float round_to_tf32(float f)
{
    const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
    if ((x & 0x7f800000u) == 0x7f800000u) return f; // inf and NaN pass through
    // Keep 10 of 23 mantissa bits: drop 13 with round to nearest even.
    const std::uint32_t rounded = (x + 0xfffu + ((x >> 13) & 1u)) & ~0x1fffu;
    return std::bit_cast<float>(rounded);
}

namespace {

// fp16 rounding in the float domain, equal to half_bits_to_float(float_to_half_bits(f))
// for every input but NaN payloads: normal halves keep 10 mantissa bits (the same
// carry trick as tf32); below 2^-14 the quantum is 2^-24, which adding and removing
// 0.5 (whose float ulp is 2^-24) rounds to, to nearest even, in the FPU.
inline float round_half_value(float f)
{
    const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
    const std::uint32_t ax = x & 0x7fffffffu;
    if (ax >= 0x38800000u) {
        if (ax > 0x7f800000u) return f; // NaN stays NaN
        if (ax >= 0x477ff000u) return std::bit_cast<float>((x & 0x80000000u) | 0x7f800000u);
        return std::bit_cast<float>((x + 0xfffu + ((x >> 13) & 1u)) & ~0x1fffu);
    }
    volatile float shifted = std::fabs(f) + 0.5f; // volatile: the sum must be rounded
    return std::copysign(shifted - 0.5f, f);
}

inline float round_bf16_value(float f) { return bf16_bits_to_float(float_to_bf16_bits(f)); }

} // namespace

void round_span(DType t, float* values, std::size_t n)
{
    switch (t) {
    case DType::F32: return;
    case DType::F16:
        for (std::size_t i = 0; i < n; ++i) values[i] = round_half_value(values[i]);
        return;
    case DType::BF16:
        for (std::size_t i = 0; i < n; ++i) values[i] = round_bf16_value(values[i]);
        return;
    default:
        for (std::size_t i = 0; i < n; ++i) values[i] = round_to(t, values[i]);
        return;
    }
}

float round_to(DType t, float f)
{
    switch (t) {
    case DType::F32: return f;
    case DType::F16: return round_half_value(f);
    case DType::BF16: return round_bf16_value(f);
    case DType::I32: {
        // Integer storage: nearest integer (ties to even), saturated; NaN becomes 0.
        if (std::isnan(f)) return 0.0f;
        const float r = std::nearbyint(f);
        if (r <= -2147483648.0f) return -2147483648.0f;
        if (r >= 2147483648.0f) return 2147483520.0f; // the largest float below 2^31
        return r;
    }
    case DType::U8: {
        if (std::isnan(f)) return 0.0f;
        const float r = std::nearbyint(f);
        return r < 0.0f ? 0.0f : (r > 255.0f ? 255.0f : r);
    }
    case DType::I16: {
        if (std::isnan(f)) return 0.0f;
        const float r = std::nearbyint(f);
        return r < -32768.0f ? -32768.0f : (r > 32767.0f ? 32767.0f : r);
    }
    // Saturating, as fp8_quantize stores (hd_math.h).
    case DType::F8E4M3: return hd::fp8_to_float(hd::float_to_fp8(f, hd::k_e4m3), hd::k_e4m3);
    case DType::F8E5M2: return hd::fp8_to_float(hd::float_to_fp8(f, hd::k_e5m2), hd::k_e5m2);
    }
    return f;
}

} // namespace mixlab
