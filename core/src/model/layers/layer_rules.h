// Rules several layer types share when the graph infers them: names in messages, limits
// on sizes, image inputs, windows (kernel or pool size, stride, padding), activation
// FLOPs and the tensor-core multiple.
#pragma once
#include "mixlab/graph.h"

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <string>
#include <utility>

namespace mixlab {

class GraphWalk;

// One sample's tensors and one layer's weights are indexed with 32-bit integers by the
// backends; anything larger is a mistake in the spec, not a model to train.
inline constexpr std::int64_t k_max_elements = std::numeric_limits<int>::max();

// "layer 4 > body 2 (conv2d)": how messages name a layer.
std::string layer_label(const GraphLayer& gl);
// "3" or "[3, 5]".
std::string pair_text(int h, int w);
bool is_image(const Shape& s);

// Forward FLOPs of an activation over `elements` values.
std::int64_t activation_flops(Activation a, std::int64_t elements);

// Marks `gl` a GEMM (a convolution is an implicit one) and sets its tensor-core fitness
// over the dimensions given: friendly when every one suits 16-bit tensor-core GEMMs, else
// a note of which do not and what would ("units 10 is not a multiple of 8 (16 would be)").
void set_gemm_fitness(GraphLayer& gl,
                      std::initializer_list<std::pair<const char*, std::int64_t>> dims);

// Throws SpecError unless the layer's input is an image (H, W, C), saying where the
// model made it flat.
void need_image(const GraphLayer& gl, const GraphWalk& walk);

// Resolves the kernel (conv2d) or pool size (pooling), stride and padding of `gl` into
// its stride_* and pad_* fields; returns the output height and width.
std::pair<int, int> resolve_window(GraphLayer& gl, bool pooling, int default_stride_h,
                                   int default_stride_w);

} // namespace mixlab
