// What `train` and `compare` share: their options, the run config the options build,
// the checks made before anything trains, Ctrl-C handling and the end-of-run report.
#pragma once
#include "args.h"

#include "mixlab/backend.h"
#include "mixlab/dataset.h"
#include "mixlab/graph.h"
#include "mixlab/model_spec.h"
#include "mixlab/run_config.h"
#include "mixlab/trainer.h"

#include <atomic>
#include <cstdio>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>

namespace mixlab::cli {

// Declares the options of train (--policy) or compare (--policies), in --help order.
void add_train_options(ArgParser& parser, bool compare);

struct TrainInputs {
    RunConfig config;                   // --run file, then the command line over it; validated
    std::string model_path;
    ModelSpec spec;
    std::optional<std::string> log_json, log_csv;
    std::int64_t progress_every = 0;    // 0: automatic
};

// Reads and validates everything the options name that is cheap to check: the run
// config, the model file, the log paths. Throws InputError naming the option.
TrainInputs read_train_inputs(const ArgParser& parser, bool compare);

// The backend the config asks for; a device that cannot be used (no CUDA device, a
// policy the GPU lacks) is bad input here, before the run, so it becomes InputError.
std::unique_ptr<Backend> open_backend(const RunConfig& config);
void check_policy_on_device(const Backend& backend, Policy policy);

// Loads the dataset the config names (InputError/DataError naming the folder or file),
// builds the graph for its shape, and checks that a batch fits in the training split.
struct PreparedData {
    Dataset data;
    Graph graph;
};
PreparedData prepare_data(const TrainInputs& inputs);

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
