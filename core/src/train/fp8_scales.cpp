// mixed_fp8's scales read back with the step's record (fp8_scales.h).
#include "train/fp8_scales.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace mixlab {

Fp8ScaleWatch::Fp8ScaleWatch(Backend& backend, Network& net, int ring)
    : m_backend(backend), m_net(net)
{
    m_floats = std::size_t(net.fp8_tensors()) * fp8_block_floats(net.fp8_config().amax_history);
    m_host = backend.host_alloc(std::size_t(ring) * m_floats);
    m_previous_max.assign(std::size_t(net.fp8_tensors()), 0.0f);
}

Fp8ScaleWatch::~Fp8ScaleWatch() { m_backend.host_free(m_host); }

void Fp8ScaleWatch::copy_out(int slot)
{
    m_backend.copy_to_host_async(*m_net.fp8_meta(), 0, m_floats,
                                 m_host + std::size_t(slot) * m_floats);
}

void Fp8ScaleWatch::read(int slot, StepMetrics& m, std::vector<RunEvent>& events)
{
    const int history = m_net.fp8_config().amax_history;
    const std::size_t stride = fp8_block_floats(history);
    const float* meta = m_host + std::size_t(slot) * m_floats;
    float lo = INFINITY, hi = -INFINITY;
    // The largest jump this step (one warning a step at most, naming the others' count).
    int jumped = 0;
    std::size_t worst = 0;
    float worst_ratio = 0, worst_amax = 0, worst_before = 0;
    for (std::size_t t = 0; t < m_previous_max.size(); ++t) {
        const float* b = meta + t * stride;
        const float l = std::log2(b[k_fp8_scale]);
        lo = std::min(lo, l);
        hi = std::max(hi, l);
        // After the update the history rolled: slot 1 is this step's amax, the older ones
        // follow. With one slot there is none: last_amax is this step's.
        const float now = history > 1 ? b[k_fp8_history + 1] : b[k_fp8_last_amax];
        float before = 0;
        for (int j = 1; j < history; ++j) before = std::max(before, b[k_fp8_history + j]);
        if (history == 1) before = now;
        const float previous = m_previous_max[t];
        if (previous > 0 && std::isfinite(now) && now > k_fp8_amax_jump * previous) {
            ++jumped;
            if (now / previous > worst_ratio) {
                worst_ratio = now / previous;
                worst = t;
                worst_amax = now;
                worst_before = previous;
            }
        }
        m_previous_max[t] = before;
    }
    m.fp8_log2_scale_min = lo;
    m.fp8_log2_scale_max = hi;
    if (jumped == 0 || m_jumps_reported > k_fp8_max_jump_events) return;
    std::ostringstream o;
    if (m_jumps_reported == k_fp8_max_jump_events) {
        o << k_fp8_amax_jump_prefix << k_fp8_max_jump_events
          << " jumps reported; later ones are not";
    } else {
        o << k_fp8_amax_jump_prefix << m_net.fp8_names()[worst] << " reached |x| " << worst_amax
          << ", " << worst_ratio << "x the largest of its history (" << worst_before
          << "): its values saturate until the scale follows";
        if (jumped > 1) o << " (" << jumped - 1 << " more tensors jumped this step)";
    }
    ++m_jumps_reported;
    events.push_back({RunEvent::Kind::Warning, m.step, o.str()});
}

} // namespace mixlab
