// MaxBatchWorker: one search on the worker thread: the device, the data sized for the
// search and the graph once, then each policy in turn through mixlab::find_max_batch, every
// trial sent to the GUI as it lands, and Stop honoured before every trial.
#include "runs/maxbatchworker.h"

#include "mixlab/backend.h"
#include "mixlab/dataset.h"
#include "mixlab/graph.h"
#include "mixlab/trainer.h"

#include <algorithm>
#include <exception>
#include <memory>
#include <stop_token>

namespace {

// The CLI's sizing (mixlab-cli maxbatch): synthetic data of 4x the limit, so that the
// largest batches still draw different samples each step, capped so that the set stays
// small next to the memory being probed (768 MiB of 32x32x3 images).
constexpr std::int64_t k_syntheticCap = 262144;
// Evaluation only runs when a trial's steps cross an epoch end; its accuracy is not the
// point here, so a small test split keeps that pass short.
constexpr std::int64_t k_syntheticTest = 256;

// Thrown when Stop was pressed: from a trial it ends find_max_batch between trials.
struct StopRequested {};

QString messageOf(const std::exception &e) { return QString::fromUtf8(e.what()); }

} // namespace

MaxBatchWorker::MaxBatchWorker(QObject *parent) : QObject(parent) {}

void MaxBatchWorker::requestStop() { m_stop.request(); }

void MaxBatchWorker::resetStop() { m_stop.reset(); }

void MaxBatchWorker::runSearch(const MaxBatchSearch &search)
{
    const std::stop_token stop = m_stop.token();
    const auto checkStop = [&stop] {
        if (stop.stop_requested())
            throw StopRequested{};
    };
    const TrialFunction &fake = m_fakeTrial;
    bool stopped = false;
    try {
        // Declared in this order so that they are destroyed data first, backend last.
        std::unique_ptr<mixlab::Backend> backend;
        std::unique_ptr<mixlab::Dataset> data;
        std::unique_ptr<mixlab::Graph> graph;
        std::unique_ptr<mixlab::DeviceDataset> deviceData;
        if (!fake) {
            mixlab::DatasetOptions ds = search.config.dataset;
            const std::string name = ds.name.empty() ? mixlab::default_dataset_name() : ds.name;
            if (name == "synthetic") {
                ds.synthetic_train = std::min<std::int64_t>(4 * std::int64_t(search.options.limit), k_syntheticCap);
                ds.synthetic_test = std::min<std::int64_t>(k_syntheticTest, ds.synthetic_train);
            }
            backend = mixlab::make_backend(search.config.device);
            checkStop();
            data = std::make_unique<mixlab::Dataset>(mixlab::load_dataset(ds, search.config.seed));
            checkStop();
            const mixlab::Shape input{{data->height, data->width, data->channels}};
            graph = std::make_unique<mixlab::Graph>(mixlab::build_graph(search.model, input, data->classes));
            deviceData = std::make_unique<mixlab::DeviceDataset>(*data, *backend);
            emit searchPrepared(MaxBatchContext{QString::fromStdString(backend->info().name),
                                                QString::fromStdString(data->name), data->train.n});
        }
        for (std::size_t i = 0; i < search.policies.size(); ++i) {
            checkStop();
            const int index = int(i);
            mixlab::RunConfig config = search.config;
            config.policy = search.policies[i];
            // The search sets each trial's batch; 1 passes the config's checks on any set.
            config.batch_size = 1;
            config.steps = 0;
            try {
                mixlab::validate_run_config(config);
                if (backend)
                    mixlab::check_policy_supported(backend->info(), config.policy);
            } catch (const std::exception &e) {
                emit policyFailed(index, messageOf(e));
                continue;
            }
            emit policyStarted(index);
            const auto trial = [&](int batch) {
                checkStop();
                emit trialStarted(index, batch);
                const mixlab::BatchTrial t =
                    fake ? fake(config.policy, batch)
                         : mixlab::run_batch_trial(*graph, config, *deviceData, *backend, batch, search.options);
                emit trialDone(index, t);
                return t;
            };
            try {
                emit policyDone(index, mixlab::find_max_batch(trial, search.options));
            } catch (const StopRequested &) {
                throw;
            } catch (const std::exception &e) {
                // Not "does not fit" (run_batch_trial turns that into a trial): something
                // this policy cannot run at all. The next policy may still run.
                emit policyFailed(index, messageOf(e));
            }
        }
    } catch (const StopRequested &) {
        stopped = true; // what was set up so far is freed by now
    } catch (const std::exception &e) {
        emit searchFailed(messageOf(e));
    } catch (...) {
        emit searchFailed(tr("the search failed with an unknown error"));
    }
    emit searchFinished(stopped);
}
