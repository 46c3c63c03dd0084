// CPU optimizer step: unscale, inf/NaN check over every gradient, clipping by the global
// norm, SGD/Adam/AdamW on the master weights (PyTorch's formulas), the low-precision copy
// (or the split master's halves), mixed_fp8's quantized weights, then the loss scaler.
#include "backends/cpu/cpu_backend.h"

#include "backends/backend_validate.h"
#include "base/hd_math.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

namespace mixlab::cpu {

namespace {

class CpuParamTable final : public ParamTable {
public:
    CpuParamTable(std::vector<ParamSlot> slots, const validate::SlotStates& states)
        : m_slots(std::move(slots)), m_states(states)
    {}
    const std::vector<ParamSlot>& slots() const { return m_slots; }
    const validate::SlotStates& states() const { return m_states; }

private:
    std::vector<ParamSlot> m_slots;
    validate::SlotStates m_states;
};

bool any_non_finite(const Buffer& grad)
{
    const float* g = grad.as<float>();
    bool bad = false;
    for (std::size_t i = 0; i < grad.count(); ++i)
        bad |= !std::isfinite(g[i]); // no early exit: the loop vectorises
    return bad;
}

// Sum of the squares of the unscaled gradient: each square in float (as the CUDA kernel
// forms them), summed in double, so the order of the sum hardly matters.
double unscaled_square_sum(const Buffer& grad, float inv_scale)
{
    const float* g = grad.as<float>();
    double sum = 0.0;
    for (std::size_t i = 0; i < grad.count(); ++i) {
        const float u = g[i] * inv_scale;
        sum += double(u * u);
    }
    return sum;
}

// torch.nn.utils.clip_grad_norm_'s factor, in float. A non-finite norm (inf/NaN
// gradients with loss scaling off, the only way one gets here) leaves the gradients as
// they are: clipping by it would zero or poison every finite gradient, where PyTorch
// would make every weight NaN; the record's overflow flag says what happened either way.
float clip_factor(float clip_norm, float norm)
{
    if (!std::isfinite(norm)) return 1.0f;
    return std::min(1.0f, clip_norm / (norm + 1e-6f));
}

struct StepContext {
    float inv_scale;
    float clip;      // the clipping factor the unscaled gradient is multiplied by
    bool first_step; // no update has been applied yet: SGD momentum buffers start as g
    float bias_correction1, bias_correction2; // Adam: 1 - beta^t
};

// One slot's weights as the update sees them: an element's fp32 (or, under `fp16`,
// 16-bit) master value, and where the updated value goes: the master and its rounded
// copy, or a split master's two halves (the bf16 high half held as its float value in
// `low`, the int16 low half in `master`), so the update itself is the same code.
class MasterView {
public:
    explicit MasterView(const ParamSlot& s)
        : m_split(is_split_master(s)), m_wt(state_dtype(s)),
          m_lt(s.low ? s.low->dtype() : DType::F32), m_w(m_split ? nullptr : s.master->as<float>()),
          m_lo(m_split ? s.master->as<std::int16_t>() : nullptr),
          // A plain copy of fp8 weights is not stored (backend.h's Fp8Weights).
          m_low(s.low && (m_split || !s.fp8.w8) ? s.low->as<float>() : nullptr)
    {}
    DType dtype() const { return m_wt; } // what the state and the master round to
    float get(std::size_t i) const
    {
        if (!m_split) return m_w[i];
        // A bf16 value held as a float has zero low bits: its top 16 are the bf16 bits.
        return hd::join_master(std::uint16_t(hd::float_bits(m_low[i]) >> 16), m_lo[i]);
    }
    void set(std::size_t i, float w) const
    {
        if (m_split) {
            const hd::SplitMaster h = hd::split_master(w);
            m_lo[i] = h.lo;
            m_low[i] = hd::bits_float(std::uint32_t(h.hi) << 16);
            return;
        }
        m_w[i] = stored(m_wt, w);
        if (m_low) m_low[i] = stored(m_lt, m_w[i]);
    }

private:
    bool m_split;
    DType m_wt, m_lt;
    float* m_w;
    std::int16_t* m_lo;
    float* m_low;
};

void sgd_slot(const ParamSlot& s, const OptimizerConfig& opt, const StepContext& ctx)
{
    const std::size_t n = s.master->count();
    const MasterView w(s);
    const float* grad = s.grad->as<float>();
    float* buf = s.state1 ? s.state1->as<float>() : nullptr;
    const DType wt = w.dtype();
    const float lr = opt.lr, wd = opt.weight_decay, mom = opt.momentum;
    for (std::size_t i = 0; i < n; ++i) {
        const float wi = w.get(i);
        float g = grad[i] * ctx.inv_scale * ctx.clip;
        if (wd != 0.0f) g += wd * wi;
        if (mom != 0.0f) {
            // The buffer is stored in the master's dtype and used as stored.
            const float b = stored(wt, ctx.first_step ? g : mom * buf[i] + g);
            buf[i] = b;
            g = opt.nesterov ? g + mom * b : b;
        }
        w.set(i, wi - lr * g);
    }
}

void adam_slot(const ParamSlot& s, const OptimizerConfig& opt, const StepContext& ctx)
{
    const std::size_t n = s.master->count();
    const MasterView w(s);
    const float* grad = s.grad->as<float>();
    float* m = s.state1->as<float>();
    float* v = s.state2->as<float>();
    const DType wt = w.dtype();
    const float lr = opt.lr, wd = opt.weight_decay, b1 = opt.beta1, b2 = opt.beta2;
    const bool decoupled = opt.type == OptimizerType::AdamW;
    for (std::size_t i = 0; i < n; ++i) {
        float g = grad[i] * ctx.inv_scale * ctx.clip;
        float wi = w.get(i);
        if (wd != 0.0f) {
            if (decoupled)
                wi -= lr * wd * wi;
            else
                g += wd * wi;
        }
        const float mi = stored(wt, b1 * m[i] + (1.0f - b1) * g);
        const float vi = stored(wt, b2 * v[i] + (1.0f - b2) * g * g);
        m[i] = mi;
        v[i] = vi;
        wi -= lr * (mi / ctx.bias_correction1) / (std::sqrt(vi / ctx.bias_correction2) + opt.eps);
        w.set(i, wi);
    }
}

} // namespace

std::unique_ptr<ParamTable> CpuBackend::prepare_params(const std::vector<ParamSlot>& slots)
{
    const validate::SlotStates states = validate::param_slots(k_name, slots);
    return std::make_unique<CpuParamTable>(slots, states);
}

void CpuBackend::optimizer_step(ParamTable& table, const OptimizerConfig& opt,
                                const ScalerParams& scaling, Buffer& scaler, Buffer& record,
                                std::size_t record_offset)
{
    auto* t = dynamic_cast<CpuParamTable*>(&table);
    require(t != nullptr, "optimizer_step", "the parameter table was prepared by another backend");
    validate::optimizer_step(k_name, opt, scaling, t->states(), scaler, record, record_offset);
    float* sc = scaler.as<float>();
    float* rec = record.as<float>();

    const bool scaling_on = scaling.mode != LossScaleMode::None;
    const float scale = scaling_on ? sc[k_scale] : 1.0f;

    // Checked even without scaling, so a run that overflows says so in its record.
    bool found_inf = false;
    for (const ParamSlot& s : t->slots()) found_inf = found_inf || any_non_finite(*s.grad);
    // The global norm is over every unscaled gradient together (not per tensor), as
    // clip_grad_norm_ takes it; only computed when clipping is on.
    const bool clipping = opt.clip_norm > 0.0f;
    float norm = 0.0f, factor = 1.0f;
    if (clipping && found_inf) {
        norm = std::numeric_limits<float>::infinity();
    } else if (clipping) {
        double sum = 0.0;
        for (const ParamSlot& s : t->slots()) sum += unscaled_square_sum(*s.grad, 1.0f / scale);
        norm = float(std::sqrt(sum));
        factor = clip_factor(opt.clip_norm, norm);
    }
    if (m_inf_check_marker) m_inf_check_marker->record();

    if (!(found_inf && scaling_on)) {
        const bool adam = opt.type != OptimizerType::SGD;
        const double step = double(sc[k_optimizer_steps]) + 1.0;
        StepContext ctx;
        ctx.inv_scale = 1.0f / scale;
        ctx.clip = factor;
        ctx.first_step = sc[k_optimizer_steps] == 0.0f;
        ctx.bias_correction1 = float(1.0 - std::pow(double(opt.beta1), step));
        ctx.bias_correction2 = float(1.0 - std::pow(double(opt.beta2), step));
        for (const ParamSlot& s : t->slots()) {
            if (adam)
                adam_slot(s, opt, ctx);
            else
                sgd_slot(s, opt, ctx);
        }
        sc[k_optimizer_steps] += 1.0f;
    }
    // mixed_fp8's weights from the copy's values as they now stand, updated or (a skipped
    // step) not: the quantize op itself, the reference the CUDA update's fused rewrite is
    // checked by. A plain copy is not stored: its values are the master rounded.
    for (const ParamSlot& s : t->slots()) {
        const Fp8Weights& f = s.fp8;
        if (!f.w8) continue;
        if (is_split_master(s)) {
            fp8_quantize(*s.low, f.rows, f.cols, *f.meta, f.block, f.history_len, true, f.w8,
                         nullptr, nullptr, nullptr, nullptr, nullptr);
            continue;
        }
        const std::size_t n = s.master->count();
        if (m_fp8_w.size() < n) m_fp8_w.resize(n);
        std::copy_n(s.master->as<float>(), n, m_fp8_w.begin());
        round_span(s.low->dtype(), m_fp8_w.data(), n);
        const Buffer copy(nullptr, m_fp8_w.data(), n, s.low->dtype()); // not owned
        fp8_quantize(copy, f.rows, f.cols, *f.meta, f.block, f.history_len, true, f.w8, nullptr,
                     nullptr, nullptr, nullptr, nullptr);
    }

    float next = scale;
    if (scaling.mode == LossScaleMode::Dynamic) {
        if (found_inf) {
            next = scale * scaling.backoff_factor;
            sc[k_growth_count] = 0.0f;
        } else {
            sc[k_growth_count] += 1.0f;
            if (sc[k_growth_count] >= float(scaling.growth_interval)) {
                next = scale * scaling.growth_factor;
                sc[k_growth_count] = 0.0f;
            }
        }
        sc[k_scale] = next;
    }
    sc[k_found_inf] = found_inf ? 1.0f : 0.0f;
    rec[record_offset + k_rec_scale] = scale;
    rec[record_offset + k_rec_overflow] = found_inf ? 1.0f : 0.0f;
    rec[record_offset + k_rec_next_scale] = next;
    rec[record_offset + k_rec_grad_norm] = norm;
}

} // namespace mixlab::cpu
