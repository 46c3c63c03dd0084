// What `compare` and `explain` share: one run per policy of the same model, data, seed
// and initial weights, trained in lockstep on one backend, logged to one RunLog with
// progress on stderr.
#pragma once
#include "args.h"
#include "train_options.h"

#include "mixlab/environment.h"
#include "mixlab/run_log.h"
#include "mixlab/step_profile.h"

#include <memory>
#include <vector>

namespace mixlab::cli {

// --policies P1,P2,...: each a known policy, none twice.
std::vector<Policy> parse_policies(const ArgParser& parser);

struct CompareGroup {
    std::vector<RunConfig> configs;  // one per policy, in --policies order
    std::unique_ptr<Backend> backend;
    PreparedData prepared;
    Environment env;
    RunLog log{RunLog::Kind::Compare};
    std::vector<RunSummary> summaries; // filled by run_compare_group
    // > 0: after training, each run's profiling pass with this many steps (explain);
    // its extra steps are not logged (the log and summaries hold the timed steps).
    int profile_steps = 0;
    std::vector<StepProfile> profiles; // one per run when profile_steps > 0
    bool interrupted = false;          // Ctrl-C ended it early
};

// Validates a config per policy, opens the backend (every policy checked against the
// device), loads the data and builds the graph, and starts the log. Throws InputError
// for anything the user can fix.
std::unique_ptr<CompareGroup> prepare_compare_group(const TrainInputs& in,
                                                    const std::vector<Policy>& policies);

// Trains the group in lockstep. Metrics go to `sink`, which must pass them on to
// group.log (the log itself is the sink when null). Writes --log-json/--log-csv, also
// when a run fails (the error is logged, then rethrown). `command` names the caller in
// messages ("compare").
void run_compare_group(CompareGroup& group, const TrainInputs& in, MetricsSink* sink,
                       const char* command);

} // namespace mixlab::cli
