// `mixlab-cli train`: one model, one policy. Everything is checked before training
// starts; progress goes to stderr, the summary to stdout, the logs to --log-json/--log-csv.
#include "commands.h"

#include "args.h"
#include "compare_group.h"
#include "train_options.h"

#include "mixlab/environment.h"
#include "mixlab/run_log.h"
#include "mixlab/step_time.h"
#include "mixlab/text_corpus.h"

#include <cstdio>
#include <exception>

namespace mixlab::cli {
namespace {

void print_summary(const RunConfig& c, const GroupFacts& facts, const RunSummary& s)
{
    const Environment& env = facts.environment;
    // A language model's batch is columns x bptt tokens, its throughput tokens per second.
    const int per_step = s.language_model ? c.batch_size * c.bptt : c.batch_size;
    std::printf("policy            %s\n", std::string(policy_name(c.policy)).c_str());
    if (c.optimizer.master_weights == MasterWeights::Bf16Split)
        std::printf("master weights    bf16_split (the bf16 weight + an int16 remainder: "
                    "exactly the fp32 master)\n");
    std::printf("loss scaling      %s\n",
                std::string(loss_scale_mode_name(effective_loss_scale_mode(c))).c_str());
    std::printf("device            %s (%s)\n", std::string(backend_kind_name(env.backend)).c_str(),
                env.device_name.c_str());
    if (s.language_model)
        std::printf("batch             %d columns x bptt %d = %d tokens\n", c.batch_size, c.bptt,
                    per_step);
    else
        std::printf("batch             %d\n", c.batch_size);
    std::printf("steps             %lld (%lld skipped)%s\n", static_cast<long long>(s.steps),
                static_cast<long long>(s.skipped_steps), s.stopped ? ", stopped early" : "");
    std::printf("epochs done       %d\n", s.epochs_done);
    std::printf("step time         %s ms (%s; mean %s ms)\n", format_ms(s.median_step_ms).c_str(),
                step_time_definition().c_str(), format_ms(s.mean_step_ms).c_str());
    std::printf("throughput        %s %s/s\n",
                format_throughput(per_step, s.median_step_ms).c_str(),
                s.language_model ? "tokens" : "samples");
    std::printf("wall time         %.2f s\n", s.wall_seconds);
    std::printf("final train loss  %.4f\n", double(s.final_train_loss));
    if (s.language_model && s.final_valid_loss)
        std::printf("valid perplexity  %.2f (loss %.4f)\n", perplexity(*s.final_valid_loss),
                    double(*s.final_valid_loss));
    if (s.language_model && s.final_test_loss)
        std::printf("test perplexity   %.2f\n", perplexity(*s.final_test_loss));
    if (s.language_model && s.final_test_loss && facts.perplexity_references)
        std::printf(
            "                  (%s)\n",
            perplexity_references_text(*facts.perplexity_references, perplexity(*s.final_test_loss))
                .c_str());
    if (s.language_model) std::printf("final lr          %g\n", double(s.final_lr));
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
    CompareGroup group(RunLog::Kind::Train);
    group.configs = configs_for(in.config, {in.config.policy});
    run_compare_group(group, in, nullptr, "train");
    const RunOutcome& run = group.outcome.runs.front();
    // The log, written, keeps what the run recorded up to the failure (what a bug report
    // needs); the error leaves as it was thrown, for main's message and exit status.
    if (run.status == RunOutcome::Status::Failed) std::rethrow_exception(run.error);
    print_summary(in.config, group.facts, run.summary);
    if (in.sample_words > 0) {
        if (!run.sample.empty())
            std::printf("\nsample (%d words, temperature %g):\n%s\n", in.sample_words,
                        double(in.temperature), run.sample.c_str());
        else
            std::fprintf(stderr, "mixlab-cli train: no sample: %s\n", run.sample_failure.c_str());
    }
    if (!run.weights_failure.empty()) {
        std::fprintf(stderr, "mixlab-cli train: the weights or predictions were not saved: %s\n",
                     run.weights_failure.c_str());
        return 1;
    }
    if (in.save_weights)
        std::printf("weights           %s (safetensors, step %lld)\n", in.save_weights->c_str(),
                    static_cast<long long>(run.summary.steps));
    if (in.save_predictions)
        std::printf("predictions       %s (the test split's logits)\n",
                    in.save_predictions->c_str());
    if (!run.checkpoint_failure.empty()) {
        std::fprintf(stderr, "mixlab-cli train: the checkpoint was not saved: %s\n",
                     run.checkpoint_failure.c_str());
        return 1;
    }
    if (in.save_checkpoint)
        std::printf("checkpoint        %s (step %lld; --resume continues from it)\n",
                    in.save_checkpoint->c_str(), static_cast<long long>(run.summary.steps));
    if (!run.summary.halted.empty()) {
        std::fprintf(stderr, "mixlab-cli train: %s\n", run.summary.halted.c_str());
        return 1;
    }
    return group.interrupted ? 130 : 0;
}

} // namespace mixlab::cli
