// A validated model with every layer's shape, parameter count and FLOPs inferred
// for a given input shape and number of classes.
#pragma once
#include "mixlab/model_spec.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mixlab {

// Per-sample shape: (H, W, C) for images, (D) after flatten/dense.
struct Shape {
    std::vector<int> dims;
    std::int64_t elements() const;
    std::string to_string() const; // "32x32x3", "3000"
    bool operator==(const Shape&) const = default;
};

// How the final layers turn into a loss.
enum class OutputHead {
    Logits,        // last layer gives logits: softmax cross-entropy
    SoftmaxFolded, // last layer is a softmax activation folded into the loss
    SigmoidKeras,  // last layer is a sigmoid: Keras categorical cross-entropy on
                   // sigmoid outputs divided by their sum, clipped to [1e-7, 1-1e-7]
};

struct GraphLayer {
    int index = 0;          // position in the spec
    LayerSpec spec;
    Shape in, out;
    std::int64_t params = 0;
    std::int64_t flops = 0; // forward FLOPs per sample (multiply-add = 2)
    bool is_gemm = false;
    bool tensor_core_friendly = false; // 16-bit GEMM dims all multiples of 8
    std::string tensor_core_note;      // why not, when not
    bool folded_into_loss = false;     // the final softmax/sigmoid handled by the loss
};

struct Graph {
    std::string name;
    Shape input;
    int classes = 0;
    std::vector<GraphLayer> layers;
    OutputHead head = OutputHead::Logits;
    std::int64_t total_params = 0;
    std::int64_t total_flops = 0; // forward, per sample
    std::vector<std::string> warnings; // e.g. the sigmoid-output advice
};

// Throws SpecError naming the layer when shapes do not fit (e.g. the output width is
// not the number of classes).
Graph build_graph(const ModelSpec& spec, const Shape& input, int classes);

} // namespace mixlab
