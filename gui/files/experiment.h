// Experiment files (`mixlab-experiment/2`, usually *.mixlab.json): the designer's model,
// the run panel's config and compare policies, and every recorded run with its metrics.
// Version 1 (before the profile took `mixlab-cli explain --json`'s keys) still opens.
#pragma once
#include "mixlab/model_spec.h"
#include "mixlab/policy.h"
#include "mixlab/run_config.h"

#include <QString>

#include <vector>

class RunStore;

inline constexpr const char *k_experimentFormat = "mixlab-experiment/2";

struct ExperimentFile {
    mixlab::ModelSpec model;
    mixlab::RunConfig config;
    std::vector<mixlab::Policy> comparePolicies;
};

// Writes the file atomically (QSaveFile). Every run in the store is saved with what
// it has recorded (its profiling pass, when one ran, as an optional "profile"; its numerics
// samples, when it took any, as an optional "numerics" array), except
// queued runs that have not begun. Non-finite metrics are written as null. Returns
// false with a message in *error on failure.
bool saveExperiment(const QString &path, const ExperimentFile &file, const RunStore &store,
                    QString *error);

// Reads the whole file and checks it before touching anything: on failure (unreadable,
// malformed JSON, another or newer format, a missing or mistyped field) *file and
// *store are left as they were and *error says what is wrong and where. On success the
// store's runs are replaced by the file's (with fresh ids; group numbers, names, colours,
// visibility, statuses and data kept; a run saved while running or queued comes back Stopped).
bool loadExperiment(const QString &path, ExperimentFile *file, RunStore *store, QString *error);
