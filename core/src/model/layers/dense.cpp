// dense: Y (batch x units) = act(X (batch x in) . W^T + b), W stored (units x in). One GEMM
// forward (bias, and relu when there is a bias, in its epilogue), two backward.
#include "mixlab/error.h"
#include "model/layers/layer_rules.h"
#include "model/layers/layer_unit.h"
#include "model/layers/weights.h"

#include <sstream>

namespace mixlab {

namespace {

class DenseNode final : public Node {
public:
    void allocate(NodeBuilder& b) override
    {
        const LayerSpec& spec = layer->spec;
        act = layer->folded_into_loss ? Activation::None : spec.activation;
        m_fused_relu = act == Activation::Relu && spec.use_bias;
        m_w = allocate_weights(b, dtype, std::size_t(out_features) * in_features,
                               spec.use_bias ? out_features : 0, false);
        if (act != Activation::None && !m_fused_relu)
            m_pre = b.own(std::size_t(b.max_batch()) * out_features, dtype);
    }

    void init_parameters(Backend& backend, std::uint64_t seed) override
    {
        init_weights(backend, m_w, in_features, out_features, seed, layer->id);
    }

    void forward(const PassContext& c, int batch, bool, std::uint64_t) override
    {
        GemmCall g;
        g.trans_b = true; // Y (batch x out) = X (batch x in) . W^T, W stored (out x in)
        g.m = batch;
        g.n = out_features;
        g.k = in_features;
        g.a = in;
        g.b = &m_w.w_read();
        g.c = m_pre ? m_pre : out;
        g.bias = m_w.b_read();
        g.epilogue = !g.bias ? Epilogue::None : m_fused_relu ? Epilogue::BiasRelu : Epilogue::Bias;
        g.math = math;
        c.backend.gemm(g);
        if (m_pre) c.backend.bias_activation(act, *m_pre, nullptr, out_features, *out);
    }

    void backward(const PassContext& c, int batch, std::uint64_t) override
    {
        // dZ overwrites dY in place: every activation here is element-wise.
        if (act != Activation::None) {
            const Buffer& x = m_pre ? *m_pre : *out;
            c.backend.activation_backward(act, x, *out, *out_grad, out_features, *out_grad);
        }
        GemmCall dw; // dW (out x in) = dZ^T . X, and dB = column sums of dZ
        dw.trans_a = true;
        dw.m = out_features;
        dw.n = in_features;
        dw.k = batch;
        dw.a = out_grad;
        dw.b = in;
        dw.c = m_w.w_grad;
        dw.epilogue = m_w.b_grad ? Epilogue::BiasGradA : Epilogue::None;
        dw.bias_grad = m_w.b_grad;
        dw.math = math;
        c.backend.gemm(dw);
        if (in_grad) {
            GemmCall dx; // dX (batch x in) = dZ . W
            dx.m = batch;
            dx.n = in_features;
            dx.k = out_features;
            dx.a = out_grad;
            dx.b = &m_w.w_read();
            dx.c = in_grad;
            dx.math = math;
            c.backend.gemm(dx);
        }
    }

    void kernels(std::vector<LayerKernelInfo>& out) const override
    {
        LayerKernelInfo k = kernel_facts();
        std::ostringstream s;
        s << in_features << "->" << out_features;
        k.tensor_cores = math != MathMode::Pedantic && layer->tensor_core_friendly;
        k.detail = s.str() + detail_tail(*layer, math, m_w);
        out.push_back(std::move(k));
    }

    bool overwrites_out_grad() const override { return act != Activation::None; }

private:
    bool m_fused_relu = false; // bias + relu in the GEMM's epilogue
    Weights m_w;
    Buffer* m_pre = nullptr; // the pre-activation, when the activation runs on its own
};

class DenseUnit final : public LayerUnit {
public:
    void infer(GraphLayer& gl, GraphWalk& walk) const override
    {
        LayerSpec& l = gl.spec;
        const std::string label = layer_label(gl);
        if (gl.in.dims.size() != 1)
            throw SpecError(label + ": needs a flat input but receives " + gl.in.to_string() +
                            "; add a {\"type\": \"flatten\"} layer before it");
        if (l.units == k_units_classes) l.units = walk.classes();
        if (l.units <= 0)
            throw SpecError(label + ": \"units\" must be a positive integer, got " +
                            std::to_string(l.units));
        const std::int64_t in = gl.in.dims[0];
        const std::int64_t units = l.units;
        if (in * units > k_max_elements)
            throw SpecError(label + ": " + std::to_string(in) + " inputs x " +
                            std::to_string(units) +
                            " units is more weights than one layer "
                            "may hold");
        gl.out = Shape{{l.units}};
        gl.params = in * units + (l.use_bias ? units : 0);
        gl.flops =
            2 * in * units + (l.use_bias ? units : 0) + activation_flops(l.activation, units);
        set_gemm_fitness(gl, {{"inputs", in}, {"units", units}});
    }
    bool sets_width() const override { return true; }
    const char* width_field() const override { return "units"; }
    bool folds_output_activation() const override { return true; }
    bool picks_dtype() const override { return true; }
    std::unique_ptr<Node> make_node() const override { return std::make_unique<DenseNode>(); }
};

} // namespace

const LayerUnit& dense_unit()
{
    static const DenseUnit unit;
    return unit;
}

} // namespace mixlab
