// Fills RunFacts from stored runs the way the CLI's recorder does from its sink: each
// step's loss, the scale at the first step plus every step where it changed, and the
// profiling pass (phases, layers, GPU busy share) where one ran.
#include "analysis/runfacts_from_store.h"

#include "runs/runstore.h"

#include <QStringList>

namespace {

bool runDone(const RunRecord &run)
{
    return (run.status == RunRecord::Status::Finished || run.status == RunRecord::Status::Stopped)
           && run.summary.has_value();
}

// The backend's facts back from the environment the worker recorded.
mixlab::DeviceInfo deviceOf(const mixlab::Environment &env)
{
    mixlab::DeviceInfo d;
    d.backend = env.backend;
    d.name = env.device_name;
    d.memory_bytes = env.device_memory_bytes;
    d.tensor_cores = env.tensor_cores;
    d.bf16 = env.bf16;
    d.tf32 = env.tf32;
    const QStringList cc = QString::fromStdString(env.compute_capability).split(QLatin1Char('.'));
    if (cc.size() == 2) {
        d.cc_major = cc[0].toInt();
        d.cc_minor = cc[1].toInt();
    }
    d.driver_version = env.driver_version;
    d.runtime_version = env.runtime_version;
    d.cublas_version = env.cublas_version;
    d.cudnn_version = env.cudnn_version;
    return d;
}

void setError(QString *error, const QString &text)
{
    if (error)
        *error = text;
}

} // namespace

bool groupFinished(const RunStore &store, int group)
{
    const std::vector<int> ids = store.groupRuns(group);
    if (group <= 0 || ids.empty())
        return false;
    for (int id : ids) {
        const RunRecord *run = store.run(id);
        if (!run || !runDone(*run))
            return false;
    }
    return true;
}

int latestFinishedGroup(const RunStore &store)
{
    int latest = 0;
    for (int id : store.runIds())
        if (const RunRecord *run = store.run(id); run && run->group > latest && groupFinished(store, run->group))
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
        f.summary = *run.summary;
        f.loss_scale_mode = mixlab::effective_loss_scale_mode(run.config);
        f.baseline = 0;
        if (run.context) {
            f.device = deviceOf(run.context->environment);
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
            if (mixlab::ran_on_gpu(f))
                f.gpu_busy_fraction = run.profile->gpu_busy_fraction;
        }
        for (const mixlab::StepMetrics &m : run.steps) {
            f.train_loss.push_back(m.loss);
            if (f.scale_history.empty() || f.scale_history.back().second != m.loss_scale)
                f.scale_history.emplace_back(m.step, m.loss_scale);
            f.final_train_accuracy = m.accuracy;
        }
        facts.push_back(std::move(f));
    }
    return facts;
}
