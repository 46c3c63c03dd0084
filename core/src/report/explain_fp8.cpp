// mixed_fp8's rules (explain_fp8.h). The layers' fp8 decisions are recomputed from the
// run's graph with the dense node's own rule (model/fp8_eligibility.h).
#include "report/explain_fp8.h"

#include "model/fp8_eligibility.h"
#include "report/explain_text.h"
#include "train/fp8_scales.h" // fp8_amax_jump_text, k_fp8_amax_jump_prefix

#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>

namespace mixlab {

namespace {

using Severity = Explanation::Severity;

using explain_text::fmt;
using explain_text::make;
using explain_text::share_percent;

struct Fp8Layer {
    const GraphLayer* layer = nullptr;
    std::string why; // "" when it ran in fp8
};

// The model's top-level dense layers under mixed_fp8, each with the dense node's verdict.
// A padded input's stored width comes from the layer feeding it (past dropout and
// activations, which keep the padding).
std::vector<Fp8Layer> fp8_layers(const RunFacts& f)
{
    std::vector<Fp8Layer> out;
    const std::vector<GraphLayer>& layers = f.graph.layers;
    for (std::size_t i = 0; i < layers.size(); ++i) {
        if (layers[i].spec.type != LayerType::Dense) continue;
        std::int64_t stored_in = 0;
        for (std::size_t j = i; j > 0; --j) {
            const GraphLayer& prev = layers[j - 1];
            if (prev.stored_width > 0) {
                stored_in = prev.stored_width;
                break;
            }
            if (prev.spec.type != LayerType::Dropout && prev.spec.type != LayerType::Activation)
                break;
        }
        out.push_back({&layers[i], fp8_ineligibility(layers[i], stored_in)});
    }
    return out;
}

const RunFacts* bf16_run(const std::vector<RunFacts>& group)
{
    for (const RunFacts& g : group)
        if (g.policy == Policy::MixedBF16) return &g;
    return nullptr;
}

// The profile's forward + backward time of the layers that ran in fp8, and their FLOPs
// (forward + backward, as the profile counts them: analysis/layer_costs.cpp), or none
// without a profile or when one of them is missing from it.
struct LayersTime {
    double ms = 0, flops = 0;
};
std::optional<LayersTime> layers_time(const RunFacts& f, const std::vector<Fp8Layer>& layers)
{
    if (!f.profile) return std::nullopt;
    LayersTime total;
    for (const Fp8Layer& l : layers) {
        if (!l.why.empty()) continue;
        bool found = false;
        for (const LayerTime& t : f.profile->layers)
            if (t.path == l.layer->path) {
                total.ms += t.forward_ms + t.backward_ms;
                total.flops += t.flops;
                found = true;
            }
        if (!found) return std::nullopt;
    }
    return total;
}

// The layers' achieved training TFLOP/s against the fp8 ceiling, and the bf16 run's same
// layers against the bf16 ceiling, when mixlab-cli ceilings measured them; without
// ceilings, how to measure them.
std::string ceiling_text(const RunFacts& f, const LayersTime& mine, const RunFacts& bf16,
                         const LayersTime& theirs, Reader reader)
{
    if (!f.ceilings)
        return reader == Reader::App
                   ? " Measure this GPU's ceilings (Help > About > Measure now) to compare "
                     "the fp8 layers' TFLOP/s with its fp8 ceiling."
                   : " Run `mixlab-cli ceilings` to compare the fp8 layers' TFLOP/s with this "
                     "GPU's fp8 ceiling.";
    const double fp8 = f.ceilings->fp8_tflops;
    if (!(fp8 > 0) || !(mine.flops > 0)) return {};
    const double tflops = mine.flops / (mine.ms * 1e9);
    std::string text = fmt(" The fp8 layers ran at %.1f TFLOP/s, %.0f%% of this GPU's "
                           "measured fp8 ceiling (%.0f TFLOP/s)",
                           tflops, 100.0 * tflops / fp8, fp8);
    const double bf16_roof = bf16.ceilings ? bf16.ceilings->bf16_tflops : 0.0;
    if (bf16_roof > 0 && theirs.ms > 0 && theirs.flops > 0) {
        const double b = theirs.flops / (theirs.ms * 1e9);
        text += fmt("; in bfloat16 they ran at %.1f TFLOP/s, %.0f%% of its bf16 ceiling "
                    "(%.0f TFLOP/s)",
                    b, 100.0 * b / bf16_roof, bf16_roof);
    }
    return text + ".";
}

// Which layers ran in fp8, and what keeps the others out.
void rule_coverage(const RunFacts& f, int run, Reader reader, std::vector<Explanation>& out)
{
    const std::vector<Fp8Layer> layers = fp8_layers(f);
    if (layers.empty()) {
        out.push_back(make("fp8_coverage", Severity::Warning, run,
                           "mixed_fp8 runs dense layers' GEMMs in fp8, and this model has no "
                           "dense layer: it ran as mixed_bf16 (convolutions and LSTMs stay in "
                           "bfloat16 under mixed_fp8).",
                           "compare mixed_bf16 instead"));
        return;
    }
    std::int64_t flops_in = 0, flops_all = 0;
    int in_fp8 = 0;
    for (const Fp8Layer& l : layers) {
        flops_all += l.layer->flops;
        if (l.why.empty()) {
            ++in_fp8;
            flops_in += l.layer->flops;
        }
    }
    const double share =
        f.graph.total_flops > 0 ? double(flops_in) / double(f.graph.total_flops) : 0.0;
    std::string sentence =
        fmt("mixed_fp8 ran %d of the model's %d dense layers in fp8 (E4M3 weights and "
            "activations, E5M2 gradients, per-tensor delayed scaling): %s of its forward "
            "FLOPs.",
            in_fp8, int(layers.size()), share_percent(share).c_str());
    if (f.device.backend == BackendKind::Cpu)
        sentence += " On the CPU fp8 is emulated: the values are rounded as the GPU rounds "
                    "them, so the accuracy is fp8's, but nothing runs faster.";
    out.push_back(make("fp8_coverage", in_fp8 == 0 ? Severity::Warning : Severity::Info, run,
                       sentence,
                       in_fp8 == 0 ? "no layer ran in fp8, so this run is mixed_bf16 with extra "
                                     "work; see why per layer below"
                                   : ""));
    const GraphLayer* last = &f.graph.layers.back();
    for (auto it = f.graph.layers.rbegin(); it != f.graph.layers.rend(); ++it)
        if (it->spec.type == LayerType::Dense) {
            last = &*it;
            break;
        }
    for (const Fp8Layer& l : layers) {
        if (l.why.empty()) continue;
        const GraphLayer& gl = *l.layer;
        const double layer_share =
            f.graph.total_flops > 0 ? double(gl.flops) / double(f.graph.total_flops) : 0.0;
        Explanation e = make("fp8_layer_out", Severity::Info, run,
                             fmt("%s (dense, %lld units) stayed in bfloat16 under mixed_fp8: %s; "
                                 "it is %.1f%% of the model's forward FLOPs.",
                                 gl.path.c_str(), (long long)gl.spec.units, l.why.c_str(),
                                 100.0 * layer_share));
        const bool units_off = gl.spec.units % k_fp8_width_multiple != 0;
        if (units_off && &gl != last && layer_share >= explain_limits::k_padding_pays_flops_share) {
            const int units = int((gl.spec.units + k_fp8_width_multiple - 1) /
                                  k_fp8_width_multiple * k_fp8_width_multiple);
            e.severity = Severity::Advice;
            e.suggestion = reader == Reader::App
                               ? fmt("set Units of %s to %d in the property editor (and the "
                                     "inputs of the layer after it follow)",
                                     gl.path.c_str(), units)
                               : fmt("set units to %d (the layer after it then reads %d inputs)",
                                     units, units);
            e.fix = Fix::set_units(gl.path, units);
        } else if (&gl == last && units_off) {
            e.sentence += " The output layer is the usual one to keep out of fp8 anyway: the "
                          "logits' range and precision matter most for the loss.";
        }
        out.push_back(std::move(e));
    }
}

// Time against a mixed_bf16 run of the same group, layer by layer where both profiled.
void rule_speed(const RunFacts& f, int run, const RunFacts* bf16, Reader reader,
                std::vector<Explanation>& out)
{
    if (f.device.backend == BackendKind::Cpu || !bf16) return;
    const double ms = f.summary.median_step_ms, base = bf16->summary.median_step_ms;
    if (!(ms > 0) || !(base > 0)) return;
    const std::vector<Fp8Layer> layers = fp8_layers(f);
    std::string sentence = fmt("mixed_fp8 took %.3f ms a step against mixed_bf16's %.3f ms "
                               "(%.2fx).",
                               ms, base, base / ms);
    const std::optional<LayersTime> mine = layers_time(f, layers),
                                    theirs = layers_time(*bf16, layers);
    std::string suggestion;
    if (mine && theirs && mine->ms > 0 && f.profile->device_ms > 0) {
        const double rest = f.profile->device_ms - mine->ms;
        sentence += fmt(" Its fp8 layers took %.3f ms against %.3f ms in bfloat16 (%.2fx); the "
                        "rest of the step (input, other layers, the optimizer's pass over every "
                        "parameter, which also writes the fp8 layers' weights in E4M3, the "
                        "scale update) took %.3f ms, %.0f%% of it, which fp8 does not shrink.",
                        mine->ms, theirs->ms, theirs->ms / mine->ms, rest,
                        100.0 * rest / f.profile->device_ms);
        sentence += ceiling_text(f, *mine, *bf16, *theirs, reader);
        if (theirs->ms / mine->ms < 1.2)
            // The layers' time holds the quantize passes and the GEMMs together; which
            // of them took the gain is not measured apart, so say what may, not what did.
            suggestion = "fp8 pays on large GEMMs: the layers' time includes quantizing "
                         "their inputs and gradients (with transposed copies) and "
                         "transposing their weights' fp8 copy, which may cost what the "
                         "faster GEMMs save at this batch and these widths; a larger batch "
                         "or wider layers give fp8 more to gain";
    } else {
        sentence += " Profile both runs (explain --profile, or the app's Why panel) to see "
                    "the fp8 layers' own time.";
    }
    out.push_back(make("fp8_speed", Severity::Info, run, sentence, suggestion));
}

// Test accuracy against mixed_bf16's: what fp8's 3 (E4M3) and 2 (E5M2) mantissa bits cost.
void rule_accuracy(const RunFacts& f, int run, const RunFacts* bf16, std::vector<Explanation>& out)
{
    if (!bf16 || !f.summary.final_test_accuracy || !bf16->summary.final_test_accuracy) return;
    const double a = 100.0 * *f.summary.final_test_accuracy;
    const double b = 100.0 * *bf16->summary.final_test_accuracy;
    const double d = a - b;
    // Within half a point is the run-to-run spread of one policy over seeds (bench/NOTES 23).
    const Severity sev = d < -1.0 ? Severity::Warning : Severity::Info;
    std::string verdict = std::abs(d) <= 0.5 ? "within the spread between seeds"
                          : d < 0            ? fmt("%.2f points lower", -d)
                                             : fmt("%.2f points higher", d);
    out.push_back(make("fp8_accuracy", sev, run,
                       fmt("mixed_fp8 reached %.2f%% test accuracy against mixed_bf16's %.2f%%: "
                           "%s.",
                           a, b, verdict.c_str()),
                       d < -1.0 ? "keep the first and the last dense layer out of fp8 (\"dtype\": "
                                  "\"bfloat16\"), or lengthen the amax history"
                                : ""));
}

// One reported amax jump as rule_amax reads it.
struct JumpReport {
    bool reports_stopped = false; // the trainer's last report: it names no tensor
    std::string text;             // what the warning says after its prefix
    std::string layer;            // the jumping tensor's layer path
};

JumpReport report_of(const RunEvent& e)
{
    if (e.fp8_amax_jump) {
        const Fp8AmaxJump& j = *e.fp8_amax_jump;
        return {j.reports_stopped, fp8_amax_jump_text(j), j.layer};
    }
    // A log or app file written before the warning carried its facts: only the message,
    // "<prefix><layer path> x|w|dy reached |x| ...", or the last report, which names no
    // tensor. Read from the end of the tensor's name, its operand being one word.
    std::string_view what = e.message;
    if (what.starts_with(k_fp8_amax_jump_prefix)) what.remove_prefix(k_fp8_amax_jump_prefix.size());
    const std::size_t reached = what.rfind(" reached |x| ");
    if (reached == std::string_view::npos) return {true, std::string(what), ""};
    const std::string_view tensor = what.substr(0, reached);
    return {false, std::string(what), std::string(tensor.substr(0, tensor.rfind(' ')))};
}

// mixed_fp8's amax jumps (record_event): a tensor whose amax leapt past its history
// saturated at the format's maximum until its scale followed.
void rule_amax(const RunFacts& f, int run, Reader reader, std::vector<Explanation>& out)
{
    std::optional<std::pair<std::int64_t, JumpReport>> first;
    int jumps = 0;
    bool capped = false;
    for (const RunEvent& e : f.fp8_amax_jumps) {
        JumpReport r = report_of(e);
        capped = capped || r.reports_stopped;
        if (r.reports_stopped) continue;
        ++jumps;
        if (!first) first.emplace(e.step, std::move(r));
    }
    if (!first) return;
    const auto& [step, jump] = *first;
    const std::string count = jumps == 1 ? std::string("It was the run's only step with a jump.")
                              : capped   ? fmt("More than %d steps had one; the trainer "
                                                 "reported the first %d.",
                                               jumps, jumps)
                                         : fmt("In all %d steps had one.", jumps);
    out.push_back(
        make("fp8_amax", Severity::Warning, run,
             // Joined, not fmt's: the layer's path is of any length.
             "At step " + std::to_string(step) + " an fp8 amax jumped: " + jump.text + ". " + count,
             reader == Reader::App
                 ? fmt("a longer amax history or a margin of 1 (mixlab-cli's --fp8-history and "
                       "--fp8-margin) absorbs such jumps; or tick \"keep out of fp8\" for %s in "
                       "the property editor",
                       jump.layer.c_str())
                 : fmt("lengthen the amax history (--fp8-history 64) or leave headroom "
                       "(--fp8-margin 1); or keep %s out of fp8 (\"dtype\": \"bfloat16\")",
                       jump.layer.c_str())));
}

} // namespace

void explain_fp8(const std::vector<RunFacts>& group, Reader reader, std::vector<Explanation>& out)
{
    const RunFacts* bf16 = bf16_run(group);
    for (std::size_t i = 0; i < group.size(); ++i) {
        const RunFacts& f = group[i];
        if (f.policy != Policy::MixedFP8) continue;
        rule_coverage(f, int(i), reader, out);
        rule_speed(f, int(i), bf16, reader, out);
        rule_accuracy(f, int(i), bf16, out);
        rule_amax(f, int(i), reader, out);
    }
}

} // namespace mixlab
