// Batch gather + normalisation from the uint8 dataset resident on the device: one kernel
// per batch, no host work. Each block row is one sample, so the order lookup happens once
// per sample and the image bytes are read contiguously.
#include "cuda/gather.cuh"

#include "cuda/cuda_check.h"
#include "cuda/device_types.cuh"

namespace mixlab::cuda {

namespace {

// The normalisation as kernel parameters (a plain struct copied by value).
struct NormArgs {
    int channels;
    float mean[4];
    float inv_std[4];
};

// grid (x: chunks of the sample, y: samples of the batch)
template <class T>
__global__ void gather_kernel(const std::uint8_t* images, const std::uint8_t* labels,
                              const std::int32_t* order, std::int64_t offset, int batch,
                              int sample, NormArgs norm, T* out, std::int32_t* out_labels)
{
    for (int b = blockIdx.y; b < batch; b += gridDim.y) {
        const std::int64_t src = order[offset + b];
        const std::uint8_t* img = images + src * std::int64_t(sample);
        T* dst = out + std::int64_t(b) * sample;
        for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < sample;
             i += gridDim.x * blockDim.x) {
            const int c = i % norm.channels;
            // Same expression, in the same order, as the CPU reference.
            dst[i] = from_f32<T>((float(img[i]) / 255.0f - norm.mean[c]) * norm.inv_std[c]);
        }
        if (blockIdx.x == 0 && threadIdx.x == 0)
            out_labels[b] = labels[src];
    }
}

constexpr unsigned k_threads = 256;

} // namespace

void launch_gather_batch(const std::uint8_t* images, const std::uint8_t* labels,
                         const std::int32_t* order, std::int64_t offset, int batch, int sample,
                         const Normalization& norm, void* out, DType out_t,
                         std::int32_t* out_labels, cudaStream_t stream)
{
    if (batch <= 0 || sample <= 0)
        return;
    NormArgs args{};
    args.channels = norm.channels;
    for (int c = 0; c < 4; ++c) {
        args.mean[c] = norm.mean[c];
        args.inv_std[c] = norm.inv_std[c];
    }
    const unsigned chunks = unsigned((sample + k_threads - 1) / k_threads);
    const dim3 grid(chunks > 64 ? 64 : chunks, unsigned(batch > 65535 ? 65535 : batch));
    dispatch_floating(out_t, "gather_batch", [&](auto tag) {
        using T = typename decltype(tag)::type;
        gather_kernel<T><<<grid, k_threads, 0, stream>>>(images, labels, order, offset, batch,
                                                          sample, args, static_cast<T*>(out), out_labels);
    });
    MIXLAB_CUDA_CHECK_LAUNCH("gather_kernel");
}

} // namespace mixlab::cuda
