// `mixlab-cli train`: one model, one policy. Everything is checked before training
// starts; progress goes to stderr, the summary to stdout, the logs to --log-json/--log-csv.
#include "commands.h"

#include "args.h"
#include "progress_printer.h"
#include "train_options.h"

#include "mixlab/environment.h"
#include "mixlab/error.h"
#include "mixlab/run_log.h"
#include "mixlab/step_time.h"

#include <cstdio>

namespace mixlab::cli {
namespace {

void write_logs(const RunLog& log, const TrainInputs& in)
{
    if (in.log_json) log.write_json(*in.log_json);
    if (in.log_csv) log.write_csv(*in.log_csv);
}

void print_summary(const RunConfig& c, const Environment& env, const RunSummary& s)
{
    std::printf("policy            %s\n", std::string(policy_name(c.policy)).c_str());
    std::printf("loss scaling      %s\n",
                std::string(loss_scale_mode_name(effective_loss_scale_mode(c))).c_str());
    std::printf("device            %s (%s)\n", std::string(backend_kind_name(env.backend)).c_str(), env.device_name.c_str());
    std::printf("batch             %d\n", c.batch_size);
    std::printf("steps             %lld (%lld skipped)%s\n", static_cast<long long>(s.steps),
                static_cast<long long>(s.skipped_steps), s.stopped ? ", stopped early" : "");
    std::printf("epochs done       %d\n", s.epochs_done);
    std::printf("step time         %s ms (%s; mean %s ms)\n",
                format_ms(s.median_step_ms).c_str(), step_time_definition().c_str(),
                format_ms(s.mean_step_ms).c_str());
    std::printf("throughput        %s samples/s\n",
                format_throughput(c.batch_size, s.median_step_ms).c_str());
    std::printf("wall time         %.2f s\n", s.wall_seconds);
    std::printf("final train loss  %.4f\n", double(s.final_train_loss));
    if (s.final_test_loss && s.final_test_accuracy) {
        std::printf("test loss         %.4f\n", double(*s.final_test_loss));
        std::printf("test accuracy     %.4f\n", double(*s.final_test_accuracy));
    } else {
        std::printf("test accuracy     n/a (the test split was never evaluated)\n");
    }
    std::printf("final loss scale  %g\n", double(s.final_loss_scale));
}

} // namespace

int cmd_train(int argc, char** argv)
{
    ArgParser parser("mixlab-cli train --model FILE [options]",
                     "Trains a model under one precision policy. Progress goes to stderr, a "
                     "summary to stdout.\nExit status: 0 done, 2 bad input, 1 the run failed, "
                     "130 stopped by Ctrl-C (logs are still written).");
    add_train_options(parser, false);
    parser.parse(argc, argv);
    if (parser.help_requested()) {
        std::fputs(parser.help_text().c_str(), stdout);
        return 0;
    }

    // All checks first: a mistake should cost seconds, not a training run.
    const TrainInputs in = read_train_inputs(parser, false);
    std::unique_ptr<Backend> backend = open_backend(in.config);
    check_policy_on_device(*backend, in.config.policy);
    PreparedData prepared = prepare_data(in);
    const Environment env = describe_environment(backend->info());

    RunLog log(RunLog::Kind::Train);
    log.set_model(in.spec, prepared.graph);
    log.set_environment(env);
    log.add_run(in.config);

    DeviceDataset device_data(prepared.data, *backend);
    TrainingRun run(prepared.graph, in.config, device_data, *backend, 0);

    ProgressPrinter printer(stderr,
                            {ProgressPrinter::RunInfo{"", run.total_steps(), run.steps_per_epoch(),
                                                      in.config.steps > 0 ? 0 : in.config.epochs}},
                            in.progress_every);
    log.forward_to(&printer);
    log.save_each_epoch(in.log_json, in.log_csv);
    // The run's own first event says what trains how; this says on what data.
    std::fprintf(stderr, "dataset %s (%s): %lld training, %lld test samples of %s\n",
                 prepared.data.name.c_str(), prepared.data.source.c_str(),
                 static_cast<long long>(prepared.data.train.n),
                 static_cast<long long>(prepared.data.test.n),
                 prepared.graph.input.to_string().c_str());

    InterruptStop interrupt;
    RunSummary summary;
    try {
        summary = train(run, log, interrupt.token());
    } catch (const std::exception& e) {
        // Keep what the run recorded up to the failure: that is what a bug report needs.
        log.on_event(0, RunEvent{RunEvent::Kind::Error, run.steps_done(), e.what()});
        try {
            write_logs(log, in);
        } catch (const std::exception& w) {
            std::fprintf(stderr, "mixlab-cli train: %s\n", w.what());
        }
        throw;
    }
    log.set_summary(0, summary);
    write_logs(log, in);
    print_summary(in.config, env, summary);
    if (!summary.halted.empty()) {
        std::fprintf(stderr, "mixlab-cli train: %s\n", summary.halted.c_str());
        return 1;
    }
    return interrupt.interrupted() ? 130 : 0;
}

} // namespace mixlab::cli
