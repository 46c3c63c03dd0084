// `mixlab-cli numerics LOG.json`: the numerics a run sampled (--numerics-every) summed
// per layer and tensor kind, one table per run of the log.
#include "commands.h"

#include "args.h"

#include "mixlab/error.h"
#include "mixlab/numerics_summary.h"
#include "mixlab/run_log.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace mixlab::cli {

int cmd_numerics(int argc, char** argv)
{
    ArgParser parser(
        "mixlab-cli numerics LOG.json",
        "Per layer and tensor kind (weights, activations, gradients as applied and as "
        "computed with the loss scale, updates): the binades holding 99% of the values, the "
        "share of zeros, and per format (fp16, bf16, fp8 E4M3, fp8 E5M2) the share that would "
        "overflow, land in subnormals or flush to zero; for updates, the share that weights in "
        "each format "
        "weights would lose to half-ulp rounding per format. Summed over every sample of each "
        "run of a log written by train, compare or explain with --numerics-every N.");
    parser.add_flag("--json", "print one JSON object (mixlab-numerics/1) instead of tables");
    parser.accept_positional("LOG.json");
    parser.parse(argc, argv);
    if (parser.help_requested()) {
        std::printf("%s", parser.help_text().c_str());
        return 0;
    }
    const std::string log_path = parser.positional().value_or("");
    if (log_path.empty())
        throw InputError("name a run log: mixlab-cli numerics LOG.json (a mixlab-log/1 file "
                         "written with --log-json and --numerics-every N)");
    std::ifstream in(log_path, std::ios::binary);
    if (!in) throw InputError("cannot read '" + log_path + "'");
    std::ostringstream text;
    text << in.rdbuf();
    RunLog log = [&] {
        try {
            return RunLog::parse(text.str());
        } catch (const InputError& e) {
            throw InputError(log_path + ": " + e.what());
        }
    }();
    int printed = 0;
    const bool json = parser.flag("--json");
    nlohmann::ordered_json runs = nlohmann::ordered_json::array();
    for (int run = 0; run < log.run_count(); ++run) {
        const std::vector<NumericsSample>& samples = log.numerics(run);
        if (samples.empty()) continue;
        const std::string policy(policy_name(log.config(run).policy));
        const NumericsSummary summary = summarize_numerics(samples);
        ++printed;
        if (json) {
            nlohmann::ordered_json r;
            r["run"] = run;
            r["policy"] = policy;
            r["summary"] = numerics_summary_to_json(summary);
            runs.push_back(std::move(r));
            continue;
        }
        if (printed > 1) std::printf("\n");
        const std::string title = "run " + std::to_string(run) + " (" + policy + ")";
        std::printf("%s", numerics_summary_text(summary, title).c_str());
    }
    if (printed == 0)
        throw InputError(log_path + " holds no numerics: train with --numerics-every N (and "
                                    "--log-json) to record them");
    if (json) {
        nlohmann::ordered_json doc;
        doc["format"] = "mixlab-numerics/1";
        doc["runs"] = std::move(runs);
        std::printf("%s\n", doc.dump(2).c_str());
    }
    return 0;
}

} // namespace mixlab::cli
