// The tiny model and quick CPU run the app's window-level suites train: a few seconds of
// work at most on the CPU backend (256 synthetic images, batch 32); a finished run put
// into a RunStore by hand, as the worker would leave it, for the suites that explain or
// report on runs without training them; and the script that answers the window's
// questions and file dialogs so that none blocks a suite.
#pragma once

#include "app_test_mode.h"
#include "common/filedialogs.h"
#include "common/usermessages.h"
#include "runs/runstore.h"

#include "mixlab/model_spec.h"
#include "mixlab/run_config.h"

#include <QRandomGenerator>
#include <QString>

#include <cmath>
#include <deque>
#include <string>
#include <vector>

// Records every message the app shows and answers its questions and file dialogs from
// queues: install() in a suite's init() (it starts empty), uninstall() in cleanupTestCase().
struct DialogScript {
    std::vector<UserMessage> messages;
    std::deque<int> answers; // the next questions' choices; none left: -1 (closed)
    std::vector<FileRequest> fileRequests;
    std::deque<QString> fileAnswers; // the next file dialogs' paths; none left: cancelled

    void install()
    {
        messages.clear();
        answers.clear();
        fileRequests.clear();
        fileAnswers.clear();
        setUserMessageRecorder([this](const UserMessage& m) {
            messages.push_back(m);
            if (m.kind != UserMessage::Kind::Question || answers.empty()) return -1;
            const int choice = answers.front();
            answers.pop_front();
            return choice;
        });
        setFileDialogAnswerer([this](const FileRequest& request, QString*) {
            fileRequests.push_back(request);
            if (fileAnswers.empty()) return QString();
            const QString path = fileAnswers.front();
            fileAnswers.pop_front();
            return path;
        });
    }
    static void uninstall()
    {
        setUserMessageRecorder({});
        setFileDialogAnswerer({});
    }
};

inline mixlab::ModelSpec tinyGuiModel()
{
    return mixlab::parse_model_spec(R"({"format": "mixlab-model/1", "name": "tiny",
        "layers": [{"type": "flatten"}, {"type": "dense", "units": 16, "activation": "relu"},
                   {"type": "dense", "units": 10}]})");
}

inline mixlab::RunConfig quickCpuConfig(int epochs)
{
    mixlab::RunConfig c;
    c.dataset.name = "synthetic";
    c.dataset.synthetic_train = 256;
    c.dataset.synthetic_test = 64;
    c.batch_size = 32;
    c.epochs = epochs;
    c.optimizer.lr = 0.05f;
    c.device = mixlab::DeviceChoice::CPU;
    c.seed = 7;
    return c;
}

// What a finished run of addFinishedRun is made of.
struct FinishedRunSpec {
    QString modelJson;              // mixlab-model/1
    mixlab::Shape input{{4, 4, 1}}; // the data's sample shape
    mixlab::Policy policy = mixlab::Policy::FP32;
    double medianMs = 1.0; // the summary's step time
    int steps = 20;
    int halveAt = 0; // the step the loss scale halves at; 0: never
    mixlab::BackendKind backend = mixlab::BackendKind::Cpu; // Cuda: a GPU run (an H100)
};

// A run of `spec` in `group`, finished: per-step losses falling with seeded noise, the
// loss scale (65536) halving at spec.halveAt, the summary, and a context on a CPU or GPU.
inline int addFinishedRun(RunStore& store, int group, const FinishedRunSpec& spec,
                          QRandomGenerator& rng)
{
    mixlab::RunConfig c;
    c.policy = spec.policy;
    c.batch_size = 32;
    c.steps = spec.steps;
    const int id = store.addRun(c, spec.modelJson, group);
    RunContext ctx;
    ctx.input = spec.input;
    ctx.classes = 10;
    ctx.datasetName = QStringLiteral("synthetic");
    ctx.environment.backend = spec.backend;
    ctx.environment.device_name =
        spec.backend == mixlab::BackendKind::Cuda ? "NVIDIA H100" : "CPU (no CUDA device)";
    ctx.environment.compute_capability = spec.backend == mixlab::BackendKind::Cuda ? "9.0" : "cpu";
    ctx.environment.tensor_cores = ctx.environment.bf16 = ctx.environment.tf32 =
        spec.backend == mixlab::BackendKind::Cuda;
    ctx.environment.mixlab_version = "0.1.0";
    store.setContext(id, ctx);
    store.setStatus(id, RunRecord::Status::Running);
    std::vector<mixlab::StepMetrics> steps;
    float scale = 65536;
    for (int s = 1; s <= spec.steps; ++s) {
        mixlab::StepMetrics m;
        m.step = s;
        m.epoch = 1;
        m.loss = float(2.3 * std::exp(-0.05 * s) + 0.1 * rng.generateDouble());
        m.accuracy = float(rng.generateDouble());
        if (s == spec.halveAt) scale /= 2;
        m.loss_scale = scale;
        m.step_ms = float(spec.medianMs);
        steps.push_back(m);
    }
    store.appendSteps(id, steps);
    mixlab::RunSummary sum;
    sum.steps = spec.steps;
    sum.median_step_ms = spec.medianMs;
    sum.mean_step_ms = spec.medianMs * 1.03;
    sum.final_loss_scale = scale;
    sum.final_train_loss = steps.back().loss;
    store.setSummary(id, sum);
    store.setStatus(id, RunRecord::Status::Finished);
    return id;
}

// A finished record turned into one stopped inside its first epoch: no epoch ended, so the
// test split was never evaluated and the summary has no test loss or accuracy.
inline void stopBeforeFirstEvaluation(RunRecord& r)
{
    r.status = RunRecord::Status::Stopped;
    r.epochs.clear();
    if (!r.summary) r.summary.emplace();
    r.summary->stopped = true;
    r.summary->epochs_done = 0;
    r.summary->final_test_loss.reset();
    r.summary->final_test_accuracy.reset();
}
