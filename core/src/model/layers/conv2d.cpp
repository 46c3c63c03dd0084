// conv2d: Y = act(conv(X, W) + b) over NHWC images, W stored KRSC. The convolution, then
// bias and activation as one pass; backward: bias gradient, dW, dX.
#include "mixlab/error.h"
#include "model/layers/layer_rules.h"
#include "model/layers/layer_unit.h"
#include "model/layers/weights.h"

#include <cstdio>
#include <sstream>

namespace mixlab {

namespace {

class Conv2DNode final : public Node {
public:
    void allocate(NodeBuilder& b) override
    {
        const LayerSpec& spec = layer->spec;
        act = spec.activation;
        ConvGeometry& g = m_geometry;
        g.batch = b.max_batch();
        g.in_h = layer->in.dims[0];
        g.in_w = layer->in.dims[1];
        g.in_c = layer->in.dims[2];
        g.out_h = layer->out.dims[0];
        g.out_w = layer->out.dims[1];
        g.out_c = layer->out.dims[2];
        g.kernel_h = spec.kernel_h;
        g.kernel_w = spec.kernel_w;
        g.stride_h = layer->stride_h;
        g.stride_w = layer->stride_w;
        g.pad_h = layer->pad_h;
        g.pad_w = layer->pad_w;
        m_w =
            allocate_weights(b, dtype, g.w_count(), spec.use_bias ? std::size_t(g.out_c) : 0, true);
        // Only GELU's backward needs the pre-activation; the others use the output.
        if (act == Activation::Gelu)
            m_pre = b.own(std::size_t(b.max_batch()) * out_features, dtype);
        m_plan = b.backend().conv2d_prepare(g, dtype, math);
    }

    void init_parameters(Backend& backend, std::uint64_t seed) override
    {
        const int window = m_geometry.kernel_h * m_geometry.kernel_w;
        init_weights(backend, m_w, window * m_geometry.in_c, window * m_geometry.out_c, seed,
                     layer->id);
    }

    void forward(const PassContext& c, int batch, bool, std::uint64_t) override
    {
        ConvGeometry g = m_geometry;
        g.batch = batch;
        Buffer& y = m_pre ? *m_pre : *out;
        c.backend.conv2d_forward(g, *in, m_w.w_read(), math, y);
        if (m_w.b_master || act != Activation::None)
            c.backend.bias_activation(act, y, m_w.b_read(), channels, *out);
    }

    void backward(const PassContext& c, int batch, std::uint64_t) override
    {
        ConvGeometry g = m_geometry;
        g.batch = batch;
        if (act != Activation::None) {
            const Buffer& x = m_pre ? *m_pre : *out;
            c.backend.activation_backward(act, x, *out, *out_grad, channels, *out_grad);
        }
        if (m_w.b_grad)
            c.backend.bias_grad(*out_grad, batch * g.out_h * g.out_w, g.out_c, *m_w.b_grad);
        Buffer& dw = m_w.w_grad_low ? *m_w.w_grad_low : *m_w.w_grad;
        c.backend.conv2d_backward_filter(g, *in, *out_grad, math, dw);
        if (m_w.w_grad_low) c.backend.cast(*m_w.w_grad_low, *m_w.w_grad);
        if (in_grad) c.backend.conv2d_backward_data(g, *out_grad, m_w.w_read(), math, *in_grad);
    }

    void kernels(std::vector<LayerKernelInfo>& out) const override
    {
        LayerKernelInfo k = kernel_facts();
        std::ostringstream s;
        const ConvGeometry& g = m_geometry;
        s << g.kernel_h << "x" << g.kernel_w << " " << g.in_c << "->" << g.out_c;
        if (g.stride_h != 1 || g.stride_w != 1) s << " stride " << g.stride_h;
        s << " on " << g.in_h << "x" << g.in_w;
        k.tensor_cores = m_plan.tensor_cores;
        // With the times the plan measured, so that two runs' choices can be compared.
        const auto timed = [](const std::string& algo, float ms) {
            if (ms <= 0.0f) return algo;
            char buf[32];
            std::snprintf(buf, sizeof buf, " %.3f ms", double(ms));
            return algo + buf;
        };
        if (!m_plan.forward_algo.empty())
            s << "; algorithms fwd " << timed(m_plan.forward_algo, m_plan.forward_ms)
              << ", bwd data " << timed(m_plan.backward_data_algo, m_plan.backward_data_ms)
              << ", bwd filter " << timed(m_plan.backward_filter_algo, m_plan.backward_filter_ms);
        k.detail = s.str() + detail_tail(*layer, math, m_w);
        out.push_back(std::move(k));
    }

    bool overwrites_out_grad() const override { return act != Activation::None; }

private:
    ConvGeometry m_geometry; // batch filled in per call
    ConvPlanInfo m_plan;
    Weights m_w;
    Buffer* m_pre = nullptr; // the pre-activation, for GELU's backward
};

class Conv2DUnit final : public LayerUnit {
public:
    void infer(GraphLayer& gl, GraphWalk& walk) const override
    {
        const LayerSpec& l = gl.spec;
        const std::string label = layer_label(gl);
        need_image(gl, walk);
        if (l.filters < 1)
            throw SpecError(label + ": \"filters\" must be a positive integer, got " +
                            std::to_string(l.filters));
        if (l.activation == Activation::Softmax)
            throw SpecError(label + ": \"activation\": \"softmax\" is not available on conv2d; "
                                    "put it after flatten and dense layers");
        const auto [oh, ow] = resolve_window(gl, false, 1, 1);
        const std::int64_t cin = gl.in.dims[2], cout = l.filters;
        // Checked in floating point first, so absurd sizes made in code cannot overflow.
        if (double(l.kernel_h) * l.kernel_w * double(cin) * double(cout) > double(k_max_elements))
            throw SpecError(label + ": a " + std::to_string(l.kernel_h) + "x" +
                            std::to_string(l.kernel_w) + " kernel over " + std::to_string(cin) +
                            " channels for " + std::to_string(cout) +
                            " filters is more weights than one layer may hold");
        if (double(oh) * double(ow) * double(cout) > double(k_max_elements))
            throw SpecError(label + ": its output " + std::to_string(oh) + "x" +
                            std::to_string(ow) + "x" + std::to_string(cout) +
                            " holds more values than one sample may");
        const std::int64_t taps = std::int64_t(l.kernel_h) * l.kernel_w * cin;
        gl.out = Shape{{oh, ow, l.filters}};
        const std::int64_t positions = std::int64_t(oh) * ow;
        gl.params = taps * cout + (l.use_bias ? cout : 0);
        gl.flops = 2 * taps * cout * positions + (l.use_bias ? cout * positions : 0) +
                   activation_flops(l.activation, gl.out.elements());
        set_gemm_fitness(gl, {{"input channels", cin}, {"filters", cout}});
    }
    bool picks_dtype() const override { return true; }
    std::unique_ptr<Node> make_node() const override { return std::make_unique<Conv2DNode>(); }
};

} // namespace

const LayerUnit& conv2d_unit()
{
    static const Conv2DUnit unit;
    return unit;
}

} // namespace mixlab
