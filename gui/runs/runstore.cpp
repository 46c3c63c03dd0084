// RunStore: the GUI thread's per-run arrays and bookkeeping; every change is announced
// through a signal so that the table, charts and log view can follow.
#include "runs/runstore.h"

#include "common/enginetext.h"
#include "common/languagemodel.h"
#include "common/runcolors.h"

#include "mixlab/policy.h"

#include <algorithm>

QString runStatusName(RunRecord::Status s)
{
    switch (s) {
    case RunRecord::Status::Queued: return QStringLiteral("Queued");
    case RunRecord::Status::Running: return QStringLiteral("Running");
    case RunRecord::Status::Finished: return QStringLiteral("Finished");
    case RunRecord::Status::Stopped: return QStringLiteral("Stopped");
    case RunRecord::Status::Failed: return QStringLiteral("Failed");
    }
    return QStringLiteral("Unknown");
}

std::optional<TrainedModel> trainedModel(const RunRecord &run, QString *error)
{
    const auto fail = [&](const QString &why) {
        if (error) *error = why;
        return std::nullopt;
    };
    if (!run.context) return fail(QObject::tr("%1 never loaded its data").arg(run.name));
    if (run.modelJson.isEmpty()) return fail(QObject::tr("%1 has no model").arg(run.name));
    try {
        TrainedModel m;
        m.spec = mixlab::parse_model_spec(run.modelJson.toStdString());
        m.graph = mixlab::build_graph(m.spec, run.context->input, run.context->classes);
        return m;
    } catch (const std::exception &e) {
        return fail(QObject::tr("%1: its model does not build: %2")
                        .arg(run.name, QString::fromUtf8(e.what())));
    }
}

bool isLanguageModelJson(const QString &modelJson)
{
    if (modelJson.isEmpty()) return false;
    try {
        return mixlab::is_language_model(mixlab::parse_model_spec(modelJson.toStdString()));
    } catch (const std::exception &) {
        return false;
    }
}

RunStore::RunStore(QObject *parent) : QObject(parent) {}

int RunStore::addRun(const mixlab::RunConfig &config, const QString &modelJson, int group)
{
    RunRecord r;
    r.id = ++m_lastId;
    r.group = group;
    r.name = QStringLiteral("%1 b%2 #%3")
                 .arg(policyText(config.policy))
                 .arg(config.batch_size)
                 .arg(r.id);
    r.color = runColor(r.id);
    r.config = config;
    r.modelJson = modelJson;
    r.languageModel = isLanguageModelJson(modelJson);
    m_lastGroup = std::max(m_lastGroup, group);
    m_runs.emplace(r.id, std::move(r));
    m_order.push_back(m_lastId);
    emit runAdded(m_lastId);
    return m_lastId;
}

int RunStore::insertRecord(RunRecord record)
{
    record.id = ++m_lastId;
    if (record.name.isEmpty())
        record.name = QStringLiteral("%1 b%2 #%3")
                          .arg(policyText(record.config.policy))
                          .arg(record.config.batch_size)
                          .arg(record.id);
    if (!record.color.isValid()) record.color = runColor(record.id);
    record.languageModel = record.languageModel || isLanguageModelJson(record.modelJson);
    m_lastGroup = std::max(m_lastGroup, record.group);
    m_runs.emplace(record.id, std::move(record));
    m_order.push_back(m_lastId);
    emit runAdded(m_lastId);
    return m_lastId;
}

void RunStore::removeRun(int id)
{
    if (m_runs.erase(id) == 0) return;
    m_order.erase(std::remove(m_order.begin(), m_order.end(), id), m_order.end());
    emit runRemoved(id);
}

void RunStore::clear()
{
    // One runRemoved per run, oldest first, so views can drop their rows and series.
    const std::vector<int> ids = m_order;
    for (int id : ids) removeRun(id);
    // Group numbers start again (a new or opened experiment numbers its own); run ids go
    // on, so that metrics still in flight for a removed run never reach a new one.
    m_lastGroup = 0;
}

const RunRecord *RunStore::run(int id) const
{
    const auto it = m_runs.find(id);
    return it == m_runs.end() ? nullptr : &it->second;
}

RunRecord *RunStore::mutableRun(int id)
{
    const auto it = m_runs.find(id);
    return it == m_runs.end() ? nullptr : &it->second;
}

std::vector<int> RunStore::runIds() const { return m_order; }

std::vector<int> RunStore::groupRuns(int group) const
{
    std::vector<int> out;
    for (int id : m_order)
        if (m_runs.at(id).group == group) out.push_back(id);
    return out;
}

// Metrics may still arrive for a run the user has just deleted: they are dropped.
void RunStore::appendSteps(int id, const std::vector<mixlab::StepMetrics> &steps)
{
    RunRecord *r = mutableRun(id);
    if (!r || steps.empty()) return;
    const int first = int(r->steps.size());
    r->steps.insert(r->steps.end(), steps.begin(), steps.end());
    emit stepsAppended(id, first);
}

void RunStore::appendEpochs(int id, const std::vector<mixlab::EpochMetrics> &epochs)
{
    RunRecord *r = mutableRun(id);
    if (!r || epochs.empty()) return;
    const int first = int(r->epochs.size());
    r->epochs.insert(r->epochs.end(), epochs.begin(), epochs.end());
    emit epochsAppended(id, first);
}

void RunStore::appendEvents(int id, const std::vector<TimedEvent> &events)
{
    RunRecord *r = mutableRun(id);
    if (!r || events.empty()) return;
    const int first = int(r->events.size());
    r->events.insert(r->events.end(), events.begin(), events.end());
    emit eventsAppended(id, first);
}

void RunStore::appendNumerics(int id, const std::vector<mixlab::NumericsSample> &samples)
{
    RunRecord *r = mutableRun(id);
    if (!r || samples.empty()) return;
    const int first = int(r->numerics.size());
    r->numerics.insert(r->numerics.end(), samples.begin(), samples.end());
    emit numericsAppended(id, first);
}

void RunStore::setStatus(int id, RunRecord::Status status, const QString &failure)
{
    RunRecord *r = mutableRun(id);
    if (!r) return;
    if (r->status == status && r->failure == failure) return;
    r->status = status;
    r->failure = status == RunRecord::Status::Failed ? failure : QString();
    const QDateTime now = QDateTime::currentDateTime();
    if (status == RunRecord::Status::Running && !r->started.isValid()) r->started = now;
    if (status == RunRecord::Status::Finished || status == RunRecord::Status::Stopped ||
        status == RunRecord::Status::Failed)
        r->ended = now;
    emit runChanged(id);
}

void RunStore::setStarted(int id, qint64 totalSteps, double deviceMemoryMB)
{
    RunRecord *r = mutableRun(id);
    if (!r) return;
    r->totalSteps = totalSteps;
    r->deviceMemoryMB = deviceMemoryMB;
    // The planned steps' records in one block: a growing vector would copy everything at
    // each doubling (on the GUI thread) and leave the freed halves in the heap, ~50 bytes a
    // step more resident over a 100k-step run than the 56 the records themselves take.
    // Pages not yet written cost no memory; the cap bounds what an absurd plan reserves.
    if (totalSteps > 0)
        r->steps.reserve(std::size_t(std::min<qint64>(totalSteps, qint64(1) << 20)));
    if (!r->started.isValid()) r->started = QDateTime::currentDateTime();
    emit runChanged(id);
}

void RunStore::setSummary(int id, const mixlab::RunSummary &summary)
{
    RunRecord *r = mutableRun(id);
    if (!r) return;
    r->summary = summary;
    emit runChanged(id);
}

void RunStore::setContext(int id, const RunContext &context)
{
    RunRecord *r = mutableRun(id);
    if (!r) return;
    r->context = context;
    emit runChanged(id);
}

void RunStore::setProfile(int id, const mixlab::StepProfile &profile)
{
    RunRecord *r = mutableRun(id);
    if (!r) return;
    r->profile = profile;
    emit runChanged(id);
}

void RunStore::setSample(int id, const RunSample &sample)
{
    RunRecord *r = mutableRun(id);
    if (!r) return;
    r->sample = sample;
    emit runSampled(id);
}

void RunStore::setWeights(int id, const QString &path, const QString &failure)
{
    RunRecord *r = mutableRun(id);
    if (!r) return;
    r->weightsPath = path;
    r->weightsFailure = failure;
    emit runChanged(id);
}

void RunStore::setCheckpointFolder(int id, const QString &folder)
{
    RunRecord *r = mutableRun(id);
    if (!r) return;
    r->checkpointFolder = folder;
    emit runChanged(id);
}

void RunStore::setCheckpointFailure(int id, const QString &failure)
{
    RunRecord *r = mutableRun(id);
    if (!r) return;
    r->checkpointFailure = failure;
    emit runChanged(id);
}

void RunStore::setVisible(int id, bool visible)
{
    RunRecord *r = mutableRun(id);
    if (!r || r->visible == visible) return;
    r->visible = visible;
    emit runChanged(id);
}

void RunStore::rename(int id, const QString &name)
{
    RunRecord *r = mutableRun(id);
    const QString trimmed = name.trimmed();
    if (!r || trimmed.isEmpty() || r->name == trimmed) return;
    r->name = trimmed;
    emit runChanged(id);
}
