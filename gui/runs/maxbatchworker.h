// MaxBatchWorker: the largest-batch search on the app's worker thread (RunController's,
// shared with TrainingWorker): a mixlab::RunGroup with one run per policy, searched policy
// after policy (RunGroup::search_max_batch), each trial reported as it lands. It owns the
// group for the search; the GUI sees values.
#pragma once
#include "runs/jobstop.h"
#include "runs/workermessages.h"

#include <QObject>
#include <QString>

#include <functional>
#include <stop_token>

class MaxBatchWorker : public QObject {
    Q_OBJECT
public:
    explicit MaxBatchWorker(QObject *parent = nullptr);
    // Thread-safe: the search ends before its next trial (the trial in flight finishes).
    void requestStop();
    // Arms a fresh stop for the next search; call before queueing it (the controller does).
    void resetStop();

    // Test hook: replaces the real trial (mixlab::run_batch_trial, and the group's device
    // and data it needs: none is set up) with this function, called on the worker thread
    // through mixlab::search_max_batch. Set it between searches.
    using TrialFunction = std::function<mixlab::BatchTrial(mixlab::Policy, int batch)>;
    void setTrialForTesting(TrialFunction trial) { m_fakeTrial = std::move(trial); }

public slots:
    void runSearch(const SearchJob &search); // blocks the worker thread until it ends

signals:
    // policyIndex: the policy's place in SearchJob::policies.
    void searchPrepared(const MaxBatchContext &context); // device opened, data loaded
    void policyStarted(int policyIndex);
    void trialStarted(int policyIndex, int batch);
    void trialDone(int policyIndex, const mixlab::BatchTrial &trial);
    void policyDone(int policyIndex, const mixlab::MaxBatchResult &result);
    // This policy cannot run at all (not supported here, a setting it rejects); the
    // search goes on with the next policy.
    void policyFailed(int policyIndex, const QString &message);
    // The search as a whole could not run (the device, the data, the model).
    void searchFailed(const QString &message);
    // Always the last signal of a search. stopped: a Stop cut the search short.
    void searchFinished(bool stopped);

private:
    // The search itself; true when a stop ended it. What it set up is freed when it returns.
    bool searchPolicies(const SearchJob &search, const std::stop_token &stop);

    JobStop m_stop;
    TrialFunction m_fakeTrial;
};
