// `mixlab-cli compare`: the same model, data, seed and initial weights under several
// policies, one step of each in turn on one backend, then a table of what each cost. A
// run that fails ends alone; the others go on.
#include "commands.h"

#include "args.h"
#include "compare_group.h"

#include "mixlab/step_time.h"
#include "mixlab/text_corpus.h"

#include <cstdio>
#include <vector>

namespace mixlab::cli {
namespace {

// A run that failed has a row that says so (its error is on stderr and in the log).
// A language model's column is its test perplexity where a classifier's is its accuracy.
void print_table(const std::vector<RunConfig>& configs, const std::vector<RunOutcome>& runs,
                 bool language_model)
{
    std::printf("%-12s %12s %10s %10s %10s %12s\n", "policy", "step ms", "speedup",
                language_model ? "test ppl" : "test acc", "skipped", "loss scale");
    const auto failed = [&](std::size_t i) { return runs[i].status == RunOutcome::Status::Failed; };
    const double base = runs.empty() || failed(0) ? 0.0 : runs.front().summary.median_step_ms;
    for (std::size_t i = 0; i < runs.size(); ++i) {
        std::string name(policy_name(configs[i].policy));
        if (configs[i].optimizer.master_weights == MasterWeights::Bf16Split) name += "+split";
        if (failed(i)) {
            std::printf("%-12s %12s\n", name.c_str(), "failed");
            continue;
        }
        const RunSummary& s = runs[i].summary;
        std::string speedup_text = "n/a", accuracy = "n/a";
        char buf[32];
        if (const double x = speedup(base, s.median_step_ms); x > 0) {
            std::snprintf(buf, sizeof buf, "%.2fx", x);
            speedup_text = buf;
        }
        if (language_model && s.final_test_loss) {
            std::snprintf(buf, sizeof buf, "%.2f", perplexity(*s.final_test_loss));
            accuracy = buf;
        } else if (!language_model && s.final_test_accuracy) {
            std::snprintf(buf, sizeof buf, "%.4f", double(*s.final_test_accuracy));
            accuracy = buf;
        }
        std::printf("%-12s %12s %10s %10s %10lld %12g\n", name.c_str(),
                    format_ms(s.median_step_ms).c_str(), speedup_text.c_str(), accuracy.c_str(),
                    static_cast<long long>(s.skipped_steps), double(s.final_loss_scale));
    }
    std::printf("step ms: %s; speedup: %s (%s)\n", step_time_definition().c_str(),
                speedup_definition().c_str(),
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
    CompareGroup group(RunLog::Kind::Compare);
    group.configs = configs_for(in.config, policies);
    run_compare_group(group, in, nullptr, "compare");
    const Environment& env = group.facts.environment;
    std::printf("device: %s (%s); dataset %s; batch %d\n",
                std::string(backend_kind_name(env.backend)).c_str(), env.device_name.c_str(),
                group.facts.dataset_name.c_str(), in.config.batch_size);
    print_table(group.configs, group.outcome.runs, group.facts.graph.input.sequence);
    if (group.facts.perplexity_references)
        std::printf("%s\n",
                    perplexity_references_text(*group.facts.perplexity_references, {}).c_str());
    for (std::size_t i = 0; i < group.outcome.runs.size(); ++i)
        if (!group.outcome.runs[i].sample.empty())
            std::printf("\n%s sample (%d words, temperature %g):\n%s\n",
                        std::string(policy_name(group.configs[i].policy)).c_str(), in.sample_words,
                        double(in.temperature), group.outcome.runs[i].sample.c_str());
    // A run that failed ended alone: the others trained on, and the log holds them all.
    if (report_failed_runs(group, "compare")) return 1;
    for (const RunOutcome& r : group.outcome.runs)
        if (!r.summary.halted.empty()) return 1; // its Error event names the run and the step
    return group.interrupted ? 130 : 0;
}

} // namespace mixlab::cli
