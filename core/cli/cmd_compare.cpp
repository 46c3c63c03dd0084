// `mixlab-cli compare`: the same model, data, seed and initial weights under several
// policies, one step of each in turn on one backend, then a table of what each cost.
#include "commands.h"

#include "args.h"
#include "progress_printer.h"
#include "train_options.h"

#include "mixlab/environment.h"
#include "mixlab/error.h"
#include "mixlab/run_log.h"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <vector>

namespace mixlab::cli {
namespace {

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

void print_table(const std::vector<RunConfig>& configs, const std::vector<RunSummary>& s)
{
    std::printf("%-12s %12s %10s %10s %10s %12s\n", "policy", "step ms", "speedup", "test acc",
                "skipped", "loss scale");
    const double base = s.empty() ? 0.0 : s.front().mean_step_ms;
    for (std::size_t i = 0; i < s.size(); ++i) {
        std::string speedup = "n/a";
        if (base > 0 && s[i].mean_step_ms > 0) {
            char buf[32];
            std::snprintf(buf, sizeof buf, "%.2fx", base / s[i].mean_step_ms);
            speedup = buf;
        }
        std::printf("%-12s %12s %10s %10.4f %10lld %12g\n",
                    std::string(policy_name(configs[i].policy)).c_str(),
                    format_ms(s[i].mean_step_ms).c_str(), speedup.c_str(),
                    double(s[i].final_test_accuracy), static_cast<long long>(s[i].skipped_steps),
                    double(s[i].final_loss_scale));
    }
    std::printf("step ms: mean device time per step, first %d steps left out as warm-up; "
                "speedup against %s\n",
                k_warmup_steps,
                configs.empty() ? "-" : std::string(policy_name(configs.front().policy)).c_str());
}

} // namespace

int cmd_compare(int argc, char** argv)
{
    ArgParser parser("mixlab-cli compare --model FILE --policies P1,P2[,...] [options]",
                     "Trains the same model under several policies in lockstep (same seed, "
                     "initial weights and data order;\none step of each in turn) and compares "
                     "step time, accuracy and loss scaling.\nExit status: 0 done, 2 bad input, "
                     "1 a run failed, 130 stopped by Ctrl-C (logs are still written).");
    add_train_options(parser, true);
    parser.parse(argc, argv);
    if (parser.help_requested()) {
        std::fputs(parser.help_text().c_str(), stdout);
        return 0;
    }

    const std::vector<Policy> policies = parse_policies(parser);
    const TrainInputs in = read_train_inputs(parser, true);
    std::vector<RunConfig> configs;
    for (Policy pol : policies) {
        RunConfig c = in.config;
        c.policy = pol;
        validate_run_config(c);
        configs.push_back(c);
    }
    std::unique_ptr<Backend> backend = open_backend(in.config);
    for (Policy pol : policies) check_policy_on_device(*backend, pol);
    PreparedData prepared = prepare_data(in);
    const Environment env = describe_environment(backend->info());

    RunLog log(RunLog::Kind::Compare);
    log.set_model(in.spec, prepared.graph);
    log.set_environment(env);
    for (const RunConfig& c : configs) log.add_run(c);

    DeviceDataset device_data(prepared.data, *backend);
    std::vector<std::unique_ptr<TrainingRun>> runs;
    std::vector<TrainingRun*> run_ptrs;
    std::vector<ProgressPrinter::RunInfo> infos;
    for (std::size_t i = 0; i < configs.size(); ++i) {
        runs.push_back(std::make_unique<TrainingRun>(prepared.graph, configs[i], device_data,
                                                     *backend, int(i)));
        run_ptrs.push_back(runs.back().get());
        infos.push_back({std::string(policy_name(configs[i].policy)), runs.back()->total_steps(),
                         runs.back()->steps_per_epoch(),
                         configs[i].steps > 0 ? 0 : configs[i].epochs});
    }
    ProgressPrinter printer(stderr, infos, in.progress_every);
    log.forward_to(&printer);
    std::fprintf(stderr, "comparing %zu policies in lockstep on dataset %s (%s): %lld training, "
                         "%lld test samples of %s\n",
                 configs.size(), prepared.data.name.c_str(), prepared.data.source.c_str(),
                 static_cast<long long>(prepared.data.train.n),
                 static_cast<long long>(prepared.data.test.n),
                 prepared.graph.input.to_string().c_str());

    auto write_logs = [&] {
        if (in.log_json) log.write_json(*in.log_json);
        if (in.log_csv) log.write_csv(*in.log_csv);
    };
    InterruptStop interrupt;
    std::vector<RunSummary> summaries;
    try {
        summaries = train_lockstep(run_ptrs, log, interrupt.token());
    } catch (const std::exception& e) {
        for (std::size_t i = 0; i < runs.size(); ++i)
            log.on_event(int(i), RunEvent{RunEvent::Kind::Error, runs[i]->steps_done(), e.what()});
        try {
            write_logs();
        } catch (const std::exception& w) {
            std::fprintf(stderr, "mixlab-cli compare: %s\n", w.what());
        }
        throw;
    }
    for (std::size_t i = 0; i < summaries.size(); ++i) log.set_summary(int(i), summaries[i]);
    write_logs();
    std::printf("device: %s (%s); dataset %s; batch %d\n", env.backend.c_str(),
                env.device_name.c_str(), prepared.data.name.c_str(), in.config.batch_size);
    print_table(configs, summaries);
    return interrupt.interrupted() ? 130 : 0;
}

} // namespace mixlab::cli
