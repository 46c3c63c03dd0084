// One direction of a convolution through cuDNN's graph API, on the engine's own NHWC /
// KRSC operands (no copies): the engine configurations cuDNN's heuristics offer for it,
// those the request's math permits, timed on the planner's scratch, the fastest kept as
// an execution plan. The planner (conv_cudnn.cpp) runs it where it beats the legacy
// API's pick (cudnnFind*Ex, conv_search.h).
#pragma once
#include "backends/cuda/conv_search.h"
#include "backends/cuda/cudnn_graph.h"
#include "backends/cuda/device_memory.h"

#include <array>
#include <cstddef>
#include <memory>
#include <string>

namespace mixlab::cuda {

class GraphConv {
public:
    // Configurations timed at most, in the heuristics' order (PyTorch's benchmark mode
    // caps its own search the same way): past the first dozen the heuristics rarely
    // offer a faster one, and each costs a plan finalize and a few runs.
    static constexpr int k_max_timed = 12;
    static constexpr int k_timed_runs = 5;
    // The byte alignment the tensors are described with; operands that do not meet it
    // run the legacy pick instead (aligned()).
    static constexpr std::int64_t k_alignment = 16;

    // The fastest acceptable configuration for `op` of g on the planner's scratch (x-,
    // y- and w-sized, filled) and workspace, or null with the reason in *why_not.
    static std::unique_ptr<GraphConv> search(cudnnHandle_t h, const ConvGeometry& g,
                                             graph::ConvOp op, const conv_search::Search& s,
                                             void* sx, void* sy, void* sw, void* ws,
                                             std::size_t ws_bytes, std::string* why_not);

    // As the planner compares it with the legacy pick: timed, median ms, determinism,
    // tensor-core math (CUDNN_TENSOR_OP_MATH where the engine notes tensor cores).
    const conv_search::Choice& choice() const { return m_choice; }
    // "graph engine 7 [tile_size=3 stages=4]".
    const std::string& name() const { return m_name; }
    std::size_t workspace() const { return m_choice.memory; }

    static bool aligned(const void* x, const void* w, const void* y);
    // One run on the handle's stream. x, w, y are the direction's operands: dx for
    // backward data, dw for backward filter, dy for both backward directions.
    void run(cudnnHandle_t h, const void* x, const void* w, const void* y,
             const DeviceMemory& ws) const;

private:
    GraphConv() = default;

    graph::Descriptor m_plan;
    conv_search::Choice m_choice;
    std::string m_name;
    // The variant pack of the last pointers run with: eager steps call with the same
    // operands step after step, and building a pack costs host time at every call.
    mutable graph::Descriptor m_pack;
    mutable std::array<const void*, 4> m_pack_pointers{};
};

} // namespace mixlab::cuda
