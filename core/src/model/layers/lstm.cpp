// lstm: `layers` stacked LSTM layers over a time-major sequence (LstmShape), PyTorch's
// nn.LSTM with dropout between the layers. One node runs the whole stack (one graph layer,
// one top-level node: what profile marks and costs count by); per layer it holds a plan
// made once at allocation, one weight buffer in PyTorch's flat order and the carried
// hidden state. Truncated BPTT as the word_language_model example: each forward starts
// from the state the previous one ended in (copied on the device after a training step's
// backward or an evaluation forward, so a recorded step replays it), and no gradient
// flows back into that state.
#include "base/hd_math.h"
#include "mixlab/error.h"
#include "model/layers/layer_rules.h"
#include "model/layers/layer_unit.h"
#include "model/layers/weights.h"

#include <cmath>
#include <sstream>

namespace mixlab {

namespace {

// FLOPs per token of one layer's element-wise part: two bias adds on the 4H gate
// pre-activations, their four nonlinearities, the cell update (3H) and the output
// o * tanh(c) (2H).
std::int64_t gate_flops(std::int64_t hidden) { return 8 * hidden + 4 * hidden + 5 * hidden; }

class LstmNode final : public Node {
public:
    void allocate(NodeBuilder& b) override
    {
        const LayerSpec& spec = layer->spec;
        m_rate = spec.rate;
        m_steps = b.time_steps();
        m_gpu = b.backend().info().is_gpu();
        const int batch = b.max_batch() / m_steps;
        const int hidden = out_features; // spec.hidden, or padded (k_feature_alignment)
        m_layers.resize(std::size_t(spec.num_layers));
        for (std::size_t k = 0; k < m_layers.size(); ++k) {
            Layer& L = m_layers[k];
            L.shape = LstmShape{m_steps, batch, k == 0 ? in_features : hidden, hidden};
            // cuDNN's backward weights writes the data's dtype: a 16-bit dW, then cast.
            L.w = allocate_weights(b, dtype, L.shape.weight_count(), 0, true,
                                   padded_layout(k, L.shape));
            L.plan = b.backend().lstm_prepare(L.shape, dtype, math);
            for (Buffer** s : {&L.h0, &L.c0, &L.hT, &L.cT})
                *s = b.own(L.shape.state_count(), dtype);
            const bool last = k + 1 == m_layers.size();
            if (!last) {
                L.y = b.own(L.shape.y_count(), dtype);
                L.dy = b.own(L.shape.y_count(), dtype);
                if (m_rate > 0.0f) {
                    L.dropped = b.own(L.shape.y_count(), dtype);
                    L.ddropped = b.own(L.shape.y_count(), dtype);
                }
            }
        }
        // lstm_backward_data always writes dx; with nothing before needing it, a scratch.
        if (!in_grad) m_dx_scratch = b.own(m_layers[0].shape.x_count(), dtype);
    }

    void init_parameters(Backend& backend, std::uint64_t seed) override
    {
        // PyTorch's nn.LSTM: every weight and bias uniform(-1/sqrt(H), 1/sqrt(H)).
        const float limit = 1.0f / std::sqrt(float(layer->spec.hidden));
        for (std::size_t k = 0; k < m_layers.size(); ++k)
            init_uniform(backend, m_layers[k].w, limit, seed,
                         0x157A0000ull + (std::uint64_t(layer->id) << 8) + k);
        reset_state(backend);
    }

    void reset_state(Backend& backend) override
    {
        for (Layer& L : m_layers)
            for (Buffer* s : {L.h0, L.c0}) backend.fill(*s, 0.0f);
    }

    void carried_buffers(std::vector<StateBuffer>& out) override
    {
        for (std::size_t k = 0; k < m_layers.size(); ++k) {
            out.push_back({"h_l" + std::to_string(k), m_layers[k].h0});
            out.push_back({"c_l" + std::to_string(k), m_layers[k].c0});
        }
    }

    void forward(const PassContext& c, int rows, bool training, std::uint64_t step) override
    {
        check_rows(rows);
        const Buffer* x = in;
        for (std::size_t k = 0; k < m_layers.size(); ++k) {
            Layer& L = m_layers[k];
            Buffer& y = y_of(k);
            c.backend.lstm_forward(*L.plan, *x, *L.h0, *L.c0, L.w.w_read(), training, y, *L.hT,
                                   *L.cT);
            x = &y;
            if (training && L.dropped) {
                c.backend.dropout_forward(y, m_rate, mask_seed(c, k), step, c.step_counter,
                                          *L.dropped);
                x = L.dropped;
            }
        }
        // An evaluation pass carries its state at once; a training step after its backward,
        // which still reads h0 and c0.
        if (!training)
            for (std::size_t k = 0; k < m_layers.size(); ++k) carry_state(c.backend, k);
    }

    void backward(const PassContext& c, int rows, std::uint64_t step) override
    {
        check_rows(rows);
        for (std::size_t k = m_layers.size(); k-- > 0;) {
            Layer& L = m_layers[k];
            // What layer k read, and where its input gradient goes: the layer below's
            // output (through the dropout between them), or the node's own input.
            const Layer* below = k ? &m_layers[k - 1] : nullptr;
            const Buffer& x = !below ? *in : below->dropped ? *below->dropped : *below->y;
            Buffer& dx = !below            ? (in_grad ? *in_grad : *m_dx_scratch)
                         : below->ddropped ? *below->ddropped
                                           : *below->dy;
            // dhT = dcT = null: truncated BPTT cuts the graph at the window's end.
            c.backend.lstm_backward_data(*L.plan, y_of(k), dy_of(k), nullptr, nullptr, L.w.w_read(),
                                         *L.h0, *L.c0, dx, nullptr, nullptr);
            Buffer& dw = L.w.w_grad_low ? *L.w.w_grad_low : *L.w.w_grad;
            c.backend.fill(dw, 0.0f); // lstm_backward_weights adds into dw
            c.backend.lstm_backward_weights(*L.plan, x, *L.h0, y_of(k), dw);
            if (L.w.w_grad_low) c.backend.cast(*L.w.w_grad_low, *L.w.w_grad);
            carry_state(c.backend, k); // h0 and c0 are read no more this step
            if (below && below->ddropped)
                c.backend.dropout_backward(*below->ddropped, m_rate, mask_seed(c, k - 1), step,
                                           c.step_counter, *below->dy);
        }
    }

    void kernels(std::vector<LayerKernelInfo>& out) const override
    {
        LayerKernelInfo k = kernel_facts();
        const LstmShape& s = m_layers[0].shape;
        std::ostringstream d;
        d << layer->in.elements() << "->" << layer->spec.hidden << " x" << m_layers.size()
          << (m_layers.size() == 1 ? " layer" : " layers") << ", " << s.steps << " steps of "
          << s.batch;
        if (m_rate > 0.0f && m_layers.size() > 1) d << ", dropout " << m_rate << " between layers";
        if (s.hidden != layer->spec.hidden || s.input != layer->in.elements())
            d << "; stored padded to " << s.input << "->" << s.hidden
              << " (zeros: 16-byte rows for tensor cores)";
        if (m_gpu) {
            d << "; cuDNN RNN, ";
            d << (dtype != DType::F32      ? "tensor-op math (fp32 gates and cell state)"
                  : math == MathMode::TF32 ? "default math (TF32 allowed)"
                                           : "FMA math (exact fp32)");
        } else {
            d << "; CPU reference LSTM (fp32 math, " << dtype_name(dtype) << " storage)";
        }
        k.tensor_cores = m_gpu && math != MathMode::Pedantic && layer->tensor_core_friendly;
        k.detail = d.str() + detail_tail(*layer, math, m_layers[0].w);
        out.push_back(std::move(k));
    }

private:
    struct Layer {
        LstmShape shape;
        std::unique_ptr<LstmPlan> plan;
        Weights w;
        Buffer *h0 = nullptr, *c0 = nullptr, *hT = nullptr, *cT = nullptr;
        Buffer *y = nullptr, *dy = nullptr; // every layer's but the last (the node's out)
        Buffer *dropped = nullptr, *ddropped = nullptr; // y after dropout, and its gradient
    };

    // Layer k's flat buffer stored padded (k_feature_alignment): the padding units'
    // weights and biases and the weights on padded inputs are zero, so such a unit keeps
    // c = h = 0 and passes nothing on. Empty when nothing is padded.
    PaddedLayout padded_layout(std::size_t k, const LstmShape& s) const
    {
        const std::int64_t h = layer->spec.hidden;
        const std::int64_t in = k == 0 ? layer->in.elements() : h;
        if (s.hidden == h && s.input == in) return {};
        return {{4, h, s.hidden, in, s.input}, // w_ih: the four gates' rows
                {4, h, s.hidden, h, s.hidden}, // w_hh
                {4, h, s.hidden, 1, 1},        // b_ih
                {4, h, s.hidden, 1, 1}};       // b_hh
    }

    Buffer& y_of(std::size_t k) { return k + 1 == m_layers.size() ? *out : *m_layers[k].y; }
    Buffer& dy_of(std::size_t k) { return k + 1 == m_layers.size() ? *out_grad : *m_layers[k].dy; }

    void carry_state(Backend& backend, std::size_t k)
    {
        Layer& L = m_layers[k];
        backend.cast(*L.hT, *L.h0);
        backend.cast(*L.cT, *L.c0);
    }

    // Differs per layer boundary and from every dropout layer's (seeded by its id alone).
    std::uint64_t mask_seed(const PassContext& c, std::size_t k) const
    {
        return c.seed ^ hd::mix64(std::uint64_t(layer->id) ^ (std::uint64_t(k + 1) << 40));
    }

    // The plans and states are sized for the batch the network was built for.
    void check_rows(int rows) const
    {
        const LstmShape& s = m_layers[0].shape;
        if (rows != s.steps * s.batch)
            throw InputError(path() + " (lstm): built for batches of " + std::to_string(s.batch) +
                             " sequences of " + std::to_string(s.steps) + " steps, got " +
                             std::to_string(rows / s.steps) +
                             " sequences; a language model runs at one fixed batch size (its "
                             "hidden state carries from batch to batch)");
    }

    float m_rate = 0.0f;
    int m_steps = 1;
    bool m_gpu = false;
    std::vector<Layer> m_layers;
    Buffer* m_dx_scratch = nullptr;
};

class LstmUnit final : public LayerUnit {
    // cuDNN's RNN kernels use tensor cores when the input and hidden sizes (as stored) and
    // the batch (a setting of the run) are multiples of 8.
    static void fit(GraphLayer& gl, std::int64_t in, std::int64_t hidden)
    {
        set_gemm_fitness(gl, {{"input", in}, {"hidden", hidden}});
        if (!gl.tensor_core_friendly)
            gl.tensor_core_note += "; cuDNN's RNN also wants the batch a multiple of 8 (a "
                                   "run setting)";
    }

public:
    void infer(GraphLayer& gl, GraphWalk&) const override
    {
        const LayerSpec& l = gl.spec;
        const std::string label = layer_label(gl);
        if (!gl.in.sequence || gl.in.dims.size() != 1)
            throw SpecError(label + ": needs a sequence (one vector per time step) but receives " +
                            gl.in.to_string() +
                            "; an lstm follows the embedding of a language model");
        if (l.hidden <= 0)
            throw SpecError(label + ": \"hidden\" must be a positive integer, got " +
                            std::to_string(l.hidden));
        if (l.num_layers <= 0)
            throw SpecError(label + ": \"layers\" must be a positive integer, got " +
                            std::to_string(l.num_layers));
        if (!(l.rate >= 0.0f && l.rate < 1.0f))
            throw SpecError(label + ": \"dropout\" must be a number in [0, 1), got " +
                            std::to_string(l.rate));
        const std::int64_t in = gl.in.dims[0], h = l.hidden;
        gl.params = 0;
        gl.flops = 0;
        for (int k = 0; k < l.num_layers; ++k) {
            const std::int64_t i = k == 0 ? in : h;
            const std::int64_t w = 4 * h * (i + h + 2);
            if (w > k_max_elements)
                throw SpecError(label + ": " + std::to_string(i) + " inputs and " +
                                std::to_string(h) +
                                " hidden units is more weights than one layer may hold");
            gl.params += w;
            gl.flops += 2 * 4 * h * (i + h) + gate_flops(h);
        }
        gl.out = Shape{{l.hidden}, true};
        fit(gl, in, h);
    }
    bool picks_dtype() const override { return true; }
    bool pads_output() const override { return true; }
    bool reads_padding() const override { return true; }
    void refit(GraphLayer& gl, std::int64_t stored_in) const override
    {
        const std::int64_t h = gl.stored_width ? gl.stored_width : gl.spec.hidden;
        fit(gl, stored_in, h);
    }
    std::unique_ptr<Node> make_node() const override { return std::make_unique<LstmNode>(); }
};

} // namespace

const LayerUnit& lstm_unit()
{
    static const LstmUnit unit;
    return unit;
}

} // namespace mixlab
