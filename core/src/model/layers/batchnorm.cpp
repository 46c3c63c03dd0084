// batchnorm: each channel (the last dimension) normalised over the batch and, for images,
// over height and width, then scaled and shifted; a relu that follows may run inside it.
// Scale, shift and every statistic are float32 whatever the policy.
#include "mixlab/error.h"
#include "model/layers/layer_rules.h"
#include "model/layers/layer_unit.h"

#include <cmath>

namespace mixlab {

namespace {

// Batch norm per element: subtract the mean, multiply by 1/sqrt(var + eps), scale, shift.
constexpr std::int64_t k_batchnorm_flops_per_element = 4;

class BatchNormNode final : public Node {
public:
    void allocate(NodeBuilder& b) override
    {
        const std::size_t c = std::size_t(channels);
        m_scale = b.own(c, DType::F32);
        m_scale_grad = b.own(c, DType::F32);
        m_shift = b.own(c, DType::F32);
        m_shift_grad = b.own(c, DType::F32);
        b.add_param(m_scale, m_scale_grad, nullptr);
        b.add_param(m_shift, m_shift_grad, nullptr);
        m_running_mean = b.own(c, DType::F32);
        m_running_var = b.own(c, DType::F32);
        m_saved_mean = b.own(c, DType::F32);
        m_saved_inv_std = b.own(c, DType::F32);
        if (!in_grad) m_scratch_dx = b.own(std::size_t(b.max_batch()) * in_features, dtype);
    }

    // Scale 1, shift 0, running mean 0, running variance 1.
    void init_parameters(Backend& backend, std::uint64_t) override
    {
        backend.fill(*m_scale, 1.0f);
        backend.fill(*m_shift, 0.0f);
        backend.fill(*m_running_mean, 0.0f);
        backend.fill(*m_running_var, 1.0f);
        backend.fill(*m_saved_mean, 0.0f);
        backend.fill(*m_saved_inv_std, 1.0f);
    }

    void forward(const PassContext& c, int batch, bool training, std::uint64_t) override
    {
        const LayerSpec& spec = layer->spec;
        const int rows = batch * (in_features / channels);
        if (training)
            c.backend.batchnorm_forward_train(
                act, *in, rows, channels, *m_scale, *m_shift, spec.momentum, spec.epsilon,
                *m_running_mean, *m_running_var, *m_saved_mean, *m_saved_inv_std, *out);
        else
            c.backend.batchnorm_forward_eval(act, *in, rows, channels, *m_scale, *m_shift,
                                             *m_running_mean, *m_running_var, spec.epsilon, *out);
    }

    void backward(const PassContext& c, int batch, std::uint64_t) override
    {
        const int rows = batch * (in_features / channels);
        // With an absorbed relu, out is the relu's output and out_grad its gradient.
        c.backend.batchnorm_backward(
            act, *in, *out, *out_grad, rows, channels, *m_scale, *m_saved_mean, *m_saved_inv_std,
            in_grad ? *in_grad : *m_scratch_dx, *m_scale_grad, *m_shift_grad);
    }

    bool takes_relu() const override { return true; }

    void state_buffers(std::vector<StateBuffer>& out) override
    {
        out.push_back({"running_mean", m_running_mean});
        out.push_back({"running_var", m_running_var});
    }

private:
    Buffer* m_scale = nullptr;
    Buffer* m_scale_grad = nullptr;
    Buffer* m_shift = nullptr;
    Buffer* m_shift_grad = nullptr;
    Buffer* m_running_mean = nullptr;
    Buffer* m_running_var = nullptr;
    Buffer* m_saved_mean = nullptr;
    Buffer* m_saved_inv_std = nullptr;
    Buffer* m_scratch_dx = nullptr; // dx nobody reads, when the batch norm sees the raw input
};

class BatchNormUnit final : public LayerUnit {
public:
    void infer(GraphLayer& gl, GraphWalk&) const override
    {
        const LayerSpec& l = gl.spec;
        const std::string label = layer_label(gl);
        if (!(l.momentum >= 0.0f && l.momentum <= 1.0f))
            throw SpecError(label + ": \"momentum\" must be a number in [0, 1], got " +
                            std::to_string(l.momentum));
        if (!(l.epsilon > 0.0f && std::isfinite(l.epsilon)))
            throw SpecError(label + ": \"epsilon\" must be a positive number, got " +
                            std::to_string(l.epsilon));
        // Normalises each channel (the last dimension) over the batch and, for
        // images, over height and width.
        const std::int64_t channels = gl.in.dims.back();
        gl.out = gl.in;
        gl.params = 2 * channels;
        gl.flops = k_batchnorm_flops_per_element * gl.in.elements();
    }
    bool picks_dtype() const override { return true; }
    std::unique_ptr<Node> make_node() const override { return std::make_unique<BatchNormNode>(); }
};

} // namespace

const LayerUnit& batchnorm_unit()
{
    static const BatchNormUnit unit;
    return unit;
}

} // namespace mixlab
