// Embedding lookup and its gradient. The gradient must give the same bits on every run
// and every backend (the contract sums each id's rows in row order), so it uses no
// atomics: the (id, row) pairs are sorted by id with a stable radix sort, which keeps
// each id's rows in row order, and one block per run of equal ids adds them column by
// column. Cost per call: the sort, O(rows) per radix pass with ceil(log2(vocab + 1)) / 8
// or so passes (two for WikiText-2's 33,278 words), one read of dy (rows x dim), and in
// overwrite mode a memset of dtable (vocab x dim floats).
#include "backends/cuda/embedding.cuh"

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/device_types.cuh"

#include <cub/device/device_radix_sort.cuh>

namespace mixlab::cuda {

namespace {

constexpr unsigned k_threads = 256;

template <class T>
__global__ void embedding_forward_kernel(const T* table, const std::int32_t* ids, int rows, int dim,
                                         int vocab, T* y)
{
    const std::size_t n = std::size_t(rows) * dim;
    for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
         i += std::size_t(gridDim.x) * blockDim.x) {
        const std::size_t r = i / dim, d = i - r * dim;
        const std::int32_t id = ids[r];
        y[i] = (id >= 0 && id < vocab) ? table[std::size_t(id) * dim + d] : from_f32<T>(0.0f);
    }
}

// The sort's keys: the id, or vocab for an id out of range (sorted last, then skipped);
// its values: the row.
__global__ void embedding_keys_kernel(const std::int32_t* ids, int rows, int vocab,
                                      std::int32_t* keys, std::int32_t* values)
{
    for (int r = blockIdx.x * blockDim.x + threadIdx.x; r < rows; r += gridDim.x * blockDim.x) {
        const std::int32_t id = ids[r];
        keys[r] = (id >= 0 && id < vocab) ? id : vocab;
        values[r] = r;
    }
}

// Block b starts at sorted position b; only the first position of a run of equal ids
// works, adding the run's rows in their (row) order onto dtable's row.
template <class T>
__global__ void embedding_grad_kernel(const T* dy, const std::int32_t* keys,
                                      const std::int32_t* rows_of, int rows, int dim, int vocab,
                                      float* dtable)
{
    const int first = blockIdx.x;
    const std::int32_t v = keys[first];
    if (v == vocab || (first > 0 && keys[first - 1] == v)) return;
    int end = first + 1;
    while (end < rows && keys[end] == v) ++end;
    float* out = dtable + std::size_t(v) * dim;
    for (int d = threadIdx.x; d < dim; d += blockDim.x) {
        float acc = out[d];
        for (int j = first; j < end; ++j) acc += to_f32(dy[std::size_t(rows_of[j]) * dim + d]);
        out[d] = acc;
    }
}

// Bits the sort needs to order keys in [0, vocab].
int key_bits(int vocab)
{
    int bits = 1;
    while (bits < 31 && (std::int64_t(1) << bits) <= vocab) ++bits;
    return bits;
}

std::size_t align_up(std::size_t bytes) { return (bytes + 255) & ~std::size_t(255); }

} // namespace

void launch_embedding_forward(const void* table, const std::int32_t* ids, int rows, int dim,
                              int vocab, void* y, DType t, cudaStream_t stream)
{
    const std::size_t n = std::size_t(rows) * dim;
    if (n == 0) return;
    dispatch_floating(t, "embedding_forward", [&](auto tag) {
        using T = typename decltype(tag)::type;
        embedding_forward_kernel<T><<<grid_for(n, k_threads), k_threads, 0, stream>>>(
            static_cast<const T*>(table), ids, rows, dim, vocab, static_cast<T*>(y));
    });
    MIXLAB_CUDA_CHECK_LAUNCH("embedding_forward_kernel");
}

void launch_embedding_backward(const void* dy, DType t, const std::int32_t* ids, int rows, int dim,
                               int vocab, bool accumulate, float* dtable, ReduceScratch& scratch,
                               cudaStream_t stream)
{
    if (!accumulate && vocab > 0 && dim > 0)
        MIXLAB_CUDA_CHECK(
            cudaMemsetAsync(dtable, 0, std::size_t(vocab) * dim * sizeof(float), stream));
    if (rows <= 0 || dim <= 0) return;
    const int end_bit = key_bits(vocab);
    // The sort's temporary size depends on rows and bits only: asked without running.
    std::size_t sort_bytes = 0;
    MIXLAB_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(
        nullptr, sort_bytes, static_cast<const std::int32_t*>(nullptr),
        static_cast<std::int32_t*>(nullptr), static_cast<const std::int32_t*>(nullptr),
        static_cast<std::int32_t*>(nullptr), rows, 0, end_bit, stream));
    const std::size_t array = align_up(std::size_t(rows) * sizeof(std::int32_t));
    const std::size_t total = 4 * array + align_up(sort_bytes);
    auto* base = reinterpret_cast<unsigned char*>(scratch.get((total + 3) / sizeof(float)));
    auto* keys_in = reinterpret_cast<std::int32_t*>(base);
    auto* rows_in = reinterpret_cast<std::int32_t*>(base + array);
    auto* keys = reinterpret_cast<std::int32_t*>(base + 2 * array);
    auto* rows_of = reinterpret_cast<std::int32_t*>(base + 3 * array);
    void* sort_temp = base + 4 * array;

    embedding_keys_kernel<<<grid_for(std::size_t(rows), k_threads), k_threads, 0, stream>>>(
        ids, rows, vocab, keys_in, rows_in);
    MIXLAB_CUDA_CHECK_LAUNCH("embedding_keys_kernel");
    MIXLAB_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(sort_temp, sort_bytes, keys_in, keys, rows_in,
                                                      rows_of, rows, 0, end_bit, stream));
    const unsigned threads = dim >= int(k_threads) ? k_threads : unsigned((dim + 31) / 32 * 32);
    dispatch_floating(t, "embedding_backward", [&](auto tag) {
        using T = typename decltype(tag)::type;
        embedding_grad_kernel<T><<<unsigned(rows), threads, 0, stream>>>(
            static_cast<const T*>(dy), keys, rows_of, rows, dim, vocab, dtable);
    });
    MIXLAB_CUDA_CHECK_LAUNCH("embedding_grad_kernel");
}

} // namespace mixlab::cuda
