// The weights and bias of a layer that multiplies (dense, conv2d): allocated with their
// masters, low-precision copies and optimizer slots, initialised the same on every
// backend and policy, and the end of the kernel facts they make.
#pragma once
#include "mixlab/backend.h"
#include "mixlab/graph.h"
#include "model/padded_layout.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace mixlab {

class NodeBuilder;

struct Weights {
    Buffer* w_master = nullptr;
    Buffer* w_low = nullptr;
    Buffer* w_grad = nullptr;
    Buffer* w_grad_low = nullptr; // conv: dW in the layer's dtype before the fp32 cast
    Buffer* b_master = nullptr;
    Buffer* b_low = nullptr;
    Buffer* b_grad = nullptr;
    PaddedLayout layout; // of w_*: where its zero padding is (empty: none)

    // What the layer's operations read: the low copy when there is one.
    const Buffer& w_read() const { return w_low ? *w_low : *w_master; }
    const Buffer* b_read() const { return b_low ? b_low : b_master; }
};

// `n_w` weights and `n_b` biases (0: none) for a layer computing in `dtype`.
// `grad_low`: the backend computes dW in the layer's dtype (cuDNN's convolutions).
// `layout`: the weights are stored zero-padded so (n_w is its stored count); `bias_layout`
// the same for the bias (n_b its stored count).
Weights allocate_weights(NodeBuilder& b, DType dtype, std::size_t n_w, std::size_t n_b,
                         bool grad_low, PaddedLayout layout = {}, PaddedLayout bias_layout = {});

// A bias alone (a decoder whose weights are the embedding's table): b_* set, w_* null.
Weights allocate_bias(NodeBuilder& b, DType dtype, std::size_t n_b, PaddedLayout layout = {});

// Glorot-uniform weights over the fans given, zero biases; `layer_id` picks the stream
// of the counter-based generator. Weights it does not own (w_master null) are left alone.
void init_weights(Backend& backend, const Weights& w, int fan_in, int fan_out, std::uint64_t seed,
                  int layer_id);

// Every value of the weights (not the bias) uniform in [-limit, limit), from the stream
// `stream` of the same generator: PyTorch's embedding (the example's 0.1) and LSTM inits.
// Padded weights get the values the unpadded ones would, their padding zero.
void init_uniform(Backend& backend, const Weights& w, float limit, std::uint64_t seed,
                  std::uint64_t stream);

// How a kernel's detail line ends: why 16-bit math cannot use tensor cores, when the
// graph found a dimension off, and whether fp32 master weights stand behind the copy.
std::string detail_tail(const GraphLayer& layer, MathMode math, const Weights& w);

} // namespace mixlab
