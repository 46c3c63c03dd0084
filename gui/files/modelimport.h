// File > Import model: a model file read into a model spec, whichever kind it is. A
// MixLab model (mixlab-model/1) goes to the designer as it is; a Keras model (the JSON of
// model.to_json(), or a .keras archive) comes with what Keras said besides the layers
// (its policy, input shape), which the app turns into a new experiment's settings.
#pragma once
#include "mixlab/model_spec.h"
#include "mixlab/policy.h"

#include <QString>

#include <optional>
#include <vector>

struct ImportedModel {
    mixlab::ModelSpec spec;
    bool keras = false; // read by mixlab::load_keras_model; the fields below are its
    mixlab::Policy policy = mixlab::Policy::FP32;
    QString kerasPolicy; // "mixed_float16", "float32"
    QString modelClass;  // "Sequential", "Functional"
    int kerasMajor = 0;
    std::vector<int> inputShape; // per sample (H, W, C); empty when the file does not say
};

// Reads `path`: a `.keras` file, or a JSON object without MixLab's "format" key, through
// the Keras importer; anything else (a MixLab model, a file that is not JSON) through
// MixLab's own model reader, whose messages say what is wrong. None, with the reader's
// message in *error, when the file is refused; nothing else happens.
std::optional<ImportedModel> readModelFile(const QString &path, QString *error);

// One line for the status bar and the log: what an import brought in. "Imported seed-mlp
// from Keras 2: Sequential, 5 layers, Keras policy mixed_float16 → mixed_fp16, input
// 32x32x3".
QString importSummary(const ImportedModel &model, const QString &path);
