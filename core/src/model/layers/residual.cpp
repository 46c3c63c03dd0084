// residual: output = act(body(x) + shortcut(x)), where body and shortcut are sequences of
// layers and an empty shortcut is the identity. A block: its node holds its branches' nodes.
#include "mixlab/error.h"
#include "model/layers/layer_rules.h"
#include "model/layers/layer_unit.h"

namespace mixlab {

namespace {

class ResidualNode final : public Node {
public:
    NodeList body, shortcut;
    Buffer* body_value = nullptr;       // what the body (and shortcut) end with
    Buffer* shortcut_value = nullptr;   // the block input itself for an identity shortcut
    Buffer* shortcut_in_grad = nullptr; // the shortcut's dX, added into in_grad
    Buffer* body_grad_copy = nullptr;   // set when the body must not overwrite dS
    Buffer* shortcut_grad_copy = nullptr;

    void init_parameters(Backend& backend, std::uint64_t seed) override
    {
        for (const NodeList* branch : branches())
            for (const auto& n : *branch) n->init_parameters(backend, seed);
    }

    void forward(const PassContext& c, int batch, bool training, std::uint64_t step) override
    {
        forward_nodes(body, c, batch, training, step);
        forward_nodes(shortcut, c, batch, training, step);
        c.backend.add_activation(act, *body_value, *shortcut_value, *out);
    }

    void backward(const PassContext& c, int batch, std::uint64_t step) override
    {
        // dS = d(body + shortcut); relu(out) > 0 exactly where its input was.
        if (act != Activation::None)
            c.backend.activation_backward(act, *out, *out, *out_grad, channels, *out_grad);
        if (shortcut_grad_copy) c.backend.cast(*out_grad, *shortcut_grad_copy);
        if (body_grad_copy) c.backend.cast(*out_grad, *body_grad_copy);
        backward_nodes(shortcut, c, batch, step);
        backward_nodes(body, c, batch, step);
        if (in_grad) {
            const Buffer& sc = shortcut.empty() ? *out_grad : *shortcut_in_grad;
            c.backend.add_activation(Activation::None, *in_grad, sc, *in_grad);
        }
    }

    void kernels(std::vector<LayerKernelInfo>& out) const override
    {
        for (const NodeList* branch : branches())
            for (const auto& n : *branch) n->kernels(out);
    }

    bool overwrites_out_grad() const override { return act != Activation::None; }
    std::vector<const NodeList*> branches() const override { return {&body, &shortcut}; }
};

class ResidualUnit final : public LayerUnit {
public:
    void infer(GraphLayer& gl, GraphWalk& walk) const override
    {
        const LayerSpec& l = gl.spec;
        const std::string label = layer_label(gl);
        if (l.body.empty())
            throw SpecError(label + ": \"body\" is empty; a residual block adds the output of "
                                    "at least one layer to its shortcut");
        if (l.activation != Activation::None && l.activation != Activation::Relu)
            throw SpecError(label +
                            ": \"activation\" of a residual block must be \"relu\" or "
                            "\"linear\", got \"" +
                            std::string(activation_name(l.activation)) + "\"");
        Shape body_out, shortcut_out;
        gl.body = walk.infer_list(l.body, gl.in, gl.path + " > body ", body_out);
        gl.shortcut = walk.infer_list(l.shortcut, gl.in, gl.path + " > shortcut ", shortcut_out);
        if (!(body_out == shortcut_out)) mismatch(gl, body_out, shortcut_out);
        gl.out = body_out;
        for (const auto* part : {&gl.body, &gl.shortcut})
            for (const GraphLayer& sub : *part) {
                gl.params += sub.params;
                gl.flops += sub.flops;
            }
        // The sum, then the activation.
        gl.flops += gl.out.elements() + activation_flops(l.activation, gl.out.elements());
    }
    bool picks_dtype() const override { return true; }
    std::unique_ptr<Node> make_node() const override { return std::make_unique<ResidualNode>(); }

    Flow build(const GraphLayer& layer, Flow flow, NodeBuilder& b, NodeList& out) const override
    {
        const DType dtype = b.layer_dtype(layer.spec);
        const std::size_t count = std::size_t(b.max_batch()) * std::size_t(layer.out.elements());
        auto node = std::make_unique<ResidualNode>();
        ResidualNode& n = *node;
        b.init_node(n, layer, flow, dtype);
        n.act = layer.spec.activation;

        // The body writes its dX straight into the block's input gradient; the shortcut
        // into its own buffer, added afterwards.
        Flow body = b.build_sequence(layer.body, flow, n.body);
        body = b.cast_to(body, dtype, n.body);
        Flow sc_in = flow;
        if (flow.grad && (!layer.shortcut.empty() || flow.dtype != dtype))
            sc_in.grad = n.shortcut_in_grad = b.own(flow.value->count(), flow.dtype);
        Flow sc = b.build_sequence(layer.shortcut, sc_in, n.shortcut);
        sc = b.cast_to(sc, dtype, n.shortcut);
        n.body_value = body.value;
        n.shortcut_value = sc.value;

        n.out = b.own(count, dtype);
        const bool needs_grad = flow.grad != nullptr || layer.params > 0;
        n.out_grad = needs_grad ? b.own(count, dtype) : nullptr;

        // Both branches read dS = the block's out_grad (after its activation's backward).
        // Point their last nodes at it instead of giving them buffers of their own, unless
        // a branch overwrites its dY while the other still needs dS. Backward runs the
        // shortcut first, then the body, then adds: the shortcut must not spoil dS for the
        // body, and with an identity shortcut the body must not spoil it for the add.
        if (n.out_grad) {
            const bool identity = n.shortcut.empty();
            b.share_out_grad(n.shortcut, layer, n.out_grad, &n.shortcut_grad_copy,
                             !identity && n.shortcut.back()->overwrites_out_grad());
            b.share_out_grad(n.body, layer, n.out_grad, &n.body_grad_copy,
                             identity && !n.body.empty() && n.body.back()->overwrites_out_grad());
        }
        if (n.body.empty())
            throw SpecError(layer.path + " (residual): \"body\" must hold at least one layer");

        Flow next{n.out, n.out_grad, dtype, layer.out};
        out.push_back(std::move(node));
        return next;
    }

private:
    // Names both shapes and, where one exists, a shortcut that would match the body.
    [[noreturn]] static void mismatch(const GraphLayer& gl, const Shape& body,
                                      const Shape& shortcut)
    {
        std::string msg = layer_label(gl) + ": body gives " + body.to_string() +
                          " but shortcut gives " + shortcut.to_string();
        if (gl.spec.shortcut.empty()) msg += " (the identity: the block's input)";
        msg += "; the two must have the same shape to be added";
        const Shape& in = gl.in;
        std::string fix;
        if (is_image(in) && is_image(body)) {
            // A 1x1 convolution with stride s maps h to (h - 1) / s + 1.
            auto stride_for = [](int from, int to) {
                for (int s = 1; s <= from; ++s)
                    if ((from - 1) / s + 1 == to) return s;
                return 0;
            };
            const int sh = stride_for(in.dims[0], body.dims[0]);
            const int sw = stride_for(in.dims[1], body.dims[1]);
            if (sh && sw) {
                fix = "{\"type\": \"conv2d\", \"filters\": " + std::to_string(body.dims[2]) +
                      ", \"kernel\": 1";
                if (sh != 1 || sw != 1) fix += ", \"stride\": " + pair_text(sh, sw);
                fix += ", \"use_bias\": false}, {\"type\": \"batchnorm\"}";
            }
        } else if (in.dims.size() == 1 && body.dims.size() == 1) {
            fix = "{\"type\": \"dense\", \"units\": " + std::to_string(body.dims[0]) + "}";
        }
        if (!fix.empty()) msg += "; a \"shortcut\": [" + fix + "] would match";
        throw SpecError(msg);
    }
};

} // namespace

const LayerUnit& residual_unit()
{
    static const ResidualUnit unit;
    return unit;
}

} // namespace mixlab
