// CUDA fp8 ops (mixed_fp8): the shared argument checks, then one launch on the stream.
// The scale each quantization multiplies by and the amax slot it folds into are device
// addresses inside the meta buffer, never host values, so a recorded step replays with
// each step's scales.
#include "backends/cuda/cuda_backend.h"

#include "backends/backend_validate_fp8.h"
#include "backends/cuda/fp8.cuh"

#include <algorithm>
#include <array>

namespace mixlab::cuda {

void CudaBackend::fp8_quantize(const Buffer& x, int rows, int cols, Buffer& meta, std::size_t block,
                               int history_len, bool record_amax, Buffer* y, Buffer* y_t,
                               Buffer* col_sums, const Buffer* relu_gate, const Buffer* relu_mask,
                               Buffer* relu_mask_out)
{
    validate::fp8_quantize(k_name, x, rows, cols, meta, block, history_len, y, y_t, col_sums,
                           relu_gate, relu_mask, relu_mask_out);
    float* b = meta.as<float>() + block * fp8_block_floats(history_len);
    const DType ty = y ? y->dtype() : y_t->dtype();
    launch_fp8_quantize(x.data(), relu_gate ? relu_gate->data() : nullptr,
                        relu_mask ? relu_mask->as<std::uint32_t>() : nullptr,
                        relu_mask_out ? relu_mask_out->as<std::uint32_t>() : nullptr, x.dtype(),
                        rows, cols, b + k_fp8_scale, record_amax ? b + k_fp8_history : nullptr,
                        y ? y->data() : nullptr, y_t ? y_t->data() : nullptr, ty,
                        col_sums ? col_sums->data() : nullptr,
                        col_sums ? col_sums->dtype() : DType::F32, m_reduce, stream());
}

// One pass from the dataset's bytes to x8 and x8_t; with augmentation the base class's
// gather, then quantize (the draw's per-pixel source does not fit the tiles' word loads).
void CudaBackend::gather_batch_fp8(const Buffer& images_u8, const Buffer& labels_u8,
                                   const Buffer& order_i32, std::int64_t offset, int batch,
                                   const ImageShape& image, const Normalization& norm,
                                   const Augmentation& aug, const StepCounter& counter,
                                   const Fp8Batch& fp8, Buffer& out, Buffer& out_labels)
{
    if (aug.enabled()) {
        Backend::gather_batch_fp8(images_u8, labels_u8, order_i32, offset, batch, image, norm, aug,
                                  counter, fp8, out, out_labels);
        return;
    }
    validate::gather_batch_fp8(k_name, images_u8, labels_u8, order_i32, offset, batch, image, norm,
                               aug, counter, fp8, out, out_labels);
    float* b = fp8.meta->as<float>() + fp8.block * fp8_block_floats(fp8.history_len);
    launch_fp8_gather(
        images_u8.as<std::uint8_t>(), labels_u8.as<std::uint8_t>(), order_i32.as<std::int32_t>(),
        offset, batch, image, norm,
        counter.buffer ? static_cast<const std::uint64_t*>(counter.buffer->data()) : nullptr,
        counter.steps_per_epoch, out.dtype(), b + k_fp8_scale,
        fp8.record_amax ? b + k_fp8_history : nullptr, fp8.x8->data(),
        fp8.x8_t ? fp8.x8_t->data() : nullptr, out_labels.as<std::int32_t>(), stream());
}

void CudaBackend::fp8_update_scales(Buffer& meta, int tensors, int history_len, int margin)
{
    validate::fp8_update_scales(k_name, meta, tensors, history_len, margin);
    launch_fp8_update_scales(meta.as<float>(), tensors, history_len, fp8_block_floats(history_len),
                             margin, stream());
}

void CudaBackend::fp8_transposes(std::span<const Fp8Transpose> jobs)
{
    validate::fp8_transposes(k_name, jobs);
    // k_transpose_jobs a launch, in an array on the stack: a step allocates nothing.
    std::array<TransposeJob, k_transpose_jobs> launch;
    for (std::size_t first = 0; first < jobs.size(); first += launch.size()) {
        const std::size_t n = std::min(launch.size(), jobs.size() - first);
        for (std::size_t i = 0; i < n; ++i) {
            const Fp8Transpose& job = jobs[first + i];
            launch[i] = {job.y->data(), job.rows, job.cols, job.y_t->data(),
                         job.relu_mask_out ? job.relu_mask_out->as<std::uint32_t>() : nullptr};
        }
        launch_fp8_transposes(std::span<const TransposeJob>(launch.data(), n), stream());
    }
}

} // namespace mixlab::cuda
