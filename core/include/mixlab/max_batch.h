// The max-batch finder: the largest batch a model trains at under one policy, found by
// doubling and then bisecting, with the throughput of every batch tried on the way (the
// throughput-versus-batch curve).
#pragma once
#include "mixlab/backend.h"
#include "mixlab/graph.h"
#include "mixlab/run_config.h"
#include "mixlab/trainer.h"

#include <cstdint>
#include <functional>
#include <stop_token>
#include <string>
#include <vector>

namespace mixlab {

// One batch size tried.
struct BatchTrial {
    int batch = 0;
    bool fits = false;
    // Why it did not fit: the OutOfMemoryError's message, or that the training split
    // has fewer samples than the batch. Empty when it fits.
    std::string why_not;
    bool out_of_memory = false;    // it failed on memory (not on the size of the data)
    double step_ms = 0;            // mean device time of the timed steps, when it fits
    double samples_per_s = 0;      // batch / step time, when it fits
    std::int64_t device_bytes = 0; // what the run allocated (parameters, activations...)
    double seconds = 0;            // wall time of the whole trial, planning included
};

struct MaxBatchOptions {
    int start = 32;      // the first batch tried; halved while it does not fit
    int limit = 1 << 16; // the largest batch tried (doubling stops here)
    // Bisection probes multiples of `multiple` (once the batch is at least that): 8 is
    // what fp16/bf16 tensor cores want of a GEMM dimension, and the batch is one, so the
    // answer is a batch worth training at. Below `multiple` every batch counts.
    int multiple = 8;
    // Bisection also stops once the gap between the largest fit and the first failure is
    // at most this fraction of the largest fit: a ratio between policies good to a few
    // per cent needs no more trials (each costs a run start and, on CUDA, the convolution
    // algorithm searches at the new batch). 0: resolve down to `multiple`.
    double resolution = 0.02;
    int warmup_steps = 3; // steps run before timing: plans, graph recording, clocks
    int timed_steps = 5;  // steps whose device time is averaged
};

struct MaxBatchResult {
    std::vector<BatchTrial> trials; // every batch tried once, sorted by batch: the curve
    int largest_fit = 0;            // 0 when not even batch 1 fits
    int first_failure = 0;          // the smallest failing batch above largest_fit; 0: none
    std::string failure_reason;     // that failure's why_not
    bool failure_out_of_memory = false;
    bool reached_limit = false; // options.limit fits: the true maximum may lie above
    // The trial at largest_fit, or null.
    const BatchTrial* largest() const;
};

// Throws InputError naming the field for options no search can use (start < 1, limit
// below start, multiple < 1, resolution outside [0, 1), no timed steps ...).
void validate_max_batch_options(const MaxBatchOptions& options);

// Synthetic data sized to a search (the CLI's maxbatch and the app's search): this many
// training samples per batch of options.limit, so that the largest batches still draw
// different samples each step; at most k_search_synthetic_cap (768 MiB of 32x32x3 images),
// so that the set stays small next to the memory being probed; and a test split of
// k_search_synthetic_test: evaluation runs only when a trial crosses an epoch end, and its
// accuracy is not the point of a search.
inline constexpr std::int64_t k_search_synthetic_per_batch = 4;
inline constexpr std::int64_t k_search_synthetic_cap = 262144;
inline constexpr std::int64_t k_search_synthetic_test = 256;

// Sizes `dataset` for a search up to options.limit when it is the synthetic set (named so,
// or unnamed where the default dataset is synthetic); returns whether it did. Other data
// are left as they are.
bool size_synthetic_for_search(DatasetOptions& dataset, const MaxBatchOptions& options);

// What find_max_batch would answer from the trials seen so far, for a search stopped
// between trials: the trials sorted by batch and the largest batch that fitted.
MaxBatchResult partial_max_batch_result(std::vector<BatchTrial> trials);

// The search, independent of what a trial does: from options.start, doubling while the
// trial fits (the last step clamped to options.limit), halving instead when start itself
// does not fit, then bisecting between the largest fit and the smallest failure above it
// until they are options.multiple (or options.resolution of the fit) apart. A batch is
// never tried twice. Trials that contradict each other (a larger batch fitting where a
// smaller one failed) do not break it: the answer is always a batch that was seen to fit,
// below the smallest failure seen above it. Exceptions from `trial` propagate.
MaxBatchResult find_max_batch(const std::function<BatchTrial(int batch)>& trial,
                              const MaxBatchOptions& options);

// A search that a stop can end between trials: complete, or stopped with what the trials
// so far found (partial_max_batch_result).
struct MaxBatchSearch {
    MaxBatchResult result;
    bool complete = false;
};

// find_max_batch with `stop` checked before every trial: once it is requested no further
// trial runs and the answer is the partial one. RunGroup::search_max_batch runs the real
// trials through it; a front end's test double can run fake ones.
MaxBatchSearch search_max_batch(const std::function<BatchTrial(int batch)>& trial,
                                const MaxBatchOptions& options, std::stop_token stop);

// The real trial: a TrainingRun of `graph` under `config` (its policy, optimizer, seed,
// data; its batch size and step count replaced) at `batch` on `backend`, with
// options.warmup_steps + options.timed_steps steps. OutOfMemoryError, from allocation,
// planning or a step, is "does not fit" with its message; a batch larger than the
// training split is "does not fit" too. Everything the run allocated is freed (and the
// backend synchronized) before it returns. Any other exception propagates.
BatchTrial run_batch_trial(const Graph& graph, const RunConfig& config, DeviceDataset& data,
                           Backend& backend, int batch, const MaxBatchOptions& options);

// A JSON object: largest_fit, first_failure, failure_reason, failure_out_of_memory,
// reached_limit and "curve": the trials (batch, fits, step_ms, samples_per_s,
// device_bytes, seconds, why_not, out_of_memory).
std::string max_batch_result_to_json(const MaxBatchResult& result);

} // namespace mixlab
