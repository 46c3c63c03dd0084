// Launchers for the multi-tensor optimizer step: inf/NaN check over every gradient (with
// the squares for gradient clipping), the global norm, the SGD/Adam/AdamW update (skipped
// on the device when the step overflowed), and the one-thread loss-scaler update. Nothing
// here reads device memory back to the host.
#pragma once
#include "mixlab/backend.h"

#include <cuda_runtime.h>

#include <cstdint>

namespace mixlab::cuda {

// One trainable tensor as the kernels see it (device pointers).
struct OptTensor {
    void* master;
    const void* grad;
    void* low;    // null when there is no low-precision copy
    void* state1; // momentum / Adam m; may be null for plain SGD
    void* state2; // Adam v
    std::int64_t count;
    // mixed_fp8 (ParamSlot::fp8): the E4M3 copy the update rewrites from `low`'s new
    // values (row length w8_cols, stored w8_ld apart), and W's meta block: the scale read
    // at k_fp8_scale, the amax folded into k_fp8_history. w8 null: none.
    std::uint8_t* w8;
    float* fp8_block;
    std::int32_t w8_cols, w8_ld;
};

// A slice of one tensor handled by one block at a time. Starts are multiples of
// k_opt_chunk, so 16-byte vector accesses stay aligned.
struct OptChunk {
    std::int32_t tensor;
    std::int32_t len;
    std::int64_t start;
};
inline constexpr std::int64_t k_opt_chunk = 16384;

// Dtypes shared by every tensor of one launch.
struct OptLayout {
    DType master = DType::F32, grad = DType::F32, low = DType::F16;
    bool has_low = false;
    bool operator==(const OptLayout&) const = default;
};
bool optimizer_layout_supported(const OptLayout& layout);

struct OptArgs {
    OptimizerType type = OptimizerType::SGD;
    float lr = 0, momentum = 0, weight_decay = 0, beta1 = 0, beta2 = 0, eps = 0;
    bool nesterov = false;
    bool scaling_on = false; // a loss-scale mode other than None: overflow skips the step
    // Gradient clipping: device {norm, factor} from launch_grad_norm; null when off, and
    // the update then does exactly what it did before clipping existed.
    const float* clip = nullptr;
    // When set, the update itself writes 1 there on meeting a non-finite gradient: the
    // check pass (launch_found_inf) is then not needed. Only valid without loss scaling
    // and clipping, where nothing before the update depends on the check.
    float* found_inf = nullptr;
    // Some tensor of the launch has an fp8 copy: a skipped step (loss scaling's overflow)
    // still rewrites those copies (the scale may have moved) instead of returning at once.
    bool fp8 = false;
};

// scaler[k_found_inf] = 1 when any gradient element is inf/NaN (the caller zeroes it first).
// With `partials` (clipping on) it also writes partials[c] = the sum of the squares of chunk
// c's gradients times 1/scale (1 when !scaling_on), summed in a fixed order.
void launch_found_inf(DType grad_t, const OptTensor* tensors, const OptChunk* chunks, int n_chunks,
                      float* scaler, bool scaling_on, double* partials, cudaStream_t stream);
// One block: norm = sqrt(sum of the n_partials partials) in a fixed order (inf when
// scaler[k_found_inf] is set), factor = min(1, clip_norm / (norm + 1e-6)) (1 for a
// non-finite norm), both into out[0], out[1].
void launch_grad_norm(const double* partials, int n_partials, float clip_norm, const float* scaler,
                      float* out, cudaStream_t stream);
void launch_optimizer_update(const OptLayout& layout, const OptTensor* tensors,
                             const OptChunk* chunks, int n_chunks, const OptArgs& args,
                             const float* scaler, cudaStream_t stream);
// Steps counter, dynamic scale and growth counter; record's scale/overflow/next fields,
// and its grad-norm field: *grad_norm, or 0 when null (clipping off).
void launch_scaler_update(const ScalerParams& params, float* scaler, float* record,
                          const float* grad_norm, cudaStream_t stream);

} // namespace mixlab::cuda
