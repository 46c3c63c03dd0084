// What one layer type provides, a LayerUnit (model/layers/<type>.cpp, listed in
// registry.cpp), and what a unit may ask of the graph walk that infers shapes (GraphWalk,
// graph.cpp) and of the network that builds the executed nodes (NodeBuilder, network.cpp).
#pragma once
#include "mixlab/backend.h"
#include "mixlab/graph.h"
#include "model/node.h"
#include "model/padded_layout.h"

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace mixlab {

// Where a sequence of layers stands while the network builds it: the buffer the next
// layer reads, its gradient, dtype and per-sample shape.
struct Flow {
    Buffer* value = nullptr;
    Buffer* grad = nullptr; // null when nothing before needs a gradient
    DType dtype = DType::F32;
    Shape shape;
    // Values stored per row when more than shape.elements(): the zero-padded width of an
    // embedding's or lstm's output (k_feature_alignment); 0 when the row is the shape.
    int width = 0;
};

// Sequence features (an embedding's dim, an lstm's hidden size) are stored padded to a
// multiple of this, the extra columns zero: a 16-bit row of 650 values is 1,300 bytes, not
// a multiple of 16, and cuBLASLt's and cuDNN's RNN tensor-core kernels then fall back to
// far slower ones (W3 at batch 80, 2026-12-02: 6.7 ms per mixed_fp16 step at 650, 5.0 at
// 656). The padding is exact: its weights start at zero and get zero gradients (an lstm
// unit with zero weights and bias keeps c = h = 0; a column of zeros adds nothing), so
// the network computes what the unpadded one does and the user sees only their sizes.
inline constexpr int k_feature_alignment = 8;
inline int padded_features(int n)
{
    return (n + k_feature_alignment - 1) / k_feature_alignment * k_feature_alignment;
}

class GraphWalk {
public:
    // The model's input as the dataset gives it (messages say how an image became flat).
    virtual const Shape& model_input() const = 0;
    virtual int classes() const = 0;
    // The embedding inferred so far (a language model's first layer), null when none: what
    // a decoder with "tie_weights" shares its table with.
    virtual const GraphLayer* embedding() const = 0;
    // Infers `specs` in order from `in` (a block's branch); `prefix` starts each path
    // ("layer 4 > body "). Returns the layers and leaves the last output in `out`.
    virtual std::vector<GraphLayer> infer_list(const std::vector<LayerSpec>& specs, const Shape& in,
                                               const std::string& prefix, Shape& out) = 0;

protected:
    ~GraphWalk() = default;
};

class LayerUnit;
struct SharedTable;

class NodeBuilder {
public:
    virtual Backend& backend() = 0;
    // The rows a per-sample buffer holds: the batch, or in a sequence graph the batch times
    // the time steps (every layer but the lstm sees each step of each sequence as a row).
    virtual int max_batch() const = 0;
    // A sequence graph's steps per forward pass (the run's bptt); 1 otherwise.
    virtual int time_steps() const = 0;
    // The embedding's table, published by the embedding node for a decoder tied to it
    // (null until then); valid while the network lives.
    virtual void publish_table(SharedTable* table) = 0;
    virtual SharedTable* shared_table() const = 0;
    // A buffer the network owns (and counts in its device bytes); disown frees one that
    // turned out unneeded.
    virtual Buffer* own(std::size_t count, DType dtype) = 0;
    virtual void disown(Buffer* b) = 0;
    // A trainable tensor for the optimizer, with the state it needs; `low` is the copy in
    // the layer's dtype the operations read, null when they read the master.
    // `layout`: master, grad and low are stored zero-padded so (padded_layout.h).
    virtual void add_param(Buffer* master, Buffer* grad, Buffer* low, PaddedLayout layout = {}) = 0;
    // The dtype of the masters of a layer computing in `dtype` (float32, or the layer's
    // own dtype under a policy without master weights, or int16 for split masters: the
    // low halves, the copy in `dtype` holding the high ones).
    virtual DType master_dtype(DType dtype) const = 0;
    // The dtype a layer that picks its own computes in, and the math for a dtype.
    virtual DType layer_dtype(const LayerSpec& spec) const = 0;
    virtual MathMode layer_math(DType dtype) const = 0;

    // mixed_fp8: the run's delayed-scaling settings; null under every other policy.
    virtual const Fp8Config* fp8() const = 0;
    // A block of the network's one fp8 meta buffer (backend.h's layout) for a tensor
    // quantized to `format` (F8E4M3 or F8E5M2), named for the run's events ("layer 3 x");
    // returns its index. The buffer, fp8_meta(), is allocated and initialised once every
    // node has taken its blocks: a node keeps the reference, not the data pointer.
    virtual std::size_t fp8_block(DType format, std::string name) = 0;
    virtual Buffer& fp8_meta() = 0;
    // The parameter whose master is `master` gets mixed_fp8's quantized copy, which the
    // optimizer rewrites with every update (backend.h's ParamSlot::fp8) and the network
    // refreshes whenever the weights are written from the host.
    virtual void quantized_weights(const Buffer* master, const Fp8Weights& fp8) = 0;
    // mixed_fp8: relu's gate as bits (Backend::fp8_quantize's relu_mask). An fp8 dense
    // layer with a relu asks for one over its output (`rows` x `cols`); the fp8 layer that
    // quantizes that output as its input claims the request (claim_relu_mask) and writes
    // the bits in that pass, and the relu's backward then reads them instead of the
    // 16-bit output. Only a claimed mask holds memory (ReluMask::bits).
    virtual ReluMask* request_relu_mask(const Node* owner, int rows, int cols) = 0;
    // The request over `value` (a requesting node's output) read as rows of `cols`, its
    // bits allocated for the caller to write; null when there is none.
    virtual ReluMask* claim_relu_mask(const Buffer* value, int cols) = 0;
    // mixed_fp8: an fp8 dense layer offers to write its output (`cols` units) as the next
    // fp8 layer's E4M3 input (node.h's Fp8Output); that layer takes the offer over its
    // input `value` read as rows of `cols`, giving its x8 and meta block. Null when there
    // is none.
    virtual Fp8Output* offer_fp8_output(const Node* owner, int cols) = 0;
    virtual Fp8Output* take_fp8_output(const Buffer* value, int cols, Buffer* x8,
                                       std::size_t block) = 0;

    // The usual way into the flow (LayerUnit::build's default), for a layer that reads
    // the flow's value and writes an output of its own: a cast first when the layer
    // picks a dtype the flow does not have; then either the node before it takes it over
    // (LayerUnit::absorbable) or a node of its own: init_node, Node::allocate, its output
    // and, when anything needs it, its output gradient.
    virtual Flow add_layer(const LayerUnit& unit, const GraphLayer& layer, Flow flow,
                           NodeList& out) = 0;
    // The fields every node has, for `layer` computing in `dtype` from `flow`.
    virtual void init_node(Node& n, const GraphLayer& layer, const Flow& flow,
                           DType dtype) const = 0;

    // For blocks: a branch's layers built from `flow` into `out`; a flow cast to `dtype`
    // (unchanged when it has that dtype already).
    virtual Flow build_sequence(const std::vector<GraphLayer>& layers, Flow flow,
                                NodeList& out) = 0;
    virtual Flow cast_to(Flow flow, DType dtype, NodeList& out) = 0;
    // Points the output gradient of a branch's last node at the block's, `grad`; where
    // that must not be (`must_copy`, or the branch ends in a block of its own), gives it
    // a buffer of its own instead, stored in *copy for the block to fill.
    virtual void share_out_grad(NodeList& branch, const GraphLayer& block, Buffer* grad,
                                Buffer** copy, bool must_copy) = 0;

protected:
    ~NodeBuilder() = default;
};

// One layer type: how the graph infers it and how the network runs it.
class LayerUnit {
public:
    virtual ~LayerUnit() = default;

    // ---- the graph (build_graph's walk)
    // `gl` holds index, id, path, spec and in; fills out, params, flops (forward, per
    // sample, multiply-add = 2), stride and padding as resolved and, for a GEMM, is_gemm
    // and the tensor-core fitness with its note. Throws SpecError naming layer_label(gl).
    virtual void infer(GraphLayer& gl, GraphWalk& walk) const = 0;
    // Whether its output width is set by the layer itself (dense, flatten, global pooling):
    // the layer a wrong number of outputs is blamed on.
    virtual bool sets_width() const { return false; }
    // The field of its spec that is that width, when there is one ("units"), for the
    // advice to set it to the number of classes.
    virtual const char* width_field() const { return nullptr; }
    // Whether a softmax or sigmoid it ends with, as the model's last layer, is computed
    // inside the loss (dense, activation).
    virtual bool folds_output_activation() const { return false; }

    // ---- the network
    // Whether it computes in a dtype of its own (the policy's, or float32 when the spec
    // says so; a cast goes before it when that differs), rather than in whatever reaches
    // it (dropout, pooling, flatten).
    virtual bool picks_dtype() const = 0;
    // Padded sequence features (k_feature_alignment): whether its output may be stored
    // padded (embedding, lstm: their padding is zero by construction), whether it passes a
    // padded row through keeping the zeros zero (dropout; relu, tanh, gelu), and whether
    // it reads a padded input correctly (dense and lstm: zero weights on the extra columns).
    virtual bool pads_output() const { return false; }
    virtual bool keeps_padding(const LayerSpec&) const { return false; }
    virtual bool reads_padding() const { return false; }
    // A reader's tensor-core fitness judged again at the widths it runs at: its input
    // stored `stored_in` wide (and its own output's stored_width, when set).
    virtual void refit(GraphLayer&, std::int64_t /*stored_in*/) const {}
    // Whether the node before it may run this layer too (a relu, taken over by a batch
    // norm: Node::takes_relu).
    virtual bool absorbable(const LayerSpec&) const { return false; }
    // A new node of this type, for NodeBuilder::add_layer.
    virtual std::unique_ptr<Node> make_node() const = 0;
    // Adds the layer's nodes to `out` and returns the flow after it. The default is the
    // usual path (NodeBuilder::add_layer); a view (flatten) and a block (residual) differ.
    virtual Flow build(const GraphLayer& layer, Flow flow, NodeBuilder& b, NodeList& out) const
    {
        return b.add_layer(*this, layer, flow, out);
    }
};

// The Flow::width after node `n` of `layer`: its row when padded, else 0.
inline int padded_width(const Node& n, const GraphLayer& layer)
{
    return n.out_features != int(layer.out.elements()) ? n.out_features : 0;
}

} // namespace mixlab
