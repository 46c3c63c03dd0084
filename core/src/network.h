// The executor of one Graph under one precision policy on one backend: owns the
// parameters, activations and gradients (allocated once, static shapes) and runs the
// forward and backward passes as backend operations on the backend's stream.
#pragma once
#include "mixlab/backend.h"
#include "mixlab/graph.h"
#include "mixlab/policy.h"
#include "mixlab/run_config.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace mixlab {

class Network {
public:
    Network(const Graph& graph, Policy policy, const OptimizerConfig& opt, Backend& backend,
            int max_batch, std::uint64_t seed);
    ~Network();
    Network(const Network&) = delete;
    Network& operator=(const Network&) = delete;

    Buffer& input() { return *m_input; }     // (max_batch, input elements), input dtype
    Buffer& labels() { return m_labels; }    // (max_batch) int32
    const Buffer& logits() const;            // (max_batch, classes)
    Buffer& dlogits();

    // `step` seeds dropout masks (the same in forward and backward).
    void forward(int batch, bool training, std::uint64_t step);
    void backward(int batch, std::uint64_t step);

    ParamTable& param_table() { return *m_param_table; }
    // fp32 values of every parameter tensor, in graph order (weights then bias).
    std::vector<float> read_parameters();
    // Human-readable facts about what runs: one line per layer (dtype, GEMM math).
    std::vector<std::string> describe() const;
    std::int64_t device_bytes() const { return m_device_bytes; }

private:
    struct Node;
    Buffer make(std::size_t count, DType dtype);
    void build(const Graph& graph, const OptimizerConfig& opt, int max_batch);
    void init_parameters(const Graph& graph);

    Backend& m_backend;
    Policy m_policy;
    PolicyTraits m_traits;
    std::uint64_t m_seed;
    Graph m_graph;
    std::vector<std::unique_ptr<Node>> m_nodes;
    std::vector<std::unique_ptr<Buffer>> m_owned; // every buffer this network allocated
    Buffer* m_input = nullptr;
    Buffer m_labels;
    std::vector<ParamSlot> m_slots;
    std::unique_ptr<ParamTable> m_param_table;
    std::int64_t m_device_bytes = 0;
};

} // namespace mixlab
