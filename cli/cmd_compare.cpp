// `mixlab-cli compare`: the same model, data, seed and initial weights under several
// policies, one step of each in turn on one backend, then a table of what each cost.
#include "commands.h"

#include "args.h"
#include "compare_group.h"
#include "progress_printer.h"

#include "mixlab/step_time.h"

#include <cstdio>
#include <memory>
#include <vector>

namespace mixlab::cli {
namespace {

void print_table(const std::vector<RunConfig>& configs, const std::vector<RunSummary>& s)
{
    std::printf("%-12s %12s %10s %10s %10s %12s\n", "policy", "step ms", "speedup", "test acc",
                "skipped", "loss scale");
    const double base = s.empty() ? 0.0 : s.front().median_step_ms;
    for (std::size_t i = 0; i < s.size(); ++i) {
        std::string speedup_text = "n/a", accuracy = "n/a";
        char buf[32];
        if (const double x = speedup(base, s[i].median_step_ms); x > 0) {
            std::snprintf(buf, sizeof buf, "%.2fx", x);
            speedup_text = buf;
        }
        if (s[i].final_test_accuracy) {
            std::snprintf(buf, sizeof buf, "%.4f", double(*s[i].final_test_accuracy));
            accuracy = buf;
        }
        std::printf("%-12s %12s %10s %10s %10lld %12g\n",
                    std::string(policy_name(configs[i].policy)).c_str(),
                    format_ms(s[i].median_step_ms).c_str(), speedup_text.c_str(), accuracy.c_str(),
                    static_cast<long long>(s[i].skipped_steps), double(s[i].final_loss_scale));
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
    const std::unique_ptr<CompareGroup> group = prepare_compare_group(in, policies);
    run_compare_group(*group, in, nullptr, "compare");
    std::printf("device: %s (%s); dataset %s; batch %d\n", std::string(backend_kind_name(group->env.backend)).c_str(),
                group->env.device_name.c_str(), group->prepared.data.name.c_str(),
                in.config.batch_size);
    print_table(group->configs, group->summaries);
    for (const RunSummary& s : group->summaries)
        if (!s.halted.empty()) return 1; // its Error event names the run and the step
    return group->interrupted ? 130 : 0;
}

} // namespace mixlab::cli
