// What the network reports about what it runs: each multiplying layer's kernel (dtype,
// math, tensor cores) and each top-level node's place in the step, the facts the profile's
// cost model (analysis/layer_costs.h) and the run's describe() lines are made of.
#pragma once
#include "mixlab/dtype.h"
#include "mixlab/graph.h"
#include "mixlab/policy.h"

#include <cstdint>
#include <string>

namespace mixlab {

// What a layer that multiplies (dense, conv2d) runs as: the facts a run records.
struct LayerKernelInfo {
    std::string path; // "layer 4 > body 0"
    std::string type; // "dense", "conv2d"
    DType dtype = DType::F32;
    MathMode math = MathMode::Pedantic;
    bool tensor_cores = false; // what the backend chose (conv) or the math allows (dense)
    std::string detail;        // algorithms, notes
};

// One top-level node of the executed model (a residual block counts as one): a layer of
// the graph, or a cast the network put at a dtype boundary.
struct NodeFacts {
    const GraphLayer* layer = nullptr; // null for a cast; points into the network's graph
    std::string cast_before;           // a cast: the path of the layer it feeds, or "the loss"
    DType dtype = DType::F32;          // what it computes (a cast: what it converts into)
    DType from_dtype = DType::F32;     // a cast: what it converts from
    MathMode math = MathMode::Pedantic;
    bool input_gradient = false; // its backward pass computes a gradient for its input
    bool shares_buffers = false; // flatten, or a relu run by the batch norm before it
    std::int64_t per_sample = 0; // a cast: values it converts per sample
};

} // namespace mixlab
