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
#include "model/padded_layout.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mixlab {

// A sequence graph (a language model: Shape::tokens() input) runs `time_steps` steps per
// pass (the run's bptt) over `batch` columns, time-major: row t * batch + j is column j at
// step t. Every layer but the lstm sees batch * time_steps rows; the lstm runs the whole
// window from the hidden state the previous pass ended in.
class Network {
public:
    // `fp8`: mixed_fp8's delayed scaling (the run's "fp8" settings); other policies
    // ignore it.
    Network(const Graph& graph, Policy policy, const OptimizerConfig& opt, Backend& backend,
            int max_batch, int time_steps, std::uint64_t seed, const Fp8Config& fp8 = {});
    // time_steps 1 (what a graph that is not a sequence has anyway).
    Network(const Graph& graph, Policy policy, const OptimizerConfig& opt, Backend& backend,
            int max_batch, std::uint64_t seed);
    ~Network();
    Network(const Network&) = delete;
    Network& operator=(const Network&) = delete;

    // Images: input (max_batch, input elements) in the input dtype, labels (max_batch).
    // Sequences: input (time_steps * max_batch) int32 token ids and labels the same (the
    // next word of each), both time-major; logits then have time_steps * max_batch rows.
    Buffer& input() { return *m_input; }
    Buffer& labels() { return m_labels; } // int32
    const Buffer& logits() const;         // (rows, classes)
    Buffer& dlogits();
    bool is_sequence() const { return m_graph.input.sequence; }
    int time_steps() const { return m_steps; }
    // Rows the per-step layers and the loss see for `batch` samples (columns).
    int rows(int batch) const { return is_sequence() ? batch * m_steps : batch; }

    // Zeroes the hidden state an lstm carries from pass to pass (truncated BPTT's
    // repackaged state): at each epoch's start and before each evaluation pass. A training
    // step carries it after its backward, an evaluation forward at once, on the device.
    void reset_state();

    // `step` seeds dropout masks (the same in forward and backward). `training` picks
    // dropout on/off and batch statistics (training) or running statistics (evaluation).
    // `batch` counts samples (a sequence graph's columns); a graph with an lstm runs only
    // at max_batch.
    // Training steps read their step from this counter on the device (dropout masks)
    // when one is set, so that a recorded step replays correctly; `step` otherwise.
    void set_step_counter(const StepCounter& counter) { m_step_counter = counter; }
    // input_quantized: the input arrived as fp8_batch() describes (gather_batch_fp8), so
    // the layer that reads it does not quantize it again.
    // outputs_read: the numerics sampler reads the layers' outputs after it (PassContext).
    void forward(int batch, bool training, std::uint64_t step, bool input_quantized = false,
                 bool outputs_read = false);
    // mixed_fp8: where the gather may write the batch quantized, when the first computing
    // node is an fp8 dense layer reading the input as it is (the flatten before it a view);
    // none otherwise. The 16-bit input is then not written: nothing else reads it.
    std::optional<Fp8Batch> fp8_batch(bool training) const;
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
    // norm scale then shift; an lstm's flat buffer per layer; a decoder tied to the
    // embedding its bias alone: the table is the embedding's, listed once), as the model
    // defines them: a tensor stored zero-padded gives its own values alone.
    std::vector<float> read_parameters();
    // Test helpers: the same order. write_parameters also refreshes the low copies;
    // read_gradients gives the float32 gradients of the last backward pass.
    void write_parameters(const std::vector<float>& values);
    std::vector<float> read_gradients();

    // Tensor by tensor, for a saved model (model/model_weights.h): the graph the slots'
    // layers point into; per parameter slot (the order above) the layer that added it and
    // its fp32 master values as the model defines them (no padding); the other tensors a
    // saved model holds (batch norm's running statistics), each with its layer.
    const Graph& graph() const { return m_graph; }
    std::size_t slot_count() const { return m_slots.size(); }
    const GraphLayer& slot_layer(std::size_t slot) const { return *m_slot_layers[slot]; }
    std::size_t slot_size(std::size_t slot) const; // its values as the model defines them
    std::vector<float> read_slot(std::size_t slot);
    void write_slot(std::size_t slot, const std::vector<float>& values);
    struct StateTensor {
        const GraphLayer* layer = nullptr;
        std::string name; // PyTorch's: "running_mean", "running_var"
        Buffer* buffer = nullptr;
    };
    std::vector<StateTensor> state_tensors() const;
    // What a training step carries to the next one besides parameters and statistics (an
    // lstm's hidden and cell state, named "h_l0", "c_l0", ...), as stored; for checkpoints.
    std::vector<StateTensor> carried_tensors() const;
    // A slot's optimizer state (ParamSlot::state1: momentum / Adam m, state2: Adam v) as
    // the model defines it (no padding); null buffers have none (has_slot_buffer false).
    bool has_slot_buffer(std::size_t slot, Buffer* ParamSlot::*which) const;
    // A slot's mixed_fp8 quantized copy (w8 null: none).
    const Fp8Weights& slot_fp8(std::size_t slot) const { return m_slots.at(slot).fp8; }
    std::vector<float> read_slot_buffer(std::size_t slot, Buffer* ParamSlot::*which);
    void write_slot_buffer(std::size_t slot, Buffer* ParamSlot::*which,
                           const std::vector<float>& values);
    std::vector<float> read_state(const StateTensor& t);
    void write_state(const StateTensor& t, const std::vector<float>& values);
    // Human-readable facts about what runs: one line per dense, conv or lstm layer, one
    // per embedding and one per relu run inside a batch norm.
    std::vector<std::string> describe() const;
    std::vector<LayerKernelInfo> kernels() const;
    std::int64_t device_bytes() const { return m_device_bytes; }

    // What the numerics sampler reads, per top-level layer that has values of its own (no
    // casts, flatten or absorbed relu): its output buffer and its parameters (a residual
    // block's are those of every layer inside it).
    struct NumericsLayer {
        std::string path, type;
        const Buffer* activation = nullptr;
        std::vector<ParamSlot> params;
    };
    std::vector<NumericsLayer> numerics_layers() const;

    // mixed_fp8: the meta buffer of every fp8 tensor's scaling state (backend.h's block
    // layout, fp8_tensors() blocks of fp8_config().amax_history history slots), null when
    // no layer runs in fp8; the tensors' names ("layer 3 x", "layer 3 w", "layer 3 dy")
    // in block order. The step updates it (Backend::fp8_update_scales) before the
    // optimizer, which quantizes the fp8 layers' new weights with the updated scales.
    Buffer* fp8_meta() { return m_fp8_names.empty() ? nullptr : &m_fp8_meta; }
    int fp8_tensors() const { return int(m_fp8_names.size()); }
    const std::vector<std::string>& fp8_names() const { return m_fp8_names; }
    const Fp8Config& fp8_config() const { return m_fp8; }
    // Every block back to its start: scale and scale_inv 1, the format's largest finite
    // value, no amax seen. The quantized weights are then stale: refresh_fp8_weights.
    void reset_fp8_meta();
    // The fp8 layers' quantized weights (ParamSlot::fp8) taken again from the weights as
    // they stand, with W's current scale, W's current amax slot set to theirs: what the
    // last optimizer step would have left. Every host write of the weights does it (the
    // constructor, write_slot, write_parameters); a caller that writes the meta buffer
    // (a checkpoint's resume) calls it after. `only`: that slot alone.
    void refresh_fp8_weights(std::optional<std::size_t> only = std::nullopt);

private:
    // The node fp8_batch() describes the operands of, or null: found once, by the
    // constructor, into m_fp8_batch_node.
    Node* find_fp8_batch_node() const;
    // Withdraws each taken Fp8Output whose 16-bit output something else reads too.
    void withdraw_shared_fp8_outputs();
    class Builder;
    void init_parameters();
    std::vector<float> read_slots(Buffer* ParamSlot::*which);

    Backend& m_backend;
    std::uint64_t m_seed;
    StepCounter m_step_counter;
    LayerMarks* m_marks = nullptr;
    int m_max_batch;
    int m_steps = 1; // a sequence graph's time steps per pass
    Graph m_graph;   // the nodes point into it
    NodeList m_nodes;
    std::vector<std::unique_ptr<Buffer>> m_owned; // every buffer this network allocated
    Buffer* m_input = nullptr;
    Buffer m_labels;
    Buffer* m_logits = nullptr;
    Buffer* m_dlogits = nullptr;
    std::vector<ParamSlot> m_slots;
    std::vector<PaddedLayout> m_layouts;          // per slot: its padding (empty: none)
    std::vector<const GraphLayer*> m_slot_layers; // per slot: the layer that added it
    std::unique_ptr<ParamTable> m_param_table;
    std::int64_t m_device_bytes = 0;
    Fp8Config m_fp8;
    Buffer m_fp8_meta; // allocated after the nodes reserved their blocks
    std::vector<std::string> m_fp8_names;
    // mixed_fp8's relu gates as bits, one per fp8 relu layer that asked (NodeBuilder).
    std::vector<std::unique_ptr<ReluMask>> m_relu_masks;
    // mixed_fp8's outputs written in E4M3 by the GEMM, one per fp8 layer that offered.
    std::vector<std::unique_ptr<Fp8Output>> m_fp8_outputs;
    std::vector<DType> m_fp8_formats;
    Node* m_fp8_batch_node = nullptr; // the first layer the gather quantizes for, or null
};

} // namespace mixlab
