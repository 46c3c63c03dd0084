// Pooling over NHWC windows: maxpool2d and avgpool2d (pool size, stride, padding) and
// global_avgpool (the whole image, one value per channel). One node serves all three.
#include "mixlab/error.h"
#include "model/layers/layer_rules.h"
#include "model/layers/layer_unit.h"

namespace mixlab {

namespace {

class PoolNode final : public Node {
public:
    PoolNode(PoolMode mode, bool global) : m_mode(mode), m_global(global) {}

    void allocate(NodeBuilder& b) override
    {
        const LayerSpec& spec = layer->spec;
        PoolGeometry& g = m_geometry;
        g.batch = b.max_batch();
        g.in_h = layer->in.dims[0];
        g.in_w = layer->in.dims[1];
        g.channels = layer->in.dims[2];
        if (m_global) {
            g.out_h = g.out_w = 1;
            g.window_h = g.stride_h = g.in_h;
            g.window_w = g.stride_w = g.in_w;
        } else {
            g.out_h = layer->out.dims[0];
            g.out_w = layer->out.dims[1];
            g.window_h = spec.kernel_h;
            g.window_w = spec.kernel_w;
            g.stride_h = layer->stride_h;
            g.stride_w = layer->stride_w;
            g.pad_h = layer->pad_h;
            g.pad_w = layer->pad_w;
        }
    }

    void forward(const PassContext& c, int batch, bool, std::uint64_t) override
    {
        PoolGeometry g = m_geometry;
        g.batch = batch;
        c.backend.pool_forward(m_mode, g, *in, *out);
    }

    void backward(const PassContext& c, int batch, std::uint64_t) override
    {
        if (!in_grad) return;
        PoolGeometry g = m_geometry;
        g.batch = batch;
        c.backend.pool_backward(m_mode, g, *in, *out, *out_grad, *in_grad);
    }

private:
    PoolMode m_mode;
    bool m_global;
    PoolGeometry m_geometry; // batch filled in per call
};

// maxpool2d and avgpool2d.
class WindowPoolUnit final : public LayerUnit {
public:
    explicit WindowPoolUnit(PoolMode mode) : m_mode(mode) {}
    void infer(GraphLayer& gl, GraphWalk& walk) const override
    {
        const LayerSpec& l = gl.spec;
        need_image(gl, walk);
        const auto [oh, ow] = resolve_window(gl, true, l.kernel_h, l.kernel_w);
        gl.out = Shape{{oh, ow, gl.in.dims[2]}};
        // One compare (max) or add (average) per window element and output.
        gl.flops = std::int64_t(l.kernel_h) * l.kernel_w * gl.out.elements();
    }
    bool picks_dtype() const override { return false; }
    std::unique_ptr<Node> make_node() const override
    {
        return std::make_unique<PoolNode>(m_mode, false);
    }

private:
    PoolMode m_mode;
};

class GlobalAvgPoolUnit final : public LayerUnit {
public:
    void infer(GraphLayer& gl, GraphWalk& walk) const override
    {
        need_image(gl, walk);
        gl.out = Shape{{gl.in.dims[2]}};
        gl.flops = gl.in.elements();
    }
    bool sets_width() const override { return true; }
    bool picks_dtype() const override { return false; }
    std::unique_ptr<Node> make_node() const override
    {
        return std::make_unique<PoolNode>(PoolMode::Average, true);
    }
};

} // namespace

const LayerUnit& maxpool2d_unit()
{
    static const WindowPoolUnit unit(PoolMode::Max);
    return unit;
}

const LayerUnit& avgpool2d_unit()
{
    static const WindowPoolUnit unit(PoolMode::Average);
    return unit;
}

const LayerUnit& global_avgpool_unit()
{
    static const GlobalAvgPoolUnit unit;
    return unit;
}

} // namespace mixlab
