// Multi-tensor optimizer kernels. Blocks walk a chunk list built once by prepare_params,
// so one launch updates every parameter tensor. The update kernel reads the found-inf
// flag, the loss scale and the step count from device memory: an overflowed step is
// skipped by the GPU itself and the host never waits. Formulas are PyTorch's, in the
// same operation order as the CPU reference.
//
// Gradient clipping needs the global norm before any update, so it cannot live in the
// update pass: the inf/NaN pass, which reads every gradient anyway, also sums the squares
// of the unscaled gradients, one partial per chunk (a block's tree over its threads, each
// thread's float squares added in double); a one-block kernel sums the partials in chunk
// order and computes the factor; the update reads it from device memory. No atomics: the
// norm is bit-for-bit the same on every run and whatever the grid size, and the step
// stays free of host syncs and allocations (the partials are the table's, made once).
#include "backends/cuda/optimizer.cuh"

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/dependent_launch.cuh"
#include "backends/cuda/device_types.cuh"
#include "backends/cuda/fp8_round.cuh"
#include "base/hd_math.h"

#include <type_traits>

namespace mixlab::cuda {

namespace {

struct NoLow {};
// The low type of a split master: `master` holds int16 low halves, `low` the bf16 high
// halves (hd_math.h's split_master); the update joins them, runs in fp32, splits again.
struct SplitHalves {};

// Four consecutive elements: one 16-byte (fp32) or 8-byte (16-bit) access.
template <class T>
struct alignas(4 * sizeof(T)) Vec4 {
    T v[4];
};

template <class T>
__device__ __forceinline__ void load4(const T* p, float out[4])
{
    const Vec4<T> r = *reinterpret_cast<const Vec4<T>*>(p);
#pragma unroll
    for (int k = 0; k < 4; ++k) out[k] = to_f32(r.v[k]);
}

template <class T>
__device__ __forceinline__ void store4(T* p, const float in[4])
{
    Vec4<T> r;
#pragma unroll
    for (int k = 0; k < 4; ++k) r.v[k] = from_f32<T>(in[k]);
    *reinterpret_cast<Vec4<T>*>(p) = r;
}

// Four split masters from element i on: two 8-byte loads instead of one 16-byte one.
__device__ __forceinline__ void load4_split(const OptTensor& t, std::int64_t i, float out[4])
{
    const auto hi =
        *reinterpret_cast<const Vec4<std::uint16_t>*>(static_cast<const std::uint16_t*>(t.low) + i);
    const auto lo = *reinterpret_cast<const Vec4<std::int16_t>*>(
        static_cast<const std::int16_t*>(t.master) + i);
#pragma unroll
    for (int k = 0; k < 4; ++k) out[k] = hd::join_master(hi.v[k], lo.v[k]);
}

__device__ __forceinline__ void store4_split(const OptTensor& t, std::int64_t i, const float in[4])
{
    Vec4<std::uint16_t> hi;
    Vec4<std::int16_t> lo;
#pragma unroll
    for (int k = 0; k < 4; ++k) {
        const hd::SplitMaster h = hd::split_master(in[k]);
        hi.v[k] = h.hi;
        lo.v[k] = h.lo;
    }
    *reinterpret_cast<Vec4<std::uint16_t>*>(static_cast<std::uint16_t*>(t.low) + i) = hi;
    *reinterpret_cast<Vec4<std::int16_t>*>(static_cast<std::int16_t*>(t.master) + i) = lo;
}

__device__ __forceinline__ float load_split(const OptTensor& t, std::int64_t i)
{
    return hd::join_master(static_cast<const std::uint16_t*>(t.low)[i],
                           static_cast<const std::int16_t*>(t.master)[i]);
}

__device__ __forceinline__ void store_split(const OptTensor& t, std::int64_t i, float w)
{
    const hd::SplitMaster h = hd::split_master(w);
    static_cast<std::uint16_t*>(t.low)[i] = h.hi;
    static_cast<std::int16_t*>(t.master)[i] = h.lo;
}

// The value v takes when stored as T (the CPU's `stored`).
template <class T>
__device__ __forceinline__ float stored(float v)
{
    return to_f32(from_f32<T>(v));
}

// mixed_fp8: the value the low copy holds for the master value w (what fp8_quantize would
// read from `low`: a split master's bf16 high half, else w rounded to TL).
template <class TL>
__device__ __forceinline__ float low_value(float w)
{
    if constexpr (std::is_same_v<TL, SplitHalves>)
        return __uint_as_float(std::uint32_t(hd::split_master(w).hi) << 16);
    else
        return to_f32(from_f32<TL>(w));
}

// mixed_fp8: four weights from element i (a multiple of 4; a row's four, the row length
// being a multiple of 4) quantized to E4M3 with W's scale into w8's row, one aligned word
// (w8's rows are fp8_padded, 16-byte multiples); their largest finite |value| into amax.
__device__ __forceinline__ void write_w8_4(const OptTensor& t, std::int64_t i, const float (&v)[4],
                                           float scale, float& amax)
{
    const std::int64_t row = i / t.w8_cols, col = i - row * t.w8_cols;
    *reinterpret_cast<std::uint32_t*>(t.w8 + row * t.w8_ld + col) = quantize4<false>(v, scale);
#pragma unroll
    for (int k = 0; k < 4; ++k) amax = fold_amax(amax, v[k]);
}

__device__ __forceinline__ void write_w8_1(const OptTensor& t, std::int64_t i, float v, float scale,
                                           float& amax)
{
    const std::int64_t row = i / t.w8_cols, col = i - row * t.w8_cols;
    const float q[4] = {v, 0.0f, 0.0f, 0.0f};
    t.w8[row * t.w8_ld + col] = std::uint8_t(quantize4<false>(q, scale) & 0xFFu);
    amax = fold_amax(amax, v);
}

struct StepScalars {
    float inv_scale;
    float clip; // clipping factor (1 when off)
    bool first_step;
    float bias_correction1, bias_correction2;
};

// a * b + c rounded twice, as the CPU computes it: nvcc would contract it into one fused
// multiply-add. Every product that meets an addition or subtraction in the update goes
// through it or through sub_mul_rounded (intrinsics are never contracted), so the update
// rounds as the CPU's does without building this file with -fmad=false (which passed
// check on an H100, bench/NOTES.md 41, and would have been a flag far from the reason).
// Two cases where a skipped rounding mattered:
// - Where a float16 state's v has underflowed to 0 (clipped gradients of ~0.007: (1 - b2)
//   * g^2 ~ 5e-8, under half fp16's smallest subnormal) Adam's step is lr * m / eps,
//   which turned m's one-ulp difference into a weight 1.2% off (check seed 28,
//   optimizer/clip/adam/mixed_f16_f32_slots/overflow_in_f16: 101.94 against the CPU's
//   103.19, one of 20003 at step 2).
// - Adam's first step is lr * g / (|g| + eps) (m / bc1 = g, sqrt(v / bc2) = |g|), whose
//   derivative in g is lr * eps / (|g| + eps)^2: where the gradient and the L2 term
//   cancel to |g| ~ eps it multiplies a difference in g by up to lr / (4 eps), and the
//   one rounding the FMA skips (up to half an ulp of wd * w, ~5e-10 for |w| ~ 1) moved
//   the weight by 3.4e-5 against a tolerance of 9e-6 (check seed 2, 1 of 20003 elements).
// Identical states and g leave only the update's own roundings.
__device__ __forceinline__ float mul_add_rounded(float a, float b, float c)
{
    return __fadd_rn(__fmul_rn(a, b), c);
}

// c - a * b rounded twice (the weight updates: w - lr * g).
__device__ __forceinline__ float sub_mul_rounded(float c, float a, float b)
{
    return __fsub_rn(c, __fmul_rn(a, b));
}

// g + wd * w, L2 weight decay folded into the gradient.
__device__ __forceinline__ float add_weight_decay(float g, float wd, float w)
{
    return mul_add_rounded(wd, w, g);
}

template <class TM>
__device__ __forceinline__ void update_element(const OptArgs& a, const StepScalars& s, float grad,
                                               float& w, float& s1, float& s2)
{
    // (g / scale) * factor in two roundings, as the CPU and PyTorch's unscale_ then
    // clip_grad_norm_ round it; a factor of 1 changes nothing.
    float g = grad * s.inv_scale;
    if (a.clip) g *= s.clip;
    if (a.type == OptimizerType::SGD) {
        if (a.weight_decay != 0.0f) g = add_weight_decay(g, a.weight_decay, w);
        if (a.momentum != 0.0f) {
            const float b = stored<TM>(s.first_step ? g : mul_add_rounded(a.momentum, s1, g));
            s1 = b;
            g = a.nesterov ? mul_add_rounded(a.momentum, b, g) : b;
        }
        w = stored<TM>(sub_mul_rounded(w, a.lr, g));
        return;
    }
    float wi = w;
    if (a.weight_decay != 0.0f) {
        if (a.type == OptimizerType::AdamW)
            wi = sub_mul_rounded(wi, __fmul_rn(a.lr, a.weight_decay), wi);
        else
            g = add_weight_decay(g, a.weight_decay, wi);
    }
    // The CPU's b1 * m + (1 - b1) * g and b2 * v + (1 - b2) * g * g, each product rounded.
    s1 = stored<TM>(mul_add_rounded(a.beta1, s1, __fmul_rn(1.0f - a.beta1, g)));
    s2 = stored<TM>(mul_add_rounded(a.beta2, s2, __fmul_rn(__fmul_rn(1.0f - a.beta2, g), g)));
    // A quotient, not a product, meets the subtraction: nothing here to contract.
    wi -= a.lr * (s1 / s.bias_correction1) / (sqrtf(s2 / s.bias_correction2) + a.eps);
    w = stored<TM>(wi);
}

// Sum over the block, the same on every thread; the order of the additions is fixed by
// the block shape. `scratch` holds 32 doubles of shared memory.
__device__ __forceinline__ double block_sum(double v, double* scratch)
{
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int warps = (blockDim.x + 31) >> 5;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    double r = lane < warps ? scratch[lane] : 0.0;
    for (int o = 16; o > 0; o >>= 1) r += __shfl_xor_sync(0xffffffffu, r, o);
    __syncthreads();
    return r;
}

// Norm: also partials[c] = sum over chunk c of (g / scale)^2. Each square is formed in
// float (gradients whose unscaled square overflows float, |g| > 1.8e19, make the norm
// inf on both backends) and added into a double per thread, as the CPU adds them: the
// same float squares summed in double in another order differ by ~1e-14, so the float
// norm is the CPU's unless it lies that close to a rounding boundary (~1 in 10^6).
// Four squares added in float first (fused) put the norm an ulp from the CPU's in 68 of
// 900 steps of a check's inputs (emulated on the host), the clip factor with it, and
// fp16 Adam states then round the other way in some elements.
template <class TG, bool Norm>
__global__ void found_inf_kernel(const OptTensor* tensors, const OptChunk* chunks, int n_chunks,
                                 float* scaler, bool scaling_on, double* partials)
{
    wait_for_previous_grid();
    float inv_scale = 1.0f;
    if constexpr (Norm) inv_scale = 1.0f / (scaling_on ? scaler[k_scale] : 1.0f);
    bool bad = false;
    for (int c = blockIdx.x; c < n_chunks; c += gridDim.x) {
        const OptChunk ch = chunks[c];
        const TG* g = static_cast<const TG*>(tensors[ch.tensor].grad) + ch.start;
        const int full = ch.len & ~3;
        double squares = 0.0;
        for (int i = threadIdx.x * 4; i < full; i += blockDim.x * 4) {
            float v[4];
            load4(g + i, v);
            // isfinite is false for inf and NaN alike; no early exit keeps loads streaming.
            bad |= !(isfinite(v[0]) && isfinite(v[1]) && isfinite(v[2]) && isfinite(v[3]));
            if constexpr (Norm) {
#pragma unroll
                for (int k = 0; k < 4; ++k) {
                    const float u = v[k] * inv_scale;
                    squares += double(u * u);
                }
            }
        }
        for (int i = full + threadIdx.x; i < ch.len; i += blockDim.x) {
            const float v = to_f32(g[i]);
            bad |= !isfinite(v);
            if constexpr (Norm) {
                const float u = v * inv_scale;
                squares += double(u * u);
            }
        }
        if constexpr (Norm) {
            // The loop bounds are the block's: every thread reaches the barriers.
            __shared__ double scratch[32];
            const double sum = block_sum(squares, scratch);
            if (threadIdx.x == 0) partials[c] = sum;
        }
    }
    if (__syncthreads_or(bad) && threadIdx.x == 0) scaler[k_found_inf] = 1.0f;
}

// One block: every thread sums a fixed stride of the partials, then the block's tree.
__global__ void grad_norm_kernel(const double* partials, int n_partials, float clip_norm,
                                 const float* scaler, float* out)
{
    wait_for_previous_grid();
    __shared__ double scratch[32];
    double sum = 0.0;
    for (int i = threadIdx.x; i < n_partials; i += blockDim.x) sum += partials[i];
    sum = block_sum(sum, scratch);
    if (threadIdx.x != 0) return;
    // After an overflow the sum is inf or NaN depending on which elements were which; the
    // record says inf either way, as the CPU does.
    const bool found = scaler[k_found_inf] != 0.0f;
    const float norm = found ? INFINITY : float(sqrt(sum));
    // Rounded as the CPU rounds it, whatever nvcc's division and contraction flags.
    const float factor =
        isfinite(norm) ? fminf(1.0f, __fdiv_rn(clip_norm, __fadd_rn(norm, 1e-6f))) : 1.0f;
    out[0] = norm;
    out[1] = factor;
}

// With mixed_fp8's copies (OptTensor::w8) the update also writes each updated weight's
// E4M3 byte, from the value the low copy would hold, and folds the chunk's amax into W's
// meta block: the pass a step would otherwise spend quantizing W (fp8_quantize's bytes,
// checked against the CPU's by mixlab-cli check). A plain copy of such weights is not
// stored (backend.h's Fp8Weights: only w8 is read), 2 of the 23 bytes a weight moves.
template <class TM, class TG, class TL>
__global__ void optimizer_update_kernel(const OptTensor* tensors, const OptChunk* chunks,
                                        int n_chunks, OptArgs a, const float* scaler)
{
    wait_for_previous_grid();
    // Uniform over the whole grid: an overflowed, loss-scaled step changes nothing but
    // the fp8 copies, rewritten from the unchanged weights with a scale that may have moved.
    const bool skip = a.scaling_on && scaler[k_found_inf] != 0.0f;
    if (skip && !a.fp8) return;
    __shared__ float bias_correction[2];
    __shared__ float amax_scratch[32];
    const float steps = scaler[k_optimizer_steps];
    if (threadIdx.x == 0) {
        // In double, then rounded once: as the CPU reference computes them.
        const double t = double(steps) + 1.0;
        bias_correction[0] = float(1.0 - pow(double(a.beta1), t));
        bias_correction[1] = float(1.0 - pow(double(a.beta2), t));
    }
    __syncthreads();
    StepScalars s;
    s.inv_scale = 1.0f / (a.scaling_on ? scaler[k_scale] : 1.0f);
    s.clip = a.clip ? a.clip[1] : 1.0f;
    s.first_step = steps == 0.0f;
    s.bias_correction1 = bias_correction[0];
    s.bias_correction2 = bias_correction[1];
    const bool sgd = a.type == OptimizerType::SGD;
    const bool use_s1 = !sgd || a.momentum != 0.0f;
    constexpr bool split = std::is_same_v<TL, SplitHalves>;
    constexpr bool copy = !split && !std::is_same_v<TL, NoLow>;
    // The low copy's element type as fp8's rewrite reads it (never NoLow's: no copy, no w8).
    using LowT = std::conditional_t<split, bf16, std::conditional_t<copy, TL, float>>;
    bool bad = false; // a non-finite gradient seen, for a.found_inf

    for (int c = blockIdx.x; c < n_chunks; c += gridDim.x) {
        const OptChunk ch = chunks[c];
        const OptTensor t = tensors[ch.tensor];
        // Both uniform over the block (one chunk): the amax fold's barriers are reached.
        const bool fp8 = (copy || split) && t.w8 != nullptr;
        if (skip && !fp8) continue;
        const float w8_scale = fp8 ? t.fp8_block[k_fp8_scale] : 0.0f;
        float amax = 0.0f;
        if (skip) {
            // The unchanged weights as the copy holds them: a split master's high halves,
            // else the master rounded (a plain copy of fp8 weights is not kept).
            const LowT* low = static_cast<const LowT*>(t.low) + ch.start;
            [[maybe_unused]] const TM* master = static_cast<const TM*>(t.master) + ch.start;
            const int full = ch.len & ~3;
            for (int i = threadIdx.x * 4; i < full; i += blockDim.x * 4) {
                float v[4];
                if constexpr (copy) {
                    load4(master + i, v);
#pragma unroll
                    for (int k = 0; k < 4; ++k) v[k] = low_value<TL>(v[k]);
                } else {
                    load4(low + i, v);
                }
                write_w8_4(t, ch.start + i, v, w8_scale, amax);
            }
            for (int i = full + threadIdx.x; i < ch.len; i += blockDim.x) {
                float v;
                if constexpr (copy)
                    v = low_value<TL>(to_f32(master[i]));
                else
                    v = to_f32(low[i]);
                write_w8_1(t, ch.start + i, v, w8_scale, amax);
            }
            fold_block_amax(amax, t.fp8_block + k_fp8_history, amax_scratch);
            continue;
        }
        // A split master's `master` is int16 halves: only the split loads touch it.
        [[maybe_unused]] TM* w = split ? nullptr : static_cast<TM*>(t.master) + ch.start;
        const TG* g = static_cast<const TG*>(t.grad) + ch.start;
        TM* m1 = use_s1 ? static_cast<TM*>(t.state1) + ch.start : nullptr;
        TM* m2 = sgd ? nullptr : static_cast<TM*>(t.state2) + ch.start;
        const int full = ch.len & ~3;
        for (int i = threadIdx.x * 4; i < full; i += blockDim.x * 4) {
            float wv[4], gv[4], s1[4] = {0, 0, 0, 0}, s2[4] = {0, 0, 0, 0};
            if constexpr (split)
                load4_split(t, ch.start + i, wv);
            else
                load4(w + i, wv);
            load4(g + i, gv);
            bad |= !(isfinite(gv[0]) && isfinite(gv[1]) && isfinite(gv[2]) && isfinite(gv[3]));
            if (m1) load4(m1 + i, s1);
            if (m2) load4(m2 + i, s2);
#pragma unroll
            for (int k = 0; k < 4; ++k) update_element<TM>(a, s, gv[k], wv[k], s1[k], s2[k]);
            if constexpr (split)
                store4_split(t, ch.start + i, wv);
            else
                store4(w + i, wv);
            if (m1) store4(m1 + i, s1);
            if (m2) store4(m2 + i, s2);
            if constexpr (copy)
                if (!fp8) store4(static_cast<TL*>(t.low) + ch.start + i, wv);
            if constexpr (copy || split) {
                if (fp8) {
                    float q[4];
#pragma unroll
                    for (int k = 0; k < 4; ++k) q[k] = low_value<TL>(wv[k]);
                    write_w8_4(t, ch.start + i, q, w8_scale, amax);
                }
            }
        }
        for (int i = full + threadIdx.x; i < ch.len; i += blockDim.x) {
            float wv = 0.0f, s1 = m1 ? to_f32(m1[i]) : 0.0f, s2 = m2 ? to_f32(m2[i]) : 0.0f;
            if constexpr (split)
                wv = load_split(t, ch.start + i);
            else
                wv = to_f32(w[i]);
            const float gi = to_f32(g[i]);
            bad |= !isfinite(gi);
            update_element<TM>(a, s, gi, wv, s1, s2);
            if constexpr (split)
                store_split(t, ch.start + i, wv);
            else
                w[i] = from_f32<TM>(wv);
            if (m1) m1[i] = from_f32<TM>(s1);
            if (m2) m2[i] = from_f32<TM>(s2);
            if constexpr (copy)
                if (!fp8) static_cast<TL*>(t.low)[ch.start + i] = from_f32<TL>(wv);
            if constexpr (copy || split)
                if (fp8) write_w8_1(t, ch.start + i, low_value<TL>(wv), w8_scale, amax);
        }
        if (fp8) fold_block_amax(amax, t.fp8_block + k_fp8_history, amax_scratch);
    }
    // Uniform over the grid (an argument): every thread of the block reaches the barrier.
    if (a.found_inf && __syncthreads_or(bad) && threadIdx.x == 0) *a.found_inf = 1.0f;
}

__global__ void scaler_update_kernel(ScalerParams p, float* s, float* record,
                                     const float* grad_norm)
{
    wait_for_previous_grid();
    const bool found = s[k_found_inf] != 0.0f;
    const bool on = p.mode != LossScaleMode::None;
    const float scale = on ? s[k_scale] : 1.0f;
    if (!(found && on)) s[k_optimizer_steps] += 1.0f;
    float next = scale;
    if (p.mode == LossScaleMode::Dynamic) {
        if (found) {
            next = scale * p.backoff_factor;
            s[k_growth_count] = 0.0f;
        } else {
            s[k_growth_count] += 1.0f;
            if (s[k_growth_count] >= float(p.growth_interval)) {
                next = scale * p.growth_factor;
                s[k_growth_count] = 0.0f;
            }
        }
        s[k_scale] = next;
    }
    record[k_rec_scale] = scale;
    record[k_rec_overflow] = found ? 1.0f : 0.0f;
    record[k_rec_next_scale] = next;
    record[k_rec_grad_norm] = grad_norm ? *grad_norm : 0.0f;
}

constexpr unsigned k_threads = 256;

unsigned chunk_blocks(int n_chunks)
{
    return unsigned(n_chunks < 1 ? 1 : (n_chunks > 4096 ? 4096 : n_chunks));
}

template <class TM, class TG, class TL>
void update(const OptTensor* tensors, const OptChunk* chunks, int n_chunks, const OptArgs& args,
            const float* scaler, cudaStream_t stream)
{
    launch_dependent("optimizer_update_kernel", optimizer_update_kernel<TM, TG, TL>,
                     chunk_blocks(n_chunks), k_threads, 0, stream, tensors, chunks, n_chunks, args,
                     scaler);
}

} // namespace

bool optimizer_layout_supported(const OptLayout& l)
{
    if (l.master == DType::I16) // a split master: fp32 gradient, bf16 high halves
        return l.grad == DType::F32 && l.has_low && l.low == DType::BF16;
    if (l.master == DType::F32)
        return l.grad == DType::F32 &&
               (!l.has_low || l.low == DType::F16 || l.low == DType::BF16 || l.low == DType::F32);
    // Pure 16-bit training: weights, gradients and state in one 16-bit dtype, no copy.
    return (l.master == DType::F16 || l.master == DType::BF16) && l.grad == l.master && !l.has_low;
}

void launch_found_inf(DType grad_t, const OptTensor* tensors, const OptChunk* chunks, int n_chunks,
                      float* scaler, bool scaling_on, double* partials, cudaStream_t stream)
{
    if (n_chunks == 0) return;
    dispatch_floating(grad_t, "optimizer_step", [&](auto tag) {
        using TG = typename decltype(tag)::type;
        const unsigned blocks = chunk_blocks(n_chunks);
        if (partials)
            launch_dependent("found_inf_kernel", found_inf_kernel<TG, true>, blocks, k_threads, 0,
                             stream, tensors, chunks, n_chunks, scaler, scaling_on, partials);
        else
            launch_dependent("found_inf_kernel", found_inf_kernel<TG, false>, blocks, k_threads, 0,
                             stream, tensors, chunks, n_chunks, scaler, scaling_on, nullptr);
    });
}

void launch_grad_norm(const double* partials, int n_partials, float clip_norm, const float* scaler,
                      float* out, cudaStream_t stream)
{
    launch_dependent("grad_norm_kernel", grad_norm_kernel, 1, k_threads, 0, stream, partials,
                     n_partials, clip_norm, scaler, out);
}

void launch_optimizer_update(const OptLayout& l, const OptTensor* tensors, const OptChunk* chunks,
                             int n_chunks, const OptArgs& args, const float* scaler,
                             cudaStream_t stream)
{
    if (n_chunks == 0) return;
    if (l.master == DType::F32 && !l.has_low)
        update<float, float, NoLow>(tensors, chunks, n_chunks, args, scaler, stream);
    else if (l.master == DType::F32 && l.low == DType::F16)
        update<float, float, __half>(tensors, chunks, n_chunks, args, scaler, stream);
    else if (l.master == DType::F32 && l.low == DType::BF16)
        update<float, float, bf16>(tensors, chunks, n_chunks, args, scaler, stream);
    else if (l.master == DType::F32 && l.low == DType::F32)
        update<float, float, float>(tensors, chunks, n_chunks, args, scaler, stream);
    else if (l.master == DType::I16)
        update<float, float, SplitHalves>(tensors, chunks, n_chunks, args, scaler, stream);
    else if (l.master == DType::F16)
        update<__half, __half, NoLow>(tensors, chunks, n_chunks, args, scaler, stream);
    else
        update<bf16, bf16, NoLow>(tensors, chunks, n_chunks, args, scaler, stream);
    MIXLAB_CUDA_CHECK_LAUNCH("optimizer_update_kernel");
}

void launch_scaler_update(const ScalerParams& params, float* scaler, float* record,
                          const float* grad_norm, cudaStream_t stream)
{
    launch_dependent("scaler_update_kernel", scaler_update_kernel, 1, 1, 0, stream, params, scaler,
                     record, grad_norm);
}

} // namespace mixlab::cuda
