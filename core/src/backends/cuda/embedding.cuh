// Launchers for the embedding lookup and its deterministic gradient (scatter-add in row
// order), the token rows of a language model.
#pragma once
#include "backends/cuda/reduce_scratch.h"
#include "mixlab/dtype.h"

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace mixlab::cuda {

// y[r, :] = table[ids[r], :], or zeros for an id outside [0, vocab); y and table share t.
void launch_embedding_forward(const void* table, const std::int32_t* ids, int rows, int dim,
                              int vocab, void* y, DType t, cudaStream_t stream);

// dtable[v, :] (+)= sum of dy[r, :] over the rows with ids[r] == v, in row order (float32
// dtable; zeroed first unless accumulate). Sorts (id, row) pairs in `scratch`: no host
// sync and no allocation once the scratch is big enough (16 bytes a row plus the sort's
// temporary storage), so it records into a CUDA graph.
void launch_embedding_backward(const void* dy, DType t, const std::int32_t* ids, int rows, int dim,
                               int vocab, bool accumulate, float* dtable, ReduceScratch& scratch,
                               cudaStream_t stream);

} // namespace mixlab::cuda
