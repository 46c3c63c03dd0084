// The executor of one Graph under one precision policy on one backend: owns the
// parameters, activations and gradients (allocated once, static shapes) and runs the
// forward and backward passes of the layers' nodes (model/layers) on the backend's stream.
#pragma once
#include "mixlab/backend.h"
#include "mixlab/graph.h"
#include "mixlab/policy.h"
#include "mixlab/run_config.h"
#include "model/node.h"
#include "model/node_facts.h"

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

    Buffer& input() { return *m_input; }  // (max_batch, input elements), input dtype
    Buffer& labels() { return m_labels; } // (max_batch) int32
    const Buffer& logits() const;         // (max_batch, classes)
    Buffer& dlogits();

    // `step` seeds dropout masks (the same in forward and backward). `training` picks
    // dropout on/off and batch statistics (training) or running statistics (evaluation).
    // Training steps read their step from this counter on the device (dropout masks)
    // when one is set, so that a recorded step replays correctly; `step` otherwise.
    void set_step_counter(const StepCounter& counter) { m_step_counter = counter; }
    void forward(int batch, bool training, std::uint64_t step);
    void backward(int batch, std::uint64_t step);

    // Profiling: with marks set, forward() records forward[i] before top-level node i
    // and forward[n] after the last; backward() records backward[j] before the j-th
    // node in backward order and backward[n] at the end. Null: no events (the usual).
    struct LayerMarks {
        std::vector<std::unique_ptr<Event>> forward, backward;
    };
    void set_layer_marks(LayerMarks* marks) { m_marks = marks; }
    // The top-level nodes the marks separate, in forward order (the profile's cost model,
    // analysis/layer_costs.h, reads them); valid while the network lives.
    std::vector<NodeFacts> top_level_nodes() const;
    std::size_t top_level_count() const { return m_nodes.size(); }

    ParamTable& param_table() { return *m_param_table; }
    // fp32 values of every parameter tensor, in graph order (weights then bias; batch
    // norm scale then shift).
    std::vector<float> read_parameters();
    // Test helpers: the same order. write_parameters also refreshes the low copies;
    // read_gradients gives the float32 gradients of the last backward pass.
    void write_parameters(const std::vector<float>& values);
    std::vector<float> read_gradients();
    // Human-readable facts about what runs: one line per dense or conv layer, and one
    // per relu run inside a batch norm.
    std::vector<std::string> describe() const;
    std::vector<LayerKernelInfo> kernels() const;
    std::int64_t device_bytes() const { return m_device_bytes; }

private:
    class Builder;
    void init_parameters();

    Backend& m_backend;
    std::uint64_t m_seed;
    StepCounter m_step_counter;
    LayerMarks* m_marks = nullptr;
    int m_max_batch;
    Graph m_graph; // the nodes point into it
    NodeList m_nodes;
    std::vector<std::unique_ptr<Buffer>> m_owned; // every buffer this network allocated
    Buffer* m_input = nullptr;
    Buffer m_labels;
    Buffer* m_logits = nullptr;
    Buffer* m_dlogits = nullptr;
    std::vector<ParamSlot> m_slots;
    std::unique_ptr<ParamTable> m_param_table;
    std::int64_t m_device_bytes = 0;
};

} // namespace mixlab
