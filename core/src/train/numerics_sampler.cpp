// NumericsSampler: the device histograms of a sampled step, laid out one after another
// in one counter buffer, and read back through a ring of pinned host copies.
#include "train/numerics_sampler.h"

#include "base/hd_math.h"
#include "mixlab/error.h"

#include <algorithm>

namespace mixlab {

namespace {

// The tensor the weights' statistics read: the fp32 (or, under pure fp16, fp16) master,
// or for a split master its bf16 half, which the GEMMs read (the int16 low halves alone
// are no values).
const Buffer& weight_values(const ParamSlot& s) { return is_split_master(s) ? *s.low : *s.master; }

} // namespace

NumericsSampler::NumericsSampler(Backend& backend, const Network& net, int every, int slots)
    : m_backend(backend), m_every(every), m_slots(slots)
{
    if (every < 1) throw Error("numerics: the interval must be at least 1 step");
    std::int64_t at = 0;
    auto take = [&at](int n) {
        const std::int64_t offset = at;
        at += n;
        return offset;
    };
    for (const Network::NumericsLayer& l : net.numerics_layers()) {
        Layer layer;
        layer.path = l.path;
        layer.type = l.type;
        layer.activation = l.activation;
        if (layer.activation) layer.activations = take(hd::k_value_slots);
        if (!l.params.empty()) {
            layer.weights = take(hd::k_value_slots);
            layer.gradients = take(hd::k_value_slots);
            bool updates = false;
            for (const ParamSlot& s : l.params) {
                Param p{s, Buffer()};
                // A split master's update happens on the joined fp32 value, which no
                // buffer holds: its layer gets no update statistics.
                if (!is_split_master(s)) {
                    p.before = backend.alloc(s.master->count(), s.master->dtype());
                    updates = true;
                }
                layer.params.push_back(std::move(p));
            }
            if (updates) layer.updates = take(hd::k_update_slots);
        }
        if (layer.activations >= 0 || layer.weights >= 0) m_layers.push_back(std::move(layer));
    }
    m_counts = backend.alloc(std::size_t(std::max<std::int64_t>(at, 1)), DType::I32);
    m_host =
        reinterpret_cast<std::uint32_t*>(backend.host_alloc(m_counts.count() * std::size_t(slots)));
}

NumericsSampler::~NumericsSampler()
{
    if (m_host) m_backend.host_free(reinterpret_cast<float*>(m_host));
}

void NumericsSampler::enqueue_forward()
{
    m_backend.fill(m_counts, 0.0f);
    for (Layer& l : m_layers) {
        if (l.activations >= 0) m_backend.value_histogram(*l.activation, m_counts, l.activations);
        for (const Param& p : l.params)
            m_backend.value_histogram(weight_values(p.slot), m_counts, l.weights);
    }
}

void NumericsSampler::enqueue_backward()
{
    for (Layer& l : m_layers)
        for (Param& p : l.params) {
            m_backend.value_histogram(*p.slot.grad, m_counts, l.gradients);
            if (!p.before.empty()) m_backend.cast(*p.slot.master, p.before);
        }
}

void NumericsSampler::enqueue_update()
{
    for (Layer& l : m_layers)
        for (Param& p : l.params)
            if (!p.before.empty())
                m_backend.update_histogram(p.before, *p.slot.master, *p.slot.grad, m_counts,
                                           l.updates);
}

void NumericsSampler::copy_out(int slot)
{
    m_backend.copy_raw_to_host_async(m_counts, m_counts.count() * sizeof(std::uint32_t),
                                     m_host + std::size_t(slot) * m_counts.count());
}

NumericsSample NumericsSampler::read(int slot, std::int64_t step, float loss_scale,
                                     bool skipped) const
{
    const std::uint32_t* c = m_host + std::size_t(slot) * m_counts.count();
    NumericsSample s;
    s.step = step;
    s.loss_scale = loss_scale;
    s.skipped = skipped;
    for (const Layer& l : m_layers) {
        LayerNumerics out;
        out.path = l.path;
        out.type = l.type;
        auto values = [c](std::int64_t at) {
            ValueHistogram h;
            h.add_slots(c + at);
            return h;
        };
        if (l.activations >= 0) out.activations = values(l.activations);
        if (l.weights >= 0) out.weights = values(l.weights);
        if (l.gradients >= 0) out.gradients = values(l.gradients);
        // A skipped step left every weight as it was: no update happened to measure.
        if (l.updates >= 0 && !skipped) {
            UpdateHistogram u;
            u.add_slots(c + l.updates);
            out.updates = u;
        }
        s.layers.push_back(std::move(out));
    }
    return s;
}

} // namespace mixlab
