// flatten: an image (H, W, C) seen as a vector of H*W*C values. A view: it shares its
// input's buffers and runs nothing.
#include "mixlab/error.h"
#include "model/layers/layer_rules.h"
#include "model/layers/layer_unit.h"

namespace mixlab {

namespace {

class FlattenNode final : public Node {
public:
    // Never called: the node is a passthrough (Node::run_forward, run_backward).
    void forward(const PassContext&, int, bool, std::uint64_t) override {}
    void backward(const PassContext&, int, std::uint64_t) override {}
};

class FlattenUnit final : public LayerUnit {
public:
    void infer(GraphLayer& gl, GraphWalk&) const override
    {
        if (gl.in.sequence)
            throw SpecError(layer_label(gl) + ": receives a sequence (" + gl.in.to_string() +
                            ") and has no image to flatten; dense layers apply per time step, "
                            "so none is needed");
        if (gl.in.elements() > k_max_elements)
            throw SpecError(layer_label(gl) + ": flattens " + gl.in.to_string() +
                            ", more values than one sample may hold");
        gl.out = Shape{{int(gl.in.elements())}};
    }
    bool sets_width() const override { return true; }
    bool picks_dtype() const override { return false; }
    std::unique_ptr<Node> make_node() const override { return std::make_unique<FlattenNode>(); }
    Flow build(const GraphLayer& layer, Flow flow, NodeBuilder&, NodeList& out) const override
    {
        auto node = make_node();
        node->layer = &layer;
        node->passthrough = true;
        node->dtype = flow.dtype;
        node->in = node->out = flow.value;
        node->in_grad = node->out_grad = flow.grad;
        node->in_features = node->out_features = int(flow.shape.elements());
        out.push_back(std::move(node));
        flow.shape = layer.out;
        return flow;
    }
};

} // namespace

const LayerUnit& flatten_unit()
{
    static const FlattenUnit unit;
    return unit;
}

} // namespace mixlab
