// Launchers for mixed_fp8's kernels (Backend::fp8_quantize, fp8_transpose,
// fp8_update_scales): scaled
// rounding to E4M3/E5M2 (the same byte as hd_math.h's fp8_quantize_value, the CPU
// reference's, for every input), the optional transposed copy, zero padding and column
// sums, the amax folded into the meta buffer, and delayed scaling's update. Scales are read on the device, so
// a recorded step replays with each step's values.
#pragma once
#include "backends/cuda/reduce_scratch.h"
#include "mixlab/backend.h"
#include "mixlab/dtype.h"

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <span>

namespace mixlab::cuda {

// y = fp8(x * scale) for the rows x cols matrix x (floating dtype tx), stored rows x
// fp8_padded(cols) with zeros past col cols; y_t (when not null) its transpose, cols x
// fp8_padded(rows), zeros past row rows; ty (F8E4M3 or F8E5M2) picks the format. With
// amax_slot not null, max |x| over finite elements is folded (atomic max on the float's
// bits) into *amax_slot. scale: the block's scale in device memory. col_sums (not null):
// x's column sums in dtype tsums, through partials in `scratch` (a second launch adds
// them in a fixed order). relu_gate (not null, x's dtype and shape): x read as 0 where
// relu_gate <= 0, relu's backward in the same pass; relu_mask (not null): the same gate as
// bits (backend.h's relu_mask_words per row); relu_mask_out (not null): x > 0 as bits.
void launch_fp8_quantize(const void* x, const void* relu_gate, const std::uint32_t* relu_mask,
                         std::uint32_t* relu_mask_out, DType tx, int rows, int cols,
                         const float* scale, float* amax_slot, void* y, void* y_t, DType ty,
                         void* col_sums, DType tsums, ReduceScratch& scratch, cudaStream_t stream);

// Backend::gather_batch_fp8 without augmentation in one pass: x8 (E4M3, batch x
// fp8_padded(sample)) and x8_t (when not null) of the batch gather_batch would write in
// dtype batch_t, quantized as launch_fp8_quantize would from it (scale, amax_slot as
// there), and the labels; the 16-bit batch is never written. The step counter (when not
// null) moves the batch as in launch_gather_batch.
void launch_fp8_gather(const std::uint8_t* images, const std::uint8_t* labels,
                       const std::int32_t* order, std::int64_t offset, int batch,
                       const ImageShape& image, const Normalization& norm,
                       const std::uint64_t* step_counter, std::int64_t steps_per_epoch,
                       DType batch_t, const float* scale, float* amax_slot, void* x8, void* x8_t,
                       std::int32_t* out_labels, cudaStream_t stream);

// y_t (cols x fp8_padded(rows)) = y (rows x fp8_padded(cols)) transposed, byte for
// byte, zeros past row rows. Both device buffers are 16-byte aligned (cudaMalloc's).
// relu_mask_out: y > 0 as bits (backend.h's relu_mask_words a row), or null.
struct TransposeJob {
    const void* y;
    int rows, cols;
    void* y_t;
    std::uint32_t* relu_mask_out;
};
// Every job's tiles in one launch, at most k_transpose_jobs of them (the kernel takes
// them by value), no output of one job read or written by another.
inline constexpr std::size_t k_transpose_jobs = 4;
void launch_fp8_transposes(std::span<const TransposeJob> jobs, cudaStream_t stream);

// Backend::fp8_update_scales on `tensors` blocks of block_floats floats from meta: the
// bits hd::fp8_update_block leaves, one warp a block.
void launch_fp8_update_scales(float* meta, int tensors, int history_len, std::size_t block_floats,
                              int margin, cudaStream_t stream);

} // namespace mixlab::cuda
