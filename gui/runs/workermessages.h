// What crosses between the app's worker thread and the GUI thread: the jobs RunController
// queues (TrainingJob, SearchJob) and everything the workers send back. Plain values
// only: no engine object, store, widget or controller is ever shared between the threads.
#pragma once
#include "mixlab/environment.h"
#include "mixlab/graph.h"
#include "mixlab/max_batch.h"
#include "mixlab/model_spec.h"
#include "mixlab/numerics.h"
#include "mixlab/policy.h"
#include "mixlab/run_config.h"
#include "mixlab/step_profile.h"
#include "mixlab/text_corpus.h"
#include "mixlab/trainer.h"

#include <QDateTime>
#include <QMetaType>
#include <QString>

#include <optional>
#include <vector>

// --- Training (TrainingWorker) ---

// Language models: the text each run writes after training (RunGroupOptions's
// sample_words and sample_temperature); words 0: none.
struct TextSampling {
    static constexpr int k_defaultWords = 100;
    int words = k_defaultWords;
    float temperature = 1.0f;
};

struct TrainingJob {
    mixlab::ModelSpec model;
    std::vector<mixlab::RunConfig> runs; // one per policy, all else equal
    std::vector<int> runIds;             // RunStore ids, same order
    TextSampling sampling;
    // Non-empty: every run starts from this safetensors file (RunGroupOptions::load_weights).
    QString startWeights;
    // Non-empty: each run that ends unfailed writes its weights to
    // weightsFolder/run-<id>.safetensors (TrainingWorker says why there, not in memory).
    QString weightsFolder;
    // Empty, or one per run (an empty entry: none for that run): each run writes a
    // checkpoint into its folder at each epoch end, keeping the newest keepCheckpoints
    // (RunGroupOptions::RunOutputs).
    std::vector<QString> checkpointFolders;
    int keepCheckpoints = 1;
    // Non-empty (a job of one run, whose model and config are the checkpoint's): the run
    // continues from this checkpoint (RunGroupOptions::resume).
    QString resumeFrom;
};

// Where a job's run `runId` writes its trained weights in `folder`.
inline QString runWeightsPath(const QString &folder, int runId)
{
    return folder + QStringLiteral("/run-%1.safetensors").arg(runId);
}

// What a language model wrote after training, or why it could not.
struct RunSample {
    QString text;
    QString failure; // set instead of text when sampling failed
    int words = 0;
    float temperature = 1.0f;
};

// A run's event with the wall-clock time the worker saw it (the log shows it).
struct TimedEvent {
    QDateTime time;
    mixlab::RunEvent event;
};

// Metrics gathered in the worker between two emissions (at most 20 a second).
struct MetricsBatch {
    struct PerRun {
        int runId = 0;
        std::vector<mixlab::StepMetrics> steps;
        std::vector<mixlab::EpochMetrics> epochs;
        std::vector<TimedEvent> events;
        std::vector<mixlab::NumericsSample> numerics; // RunConfig::numerics_every
        std::optional<RunSample> sample;              // after training, once
    };
    std::vector<PerRun> runs;
};

// What the worker learnt while preparing a run: the data's sample shape (which the
// model was built for) and the machine it ran on. Log export needs both.
struct RunContext {
    mixlab::Shape input; // (H, W, C) of the dataset's samples
    int classes = 0;
    QString datasetName, datasetSource;
    mixlab::Environment environment;
    // Language models: the test perplexities the run reads against (unigram, trigram
    // count model, the source's floor).
    std::optional<mixlab::PerplexityReferences> perplexityReferences;
};

// --- Largest-batch search (MaxBatchWorker) ---

// One search: the model and run settings (dataset, device, seed, optimizer...; batch and
// steps are the search's) under each policy in turn, with the search's options.
struct SearchJob {
    mixlab::ModelSpec model;
    mixlab::RunConfig config;
    std::vector<mixlab::Policy> policies; // the first one is the base of the ratios
    mixlab::MaxBatchOptions options;
};

// What the search opened before its first trial: the device and the training data.
struct MaxBatchContext {
    QString deviceName;
    QString datasetName;
    qint64 trainSamples = 0;
};

Q_DECLARE_METATYPE(TrainingJob)
Q_DECLARE_METATYPE(MetricsBatch)
Q_DECLARE_METATYPE(mixlab::RunSummary)
Q_DECLARE_METATYPE(RunContext)
Q_DECLARE_METATYPE(mixlab::StepProfile)
Q_DECLARE_METATYPE(SearchJob)
Q_DECLARE_METATYPE(MaxBatchContext)
Q_DECLARE_METATYPE(mixlab::BatchTrial)
Q_DECLARE_METATYPE(mixlab::MaxBatchResult)

// Registers the types above for queued signals and QVariant (RunController does, once).
inline void registerWorkerMessages()
{
    qRegisterMetaType<TrainingJob>();
    qRegisterMetaType<MetricsBatch>();
    qRegisterMetaType<mixlab::RunSummary>();
    qRegisterMetaType<RunContext>();
    qRegisterMetaType<mixlab::StepProfile>();
    qRegisterMetaType<SearchJob>();
    qRegisterMetaType<MaxBatchContext>();
    qRegisterMetaType<mixlab::BatchTrial>();
    qRegisterMetaType<mixlab::MaxBatchResult>();
}
