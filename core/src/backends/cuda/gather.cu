// Batch gather + augmentation + normalisation from the uint8 dataset resident on the
// device: one kernel per batch, no host work. A thread owns 8 consecutive output
// elements of one sample, so reads of the source bytes and writes of the outputs are
// wide and coalesced (the first version gave a thread one pixel's channels and ran at
// a tenth of the copy bandwidth). The draw and the source pixel come from hd_math.h, the
// functions the CPU reference calls, and the normalisation is the same expression in
// the same order: fp32 outputs agree bit for bit.
#include "backends/cuda/gather.cuh"

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/dependent_launch.cuh"
#include "backends/cuda/device_types.cuh"
#include "backends/cuda/gather_norm.cuh"
#include "base/hd_math.h"

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
    const std::uint64_t* step_counter; // when set: the step, read on the device
    std::int64_t steps_per_epoch;
};

// Output elements per thread. (16, one 16-byte load of source bytes, measured no faster
// on the H200: 23.8 us for W1's 4096 x 3072 batch against 23.7.)
constexpr int k_vec = 8;

// Two values rounded to a 16-bit T, packed in a word (the first in the low half).
__device__ __forceinline__ std::uint32_t pack2(float a, float b, bf16)
{
    return std::uint32_t(__bfloat16_as_ushort(from_f32<bf16>(a))) |
           std::uint32_t(__bfloat16_as_ushort(from_f32<bf16>(b))) << 16;
}
__device__ __forceinline__ std::uint32_t pack2(float a, float b, __half)
{
    return std::uint32_t(__half_as_ushort(from_f32<__half>(a))) |
           std::uint32_t(__half_as_ushort(from_f32<__half>(b))) << 16;
}

// Eight values to dst, as 16-byte stores when dst allows it. Packed in registers: an
// array of T read back as vectors (the first version) lived in local memory.
template <class T>
__device__ __forceinline__ void store8(T* dst, const float* v, bool wide)
{
    if (wide) {
        if constexpr (sizeof(T) == 4) {
            float4* out = reinterpret_cast<float4*>(dst);
            out[0] = make_float4(v[0], v[1], v[2], v[3]);
            out[1] = make_float4(v[4], v[5], v[6], v[7]);
        } else {
            *reinterpret_cast<uint4*>(dst) =
                make_uint4(pack2(v[0], v[1], T{}), pack2(v[2], v[3], T{}), pack2(v[4], v[5], T{}),
                           pack2(v[6], v[7], T{}));
        }
    } else {
#pragma unroll
        for (int i = 0; i < 8; ++i) dst[i] = from_f32<T>(v[i]);
    }
}

// Up to eight source bytes, byte i of the result the element at first + i: one 8-byte
// load where they are whole and aligned.
__device__ __forceinline__ std::uint64_t load_bytes(const std::uint8_t* img, int first, int n)
{
    if (n == k_vec && (reinterpret_cast<std::uintptr_t>(img + first) & 7u) == 0)
        return *reinterpret_cast<const std::uint64_t*>(img + first);
    std::uint64_t w = 0;
#pragma unroll
    for (int i = 0; i < k_vec; ++i)
        if (i < n) w |= std::uint64_t(img[first + i]) << (8 * i);
    return w;
}

// Eight normalised elements (n of them real) to dst.
template <class T>
__device__ __forceinline__ void store_chunk(T* dst, const float* v, int n)
{
    if (n == k_vec) {
        const bool wide = (reinterpret_cast<std::uintptr_t>(dst) & 15u) == 0;
        store8(dst, v, wide);
    } else {
#pragma unroll
        for (int i = 0; i < k_vec; ++i) // constant indices: v stays in registers
            if (i < n) dst[i] = from_f32<T>(v[i]);
    }
}

// Without augmentation: k_chunks_each chunks a thread at a time, every load of them before
// any store. A store between two loads keeps the compiler from moving the later load above
// it (the dataset and the batch could alias as far as it knows), and one chunk at a time
// left a thread one dependent pair of loads (order, then the bytes) in flight. W1's
// batch of 4096 (bf16) on an H100: 23.4 us, the whole mixed_bf16 step 0.5% faster
// (bench/NOTES.md 41).
constexpr int k_chunks_each = 4;

template <class T>
__device__ __forceinline__ void
gather_plain(const std::uint8_t* images, const std::uint8_t* labels, const std::int32_t* order,
             std::int64_t offset, int sample, std::int64_t total, bool narrow, const GatherArgs& a,
             const float (&norm)[4][256], T* out, std::int32_t* out_labels)
{
    const int chunks = (sample + k_vec - 1) / k_vec;
    const std::int64_t stride = std::int64_t(gridDim.x) * blockDim.x;
    for (std::int64_t t0 = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; t0 < total;
         t0 += k_chunks_each * stride) {
        int b[k_chunks_each], first[k_chunks_each];
        std::int32_t src[k_chunks_each];
        std::uint64_t bytes[k_chunks_each];
#pragma unroll
        for (int u = 0; u < k_chunks_each; ++u) {
            const std::int64_t t = t0 + u * stride;
            b[u] = t >= total ? -1 : narrow ? int(unsigned(t) / unsigned(chunks)) : int(t / chunks);
            first[u] = b[u] < 0 ? 0 : int(t - std::int64_t(b[u]) * chunks) * k_vec;
        }
#pragma unroll
        for (int u = 0; u < k_chunks_each; ++u) src[u] = b[u] < 0 ? 0 : order[offset + b[u]];
#pragma unroll
        for (int u = 0; u < k_chunks_each; ++u)
            bytes[u] = b[u] < 0 ? 0
                                : load_bytes(images + std::int64_t(src[u]) * sample, first[u],
                                             min(k_vec, sample - first[u]));
#pragma unroll
        for (int u = 0; u < k_chunks_each; ++u) {
            if (b[u] < 0) continue;
            if (first[u] == 0) out_labels[b[u]] = labels[src[u]];
            const int n = min(k_vec, sample - first[u]);
            float v[k_vec];
            int c = first[u] % a.channels;
#pragma unroll
            for (int i = 0; i < k_vec; ++i) {
                v[i] = norm[c][i < n ? int((bytes[u] >> (8 * i)) & 0xFFu) : 0];
                if (++c == a.channels) c = 0;
            }
            store_chunk(out + std::int64_t(b[u]) * sample + first[u], v, n);
        }
    }
}

// Grid-stride over (sample, chunk of 8 elements); a sample's last chunk may be short.
template <class T>
__global__ void gather_kernel(const std::uint8_t* images, const std::uint8_t* labels,
                              const std::int32_t* order, std::int64_t offset, int batch,
                              GatherArgs a, T* out, std::int32_t* out_labels)
{
    wait_for_previous_grid();
    std::uint64_t step = a.step;
    if (a.step_counter) {
        step = *a.step_counter;
        offset += std::int64_t(step % std::uint64_t(a.steps_per_epoch)) * batch;
    }
    const int sample = a.height * a.width * a.channels;
    const int chunks = (sample + k_vec - 1) / k_vec;
    const std::int64_t total = std::int64_t(batch) * chunks;
    // 32-bit division where the indices fit (every batch we have seen): a 64-bit one is
    // a long software sequence, per 8 elements.
    const bool narrow =
        total + std::int64_t(k_chunks_each + 1) * gridDim.x * blockDim.x < (std::int64_t(1) << 31);
    __shared__ float norm[4][256];
    fill_norm_table<float>(norm, a.channels, a.mean, a.inv_std);
    if (!a.crop && !a.flip) {
        gather_plain(images, labels, order, offset, sample, total, narrow, a, norm, out,
                     out_labels);
        return;
    }
    for (std::int64_t t = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; t < total;
         t += std::int64_t(gridDim.x) * blockDim.x) {
        const int b = narrow ? int(unsigned(t) / unsigned(chunks)) : int(t / chunks);
        const int first = int(t - std::int64_t(b) * chunks) * k_vec;
        const std::int64_t src = order[offset + b];
        const std::uint8_t* img = images + src * sample;
        if (first == 0) out_labels[b] = labels[src];
        // The draw depends on the position in the batch (b), as on the CPU.
        const hd::AugmentDraw d =
            hd::augment_draw(a.seed, step, std::uint64_t(b), a.pad, a.crop, a.flip);
        const int n = min(k_vec, sample - first);
        float v[k_vec];
        int c = first % a.channels;
        int p = first / a.channels;
#pragma unroll
        for (int i = 0; i < k_vec; ++i) {
            int raw = 0;
            if (i < n) {
                const int r = p / a.width, col = p - r * a.width;
                int sr = 0, sc = 0;
                // Zero padding is a raw 0 pixel, normalised like any other.
                if (hd::augment_source(d, r, col, a.height, a.width, &sr, &sc))
                    raw = img[(std::int64_t(sr) * a.width + sc) * a.channels + c];
            }
            v[i] = norm[c][raw];
            if (++c == a.channels) {
                c = 0;
                ++p;
            }
        }
        store_chunk(out + std::int64_t(b) * sample + first, v, n);
    }
}

constexpr unsigned k_threads = 256;

} // namespace

void launch_gather_batch(const std::uint8_t* images, const std::uint8_t* labels,
                         const std::int32_t* order, std::int64_t offset, int batch,
                         const ImageShape& image, const Normalization& norm,
                         const Augmentation& aug, const std::uint64_t* step_counter,
                         std::int64_t steps_per_epoch, void* out, DType out_t,
                         std::int32_t* out_labels, cudaStream_t stream)
{
    const int sample = image.size();
    if (batch <= 0 || sample <= 0) return;
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
    args.step_counter = step_counter;
    args.steps_per_epoch = steps_per_epoch < 1 ? 1 : steps_per_epoch;
    const std::size_t threads_needed =
        std::size_t(batch) * std::size_t((sample + k_vec - 1) / k_vec);
    // Enough blocks to fill the device a few times over, few enough that each block's
    // table is built for many samples' worth of work.
    const unsigned blocks = grid_for(threads_needed, k_threads, 2048);
    dispatch_floating(out_t, "gather_batch", [&](auto tag) {
        using T = typename decltype(tag)::type;
        launch_dependent("gather_kernel", gather_kernel<T>, blocks, k_threads, 0, stream, images,
                         labels, order, offset, batch, args, static_cast<T*>(out), out_labels);
    });
}

} // namespace mixlab::cuda
