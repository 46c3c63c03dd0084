// RunStore: every run's data on the GUI side (per-run arrays of steps, epochs and
// events, numerics samples, status, name, colour, visibility, profiling pass). Lives in the GUI thread; the worker's
// batches are appended here and the views listen to its signals.
#pragma once
#include "runs/workermessages.h"

#include "mixlab/environment.h"
#include "mixlab/graph.h"
#include "mixlab/model_spec.h"
#include "mixlab/run_config.h"
#include "mixlab/step_profile.h"
#include "mixlab/trainer.h"

#include <QColor>
#include <QDateTime>
#include <QObject>
#include <QString>

#include <map>
#include <optional>
#include <vector>

struct RunRecord {
    enum class Status { Queued, Running, Finished, Stopped, Failed };
    int id = 0;
    int group = 0;       // compare group; runs started together share it
    QString name;        // user-editable, defaults to "<policy> b<batch> #<id>"
    QColor color;        // stable per run
    bool visible = true; // shown in the charts
    Status status = Status::Queued;
    QString failure; // reason when Failed
    mixlab::RunConfig config;
    QString modelJson; // the model spec the run trained (mixlab-model/1)
    qint64 totalSteps = 0;
    QDateTime started, ended;
    std::vector<mixlab::StepMetrics> steps;
    std::vector<mixlab::EpochMetrics> epochs;
    std::vector<TimedEvent> events;
    // Numerics samples (RunConfig::numerics_every), in step order; none when it was 0.
    std::vector<mixlab::NumericsSample> numerics;
    std::optional<mixlab::RunSummary> summary;
    double deviceMemoryMB = 0;         // allocated by the run on the device
    std::optional<RunContext> context; // set once the worker has opened device and data
    // The profiling pass after the timed steps (phases, layers, host overhead); its
    // steps are not in `steps`. Absent for a stopped or failed group.
    std::optional<mixlab::StepProfile> profile;
    // A language model (its first layer an embedding): losses per token, perplexities,
    // throughput in tokens. Set from the model when the run is added.
    bool languageModel = false;
    // What a language model wrote after training (RunGroupOptions::sample_words).
    std::optional<RunSample> sample;
    // This session's copy of the weights the run ended with (safetensors, written by the
    // worker as the run ended), or why there is none; both empty while running, for a
    // failed run, and for runs of an opened experiment (files hold no weights).
    QString weightsPath, weightsFailure;
    // Where the run writes a checkpoint at each epoch end (Run > Checkpoints at epoch
    // ends; empty: it does not), a folder of its own that outlives the session, and why
    // the last checkpoint that failed could not be written (the run went on).
    QString checkpointFolder, checkpointFailure;
    // The weights file the run started from (Run > Start from weights; empty: none): the
    // exported log's config says it as "start_weights".
    QString startWeights;
};

// Whether a model (mixlab-model/1 text) is a language model; false when it does not parse.
bool isLanguageModelJson(const QString &modelJson);

QString runStatusName(RunRecord::Status s);

// The model a run trained, parsed back from its record, and its graph on the run's data.
struct TrainedModel {
    mixlab::ModelSpec spec;
    mixlab::Graph graph;
};
// None, with the reason in *error, before the worker has loaded the run's data (no shape
// to build the graph for) or when the model does not build (it never trained).
std::optional<TrainedModel> trainedModel(const RunRecord &run, QString *error = nullptr);

class RunStore : public QObject {
    Q_OBJECT
public:
    explicit RunStore(QObject *parent = nullptr);

    // Returns the new run's id (ids grow from 1 and are never reused).
    int addRun(const mixlab::RunConfig &config, const QString &modelJson, int group);
    int newGroup() { return ++m_lastGroup; }
    // Adds a complete record (a loaded experiment's run): it gets a fresh id; its name,
    // colour and data are kept. Emits runAdded once everything is in place.
    int insertRecord(RunRecord record);
    void removeRun(int id);
    void clear(); // every run; group numbers start from 1 again

    const RunRecord *run(int id) const;
    RunRecord *mutableRun(int id);   // for loading experiments; emits nothing
    std::vector<int> runIds() const; // in creation order
    std::vector<int> groupRuns(int group) const;

    void appendSteps(int id, const std::vector<mixlab::StepMetrics> &steps);
    void appendEpochs(int id, const std::vector<mixlab::EpochMetrics> &epochs);
    void appendEvents(int id, const std::vector<TimedEvent> &events);
    void appendNumerics(int id, const std::vector<mixlab::NumericsSample> &samples);
    void setStatus(int id, RunRecord::Status status, const QString &failure = {});
    void setStarted(int id, qint64 totalSteps, double deviceMemoryMB);
    void setSummary(int id, const mixlab::RunSummary &summary);
    void setContext(int id, const RunContext &context);
    void setProfile(int id, const mixlab::StepProfile &profile);          // emits runChanged
    void setSample(int id, const RunSample &sample);                      // emits runSampled
    void setWeights(int id, const QString &path, const QString &failure); // emits runChanged
    void setCheckpointFolder(int id, const QString &folder);              // emits runChanged
    void setCheckpointFailure(int id, const QString &failure);            // emits runChanged
    void setVisible(int id, bool visible);
    void rename(int id, const QString &name);

signals:
    void runAdded(int id);
    void runChanged(int id); // status, name, visibility, summary
    void runRemoved(int id);
    void stepsAppended(int id, int firstNewIndex);
    void epochsAppended(int id, int firstNewIndex);
    void eventsAppended(int id, int firstNewIndex);
    void numericsAppended(int id, int firstNewIndex);
    void runSampled(int id); // a language model's sample arrived

private:
    std::map<int, RunRecord> m_runs;
    std::vector<int> m_order;
    int m_lastId = 0;
    int m_lastGroup = 0;
};
