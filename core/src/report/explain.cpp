// The explain rules: each a small function that reads a group's RunFacts and says, with
// the runs' own numbers, one thing about why precision helped or not.
#include "mixlab/explain.h"

#include "report/explain_fp8.h"
#include "report/explain_numerics.h"
#include "report/explain_text.h"
#include "train/fp8_scales.h" // k_fp8_amax_jump_prefix (older logs' jumps)

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <functional>
#include <numeric>

namespace mixlab {
namespace {

using namespace explain_limits;
using Severity = Explanation::Severity;

using explain_text::fmt;
using explain_text::make;

std::string name(Policy p) { return std::string(policy_name(p)); }

// mixed_fp8 stores bf16 around its fp8 GEMMs, with fp32 masters: 16-bit and mixed here
// (its own rules: explain_fp8.cpp).
bool is_16bit(Policy p)
{
    return p == Policy::MixedFP16 || p == Policy::MixedBF16 || p == Policy::FP16 ||
           p == Policy::MixedFP8;
}

bool is_mixed(Policy p)
{
    return p == Policy::MixedFP16 || p == Policy::MixedBF16 || p == Policy::MixedFP8;
}

std::int64_t round_up(std::int64_t n, std::int64_t m) { return (n + m - 1) / m * m; }

// Every layer of the tree, residual bodies and shortcuts included, in pre-order.
void for_each_layer(const std::vector<GraphLayer>& layers,
                    const std::function<void(const GraphLayer&)>& f)
{
    for (const GraphLayer& gl : layers) {
        f(gl);
        for_each_layer(gl.body, f);
        for_each_layer(gl.shortcut, f);
    }
}

// The top-level dense layer that produces the logits (the last one), or null.
const GraphLayer* output_dense(const Graph& g)
{
    for (auto it = g.layers.rbegin(); it != g.layers.rend(); ++it)
        if (it->spec.type == LayerType::Dense) return &*it;
    return nullptr;
}

// Samples per step are batch x bptt tokens for a language model (its FLOPs are per token).
std::int64_t tokens_per_sample(const RunFacts& f)
{
    return f.graph.input.sequence && f.bptt > 0 ? f.bptt : 1;
}

int baseline_of(const std::vector<RunFacts>& group, std::size_t i)
{
    const int b = group[i].baseline;
    if (b >= 0 && std::size_t(b) < group.size()) return b;
    for (std::size_t j = 0; j < group.size(); ++j)
        if (group[j].policy == Policy::FP32) return int(j);
    return 0;
}

using Out = std::vector<Explanation>;

// 1. Each run's speed against the baseline.
void rule_speed(const std::vector<RunFacts>& group, Out& out)
{
    for (std::size_t i = 0; i < group.size(); ++i) {
        const int b = baseline_of(group, i);
        if (std::size_t(b) == i) continue;
        const double run_ms = group[i].summary.median_step_ms;
        const double base_ms = group[std::size_t(b)].summary.median_step_ms;
        if (!(run_ms > 0) || !(base_ms > 0)) continue;
        const double r = base_ms / run_ms;
        const std::string head =
            fmt("%s ran %.3f ms per step against %s's %.3f ms: ", name(group[i].policy).c_str(),
                run_ms, name(group[std::size_t(b)].policy).c_str(), base_ms);
        // Within 5% is run-to-run noise on a short run.
        std::string verdict = r >= 1.05   ? fmt("%.2fx faster", r)
                              : r <= 0.95 ? fmt("%.2fx slower", 1.0 / r)
                                          : std::string("about the same speed");
        out.push_back(make("speed", Severity::Info, int(i), head + verdict + "."));
    }
}

// 2. GEMM dimensions that keep 16-bit tensor cores off their fast path.
// The share of a profiled run's top-level layer time that `path` took; none when the
// run has no profile or the layer is not top-level (nested layers are timed as their
// block), and none on the CPU backend: its layer times are float32 GEMMs plus the
// emulated roundings' passes, which say nothing of tensor cores (a 10-unit output layer
// took 4% of the time in one CPU run and 24% in the next, and the rules below turned that
// noise into advice to pad it).
std::optional<double> layer_time_share(const RunFacts& f, const std::string& path)
{
    if (!f.profile || !ran_on_gpu(f)) return std::nullopt;
    double total = 0, mine = -1;
    for (const LayerTime& l : f.profile->layers) {
        const double ms = l.forward_ms + l.backward_ms;
        total += ms;
        if (l.path == path) mine = ms;
    }
    if (mine < 0 || !(total > 0)) return std::nullopt;
    return mine / total;
}

void rule_dims(const std::vector<RunFacts>& group, Reader reader, Out& out)
{
    const auto it = std::find_if(group.begin(), group.end(),
                                 [](const RunFacts& f) { return is_16bit(f.policy); });
    if (it == group.end()) return;
    const Graph& g = it->graph;
    const GraphLayer* logits = output_dense(g);
    const std::string pol = name(it->policy);
    for_each_layer(g.layers, [&](const GraphLayer& gl) {
        if (!gl.is_gemm || gl.tensor_core_friendly || gl.spec.force_fp32) return;
        // An LSTM's rules are cuDNN's RNN rules (rule_rnn_dims).
        if (gl.spec.type != LayerType::Dense && gl.spec.type != LayerType::Conv2D) return;
        const bool dense = gl.spec.type == LayerType::Dense;
        const std::int64_t n_out = dense ? gl.spec.units : gl.spec.filters;
        const std::int64_t n_in = gl.in.dims.empty() ? 0 : gl.in.dims.back();
        const double share = g.total_flops > 0 ? double(gl.flops) / double(g.total_flops) : 0.0;
        const std::string what = dense ? fmt("dense, %lld units", (long long)n_out)
                                       : fmt("conv2d, %lld filters", (long long)n_out);
        std::string sentence = fmt("%s (%s) under %s: %s; it is %.1f%% of the model's forward "
                                   "FLOPs",
                                   gl.path.c_str(), what.c_str(), pol.c_str(),
                                   gl.tensor_core_note.c_str(), 100.0 * share);
        // A measured share of the layers' time, when the run was profiled, outranks the
        // FLOP count: a misaligned layer can cost far more time than its FLOPs say.
        const std::optional<double> time_share = layer_time_share(*it, gl.path);
        if (time_share)
            sentence += fmt(" and took %.1f%% of the layers' device time", 100.0 * *time_share);
        sentence += ".";
        const double weight = time_share ? *time_share : share;
        Explanation e = make("dims_multiple_of_8", Severity::Advice, -1, "");
        const bool out_off = n_out % k_tensor_core_multiple != 0;
        const std::int64_t padded = round_up(n_out, k_tensor_core_multiple);
        if (weight < k_padding_pays_flops_share) {
            e.severity = Severity::Info;
            sentence += fmt(" Padding would not pay: the layer is under %.0f%% of the %s.",
                            100.0 * k_padding_pays_flops_share, time_share ? "time" : "work");
        } else if (out_off && &gl == logits) {
            e.suggestion = fmt("pad the output to %lld logits and mask the extra %lld "
                               "(set to -inf before the loss)",
                               (long long)padded, (long long)(padded - n_out));
        } else if (out_off) {
            e.suggestion =
                reader == Reader::App
                    ? fmt("set %s of %s to %lld in the property editor",
                          dense ? "Units" : "Filters", gl.path.c_str(), (long long)padded)
                    : fmt("set %s to %lld", dense ? "units" : "filters", (long long)padded);
            e.fix = Fix::set_units(gl.path, int(padded));
        } else {
            e.suggestion = fmt("its %lld inputs come from the layer before it (or the data); "
                               "padding them to %lld fixes this layer",
                               (long long)n_in, (long long)round_up(n_in, k_tensor_core_multiple));
        }
        e.sentence = sentence;
        out.push_back(std::move(e));
    });
}

// 3. The device lacks what the policy needs, or is the CPU reference.
void rule_device(const std::vector<RunFacts>& group, Reader reader, Out& out)
{
    if (group.empty()) return;
    if (group.front().device.backend == BackendKind::Cpu) {
        const bool fp8 = std::any_of(group.begin(), group.end(), [](const RunFacts& f) {
            return f.policy == Policy::MixedFP8;
        });
        out.push_back(
            make("cpu_backend", Severity::Info, -1,
                 fmt("These runs used the CPU backend: it computes in float32 and only "
                     "emulates %s rounding, so its step times say nothing about GPU speed.",
                     fp8 ? "fp16/bf16 and fp8 (E4M3/E5M2)" : "fp16/bf16"),
                 reader == Reader::App
                     ? "on a machine with an NVIDIA GPU, choose Device: cuda (or auto) in "
                       "the run panel to measure speed"
                     : "run on a CUDA device (--device cuda) to measure speed"));
        return;
    }
    for (std::size_t i = 0; i < group.size(); ++i) {
        const DeviceInfo& d = group[i].device;
        const Policy p = group[i].policy;
        const std::string gpu =
            fmt("%s (compute capability %d.%d)", d.name.c_str(), d.cc_major, d.cc_minor);
        std::string lack;
        if ((p == Policy::MixedFP16 || p == Policy::FP16) && !d.tensor_cores)
            lack = "fp16 tensor cores (compute capability 7.0+)";
        else if (p == Policy::MixedBF16 && !d.bf16)
            lack = "bf16 tensor cores (compute capability 8.0+)";
        else if (p == Policy::TF32 && !d.tf32)
            lack = "TF32 tensor cores (compute capability 8.0+)";
        if (lack.empty()) continue;
        Explanation e = make("device_lacks", Severity::Warning, int(i),
                             fmt("%s has no %s: %s runs its GEMMs on ordinary cores, so it "
                                 "gains little or nothing over fp32.",
                                 gpu.c_str(), lack.c_str(), name(p).c_str()),
                             "use fp32, or a GPU with the tensor cores this policy needs");
        out.push_back(std::move(e));
    }
}

// 4. TF32 already makes fp32 fast: a tf32 run within 1.3x of a mixed run.
void rule_tf32_close(const std::vector<RunFacts>& group, Out& out)
{
    for (std::size_t t = 0; t < group.size(); ++t) {
        if (group[t].policy != Policy::TF32) continue;
        for (std::size_t m = 0; m < group.size(); ++m) {
            if (!is_mixed(group[m].policy)) continue;
            const double tf = group[t].summary.median_step_ms;
            const double mx = group[m].summary.median_step_ms;
            if (!(tf > 0) || !(mx > 0) || tf > k_tf32_close_ratio * mx) continue;
            out.push_back(make("tf32_close", Severity::Advice, int(t),
                               fmt("tf32 ran %.3f ms per step, within %.2fx of %s's %.3f ms: "
                                   "TF32 tensor cores already make fp32 storage fast here.",
                                   tf, tf / mx, name(group[m].policy).c_str(), mx),
                               "tf32 keeps fp32 range and needs no loss scaling; mixed "
                               "precision pays mostly in memory for this model"));
        }
    }
}

// 5. Skipped steps or a loss scale that collapsed.
void rule_scale(const std::vector<RunFacts>& group, Out& out)
{
    for (std::size_t i = 0; i < group.size(); ++i) {
        const RunFacts& f = group[i];
        const RunSummary& s = f.summary;
        // The dynamic scaler starts high on purpose and halves on every overflow until
        // the gradients fit: an unbroken run of lower scales from step 1 on is that
        // search (ResNets at 65536 skip their first 4-8 steps), not trouble.
        const auto& h = f.scale_history;
        std::size_t settle = 0;
        while (!h.empty() && h.front().first == 1 && settle + 1 < h.size() &&
               h[settle + 1].first == h[settle].first + 1 &&
               h[settle + 1].second < h[settle].second)
            ++settle;
        const std::int64_t skipped =
            std::max<std::int64_t>(0, s.skipped_steps - std::int64_t(settle));
        const double skipped_share = s.steps > 0 ? double(skipped) / double(s.steps) : 0;
        float start = 0, low = 0;
        if (!h.empty()) {
            start = low = h[settle].second;
            for (std::size_t k = settle; k < h.size(); ++k) low = std::min(low, h[k].second);
        }
        const bool collapsed = low > 0 && double(start) / double(low) >= k_scale_collapse_factor;
        const bool skipping = skipped_share > k_skipped_share;
        if (!collapsed && !skipping) continue;
        std::string sentence = fmt("%s skipped %lld of %lld steps (%.1f%%)", name(f.policy).c_str(),
                                   (long long)skipped, (long long)s.steps, 100.0 * skipped_share);
        if (settle > 0)
            sentence +=
                fmt(" after the %zu skipped while the scale came down to its level", settle);
        if (collapsed)
            sentence += fmt(" and its loss scale fell from %g to %g", double(start), double(low));
        sentence += ": its gradients kept overflowing, and every skipped step is a step that "
                    "did not learn.";
        out.push_back(make("loss_scale", Severity::Warning, int(i), sentence,
                           f.policy == Policy::MixedBF16
                               ? "lower the learning rate; bf16 itself does not overflow"
                               : "lower the learning rate or the initial loss scale, or use "
                                 "mixed_bf16 (fp32's range, no loss scaling)"));
    }
}

// 6. Pure fp16 updates that stall: without master weights small updates round away.
void rule_fp16_stall(const std::vector<RunFacts>& group, Reader reader, Out& out)
{
    for (std::size_t i = 0; i < group.size(); ++i) {
        const RunFacts& f = group[i];
        if (f.policy != Policy::FP16 || f.train_loss.size() < 10) continue;
        const std::size_t n = f.train_loss.size() / 10;
        const auto mean = [](auto b, auto e) {
            return std::accumulate(b, e, 0.0) / double(std::distance(b, e));
        };
        const double first = mean(f.train_loss.begin(), f.train_loss.begin() + long(n));
        const double last = mean(f.train_loss.end() - long(n), f.train_loss.end());
        if (!(last >= k_stall_ratio * first)) continue;
        Explanation e = make("fp16_stall", Severity::Warning, int(i),
                             fmt("fp16's training loss did not fall: %.4f over the last 10%% "
                                 "of steps against %.4f over the first. With fp16 weights and "
                                 "no fp32 master copy, updates smaller than half a unit in the "
                                 "last place of a weight round away.",
                                 last, first),
                             reader == Reader::App
                                 ? "choose Precision: mixed_fp16 in the run panel: fp32 master "
                                   "weights take the small updates"
                                 : "use mixed_fp16: fp32 master weights take the small updates");
        e.fix = Fix::set_policy(Policy::MixedFP16);
        out.push_back(std::move(e));
    }
}

// 7. A sigmoid output trained with categorical cross-entropy.
void rule_sigmoid(const std::vector<RunFacts>& group, Reader reader, Out& out)
{
    if (group.empty() || group.front().graph.head != OutputHead::SigmoidKeras) return;
    const Graph& g = group.front().graph;
    const GraphLayer& last = g.layers.back();
    Explanation e =
        make("sigmoid_output", Severity::Advice, -1,
             fmt("%s ends the model with a sigmoid trained with categorical "
                 "cross-entropy over %d classes: each sigmoid scores its class on "
                 "its own and the loss divides them by their sum, which learns "
                 "slower than softmax for one-of-N labels.",
                 last.path.c_str(), g.classes),
             reader == Reader::App
                 ? fmt("set Activation of %s to softmax in the property editor (folded "
                       "into the loss, in float32)",
                       last.path.c_str())
                 : std::string("use a softmax output (folded into the loss, in float32)"));
    e.fix = Fix::set_activation(last.path, Activation::Softmax);
    out.push_back(std::move(e));
}

// 8. The output layer left in 16 bits under mixed_fp16.
void rule_output_fp32(const std::vector<RunFacts>& group, Reader reader, Out& out)
{
    const auto it = std::find_if(group.begin(), group.end(),
                                 [](const RunFacts& f) { return f.policy == Policy::MixedFP16; });
    if (it == group.end()) return;
    const Graph& g = it->graph;
    const GraphLayer* logits = output_dense(g);
    if (!logits || logits->spec.force_fp32) return;
    const double share = g.total_flops > 0 ? double(logits->flops) / double(g.total_flops) : 0;
    // Under 0.1% a percentage with one decimal would read "0.0%": say it in words.
    const std::string cost =
        share < 0.001 ? std::string("costs almost nothing: its FLOPs are under 0.1% "
                                    "of the model's")
                      : fmt("runs %.1f%% of the model's FLOPs at fp32 speed", 100.0 * share);
    Explanation e = make("output_float32", Severity::Advice, -1,
                         fmt("%s (dense, %d units) computes the logits in float16 under "
                             "mixed_fp16: logits and their gradients lose precision and can "
                             "overflow; keeping it in float32 %s.",
                             logits->path.c_str(), logits->spec.units, cost.c_str()),
                         reader == Reader::App
                             ? fmt("tick Precision: keep in float32 for %s in the property editor",
                                   logits->path.c_str())
                             : std::string("set \"dtype\": \"float32\" on the output layer"));
    e.fix = Fix::set_dtype_float32(logits->path);
    out.push_back(std::move(e));
}

// 9. Too little work per step to fill a GPU. Said once for the group (its runs share
// the batch), about its fastest run: the one where fixed costs weigh most.
void rule_small_batch(const std::vector<RunFacts>& group, Reader reader, Out& out)
{
    int fastest = -1;
    for (std::size_t i = 0; i < group.size(); ++i) {
        if (group[i].device.backend != BackendKind::Cuda || group[i].batch <= 0) continue;
        const double ms = group[i].summary.median_step_ms;
        if (fastest < 0 || (ms > 0 && ms < group[std::size_t(fastest)].summary.median_step_ms))
            fastest = int(i);
    }
    if (fastest < 0) return;
    const RunFacts& f = group[std::size_t(fastest)];
    // A language model's FLOPs are per token: a step is batch x bptt of them.
    const double per_step = double(f.batch) * double(tokens_per_sample(f));
    const double work = per_step * double(f.graph.total_flops);
    const double ms = f.summary.median_step_ms;
    const bool little_work = work < k_min_flops_per_step;
    const bool short_step = ms > 0 && ms < k_min_step_ms;
    if (!little_work && !short_step) return;
    // The smallest doubling of the batch that gives the GPU 1 GFLOP of forward work.
    std::int64_t suggested = std::int64_t(f.batch) * 2;
    while (double(suggested) * double(tokens_per_sample(f)) * double(f.graph.total_flops) <
               k_min_flops_per_step &&
           suggested < (std::int64_t(1) << 20))
        suggested *= 2;
    std::string sentence = fmt("batch %d gives %.3g forward FLOPs per step", f.batch, work);
    if (ms > 0) sentence += fmt(" and a %s step takes %.3f ms", name(f.policy).c_str(), ms);
    sentence += ": too little work to fill the GPU, so fixed per-step costs (kernel "
                "launches, the loss-scale bookkeeping) hide what precision changes.";
    Explanation e = make("small_batch", Severity::Advice, fastest, sentence,
                         reader == Reader::App
                             ? fmt("set Batch size to %lld in the run panel", (long long)suggested)
                             : fmt("try batch %lld", (long long)suggested));
    e.fix = Fix::set_batch(int(suggested));
    out.push_back(std::move(e));
}

// ---- language models (LSTM) ----------------------------------------------------------

// 13. cuDNN's RNN rules: its tensor-core kernels want the hidden size, the input size and
// the batch multiples of 8 in 16-bit math; otherwise it pads internally or falls back.
void rule_rnn_dims(const std::vector<RunFacts>& group, Reader reader, Out& out)
{
    const auto it = std::find_if(group.begin(), group.end(), [](const RunFacts& f) {
        return is_16bit(f.policy) && f.graph.input.sequence;
    });
    if (it == group.end()) return;
    const std::string pol = name(it->policy);
    for (const GraphLayer& gl : it->graph.layers) {
        if (gl.spec.type != LayerType::Lstm || gl.spec.force_fp32) continue;
        const std::int64_t hidden = gl.spec.hidden;
        const std::int64_t input = gl.in.dims.empty() ? 0 : gl.in.dims.back();
        std::vector<std::string> off;
        if (hidden % k_tensor_core_multiple)
            off.push_back(fmt("hidden %lld (pad to %lld)", (long long)hidden,
                              (long long)round_up(hidden, k_tensor_core_multiple)));
        if (input % k_tensor_core_multiple)
            off.push_back(fmt("input %lld (pad to %lld)", (long long)input,
                              (long long)round_up(input, k_tensor_core_multiple)));
        if (off.empty()) continue;
        std::string list;
        for (const std::string& o : off) list += (list.empty() ? "" : ", ") + o;
        const std::string sizes =
            fmt("%s (lstm, %lld x %lld) under %s: cuDNN's RNN kernels use tensor cores fully "
                "only when the hidden size, the input size and the batch are multiples of 8; "
                "here %s.",
                gl.path.c_str(), (long long)input, (long long)hidden, pol.c_str(), list.c_str());
        // The network stores such sizes zero-padded when it can (graph.cpp's
        // mark_padded_outputs): the layer's fitness is then its stored sizes'.
        if (gl.tensor_core_friendly) {
            out.push_back(make(
                "rnn_dims", Severity::Info, -1,
                sizes + " MixLab stores them padded with zeros, which computes "
                        "exactly the model as written: the padding's weights "
                        "start at zero and get zero gradients.",
                "nothing to do; the padding costs about " +
                    fmt("%.1f%%", 100.0 * (double(round_up(hidden, 8)) *
                                               double(round_up(hidden, 8) + round_up(input, 8)) /
                                               (double(hidden) * double(hidden + input)) -
                                           1.0)) +
                    " more recurrent work and memory"));
            continue;
        }
        out.push_back(
            make("rnn_dims", Severity::Advice, -1, sizes,
                 reader == Reader::App
                     ? fmt("set Hidden of %s (and the embedding's Dim, which is its input) to a "
                           "multiple of 8 in the property editor",
                           gl.path.c_str())
                     : fmt("set \"hidden\" (and the layer before it's width) to a multiple of 8")));
    }
    for (std::size_t i = 0; i < group.size(); ++i) {
        const RunFacts& f = group[i];
        if (!is_16bit(f.policy) || !f.graph.input.sequence || f.batch <= 0 ||
            f.batch % k_tensor_core_multiple == 0)
            continue;
        const int padded = int(round_up(f.batch, k_tensor_core_multiple));
        Explanation e =
            make("rnn_batch", Severity::Advice, int(i),
                 fmt("%s runs its LSTM at batch %d: cuDNN's RNN kernels take the batch as a GEMM "
                     "dimension, which tensor cores want a multiple of 8.",
                     name(f.policy).c_str(), f.batch),
                 reader == Reader::App ? fmt("set Batch size to %d in the run panel", padded)
                                       : fmt("try --batch %d", padded));
        e.fix = Fix::set_batch(padded);
        out.push_back(std::move(e));
    }
}

// 14. The decoder's share: in a word-level model the output GEMM (hidden x vocabulary per
// token) is most of the arithmetic, so its speed under a policy is most of the step's.
void rule_decoder_share(const std::vector<RunFacts>& group, Out& out)
{
    const RunFacts& f = group.front();
    if (!f.graph.input.sequence || !(f.graph.total_flops > 0)) return;
    const GraphLayer* decoder = output_dense(f.graph);
    if (!decoder) return;
    const double share = double(decoder->flops) / double(f.graph.total_flops);
    std::string sentence = fmt(
        "The decoder (%s, %lld -> %lld words%s) is %.0f%% of the model's forward FLOPs "
        "per token",
        decoder->path.c_str(), (long long)(decoder->in.dims.empty() ? 0 : decoder->in.dims.back()),
        (long long)decoder->spec.units, decoder->spec.tie_weights ? ", tied to the embedding" : "",
        100.0 * share);
    // The measured share of each profiled run, where there is one.
    for (std::size_t i = 0; i < group.size(); ++i)
        if (const auto t = layer_time_share(group[i], decoder->path))
            sentence +=
                fmt("; %.0f%% of %s's layer time", 100.0 * *t, name(group[i].policy).c_str());
    sentence += share >= 0.5 ? ": the step is mostly one large GEMM, the part 16-bit tensor "
                               "cores speed up most."
                             : ": the recurrent layers carry most of the work.";
    out.push_back(make("decoder_share", Severity::Info, -1, sentence));
}

// 15. The recurrence is sequential: each time step's GEMM (batch x hidden by hidden x
// 4 hidden) waits for the step before. At a small batch that GEMM is a few microseconds of
// tensor-core work, so launch and synchronisation latency, which precision does not
// shrink, set the LSTM's pace.
void rule_rnn_latency(const std::vector<RunFacts>& group, Reader reader, Out& out)
{
    for (std::size_t i = 0; i < group.size(); ++i) {
        const RunFacts& f = group[i];
        if (!ran_on_gpu(f) || !f.graph.input.sequence || f.batch <= 0) continue;
        for (const GraphLayer& gl : f.graph.layers) {
            if (gl.spec.type != LayerType::Lstm) continue;
            const double h = gl.spec.hidden;
            const double per_step = 2.0 * f.batch * h * 4.0 * h;
            if (per_step >= k_min_recurrent_flops) continue;
            int suggested = f.batch;
            while (2.0 * suggested * h * 4.0 * h < k_min_recurrent_flops && suggested < 4096)
                suggested *= 2;
            std::string sentence =
                fmt("%s: each of the %d sequential time steps of %s multiplies a %d x %.0f state "
                    "by the %.0f x %.0f recurrent weights, %.0f MFLOP: a few microseconds of "
                    "GPU work that must wait for the step before, so the recurrence is bound by "
                    "latency, which %s does not shorten",
                    name(f.policy).c_str(), f.bptt, gl.path.c_str(), f.batch, h, h, 4.0 * h,
                    per_step / 1e6, name(f.policy).c_str());
            if (const auto t = layer_time_share(f, gl.path))
                sentence += fmt(" (it took %.0f%% of the layers' time)", 100.0 * *t);
            sentence += ".";
            Explanation e =
                make("rnn_latency", Severity::Advice, int(i), sentence,
                     reader == Reader::App
                         ? fmt("set Batch size to %d in the run panel: each step does %dx the work "
                               "in about the same time",
                               suggested, suggested / f.batch)
                         : fmt("try --batch %d: each step does %dx the work in about the same time",
                               suggested, suggested / f.batch));
            e.fix = Fix::set_batch(suggested);
            out.push_back(std::move(e));
            break; // one per run: the first LSTM layer stands for the rest
        }
    }
}

// 16. Master weights under mixed_bf16: what the split ("bf16_split") saves, or would.
// Parameters with a bf16 copy: every layer's but batch norm's (fp32, no copy) and those
// of layers kept in float32; a residual counts through its body and shortcut.
std::int64_t copied_params(const Graph& g)
{
    std::int64_t n = 0;
    for_each_layer(g.layers, [&](const GraphLayer& l) {
        if (l.spec.type != LayerType::Residual && l.spec.type != LayerType::BatchNorm &&
            !l.spec.force_fp32)
            n += l.params;
    });
    return n;
}

double mib(double bytes) { return bytes / (1024.0 * 1024.0); }

void rule_master_weights(const std::vector<RunFacts>& group, Reader reader, Out& out)
{
    const bool any_split = std::any_of(group.begin(), group.end(), [](const RunFacts& f) {
        return f.master_weights == MasterWeights::Bf16Split;
    });
    for (std::size_t i = 0; i < group.size(); ++i) {
        const RunFacts& f = group[i];
        if (!master_weights_apply(MasterWeights::Bf16Split, f.policy)) continue;
        const std::int64_t n = copied_params(f.graph);
        if (n == 0) continue;
        const double saved = mib(2.0 * double(n));
        if (f.master_weights == MasterWeights::Bf16Split) {
            std::string s =
                fmt("%s holds the fp32 masters of its %lld bf16 parameters split: the bf16 weight "
                    "the GEMMs read plus an int16 remainder, together exactly the fp32 value, so "
                    "every update is the fp32-master update bit for bit. 4 bytes a parameter "
                    "instead of 6 (%.1f MiB less), and each update moves 2 bytes a parameter less "
                    "(20 instead of 22 with SGD momentum): no bf16 copy is written.",
                    name(f.policy).c_str(), static_cast<long long>(n), saved);
            if (f.device_bytes > 0) {
                s += fmt(" The run allocated %.1f MiB on the device", mib(double(f.device_bytes)));
                for (const RunFacts& o : group)
                    if (o.policy == f.policy && o.master_weights == MasterWeights::FP32 &&
                        o.device_bytes > 0)
                        s += fmt(" (with fp32 masters: %.1f MiB)", mib(double(o.device_bytes)));
                s += ".";
            }
            out.push_back(make("master_weights", Severity::Info, int(i), s));
        } else if (!any_split) {
            std::string s =
                fmt("%s keeps an fp32 master beside each of its %lld bf16 parameters: 6 bytes a "
                    "parameter, and the copy rewritten every step. Split masters hold the same "
                    "fp32 values exactly in 4 bytes (%.1f MiB less) and write no copy.",
                    name(f.policy).c_str(), static_cast<long long>(n), saved);
            if (f.device_bytes > 0)
                s += fmt(" The run allocated %.1f MiB on the device.", mib(double(f.device_bytes)));
            out.push_back(make("master_weights", Severity::Info, int(i), s,
                               reader == Reader::App
                                   ? "check \"Split bf16 master weights\" in the run panel"
                                   : "add --master-weights bf16_split (run config: \"optimizer\": "
                                     "{\"master_weights\": \"bf16_split\"})"));
        }
    }
}

// 10. Launch- or overhead-bound: the GPU idle much of the step (needs a profile).
void rule_launch_bound(const std::vector<RunFacts>& group, Out& out)
{
    for (std::size_t i = 0; i < group.size(); ++i) {
        const RunFacts& f = group[i];
        if (!ran_on_gpu(f) || !f.gpu_busy_fraction || *f.gpu_busy_fraction >= k_min_gpu_busy)
            continue;
        out.push_back(make("launch_bound", Severity::Advice, int(i),
                           fmt("%s kept the GPU busy only %.0f%% of each step: the rest is "
                               "kernel launches and host work, which precision does not "
                               "speed up.",
                               name(f.policy).c_str(), 100.0 * *f.gpu_busy_fraction),
                           "a larger batch or fewer, wider layers give each launch more work"));
    }
}

double phase(const StepProfile& p, StepPhase ph) { return p.phase_ms[std::size_t(ph)]; }

// 11. The input pipeline dominating the step (needs a profile).
void rule_input_bound(const std::vector<RunFacts>& group, Out& out)
{
    for (std::size_t i = 0; i < group.size(); ++i) {
        const RunFacts& f = group[i];
        if (!f.profile || !(f.profile->device_ms > 0)) continue;
        const double input = phase(*f.profile, StepPhase::Input);
        const double share = input / f.profile->device_ms;
        if (share < k_input_share) continue;
        out.push_back(make("input_bound", Severity::Advice, int(i),
                           fmt("%s spent %.3f ms of its %.3f ms step (%.0f%%) gathering, "
                               "augmenting and normalising the batch: the input pipeline, "
                               "not the layers, sets the pace, and precision does not "
                               "change it.",
                               name(f.policy).c_str(), input, f.profile->device_ms, 100.0 * share),
                           "turn off augmentation to measure the layers alone, or give the "
                           "model more work per sample"));
    }
}

// 12. Fixed costs: precision sped up the layers, but the phases it does not touch (the
// input, the loss-scale check, the optimizer's pass over every parameter) are a large
// share of the mixed step, so the whole step gains far less (needs two profiles).
void rule_fixed_costs(const std::vector<RunFacts>& group, Out& out)
{
    for (std::size_t i = 0; i < group.size(); ++i) {
        const RunFacts& f = group[i];
        const int b = baseline_of(group, i);
        const RunFacts& base = group[std::size_t(b)];
        if (int(i) == b || !is_16bit(f.policy) || !f.profile || !base.profile) continue;
        const StepProfile& p = *f.profile;
        const StepProfile& q = *base.profile;
        const double layers = phase(p, StepPhase::Forward) + phase(p, StepPhase::Backward) +
                              phase(p, StepPhase::Loss);
        const double base_layers = phase(q, StepPhase::Forward) + phase(q, StepPhase::Backward) +
                                   phase(q, StepPhase::Loss);
        const double fixed = phase(p, StepPhase::Input) + phase(p, StepPhase::LossScaling) +
                             phase(p, StepPhase::Optimizer);
        if (!(layers > 0) || !(p.device_ms > 0) || !(q.device_ms > 0)) continue;
        const double layer_speedup = base_layers / layers;
        const double share = fixed / p.device_ms;
        if (layer_speedup < k_layers_faster || share < k_fixed_share) continue;
        const double bound = q.device_ms / fixed; // the step speedup if layers cost nothing
        out.push_back(
            make("fixed_costs", Severity::Info, int(i),
                 fmt("%s ran the layers %.1fx faster than %s (%.3f -> %.3f ms), but the input, the "
                     "loss-scale check and the optimizer's pass over every parameter take %.3f ms "
                     "(%.0f%% of its step) whatever the precision, so the whole step is only %.2fx "
                     "faster (%.3f -> %.3f ms) and could be at most %.1fx faster.",
                     name(f.policy).c_str(), layer_speedup, name(base.policy).c_str(), base_layers,
                     layers, fixed, 100.0 * share, q.device_ms / p.device_ms, q.device_ms,
                     p.device_ms, bound),
                 "a larger batch gives the layers more of the step (the optimizer's cost is per "
                 "parameter, not per sample)"));
    }
}

} // namespace

Fix Fix::set_units(std::string path, int units)
{
    Fix f;
    f.kind = FixKind::SetUnits;
    f.path = std::move(path);
    f.units = units;
    return f;
}

Fix Fix::set_dtype_float32(std::string path)
{
    Fix f;
    f.kind = FixKind::SetDtypeFloat32;
    f.path = std::move(path);
    return f;
}

Fix Fix::set_activation(std::string path, Activation activation)
{
    Fix f;
    f.kind = FixKind::SetActivation;
    f.path = std::move(path);
    f.activation = activation;
    return f;
}

Fix Fix::set_policy(Policy policy)
{
    Fix f;
    f.kind = FixKind::SetPolicy;
    f.policy = policy;
    return f;
}

Fix Fix::set_batch(int batch)
{
    Fix f;
    f.kind = FixKind::SetBatch;
    f.batch = batch;
    return f;
}

bool is_model_fix(FixKind k)
{
    switch (k) {
    case FixKind::SetUnits:
    case FixKind::SetDtypeFloat32:
    case FixKind::SetActivation: return true;
    case FixKind::SetPolicy:
    case FixKind::SetBatch: return false;
    }
    return false;
}

std::string_view fix_kind_name(FixKind k)
{
    switch (k) {
    case FixKind::SetUnits: return "set_units";
    case FixKind::SetDtypeFloat32: return "set_dtype_float32";
    case FixKind::SetActivation: return "set_activation";
    case FixKind::SetPolicy: return "set_policy";
    case FixKind::SetBatch: return "set_batch";
    }
    return "";
}

std::string fix_value_text(const Fix& f)
{
    switch (f.kind) {
    case FixKind::SetUnits: return std::to_string(f.units);
    case FixKind::SetDtypeFloat32: return "";
    case FixKind::SetActivation: return std::string(activation_name(f.activation));
    case FixKind::SetPolicy: return std::string(policy_name(f.policy));
    case FixKind::SetBatch: return std::to_string(f.batch);
    }
    return "";
}

std::string_view severity_name(Explanation::Severity s)
{
    switch (s) {
    case Severity::Info: return "info";
    case Severity::Advice: return "advice";
    case Severity::Warning: return "warning";
    }
    return "info";
}

void record_step(RunFacts& facts, const StepMetrics& step)
{
    facts.train_loss.push_back(step.loss);
    if (facts.scale_history.empty() || facts.scale_history.back().second != step.loss_scale)
        facts.scale_history.emplace_back(step.step, step.loss_scale);
    facts.final_train_accuracy = step.accuracy;
}

void record_event(RunFacts& facts, const RunEvent& event)
{
    if (event.kind != RunEvent::Kind::Warning) return;
    // Logs and app files written before the jump carried its facts: by the message's prefix.
    if (event.fp8_amax_jump || std::string_view(event.message).starts_with(k_fp8_amax_jump_prefix))
        facts.fp8_amax_jumps.push_back(event);
}

std::vector<Explanation> explain(const std::vector<RunFacts>& group, Reader reader)
{
    Out out;
    if (group.empty()) return out;
    // The device first: on the CPU it says how little the speed verdict means.
    rule_device(group, reader, out);
    rule_speed(group, out);
    rule_tf32_close(group, out);
    rule_scale(group, out);
    rule_fp16_stall(group, reader, out);
    rule_output_fp32(group, reader, out);
    rule_sigmoid(group, reader, out);
    rule_dims(group, reader, out);
    rule_small_batch(group, reader, out);
    rule_launch_bound(group, out);
    rule_input_bound(group, out);
    rule_fixed_costs(group, out);
    rule_rnn_dims(group, reader, out);
    rule_decoder_share(group, out);
    rule_rnn_latency(group, reader, out);
    rule_master_weights(group, reader, out);
    explain_numerics(group, reader, out);
    explain_fp8(group, reader, out);
    return out;
}

} // namespace mixlab
