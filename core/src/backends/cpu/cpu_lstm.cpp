// CPU reference LSTM layer (PyTorch's formula, gates i, f, g, o) written plainly: forward
// step by step, backward through time, weight gradients added into dw. Float32 math with
// the layer dtype's rounding wherever a value is stored; TF32 rounds the GEMM operands.
#include "backends/cpu/cpu_backend.h"

#include "backends/backend_validate_sequence.h"
#include "backends/cpu/cpu_parallel.h"
#include "base/hd_math.h"

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <vector>

namespace mixlab::cpu {

namespace {

using RowMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using ConstMap = Eigen::Map<const RowMat>;
using Map = Eigen::Map<RowMat>;

// Sequences are time-major, as cuDNN's packed sequence-major layout and PyTorch's
// nn.LSTM without batch_first: x is (steps, batch, input), y (steps, batch, hidden),
// states (batch, hidden); the pre-activations of one step are (batch, 4*hidden) with
// the gates i, f, g, o side by side.
class CpuLstmPlan final : public LstmPlan {
public:
    CpuLstmPlan(const LstmShape& s, DType dtype, MathMode math)
        : m_shape(s), m_dtype(dtype), m_math(math)
    {
        const std::size_t rows = std::size_t(s.steps) * s.batch, g4 = 4 * std::size_t(s.hidden);
        gates.resize(rows * g4);
        cells.resize(s.y_count());
        step_gates.resize(std::size_t(s.batch) * g4);
        step_cell.resize(s.state_count());
        dpre.resize(rows * g4);
        dh.resize(s.state_count());
        dc.resize(s.state_count());
        h_prev.resize(s.y_count());
        dw.resize(s.weight_count());
        if (math == MathMode::TF32) {
            // Rounded copies of the GEMM operands: the weights, the largest of the
            // activation operands (x, h or dpre), and dpre beside x or h (dw's product).
            tf32_w.resize(s.weight_count());
            tf32_a.resize(std::max({s.x_count(), s.y_count(), rows * g4}));
            tf32_dpre.resize(rows * g4);
        }
    }

    const LstmShape& shape() const override { return m_shape; }
    std::int64_t device_bytes() const override
    {
        std::size_t n = 0;
        for (const std::vector<float>* v : {&gates, &cells, &step_gates, &step_cell, &dpre, &dh,
                                            &dc, &h_prev, &dw, &tf32_w, &tf32_a, &tf32_dpre})
            n += v->size();
        return std::int64_t(n * sizeof(float));
    }
    DType dtype() const { return m_dtype; }
    MathMode math() const { return m_math; }

    // Saved by the latest training forward: activated gates and cell states per step.
    std::vector<float> gates, cells;
    // An inference forward's one step, so that it leaves the saved values alone.
    std::vector<float> step_gates, step_cell;
    // Pre-activation gradients of every step (backward data's product, backward weights'
    // operand) and the state gradients carried between steps.
    std::vector<float> dpre, dh, dc;
    // Backward weights: the recurrent operand [h0, y_0 .. y_{T-2}] and dw's fp32 sum.
    std::vector<float> h_prev, dw;
    std::vector<float> tf32_w, tf32_a, tf32_dpre;
    bool saved = false;    // a training forward filled gates and cells
    bool backward = false; // backward data filled dpre for that forward

private:
    LstmShape m_shape;
    DType m_dtype;
    MathMode m_math;
};

CpuLstmPlan& cpu_plan(LstmPlan& plan, const char* op)
{
    auto* p = dynamic_cast<CpuLstmPlan*>(&plan);
    require(p != nullptr, op, "the plan was not made by the cpu backend's lstm_prepare");
    return *p;
}

// The operand a product reads: src itself, or under TF32 its copy rounded to TF32 in
// scratch (the tensor cores' input format), as cpu_gemm rounds its operands.
const float* operand(const float* src, std::size_t n, bool tf32, float* scratch)
{
    if (!tf32) return src;
    for (std::size_t i = 0; i < n; ++i) scratch[i] = round_to_tf32(src[i]);
    return scratch;
}

} // namespace

std::unique_ptr<LstmPlan> CpuBackend::lstm_prepare(const LstmShape& s, DType dtype, MathMode math)
{
    validate::lstm_shape(k_name, "lstm_prepare", s, dtype);
    return std::make_unique<CpuLstmPlan>(s, dtype, math);
}

void CpuBackend::lstm_forward(LstmPlan& plan, const Buffer& x, const Buffer& h0, const Buffer& c0,
                              const Buffer& w, bool training, Buffer& y, Buffer& hT, Buffer& cT)
{
    CpuLstmPlan& p = cpu_plan(plan, "lstm_forward");
    const LstmShape& s = p.shape();
    validate::lstm_forward(k_name, s, p.dtype(), x, h0, c0, w, y, hT, cT);
    const DType dt = p.dtype();
    const bool tf32 = p.math() == MathMode::TF32;
    const std::size_t B = std::size_t(s.batch), I = std::size_t(s.input), H = std::size_t(s.hidden),
                      G = 4 * H;
    const Eigen::Index eb = s.batch, ei = s.input, eh = s.hidden, eg = Eigen::Index(G);

    const float* pw = operand(w.as<float>(), s.b_ih_offset(), tf32, p.tf32_w.data());
    const ConstMap w_ih(pw, eg, ei);
    const ConstMap w_hh(pw + s.w_hh_offset(), eg, eh);
    const float* b_ih = w.as<float>() + s.b_ih_offset();
    const float* b_hh = w.as<float>() + s.b_hh_offset();
    const float* px = x.as<float>();
    const float* c_prev = c0.as<float>();
    float* py = y.as<float>();
    if (training)
        p.saved = p.backward = false; // the values a failed call leaves are not a forward's

    for (std::size_t t = 0; t < std::size_t(s.steps); ++t) {
        // h_{t-1} as stored: h0, or the previous step's output already rounded in y.
        const float* h_in = t == 0 ? h0.as<float>() : py + (t - 1) * B * H;
        float* pre = training ? p.gates.data() + t * B * G : p.step_gates.data();
        float* cell = training ? p.cells.data() + t * B * H : p.step_cell.data();
        float* h_out = py + t * B * H;

        // pre = x_t W_ih^T + h_{t-1} W_hh^T, then + b_ih + b_hh, all in float32.
        Map mpre(pre, eb, eg);
        mpre.noalias() = ConstMap(operand(px + t * B * I, B * I, tf32, p.tf32_a.data()), eb, ei) *
                         w_ih.transpose();
        mpre.noalias() +=
            ConstMap(operand(h_in, B * H, tf32, p.tf32_a.data()), eb, eh) * w_hh.transpose();

        MIXLAB_OMP_FOR_IF(B * G)
        for (std::ptrdiff_t b = 0; b < std::ptrdiff_t(B); ++b) {
            float* g = pre + std::size_t(b) * G;
            for (std::size_t k = 0; k < G; ++k) g[k] = g[k] + b_ih[k] + b_hh[k];
            // The activated gates replace the pre-activations: backward needs only them.
            for (std::size_t j = 0; j < H; ++j) {
                g[j] = hd::sigmoid(g[j]);                 // i
                g[H + j] = hd::sigmoid(g[H + j]);         // f
                g[2 * H + j] = std::tanh(g[2 * H + j]);   // g
                g[3 * H + j] = hd::sigmoid(g[3 * H + j]); // o
            }
            const std::size_t row = std::size_t(b) * H;
            for (std::size_t j = 0; j < H; ++j) {
                // The cell state stays float32 from step to step; only cT is rounded.
                // cuDNN is believed to do the same (its reserve space keeps the cell
                // state in float32 for 16-bit layers); were it to round c every step,
                // the check's tolerance, a few units of the dtype's epsilon, covers it.
                const float c = g[H + j] * c_prev[row + j] + g[j] * g[2 * H + j];
                cell[row + j] = c;
                h_out[row + j] = stored(dt, g[3 * H + j] * std::tanh(c));
            }
        }
        c_prev = cell;
    }

    const std::size_t last = (std::size_t(s.steps) - 1) * B * H;
    float* ph = hT.as<float>();
    float* pc = cT.as<float>();
    std::copy_n(py + last, B * H, ph);
    for (std::size_t i = 0; i < B * H; ++i) pc[i] = stored(dt, c_prev[i]);
    if (training) p.saved = true;
}

void CpuBackend::lstm_backward_data(LstmPlan& plan, const Buffer& y, const Buffer& dy,
                                    const Buffer* dhT, const Buffer* dcT, const Buffer& w,
                                    const Buffer& h0, const Buffer& c0, Buffer& dx, Buffer* dh0,
                                    Buffer* dc0)
{
    const char* op = "lstm_backward_data";
    CpuLstmPlan& p = cpu_plan(plan, op);
    const LstmShape& s = p.shape();
    validate::lstm_backward_data(k_name, s, p.dtype(), y, dy, dhT, dcT, w, h0, c0, dx, dh0, dc0);
    require(p.saved, op, "no training forward pass has filled the plan");
    // cuDNN's backward data overwrites the reserve space its forward filled, so a second
    // backward of the same forward computes nonsense there: refused here too, so that
    // code tested on the CPU holds on the GPU.
    require(!p.backward, op,
            "backward data already ran for this forward (run a training forward again)");
    const DType dt = p.dtype();
    const bool tf32 = p.math() == MathMode::TF32;
    const std::size_t B = std::size_t(s.batch), H = std::size_t(s.hidden), G = 4 * H,
                      rows = std::size_t(s.steps) * B;
    const Eigen::Index eb = s.batch, ei = s.input, eh = s.hidden, eg = Eigen::Index(G);

    const float* pw = operand(w.as<float>(), s.b_ih_offset(), tf32, p.tf32_w.data());
    const ConstMap w_ih(pw, eg, ei);
    const ConstMap w_hh(pw + s.w_hh_offset(), eg, eh);
    const float* pdy = dy.as<float>();
    float* dh = p.dh.data();
    float* dc = p.dc.data();
    if (dhT)
        std::copy_n(dhT->as<float>(), B * H, dh);
    else
        std::fill_n(dh, B * H, 0.0f);
    if (dcT)
        std::copy_n(dcT->as<float>(), B * H, dc);
    else
        std::fill_n(dc, B * H, 0.0f);

    for (std::size_t t = std::size_t(s.steps); t-- > 0;) {
        const float* gates = p.gates.data() + t * B * G;
        const float* cell = p.cells.data() + t * B * H;
        const float* c_prev = t == 0 ? c0.as<float>() : p.cells.data() + (t - 1) * B * H;
        float* dpre = p.dpre.data() + t * B * G;
        MIXLAB_OMP_FOR_IF(B * G)
        for (std::ptrdiff_t b = 0; b < std::ptrdiff_t(B); ++b) {
            const float* g = gates + std::size_t(b) * G;
            float* d = dpre + std::size_t(b) * G;
            const std::size_t row = std::size_t(b) * H;
            for (std::size_t j = 0; j < H; ++j) {
                const float gi = g[j], gf = g[H + j], gg = g[2 * H + j], go = g[3 * H + j];
                const float tc = std::tanh(cell[row + j]);
                // The gradient reaching h_t: this step's output and the next step's input.
                const float dht = pdy[t * B * H + row + j] + dh[row + j];
                const float dct = dc[row + j] + dht * go * (1.0f - tc * tc);
                d[j] = dct * gg * gi * (1.0f - gi);
                d[H + j] = dct * c_prev[row + j] * gf * (1.0f - gf);
                d[2 * H + j] = dct * gi * (1.0f - gg * gg);
                d[3 * H + j] = dht * tc * go * (1.0f - go);
                dc[row + j] = dct * gf;
            }
        }
        // dh_{t-1} = dpre_t W_hh (float32 between steps, like the cell state).
        Map(dh, eb, eh).noalias() =
            ConstMap(operand(dpre, B * G, tf32, p.tf32_a.data()), eb, eg) * w_hh;
    }

    // dx for every step in one product: dpre (steps*batch, 4H) W_ih.
    const float* all = operand(p.dpre.data(), rows * G, tf32, p.tf32_a.data());
    float* pdx = dx.as<float>();
    Map(pdx, Eigen::Index(rows), ei).noalias() = ConstMap(all, Eigen::Index(rows), eg) * w_ih;
    round_span(dt, pdx, s.x_count());
    if (dh0) {
        float* out = dh0->as<float>();
        for (std::size_t i = 0; i < B * H; ++i) out[i] = stored(dt, dh[i]);
    }
    if (dc0) {
        float* out = dc0->as<float>();
        for (std::size_t i = 0; i < B * H; ++i) out[i] = stored(dt, dc[i]);
    }
    p.backward = true;
}

void CpuBackend::lstm_backward_weights(LstmPlan& plan, const Buffer& x, const Buffer& h0,
                                       const Buffer& y, Buffer& dw)
{
    const char* op = "lstm_backward_weights";
    CpuLstmPlan& p = cpu_plan(plan, op);
    const LstmShape& s = p.shape();
    validate::lstm_backward_weights(k_name, s, p.dtype(), x, h0, y, dw);
    require(p.saved && p.backward, op,
            "lstm_backward_data has not run for the latest training forward pass");
    const bool tf32 = p.math() == MathMode::TF32;
    const std::size_t B = std::size_t(s.batch), H = std::size_t(s.hidden), G = 4 * H,
                      rows = std::size_t(s.steps) * B;
    const Eigen::Index er = Eigen::Index(rows), ei = s.input, eh = s.hidden, eg = Eigen::Index(G);

    // The recurrent product's right operand: h_{t-1} for every step, h0 then y_0..y_{T-2}.
    std::copy_n(h0.as<float>(), B * H, p.h_prev.data());
    std::copy_n(y.as<float>(), (rows - B) * H, p.h_prev.data() + B * H);

    // dW_ih = dpre^T x and dW_hh = dpre^T h_prev over all steps, in float32. Under TF32
    // all three operands are rounded copies.
    float* sum = p.dw.data();
    const float* dpre = operand(p.dpre.data(), rows * G, tf32, p.tf32_dpre.data());
    const ConstMap mdpre(dpre, er, eg);
    Map(sum, eg, ei).noalias() =
        mdpre.transpose() *
        ConstMap(operand(x.as<float>(), s.x_count(), tf32, p.tf32_a.data()), er, ei);
    Map(sum + s.w_hh_offset(), eg, eh).noalias() =
        mdpre.transpose() *
        ConstMap(operand(p.h_prev.data(), s.y_count(), tf32, p.tf32_a.data()), er, eh);

    // Both bias gradients are the row sums of dpre (exact fp32, outside the tensor-core
    // product), summed in row order.
    float* db = sum + s.b_ih_offset();
    std::fill_n(db, G, 0.0f);
    for (std::size_t r = 0; r < rows; ++r) {
        const float* d = p.dpre.data() + r * G;
        for (std::size_t k = 0; k < G; ++k) db[k] += d[k];
    }
    std::copy_n(db, G, sum + s.b_hh_offset());

    // dw += the sum, one rounding per element to dw's dtype.
    const DType dt = p.dtype();
    float* out = dw.as<float>();
    for (std::size_t i = 0; i < s.weight_count(); ++i) out[i] = stored(dt, out[i] + sum[i]);
}

} // namespace mixlab::cpu
