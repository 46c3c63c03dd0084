// activation: an element-wise function (relu, sigmoid, tanh, gelu) or softmax over each
// row, as a layer of its own. A relu after a batch norm runs inside it (the network
// decides); a softmax or sigmoid ending the model runs inside the loss.
#include "mixlab/error.h"
#include "model/layers/layer_rules.h"
#include "model/layers/layer_unit.h"

namespace mixlab {

namespace {

class ActivationNode final : public Node {
public:
    void allocate(NodeBuilder&) override { act = layer->spec.activation; }

    void forward(const PassContext& c, int, bool, std::uint64_t) override
    {
        c.backend.bias_activation(act, *in, nullptr, channels, *out);
    }

    void backward(const PassContext& c, int, std::uint64_t) override
    {
        if (in_grad) c.backend.activation_backward(act, *in, *out, *out_grad, channels, *in_grad);
    }
};

class ActivationUnit final : public LayerUnit {
public:
    void infer(GraphLayer& gl, GraphWalk&) const override
    {
        const LayerSpec& l = gl.spec;
        // Softmax normalises over a row; on an image-shaped tensor the row is ambiguous.
        if (l.activation == Activation::Softmax && gl.in.dims.size() != 1)
            throw SpecError(layer_label(gl) + ": softmax needs a flat input but receives " +
                            gl.in.to_string() + "; add a {\"type\": \"flatten\"} layer before it");
        gl.out = gl.in;
        gl.flops = activation_flops(l.activation, gl.in.elements());
    }
    bool folds_output_activation() const override { return true; }
    // f(0) = 0 keeps zero padding zero; a sigmoid (0.5) or a softmax (over the row) would not.
    bool keeps_padding(const LayerSpec& spec) const override
    {
        return spec.activation == Activation::Relu || spec.activation == Activation::Tanh ||
               spec.activation == Activation::Gelu || spec.activation == Activation::None;
    }
    bool picks_dtype() const override { return true; }
    bool absorbable(const LayerSpec& spec) const override
    {
        return spec.activation == Activation::Relu;
    }
    std::unique_ptr<Node> make_node() const override { return std::make_unique<ActivationNode>(); }
    Flow build(const GraphLayer& layer, Flow flow, NodeBuilder& b, NodeList& out) const override
    {
        if (layer.folded_into_loss) return flow; // the loss computes it, in float32
        return b.add_layer(*this, layer, flow, out);
    }
};

} // namespace

const LayerUnit& activation_unit()
{
    static const ActivationUnit unit;
    return unit;
}

} // namespace mixlab
