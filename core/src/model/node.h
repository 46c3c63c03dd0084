// One node of the network's executed tree: a layer of the graph (each type's node is
// defined by its unit, model/layers/<type>.cpp) or a cast the network puts at a dtype
// boundary. A node reads `in`, writes `out`, and on the way back reads `out_grad` (which
// it may overwrite) and writes `in_grad`; the network allocates and wires these.
#pragma once
#include "mixlab/backend.h"
#include "mixlab/graph.h"
#include "model/node_facts.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace mixlab {

class Node;
using NodeList = std::vector<std::unique_ptr<Node>>;
class NodeBuilder;

// mixed_fp8: a relu's gate as bits (Backend::fp8_quantize's relu_mask), over the output of
// `owner` (the fp8 dense layer whose relu it gates, which asked for it) read as rows x
// `cols`; written by the fp8 layer that quantizes that output (NodeBuilder's
// request_relu_mask and claim_relu_mask). The owner, not its output buffer: a node's
// output is allocated after the node itself.
struct ReluMask {
    const Node* owner = nullptr;
    int rows = 0, cols = 0;
    // I32, rows x relu_mask_words(cols): allocated when a layer claims the mask, which
    // then writes it in its training forward; null while none has (nothing would write
    // it: the relu's backward reads the 16-bit output).
    Buffer* bits = nullptr;
};

// mixed_fp8: an fp8 dense layer's forward GEMM writing its output straight into the
// E4M3 input of the fp8 dense layer that reads it (GemmCall::c_scale, with that input's
// scale and amax), where that layer's x pass would read a 16-bit output back only to
// quantize it. Offered by a layer whose GEMM epilogue runs its whole activation
// (NodeBuilder::offer_fp8_output), taken by the reader (take_fp8_output); the network
// withdraws a taken offer when anything else reads the output (a residual's shortcut),
// before the first pass. While it stands the owner's 16-bit output is written only for a
// pass whose outputs the numerics sampler reads (PassContext::outputs_read).
struct Fp8Output {
    const Node* owner = nullptr;
    int cols = 0; // the owner's units
    // The taker's, set when it takes the offer: its E4M3 input (rows x fp8_padded(cols),
    // as its x pass would write it) and that input's meta block.
    Buffer* x8 = nullptr;
    std::size_t block = 0;
    bool taken = false;
};

// What a node's passes use besides its own buffers.
struct PassContext {
    Backend& backend;
    std::uint64_t seed;              // the network's seed (dropout masks)
    const StepCounter& step_counter; // the step as the device reads it, when set
    // The network's input when the gather wrote it quantized instead (Fp8Batch): the fp8
    // layer reading it skips its x pass.
    const Buffer* quantized_input = nullptr;
    // The numerics sampler reads every layer's output after this pass (a sampled step):
    // an output the next layer gets in E4M3 (Fp8Output) is then also written in 16 bits,
    // by a GEMM of its own that nothing else reads, so sampling changes no number.
    bool outputs_read = false;
};

class Node {
public:
    virtual ~Node() = default;

    const GraphLayer* layer = nullptr; // null for a cast; points into the network's graph
    DType dtype = DType::F32;
    MathMode math = MathMode::Pedantic;
    Activation act = Activation::None; // after folding into the loss, or a relu taken over
    bool passthrough = false;          // flatten: shares its input's buffers
    bool absorbed = false;             // relu run by the batch norm before it: shares its buffers
    bool input_gathered_fp8 = false;   // mixed_fp8: the gather writes its quantized input
    int in_features = 0, out_features = 0; // per sample
    int channels = 0;                      // last dimension of the output (NHWC channels)

    Buffer* in = nullptr;
    Buffer* in_grad = nullptr; // null when nothing before needs a gradient
    Buffer* out = nullptr;
    Buffer* out_grad = nullptr;

    // The passes as the network runs them: a node that shares another's buffers (flatten,
    // an absorbed relu) runs nothing, and nothing runs backward without an output gradient.
    void run_forward(const PassContext& c, int batch, bool training, std::uint64_t step);
    void run_backward(const PassContext& c, int batch, std::uint64_t step);

    // What the network calls once the common fields above are set: the node allocates what
    // its type needs (parameters, saved values) through `b`, before its output is.
    virtual void allocate(NodeBuilder&) {}
    // Initial values of what allocate() made; the same on every backend and policy.
    virtual void init_parameters(Backend&, std::uint64_t /*seed*/) {}
    // `step` seeds dropout masks (the same in forward and backward); `training` picks
    // dropout on/off and batch statistics (training) or running statistics (evaluation).
    virtual void forward(const PassContext& c, int batch, bool training, std::uint64_t step) = 0;
    virtual void backward(const PassContext& c, int batch, std::uint64_t step) = 0;

    // Zeroes the state a node carries from one forward pass to the next (an lstm's hidden
    // and cell state); Network::reset_state calls it.
    virtual void reset_state(Backend&) {}

    // Appends the kernel facts of the multiplying layers at or under this node.
    virtual void kernels(std::vector<LayerKernelInfo>&) const {}
    // Appends describe() lines for what is not a kernel (an embedding's lookup).
    virtual void describe(std::vector<std::string>&) const {}
    // mixed_fp8: where this node's x pass writes its input quantized, when it has one (an
    // fp8 dense layer), so that the gather can write it there instead; evaluation writes no
    // transpose and records no amax.
    virtual bool fp8_batch(Fp8Batch&, bool /*training*/) const { return false; }
    // Whether backward overwrites the dY it reads (an activation turned into dZ in place).
    virtual bool overwrites_out_grad() const { return false; }
    // Whether forward and backward can also run a relu that follows (batch norm).
    virtual bool takes_relu() const { return false; }
    // A block's branches (a residual's body and shortcut), in that order; empty otherwise.
    virtual std::vector<const NodeList*> branches() const { return {}; }
    // Float32 tensors other than parameters that a saved model holds (a batch norm's
    // running statistics), by the names PyTorch's equivalent module gives them.
    struct StateBuffer {
        std::string name;
        Buffer* buffer = nullptr;
    };
    virtual void state_buffers(std::vector<StateBuffer>&) {}
    // What reset_state zeroes and a training step carries to the next (an lstm's hidden
    // and cell state per layer, as stored: padded, the layer's dtype), for a checkpoint.
    virtual void carried_buffers(std::vector<StateBuffer>&) {}

    // "layer 4 > body 0"; the kernel facts' common part.
    std::string path() const;
    LayerKernelInfo kernel_facts() const;
};

// A sequence's passes: forward in order, backward in reverse.
void forward_nodes(NodeList& nodes, const PassContext& c, int batch, bool training,
                   std::uint64_t step);
void backward_nodes(NodeList& nodes, const PassContext& c, int batch, std::uint64_t step);

} // namespace mixlab
