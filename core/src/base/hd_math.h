// Scalar math shared by the CPU reference and the CUDA kernels, so that both backends
// compute the same function (dropout masks bit for bit, activations to rounding).
#pragma once
#include <cstdint>
#include <cmath>

#if defined(__CUDACC__)
#define MIXLAB_HD __host__ __device__ __forceinline__
#else
#define MIXLAB_HD inline
#endif

namespace mixlab::hd {

// splitmix64 finaliser: a counter-based hash, the same on host and device.
MIXLAB_HD std::uint64_t mix64(std::uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

// Uniform in [0, 1) from (seed, step, element index); 24 bits, exact in float.
MIXLAB_HD float uniform01(std::uint64_t seed, std::uint64_t step, std::uint64_t index)
{
    std::uint64_t h = mix64(seed ^ mix64(step * 0x100000001B3ull + 0x51ED27ull) ^ mix64(index));
    return float(h >> 40) * (1.0f / 16777216.0f);
}

// Dropout keeps an element when its uniform draw is at least the rate.
MIXLAB_HD bool dropout_keep(std::uint64_t seed, std::uint64_t step, std::uint64_t index, float rate)
{
    return uniform01(seed, step, index) >= rate;
}

// One sample's augmentation draw: a crop offset in [-pad, pad] per axis and a flip bit,
// from (seed, step, sample index within the batch).
struct AugmentDraw {
    int dy = 0, dx = 0;
    bool flip = false;
};
MIXLAB_HD AugmentDraw augment_draw(std::uint64_t seed, std::uint64_t step, std::uint64_t sample,
                                   int pad, bool crop, bool flip)
{
    const std::uint64_t h =
        mix64(seed ^ mix64(step * 0x100000001B3ull + 0xA06A06ull) ^ mix64(sample + 0xC0FFEEull));
    AugmentDraw d;
    if (crop && pad > 0) {
        const std::uint64_t span = std::uint64_t(2 * pad + 1);
        d.dy = int((h & 0xFFFFull) % span) - pad;
        d.dx = int(((h >> 16) & 0xFFFFull) % span) - pad;
    }
    d.flip = flip && ((h >> 40) & 1ull) != 0;
    return d;
}
// Where output pixel (r, c) of an augmented (height x width) image reads from: crop
// then flip, as torchvision's RandomCrop(padding) followed by RandomHorizontalFlip.
// Returns false when it falls in the zero padding.
MIXLAB_HD bool augment_source(const AugmentDraw& d, int r, int c, int height, int width, int* src_r,
                              int* src_c)
{
    const int cc = d.flip ? width - 1 - c : c;
    *src_r = r + d.dy;
    *src_c = cc + d.dx;
    return *src_r >= 0 && *src_r < height && *src_c >= 0 && *src_c < width;
}

MIXLAB_HD float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

// GELU, tanh approximation (Keras's approximate=True / PyTorch's approximate='tanh'),
// chosen because cuBLASLt's GELU epilogue computes this form.
MIXLAB_HD float gelu(float x)
{
    const float k = 0.7978845608028654f; // sqrt(2/pi)
    float u = k * (x + 0.044715f * x * x * x);
    return 0.5f * x * (1.0f + tanhf(u));
}
MIXLAB_HD float gelu_grad(float x)
{
    const float k = 0.7978845608028654f;
    float u = k * (x + 0.044715f * x * x * x);
    float t = tanhf(u);
    float du = k * (1.0f + 3.0f * 0.044715f * x * x);
    return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * du;
}

// Keras clips normalised sigmoid outputs to [eps, 1 - eps] before the log.
inline constexpr float k_keras_epsilon = 1e-7f;

// ---- the split fp32 master ("master_weights": "bf16_split") ------------------------
// An fp32 master held as two 16-bit halves: `hi`, the bf16 weight the GEMMs read, and
// `lo`, an int16 remainder with  bits(w) == (hi << 16) + lo  (mod 2^32) for every w but
// NaN, so join(split(w)) is w bit for bit and the update runs on the exact fp32 value.
//
// hi is w rounded to the nearest bf16 with ties away from zero: hi = (bits + 0x8000)
// >> 16 on the sign-magnitude bits. The remainder then lies in [-0x8000, 0x7FFF], which
// is int16 exactly; lo's 16 bits are simply w's low 16 bits. Ties to even (what a cast
// to bf16 does) cannot be stored: at a tie it leaves hi even with w = hi + 0x8000 or
// hi - 0x8000, 0x10001 values per hi, one more than 16 bits hold. So hi differs from the
// round-to-nearest-even copy of an fp32-master run only where w's low 16 bits are
// exactly 0x8000 and its bit 16 is 0 (one weight in 2^17), by one bf16 ulp away from
// zero. Truncation (hi = the top 16 bits, lo unsigned) is also exact but every GEMM
// weight would sit up to a whole ulp toward zero, a bias of half an ulp on average that
// the forward pass would see on every weight; nearest rounding keeps the GEMMs reading
// what a cast would give them.
//
// Specials: +-0 give hi = +-0, lo = 0; inf gives hi = inf, lo = 0. A finite w at or
// above bf16's max plus half an ulp (|w| >= 0x7F7F8000, 3.3961776e38) rounds hi to inf,
// as the cast does there too, and lo (negative) still joins back to w exactly. NaN gives
// a quiet NaN hi with w's sign and lo = 0: join gives NaN, its low payload bits dropped
// (0x8000 added to a NaN's bits could carry into the exponent or the sign instead).
struct SplitMaster {
    std::uint16_t hi; // bf16 bits
    std::int16_t lo;
};

MIXLAB_HD std::uint32_t float_bits(float f)
{
#if defined(__CUDA_ARCH__)
    return __float_as_uint(f);
#else
    std::uint32_t u;
    __builtin_memcpy(&u, &f, sizeof u);
    return u;
#endif
}

MIXLAB_HD float bits_float(std::uint32_t u)
{
#if defined(__CUDA_ARCH__)
    return __uint_as_float(u);
#else
    float f;
    __builtin_memcpy(&f, &u, sizeof f);
    return f;
#endif
}

MIXLAB_HD SplitMaster split_master(float w)
{
    const std::uint32_t u = float_bits(w);
    if ((u & 0x7FFFFFFFu) > 0x7F800000u) // NaN
        return SplitMaster{std::uint16_t((u >> 16) | 0x0040u), 0};
    // No carry reaches the sign: |bits| + 0x8000 <= 0x7F808000 for every non-NaN.
    const std::uint16_t hi = std::uint16_t((u + 0x8000u) >> 16);
    // The low 16 bits, read as two's complement: -0x8000..-1 exactly when hi rounded up.
    const std::int16_t lo = std::int16_t(std::uint16_t(u & 0xFFFFu));
    return SplitMaster{hi, lo};
}

MIXLAB_HD float join_master(std::uint16_t hi, std::int16_t lo)
{
    // Unsigned arithmetic wraps: adding a negative lo borrows from hi's bits.
    return bits_float((std::uint32_t(hi) << 16) + std::uint32_t(std::int32_t(lo)));
}

// ---- fp8 (E4M3 and E5M2, the OCP formats Hopper's tensor cores read) ------------------
// Conversions shared by the CPU reference and the CUDA kernels, written on the bits so
// that both give the same byte for every float. Rounding is to nearest with ties to even
// and saturating, as PTX's cvt.rn.satfinite does and as FP8 training uses it: anything
// beyond the largest finite value (infinities too) becomes that value with its sign,
// so one outlier costs its own precision instead of turning a whole GEMM into inf/NaN.
// NaN stays NaN (0x7F with the sign).
//   E4M3: bias 7, 3 mantissa bits, no infinities (S.1111.111 is NaN): largest 448,
//         smallest normal 2^-6, smallest subnormal 2^-9.
//   E5M2: bias 15, 2 mantissa bits, IEEE-like: largest 57344, smallest normal 2^-14,
//         smallest subnormal 2^-16.
struct Fp8Format {
    int mantissa_bits;
    int bias;
    std::uint8_t max_code; // the largest finite magnitude's bits
    float max_finite;
};
inline constexpr Fp8Format k_e4m3{3, 7, 0x7E, 448.0f};
inline constexpr Fp8Format k_e5m2{2, 15, 0x7B, 57344.0f};

MIXLAB_HD std::uint8_t float_to_fp8(float f, Fp8Format fmt)
{
    const std::uint32_t u = float_bits(f);
    const std::uint8_t sign = std::uint8_t((u >> 24) & 0x80u);
    const std::uint32_t a = u & 0x7FFFFFFFu;
    if (a > 0x7F800000u) return std::uint8_t(sign | 0x7Fu); // NaN
    const int min_normal_exp = 1 - fmt.bias;
    std::uint32_t code;
    if (a < std::uint32_t(min_normal_exp + 127) << 23) {
        // Below the smallest normal: the value in units of the smallest subnormal,
        // 2^(min_normal_exp - mantissa_bits), rounded to an integer. A power-of-two scale
        // is exact, and rintf rounds ties to even on host and device; a carry to
        // 2^mantissa_bits is the smallest normal's code, as it should be.
        const float units =
            bits_float(a) *
            bits_float(std::uint32_t(127 - min_normal_exp + fmt.mantissa_bits) << 23);
        code = std::uint32_t(rintf(units));
    } else {
        // Normal: drop 23 - mantissa_bits bits with ties to even on the float's bits (a
        // carry out of the mantissa bumps the exponent, as it should), then rebias.
        const int shift = 23 - fmt.mantissa_bits;
        const std::uint32_t lsb = (a >> shift) & 1u;
        const std::uint32_t rounded = (a + ((1u << (shift - 1)) - 1u) + lsb) >> shift;
        const std::uint32_t rebias = std::uint32_t(127 - fmt.bias) << fmt.mantissa_bits;
        code = rounded - rebias; // a >= the smallest normal, so no wrap
    }
    if (code > fmt.max_code) code = fmt.max_code; // saturate (infinities too)
    return std::uint8_t(sign | code);
}

MIXLAB_HD float fp8_to_float(std::uint8_t c, Fp8Format fmt)
{
    const std::uint32_t sign = std::uint32_t(c & 0x80u) << 24;
    const std::uint32_t mag = c & 0x7Fu;
    const std::uint32_t mant_mask = (1u << fmt.mantissa_bits) - 1u;
    const std::uint32_t exp = mag >> fmt.mantissa_bits;
    const std::uint32_t mant = mag & mant_mask;
    if (mag > fmt.max_code) {
        // E4M3: only 0x7F is past max (NaN). E5M2: exponent 31, inf when mantissa is 0.
        if (fmt.bias == 15 && mant == 0) return bits_float(sign | 0x7F800000u);
        return bits_float(sign | 0x7FC00000u);
    }
    if (exp == 0) { // subnormal or zero: mant units of 2^(1 - bias - mantissa_bits), exact
        const float unit = bits_float(std::uint32_t(127 + 1 - fmt.bias - fmt.mantissa_bits) << 23);
        return bits_float(sign | float_bits(float(mant) * unit));
    }
    return bits_float(sign | ((exp - fmt.bias + 127) << 23) | (mant << (23 - fmt.mantissa_bits)));
}

// One element of Backend::fp8_quantize: x times its tensor's scale, rounded. Every NaN
// becomes the positive NaN 0x7F: a NaN's sign is not portable (the GPU's fp16 -> fp32
// conversion and its products give a canonical positive NaN, x86 keeps the operand's;
// the H200 check of 2026-12-03 found a negative fp16 NaN stored 0xFF on the CPU and 0x7F
// on the GPU), and a NaN means the same either way. Both backends call this.
MIXLAB_HD std::uint8_t fp8_quantize_value(float x, float scale, Fp8Format fmt)
{
    return x != x ? std::uint8_t(0x7F) : float_to_fp8(x * scale, fmt);
}

// Delayed scaling (Backend::fp8_update_scales), shared so that the CPU reference and the
// CUDA kernel store the same bits. The history's amax: its largest slot, NaN when a slot
// is NaN (slots are filled from finite values only, so NaN or inf means a corrupt state,
// which the update then leaves alone).
MIXLAB_HD float fp8_history_amax(const float* history, int history_len)
{
    float amax = 0.0f;
    for (int i = 0; i < history_len; ++i) {
        const float h = history[i];
        if (h != h) return h;
        if (h > amax) amax = h;
    }
    return amax;
}

// The scale delayed scaling takes from an amax: (max_finite / amax) * 2^-margin, in that
// order of float operations (2^-margin from ldexpf, exact), when amax is finite and
// > 0; otherwise old_scale. A tiny amax whose quotient overflows gives the largest float
// rather than inf (as Transformer Engine does), so x * scale never turns 0 into NaN.
MIXLAB_HD float fp8_scale_from_amax(float max_finite, float amax, int margin, float old_scale)
{
    const std::uint32_t bits = float_bits(amax);
    const bool finite = (bits & 0x7F800000u) != 0x7F800000u;
    if (!finite || !(amax > 0.0f)) return old_scale;
    const float scale = (max_finite / amax) * ldexpf(1.0f, -margin);
    return (float_bits(scale) & 0x7FFFFFFFu) >= 0x7F800000u ? 3.40282347e38f : scale;
}

// One tensor's block of the fp8 meta buffer (mixlab/backend.h's k_fp8_* layout:
// scale_inv, scale, max_finite, last_amax, then the history, newest first) updated as
// Backend::fp8_update_scales promises; both backends call this for every block.
inline constexpr int k_fp8_block_scale_inv = 0, k_fp8_block_scale = 1, k_fp8_block_max_finite = 2,
                     k_fp8_block_last_amax = 3, k_fp8_block_history = 4;
// The update's first half: scale, scale_inv and last_amax from the history's amax. Apart
// from fp8_update_block because the CUDA kernel finds the amax across a warp (a max is
// exact in any order) and shifts the history there, then calls this.
MIXLAB_HD void fp8_apply_history_amax(float* block, float amax, int margin)
{
    const bool finite = (float_bits(amax) & 0x7F800000u) != 0x7F800000u;
    if (finite && amax > 0.0f) { // otherwise scale and scale_inv stay
        const float scale = fp8_scale_from_amax(block[k_fp8_block_max_finite], amax, margin,
                                                block[k_fp8_block_scale]);
        block[k_fp8_block_scale] = scale;
        block[k_fp8_block_scale_inv] = 1.0f / scale;
    }
    block[k_fp8_block_last_amax] = amax;
}

MIXLAB_HD void fp8_update_block(float* block, int history_len, int margin)
{
    float* history = block + k_fp8_block_history;
    fp8_apply_history_amax(block, fp8_history_amax(history, history_len), margin);
    for (int i = history_len - 1; i > 0; --i) history[i] = history[i - 1];
    if (history_len > 0) history[0] = 0.0f;
}

// ---- numerics histograms (Backend::value_histogram, update_histogram) ---------------
// A value's binade is floor(log2|x|), read from the float's bits: the exponent field for a
// normal, the position of the highest mantissa bit for a subnormal. No log2 is called, so
// the boundaries are exact (a float log2 rounds 2^k - tiny up to k) and the same on host
// and device. Every finite non-zero float32 has a binade in [-149, 127]; 16-bit values are
// float32s too (widened exactly), so one table serves every dtype with no underflow bin.
inline constexpr int k_binade_min = -149; // the smallest fp32 subnormal, 2^-149
inline constexpr int k_binade_max = 127;  // fp32's largest binade, [2^127, 2^128)
inline constexpr int k_binades = k_binade_max - k_binade_min + 1;

// Slots of a value histogram: one per binade (slot = binade - k_binade_min), then values
// counted apart.
enum ValueSlot : int {
    k_value_zero = k_binades, // +0 and -0
    k_value_pos_inf,
    k_value_neg_inf,
    k_value_nan,
    k_value_slots
};

MIXLAB_HD int highest_bit(std::uint32_t m) // m != 0
{
#if defined(__CUDA_ARCH__)
    return 31 - __clz(m);
#else
    return 31 - __builtin_clz(m);
#endif
}

// floor(log2|x|) for a finite non-zero x.
MIXLAB_HD int binade_of(float x)
{
    const std::uint32_t u = float_bits(x) & 0x7FFFFFFFu;
    const int field = int(u >> 23);
    if (field != 0) return field - 127;
    return k_binade_min + highest_bit(u); // subnormal: mantissa bit b weighs 2^(b - 149)
}

MIXLAB_HD int value_slot(float x)
{
    const std::uint32_t u = float_bits(x);
    const std::uint32_t a = u & 0x7FFFFFFFu;
    if (a == 0) return k_value_zero;
    if (a == 0x7F800000u) return (u >> 31) ? k_value_neg_inf : k_value_pos_inf;
    if (a > 0x7F800000u) return k_value_nan;
    return binade_of(x) - k_binade_min;
}

// Slots of an update histogram: per weight element, d = binade(after - before) -
// binade(before), the update's size against the weight it went into, in binades. A
// format with p mantissa bits loses an update of d <= -(p + 2) (smaller than half the
// weight's ulp, 2^(binade(w) - p - 1)). The difference of two floats within a factor 2 of
// each other is exact (Sterbenz), so d is exact for every update smaller than its weight.
inline constexpr int k_update_d_min = -64;
inline constexpr int k_update_d_max = 63;
inline constexpr int k_update_ds = k_update_d_max - k_update_d_min + 1;
enum UpdateSlot : int {
    k_update_below = k_update_ds, // d < k_update_d_min
    k_update_above,               // d > k_update_d_max
    k_update_lost,                // weight unchanged although its gradient was not zero
    k_update_idle,                // weight unchanged, gradient zero: nothing to apply
    k_update_from_zero,           // the weight was zero: no size to compare against
    k_update_non_finite,          // weight before or after, or gradient, inf/NaN
    k_update_slots
};

MIXLAB_HD bool finite_bits(float x) { return (float_bits(x) & 0x7F800000u) != 0x7F800000u; }

MIXLAB_HD int update_slot(float before, float after, float grad)
{
    if (!finite_bits(before) || !finite_bits(after) || !finite_bits(grad))
        return k_update_non_finite;
    if (after == before) return grad == 0.0f ? k_update_idle : k_update_lost;
    if (before == 0.0f) return k_update_from_zero;
    const float delta = after - before;
    if (!finite_bits(delta)) return k_update_non_finite; // two huge weights of opposite sign
    const int d = binade_of(delta) - binade_of(before);
    if (d < k_update_d_min) return k_update_below;
    if (d > k_update_d_max) return k_update_above;
    return d - k_update_d_min;
}

} // namespace mixlab::hd
