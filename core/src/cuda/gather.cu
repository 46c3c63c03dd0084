// Batch gather + augmentation + normalisation from the uint8 dataset resident on the
// device: one kernel per batch, no host work. A block row is one sample, so the order
// lookup and the augmentation draw happen once per sample; a thread owns one output
// pixel (all its channels). The draw and the source pixel come from hd_math.h, the
// functions the CPU reference calls, and the normalisation is the same expression in
// the same order: fp32 outputs agree bit for bit.
#include "cuda/gather.cuh"

#include "cuda/cuda_check.h"
#include "cuda/device_types.cuh"
#include "hd_math.h"

namespace mixlab::cuda {

namespace {

// The normalisation and augmentation as kernel parameters (copied by value).
struct GatherArgs {
    int height, width, channels;
    float mean[4];
    float inv_std[4];
    bool crop, flip;
    int pad;
    std::uint64_t seed, step;
};

// grid (x: chunks of the sample's pixels, y: samples of the batch)
template <class T>
__global__ void gather_kernel(const std::uint8_t* images, const std::uint8_t* labels,
                              const std::int32_t* order, std::int64_t offset, int batch,
                              GatherArgs a, T* out, std::int32_t* out_labels)
{
    const int pixels = a.height * a.width;
    const std::int64_t sample = std::int64_t(pixels) * a.channels;
    for (int b = blockIdx.y; b < batch; b += gridDim.y) {
        const std::int64_t src = order[offset + b];
        const std::uint8_t* img = images + src * sample;
        T* dst = out + std::int64_t(b) * sample;
        // The draw depends on the position in the batch (b), as on the CPU.
        const hd::AugmentDraw d =
            hd::augment_draw(a.seed, a.step, std::uint64_t(b), a.pad, a.crop, a.flip);
        for (int p = blockIdx.x * blockDim.x + threadIdx.x; p < pixels;
             p += gridDim.x * blockDim.x) {
            const int r = p / a.width, col = p - r * a.width;
            int sr = 0, sc = 0;
            const bool inside = hd::augment_source(d, r, col, a.height, a.width, &sr, &sc);
            const std::uint8_t* px =
                inside ? img + (std::int64_t(sr) * a.width + sc) * a.channels : nullptr;
            T* o = dst + std::int64_t(p) * a.channels;
            for (int c = 0; c < a.channels; ++c) {
                // Zero padding is a raw 0 pixel, normalised like any other.
                const float raw = px ? float(px[c]) : 0.0f;
                o[c] = from_f32<T>((raw / 255.0f - a.mean[c]) * a.inv_std[c]);
            }
        }
        if (blockIdx.x == 0 && threadIdx.x == 0)
            out_labels[b] = labels[src];
    }
}

constexpr unsigned k_threads = 256;

} // namespace

void launch_gather_batch(const std::uint8_t* images, const std::uint8_t* labels,
                         const std::int32_t* order, std::int64_t offset, int batch,
                         const ImageShape& image, const Normalization& norm,
                         const Augmentation& aug, void* out, DType out_t,
                         std::int32_t* out_labels, cudaStream_t stream)
{
    const int pixels = image.height * image.width;
    if (batch <= 0 || pixels <= 0)
        return;
    GatherArgs args{};
    args.height = image.height;
    args.width = image.width;
    args.channels = image.channels;
    for (int c = 0; c < 4; ++c) {
        args.mean[c] = norm.mean[c];
        args.inv_std[c] = norm.inv_std[c];
    }
    args.crop = aug.random_crop;
    args.flip = aug.horizontal_flip;
    args.pad = aug.crop_padding;
    args.seed = aug.seed;
    args.step = aug.step;
    const unsigned chunks = unsigned((pixels + int(k_threads) - 1) / int(k_threads));
    const dim3 grid(chunks > 64 ? 64 : chunks, unsigned(batch > 65535 ? 65535 : batch));
    dispatch_floating(out_t, "gather_batch", [&](auto tag) {
        using T = typename decltype(tag)::type;
        gather_kernel<T><<<grid, k_threads, 0, stream>>>(images, labels, order, offset, batch,
                                                         args, static_cast<T*>(out), out_labels);
    });
    MIXLAB_CUDA_CHECK_LAUNCH("gather_kernel");
}

} // namespace mixlab::cuda
