// Keras models into MixLab model specs: the JSON of `model.to_json()` (Keras 2 and 3) and
// the same object as a `.keras` archive's config.json holds, Sequential and Functional.
#pragma once
#include "mixlab/model_spec.h"
#include "mixlab/policy.h"

#include <string>
#include <string_view>
#include <vector>

namespace mixlab {

// Where a layer of the spec came from: the Keras layer it was converted from (a stack of
// LSTMs: each, in order; none for the softmax split off a Conv2D), and the same for a
// residual block's branches. Parallel to the spec's lists, so the weights of an archive
// find their MixLab layer. A layer of a nested model (a Sequential or Functional model
// used as a layer, flattened into the spec) is named by its path, "backbone/conv".
struct KerasOrigin {
    std::vector<std::string> keras_layers;
    // Parallel to keras_layers: where model.weights.h5 keeps each one's variables, as Keras
    // names them, by class and position: "layers/conv2d_1", "layers/sequential/layers/dense".
    std::vector<std::string> h5_groups;
    std::vector<KerasOrigin> body, shortcut;
    bool operator==(const KerasOrigin&) const = default;
};

// What an import found besides the layers: MixLab's model spec has no policy or input
// shape (both belong to a run: the run config and the dataset), so they come back here
// for the caller to suggest.
struct KerasImport {
    ModelSpec spec;
    // The policy the Keras layers ran under: mixed_float16 -> MixedFP16, mixed_bfloat16 ->
    // MixedBF16, float32 -> FP32. Layers kept in float32 under a mixed policy carry
    // "dtype": "float32" in the spec.
    Policy policy = Policy::FP32;
    std::string keras_policy;         // the Keras name: "mixed_float16", "float32"
    std::vector<int> input_shape;     // per sample (H, W, C), empty when the file does not say
    int keras_major = 0;              // 2 or 3: which generation wrote the JSON
    std::string model_class;          // "Sequential" or "Functional"
    std::vector<KerasOrigin> origins; // one per spec.layers entry
    // A .keras archive's model.weights.h5 (empty for JSON, or an archive without one).
    std::string weights_h5;
};

// Throws SpecError naming the Keras layer (its name and class) and what MixLab supports
// when a layer, an option or the graph's shape has no MixLab equivalent, and when the
// text is not JSON or not a Keras model. The spec it returns validates as a file would.
KerasImport import_keras_model(std::string_view json_text);
// The same from a file: the JSON, or a .keras archive (a zip: its config.json, and its
// model.weights.h5 kept in weights_h5), told apart by the name or the zip's first bytes.
// Messages name the file (InputError when it is missing, unreadable, not a whole zip or
// an archive without config.json).
KerasImport load_keras_model(const std::string& path);

} // namespace mixlab
