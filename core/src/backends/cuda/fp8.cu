// fp8 kernels: quantize (flat, or through a shared-memory tile when a transposed copy,
// zero padding or column sums are wanted, so that every write is coalesced) and the
// delayed-scaling update. One pass reads x once and writes what the dense layer's three
// GEMMs read (y, y_t, k padded to 16) and, for dZ, the bias gradient's partial sums.
#include "backends/cuda/fp8.cuh"

#include "backends/cuda/async_copy.cuh"
#include "backends/cuda/bias_grad.cuh"
#include "backends/cuda/column_reduce.cuh"
#include "backends/cuda/column_split.h"
#include "backends/cuda/cuda_check.h"
#include "backends/cuda/dependent_launch.cuh"
#include "backends/cuda/device_types.cuh"
#include "backends/cuda/fp8_round.cuh"
#include "backends/cuda/gather_norm.cuh"
#include "base/hd_math.h"
#include "mixlab/backend.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <tuple>

namespace mixlab::cuda {

namespace {

constexpr unsigned k_threads = 256;
// The transposing kernels' tile: 64 columns, 256 threads.
constexpr int k_tile = 64;
// The tiled pass's rows a tile, by source (Source::k_tile_rows): a thread loads
// k_tile_rows / 16 rows' values before converting any. A gathered row's raw values are
// small (a word and a sample index), so eight rows in flight fit: the gather with X1's
// quantize 30.9 -> 26.3 us on an H100 (bench/NOTES.md 42); a matrix's are four elements
// and four of the gate, and eight rows took dZ1's pass to 117 registers and 29.0 -> 37.2
// us (and all of W1's passes 99.2 -> 107.6 us on the H200, NOTES 33).
constexpr int k_matrix_tile_rows = 64, k_gather_tile_rows = 128;
// Staged loads (fp8_quantize_tiled's `staged`): tiles in the ring, so k_stage_depth - 1
// tiles' loads in flight while one converts. Three measured the same as two on an H100
// (dZ1's pass 23.5 against 23.3 us, the step 0.4339 against 0.4336 ms) and take 12 KB more
// a block. Where even two would cost resident blocks (Ada's 100 KB an SM), the launch loads
// through registers instead (staged_ring_bytes).
constexpr int k_stage_depth = 2;

// The staged loads' ring in dynamic shared memory, one layout for the kernel that indexes
// it and the launch that sizes it: k_stage_depth slots of a row tile's x values (a
// Source::Stage for each of a thread's k_tile_rows / 16 rows), then, only with a relu
// mask, as many slots of the tile's mask words.
template <class Source>
struct StageRing {
    using Stage = typename Source::Stage;
    static constexpr int k_slot = Source::k_tile_rows / 16 * int(k_threads); // entries a slot
    static constexpr std::size_t bytes(bool mask)
    {
        return std::size_t(k_stage_depth) * std::size_t(k_slot) *
               (sizeof(Stage) + (mask ? sizeof(std::uint32_t) : 0));
    }
    // Row i's entry of this thread in slot `slot`.
    static __device__ __forceinline__ Stage* x(unsigned char* ring, int slot, int i)
    {
        return reinterpret_cast<Stage*>(ring) + slot * k_slot + i * int(k_threads) +
               int(threadIdx.x);
    }
    static __device__ __forceinline__ std::uint32_t* mask(unsigned char* ring, int slot, int i)
    {
        return reinterpret_cast<std::uint32_t*>(reinterpret_cast<Stage*>(ring) +
                                                k_stage_depth * k_slot) +
               slot * k_slot + i * int(k_threads) + int(threadIdx.x);
    }
};

// The two 16-bit elements of a 32-bit word as floats, element 0 the low half. Unpacked
// from the word's bits: reading a loaded array back through a T pointer (the first
// version) put it in local memory, and the H200's profile showed the quantize passes
// waiting on those loads at a third of the copy bandwidth.
__device__ __forceinline__ void unpack2(std::uint32_t w, bf16, float& lo, float& hi)
{
    lo = __uint_as_float(w << 16); // bf16 is fp32's upper half
    hi = __uint_as_float(w & 0xFFFF0000u);
}
__device__ __forceinline__ void unpack2(std::uint32_t w, __half, float& lo, float& hi)
{
    lo = __half2float(__ushort_as_half(static_cast<unsigned short>(w & 0xFFFFu)));
    hi = __half2float(__ushort_as_half(static_cast<unsigned short>(w >> 16)));
}

// N (4 or 8) consecutive elements as floats, p aligned to N * sizeof(T) bytes: 16-byte
// loads (8-byte ones for four 16-bit elements), unpacked in registers.
template <int N, class T>
__device__ __forceinline__ void load_vec(const T* p, float (&v)[N])
{
    static_assert(N == 4 || N == 8, "four or eight elements");
    if constexpr (sizeof(T) == 4) {
#pragma unroll
        for (int w = 0; w < N / 4; ++w) {
            const float4 f = reinterpret_cast<const float4*>(p)[w];
            v[4 * w] = f.x;
            v[4 * w + 1] = f.y;
            v[4 * w + 2] = f.z;
            v[4 * w + 3] = f.w;
        }
    } else if constexpr (N == 4) {
        const uint2 w = *reinterpret_cast<const uint2*>(p);
        unpack2(w.x, T{}, v[0], v[1]);
        unpack2(w.y, T{}, v[2], v[3]);
    } else {
        const uint4 w = *reinterpret_cast<const uint4*>(p);
        unpack2(w.x, T{}, v[0], v[1]);
        unpack2(w.y, T{}, v[2], v[3]);
        unpack2(w.z, T{}, v[4], v[5]);
        unpack2(w.w, T{}, v[6], v[7]);
    }
}

template <bool Amax>
__device__ __forceinline__ void publish_amax(float amax, float* slot)
{
    if constexpr (Amax) {
        __shared__ float scratch[32];
        fold_block_amax(amax, slot, scratch);
    }
}

// y only, its row length (cols) a multiple of k_fp8_pad (nothing to pad): 8 elements a thread per
// iteration (16-byte loads of 16-bit x, two of fp32 x; 8-byte stores) over the first
// vec_groups * 8 elements, one at a time after that.
template <class T, bool E5M2, bool Amax>
__global__ void __launch_bounds__(k_threads)
    fp8_quantize_flat(const T* __restrict__ x, std::size_t n, std::size_t vec_groups,
                      const float* __restrict__ scale_p, float* amax_slot,
                      std::uint8_t* __restrict__ y)
{
    wait_for_previous_grid();
    const float scale = *scale_p;
    float amax = 0.0f;
    const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
    const std::size_t tid = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
    for (std::size_t g = tid; g < vec_groups; g += stride) {
        float v[8];
        load_vec<8>(x + g * 8, v);
        float lo[4] = {v[0], v[1], v[2], v[3]}, hi[4] = {v[4], v[5], v[6], v[7]};
        if (Amax) {
#pragma unroll
            for (int i = 0; i < 8; ++i) amax = fold_amax(amax, v[i]);
        }
        reinterpret_cast<uint2*>(y)[g] =
            make_uint2(quantize4<E5M2>(lo, scale), quantize4<E5M2>(hi, scale));
    }
    for (std::size_t i = vec_groups * 8 + tid; i < n; i += stride) {
        float v[4] = {to_f32(x[i]), 0.0f, 0.0f, 0.0f};
        if (Amax) amax = fold_amax(amax, v[0]);
        y[i] = std::uint8_t(quantize4<E5M2>(v, scale) & 0xFFu);
    }
    publish_amax<Amax>(amax, amax_slot);
}

// What the tiled pass reads, four consecutive elements of a row at a time (gc a multiple
// of 4; zero past the rows and columns, so that the edge tiles write the padding); `full`:
// a whole aligned group inside the matrix (the tile is full and the source aligned).
// begin() runs once a block before any load. fetch() does a group's global loads only and
// convert() the rest, so that the pass can put every load of a row tile before any of
// its stores (see fp8_quantize_tiled); after_loads() holds a source's own stores.

// A matrix x (16-bit or fp32), read as 0 where relu's 16-bit gate (when given) is <= 0:
// relu's backward, dZ = dY where Y > 0, in the pass that quantizes dZ.
template <class T>
struct MatrixSource {
    const T* __restrict__ x;
    const T* __restrict__ gate;
    int cols;

    static constexpr int k_tile_rows = k_matrix_tile_rows;
    // The elements as loaded; convert() widens them.
    struct Raw {
        VecT<T, 4> v;
        VecT<T, 4> g;
    };
    // A full tile's loads staged through shared memory (see fp8_quantize_tiled): four
    // 16-bit elements are one 8-byte copy. Only without the 16-bit gate (dZ's gate comes
    // as relu's bits, which the pass stages itself).
    static constexpr bool k_stages = sizeof(T) == 2;
    using Stage = VecT<T, 4>;
    bool stages() const { return gate == nullptr; }
    __device__ __forceinline__ void stage(int gr, int gc, Stage* to) const
    {
        async_copy<sizeof(Stage)>(to, x + std::size_t(gr) * std::size_t(cols) + std::size_t(gc));
    }
    __device__ __forceinline__ Raw staged(const Stage& from) const
    {
        Raw r;
        r.v = from;
        return r;
    }
    __device__ __forceinline__ void begin() {}
    __device__ __forceinline__ void after_loads(int, int, int) const {}
    __device__ __forceinline__ int row(int gr, int) const { return gr; }
    __device__ __forceinline__ Raw fetch(int gr, int, int gc, int rows, bool full) const
    {
        const std::size_t at = std::size_t(gr) * std::size_t(cols) + std::size_t(gc);
        using V = VecT<T, 4>;
        Raw r;
        if (full) {
            r.v = *reinterpret_cast<const V*>(x + at);
            if (gate) r.g = *reinterpret_cast<const V*>(gate + at);
            return r;
        }
#pragma unroll
        for (int q = 0; q < 4; ++q) {
            const bool in = gr < rows && gc + q < cols;
            r.v.v[q] = in ? x[at + std::size_t(q)] : from_f32<T>(0.0f);
            if (gate) r.g.v[q] = in ? gate[at + std::size_t(q)] : from_f32<T>(0.0f);
        }
        return r;
    }
    __device__ __forceinline__ void convert(const Raw& r, int, float (&v)[4]) const
    {
#pragma unroll
        for (int q = 0; q < 4; ++q) {
            const float value = to_f32(r.v.v[q]);
            v[q] = !gate || to_f32(r.g.v[q]) > 0.0f ? value : 0.0f;
        }
    }
};

// The batch gather (gather.cu's, without augmentation) as a source: row gr is sample
// order[offset + gr] of the uint8 dataset, normalised by the same expression and rounded
// to the batch's dtype T first, so the bytes are those of fp8_quantize over the batch
// gather_batch would have written; the row's label goes to out_labels with its first four
// values. The step counter, when given, moves the batch as in the gather.
struct GatherFields {
    const std::uint8_t* images;
    const std::uint8_t* labels;
    const std::int32_t* order;
    std::int64_t offset;
    int channels;
    float mean[4];
    float inv_std[4];
    const std::uint64_t* step_counter;
    std::int64_t steps_per_epoch;
    int batch;
    std::int32_t* out_labels;
};

template <class T>
struct GatherSource {
    GatherFields f;
    int cols; // the sample's size
    const float (*norm)[256] = nullptr;
    static constexpr int k_tile_rows = k_gather_tile_rows;
    // A row's loads wait on its order load: staged through registers only.
    static constexpr bool k_stages = false;
    using Stage = std::uint32_t;

    struct Raw {
        std::uint32_t bytes; // the four source bytes, byte q the value at gc + q
        int valid;           // how many of them lie inside the row (0 past the rows)
    };
    // Every (channel, byte) normalised and rounded once per block (gather_norm.cuh).
    __device__ __forceinline__ void begin()
    {
        __shared__ float table[4][256];
        fill_norm_table<T>(table, f.channels, f.mean, f.inv_std);
        norm = table;
        if (f.step_counter)
            f.offset += std::int64_t(*f.step_counter % std::uint64_t(f.steps_per_epoch)) * f.batch;
    }
    // The row's label, by the threads holding its first four values.
    __device__ __forceinline__ void after_loads(int gr, int gc, int rows) const
    {
        if (gc == 0 && gr < rows) f.out_labels[gr] = f.labels[f.order[f.offset + gr]];
    }
    // The dataset's sample behind batch row gr (0 past the rows): the tile's four order
    // loads go out before any of the image loads that wait on them.
    __device__ __forceinline__ std::int32_t row(int gr, int rows) const
    {
        return gr < rows ? f.order[f.offset + gr] : 0;
    }
    __device__ __forceinline__ Raw fetch(int gr, std::int32_t src, int gc, int rows,
                                         bool full) const
    {
        const std::uint8_t* img = f.images + std::int64_t(src) * std::int64_t(cols);
        if (full) return {*reinterpret_cast<const std::uint32_t*>(img + gc), 4};
        Raw r{0u, 0};
        if (gr >= rows || gc >= cols) return r;
        r.valid = min(4, cols - gc);
#pragma unroll
        for (int q = 0; q < 4; ++q)
            if (q < r.valid) r.bytes |= std::uint32_t(img[gc + q]) << (8 * q);
        return r;
    }
    __device__ __forceinline__ void convert(const Raw& r, int gc, float (&v)[4]) const
    {
        int c = gc % f.channels;
#pragma unroll
        for (int q = 0; q < 4; ++q) {
            v[q] = q < r.valid ? norm[c][(r.bytes >> (8 * q)) & 0xFFu] : 0.0f;
            if (++c == f.channels) c = 0;
        }
    }
};

// Relu's gate bits (backend.h's relu_mask): `bits` holds this thread's four (bit q: the
// value at column c0 + 4 (tx & 15) + q > 0); the eight lanes tx & 7 of a 32-column group
// share a row and a word, OR-ed by shuffles (every lane of the warp must call this) and
// stored by the first of them.
__device__ __forceinline__ void store_gate_word(std::uint32_t* mask_out, unsigned bits, int tx,
                                                int row, int rows, int c0, int mask_ld)
{
    bits <<= 4 * (tx & 7);
    bits |= __shfl_xor_sync(0xffffffffu, bits, 1);
    bits |= __shfl_xor_sync(0xffffffffu, bits, 2);
    bits |= __shfl_xor_sync(0xffffffffu, bits, 4);
    const int word = (c0 >> 5) + (tx >> 3);
    if ((tx & 7) == 0 && row < rows && word < mask_ld)
        mask_out[std::size_t(row) * std::size_t(mask_ld) + std::size_t(word)] = bits;
}

// Bytes a row of the transposing kernels' shared tiles: 17 words, so that
// store_tile_transposed's reads (rows 4 and 16 apart across a warp) meet at most two to
// a bank.
constexpr int k_tile_stride = k_tile + 4;

// The 64 x 64 bytes of a shared tile (row r at tile + r * k_tile_stride) written to y_t
// transposed: the tile's column i to y_t's row c0 + i at columns r0 .. r0 + 63, rows past
// `cols` and columns past t_ld left out; every store 16 bytes (y_t 16-byte aligned, t_ld a
// multiple of 16). Lane (g, hh, q) = (lane / 16, lane / 4 % 4, lane % 4) of warp w takes
// output rows c0 + 4 j .. + 3 (j = 2 w + g) over the tile's rows 16 hh + 4 q .. + 3: four
// word reads and a 4 x 4 byte transpose give a word of each of those output rows; the four
// lanes of one hh swap words (two shuffle rounds), so that lane q holds output row
// c0 + 4 j + q's 16 bytes at columns r0 + 16 hh, one store; a warp's stores are eight
// whole 64-byte row segments. Every thread of the block calls it (the shuffles), after a
// barrier that follows the tile's writes. The 4-byte version (a word a thread per store,
// four of them) took 12.1-12.4 us for W1's X2 transpose on an H100 (bench/NOTES.md 44).
__device__ __forceinline__ void store_tile_transposed(const std::uint8_t* tile, int r0, int c0,
                                                      int cols, int t_ld,
                                                      std::uint8_t* __restrict__ y_t)
{
    static_assert(k_threads == 256 && k_tile == 64, "16 lanes' words a row of 64 bytes");
    const int lane = int(threadIdx.x) % 32, w = int(threadIdx.x) / 32;
    const int j = 2 * w + lane / 16, hh = lane / 4 % 4, q = lane % 4;
    std::uint32_t rows_w[4], a[4];
#pragma unroll
    for (int i = 0; i < 4; ++i)
        rows_w[i] = *reinterpret_cast<const std::uint32_t*>(
            tile + (16 * hh + 4 * q + i) * k_tile_stride + 4 * j);
    transpose4x4(rows_w, a); // a[i]: output row c0 + 4 j + i at the tile's rows 16 hh + 4 q ..
    // Lane q takes a[q] of the four lanes (a 4 x 4 transpose of words across them): the
    // odd lane of a pair sends its words 0 and 2, the even one 1 and 3; then the high pair
    // sends 0 and 1, the low one 2 and 3.
    // Selects, not a[] indexed by lane: that would put a[] in local memory.
    const bool odd = q & 1, high = q & 2;
    const std::uint32_t y0 = __shfl_xor_sync(0xffffffffu, odd ? a[0] : a[1], 1);
    const std::uint32_t y1 = __shfl_xor_sync(0xffffffffu, odd ? a[2] : a[3], 1);
    a[0] = odd ? y0 : a[0];
    a[1] = odd ? a[1] : y0;
    a[2] = odd ? y1 : a[2];
    a[3] = odd ? a[3] : y1;
    const std::uint32_t z0 = __shfl_xor_sync(0xffffffffu, high ? a[0] : a[2], 2);
    const std::uint32_t z1 = __shfl_xor_sync(0xffffffffu, high ? a[1] : a[3], 2);
    a[0] = high ? z0 : a[0];
    a[1] = high ? z1 : a[1];
    a[2] = high ? a[2] : z0;
    a[3] = high ? a[3] : z1;
    const int out_row = c0 + 4 * j + q, out_col = r0 + 16 * hh;
    if (out_row < cols && out_col < t_ld)
        *reinterpret_cast<uint4*>(y_t + std::size_t(out_row) * std::size_t(t_ld) +
                                  std::size_t(out_col)) = make_uint4(a[0], a[1], a[2], a[3]);
}

// One Source::k_tile_rows x 64 tile of x at a time, x read as zero past its rows and columns so
// that the tiles on the edges also write the padding (y's columns up to y_ld, y_t's up to
// t_ld: both fp8_padded, never past the last tile). Thread (tx, ty) = (t % 16, t / 16)
// converts 4 consecutive elements of rows ty, ty + 16, ... (one 4-element load, one
// 4-byte store to y each) and keeps the bytes in shared memory; then transposes the
// tile's 4 x 4 bytes at rows 4 tx (+ 64 ...), columns 4 ty, into 4 bytes of y_t's rows
// 4 ty .. 4 ty + 3 each.
// Block (blockIdx.x, blockIdx.y) takes the group of group_tiles consecutive row tiles
// blockIdx.x in column tile blockIdx.y. Sums: the group's column sums of x to
// partials[group][col]: the partials follow the shape and group_tiles, never the GPU
// (resident_grid.cuh's rule). `aligned`: x's rows start on 4-element boundaries, so full
// tiles take the vector loads (y and y_t always start on 16 bytes: validate's fp8_output).
// Relu's gate as bits (backend.h's relu_mask): `mask` read in place of `gate`, or x > 0
// written to `mask_out` (a word is eight threads' four bits: lanes 8 q .. 8 q + 7 of a
// warp share a row and a word, OR-ed together by shuffles). Both uniform per launch.
// `staged` (staged_ring_bytes decides: the 16-bit matrix passes, a block taking several
// tiles, where the ring costs no resident blocks): a
// full tile's x and mask words are copied to the dynamic shared memory by cp.async,
// k_stage_depth - 1 tiles ahead of the one being converted, so a thread has that many
// tiles' loads in flight and no registers held for them. Each thread reads back only
// what it copied itself: no barrier between. Every slot commits a cp.async group, empty
// for a tile past the group or not full, so tile rt's copies are done once at most
// k_stage_depth - 1 groups are in flight.
template <class Source, bool E5M2, bool Amax, bool WriteY, bool WriteT, bool Sums>
__global__ void __launch_bounds__(k_threads)
    fp8_quantize_tiled(Source source, const std::uint32_t* __restrict__ mask,
                       std::uint32_t* __restrict__ mask_out, int rows, int cols, int y_ld, int t_ld,
                       const float* __restrict__ scale_p, float* amax_slot,
                       std::uint8_t* __restrict__ y, std::uint8_t* __restrict__ y_t,
                       float* __restrict__ partials, int group_tiles, bool aligned, bool staged)
{
    wait_for_previous_grid();
    constexpr int k_tile_rows = Source::k_tile_rows;
    constexpr int k_rows_each = k_tile_rows / 16;
    const int mask_ld = (cols + 31) / 32; // backend.h's relu_mask_words
    __shared__ __align__(16) std::uint8_t tile[k_tile_rows][k_tile_stride];
    __shared__ float sums[Sums ? 16 : 1][Sums ? k_tile : 1];
    Source src = source;
    src.begin();
    const float scale = *scale_p;
    const int tx = int(threadIdx.x) & 15, ty = int(threadIdx.x) >> 4;
    const int c0 = int(blockIdx.y) * k_tile, c = 4 * tx, gc = c0 + c;
    float amax = 0.0f;
    float s[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    const int row_tiles = (rows + k_tile_rows - 1) / k_tile_rows;
    const int group = int(blockIdx.x);
    const int first = group * group_tiles, end = min(row_tiles, first + group_tiles);
    // Row gr's relu mask word holding this thread's four bits, at bit gc & 31 (gc is a
    // multiple of 4: the four lie in one word).
    const auto mask_word = [&](int gr) {
        return mask + std::size_t(gr) * std::size_t(mask_ld) + std::size_t(gc >> 5);
    };
    const auto full_tile = [&](int rt) {
        return rt < end && aligned && (rt + 1) * k_tile_rows <= rows && c0 + k_tile <= cols;
    };
    // The ring (StageRing's layout): this thread's row-i entries of tile rt's slot.
    using Ring = StageRing<Source>;
    extern __shared__ __align__(16) unsigned char ring[];
    const auto ring_x = [&](int rt, int i) {
        return Ring::x(ring, (rt - first) % k_stage_depth, i);
    };
    const auto ring_mask = [&](int rt, int i) {
        return Ring::mask(ring, (rt - first) % k_stage_depth, i);
    };
    // Row tile rt's x (through the source) and mask words into its slot, as one cp.async
    // group (empty when the tile is not staged).
    const auto stage_tile = [&](int rt) {
        if constexpr (Source::k_stages) {
            if (full_tile(rt)) {
#pragma unroll
                for (int i = 0; i < k_rows_each; ++i) {
                    const int gr = rt * k_tile_rows + ty + 16 * i;
                    src.stage(gr, gc, ring_x(rt, i));
                    if (mask) async_copy<4>(ring_mask(rt, i), mask_word(gr));
                }
            }
            async_commit();
        }
    };
    if (staged)
        for (int j = 0; j < k_stage_depth - 1; ++j) stage_tile(first + j);
    for (int rt = first; rt < end; ++rt) {
        const int r0 = rt * k_tile_rows;
        const bool full = full_tile(rt);
        typename Source::Raw raw[k_rows_each];
        unsigned mask_bits[k_rows_each];
        bool loaded = false;
        if constexpr (Source::k_stages) {
            if (staged) {
                stage_tile(rt + k_stage_depth - 1);
                async_wait<k_stage_depth - 1>(); // tile rt's group is done
                if (full) {
#pragma unroll
                    for (int i = 0; i < k_rows_each; ++i) {
                        raw[i] = src.staged(*ring_x(rt, i));
                        mask_bits[i] = mask ? *ring_mask(rt, i) >> (gc & 31) : 0u;
                    }
                    loaded = true;
                }
            }
        }
        if (!loaded) {
            // Every global load of the row tile before any store: the compiler keeps a load
            // below a store that might alias it (PTX showed each row's loads after the last
            // row's stores). Measured on an H100 (bench/NOTES.md 41): the gather with X1's
            // quantize 33.4 -> 29.4 us, dZ2's pass 11.7 -> 10.7, X2's transpose 13.3 -> 12.3,
            // but dZ1's pass (no y stores to wait behind) 26.0 -> 30.6: the step unchanged.
            decltype(src.row(0, 0)) at[k_rows_each];
#pragma unroll
            for (int i = 0; i < k_rows_each; ++i) at[i] = src.row(r0 + ty + 16 * i, rows);
#pragma unroll
            for (int i = 0; i < k_rows_each; ++i)
                raw[i] = src.fetch(r0 + ty + 16 * i, at[i], gc, rows, full);
#pragma unroll
            for (int i = 0; i < k_rows_each; ++i) {
                const int gr = r0 + ty + 16 * i;
                // relu's backward from bits (uniform: the masks are per launch).
                mask_bits[i] = mask && gr < rows && gc < cols ? *mask_word(gr) >> (gc & 31) : 0u;
            }
        }
#pragma unroll
        for (int i = 0; i < k_rows_each; ++i) src.after_loads(r0 + ty + 16 * i, gc, rows);
#pragma unroll
        for (int i = 0; i < k_rows_each; ++i) {
            const int r = ty + 16 * i, gr = r0 + r;
            float v[4];
            src.convert(raw[i], gc, v);
            if (mask) {
#pragma unroll
                for (int q = 0; q < 4; ++q) v[q] = (mask_bits[i] >> q) & 1u ? v[q] : 0.0f;
            } else if (mask_out) {
                // Every lane takes part (the shuffles); out-of-range values are 0: no bit.
                unsigned bits = 0;
#pragma unroll
                for (int q = 0; q < 4; ++q) bits |= unsigned(v[q] > 0.0f) << q;
                store_gate_word(mask_out, bits, tx, gr, rows, c0, mask_ld);
            }
#pragma unroll
            for (int q = 0; q < 4; ++q) {
                if (Amax) amax = fold_amax(amax, v[q]);
                if (Sums) s[q] += v[q];
            }
            const std::uint32_t packed = quantize4<E5M2>(v, scale);
            if (WriteY && gr < rows && gc < y_ld) {
                // A whole word: y's rows are 16-byte multiples from a 16-byte boundary.
                *reinterpret_cast<std::uint32_t*>(y + std::size_t(gr) * std::size_t(y_ld) +
                                                  std::size_t(gc)) = packed;
            }
            if (WriteT) *reinterpret_cast<std::uint32_t*>(&tile[r][c]) = packed;
        }
        if constexpr (WriteT) {
            __syncthreads();
            // Thread (tx, ty) transposes the 4 x 4 bytes at the tile's rows 4 tx ..,
            // columns 4 ty ..: four word reads, byte permutes, four words to y_t's rows
            // c0 + 4 ty + q at columns r0 + 4 tx. Not store_tile_transposed: its 16-byte
            // stores wait on two shuffle rounds, and here every warp waits for the slowest
            // at the barrier that follows; the gather with X1's quantize took 25.8 -> 28.4
            // us with it and dZ1's pass 22.7 -> 25.5 on an H100 (bench/NOTES.md 45).
#pragma unroll
            for (int h = 0; h < k_tile_rows / 64; ++h) {
                const int r = 4 * tx + 64 * h, j = 4 * ty;
                if (r0 + r < t_ld) {
                    std::uint32_t w[4], col[4];
#pragma unroll
                    for (int q = 0; q < 4; ++q)
                        w[q] = *reinterpret_cast<const std::uint32_t*>(&tile[r + q][j]);
                    transpose4x4(w, col);
#pragma unroll
                    for (int q = 0; q < 4; ++q) {
                        if (c0 + j + q >= cols) break;
                        *reinterpret_cast<std::uint32_t*>(
                            y_t + std::size_t(c0 + j + q) * std::size_t(t_ld) +
                            std::size_t(r0 + r)) = col[q];
                    }
                }
            }
            __syncthreads(); // the tile is written again by the next row tile
        }
    }
    if constexpr (Sums) {
#pragma unroll
        for (int q = 0; q < 4; ++q) sums[ty][c + q] = s[q];
        __syncthreads();
        if (threadIdx.x < unsigned(k_tile) && c0 + int(threadIdx.x) < cols) {
            float total = 0.0f;
#pragma unroll
            for (int k = 0; k < 16; ++k) total += sums[k][threadIdx.x];
            partials[std::size_t(group) * std::size_t(cols) + std::size_t(c0) + threadIdx.x] =
                total;
        }
    }
    publish_amax<Amax>(amax, amax_slot);
}

// The transposes of one launch, by value: job j's tiles are blocks first_block ..
// (first_block of job j + 1) - 1, row tile fastest.
struct TransposeLaunch {
    struct Job {
        const std::uint8_t* y;
        std::uint8_t* y_t;
        std::uint32_t* mask_out;
        int rows, cols, y_ld, t_ld, row_tiles; // y_ld, t_ld: fp8_padded(cols), (rows)
        unsigned first_block;
    };
    Job job[k_transpose_jobs];
    int count;
};

// y_t = y transposed for each job, one 64 x 64 tile a block, every global access 16
// bytes: thread t reads 16 bytes of the tile's row t / 4 at column 16 (t % 4) (rows past
// `rows` as zero, so the edge tiles write y_t's padding; y's columns past `cols` are its
// zero padding, read and never written out) into shared memory, then
// store_tile_transposed. With mask_out (E4M3 y), each value > 0 as a bit, as
// fp8_quantize_tiled writes them. Several jobs a launch: a layer's weights (W1's W2,
// 752 tiles) would otherwise run as a partial wave of their own after its input's.
__global__ void __launch_bounds__(k_threads) fp8_transpose_kernel(TransposeLaunch launch)
{
    wait_for_previous_grid();
    // The block's job, picked with constant indices (a parameter indexed at run time
    // would be copied to local memory first).
    TransposeLaunch::Job job = launch.job[0];
#pragma unroll
    for (int k = 1; k < int(k_transpose_jobs); ++k)
        if (k < launch.count && blockIdx.x >= launch.job[k].first_block) job = launch.job[k];
    const std::uint8_t* __restrict__ y = job.y;
    std::uint8_t* __restrict__ y_t = job.y_t;
    std::uint32_t* __restrict__ mask_out = job.mask_out;
    const int rows = job.rows, cols = job.cols;
    const int y_ld = job.y_ld, t_ld = job.t_ld;
    const int mask_ld = (cols + 31) / 32; // backend.h's relu_mask_words
    __shared__ __align__(16) std::uint8_t tile[k_tile * k_tile_stride];
    const int t = int(threadIdx.x);
    const int local = int(blockIdx.x - job.first_block);
    const int r0 = local % job.row_tiles * k_tile, c0 = local / job.row_tiles * k_tile;
    const int r = t / 4, chunk = t % 4, c = 16 * chunk;
    uint4 v = make_uint4(0u, 0u, 0u, 0u);
    if (r0 + r < rows && c0 + c < y_ld)
        v = *reinterpret_cast<const uint4*>(y + std::size_t(r0 + r) * std::size_t(y_ld) +
                                            std::size_t(c0 + c));
    // Four word stores: the tile's rows (17 words) are not 16-byte aligned.
    auto* at = reinterpret_cast<std::uint32_t*>(tile + r * k_tile_stride + c);
    at[0] = v.x;
    at[1] = v.y;
    at[2] = v.z;
    at[3] = v.w;
    if (mask_out) { // uniform: every lane takes part in the shuffle
        // An E4M3 byte > 0: sign clear, not zero, not NaN (0x7F); none past cols.
        const std::uint32_t words[4] = {v.x, v.y, v.z, v.w};
        unsigned bits = 0;
#pragma unroll
        for (int q = 0; q < 16; ++q) {
            const unsigned b = (words[q / 4] >> (8 * (q % 4))) & 0xFFu;
            bits |= unsigned(b != 0u && b < 0x7Fu && c0 + c + q < cols) << q;
        }
        // Chunks 2 k and 2 k + 1 (lanes t and t ^ 1) make word k of the tile's row.
        const unsigned other = __shfl_xor_sync(0xffffffffu, bits, 1);
        const int word = (c0 >> 5) + chunk / 2;
        if (chunk % 2 == 0 && r0 + r < rows && word < mask_ld)
            mask_out[std::size_t(r0 + r) * std::size_t(mask_ld) + std::size_t(word)] =
                bits | other << 16;
    }
    __syncthreads();
    store_tile_transposed(tile, r0, c0, cols, t_ld, y_t);
}

// One warp a tensor, in place: the lanes read the history 32 slots at a time from the
// oldest end down and write each value one slot older (the slots above a chunk were read
// with the chunk before), a load and a store a slot; the amax folds along the way and
// across the warp (a max is exact in any order; a NaN slot wins, the newest one, as
// hd::fp8_history_amax returns the first it meets). hd::fp8_apply_history_amax, the CPU's
// code, sets the scales. Thread 0 of a block working through a shared copy, as before,
// took 4.2 us of each W1 fp8 step for six tensors of 16 slots (bench/NOTES.md 51).
constexpr int k_update_warps = 4;
__global__ void __launch_bounds__(32 * k_update_warps)
    fp8_update_kernel(float* meta, int tensors, int history_len, std::size_t block_floats,
                      int margin)
{
    wait_for_previous_grid();
    const int lane = int(threadIdx.x) & 31;
    const int tensor = int(blockIdx.x) * k_update_warps + int(threadIdx.x >> 5);
    if (tensor >= tensors) return; // a whole warp: the shuffles below see every lane
    float* block = meta + std::size_t(tensor) * block_floats;
    float* history = block + hd::k_fp8_block_history;
    float amax = 0.0f, nan = 0.0f;
    int nan_at = INT_MAX;
    for (int base = (history_len - 1) / 32 * 32; base >= 0; base -= 32) {
        const int i = base + lane;
        const float h = i < history_len ? history[i] : 0.0f;
        if (h != h) { // chunks go down: this lane's newest NaN comes last
            nan_at = i;
            nan = h;
        } else if (h > amax) {
            amax = h;
        }
        __syncwarp(); // the chunk is read before any lane writes into it
        if (i + 1 < history_len) history[i + 1] = h;
    }
    for (int o = 16; o > 0; o >>= 1) {
        const float other = __shfl_xor_sync(0xffffffffu, amax, o);
        const float other_nan = __shfl_xor_sync(0xffffffffu, nan, o);
        const int other_at = __shfl_xor_sync(0xffffffffu, nan_at, o);
        if (other > amax) amax = other;
        if (other_at < nan_at) {
            nan_at = other_at;
            nan = other_nan;
        }
    }
    if (lane == 0) {
        if (history_len > 0) history[0] = 0.0f;
        hd::fp8_apply_history_amax(block, nan_at != INT_MAX ? nan : amax, margin);
    }
}

bool aligned_to(const void* p, std::size_t bytes)
{
    return reinterpret_cast<std::uintptr_t>(p) % bytes == 0;
}

struct QuantizeArgs {
    const std::uint32_t* mask; // relu's gate as bits, or null
    std::uint32_t* mask_out;   // x > 0 as bits, or null
    int rows, cols;
    const float* scale;
    float* amax_slot;
    std::uint8_t *y, *y_t;
    float* partials;      // column-sum partials, groups x cols, or null
    unsigned groups;      // row-tile groups (each a partial's rows with sums)
    unsigned group_tiles; // consecutive row tiles a group
};

// The dynamic shared memory a launch of `kernel` stages its loads through, or 0 for loads
// through registers. Staged only where a block has tiles to stage ahead (a block of one
// tile would only wait for its copies: dZ2's pass, one tile a group, 10.8 -> 12.0 us
// staged on an H100, bench/NOTES.md 43), and only where the ring costs no resident
// blocks: on an H100 (228 KB an SM) dZ1's pass keeps the four blocks its registers allow,
// but on Ada (100 KB) the ring would leave room for two, halving the loads in flight that
// staging is there to add.
template <class Kernel, class Source>
std::size_t staged_ring_bytes(Kernel kernel, const Source& src, const QuantizeArgs& a)
{
    if constexpr (!Source::k_stages) {
        return 0;
    } else {
        if (!src.stages() || a.group_tiles < 2) return 0;
        const bool mask = a.mask != nullptr;
        const std::size_t bytes = StageRing<Source>::bytes(mask);
        // The answer depends on the kernel, the device and the mask only: asked once each
        // (the occupancy queries are host time on every launch outside a recorded graph).
        int device = 0;
        MIXLAB_CUDA_CHECK(cudaGetDevice(&device));
        const auto key = std::make_tuple(reinterpret_cast<const void*>(kernel), device, mask);
        static std::mutex lock;
        static std::map<std::tuple<const void*, int, bool>, bool> keeps_blocks;
        const std::lock_guard<std::mutex> hold(lock);
        auto it = keeps_blocks.find(key);
        if (it == keeps_blocks.end()) {
            int with_ring = 0, without = 0;
            MIXLAB_CUDA_CHECK(
                cudaOccupancyMaxActiveBlocksPerMultiprocessor(&without, kernel, int(k_threads), 0));
            MIXLAB_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&with_ring, kernel,
                                                                            int(k_threads), bytes));
            it = keeps_blocks.emplace(key, with_ring >= without).first;
        }
        return it->second ? bytes : 0;
    }
}

template <class Source, bool E5M2, bool Amax, bool WriteY, bool WriteT, bool Sums>
void launch_tiled(const Source& src, const QuantizeArgs& a, bool aligned, cudaStream_t stream)
{
    constexpr auto kernel = fp8_quantize_tiled<Source, E5M2, Amax, WriteY, WriteT, Sums>;
    // A block a group: capping the blocks at a resident wave, each taking several groups,
    // left dZ2's pass 2 us slower on an H100 (bench/NOTES.md 42).
    const dim3 grid(a.groups, unsigned((a.cols + k_tile - 1) / k_tile));
    const std::size_t ring_bytes = staged_ring_bytes(kernel, src, a);
    // The kernel named again, not `kernel`: tools/check_dependent_launch.sh reads the name.
    launch_dependent("fp8_quantize_tiled",
                     fp8_quantize_tiled<Source, E5M2, Amax, WriteY, WriteT, Sums>, grid, k_threads,
                     ring_bytes, stream, src, a.mask, a.mask_out, a.rows, a.cols,
                     fp8_padded(a.cols), fp8_padded(a.rows), a.scale, a.amax_slot, a.y, a.y_t,
                     a.partials, int(a.group_tiles), aligned, ring_bytes != 0);
}

template <class T, bool E5M2, bool Amax>
void quantize(const T* x, const T* gate, const QuantizeArgs& a, cudaStream_t stream)
{
    const std::size_t n = std::size_t(a.rows) * std::size_t(a.cols);
    if (!a.y_t && !a.partials && !gate && !a.mask && !a.mask_out &&
        a.cols % k_fp8_pad == 0) { // nothing to pad, transpose or gate
        const bool vec =
            aligned_to(x, 8 * sizeof(T) >= 16 ? 16 : 8 * sizeof(T)) && aligned_to(a.y, 8);
        const std::size_t groups = vec ? n / 8 : 0;
        const unsigned blocks = grid_for(groups ? groups : n, k_threads);
        launch_dependent("fp8_quantize_flat", fp8_quantize_flat<T, E5M2, Amax>, blocks, k_threads,
                         0, stream, x, n, groups, a.scale, a.amax_slot, a.y);
        return;
    }
    // y and y_t start on 16-byte boundaries (validate's fp8_output); x's rows may not.
    const bool aligned = a.cols % 4 == 0 && aligned_to(x, 4 * sizeof(T)) &&
                         (!gate || aligned_to(gate, 4 * sizeof(T)));
    const bool sums = a.partials != nullptr;
    const MatrixSource<T> src{x, gate, a.cols};
    using S = MatrixSource<T>;
    if (a.y && a.y_t && sums)
        launch_tiled<S, E5M2, Amax, true, true, true>(src, a, aligned, stream);
    else if (a.y && a.y_t)
        launch_tiled<S, E5M2, Amax, true, true, false>(src, a, aligned, stream);
    else if (a.y_t && sums)
        launch_tiled<S, E5M2, Amax, false, true, true>(src, a, aligned, stream);
    else if (a.y_t)
        launch_tiled<S, E5M2, Amax, false, true, false>(src, a, aligned, stream);
    else if (sums)
        launch_tiled<S, E5M2, Amax, true, false, true>(src, a, aligned, stream);
    else
        launch_tiled<S, E5M2, Amax, true, false, false>(src, a, aligned, stream);
}

} // namespace

void launch_fp8_quantize(const void* x, const void* relu_gate, const std::uint32_t* relu_mask,
                         std::uint32_t* relu_mask_out, DType tx, int rows, int cols,
                         const float* scale, float* amax_slot, void* y, void* y_t, DType ty,
                         void* col_sums, DType tsums, ReduceScratch& scratch, cudaStream_t stream)
{
    if (rows <= 0 || cols <= 0) return;
    const unsigned row_tiles = unsigned((rows + k_matrix_tile_rows - 1) / k_matrix_tile_rows);
    // With column sums a partial a group of consecutive row tiles: the block's sums and
    // the finish's partials paid once a group. Up to four tiles a group while that leaves
    // k_sum_blocks blocks (two waves of a 132-SM Hopper at four blocks an SM: whole waves
    // of short blocks). W1's dZ1 pass at batch 4096 on an H100 (bench/NOTES.md 42), pass +
    // finish: a tile a group 31.1 + 5.5 us, four 31.9 + 2.8 (1.4 waves of long blocks),
    // two 29.4 + 3.8, three (this rule) 28.3 + 3.6; dZ2's 1000 columns keep a tile a group.
    // The group follows the shape only, so the bias gradient's bits are the same on every
    // GPU; at most k_max_partials_per_array partials: the scratch holds that many without
    // growing, which it could not do inside a recorded step.
    unsigned group_tiles = 1;
    if (col_sums) {
        constexpr unsigned k_sum_blocks = 1000;
        const unsigned col_tiles = unsigned((cols + k_tile - 1) / k_tile);
        group_tiles = 4;
        while (group_tiles > 1 &&
               (row_tiles + group_tiles - 1) / group_tiles * col_tiles < k_sum_blocks)
            --group_tiles;
        const unsigned cap =
            unsigned(std::max<std::size_t>(1, k_max_partials_per_array / std::size_t(cols)));
        group_tiles = std::max(group_tiles, (row_tiles + cap - 1) / cap);
    }
    QuantizeArgs a{relu_mask,
                   relu_mask_out,
                   rows,
                   cols,
                   scale,
                   amax_slot,
                   static_cast<std::uint8_t*>(y),
                   static_cast<std::uint8_t*>(y_t),
                   nullptr,
                   (row_tiles + group_tiles - 1) / group_tiles,
                   group_tiles};
    if (col_sums) a.partials = scratch.get(std::size_t(a.groups) * std::size_t(cols));
    dispatch_floating(tx, "fp8_quantize", [&](auto tag) {
        using T = typename decltype(tag)::type;
        const T* in = static_cast<const T*>(x);
        const T* gate = static_cast<const T*>(relu_gate);
        const bool e5m2 = ty == DType::F8E5M2;
        if (e5m2 && amax_slot)
            quantize<T, true, true>(in, gate, a, stream);
        else if (e5m2)
            quantize<T, true, false>(in, gate, a, stream);
        else if (amax_slot)
            quantize<T, false, true>(in, gate, a, stream);
        else
            quantize<T, false, false>(in, gate, a, stream);
    });
    // The groups' partials added in group order, rounded once to the sums' dtype.
    if (col_sums)
        launch_column_finish(a.partials, a.groups, std::size_t(cols), std::size_t(cols), col_sums,
                             tsums, stream);
}

void launch_fp8_gather(const std::uint8_t* images, const std::uint8_t* labels,
                       const std::int32_t* order, std::int64_t offset, int batch,
                       const ImageShape& image, const Normalization& norm,
                       const std::uint64_t* step_counter, std::int64_t steps_per_epoch,
                       DType batch_t, const float* scale, float* amax_slot, void* x8, void* x8_t,
                       std::int32_t* out_labels, cudaStream_t stream)
{
    const int sample = image.size();
    if (batch <= 0 || sample <= 0) return;
    GatherFields f{};
    f.images = images;
    f.labels = labels;
    f.order = order;
    f.offset = offset;
    f.channels = image.channels;
    for (int c = 0; c < 4; ++c) {
        f.mean[c] = norm.mean[c];
        f.inv_std[c] = norm.inv_std[c];
    }
    f.step_counter = step_counter;
    f.steps_per_epoch = steps_per_epoch < 1 ? 1 : steps_per_epoch;
    f.batch = batch;
    f.out_labels = out_labels;
    QuantizeArgs a{nullptr,
                   nullptr,
                   batch,
                   sample,
                   scale,
                   amax_slot,
                   static_cast<std::uint8_t*>(x8),
                   static_cast<std::uint8_t*>(x8_t),
                   nullptr,
                   unsigned((batch + k_gather_tile_rows - 1) / k_gather_tile_rows),
                   1};
    // Whole samples of a multiple of 4 bytes: every group of four is one word.
    const bool aligned = sample % 4 == 0 && aligned_to(images, 4);
    dispatch_floating(batch_t, "gather_batch_fp8", [&](auto tag) {
        using T = typename decltype(tag)::type;
        const GatherSource<T> src{f, sample};
        using S = GatherSource<T>;
        if (x8_t && amax_slot)
            launch_tiled<S, false, true, true, true, false>(src, a, aligned, stream);
        else if (x8_t)
            launch_tiled<S, false, false, true, true, false>(src, a, aligned, stream);
        else if (amax_slot)
            launch_tiled<S, false, true, true, false, false>(src, a, aligned, stream);
        else
            launch_tiled<S, false, false, true, false, false>(src, a, aligned, stream);
    });
}

void launch_fp8_transposes(std::span<const TransposeJob> jobs, cudaStream_t stream)
{
    if (jobs.size() > k_transpose_jobs)
        throw std::invalid_argument("launch_fp8_transposes: " + std::to_string(jobs.size()) +
                                    " jobs, at most " + std::to_string(k_transpose_jobs));
    TransposeLaunch launch{};
    unsigned blocks = 0;
    for (const TransposeJob& j : jobs) {
        if (j.rows <= 0 || j.cols <= 0) continue;
        TransposeLaunch::Job& to = launch.job[launch.count++];
        to.y = static_cast<const std::uint8_t*>(j.y);
        to.y_t = static_cast<std::uint8_t*>(j.y_t);
        to.mask_out = j.relu_mask_out;
        to.rows = j.rows;
        to.cols = j.cols;
        to.y_ld = fp8_padded(j.cols);
        to.t_ld = fp8_padded(j.rows);
        to.row_tiles = (to.t_ld + k_tile - 1) / k_tile;
        to.first_block = blocks;
        blocks += unsigned(to.row_tiles) * unsigned((j.cols + k_tile - 1) / k_tile);
    }
    if (blocks == 0) return;
    launch_dependent("fp8_transpose_kernel", fp8_transpose_kernel, blocks, k_threads, 0, stream,
                     launch);
}

void launch_fp8_update_scales(float* meta, int tensors, int history_len, std::size_t block_floats,
                              int margin, cudaStream_t stream)
{
    if (tensors <= 0) return;
    const unsigned blocks = unsigned((tensors + k_update_warps - 1) / k_update_warps);
    launch_dependent("fp8_update_kernel", fp8_update_kernel, blocks, 32 * k_update_warps, 0, stream,
                     meta, tensors, history_len, block_floats, margin);
}

} // namespace mixlab::cuda
