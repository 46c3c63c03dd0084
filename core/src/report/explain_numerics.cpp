// Numerics rules: each speaks only for a run that recorded numerics, with its own shares.
#include "report/explain_numerics.h"

#include "mixlab/numerics_summary.h"

#include <algorithm>
#include <cstdio>

namespace mixlab {

namespace {

using namespace explain_limits;
using Severity = Explanation::Severity;

constexpr std::size_t k_fp16 = 0; // NumberFormat::FP16's place in k_number_formats
static_assert(k_number_formats[k_fp16] == NumberFormat::FP16);

std::string scale_text(float v)
{
    char b[32];
    std::snprintf(b, sizeof b, "%g", double(v));
    return b;
}

// Loss scaling needed or not: the share of this run's gradients (unscaled) fp16 would flush
// to zero at scale 1, and at the scale the run used. bf16 and tf32 runs are not asked (their
// range is fp32's).
void rule_loss_scaling(const RunFacts& f, int run, const NumericsSummary& s, Reader reader,
                       std::vector<Explanation>& out)
{
    if (f.policy != Policy::FP32 && f.policy != Policy::MixedFP16 && f.policy != Policy::FP16)
        return;
    if (!s.gradients || s.gradients->values == 0) return;
    const FormatShares& at1 = s.gradients->formats[k_fp16];
    std::string sentence = "At loss scale 1, fp16 would flush " + share_text(at1.flush) +
                           " of this run's gradients to zero and hold " +
                           share_text(at1.subnormal) + " as subnormals (" +
                           std::to_string(s.samples) + " samples, steps " +
                           std::to_string(s.first_step) + "-" + std::to_string(s.last_step) + ")";
    if (s.gradients_scaled) {
        const FormatShares& used = s.gradients_scaled->formats[k_fp16];
        sentence += "; at the scale this run used (" +
                    (s.min_scale == s.max_scale
                         ? scale_text(s.min_scale)
                         : scale_text(s.min_scale) + " to " + scale_text(s.max_scale)) +
                    ") " + share_text(used.flush) + " flush and " + share_text(used.overflow) +
                    " overflow";
    }
    sentence += ".";
    const bool needed = at1.flush >= k_flush_needs_scaling;
    const bool scaling_on = f.loss_scale_mode != LossScaleMode::None;
    Explanation e;
    e.id = "numerics_loss_scaling";
    e.run = run;
    if (needed) {
        e.sentence = sentence + " Loss scaling is needed for fp16 here.";
        e.severity = scaling_on || f.policy == Policy::FP32 ? Severity::Info : Severity::Warning;
        if (!scaling_on && f.policy != Policy::FP32)
            e.suggestion = reader == Reader::App ? "choose Loss scaling: dynamic in the run panel"
                                                 : "add --loss-scale dynamic";
    } else {
        e.sentence = sentence + " Loss scaling is not needed for this run's gradients in fp16.";
        e.severity = Severity::Info;
    }
    out.push_back(std::move(e));
}

// Updates 16-bit weights lose: the layer that loses the largest share, and in a pure fp16
// run the first sampled step where the share reached the limit.
void rule_lost_updates(const RunFacts& f, int run, const NumericsSummary& s, Reader reader,
                       std::vector<Explanation>& out)
{
    const LayerNumericsSummary* worst = nullptr;
    for (const LayerNumericsSummary& l : s.layers)
        if (l.lost_fp16 && (!worst || *l.lost_fp16 > *worst->lost_fp16)) worst = &l;
    if (!worst || *worst->lost_fp16 < k_lost_updates_share) return;
    const std::string where = worst->path + " (" + worst->type + ")";
    Explanation e;
    e.id = "numerics_lost_updates";
    e.run = run;
    if (f.policy == Policy::FP16) {
        std::int64_t from = 0;
        for (const auto& [step, share] : worst->lost_fp16_by_step)
            if (share >= k_lost_updates_share) {
                from = step;
                break;
            }
        e.severity = Severity::Warning;
        e.sentence = "Pure fp16 weights lost " + share_text(*worst->lost_fp16) +
                     " of the updates in " + where + " (from step " + std::to_string(from) +
                     "): the update was below half a unit in the last place of its fp16 weight, "
                     "so the weight did not move although its gradient was not zero.";
        e.suggestion = reader == Reader::App
                           ? "choose Precision: mixed_fp16 in the run panel: fp32 master weights "
                             "keep these updates"
                           : "use mixed_fp16: fp32 master weights keep these updates";
        e.fix = Fix::set_policy(Policy::MixedFP16);
    } else {
        e.severity = Severity::Info;
        e.sentence =
            "Pure 16-bit weights would lose " + share_text(*worst->lost_fp16) +
            " of the updates in " + where + " in fp16" +
            (worst->lost_bf16 ? " and " + share_text(*worst->lost_bf16) + " in bf16" : "") +
            ": updates below half a unit in the last place of their weight. This is "
            "what the fp32 master weights of mixed precision keep.";
    }
    out.push_back(std::move(e));
}

// A layer whose outputs come within k_fp16_headroom_binades of fp16's largest binade (or
// were inf already): under fp16 storage they overflow on a somewhat larger input. Said for
// the runs that store activations in fp16, and for an fp32 run as what fp16 would meet.
void rule_activation_headroom(const RunFacts& f, int run,
                              const std::vector<NumericsSample>& samples, Reader reader,
                              std::vector<Explanation>& out)
{
    if (f.policy != Policy::FP32 && f.policy != Policy::MixedFP16 && f.policy != Policy::FP16)
        return;
    const int top = format_limits(NumberFormat::FP16).max_binade;
    const int near = top - k_fp16_headroom_binades + 1;
    for (const GraphLayer& gl : f.graph.layers) {
        const std::string path = gl.path.empty() ? "layer " + std::to_string(gl.index) : gl.path;
        if (gl.spec.force_fp32) continue; // its outputs are fp32 whatever the policy
        std::uint64_t close = 0, total = 0;
        int highest = k_numerics_binade_min - 1;
        std::int64_t first_step = 0;
        for (const NumericsSample& s : samples)
            for (const LayerNumerics& l : s.layers) {
                if (l.path != path || !l.activations) continue;
                const ValueHistogram& h = *l.activations;
                total += h.total();
                std::uint64_t here = h.pos_inf + h.neg_inf;
                for (int e = near; e <= k_numerics_binade_max; ++e) {
                    here += h.at(e);
                    if (h.at(e)) highest = std::max(highest, e);
                }
                if (here && !first_step) first_step = s.step;
                close += here;
            }
        if (close == 0 || total == 0) continue;
        const bool stores_fp16 = f.policy != Policy::FP32;
        Explanation e;
        e.id = "numerics_activation_headroom";
        e.run = run;
        e.severity = stores_fp16 ? Severity::Warning : Severity::Info;
        std::string where = highest >= near ? "reach 2^" + std::to_string(highest)
                                            : std::string("were already infinite");
        e.sentence = path + " (" + std::string(layer_type_name(gl.spec.type)) +
                     "): " + share_text(double(close) / double(total)) + " of its outputs " +
                     where + " (from step " + std::to_string(first_step) + "), within a factor " +
                     std::to_string(1 << k_fp16_headroom_binades) +
                     " of fp16's largest value (65504)" +
                     (stores_fp16 ? ": a larger input overflows to inf in fp16."
                                  : ": in fp16 a larger input would overflow to inf.");
        e.suggestion = reader == Reader::App ? "tick Precision: keep in float32 for " + path +
                                                   " in the property editor"
                                             : "set \"dtype\": \"float32\" on " + path;
        e.fix = Fix::set_dtype_float32(path);
        out.push_back(std::move(e));
    }
}

} // namespace

void explain_numerics(const std::vector<RunFacts>& group, Reader reader,
                      std::vector<Explanation>& out)
{
    for (std::size_t i = 0; i < group.size(); ++i) {
        const RunFacts& f = group[i];
        if (f.numerics.empty()) continue;
        const NumericsSummary s = summarize_numerics(f.numerics);
        rule_loss_scaling(f, int(i), s, reader, out);
        rule_lost_updates(f, int(i), s, reader, out);
        rule_activation_headroom(f, int(i), f.numerics, reader, out);
    }
}

} // namespace mixlab
