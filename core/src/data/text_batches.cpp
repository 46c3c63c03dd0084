// A token stream in batch columns and its truncated-BPTT windows, as PyTorch's
// word_language_model main.py lays them out (batchify, get_batch).
#include "mixlab/text_corpus.h"

#include "mixlab/error.h"

#include <algorithm>
#include <cstring>

namespace mixlab {

TokenColumns batchify(const std::vector<std::int32_t>& stream, int batch)
{
    if (batch < 1) throw InputError("batch must be at least 1, got " + std::to_string(batch));
    TokenColumns c;
    c.batch = batch;
    c.steps = std::int64_t(stream.size()) / batch;
    c.ids.resize(std::size_t(c.steps) * std::size_t(batch));
    // The example's data.view(bsz, -1).t(): column j is the j-th contiguous stretch of the
    // stream, so each column reads as running text and the hidden state carried from one
    // window to the next continues the same text.
    for (int j = 0; j < batch; ++j) {
        const std::int32_t* column = stream.data() + std::size_t(j) * std::size_t(c.steps);
        for (std::int64_t t = 0; t < c.steps; ++t)
            c.ids[std::size_t(t) * std::size_t(batch) + std::size_t(j)] = column[t];
    }
    return c;
}

std::int64_t token_window_count(const TokenColumns& columns, int bptt)
{
    if (bptt < 1) throw InputError("bptt must be at least 1, got " + std::to_string(bptt));
    if (columns.steps < 2) return 0;
    return (columns.steps - 1 + bptt - 1) / bptt;
}

void token_window(const TokenColumns& columns, std::int64_t position, int bptt, TokenWindow& out)
{
    if (bptt < 1) throw InputError("bptt must be at least 1, got " + std::to_string(bptt));
    if (position < 0 || position >= columns.steps - 1)
        throw InputError("window position " + std::to_string(position) + " is outside 0 to " +
                         std::to_string(columns.steps - 2) + " (the columns hold " +
                         std::to_string(columns.steps) + " steps)");
    out.steps = int(std::min<std::int64_t>(bptt, columns.steps - 1 - position));
    out.batch = columns.batch;
    // Rows are contiguous (time-major), so a window is one block and its targets the
    // block one row later.
    const std::size_t row = std::size_t(columns.batch);
    const std::size_t count = std::size_t(out.steps) * row;
    out.input.resize(count);
    out.target.resize(count);
    const std::int32_t* first = columns.ids.data() + std::size_t(position) * row;
    std::memcpy(out.input.data(), first, count * sizeof(std::int32_t));
    std::memcpy(out.target.data(), first + row, count * sizeof(std::int32_t));
}

TokenWindow token_window(const TokenColumns& columns, std::int64_t position, int bptt)
{
    TokenWindow w;
    token_window(columns, position, bptt, w);
    return w;
}

} // namespace mixlab
