// `mixlab-cli maxbatch`: per policy, the largest batch the model trains at on this
// device and the throughput at every batch tried, then how the largest batches compare.
#include "commands.h"

#include "args.h"
#include "compare_group.h"
#include "train_options.h"

#include "mixlab/environment.h"
#include "mixlab/error.h"
#include "mixlab/max_batch.h"
#include "mixlab/run_group.h"
#include "mixlab/run_log.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <string>
#include <vector>

namespace mixlab::cli {
namespace {

// Options of train/compare that make no sense here: the search picks the batch and the
// step count, and writes no training log.
void reject_training_only(const ArgParser& p)
{
    for (const char* name : {"--batch", "--epochs", "--steps", "--log-json", "--log-csv",
                             "--progress-every", "--numerics-every"})
        if (p.has(name))
            throw InputError(std::string(name) +
                             " does not apply to maxbatch: it searches the batch and runs "
                             "--warmup + --timed-steps steps per batch (see --help)");
}

MaxBatchOptions read_search_options(const ArgParser& p)
{
    MaxBatchOptions o;
    if (auto v = p.integer("--start", 1, 1 << 20)) o.start = int(*v);
    if (auto v = p.integer("--limit", 1, 1 << 24)) o.limit = int(*v);
    if (o.limit < o.start)
        throw InputError("--limit (" + std::to_string(o.limit) + ") is below --start (" +
                         std::to_string(o.start) + ")");
    if (auto v = p.real("--resolution", 0.0, 0.5)) o.resolution = *v;
    if (auto v = p.integer("--warmup", 0, 1000)) o.warmup_steps = int(*v);
    if (auto v = p.integer("--timed-steps", 1, 100000)) o.timed_steps = int(*v);
    validate_max_batch_options(o);
    return o;
}

std::string ratio_text(double r)
{
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2fx", r);
    return buf;
}

std::string trial_text(const BatchTrial& t)
{
    if (t.fits) return "fits";
    return "does not fit: " + t.why_not;
}

void print_curve(Policy policy, const MaxBatchResult& r, bool complete)
{
    const std::string name(policy_name(policy));
    std::printf("\n%s%s\n", name.c_str(), complete ? "" : " (search interrupted)");
    std::printf("  %8s %12s %12s %10s  %s\n", "batch", "ms/step", "samples/s", "MiB", "result");
    for (const BatchTrial& t : r.trials)
        std::printf(
            "  %8d %12s %12s %10lld  %s\n", t.batch, t.fits ? format_ms(t.step_ms).c_str() : "-",
            t.fits ? format_throughput(t.batch, t.step_ms).c_str() : "-",
            static_cast<long long>((t.device_bytes + (1 << 20) - 1) >> 20), trial_text(t).c_str());
    if (!complete) {
        std::printf("  largest batch so far: %d\n", r.largest_fit);
        return;
    }
    if (r.largest_fit == 0) {
        std::printf("  largest batch: none fits (batch 1: %s)\n", r.failure_reason.c_str());
        return;
    }
    if (r.reached_limit) {
        std::printf("  largest batch: %d, the search limit (raise --limit to look further)\n",
                    r.largest_fit);
        return;
    }
    std::printf("  largest batch: %d (%d does not fit: %s)\n", r.largest_fit, r.first_failure,
                r.failure_out_of_memory ? "out of memory" : r.failure_reason.c_str());
}

void print_ratios(const std::vector<Policy>& policies, const std::vector<MaxBatchResult>& rs)
{
    if (rs.size() < 2 || rs.front().largest_fit == 0) return;
    const MaxBatchResult& base = rs.front();
    const std::string base_name(policy_name(policies.front()));
    std::printf("\n");
    for (std::size_t i = 1; i < rs.size(); ++i) {
        const std::string name(policy_name(policies[i]));
        if (rs[i].largest_fit == 0) {
            std::printf("%s fits no batch at all\n", name.c_str());
            continue;
        }
        if (rs[i].reached_limit && base.reached_limit) {
            std::printf("%s and %s both fit the search limit %d: raise --limit to compare\n",
                        name.c_str(), base_name.c_str(), rs[i].largest_fit);
            continue;
        }
        // A largest batch at the search limit is only a lower bound: say which side.
        const char* qual = rs[i].reached_limit ? "at least " : base.reached_limit ? "at most " : "";
        std::printf("%s fits %s%s the batch of %s (%d vs %d)\n", name.c_str(), qual,
                    ratio_text(double(rs[i].largest_fit) / double(base.largest_fit)).c_str(),
                    base_name.c_str(), rs[i].largest_fit, base.largest_fit);
    }
}

nlohmann::json options_json(const MaxBatchOptions& o)
{
    return {{"start", o.start},
            {"limit", o.limit},
            {"multiple", o.multiple},
            {"resolution", o.resolution},
            {"warmup_steps", o.warmup_steps},
            {"timed_steps", o.timed_steps}};
}

} // namespace

int cmd_maxbatch(int argc, char** argv)
{
    ArgParser parser(
        "mixlab-cli maxbatch --model FILE --policies P1,P2[,...] [options]",
        "Finds, per policy, the largest batch the model trains at on this device: doubling "
        "from --start up to\n--limit, then bisecting on multiples of 8 (what tensor cores "
        "want) to within --resolution. Each\nbatch is a short training run (--warmup steps, "
        "then --timed-steps timed ones); running out of device\nmemory means \"does not "
        "fit\". Prints the throughput at every batch tried and how the largest\nbatches "
        "compare with the first policy's. Synthetic data is sized to " +
            std::to_string(k_search_synthetic_per_batch) + "x --limit samples (at most\n" +
            std::to_string(k_search_synthetic_cap) +
            ") unless --synthetic-size says otherwise.\nExit status: 0 done, 2 bad input, 1 a "
            "run failed, 130 stopped by Ctrl-C.");
    add_train_options(parser, true);
    parser.add_option("--start", "N", "first batch tried (default 32)");
    parser.add_option("--limit", "N", "largest batch tried (default 65536)");
    parser.add_option("--resolution", "X",
                      "stop bisecting once the gap is this fraction of the batch (default "
                      "0.02; 0: down to a multiple of 8)");
    parser.add_option("--warmup", "N", "untimed steps per batch (default 3)");
    parser.add_option("--timed-steps", "N", "timed steps per batch (default 5)");
    parser.add_option("--json", "FILE", "also write the curves and largest batches as JSON");
    parser.parse(argc, argv);
    if (parser.help_requested()) {
        std::fputs(parser.help_text().c_str(), stdout);
        return 0;
    }

    reject_training_only(parser);
    const std::vector<Policy> policies = parse_policies(parser);
    const MaxBatchOptions opt = read_search_options(parser);
    TrainInputs in = read_train_inputs(parser, true);
    const auto json_path = parser.value("--json");
    if (json_path) check_output_path(*json_path, "--json");

    // Synthetic data sized to the search (max_batch.h), unless --synthetic-size says.
    const bool sized =
        !parser.has("--synthetic-size") && size_synthetic_for_search(in.config.dataset, opt);
    // The search sets the batch of each trial; 1 passes the config's checks on any set.
    in.config.batch_size = 1;
    const std::vector<RunConfig> configs = configs_for(in.config, policies);
    RunGroup group(in.spec, configs);
    struct Observer : RunGroupObserver {
        const std::vector<RunConfig>* configs = nullptr;
        void on_prepared(const GroupFacts& facts) override { note_device(configs->front(), facts); }
        void on_trial(int run, const BatchTrial& t) override
        {
            std::fprintf(stderr, "maxbatch %s: batch %d %s%s [%.1f s]\n",
                         std::string(policy_name((*configs)[std::size_t(run)].policy)).c_str(),
                         t.batch, t.fits ? "fits, " : trial_text(t).c_str(),
                         t.fits ? (format_ms(t.step_ms) + " ms/step").c_str() : "", t.seconds);
        }
    } observer;
    observer.configs = &configs;
    try {
        group.prepare(observer);
        for (int i = 0; i < group.size(); ++i) {
            try {
                group.check_run(i);
            } catch (...) {
                throw_setup_error(std::current_exception(), GroupPhase::OpeningDevice, i, configs);
            }
        }
    } catch (const DeviceError&) {
        throw_setup_error(std::current_exception(), GroupPhase::OpeningDevice, -1, configs);
    }
    const GroupFacts& facts = group.facts();
    const Environment& env = facts.environment;

    std::printf("device: %s (%s); model %s; dataset %s: %lld training samples%s\n",
                std::string(backend_kind_name(env.backend)).c_str(), env.device_name.c_str(),
                facts.graph.name.empty() ? in.model_path.c_str() : facts.graph.name.c_str(),
                facts.dataset_name.c_str(), static_cast<long long>(facts.train_samples),
                sized ? (" (sized to " + std::to_string(k_search_synthetic_per_batch) +
                         "x --limit, at most " + std::to_string(k_search_synthetic_cap) +
                         "; --synthetic-size overrides)")
                            .c_str()
                      : "");
    std::printf("search: from batch %d up to %d, bisecting on multiples of %d to within %g%%; "
                "%d warm-up + %d timed steps per batch; ms/step is mean device time\n",
                opt.start, opt.limit, opt.multiple, opt.resolution * 100.0, opt.warmup_steps,
                opt.timed_steps);
    std::fflush(stdout);

    InterruptStop interrupt;
    std::vector<MaxBatchResult> results;
    bool interrupted = false;
    // Rewritten after each policy, so that a search cut short (a time limit) still
    // leaves the policies it finished.
    const auto write_json = [&] {
        if (!json_path) return;
        nlohmann::json runs = nlohmann::json::array();
        for (std::size_t i = 0; i < results.size(); ++i) {
            nlohmann::json r = nlohmann::json::parse(max_batch_result_to_json(results[i]));
            r["policy"] = std::string(policy_name(policies[i]));
            runs.push_back(std::move(r));
        }
        const nlohmann::json out = {{"format", "mixlab-maxbatch/1"},
                                    {"model", in.model_path},
                                    {"dataset", facts.dataset_name},
                                    {"training_samples", facts.train_samples},
                                    {"environment", environment_to_json(env)},
                                    {"search", options_json(opt)},
                                    {"complete", results.size() == policies.size()},
                                    {"policies", std::move(runs)}};
        write_file_atomically(*json_path, out.dump(2) + "\n");
    };
    for (int i = 0; i < group.size(); ++i) {
        // Ctrl-C between trials: the search stops and what was found so far is printed.
        const MaxBatchSearch search = group.search_max_batch(i, opt, observer, interrupt.token());
        print_curve(configs[std::size_t(i)].policy, search.result, search.complete);
        if (!search.complete) {
            interrupted = true;
            break;
        }
        results.push_back(search.result);
        write_json();
        std::fflush(stdout);
    }
    if (!interrupted) print_ratios(policies, results);
    if (interrupted) write_json(); // the finished policies, "complete": false
    return interrupted ? 130 : 0;
}

} // namespace mixlab::cli
