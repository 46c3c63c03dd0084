// Padded parameter layouts: one walk over the stored buffer, visiting the layer's own
// values in order.
#include "model/padded_layout.h"

#include "mixlab/error.h"

#include <string>

namespace mixlab {

namespace {

// f(stored index, logical index) for every value of the layer's own; returns the
// stored count the layout covers.
template <class F>
std::size_t walk(const PaddedLayout& layout, F&& f)
{
    std::size_t at = 0, value = 0;
    for (const PaddedMatrix& m : layout)
        for (std::int64_t b = 0; b < m.blocks; ++b)
            for (std::int64_t r = 0; r < m.stored_rows; ++r, at += std::size_t(m.stored_cols))
                for (std::int64_t c = 0; r < m.rows && c < m.cols; ++c)
                    f(at + std::size_t(c), value++);
    return at;
}

void require_size(const PaddedLayout& layout, std::size_t size, const char* what)
{
    if (size != stored_count(layout))
        throw Error(std::string("padded layout: ") + what + " holds " + std::to_string(size) +
                    " values, the layout " + std::to_string(stored_count(layout)));
}

} // namespace

std::size_t stored_count(const PaddedLayout& layout)
{
    std::size_t n = 0;
    for (const PaddedMatrix& m : layout) n += std::size_t(m.blocks * m.stored_rows * m.stored_cols);
    return n;
}

std::size_t logical_count(const PaddedLayout& layout)
{
    std::size_t n = 0;
    for (const PaddedMatrix& m : layout) n += std::size_t(m.blocks * m.rows * m.cols);
    return n;
}

std::vector<float> unpad(const PaddedLayout& layout, const std::vector<float>& stored)
{
    require_size(layout, stored.size(), "the stored buffer");
    std::vector<float> out(logical_count(layout));
    walk(layout, [&](std::size_t s, std::size_t l) { out[l] = stored[s]; });
    return out;
}

std::vector<float> pad(const PaddedLayout& layout, const std::vector<float>& logical)
{
    if (logical.size() != logical_count(layout))
        throw Error("padded layout: " + std::to_string(logical.size()) +
                    " values for a layout of " + std::to_string(logical_count(layout)));
    std::vector<float> out(stored_count(layout), 0.0f);
    walk(layout, [&](std::size_t s, std::size_t l) { out[s] = logical[l]; });
    return out;
}

} // namespace mixlab
