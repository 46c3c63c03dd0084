// CUDA backend layer operations: argument checks on the host, then one launch (or a
// cuBLASLt call) on the stream. Nothing here waits for the device.
#include "backends/cuda/cuda_backend.h"

#include "backends/backend_validate.h"
#include "backends/cuda/activation.cuh"
#include "backends/cuda/add.cuh"
#include "backends/cuda/bias_grad.cuh"
#include "backends/cuda/dropout.cuh"
#include "backends/cuda/gather.cuh"
#include "backends/cuda/token_gather.cuh"
#include "backends/cuda/loss.cuh"

namespace mixlab::cuda {

namespace {

// The counter's two int32 words as the uint64 the kernels read (null: no counter).
const std::uint64_t* step_word(const StepCounter& c)
{
    return c.buffer ? static_cast<const std::uint64_t*>(c.buffer->data()) : nullptr;
}

} // namespace

void CudaBackend::gather_batch(const Buffer& images_u8, const Buffer& labels_u8,
                               const Buffer& order_i32, std::int64_t offset, int batch,
                               const ImageShape& image, const Normalization& norm,
                               const Augmentation& aug, const StepCounter& counter, Buffer& out,
                               Buffer& out_labels)
{
    validate::gather_batch(k_name, images_u8, labels_u8, order_i32, offset, batch, image, norm, aug,
                           counter, out, out_labels);
    // Sample indices live on the device; the kernel trusts them (the order is built by
    // the trainer from the split's size).
    launch_gather_batch(images_u8.as<std::uint8_t>(), labels_u8.as<std::uint8_t>(),
                        order_i32.as<std::int32_t>(), offset, batch, image, norm, aug,
                        step_word(counter), counter.steps_per_epoch, out.data(), out.dtype(),
                        out_labels.as<std::int32_t>(), stream());
}

void CudaBackend::gather_tokens(const Buffer& stream_i32, std::int64_t column_len, int batch,
                                int steps, std::int64_t row, const StepCounter& counter,
                                Buffer& ids_i32, Buffer& targets_i32)
{
    validate::gather_tokens(k_name, stream_i32, column_len, batch, steps, row, counter, ids_i32,
                            targets_i32);
    launch_gather_tokens(stream_i32.as<std::int32_t>(), column_len, batch, steps, row,
                         step_word(counter), counter.steps_per_epoch, ids_i32.as<std::int32_t>(),
                         targets_i32.as<std::int32_t>(), stream());
}

void CudaBackend::gemm(const GemmCall& call) { m_gemm->run(call, stream()); }

void CudaBackend::bias_activation(Activation act, const Buffer& x, const Buffer* bias, int cols,
                                  Buffer& y)
{
    const std::size_t rows = validate::bias_activation(k_name, x, bias, cols, y);
    launch_bias_activation(act, x.data(), x.dtype(), bias ? bias->data() : nullptr,
                           bias ? bias->dtype() : DType::F32, rows, cols, y.data(), y.dtype(),
                           stream());
}

void CudaBackend::activation_backward(Activation act, const Buffer& x, const Buffer& y,
                                      const Buffer& dy, int cols, Buffer& dx)
{
    const std::size_t rows = validate::activation_backward(k_name, act, x, y, dy, cols, dx);
    // The identity's gradient is dy itself: a copy (a cast where dx's dtype differs), or
    // nothing where dx is dy, never a pass of the element-wise kernel.
    if (act == Activation::None) {
        copy_or_cast(dy.data(), dy.dtype(), dx.data(), dx.dtype(), rows * std::size_t(cols));
        return;
    }
    const bool uses_x = validate::activation_backward_reads_x(act);
    const bool uses_y = validate::activation_backward_reads_y(act);
    launch_activation_backward(act, uses_x ? x.data() : nullptr, uses_x ? x.dtype() : DType::F32,
                               uses_y ? y.data() : nullptr, uses_y ? y.dtype() : DType::F32,
                               dy.data(), dy.dtype(), rows, cols, dx.data(), dx.dtype(), stream());
}

void CudaBackend::bias_grad(const Buffer& dy, int rows, int cols, Buffer& out)
{
    validate::bias_grad(k_name, dy, rows, cols, out);
    launch_column_sums(dy.data(), dy.dtype(), std::size_t(rows), std::size_t(cols), out.data(),
                       out.dtype(), m_reduce, stream());
}

void CudaBackend::add_activation(Activation act, const Buffer& a, const Buffer& b, Buffer& y)
{
    validate::add_activation(k_name, act, a, b, y);
    launch_add_activation(act, a.data(), b.data(), y.dtype(), y.count(), y.data(), stream());
}

void CudaBackend::dropout(const Buffer& x, float rate, std::uint64_t seed, std::uint64_t step,
                          const StepCounter& counter, Buffer& y, const char* op)
{
    validate::dropout(k_name, op, x, rate, y);
    validate::step_counter(k_name, op, counter);
    launch_dropout(x.data(), x.dtype(), rate, seed, step, step_word(counter), x.count(), y.data(),
                   y.dtype(), stream());
}

void CudaBackend::dropout_forward(const Buffer& x, float rate, std::uint64_t seed,
                                  std::uint64_t step, const StepCounter& counter, Buffer& y)
{
    dropout(x, rate, seed, step, counter, y, "dropout_forward");
}

void CudaBackend::dropout_backward(const Buffer& dy, float rate, std::uint64_t seed,
                                   std::uint64_t step, const StepCounter& counter, Buffer& dx)
{
    dropout(dy, rate, seed, step, counter, dx, "dropout_backward");
}

void CudaBackend::advance_step(Buffer& counter)
{
    const StepCounter c{&counter, 1};
    validate::step_counter(k_name, "advance_step", c);
    launch_advance_step(static_cast<std::uint64_t*>(counter.data()), stream());
}

void CudaBackend::cross_entropy(OutputHead head, const Buffer& logits, const Buffer& labels_i32,
                                int batch, int classes, const Buffer* scaler, Buffer* dlogits,
                                Buffer& record, std::size_t record_offset)
{
    validate::cross_entropy(k_name, logits, labels_i32, batch, classes, scaler, dlogits, record,
                            record_offset);
    launch_cross_entropy(head, logits.data(), logits.dtype(), labels_i32.as<std::int32_t>(), batch,
                         classes, scaler ? scaler->as<float>() : nullptr,
                         dlogits ? dlogits->data() : nullptr, record.as<float>() + record_offset,
                         m_loss_scratch.as<LossScratch>(), stream());
}

} // namespace mixlab::cuda
