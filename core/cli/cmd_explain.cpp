// `mixlab-cli explain`: trains a compare group in lockstep (as compare does), records
// each run's losses and loss-scale changes, and says why precision helped or not.
#include "commands.h"

#include "args.h"
#include "compare_group.h"
#include "train_options.h"

#include "mixlab/environment.h"
#include "mixlab/error.h"
#include "mixlab/explain.h"
#include "mixlab/run_log.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
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
        if (run >= 0 && std::size_t(run) < m_facts.size()) {
            RunFacts& f = m_facts[std::size_t(run)];
            f.train_loss.push_back(m.loss);
            if (f.scale_history.empty() || f.scale_history.back().second != m.loss_scale)
                f.scale_history.emplace_back(m.step, m.loss_scale);
            f.final_train_accuracy = m.accuracy;
        }
        m_next.on_step(run, m);
    }
    void on_epoch(int run, const EpochMetrics& m) override { m_next.on_epoch(run, m); }
    void on_event(int run, const RunEvent& e) override { m_next.on_event(run, e); }

private:
    std::vector<RunFacts>& m_facts;
    MetricsSink& m_next;
};

std::string speedup_text(const RunFacts& run, const RunFacts& base)
{
    const double a = run.summary.median_step_ms, b = base.summary.median_step_ms;
    if (!(a > 0) || !(b > 0)) return "n/a";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2fx", b / a);
    return buf;
}

void print_report(const std::vector<RunFacts>& facts, const std::vector<Explanation>& ex)
{
    std::printf("%-12s %12s %10s %10s %12s\n", "policy", "median ms", "speedup", "skipped",
                "loss scale");
    for (const RunFacts& f : facts) {
        std::printf("%-12s %12s %10s %10lld %12g\n", std::string(policy_name(f.policy)).c_str(),
                    format_ms(f.summary.median_step_ms).c_str(),
                    speedup_text(f, facts.front()).c_str(),
                    static_cast<long long>(f.summary.skipped_steps),
                    double(f.summary.final_loss_scale));
    }
    std::printf("median ms: median device time per step, first %d steps left out; speedup "
                "against %s. Per-phase breakdown: not measured yet.\n\n",
                k_warmup_steps, std::string(policy_name(facts.front().policy)).c_str());
    if (ex.empty()) std::printf("Nothing to explain: no rule fired.\n");
    for (const Explanation& e : ex) {
        std::printf("[%s] %s\n", std::string(severity_name(e.severity)).c_str(),
                    e.sentence.c_str());
        if (!e.suggestion.empty()) std::printf("    -> %s\n", e.suggestion.c_str());
    }
}

nlohmann::json to_json(const std::vector<RunFacts>& facts, const std::vector<Explanation>& ex)
{
    nlohmann::json runs = nlohmann::json::array();
    for (const RunFacts& f : facts) {
        const double base = facts.front().summary.median_step_ms;
        const double ms = f.summary.median_step_ms;
        runs.push_back({
            {"policy", std::string(policy_name(f.policy))},
            {"batch", f.batch},
            {"steps", f.summary.steps},
            {"median_step_ms", ms},
            {"mean_step_ms", f.summary.mean_step_ms},
            {"speedup", ms > 0 && base > 0 ? nlohmann::json(base / ms) : nlohmann::json()},
            {"skipped_steps", f.summary.skipped_steps},
            {"final_loss_scale", f.summary.final_loss_scale},
            {"final_train_loss", f.summary.final_train_loss},
            {"final_test_accuracy", f.summary.final_test_accuracy},
            {"loss_scaling", std::string(loss_scale_mode_name(f.loss_scale_mode))},
            {"device", f.device.name},
            {"backend", f.device.backend},
        });
    }
    nlohmann::json exs = nlohmann::json::array();
    for (const Explanation& e : ex) {
        nlohmann::json j = {{"id", e.id},
                            {"severity", std::string(severity_name(e.severity))},
                            {"run", e.run},
                            {"sentence", e.sentence},
                            {"suggestion", e.suggestion}};
        if (!e.apply_kind.empty())
            j["apply"] = {{"kind", e.apply_kind}, {"path", e.apply_path},
                          {"value", e.apply_value}};
        exs.push_back(std::move(j));
    }
    return {{"format", "mixlab-explain/1"}, {"runs", runs}, {"explanations", exs},
            {"phase_breakdown", nullptr}};
}

} // namespace

int cmd_explain(int argc, char** argv)
{
    ArgParser parser("mixlab-cli explain --model FILE [--policies P1,P2,...] [options]",
                     "Trains the model under several policies in lockstep, as compare does "
                     "(default --policies fp32,mixed_fp16,\n--steps 200), then says with the "
                     "runs' own numbers why precision helped or not, and what to change.\n"
                     "Not measured yet: the per-phase breakdown (forward, backward, "
                     "optimizer, overhead)\nand per-layer times; the launch-bound rule waits "
                     "for them.\nExit status: 0 done, 2 bad input, 1 a run failed, 130 "
                     "stopped by Ctrl-C.");
    add_train_options(parser, true);
    parser.add_option("--json", "FILE", "also write {runs, explanations} as JSON here");
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

    const std::unique_ptr<CompareGroup> group = prepare_compare_group(in, policies);
    const std::vector<RunConfig>& configs = group->configs;
    std::vector<RunFacts> facts(configs.size());
    for (std::size_t i = 0; i < configs.size(); ++i) {
        facts[i].policy = configs[i].policy;
        facts[i].batch = configs[i].batch_size;
        facts[i].graph = group->prepared.graph;
        facts[i].device = group->backend->info();
        facts[i].loss_scale_mode = effective_loss_scale_mode(configs[i]);
        facts[i].baseline = 0; // --help says the first policy is the baseline, as in compare
    }
    FactsRecorder recorder(facts, group->log);
    run_compare_group(*group, in, &recorder, "explain");
    const std::vector<RunSummary>& summaries = group->summaries;
    for (std::size_t i = 0; i < summaries.size(); ++i) facts[i].summary = summaries[i];

    const std::vector<Explanation> ex = explain(facts);
    std::printf("device: %s (%s); dataset %s; batch %d; %lld steps\n",
                group->env.backend.c_str(), group->env.device_name.c_str(),
                group->prepared.data.name.c_str(), in.config.batch_size,
                static_cast<long long>(summaries.empty() ? 0 : summaries.front().steps));
    print_report(facts, ex);
    if (json_path) {
        std::ofstream f(*json_path);
        f << to_json(facts, ex).dump(2) << '\n';
        if (!f) throw InputError("--json: could not write '" + *json_path + "'");
    }
    return group->interrupted ? 130 : 0;
}

} // namespace mixlab::cli
