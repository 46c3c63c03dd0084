// Log export: replays the store's records into a mixlab::RunLog, the very class the CLI
// writes its logs with, so the GUI's files read exactly like `mixlab-cli`'s.
#include "files/logexport.h"

#include "runs/runstore.h"

#include "mixlab/environment.h"
#include "mixlab/error.h"
#include "mixlab/graph.h"
#include "mixlab/model_spec.h"
#include "mixlab/run_log.h"

#include <QFile>
#include <QFileInfo>

#include <exception>

bool exportLogs(const RunStore &store, const std::vector<int> &runIds, const QString &path,
                QString *error)
{
    auto failWith = [&](const QString &message) {
        if (error) *error = message;
        return false;
    };
    if (runIds.empty()) return failWith(QStringLiteral("no runs chosen to export"));
    std::vector<const RunRecord *> records;
    for (int id : runIds) {
        const RunRecord *r = store.run(id);
        if (!r) return failWith(QStringLiteral("run #%1 no longer exists").arg(id));
        records.push_back(r);
    }
    const QString suffix = QFileInfo(path).suffix().toLower();
    if (suffix != QLatin1String("json") && suffix != QLatin1String("csv"))
        return failWith(QStringLiteral("cannot export to '%1': choose a file name ending in "
                                       ".json or .csv")
                            .arg(path));

    try {
        const RunRecord &first = *records.front();
        mixlab::RunLog log(records.size() == 1 ? mixlab::RunLog::Kind::Train
                                               : mixlab::RunLog::Kind::Compare);
        log.set_environment(first.context ? first.context->environment
                                          : mixlab::describe_environment(mixlab::DeviceInfo{}));
        if (first.context && first.context->perplexityReferences)
            log.set_perplexity_references(*first.context->perplexityReferences);
        for (const RunRecord *r : records) {
            const int index = log.add_run(r->config);
            // Each run's own model: runs of several compare groups may have trained
            // different ones (an Apply between them). The graph needs the data's shape,
            // known once the worker loaded the data; a run that failed before that, or
            // whose model does not build (it never trained), keeps the model null.
            if (const std::optional<TrainedModel> trained = trainedModel(*r))
                log.set_run_model(index, trained->spec, trained->graph);
            if (!r->startWeights.isEmpty())
                log.set_run_start_weights(index, QFile::encodeName(r->startWeights).toStdString());
            for (const mixlab::StepMetrics &m : r->steps) log.on_step(index, m);
            for (const mixlab::EpochMetrics &m : r->epochs) log.on_epoch(index, m);
            for (const TimedEvent &e : r->events) log.on_event(index, e.event);
            for (const mixlab::NumericsSample &s : r->numerics) log.on_numerics(index, s);
            if (r->summary) log.set_summary(index, *r->summary);
        }
        const std::string file = QFile::encodeName(path).toStdString();
        if (suffix == QLatin1String("json"))
            log.write_json(file);
        else
            log.write_csv(file);
    } catch (const std::exception &e) {
        return failWith(QString::fromUtf8(e.what()));
    }
    return true;
}
