// A validated model with every layer's shape, parameter count and FLOPs inferred
// for a given input shape and number of classes.
#pragma once
#include "mixlab/model_spec.h"
#include "mixlab/output_head.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mixlab {

// Per-sample shape: (H, W, C) for images, (D) after flatten/dense. A sequence (a language
// model's) is per time step: `dims` is what one step holds, (D), and the steps, T, are the
// run's bptt, not part of the graph. Its model input is one token id per step: tokens().
struct Shape {
    std::vector<int> dims;
    bool sequence = false;
    std::int64_t elements() const; // per sample, or per time step of a sequence
    std::string to_string() const; // "32x32x3", "3000", "T x 200", "T tokens"
    static Shape tokens() { return Shape{{1}, true}; }
    bool is_tokens() const { return *this == tokens(); }
    bool operator==(const Shape&) const = default;
};

struct GraphLayer {
    int index = 0;    // position in its own list (top level, body or shortcut)
    int id = 0;       // unique over the whole tree, pre-order: seeds init and dropout
    std::string path; // "layer 4", "layer 4 > body 2", "layer 4 > shortcut 0"
    LayerSpec spec;   // for residual: body/shortcut as written (see below)
    Shape in, out;
    std::int64_t params = 0; // residual: the sum over body and shortcut
    std::int64_t flops = 0;  // forward FLOPs per sample, per token in a sequence graph
                             // (multiply-add = 2); residual: sum
    bool is_gemm = false;    // dense and conv2d (a convolution is an implicit GEMM),
                             // lstm (its gates are GEMMs, cuDNN's RNN kernels)
    bool tensor_core_friendly =
        false;                     // 16-bit GEMM dims / conv channels / RNN sizes multiples of 8
    std::string tensor_core_note;  // why not, when not
    bool folded_into_loss = false; // the final softmax/sigmoid handled by the loss
    // The network stores this layer's output rows zero-padded to this width (an embedding's
    // or lstm's features to a multiple of 8, which the layers reading it take as their
    // tensor-core fitness); 0: stored as out. Exact: the padding stays zero.
    std::int64_t stored_width = 0;
    bool vocab_units = false; // dense: "units": "vocab" (a decoder), resolved into spec.units

    // conv2d and pooling, resolved: stride defaults filled in and "same" turned into
    // symmetric padding per side.
    int stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0;
    // residual: the inferred sub-layers (shapes relative to the block's input)
    std::vector<GraphLayer> body, shortcut;
};

struct Graph {
    std::string name;
    Shape input;
    int classes = 0;
    std::vector<GraphLayer> layers;
    OutputHead head = OutputHead::Logits;
    std::int64_t total_params = 0;
    std::int64_t total_flops = 0;      // forward, per sample (per token in a sequence graph)
    std::vector<std::string> warnings; // e.g. the sigmoid-output advice
};

// Throws SpecError naming the layer (by its path) when shapes do not fit: the output
// width is not the number of classes, a residual's body and shortcut disagree
// ("layer 4 (residual): body gives 16x16x128 but shortcut gives 32x32x64 ..."), a window
// larger than its input, ...
//
// Parameter counts: dense in*units (+units); conv2d kh*kw*cin*filters (+filters);
// batchnorm 2*channels trainable (scale, shift; the running statistics are not counted,
// as in PyTorch's parameters()); embedding vocab*dim; lstm 4H(I+H+2) per layer (PyTorch's
// count: b_ih and b_hh both); a dense tied to the embedding only its bias.
//
// A language model: build_graph(spec, Shape::tokens(), vocabulary size) (its classes are
// the words). Its first layer must be an embedding; lstm needs a sequence, dense applies
// per time step, flatten, convolutions and pooling do not apply. FLOPs are per token.
Graph build_graph(const ModelSpec& spec, const Shape& input, int classes);

} // namespace mixlab
