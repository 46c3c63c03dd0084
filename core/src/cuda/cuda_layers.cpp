// CUDA backend layer operations: argument checks on the host, then one launch (or a
// cuBLASLt call) on the stream. Nothing here waits for the device.
#include "cuda/cuda_backend.h"

#include "cuda/activation.cuh"
#include "cuda/bias_grad.cuh"
#include "cuda/dropout.cuh"
#include "cuda/gather.cuh"
#include "cuda/loss.cuh"

#include <string>

namespace mixlab::cuda {

namespace {

std::size_t rows_of(std::size_t count, int cols, const char* op)
{
    require(cols > 0 && count % std::size_t(cols) == 0, op,
            std::to_string(count) + " elements are not whole rows of " + std::to_string(cols));
    return count / std::size_t(cols);
}

} // namespace

void CudaBackend::gather_batch(const Buffer& images_u8, const Buffer& labels_u8,
                               const Buffer& order_i32, std::int64_t offset, int batch,
                               int sample_size, const Normalization& norm, Buffer& out,
                               Buffer& out_labels)
{
    const char* op = "gather_batch";
    require(images_u8.dtype() == DType::U8 && labels_u8.dtype() == DType::U8, op,
            "images and labels must be uint8");
    require(order_i32.dtype() == DType::I32 && out_labels.dtype() == DType::I32, op,
            "order and out_labels must be int32");
    require(norm.channels >= 1 && norm.channels <= 4, op, "channels must be 1..4");
    require(batch >= 0 && sample_size > 0, op, "batch and sample size must be positive");
    require(offset >= 0 && std::size_t(offset) + std::size_t(batch) <= order_i32.count(), op,
            "batch runs past the end of the order");
    require(out_labels.count() >= std::size_t(batch), op, "out_labels is too small");
    require_floating(out, std::size_t(batch) * std::size_t(sample_size), op, "out");
    // Sample indices live on the device; the kernel trusts them (the order is built by
    // the trainer from the split's size).
    launch_gather_batch(images_u8.as<std::uint8_t>(), labels_u8.as<std::uint8_t>(),
                        order_i32.as<std::int32_t>(), offset, batch, sample_size, norm, out.data(),
                        out.dtype(), out_labels.as<std::int32_t>(), stream());
}

void CudaBackend::gemm(const GemmCall& call)
{
    m_gemm->run(call, stream());
}

void CudaBackend::bias_activation(Activation act, const Buffer& x, const Buffer* bias, int cols,
                                  Buffer& y)
{
    const char* op = "bias_activation";
    const std::size_t n = x.count();
    const std::size_t rows = rows_of(n, cols, op);
    require_floating(x, n, op, "x");
    require_floating(y, n, op, "y");
    if (bias)
        require_floating(*bias, std::size_t(cols), op, "bias");
    launch_bias_activation(act, x.data(), x.dtype(), bias ? bias->data() : nullptr,
                           bias ? bias->dtype() : DType::F32, rows, cols, y.data(), y.dtype(),
                           stream());
}

void CudaBackend::activation_backward(Activation act, const Buffer& x, const Buffer& y,
                                      const Buffer& dy, int cols, Buffer& dx)
{
    const char* op = "activation_backward";
    const std::size_t n = dy.count();
    const std::size_t rows = rows_of(n, cols, op);
    require_floating(dy, n, op, "dy");
    require_floating(dx, n, op, "dx");
    // Only GELU reads the input and only GELU/None skip the output, so the unused one may
    // be any buffer (relu computed in place passes its output twice).
    const bool uses_x = act == Activation::Gelu;
    const bool uses_y = act != Activation::Gelu && act != Activation::None;
    if (uses_x)
        require_floating(x, n, op, "x");
    if (uses_y)
        require_floating(y, n, op, "y");
    launch_activation_backward(act, uses_x ? x.data() : nullptr, uses_x ? x.dtype() : DType::F32,
                               uses_y ? y.data() : nullptr, uses_y ? y.dtype() : DType::F32,
                               dy.data(), dy.dtype(), rows, cols, dx.data(), dx.dtype(), stream());
}

void CudaBackend::bias_grad(const Buffer& dy, int rows, int cols, Buffer& out)
{
    const char* op = "bias_grad";
    require(rows >= 0 && cols >= 0, op, "negative shape");
    require_floating(dy, std::size_t(rows) * std::size_t(cols), op, "dy");
    require_floating(out, std::size_t(cols), op, "out");
    launch_column_sums(dy.data(), dy.dtype(), std::size_t(rows), std::size_t(cols), out.data(),
                       out.dtype(), stream());
}

void CudaBackend::dropout(const Buffer& x, float rate, std::uint64_t seed, std::uint64_t step,
                          Buffer& y, const char* op)
{
    require(rate >= 0.0f && rate <= 1.0f, op, "rate must be in [0, 1], got " + std::to_string(rate));
    const std::size_t n = x.count();
    require_floating(x, n, op, "input");
    require_floating(y, n, op, "output");
    launch_dropout(x.data(), x.dtype(), rate, seed, step, n, y.data(), y.dtype(), stream());
}

void CudaBackend::dropout_forward(const Buffer& x, float rate, std::uint64_t seed,
                                  std::uint64_t step, Buffer& y)
{
    dropout(x, rate, seed, step, y, "dropout_forward");
}

void CudaBackend::dropout_backward(const Buffer& dy, float rate, std::uint64_t seed,
                                   std::uint64_t step, Buffer& dx)
{
    dropout(dy, rate, seed, step, dx, "dropout_backward");
}

void CudaBackend::cross_entropy(OutputHead head, const Buffer& logits, const Buffer& labels_i32,
                                int batch, int classes, const Buffer* scaler, Buffer* dlogits,
                                Buffer& record, std::size_t record_offset)
{
    const char* op = "cross_entropy";
    require(batch > 0 && classes > 0, op, "batch and classes must be positive");
    const std::size_t n = std::size_t(batch) * std::size_t(classes);
    require_floating(logits, n, op, "logits");
    require(labels_i32.dtype() == DType::I32 && labels_i32.count() >= std::size_t(batch), op,
            "labels must be int32 with one per row");
    require(record.dtype() == DType::F32 && record.count() >= record_offset + k_record_fields, op,
            "record must be float32 with room for the fields at offset " +
                std::to_string(record_offset));
    if (scaler)
        require(scaler->dtype() == DType::F32 && scaler->count() >= k_scaler_fields, op,
                "scaler must be float32 x " + std::to_string(k_scaler_fields));
    if (dlogits) {
        require_floating(*dlogits, n, op, "dlogits");
        require(dlogits->dtype() == logits.dtype(), op, "dlogits must have the logits' dtype");
    }
    launch_cross_entropy(head, logits.data(), logits.dtype(), labels_i32.as<std::int32_t>(), batch,
                         classes, scaler ? scaler->as<float>() : nullptr,
                         dlogits ? dlogits->data() : nullptr, record.as<float>() + record_offset,
                         m_loss_scratch.as<LossScratch>(), stream());
}

} // namespace mixlab::cuda
