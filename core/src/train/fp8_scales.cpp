// mixed_fp8's scales read back with the step's record (fp8_scales.h).
#include "train/fp8_scales.h"

#include "mixlab/error.h"
#include "mixlab/metrics_json.h" // parse_fp8_operand

#include <algorithm>
#include <cmath>
#include <sstream>

namespace mixlab {
namespace {

// The network names a tensor "<layer path> x|w|dy" (network.h): the operand is the last
// word, the path may hold spaces. Read once here, where the name is made, so that the
// jumps carry the two apart and nothing downstream splits a sentence.
Fp8AmaxJump tensor_of(const std::string& name)
{
    const std::size_t space = name.rfind(' ');
    const std::optional<Fp8Operand> operand =
        space == std::string::npos ? std::nullopt : parse_fp8_operand(name.substr(space + 1));
    if (!operand || space == 0)
        throw Error("fp8 tensor \"" + name + "\" is not named \"<layer path> x|w|dy\"");
    Fp8AmaxJump t;
    t.layer = name.substr(0, space);
    t.operand = *operand;
    return t;
}

} // namespace

std::string fp8_amax_jump_text(const Fp8AmaxJump& jump)
{
    std::ostringstream o;
    if (jump.reports_stopped) {
        o << k_fp8_max_jump_events << " jumps reported; later ones are not";
        return o.str();
    }
    o << jump.layer << ' ' << fp8_operand_name(jump.operand) << " reached |x| " << jump.amax << ", "
      << jump.amax / jump.history_max << "x the largest of its history (" << jump.history_max
      << "): its values saturate until the scale follows";
    if (jump.more_tensors > 0) o << " (" << jump.more_tensors << " more tensors jumped this step)";
    return o.str();
}

Fp8ScaleWatch::Fp8ScaleWatch(Backend& backend, Network& net, int ring)
    : m_backend(backend), m_net(net)
{
    for (const std::string& name : net.fp8_names()) m_tensors.push_back(tensor_of(name));
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
    Fp8AmaxJump jump;
    if (m_jumps_reported == k_fp8_max_jump_events) {
        jump.reports_stopped = true;
    } else {
        jump = m_tensors[worst];
        jump.amax = worst_amax;
        jump.history_max = worst_before;
        jump.more_tensors = jumped - 1;
    }
    ++m_jumps_reported;
    events.push_back({RunEvent::Kind::Warning, m.step,
                      std::string(k_fp8_amax_jump_prefix) + fp8_amax_jump_text(jump), jump});
}

} // namespace mixlab
