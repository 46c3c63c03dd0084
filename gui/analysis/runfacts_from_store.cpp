// Fills RunFacts from stored runs as the CLI's recorder does from its sink (each step
// through mixlab::record_step), with the device the run's environment describes and the
// profiling pass (phases, layers, GPU busy share) where one ran.
#include "analysis/runfacts_from_store.h"

#include "runs/runstore.h"

#include "mixlab/environment.h"

namespace {

bool runDone(const RunRecord &run)
{
    return (run.status == RunRecord::Status::Finished ||
            run.status == RunRecord::Status::Stopped) &&
           run.summary.has_value();
}

void setError(QString *error, const QString &text)
{
    if (error) *error = text;
}

} // namespace

bool groupFinished(const RunStore &store, int group)
{
    const std::vector<int> ids = store.groupRuns(group);
    if (group <= 0 || ids.empty()) return false;
    for (int id : ids) {
        const RunRecord *run = store.run(id);
        if (!run || !runDone(*run)) return false;
    }
    return true;
}

int latestFinishedGroup(const RunStore &store)
{
    int latest = 0;
    for (int id : store.runIds())
        if (const RunRecord *run = store.run(id);
            run && run->group > latest && groupFinished(store, run->group))
            latest = run->group;
    return latest;
}

std::vector<mixlab::RunFacts> runFactsFromStore(const RunStore &store, int group, QString *error)
{
    if (!groupFinished(store, group)) {
        setError(error, QObject::tr("Group %1 has no finished runs to explain.").arg(group));
        return {};
    }
    std::vector<mixlab::RunFacts> facts;
    for (int id : store.groupRuns(group)) {
        const RunRecord &run = *store.run(id);
        mixlab::RunFacts f;
        f.policy = run.config.policy;
        f.batch = run.config.batch_size;
        f.bptt = run.config.bptt;
        f.summary = *run.summary;
        f.loss_scale_mode = mixlab::effective_loss_scale_mode(run.config);
        f.master_weights = run.config.optimizer.master_weights;
        f.device_bytes = std::int64_t(run.deviceMemoryMB * 1e6);
        f.baseline = 0;
        if (run.context) {
            f.device = mixlab::device_info_of(run.context->environment);
            QString why;
            const std::optional<TrainedModel> trained = trainedModel(run, &why);
            if (!trained) {
                setError(error, why);
                return {};
            }
            f.graph = trained->graph;
        }
        if (run.profile) {
            f.profile = run.profile;
            if (mixlab::ran_on_gpu(f)) f.gpu_busy_fraction = run.profile->gpu_busy_fraction;
        }
        for (const mixlab::StepMetrics &m : run.steps) mixlab::record_step(f, m);
        for (const TimedEvent &e : run.events) mixlab::record_event(f, e.event);
        facts.push_back(std::move(f));
    }
    return facts;
}
