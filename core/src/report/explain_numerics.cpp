// Numerics rules: each speaks only for a run that recorded numerics, with its own shares.
// Per run: loss scaling, lost updates, activation headroom, tf32's mantissa. Per group, from
// one run (reference_run): bf16's safety and fp8's headroom, properties of the model.
#include "report/explain_numerics.h"

#include "mixlab/numerics_summary.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <optional>
#include <utility>

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

// The scale `f` ran with at `step` (its scale history: the entry at or before the step, the
// first entry for a step before it); none when the history is empty.
std::optional<float> scale_at(const RunFacts& f, std::int64_t step)
{
    std::optional<float> scale;
    for (const auto& [at, v] : f.scale_history) {
        if (at > step) break;
        scale = v;
    }
    if (!scale && !f.scale_history.empty()) scale = f.scale_history.front().second;
    return scale;
}

// What fp16 would do to an fp32 run's gradients with the scale a mixed_fp16 run of its
// group used at the same steps (each sample shifted by that run's scale then): the
// fp32 run's answer to "would the mixed run's loss scaling have been enough". Empty
// without such a run, or when its scales are not powers of two.
std::string mixed_scale_clause(const std::vector<RunFacts>& group, const RunFacts& f)
{
    for (std::size_t m = 0; m < group.size(); ++m) {
        const RunFacts& mixed = group[m];
        if (mixed.policy != Policy::MixedFP16 || mixed.scale_history.empty()) continue;
        BinadeCounts c;
        float lo = 0, hi = 0;
        bool exact = true, first = true;
        for (const NumericsSample& sample : f.numerics) {
            const float scale = *scale_at(mixed, sample.step);
            const std::optional<int> e = power_of_two_exponent(scale);
            const std::optional<int> own = power_of_two_exponent(sample.loss_scale);
            if (!e || !own) {
                exact = false;
                break;
            }
            lo = first ? scale : std::min(lo, scale);
            hi = first ? scale : std::max(hi, scale);
            first = false;
            for (const LayerNumerics& l : sample.layers)
                if (l.gradients) c.add(*l.gradients, *e - *own);
        }
        if (!exact || c.total() == 0) return "";
        const FormatShares used = format_shares(c, NumberFormat::FP16);
        const std::string scales =
            lo == hi ? scale_text(lo) : scale_text(lo) + " to " + scale_text(hi);
        return "; with the scale run " + std::to_string(m) +
               " (mixed_fp16) used at the same steps (" + scales + ") " + share_text(used.flush) +
               " would flush and " + share_text(used.overflow) + " overflow";
    }
    return "";
}

// Loss scaling needed or not: the share of this run's gradients (unscaled) fp16 would flush
// to zero at scale 1, and at the scale the run used. bf16 and tf32 runs are not asked (their
// range is fp32's).
void rule_loss_scaling(const std::vector<RunFacts>& group, int run, const NumericsSummary& s,
                       Reader reader, std::vector<Explanation>& out)
{
    const RunFacts& f = group[std::size_t(run)];
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
    if (f.policy == Policy::FP32) sentence += mixed_scale_clause(group, f);
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
// run the first sampled step where the share reached the limit. A run with master weights
// only tells what fp16 weights would do to the model's updates: said once for the group, by
// the run reference_run picks (`speaks`).
void rule_lost_updates(const RunFacts& f, int run, bool speaks, const NumericsSummary& s,
                       Reader reader, std::vector<Explanation>& out)
{
    if (f.policy != Policy::FP16 && !speaks) return;
    const LayerNumericsSummary* worst = nullptr;
    for (const LayerNumericsSummary& l : s.layers)
        if (l.lost[k_fp16] && (!worst || *l.lost[k_fp16] > *worst->lost[k_fp16])) worst = &l;
    if (!worst || *worst->lost[k_fp16] < k_lost_updates_share) return;
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
        e.sentence = "Pure fp16 weights lost " + share_text(*worst->lost[k_fp16]) +
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
        e.sentence = "Pure fp16 weights would lose " + share_text(*worst->lost[k_fp16]) +
                     " of the updates in " + where +
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

// The run a group-wide numerics rule reads: one of `preferred` policy with numerics, else the
// first fp32 or tf32 run with numerics (its values are the model's own, unrounded), else the
// first other run with numerics (a pure fp16 run only when `pure_fp16`: its weights lost
// updates already); -1 when none.
int reference_run(const std::vector<RunFacts>& group, Policy preferred, bool pure_fp16)
{
    auto first = [&](auto&& take) {
        for (std::size_t i = 0; i < group.size(); ++i)
            if (!group[i].numerics.empty() && take(group[i].policy)) return int(i);
        return -1;
    };
    for (int i : {first([&](Policy p) { return p == preferred; }),
                  first([](Policy p) { return p == Policy::FP32 || p == Policy::TF32; }),
                  first([&](Policy p) { return pure_fp16 || p != Policy::FP16; })})
        if (i >= 0) return i;
    return -1;
}

// A kind's share of values over every layer: the layers' shares weighted by their counts.
template <class Share>
double over_layers(const NumericsSummary& s, std::optional<KindSummary> LayerNumericsSummary::*kind,
                   Share share)
{
    double n = 0, total = 0;
    for (const LayerNumericsSummary& l : s.layers)
        if (const std::optional<KindSummary>& k = l.*kind; k && k->values) {
            n += share(*k) * double(k->values);
            total += double(k->values);
        }
    return total > 0 ? n / total : 0.0;
}

// bf16 safe for this model or not: the updates bf16 weights would lose per layer (what fp32
// or split masters keep), and bf16's range against the activations and unscaled gradients.
// Said once for the group, from a mixed_bf16 run when there is one.
void rule_bf16(const std::vector<RunFacts>& group, Reader reader, std::vector<Explanation>& out)
{
    const int run = reference_run(group, Policy::MixedBF16, false);
    if (run < 0) return;
    const RunFacts& f = group[std::size_t(run)];
    const NumericsSummary s = summarize_numerics(f.numerics);
    const std::size_t bf16 = format_index(NumberFormat::BF16);
    std::vector<const LayerNumericsSummary*> layers;
    for (const LayerNumericsSummary& l : s.layers)
        if (l.lost[bf16]) layers.push_back(&l);
    std::stable_sort(layers.begin(), layers.end(),
                     [bf16](auto* a, auto* b) { return *a->lost[bf16] > *b->lost[bf16]; });
    const auto flush = [bf16](const KindSummary& k) { return k.formats[bf16].flush; };
    const auto overflow = [bf16](const KindSummary& k) { return k.formats[bf16].overflow; };
    const double act_flush = over_layers(s, &LayerNumericsSummary::activations, flush);
    const double act_overflow = over_layers(s, &LayerNumericsSummary::activations, overflow);
    const double grad_flush = s.gradients ? s.gradients->formats[bf16].flush : 0.0;
    const double grad_overflow = s.gradients ? s.gradients->formats[bf16].overflow : 0.0;
    const bool activations =
        std::any_of(s.layers.begin(), s.layers.end(),
                    [](const LayerNumericsSummary& l) { return l.activations.has_value(); });
    if (layers.empty() && !activations && !s.gradients) return;
    std::string sentence;
    if (!layers.empty()) {
        const bool many = *layers.front()->lost[bf16] >= k_lost_updates_share;
        if (many) {
            // "30.00% of the updates in layer 1 (dense), 12.00% in layer 2 (dense) and under
            // 1.00% in 2 other layers".
            std::vector<std::string> parts;
            for (const LayerNumericsSummary* l : layers) {
                if (*l->lost[bf16] < k_lost_updates_share) break;
                parts.push_back(share_text(*l->lost[bf16]) +
                                (parts.empty() ? " of the updates in " : " in ") + l->path + " (" +
                                l->type + ")");
            }
            if (const std::size_t rest = layers.size() - parts.size())
                parts.push_back("under " + share_text(k_lost_updates_share) + " in " +
                                std::to_string(rest) + " other layer" + (rest == 1 ? "" : "s"));
            sentence = "bf16 weights would lose";
            for (std::size_t i = 0; i < parts.size(); ++i)
                sentence += (i == 0 ? " " : i + 1 == parts.size() ? " and " : ", ") + parts[i];
        } else {
            sentence = "bf16 weights would lose at most " +
                       share_text(*layers.front()->lost[bf16]) + " of the updates in a layer (" +
                       layers.front()->path + ")";
        }
        sentence += ": below half a unit in the last place of their weight (bf16 keeps 8 "
                    "significant bits, fp16 11). fp32 master weights keep these updates, and so "
                    "do split bf16 masters (\"master_weights\": \"bf16_split\": the bf16 weight "
                    "plus an int16 remainder, the fp32 value exactly in 4 bytes).";
        sentence += many ? " Without such masters bf16 weights are not safe for this model."
                         : " For the updates, bf16 is safe for this model.";
    }
    // Gradients as applied exist only when every scale was a power of two.
    const bool range_ok =
        act_flush == 0 && act_overflow == 0 && grad_flush == 0 && grad_overflow == 0;
    const std::string what = s.gradients ? "activations and gradients" : "activations";
    std::string range =
        range_ok ? "bf16's range (fp32's exponent) holds this run's " + what +
                       ": none would overflow or flush to zero."
                 : "bf16's range would flush " + share_text(act_flush) + " and overflow " +
                       share_text(act_overflow) + " of this run's activations" +
                       (s.gradients ? ", and flush " + share_text(grad_flush) + " and overflow " +
                                          share_text(grad_overflow) + " of its unscaled gradients"
                                    : std::string()) +
                       ".";
    sentence += (sentence.empty() ? "" : " ") + range;
    Explanation e;
    e.id = "numerics_bf16";
    e.run = run;
    e.severity = range_ok ? Severity::Info : Severity::Advice;
    e.sentence = std::move(sentence);
    // Loss scaling lifts gradients that bf16 would flush; activations beyond fp32's exponent
    // are fp32's problem too.
    if (grad_flush > 0)
        e.suggestion = reader == Reader::App
                           ? "keep loss scaling on (Loss scaling: dynamic) if you train in bf16"
                           : "keep --loss-scale dynamic if you train in bf16";
    out.push_back(std::move(e));
}

// One layer's activations or gradients against the fp8 formats under per-tensor scaling,
// over the samples: the widest central 99.9% and the most that flushes or saturates at each
// sample's best shift (a scale per tensor and step, as fp8 recipes keep).
struct Fp8Fit {
    int width = 0;
    std::array<double, 2> lost{}; // E4M3, E5M2
    bool any = false;
};

constexpr NumberFormat k_fp8[] = {NumberFormat::FP8E4M3, NumberFormat::FP8E5M2};

void fit_sample(Fp8Fit& fit, const std::optional<ValueHistogram>& h)
{
    if (!h) return;
    BinadeCounts c;
    c.add(*h);
    const std::optional<BinadeRange> r = central_range(c, k_fp8_central_share);
    if (!r) return;
    fit.any = true;
    fit.width = std::max(fit.width, r->hi - r->lo + 1);
    for (std::size_t i = 0; i < std::size(k_fp8); ++i)
        if (const std::optional<ShiftFit> b = best_shift(c, k_fp8[i]))
            fit.lost[i] = std::max(fit.lost[i], b->flush + b->saturate);
}

std::string fp8_text(const char* kind, const Fp8Fit& fit)
{
    std::string t = std::string(kind) + " " + std::to_string(fit.width) + " binades (";
    for (std::size_t i = 0; i < std::size(k_fp8); ++i) {
        const int span = format_limits(k_fp8[i]).kept_binades();
        t += std::string(i ? "; " : "") + (k_fp8[i] == NumberFormat::FP8E4M3 ? "E4M3 " : "E5M2 ") +
             (fit.width <= span ? "fits" : "does not fit") + ", " + share_text(fit.lost[i]) +
             " lost";
    }
    return t + ")";
}

// "every layer fits", "layer 1 and layer 3 fit; layer 2 does not", "no layer fits".
std::string verdict(const std::vector<std::string>& fit, const std::vector<std::string>& misfit)
{
    auto list = [](const std::vector<std::string>& v) {
        std::string t;
        for (std::size_t i = 0; i < v.size(); ++i)
            t += (i == 0 ? "" : i + 1 == v.size() ? " and " : ", ") + v[i];
        return t;
    };
    if (misfit.empty()) return "every layer fits";
    const std::string nots = list(misfit) + (misfit.size() == 1 ? " does not" : " do not");
    if (fit.empty()) return "no layer fits";
    return list(fit) + (fit.size() == 1 ? " fits; " : " fit; ") + nots;
}

// fp8 headroom per layer, for the fp8 policy to come: with a scale per tensor the range can be
// shifted, so the question is whether the width of the values fits the format's binades
// and what of the tails would flush or saturate at the best shift. Said once for the group.
void rule_fp8_headroom(const std::vector<RunFacts>& group, std::vector<Explanation>& out)
{
    const int run = reference_run(group, Policy::FP32, true);
    if (run < 0) return;
    const RunFacts& f = group[std::size_t(run)];
    std::vector<std::string> paths, types;
    std::vector<Fp8Fit> acts, grads;
    for (const NumericsSample& sample : f.numerics)
        for (const LayerNumerics& l : sample.layers) {
            auto it = std::find(paths.begin(), paths.end(), l.path);
            const std::size_t i = std::size_t(it - paths.begin());
            if (it == paths.end()) {
                paths.push_back(l.path);
                types.push_back(l.type);
                acts.emplace_back();
                grads.emplace_back();
            }
            // Scaled or not: a shift changes neither the width nor the best shift's losses.
            fit_sample(acts[i], l.activations);
            fit_sample(grads[i], l.gradients);
        }
    // fp8 training's recipe: activations (and weights) in E4M3, gradients in E5M2.
    auto fits = [](const Fp8Fit& fit, NumberFormat fmt) {
        return !fit.any || fit.width <= format_limits(fmt).kept_binades();
    };
    std::string per_layer;
    std::vector<std::string> fit, misfit;
    for (std::size_t i = 0; i < paths.size(); ++i) {
        if (!acts[i].any && !grads[i].any) continue;
        std::string t = paths[i] + " (" + types[i] + "):";
        if (acts[i].any) t += " " + fp8_text("activations", acts[i]);
        if (grads[i].any)
            t += std::string(acts[i].any ? "," : "") + " " + fp8_text("gradients", grads[i]);
        per_layer += (per_layer.empty() ? "" : "; ") + t;
        const bool ok =
            fits(acts[i], NumberFormat::FP8E4M3) && fits(grads[i], NumberFormat::FP8E5M2);
        (ok ? fit : misfit).push_back(paths[i]);
    }
    if (per_layer.empty()) return;
    auto span = [](NumberFormat fmt) { return std::to_string(format_limits(fmt).kept_binades()); };
    Explanation e;
    e.id = "numerics_fp8_headroom";
    e.run = run;
    e.severity = Severity::Info;
    char central[32];
    std::snprintf(central, sizeof central, "%g%%", 100.0 * k_fp8_central_share);
    e.sentence = "fp8 headroom with a scale per tensor: the central " + std::string(central) +
                 " of each layer's values "
                 "(its widest of " +
                 std::to_string(f.numerics.size()) +
                 " samples) against the binades that neither flush nor saturate, E4M3's " +
                 span(NumberFormat::FP8E4M3) + " and E5M2's " + span(NumberFormat::FP8E5M2) +
                 ", and what flushes or saturates at the best shift. " + per_layer + ". " +
                 "With E4M3 activations and E5M2 gradients " + verdict(fit, misfit) + ".";
    out.push_back(std::move(e));
}

// tf32: where it matters is the mantissa. A tf32 run's GEMMs round their inputs to 10
// fraction bits, fp16's, but keep fp32's exponent: fp16's range problems (the run's own
// shares) are not tf32's.
void rule_tf32(const RunFacts& f, int run, const NumericsSummary& s, std::vector<Explanation>& out)
{
    if (f.policy != Policy::TF32) return;
    const std::size_t fp16 = format_index(NumberFormat::FP16);
    const double act_out =
        over_layers(s, &LayerNumericsSummary::activations, [fp16](const KindSummary& k) {
            return k.formats[fp16].overflow + k.formats[fp16].flush;
        });
    std::string sentence =
        "tf32 rounds the GEMM inputs (activations and weights) to 10 fraction bits, fp16's "
        "precision (a relative error up to 2^-11), but keeps fp32's 8-bit exponent and fp32 "
        "storage, accumulation and updates: in fp16's range " +
        share_text(act_out) + " of this run's activations would overflow or flush";
    if (s.gradients)
        sentence += " and " + share_text(s.gradients->formats[fp16].flush) +
                    " of its gradients flush at scale 1";
    sentence += "; in tf32 none do. Only the rounding of the products' inputs differs from fp32.";
    Explanation e;
    e.id = "numerics_tf32";
    e.run = run;
    e.severity = Severity::Info;
    e.sentence = std::move(sentence);
    out.push_back(std::move(e));
}

} // namespace

void explain_numerics(const std::vector<RunFacts>& group, Reader reader,
                      std::vector<Explanation>& out)
{
    const int masters_run = reference_run(group, Policy::FP32, false);
    for (std::size_t i = 0; i < group.size(); ++i) {
        const RunFacts& f = group[i];
        if (f.numerics.empty()) continue;
        const NumericsSummary s = summarize_numerics(f.numerics);
        rule_loss_scaling(group, int(i), s, reader, out);
        rule_lost_updates(f, int(i), int(i) == masters_run, s, reader, out);
        rule_activation_headroom(f, int(i), f.numerics, reader, out);
        rule_tf32(f, int(i), s, out);
    }
    rule_bf16(group, reader, out);
    rule_fp8_headroom(group, out);
}

} // namespace mixlab
