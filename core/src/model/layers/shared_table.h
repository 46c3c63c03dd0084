// What an embedding shares with a decoder tied to it (dense "tie_weights": true): the one
// (vocab x dim) table the embedding looks rows up in and the decoder multiplies by, and
// the float32 gradient both write, the decoder first (it runs first in backward).
#pragma once
#include "mixlab/backend.h"
#include "mixlab/graph.h"
#include "model/layers/weights.h"

namespace mixlab {

struct SharedTable {
    const GraphLayer* layer = nullptr; // the embedding
    Weights weights;                   // its table: master, low copy, gradient
    DType dtype = DType::F32;          // what the table's reader computes in
    int width = 0; // values per row: dim, or dim zero-padded (k_feature_alignment)
    // float32 (vocab x dim): the gradient itself, or, where the optimizer's gradient is
    // 16-bit (the fp16 policy), the sum the embedding casts into it.
    Buffer* grad32 = nullptr;
    // The decoder tied to it, null when none: it overwrites grad32 with its dW first, and
    // the embedding then adds its own.
    const GraphLayer* decoder = nullptr;
};

} // namespace mixlab
