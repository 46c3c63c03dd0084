// `mixlab-cli explain`: trains a compare group in lockstep (as compare does), records
// each run's losses and loss-scale changes, and says why precision helped or not.
#include "commands.h"

#include "args.h"
#include "compare_group.h"
#include "train_options.h"

#include "mixlab/ceilings.h"
#include "mixlab/environment.h"
#include "mixlab/error.h"
#include "mixlab/explain.h"
#include "mixlab/report.h"
#include "mixlab/run_log.h"
#include "mixlab/step_time.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <vector>

namespace mixlab::cli {
namespace {

constexpr const char* k_default_policies = "fp32,mixed_fp16";
constexpr std::int64_t k_default_steps = 200;

class FactsRecorder : public MetricsSink {
public:
    FactsRecorder(std::vector<RunFacts>& facts, MetricsSink& next) : m_facts(facts), m_next(next) {}

    void on_step(int run, const StepMetrics& m) override
    {
        if (run >= 0 && std::size_t(run) < m_facts.size())
            record_step(m_facts[std::size_t(run)], m);
        m_next.on_step(run, m);
    }
    void on_epoch(int run, const EpochMetrics& m) override { m_next.on_epoch(run, m); }
    void on_event(int run, const RunEvent& e) override
    {
        if (run >= 0 && std::size_t(run) < m_facts.size())
            record_event(m_facts[std::size_t(run)], e);
        m_next.on_event(run, e);
    }
    void on_numerics(int run, const NumericsSample& sample) override
    {
        if (run >= 0 && std::size_t(run) < m_facts.size())
            m_facts[std::size_t(run)].numerics.push_back(sample);
        m_next.on_numerics(run, sample);
    }

private:
    std::vector<RunFacts>& m_facts;
    MetricsSink& m_next;
};

std::string speedup_text(const RunFacts& run, const RunFacts& base)
{
    const double x = speedup(base.summary.median_step_ms, run.summary.median_step_ms);
    if (!(x > 0)) return "n/a";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2fx", x);
    return buf;
}

// Phases side by side per policy, then how they add up against the measured step.
void print_phases(const std::vector<RunFacts>& facts)
{
    if (facts.empty() || !facts.front().profile) return;
    const StepProfile& first = *facts.front().profile;
    std::printf("Where the time goes: device ms per step, mean of a %d-step profiling pass "
                "run %s\n",
                first.steps,
                first.replayed ? "as the timed steps ran (one CUDA graph)"
                               : "op by op, as the timed steps ran");
    std::printf("%-22s", "phase");
    for (const RunFacts& f : facts)
        std::printf(" %18s", std::string(policy_name(f.policy)).c_str());
    std::printf("\n");
    auto row = [&](const char* label, auto value, bool share) {
        std::printf("%-22s", label);
        for (const RunFacts& f : facts) {
            const StepProfile& p = *f.profile;
            const double v = value(p);
            if (share && p.device_ms > 0)
                std::printf(" %11.3f (%3.0f%%)", v, 100.0 * v / p.device_ms);
            else
                std::printf(" %18.3f", v);
        }
        std::printf("\n");
    };
    for (int ph = 0; ph < k_step_phases; ++ph)
        row(
            std::string(step_phase_name(StepPhase(ph))).c_str(),
            [ph](const StepProfile& p) { return p.phase_ms[std::size_t(ph)]; }, true);
    row(
        "sum of phases", [](const StepProfile& p) { return p.device_ms; }, false);
    row(
        "profiled step", [](const StepProfile& p) { return p.step_ms; }, false);
    row(
        "wall time per step", [](const StepProfile& p) { return p.wall_ms; }, false);
    row(
        "host/launch overhead", [](const StepProfile& p) { return p.overhead_ms; }, false);
    const bool gpu = std::all_of(facts.begin(), facts.end(), ran_on_gpu);
    if (gpu) {
        std::printf("%-22s", "GPU busy");
        for (const RunFacts& f : facts)
            std::printf(" %17.0f%%", 100.0 * f.profile->gpu_busy_fraction);
        std::printf("\n");
    }
    std::printf("sum of phases: each phase timed alone between events, added up; profiled step: "
                "median device time of %d\nunmarked steps run back to back after them, whose "
                "host wall time gives the overhead (wall minus device time)%s.\nNeither is the "
                "step time above (%s).\n\n",
                first.steps, gpu ? " and the GPU's busy share" : "",
                step_time_definition().c_str());
}

std::string fixed(double v, int decimals)
{
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
    return buf;
}

std::string tensor_core_text(const LayerTime& l)
{
    if (!l.is_gemm) return "-";
    if (l.tensor_cores) return "yes";
    return l.tensor_core_note.empty() ? "no" : "no: " + l.tensor_core_note;
}

// The top-level layers of each run by device time (forward + backward).
// With the device's cached ceilings (mixlab-cli ceilings), each layer's roofline floor:
// its FLOPs at the policy's GEMM ceiling or its estimated bytes at the copy ceiling.
void print_layers(const std::vector<RunFacts>& facts, int top, const std::optional<Ceilings>& roof)
{
    for (const RunFacts& f : facts) {
        if (!f.profile) continue;
        const StepProfile& p = *f.profile;
        auto floor_ms = [&](const LayerTime& l) {
            return roofline_floor_ms(l.flops, l.bytes, policy_tflops(*roof, f.policy),
                                     roof->copy_gbs);
        };
        std::vector<const LayerTime*> order;
        double total = 0;
        for (const LayerTime& l : p.layers) {
            order.push_back(&l);
            total += l.forward_ms + l.backward_ms;
        }
        std::sort(order.begin(), order.end(), [](const LayerTime* a, const LayerTime* b) {
            return a->forward_ms + a->backward_ms > b->forward_ms + b->backward_ms;
        });
        std::printf("Layers of %s by device time (top-level; a residual block counts once):\n",
                    std::string(policy_name(f.policy)).c_str());
        std::printf("  %-28s %-10s %9s %9s %6s %9s %9s %9s  %s\n", "layer", "type", "fwd ms",
                    "bwd ms", "share", "TFLOP/s", "GB/s", "floor ms", "tensor cores");
        int shown = 0;
        for (const LayerTime* l : order) {
            if (shown++ == top) break;
            const double ms = l->forward_ms + l->backward_ms;
            // Rates over a few microseconds are event granularity, not throughput.
            const bool timed = ms >= 0.005;
            const std::string tflops =
                timed && l->flops > 0 ? fixed(l->flops / (ms * 1e9), 2) : "-";
            const std::string gbs = timed ? fixed(l->bytes / (ms * 1e6), 0) : "-";
            const std::string floor = roof ? fixed(floor_ms(*l), 3) : "-";
            std::printf("  %-28s %-10s %9.3f %9.3f %5.0f%% %9s %9s %9s  %s\n", l->path.c_str(),
                        l->type.c_str(), l->forward_ms, l->backward_ms,
                        total > 0 ? 100.0 * ms / total : 0.0, tflops.c_str(), gbs.c_str(),
                        floor.c_str(), tensor_core_text(*l).c_str());
        }
        if (roof) {
            double step_floor = 0;
            for (const LayerTime& l : p.layers) step_floor += floor_ms(l);
            std::printf("  layers' roofline floor %.3f ms against %.3f ms of forward + backward "
                        "(ceilings of %s, measured %s)\n",
                        step_floor,
                        p.phase_ms[std::size_t(StepPhase::Forward)] +
                            p.phase_ms[std::size_t(StepPhase::Backward)],
                        roof->device_name.c_str(), roof->measured_at.c_str());
        } else {
            std::printf("  (floor ms: run `mixlab-cli ceilings` once to measure this device's "
                        "ceilings)\n");
        }
        std::printf("\n");
    }
}

void print_report(const std::vector<RunFacts>& facts, const std::vector<Explanation>& ex,
                  const std::optional<Ceilings>& roof)
{
    std::printf("%-12s %12s %10s %10s %12s\n", "policy", "step ms", "speedup", "skipped",
                "loss scale");
    for (const RunFacts& f : facts) {
        std::printf(
            "%-12s %12s %10s %10lld %12g\n", std::string(policy_name(f.policy)).c_str(),
            format_ms(f.summary.median_step_ms).c_str(), speedup_text(f, facts.front()).c_str(),
            static_cast<long long>(f.summary.skipped_steps), double(f.summary.final_loss_scale));
    }
    std::printf("step ms: %s; speedup: %s (%s).\n\n", step_time_definition().c_str(),
                speedup_definition().c_str(),
                std::string(policy_name(facts.front().policy)).c_str());
    print_phases(facts);
    print_layers(facts, 12, roof);
    if (ex.empty()) std::printf("Nothing to explain: no rule fired.\n");
    for (const Explanation& e : ex) {
        std::printf("[%s] %s\n", std::string(severity_name(e.severity)).c_str(),
                    e.sentence.c_str());
        if (!e.suggestion.empty()) std::printf("    -> %s\n", e.suggestion.c_str());
    }
}

} // namespace

int cmd_explain(int argc, char** argv)
{
    ArgParser parser("mixlab-cli explain --model FILE [--policies P1,P2,...] [options]",
                     "Trains the model under several policies in lockstep, as compare does "
                     "(default --policies fp32,mixed_fp16,\n--steps 200), profiles each run "
                     "(device time per phase and per layer, host overhead), then says\nwith "
                     "the runs' own numbers why precision helped or not, and what to change.\n"
                     "Exit status: 0 done, 2 bad input, 1 a run failed, 130 stopped by Ctrl-C.");
    add_train_options(parser, true);
    parser.add_option("--json", "FILE",
                      "also write {runs (each with its profile), explanations} as JSON "
                      "(mixlab-explain/2) here");
    parser.add_option("--report", "FILE",
                      "also write a self-contained HTML report (config, environment, charts, "
                      "breakdown, explanation) here");
    parser.add_option("--profile-steps", "N",
                      "steps in each run's profiling pass after the timed steps (default 10; "
                      "0: no profile)");
    parser.parse(argc, argv);
    if (parser.help_requested()) {
        std::fputs(parser.help_text().c_str(), stdout);
        return 0;
    }

    const std::vector<Policy> policies = parser.has("--policies")
                                             ? parse_policies(parser)
                                             : std::vector<Policy>{Policy::FP32, Policy::MixedFP16};
    TrainInputs in = read_train_inputs(parser, true);
    if (!parser.has("--steps") && !parser.has("--epochs") && !parser.has("--run"))
        in.config.steps = k_default_steps;
    const auto json_path = parser.value("--json");
    if (json_path) check_output_path(*json_path, "--json");
    const auto report_path = parser.value("--report");
    if (report_path) check_output_path(*report_path, "--report");

    CompareGroup group(RunLog::Kind::Compare);
    group.configs = configs_for(in.config, policies);
    const std::vector<RunConfig>& configs = group.configs;
    std::vector<RunFacts> facts(configs.size());
    for (std::size_t i = 0; i < configs.size(); ++i) {
        facts[i].policy = configs[i].policy;
        facts[i].batch = configs[i].batch_size;
        facts[i].bptt = configs[i].bptt;
        facts[i].loss_scale_mode = effective_loss_scale_mode(configs[i]);
        facts[i].master_weights = configs[i].optimizer.master_weights;
        facts[i].baseline = 0; // --help says the first policy is the baseline, as in compare
    }
    FactsRecorder recorder(facts, group.log);
    group.profile_steps = 10;
    if (auto v = parser.integer("--profile-steps", 0, 1000)) group.profile_steps = int(*v);
    run_compare_group(group, in, &recorder, "explain");
    // The explanation compares runs with the baseline: it needs every run. The log holds
    // what they did up to the failure.
    if (report_failed_runs(group, "explain")) return 1;
    const std::vector<RunOutcome>& runs = group.outcome.runs;
    // Profiles side by side or none: Ctrl-C during the profiling pass leaves some runs
    // without one.
    const bool profiled = std::all_of(runs.begin(), runs.end(),
                                      [](const RunOutcome& r) { return r.profile.has_value(); });
    // Roofline floors and the fp8 rule's ceilings only when `mixlab-cli ceilings` measured
    // this device already: explain never starts a probe of its own.
    const std::optional<Ceilings> roof =
        cached_ceilings(group.facts.device, default_ceilings_cache_path());
    for (std::size_t i = 0; i < runs.size(); ++i) {
        if (!runs[i].profile_failure.empty())
            throw Error("profiling the " + std::string(policy_name(configs[i].policy)) +
                        " run failed: " + runs[i].profile_failure);
        facts[i].graph = group.facts.graph;
        facts[i].device = group.facts.device;
        facts[i].summary = runs[i].summary;
        if (i < group.device_bytes.size()) facts[i].device_bytes = group.device_bytes[i];
        if (profiled) facts[i].profile = runs[i].profile;
        facts[i].ceilings = roof;
        if (facts[i].profile && ran_on_gpu(facts[i]))
            facts[i].gpu_busy_fraction = facts[i].profile->gpu_busy_fraction;
    }

    const std::vector<Explanation> ex = explain(facts, Reader::Cli);
    const Environment& env = group.facts.environment;
    std::printf("device: %s (%s); dataset %s; batch %d; %lld steps\n",
                std::string(backend_kind_name(env.backend)).c_str(), env.device_name.c_str(),
                group.facts.dataset_name.c_str(), in.config.batch_size,
                static_cast<long long>(runs.front().summary.steps));
    print_report(facts, ex, roof);
    if (json_path) {
        std::ofstream f(*json_path);
        f << explain_to_json(facts, ex);
        if (!f) throw InputError("--json: could not write '" + *json_path + "'");
    }
    if (report_path) {
        ReportInput report;
        report.model_name = group.facts.graph.name;
        report.dataset = group.facts.dataset_name;
        report.runs = facts;
        report.configs = configs;
        report.explanations = ex;
        report.environment = env;
        report.ceilings = roof;
        std::ofstream f(*report_path);
        f << explain_report_html(report);
        if (!f) throw InputError("--report: could not write '" + *report_path + "'");
    }
    return group.interrupted ? 130 : 0;
}

} // namespace mixlab::cli
