// What `train`, `compare` and `explain` share: a RunGroup of one run per policy (train: a
// group of one) of the same model, data, seed and initial weights, with progress on
// stderr and one RunLog written to --log-json/--log-csv.
#pragma once
#include "args.h"
#include "train_options.h"

#include "mixlab/run_group.h"
#include "mixlab/run_log.h"

#include <vector>

namespace mixlab::cli {

// --policies P1,P2,...: each a known policy, none twice.
std::vector<Policy> parse_policies(const ArgParser& parser);

struct CompareGroup {
    explicit CompareGroup(RunLog::Kind kind) : log(kind) {}
    std::vector<RunConfig> configs; // one per policy, in --policies order (configs_for)
    // > 0: after training, each run's profiling pass with this many steps (explain);
    // its extra steps are not logged (the log and summaries hold the timed steps).
    int profile_steps = 0;
    // Filled by run_compare_group:
    GroupFacts facts;
    RunLog log;
    GroupOutcome outcome;                   // per run: its summary or its failure, and its profile
    std::vector<std::int64_t> device_bytes; // per run: what it allocated on the device
    bool interrupted = false;               // Ctrl-C ended it early
};

// Sets the group up and trains it in lockstep. Metrics go to `sink`, which must pass them
// on to group.log (the log itself is the sink when null). A group that cannot be set up
// throws as throw_setup_error says and writes no log. Otherwise --log-json/--log-csv are
// written, also when a run failed while training: that run ended alone (its error event
// is in the log), the others trained to their end. `command` names the caller in
// messages ("compare").
void run_compare_group(CompareGroup& group, const TrainInputs& in, MetricsSink* sink,
                       const char* command);

// One stderr line per run that failed while training ("mixlab-cli compare: the
// mixed_fp16 run failed: ..."); true when there was one.
bool report_failed_runs(const CompareGroup& group, const char* command);

} // namespace mixlab::cli
