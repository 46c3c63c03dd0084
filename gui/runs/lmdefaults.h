// The run settings a language model starts from (the word-language-model example's, as
// mixlab::with_language_model_defaults gives them), applied field by field so that what
// the user set by hand stays, and undone the same way when an image model comes back.
#pragma once
#include "mixlab/run_config.h"

#include <QStringList>

#include <set>

// The run panel's fields the defaults touch.
enum class RunField { Dataset, Batch, Bptt, Optimizer, LearningRate, Momentum, Clip, LrSchedule };

// `to` with field `f` copied from `from`.
void copyRunField(RunField f, const mixlab::RunConfig &from, mixlab::RunConfig &to);
bool sameRunField(RunField f, const mixlab::RunConfig &a, const mixlab::RunConfig &b);
// "batch 20", "lr 20", "clip 0.25", "plateau schedule (x0.25)", "synthetic-text".
QString runFieldText(RunField f, const mixlab::RunConfig &c);

struct LmDefaultsChange {
    mixlab::RunConfig config;   // `now` with the defaults in
    std::set<RunField> applied; // the fields that changed
    std::set<RunField> kept;    // left as the user set them, though the defaults differ
};
// The defaults over `now`, except the fields in `edited`. The dataset becomes synthetic-text
// when `textDataset` is false (a language model cannot train on images), edited or not.
LmDefaultsChange languageModelDefaults(const mixlab::RunConfig &now,
                                       const std::set<RunField> &edited, bool textDataset);
// What an image model gets back: each field in `applied`, unless it is in `edited`, as it
// was in `before`. The dataset only while it is still synthetic-text.
mixlab::RunConfig restoreBeforeLanguageModel(const mixlab::RunConfig &now,
                                             const mixlab::RunConfig &before,
                                             const std::set<RunField> &applied,
                                             const std::set<RunField> &edited);
// "synthetic-text, batch 20, bptt 35, ..." for a status line.
QString runFieldsText(const std::set<RunField> &fields, const mixlab::RunConfig &c);
