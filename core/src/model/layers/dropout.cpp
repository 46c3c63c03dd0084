// dropout: inverted dropout with a counter-based mask drawn from (seed, step, index), so
// forward and backward, and every backend, see the same mask without storing it.
#include "base/hd_math.h"
#include "mixlab/error.h"
#include "model/layers/layer_rules.h"
#include "model/layers/layer_unit.h"

namespace mixlab {

namespace {

class DropoutNode final : public Node {
public:
    void forward(const PassContext& c, int, bool training, std::uint64_t step) override
    {
        // Evaluation is a plain copy (rate 0 keeps everything, scale 1).
        c.backend.dropout_forward(*in, training ? layer->spec.rate : 0.0f, mask_seed(c), step,
                                  training ? c.step_counter : StepCounter{}, *out);
    }

    void backward(const PassContext& c, int, std::uint64_t step) override
    {
        if (in_grad)
            c.backend.dropout_backward(*out_grad, layer->spec.rate, mask_seed(c), step,
                                       c.step_counter, *in_grad);
    }

private:
    std::uint64_t mask_seed(const PassContext& c) const
    {
        return c.seed ^ hd::mix64(std::uint64_t(layer->id));
    }
};

class DropoutUnit final : public LayerUnit {
public:
    void infer(GraphLayer& gl, GraphWalk&) const override
    {
        const float rate = gl.spec.rate;
        if (!(rate >= 0.0f && rate < 1.0f))
            throw SpecError(layer_label(gl) + ": \"rate\" must be a number in [0, 1), got " +
                            std::to_string(rate));
        gl.out = gl.in;
    }
    bool picks_dtype() const override { return false; }
    bool keeps_padding(const LayerSpec&) const override { return true; }
    std::unique_ptr<Node> make_node() const override { return std::make_unique<DropoutNode>(); }
};

} // namespace

const LayerUnit& dropout_unit()
{
    static const DropoutUnit unit;
    return unit;
}

} // namespace mixlab
