// Where a zero-padded parameter buffer's values sit (sequence features stored padded to
// k_feature_alignment, layer_unit.h): the buffer as a list of matrices whose extra rows
// and columns are zero. Initialisation, and every reader of the parameters as the model
// defines them (tests, exports), go through it, so padding is invisible outside the nodes.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace mixlab {

// `blocks` blocks of `stored_rows` rows of `stored_cols` values; the first `rows` rows and
// `cols` columns of each block are the layer's own, the rest zero.
struct PaddedMatrix {
    std::int64_t blocks = 1, rows = 0, stored_rows = 0, cols = 0, stored_cols = 0;
};
// A buffer's matrices in order; empty: the buffer is not padded.
using PaddedLayout = std::vector<PaddedMatrix>;

std::size_t stored_count(const PaddedLayout& layout);
std::size_t logical_count(const PaddedLayout& layout);
// stored -> the layer's own values in order (what the unpadded buffer would hold).
std::vector<float> unpad(const PaddedLayout& layout, const std::vector<float>& stored);
// The layer's own values -> stored, the padding zero.
std::vector<float> pad(const PaddedLayout& layout, const std::vector<float>& logical);

} // namespace mixlab
