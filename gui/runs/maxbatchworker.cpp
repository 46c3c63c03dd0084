// MaxBatchWorker: one search on the worker thread, set up by the engine's mixlab::RunGroup
// (the device, the data sized for the search and the graph once, every policy checked on
// the device), then each policy in turn through the group's search_max_batch, every trial
// sent to the GUI as it lands, and Stop honoured before every trial.
#include "runs/maxbatchworker.h"

#include "mixlab/run_group.h"

#include <exception>
#include <optional>
#include <stop_token>
#include <vector>

namespace {

QString messageOf(const std::exception &e) { return QString::fromUtf8(e.what()); }

// The group's trials as the worker's signals; the group's runs are the search's policies,
// in order, so a run index is a policy index.
class SearchObserver : public mixlab::RunGroupObserver {
public:
    explicit SearchObserver(MaxBatchWorker &worker) : m_worker(worker) {}
    void on_trial_started(int run, int batch) override { emit m_worker.trialStarted(run, batch); }
    void on_trial(int run, const mixlab::BatchTrial &trial) override
    {
        emit m_worker.trialDone(run, trial);
    }

private:
    MaxBatchWorker &m_worker;
};

} // namespace

MaxBatchWorker::MaxBatchWorker(QObject *parent) : QObject(parent) {}

void MaxBatchWorker::requestStop() { m_stop.request(); }

void MaxBatchWorker::resetStop() { m_stop.reset(); }

void MaxBatchWorker::runSearch(const SearchJob &search)
{
    bool stopped = false;
    try {
        stopped = searchPolicies(search, m_stop.token());
    } catch (const std::exception &e) {
        emit searchFailed(messageOf(e));
    } catch (...) {
        emit searchFailed(tr("the search failed with an unknown error"));
    }
    emit searchFinished(stopped);
}

bool MaxBatchWorker::searchPolicies(const SearchJob &search, const std::stop_token &stop)
{
    // One run config per policy; the search sets each trial's batch and step count (1
    // passes the config's checks on any data).
    mixlab::RunConfig base = search.config;
    base.batch_size = 1;
    base.steps = 0;
    std::vector<mixlab::RunConfig> configs;
    for (mixlab::Policy p : search.policies) configs.push_back(mixlab::with_policy(base, p));

    SearchObserver observer(*this);
    // The fake trials need no device and no data: only the real search sets them up.
    std::optional<mixlab::RunGroup> group;
    if (!m_fakeTrial) {
        for (mixlab::RunConfig &c : configs)
            mixlab::size_synthetic_for_search(c.dataset, search.options);
        group.emplace(search.model, configs);
        if (!group->prepare(observer, stop)) return true;
        const mixlab::GroupFacts &facts = group->facts();
        emit searchPrepared(MaxBatchContext{QString::fromStdString(facts.device.name),
                                            QString::fromStdString(facts.dataset_name),
                                            facts.train_samples});
    }
    // The test hook's trials, announced as the group announces its own.
    const auto fakeTrials = [&](int i) {
        return [&, i](int batch) {
            observer.on_trial_started(i, batch);
            const mixlab::BatchTrial t = m_fakeTrial(search.policies[std::size_t(i)], batch);
            observer.on_trial(i, t);
            return t;
        };
    };
    for (int i = 0; i < int(configs.size()); ++i) {
        if (stop.stop_requested()) return true;
        try {
            if (group)
                group->check_run(i);
            else
                mixlab::validate_run_config(configs[std::size_t(i)]);
        } catch (const std::exception &e) {
            emit policyFailed(i, messageOf(e));
            continue;
        }
        emit policyStarted(i);
        try {
            const mixlab::MaxBatchSearch found =
                group ? group->search_max_batch(i, search.options, observer, stop)
                      : mixlab::search_max_batch(fakeTrials(i), search.options, stop);
            if (!found.complete) return true;
            emit policyDone(i, found.result);
        } catch (const std::exception &e) {
            // Not "does not fit" (a trial says that): something this policy cannot run at
            // all. The next policy may still run.
            emit policyFailed(i, messageOf(e));
        }
    }
    return false;
}
