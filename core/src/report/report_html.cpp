// The explain report as one HTML5 page: tables for the environment, model, configs,
// results, phases and layers; the charts from report_svg.cpp inline; the explanations.
// Times are in ms throughout, throughput in samples/s, rates in TFLOP/s and GB/s.
#include "base/grouped_text.h"
#include "base/utc_text.h"
#include "mixlab/report.h"

#include "report/report_heatmap.h"
#include "report/report_svg.h"

#include "mixlab/step_time.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>

namespace mixlab {
namespace {

using report::escape_html;
using report::fixed;

std::string esc(std::string_view s) { return escape_html(s); }

std::string now_utc() { return utc_now_text("%Y-%m-%d %H:%M UTC"); }

std::string flops_text(double flops)
{
    if (flops >= 1e9) return fixed(flops / 1e9, 2) + " GFLOP";
    if (flops >= 1e6) return fixed(flops / 1e6, 2) + " MFLOP";
    return fixed(flops / 1e3, 2) + " kFLOP";
}

std::string ms_text(double ms) { return ms > 0 ? fixed(ms, 3) : "n/a"; }

std::string or_dash(const std::string& s) { return s.empty() ? "-" : s; }

// The run the speedups are against: RunFacts::baseline, else the first fp32 run, else 0.
int baseline_of(const std::vector<RunFacts>& runs)
{
    if (runs.empty()) return -1;
    const int b = runs.front().baseline;
    if (b >= 0 && std::size_t(b) < runs.size()) return b;
    for (std::size_t i = 0; i < runs.size(); ++i)
        if (runs[i].policy == Policy::FP32) return int(i);
    return 0;
}

struct Table {
    std::string html;
    // No header: a key/value table. wide: the page's full width (tables of numbers).
    explicit Table(const std::vector<std::string>& header, bool wide = true)
    {
        html = std::string("<table border=\"1\" cellspacing=\"0\" cellpadding=\"3\"") +
               (wide ? " width=\"100%\"" : "") + ">\n";
        if (header.empty()) return;
        html += "<tr>";
        for (const std::string& h : header) html += "<th>" + esc(h) + "</th>";
        html += "</tr>\n";
    }
    // Cells are escaped. The first `text_columns` (and the last when last_text) are text,
    // the others numbers, right-aligned and never wrapped; so are the first `names`
    // columns (run, policy, layer: a wrapped "mixed_fp16" reads as two words).
    void row(const std::vector<std::string>& cells, std::size_t text_columns = 1,
             bool last_text = false, std::size_t names = 1)
    {
        html += "<tr>";
        for (std::size_t i = 0; i < cells.size(); ++i) {
            const bool text = i < text_columns || (last_text && i + 1 == cells.size());
            const char* open = !text       ? "<td class=\"num\" align=\"right\">"
                               : i < names ? "<td class=\"name\">"
                                           : "<td>";
            html += open + esc(cells[i]) + "</td>";
        }
        html += "</tr>\n";
    }
    std::string done() const { return html + "</table>\n"; }
};

// Shortest form of a config value: 0.01, 65536, 0.9.
std::string num(double v)
{
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", v);
    return buf;
}

std::string figure(const std::string& svg)
{
    return svg.empty() ? "" : "<figure class=\"chart\">\n" + svg + "</figure>\n";
}

std::string environment_section(const ReportInput& in)
{
    const Environment& e = in.environment;
    Table t({}, false);
    auto kv = [&](const std::string& k, const std::string& v) { t.row({k, or_dash(v)}, 2); };
    kv("Backend", std::string(backend_kind_name(e.backend)));
    kv("Device", e.device_name);
    if (e.backend == BackendKind::Cuda) {
        kv("Compute capability", e.compute_capability);
        kv("Device memory", fixed(double(e.device_memory_bytes) / double(1ll << 30), 1) + " GiB");
        std::string tc = e.tensor_cores ? "fp16" : "none";
        if (e.bf16) tc += ", bf16";
        if (e.tf32) tc += ", tf32";
        kv("Tensor cores", tc);
    }
    // The CPU backend reports "cpu" for every library version: nothing to show.
    if (e.backend != BackendKind::Cpu) {
        kv("Driver", e.driver_version);
        kv("CUDA runtime", e.runtime_version);
        kv("cuBLAS", e.cublas_version);
        kv("cuDNN", e.cudnn_version);
    }
    std::string os = e.os;
    if (!e.os_release.empty()) os += " (" + e.os_release + ")";
    kv("Host", os);
    kv("CPU", e.cpu_model + (e.cpu_threads > 0 ? ", " + std::to_string(e.cpu_threads) + " threads"
                                               : std::string()));
    kv("Compiler", e.compiler);
    kv("MixLab", e.mixlab_version + (e.built_with_cuda ? " (built with CUDA)" : ""));
    if (in.ceilings) {
        const Ceilings& c = *in.ceilings;
        auto tf = [](double v) { return v > 0 ? fixed(v, 1) : std::string("-"); };
        kv("Measured ceilings",
           "GEMM TFLOP/s: fp32 " + tf(c.fp32_tflops) + ", tf32 " + tf(c.tf32_tflops) + ", fp16 " +
               tf(c.fp16_tflops) + ", bf16 " + tf(c.bf16_tflops) + ", fp8 " + tf(c.fp8_tflops) +
               "; copy " + fixed(c.copy_gbs, 0) + " GB/s (measured " + c.measured_at + ")");
    }
    return "<h2>Environment</h2>\n" + t.done();
}

std::string model_section(const ReportInput& in)
{
    if (in.runs.empty()) return "";
    const Graph& g = in.runs.front().graph;
    const std::string name = in.model_name.empty() ? g.name : in.model_name;
    Table t({}, false);
    auto kv = [&](const std::string& k, const std::string& v) { t.row({k, or_dash(v)}, 2); };
    kv("Model", name);
    if (!in.dataset.empty()) kv("Dataset", in.dataset);
    kv("Input", g.input.to_string() + ", " + std::to_string(g.classes) + " classes");
    kv("Top-level layers", std::to_string(g.layers.size()));
    kv("Parameters", grouped_text(g.total_params));
    kv("Forward FLOPs per sample", flops_text(double(g.total_flops)));
    std::string s = "<h2>Model</h2>\n" + t.done();
    if (!g.warnings.empty()) {
        s += "<ul>\n";
        for (const std::string& w : g.warnings) s += "<li>" + esc(w) + "</li>\n";
        s += "</ul>\n";
    }
    return s;
}

std::string optimizer_text(const OptimizerConfig& o)
{
    std::string s = std::string(optimizer_name(o.type)) + ", lr " + num(o.lr);
    if (o.type == OptimizerType::SGD) {
        s += ", momentum " + num(o.momentum);
        if (o.nesterov) s += " (Nesterov)";
    } else {
        s += ", betas " + num(o.beta1) + "/" + num(o.beta2);
    }
    if (o.weight_decay > 0) s += ", weight decay " + num(o.weight_decay);
    if (o.clip_norm > 0) s += ", gradients clipped to norm " + num(o.clip_norm);
    return s;
}

std::string loss_scale_text(LossScaleMode mode, const RunConfig* c)
{
    std::string s(loss_scale_mode_name(mode));
    if (c && mode == LossScaleMode::Dynamic)
        s += ", init " + num(c->loss_scale.init) + ", x" + num(c->loss_scale.growth_factor) +
             " per " + std::to_string(c->loss_scale.growth_interval) + " clean steps, x" +
             num(c->loss_scale.backoff_factor) + " on overflow";
    else if (c && mode == LossScaleMode::Static)
        s += ", " + num(c->loss_scale.init);
    return s;
}

std::string config_section(const ReportInput& in, const std::vector<std::string>& names)
{
    const bool have = in.configs.size() == in.runs.size();
    // A compare group shares seed and graph mode: said once below the table, not per row.
    bool shared = have && !in.configs.empty();
    for (const RunConfig& c : in.configs)
        shared = shared && c.seed == in.configs.front().seed &&
                 c.cuda_graph == in.configs.front().cuda_graph;
    std::vector<std::string> header = {"Run", "Policy", "Batch", "Length", "Loss scaling"};
    if (have) header.push_back("Optimizer");
    if (have && !shared) {
        header.push_back("Seed");
        header.push_back("CUDA graph");
    }
    Table t(header);
    for (std::size_t i = 0; i < in.runs.size(); ++i) {
        const RunFacts& f = in.runs[i];
        const RunConfig* c = have ? &in.configs[i] : nullptr;
        std::string length = std::to_string(f.summary.steps) + " steps";
        if (c)
            length = c->steps > 0 ? std::to_string(c->steps) + " steps"
                                  : std::to_string(c->epochs) + " epochs";
        std::vector<std::string> cells = {names[i], std::string(policy_name(f.policy)),
                                          std::to_string(f.batch), length,
                                          loss_scale_text(f.loss_scale_mode, c)};
        if (c) cells.push_back(optimizer_text(c->optimizer));
        if (c && !shared) {
            cells.push_back(std::to_string(c->seed));
            cells.push_back(c->cuda_graph ? "on" : "off");
        }
        t.row(cells, cells.size(), false, 2);
    }
    std::string s = "<h2>Configuration</h2>\n" + t.done();
    if (shared)
        s += "<p class=\"note\">Every run: seed " + std::to_string(in.configs.front().seed) +
             "; CUDA graph replay " + (in.configs.front().cuda_graph ? "on" : "off") +
             " (CUDA backend).</p>\n";
    return s;
}

std::string results_section(const ReportInput& in, const std::vector<std::string>& names,
                            int baseline)
{
    Table t({"Run", "Step ms", "Speedup", "Samples/s", "Skipped", "Loss scale", "Train loss",
             "Test acc."});
    const double base = baseline >= 0 ? in.runs[std::size_t(baseline)].summary.median_step_ms : 0;
    for (std::size_t i = 0; i < in.runs.size(); ++i) {
        const RunFacts& f = in.runs[i];
        const RunSummary& s = f.summary;
        std::string speedup_text = "n/a";
        if (int(i) == baseline)
            speedup_text = "baseline";
        else if (const double x = speedup(base, s.median_step_ms); x > 0)
            speedup_text = fixed(x, 2) + "x";
        t.row({names[i], ms_text(s.median_step_ms), speedup_text,
               s.median_step_ms > 0 ? fixed(1000.0 * f.batch / s.median_step_ms, 0) : "n/a",
               std::to_string(s.skipped_steps), fixed(s.final_loss_scale, 0),
               fixed(s.final_train_loss, 4),
               s.final_test_accuracy ? fixed(100.0 * *s.final_test_accuracy, 1) + "%" : "\u2014"});
    }
    return "<h2>Results</h2>\n" + t.done() +
           "<p class=\"note\">Step ms: " + esc(step_time_definition()) +
           ". Speedup: " + esc(speedup_definition()) +
           ". Samples/s: batch over the step time. Loss scale and train loss: at the last step; "
           "test accuracy: at the last evaluation (&mdash;: the run never evaluated).</p>\n";
}

std::string phases_section(const ReportInput& in, const std::vector<std::string>& names)
{
    std::string s = "<h2>Where the time goes</h2>\n";
    const bool all = std::all_of(in.runs.begin(), in.runs.end(),
                                 [](const RunFacts& f) { return f.profile.has_value(); });
    if (in.runs.empty() || !all) {
        return s + "<p>No step profile: the runs were not profiled (mixlab-cli explain "
                   "profiles each run after its timed steps; --profile-steps 0 turns it "
                   "off).</p>\n";
    }
    s += figure(report::phase_breakdown_svg(in.runs, names));
    std::vector<std::string> header = {"Phase (ms)"};
    for (const std::string& n : names) header.push_back(n);
    Table t(header, false);
    auto row = [&](const std::string& label, auto value, bool share) {
        std::vector<std::string> cells = {label};
        for (const RunFacts& f : in.runs) {
            const StepProfile& p = *f.profile;
            const double v = value(p);
            std::string cell = fixed(v, 3);
            if (share && p.device_ms > 0) cell += " (" + fixed(100.0 * v / p.device_ms, 0) + "%)";
            cells.push_back(cell);
        }
        t.row(cells);
    };
    for (int ph = 0; ph < k_step_phases; ++ph)
        row(
            std::string(step_phase_name(StepPhase(ph))),
            [ph](const StepProfile& p) { return p.phase_ms[std::size_t(ph)]; }, true);
    row(
        "sum of phases", [](const StepProfile& p) { return p.device_ms; }, false);
    row(
        "profiled step", [](const StepProfile& p) { return p.step_ms; }, false);
    row(
        "wall time per step", [](const StepProfile& p) { return p.wall_ms; }, false);
    row(
        "host/launch overhead", [](const StepProfile& p) { return p.overhead_ms; }, false);
    const bool gpu = std::all_of(in.runs.begin(), in.runs.end(), ran_on_gpu);
    if (gpu) {
        std::vector<std::string> busy = {"GPU busy"};
        for (const RunFacts& f : in.runs)
            busy.push_back(fixed(100.0 * f.profile->gpu_busy_fraction, 0) + "%");
        t.row(busy);
    }
    const StepProfile& first = *in.runs.front().profile;
    s += t.done();
    s += "<p class=\"note\">Device time per phase, mean of a " + std::to_string(first.steps) +
         "-step profiling pass after the timed steps, run " +
         (first.replayed ? "as the timed steps ran (one CUDA graph)" : "op by op") +
         "; sum of phases: each phase timed alone, added up. Profiled step: median device time "
         "of as many unmarked steps run back to back; host/launch overhead: their wall time "
         "minus device time. Neither is the step time of the results (" +
         esc(step_time_definition()) + ").</p>\n";
    return s;
}

std::string tensor_core_text(const LayerTime& l)
{
    if (!l.is_gemm) return "-";
    if (l.tensor_cores) return "yes";
    return l.tensor_core_note.empty() ? "no" : "no: " + l.tensor_core_note;
}

std::string layers_section(const ReportInput& in, const std::vector<std::string>& names)
{
    constexpr int k_top = 20;
    std::string s;
    for (std::size_t r = 0; r < in.runs.size(); ++r) {
        const RunFacts& f = in.runs[r];
        if (!f.profile) continue;
        std::vector<const LayerTime*> order;
        double total = 0;
        for (const LayerTime& l : f.profile->layers) {
            order.push_back(&l);
            total += l.forward_ms + l.backward_ms;
        }
        std::stable_sort(order.begin(), order.end(), [](const LayerTime* a, const LayerTime* b) {
            return a->forward_ms + a->backward_ms > b->forward_ms + b->backward_ms;
        });
        const double tflops_ceiling = in.ceilings ? policy_tflops(*in.ceilings, f.policy) : 0;
        const bool floors = in.ceilings && (tflops_ceiling > 0 || in.ceilings->copy_gbs > 0);
        std::vector<std::string> header = {"Layer", "Type",  "Fwd ms",  "Bwd ms",
                                           "Share", "GFLOP", "TFLOP/s", "GB/s"};
        if (floors) header.push_back("Roofline floor ms");
        header.push_back("Tensor cores");
        Table t(header);
        int shown = 0;
        for (const LayerTime* l : order) {
            if (shown++ == k_top) break;
            const double ms = l->forward_ms + l->backward_ms;
            // Rates over a few microseconds are event granularity, not throughput.
            const bool timed = ms >= 0.005;
            std::vector<std::string> cells = {
                l->path,
                l->type,
                fixed(l->forward_ms, 3),
                fixed(l->backward_ms, 3),
                total > 0 ? fixed(100.0 * ms / total, 1) + "%" : "-",
                l->flops > 0 ? fixed(l->flops / 1e9, 3) : "-",
                timed && l->flops > 0 ? fixed(l->flops / (ms * 1e9), 2) : "-",
                timed ? fixed(l->bytes / (ms * 1e6), 0) : "-"};
            if (floors)
                cells.push_back(fixed(
                    roofline_floor_ms(l->flops, l->bytes, tflops_ceiling, in.ceilings->copy_gbs),
                    3));
            cells.push_back(tensor_core_text(*l));
            t.row(cells, 2, true, 2);
        }
        s += "<h3>" + esc(names[r]) + "</h3>\n" + t.done();
        if (order.size() > std::size_t(k_top))
            s += "<p class=\"note\">" + std::to_string(order.size() - k_top) +
                 " more layers not shown.</p>\n";
    }
    if (s.empty()) return "";
    return "<h2>Layers by device time</h2>\n<p class=\"note\">Top-level layers (a residual "
           "block counts once), top " +
           std::to_string(k_top) +
           " by forward plus backward device time; FLOPs and bytes are per step (forward "
           "and backward, bytes estimated).</p>\n" +
           s;
}

// Per run with numerics: the key once, then one heatmap figure per layer (a compact grid:
// a row of four small panels per layer).
std::string numerics_section(const ReportInput& in, const std::vector<std::string>& names)
{
    std::string runs;
    bool fp8 = false;
    for (std::size_t r = 0; r < in.runs.size(); ++r) {
        const std::vector<NumericsSample>& samples = in.runs[r].numerics;
        if (samples.empty()) continue;
        const bool fp8_run = in.runs[r].policy == Policy::MixedFP8;
        fp8 = fp8 || fp8_run;
        std::vector<std::pair<std::string, std::string>> layers; // path, type; first seen
        for (const NumericsSample& s : samples)
            for (const LayerNumerics& l : s.layers)
                if (std::none_of(layers.begin(), layers.end(),
                                 [&](const auto& x) { return x.first == l.path; }))
                    layers.emplace_back(l.path, l.type);
        runs += "<h3>" + esc(names[r]) + ": " + std::to_string(samples.size()) +
                " samples, steps " + std::to_string(samples.front().step) + "-" +
                std::to_string(samples.back().step) + "</h3>\n";
        for (const auto& [path, type] : layers)
            runs += figure(report::numerics_heatmap_svg(
                samples, path, names[r] + ": " + path + " (" + type + ")", fp8_run));
    }
    if (runs.empty()) return "";
    return "<h2>Numerics</h2>\n<p class=\"note\">Where each layer's values sit on the number line "
           "(mixlab-cli --numerics-every N): per sampled step (x; at most " +
           std::to_string(report::k_heatmap_columns) +
           " columns, more samples added together), the share of the values in each binade "
           "2^e..2^(e+1) (y), and of zeros in the row below. Gradients as applied (each step's "
           "counts unscaled by its loss scale); updates as d = binade(update) - "
           "binade(weight), the row below holding updates lost already. Lines: fp16 solid, "
           "bf16 dashed; for values, top to bottom, the overflow line at the largest finite "
           "value, the smallest normal, and the flush line below which values fall under half "
           "the smallest subnormal (for gradients the band of the scaled values the run "
           "computed, moved by each step's loss scale); for updates, the line at or below which "
           "weights in that format lose the update (d &lt;= -(mantissa + 2))." +
           (fp8 ? " A mixed_fp8 run also has fp8's band: E4M3 over weights and activations, "
                  "E5M2 over gradients (the formats its recipe gives each kind); fp8 is used with "
                  "a scale per "
                  "tensor, so the band's top sits at each column's largest value, where "
                  "scaling by the tensor's amax puts it."
                : "") +
           "</p>\n" + figure(report::numerics_legend_svg(fp8)) + runs;
}

std::string explanations_section(const ReportInput& in, const std::vector<std::string>& names)
{
    std::string s = "<h2>Explanation</h2>\n";
    if (in.explanations.empty()) return s + "<p>Nothing to explain: no rule fired.</p>\n";
    s += "<ul class=\"explain\">\n";
    for (const Explanation& e : in.explanations) {
        const std::string sev(severity_name(e.severity));
        s += "<li class=\"" + sev + "\"><b>[" + esc(sev) + "]</b> ";
        if (e.run >= 0 && std::size_t(e.run) < names.size())
            s += "<i>" + esc(names[std::size_t(e.run)]) + ":</i> ";
        s += esc(e.sentence);
        if (!e.suggestion.empty()) s += "<br/>&rarr; " + esc(e.suggestion);
        s += "</li>\n";
    }
    return s + "</ul>\n";
}

constexpr const char* k_style = R"(<style>
/* On html, not body: Qt's QTextDocument (the PDF export) skips it, keeping the page's margins. */
html { max-width: 60em; margin: 1.5em auto; padding: 0 1em; }
body { font-family: "DejaVu Sans", Helvetica, Arial, sans-serif; font-size: 10pt; color: #222; }
h1 { font-size: 18pt; margin-bottom: 0.2em; }
h2 { font-size: 13pt; margin-top: 1.4em; border-bottom: 1px solid #ccc; }
h3 { font-size: 11pt; }
table { border-collapse: collapse; margin: 0.4em 0; font-size: 9pt; }
th, td { border: 1px solid #bbb; padding: 3px 6px; }
th { background: #f0f0f0; text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
th, td.name { white-space: nowrap; }
p.meta, p.note { color: #555; font-size: 9pt; }
figure.chart { margin: 0.8em 0; }
ul.explain li { margin-bottom: 0.5em; }
li.warning b { color: #b00020; } li.advice b { color: #a05a00; } li.info b { color: #1f5f9f; }
</style>
)";

} // namespace

std::string explain_report_html(const ReportInput& in)
{
    std::vector<std::string> names;
    for (std::size_t i = 0; i < in.runs.size(); ++i)
        names.push_back(i < in.run_names.size() && !in.run_names[i].empty()
                            ? in.run_names[i]
                            : std::string(policy_name(in.runs[i].policy)));
    const int baseline = baseline_of(in.runs);
    const std::string model =
        in.model_name.empty() && !in.runs.empty() ? in.runs.front().graph.name : in.model_name;
    const std::string title = !in.title.empty() ? in.title : "MixLab report: " + model;
    const std::string date = in.created_at.empty() ? now_utc() : in.created_at;

    std::string h = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n";
    h += "<title>" + esc(title) + "</title>\n";
    h += k_style;
    h += "</head>\n<body>\n";
    h += "<h1>" + esc(title) + "</h1>\n";
    h += "<p class=\"meta\">" + esc(date) + " &middot; MixLab " +
         esc(in.environment.mixlab_version) + " &middot; " + std::to_string(in.runs.size()) +
         " run(s)";
    if (baseline >= 0) h += ", speed against " + esc(names[std::size_t(baseline)]);
    h += "</p>\n";
    h += environment_section(in);
    h += model_section(in);
    h += config_section(in, names);
    h += results_section(in, names, baseline);
    h += "<h2>Charts</h2>\n";
    h += figure(report::loss_curves_svg(in.runs, names));
    h += figure(report::step_time_svg(in.runs, names, baseline));
    h += phases_section(in, names);
    h += layers_section(in, names);
    h += numerics_section(in, names);
    h += explanations_section(in, names);
    h += "</body>\n</html>\n";
    return h;
}

} // namespace mixlab
