// The lockstep compare group behind `compare` and `explain`.
#include "compare_group.h"

#include "progress_printer.h"

#include "mixlab/error.h"

#include <algorithm>
#include <cstdio>

namespace mixlab::cli {

std::vector<Policy> parse_policies(const ArgParser& p)
{
    const auto text = p.value("--policies");
    if (!text) throw InputError("--policies is required, e.g. --policies fp32,mixed_fp16");
    std::vector<Policy> out;
    for (const std::string& name : split_list("--policies", *text)) {
        const Policy pol = parse_policy(name);
        if (std::find(out.begin(), out.end(), pol) != out.end())
            throw InputError("--policies names " + name + " twice");
        out.push_back(pol);
    }
    return out;
}

std::unique_ptr<CompareGroup> prepare_compare_group(const TrainInputs& in,
                                                    const std::vector<Policy>& policies)
{
    auto g = std::make_unique<CompareGroup>();
    for (Policy pol : policies) {
        RunConfig c = in.config;
        c.policy = pol;
        validate_run_config(c);
        g->configs.push_back(c);
    }
    g->backend = open_backend(in.config);
    for (Policy pol : policies) check_policy_on_device(*g->backend, pol);
    g->prepared = prepare_data(in);
    g->env = describe_environment(g->backend->info());
    g->log.set_model(in.spec, g->prepared.graph);
    g->log.set_environment(g->env);
    for (const RunConfig& c : g->configs) g->log.add_run(c);
    return g;
}

void run_compare_group(CompareGroup& g, const TrainInputs& in, MetricsSink* sink,
                       const char* command)
{
    const PreparedData& prepared = g.prepared;
    DeviceDataset device_data(prepared.data, *g.backend);
    std::vector<std::unique_ptr<TrainingRun>> runs;
    std::vector<TrainingRun*> run_ptrs;
    std::vector<ProgressPrinter::RunInfo> infos;
    for (std::size_t i = 0; i < g.configs.size(); ++i) {
        const RunConfig& c = g.configs[i];
        runs.push_back(std::make_unique<TrainingRun>(prepared.graph, c, device_data, *g.backend,
                                                     int(i)));
        run_ptrs.push_back(runs.back().get());
        infos.push_back({std::string(policy_name(c.policy)), runs.back()->total_steps(),
                         runs.back()->steps_per_epoch(), c.steps > 0 ? 0 : c.epochs});
    }
    ProgressPrinter printer(stderr, infos, in.progress_every);
    g.log.forward_to(&printer);
    g.log.save_each_epoch(in.log_json, in.log_csv);
    std::fprintf(stderr, "comparing %zu policies in lockstep on dataset %s (%s): %lld training, "
                         "%lld test samples of %s\n",
                 g.configs.size(), prepared.data.name.c_str(), prepared.data.source.c_str(),
                 static_cast<long long>(prepared.data.train.n),
                 static_cast<long long>(prepared.data.test.n),
                 prepared.graph.input.to_string().c_str());

    auto write_logs = [&] {
        if (in.log_json) g.log.write_json(*in.log_json);
        if (in.log_csv) g.log.write_csv(*in.log_csv);
    };
    InterruptStop interrupt;
    try {
        g.summaries = train_lockstep(run_ptrs, sink ? *sink : g.log, interrupt.token());
    } catch (const std::exception& e) {
        for (std::size_t i = 0; i < runs.size(); ++i)
            g.log.on_event(int(i),
                           RunEvent{RunEvent::Kind::Error, runs[i]->steps_done(), e.what()});
        try {
            write_logs();
        } catch (const std::exception& w) {
            std::fprintf(stderr, "mixlab-cli %s: %s\n", command, w.what());
        }
        throw;
    }
    g.log.forward_to(nullptr); // the printer ends with this scope
    const bool halted = std::any_of(g.summaries.begin(), g.summaries.end(),
                                    [](const RunSummary& s) { return !s.halted.empty(); });
    if (g.profile_steps > 0 && !interrupt.interrupted() && !halted) {
        // Each run alone (not in lockstep), so its wall time per step is its own.
        struct Discard : MetricsSink {
            void on_step(int, const StepMetrics&) override {}
            void on_epoch(int, const EpochMetrics&) override {}
            void on_event(int, const RunEvent&) override {}
        } discard;
        std::fprintf(stderr, "profiling: %d steps per run with events between phases and "
                             "layers, then %d unmarked for the wall time\n",
                     g.profile_steps, g.profile_steps);
        for (auto& run : runs) g.profiles.push_back(run->profile(discard, g.profile_steps));
    }
    for (std::size_t i = 0; i < g.summaries.size(); ++i) g.log.set_summary(int(i), g.summaries[i]);
    write_logs();
    g.interrupted = interrupt.interrupted();
}

} // namespace mixlab::cli
