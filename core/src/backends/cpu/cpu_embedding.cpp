// CPU embedding lookup and its gradient: a row gather (zeros for an id outside the table)
// and a scatter-add of dy rows per id in row order, so that every run gives the same bits.
#include "backends/cpu/cpu_backend.h"

#include "backends/backend_validate_sequence.h"

#include <algorithm>

namespace mixlab::cpu {

namespace {

bool in_table(std::int32_t id, int vocab) { return id >= 0 && id < vocab; }

} // namespace

void CpuBackend::embedding_forward(const Buffer& table, const Buffer& ids_i32, int rows, int dim,
                                   int vocab, Buffer& y)
{
    validate::embedding_forward(k_name, table, ids_i32, rows, dim, vocab, y);
    const std::size_t d = std::size_t(dim);
    const float* t = table.as<float>();
    const std::int32_t* ids = ids_i32.as<std::int32_t>();
    float* out = y.as<float>();
    // y shares the table's dtype, so a copied row is already rounded to it.
    for (std::size_t r = 0; r < std::size_t(rows); ++r) {
        float* row = out + r * d;
        if (in_table(ids[r], vocab))
            std::copy_n(t + std::size_t(ids[r]) * d, d, row);
        else
            std::fill_n(row, d, 0.0f);
    }
}

void CpuBackend::embedding_backward(const Buffer& dy, const Buffer& ids_i32, int rows, int dim,
                                    int vocab, bool accumulate, Buffer& dtable)
{
    validate::embedding_backward(k_name, dy, ids_i32, rows, dim, vocab, dtable);
    const std::size_t d = std::size_t(dim);
    const float* g = dy.as<float>();
    const std::int32_t* ids = ids_i32.as<std::int32_t>();
    float* out = dtable.as<float>();
    if (!accumulate) std::fill_n(out, std::size_t(vocab) * d, 0.0f);
    // One pass over the rows in order: each id's sum is dtable + dy[r0] + dy[r1] + ...
    // with its rows in increasing r. An id outside the table read zeros in the forward
    // pass, so its gradient reaches no parameter.
    for (std::size_t r = 0; r < std::size_t(rows); ++r) {
        if (!in_table(ids[r], vocab)) continue;
        float* dst = out + std::size_t(ids[r]) * d;
        const float* src = g + r * d;
        for (std::size_t j = 0; j < d; ++j) dst[j] += src[j];
    }
}

} // namespace mixlab::cpu
