// How a column reduction over a (rows, cols) row-major matrix is cut into blocks. A
// thread reads V adjacent columns at once (V * element size = 16 bytes where the row
// length allows, else V = 1); a block of 256 threads spans up to 256 such vector
// columns and stacks "lanes" of rows for the rest; the rows are cut into slices, one
// per block row of the grid, so a tall, narrow matrix (a conv bias gradient or batch
// norm over 131072 rows x 64 channels) still fills the GPU. Each slice writes one
// partial sum per column; a second launch adds them in a fixed order (deterministic).
#pragma once
#include <cstddef>

namespace mixlab::cuda {

inline constexpr int k_reduce_threads = 256;
// Blocks a reduction aims for (several per multiprocessor on any current GPU).
inline constexpr std::size_t k_target_blocks = 1024;
// Each thread reads at least this many rows of its slice: loads enough to hide latency.
inline constexpr std::size_t k_min_rows_per_lane = 8;
// Partial sums per array the preallocated scratch holds (1 MiB of floats).
inline constexpr std::size_t k_max_partials_per_array = std::size_t(1) << 18;
inline constexpr std::size_t k_partial_arrays = 2; // batch norm reduces two sums at once
// Room after the partials for per-channel factors (batch norm backward: 2 per channel).
inline constexpr std::size_t k_scratch_extra_floats = std::size_t(1) << 16;

struct ColumnSplit {
    int v = 1;          // columns per thread load
    int tile_vcols = 1; // vector columns per block
    int lanes = 1;      // rows a block reads side by side
    unsigned tiles = 1, splits = 1;
    std::size_t rows_per_split = 0;
    std::size_t ld = 0; // partial row length: tiles * tile_vcols * v
    std::size_t partials() const { return std::size_t(splits) * ld; }
};

// cols must be a multiple of v. target_blocks: blocks to aim for; max_partials: partial
// sums one array of the scratch holds (fewer when they are wider than a float).
inline ColumnSplit plan_column_split(std::size_t rows, std::size_t cols, int v,
                                     std::size_t target_blocks = k_target_blocks,
                                     std::size_t max_partials = k_max_partials_per_array)
{
    ColumnSplit s;
    s.v = v;
    const std::size_t vcols = cols / std::size_t(v);
    s.tile_vcols = int(vcols < std::size_t(k_reduce_threads) ? vcols : k_reduce_threads);
    if (s.tile_vcols < 1) s.tile_vcols = 1;
    s.lanes = k_reduce_threads / s.tile_vcols;
    s.tiles = unsigned((vcols + s.tile_vcols - 1) / std::size_t(s.tile_vcols));
    if (s.tiles < 1) s.tiles = 1;
    s.ld = std::size_t(s.tiles) * std::size_t(s.tile_vcols) * std::size_t(v);
    const std::size_t min_rows = std::size_t(s.lanes) * k_min_rows_per_lane;
    std::size_t splits = (rows + min_rows - 1) / min_rows;
    const std::size_t by_blocks = s.tiles >= target_blocks ? 1 : target_blocks / s.tiles;
    const std::size_t by_scratch = s.ld >= max_partials ? 1 : max_partials / s.ld;
    if (splits > by_blocks) splits = by_blocks;
    if (splits > by_scratch) splits = by_scratch;
    if (splits > 65535) splits = 65535; // grid.y limit
    if (splits < 1) splits = 1;
    s.rows_per_split = (rows + splits - 1) / splits;
    // No empty slice: recount after rounding the slice size up.
    s.splits = unsigned(rows == 0 ? 1 : (rows + s.rows_per_split - 1) / s.rows_per_split);
    return s;
}

} // namespace mixlab::cuda
