// What `train`, `compare`, `explain` and `maxbatch` share: their options, the run configs
// the options build, the checks made before anything trains, how a group that could not be
// set up is reported, Ctrl-C handling and number formats.
#pragma once
#include "args.h"

#include "mixlab/model_spec.h"
#include "mixlab/run_config.h"
#include "mixlab/run_group.h"

#include <atomic>
#include <cstdio>
#include <exception>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

namespace mixlab::cli {

// Declares the options of train (--policy) or compare (--policies), in --help order.
void add_train_options(ArgParser& parser, bool compare);

struct TrainInputs {
    RunConfig config; // --run file, then the command line over it; validated
    std::string model_path;
    ModelSpec spec;
    std::optional<std::string> log_json, log_csv;
    // train only: --load-weights, --save-weights (safetensors files).
    std::optional<std::string> load_weights, save_weights, save_predictions;
    // train only: --save-checkpoint, --resume (mixlab/checkpoint.h).
    std::optional<std::string> save_checkpoint, resume;
    std::int64_t progress_every = 0; // 0: automatic
    // Language models: words to generate after training (0: none) and their temperature.
    int sample_words = 0;
    float temperature = 1.0f;
};

// Reads and validates everything the options name that is cheap to check: the run
// config, the model file, the log paths. Throws InputError naming the option.
TrainInputs read_train_inputs(const ArgParser& parser, bool compare);

// What read_train_inputs does with --resume (cli/resume_options.cpp): the model and run
// config from the checkpoint, --epochs/--steps to extend it, the output options; an
// option that would change the run is refused, naming it.
TrainInputs read_resume_inputs(const ArgParser& parser);
// The output options (logs, progress, sample, weights and checkpoint files) into `in`,
// whose spec is set; InputError naming the option.
void read_output_options(const ArgParser& parser, TrainInputs& in, bool compare);
// validate_run_config on in.config as the runs will take it.
void check_train_config(const TrainInputs& in, bool compare);

// One config per policy: `base` under each, validated (InputError naming the field).
std::vector<RunConfig> configs_for(const RunConfig& base, const std::vector<Policy>& policies);

// Rethrows what stopped a group from being set up (RunGroup) as the CLI reports it: a
// device that cannot be used (no CUDA device, a policy the GPU lacks) is bad input, an
// InputError naming the option (--device, the policy); anything else as it was thrown.
// `run` is the run being set up, -1 for the group's device, data or graph.
[[noreturn]] void throw_setup_error(const std::exception_ptr& error, GroupPhase phase, int run,
                                    const std::vector<RunConfig>& configs);

// Says on stderr, once, why --device auto runs on the CPU when that is something to
// install (cli/device_notice.h); call when the device is open.
void note_device(const RunConfig& config, const GroupFacts& facts);

// Ctrl-C asks the runs to stop (the logs are still written); a second Ctrl-C ends the
// program at once. Restores the previous handler when destroyed.
class InterruptStop {
public:
    InterruptStop();
    ~InterruptStop();
    InterruptStop(const InterruptStop&) = delete;
    InterruptStop& operator=(const InterruptStop&) = delete;
    std::stop_token token() const { return m_source.get_token(); }
    bool interrupted() const;

private:
    std::stop_source m_source;
    std::jthread m_watcher;
    void (*m_previous)(int) = nullptr;
};

// "1.234" with three decimals, or "n/a" for zero/non-finite (no steps past warm-up).
std::string format_ms(double ms);
// Samples per second from a device step time (the headline, step_time.h); "n/a" when unknown.
std::string format_throughput(int batch, double step_ms);

} // namespace mixlab::cli
