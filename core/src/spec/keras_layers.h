// One Keras layer's config as MixLab layers, and its dtype policy: what keras_import's
// Sequential and Functional readers share.
#pragma once
#include "mixlab/model_spec.h"

#include <nlohmann/json.hpp>

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace mixlab::keras {

// A layer's dtype policy as Keras wrote it: a dtype string, a Policy / DTypePolicy object,
// or nothing (the layer follows the model).
enum class LayerDtype { Unset, Float32, MixedFloat16, MixedBfloat16 };

struct Layer {
    std::string name, class_name;
    const nlohmann::json* config = nullptr; // an object, never null once read
    const nlohmann::json* entry = nullptr;  // the model's list entry holding the config
    std::vector<std::string> inputs;        // the layers feeding it (Functional only)
    std::vector<int> input_nodes;           // the call of each input read (0, a model's 1)
    // Where the layer sits: its name under the nested models holding it, "backbone/conv"
    // (the name alone at the top), and the group model.weights.h5 keeps its variables in.
    std::string path, h5_group;
    std::vector<Layer> layers; // a nested Sequential or Functional model's own layers
};

// "layer 'dense_1' (Dense)", "layer 'backbone/conv' (Conv2D)": how every message names a
// Keras layer.
std::string layer_label(const Layer& l);

// A Sequential or Functional model (Keras 2.0-2.3's "Model" too) with its list of layers:
// one used as a layer of another is flattened into it.
bool is_model(const Layer& l);

// The group Keras's saving_lib keeps a layer's variables in, under its model's `parent`
// group ("" at the top): "<parent>layers/<class in snake case>", with "_<k>" for the k-th
// earlier layer of the same class in the model's list (_save_container_state: layers are
// not addressed by their names). `seen` counts the classes so far.
std::string h5_group(const std::string& parent, const std::string& class_name,
                     std::map<std::string, int>& seen);

// [[noreturn]]: a SpecError "layer 'x' (Class): what", one line.
[[noreturn]] void fail(const Layer& l, const std::string& what);

LayerDtype layer_dtype(const Layer& l);
std::string_view dtype_name(LayerDtype d); // the Keras name, "mixed_float16"

// The classes convert_layer knows, for messages: "InputLayer, Flatten, Dense, ...".
extern const char* const k_supported_classes;

// The MixLab layers for one Keras layer (none for a linear Activation, two for a Conv2D
// with a fused softmax), force_fp32 set when `mixed` and the layer is float32. InputLayer
// and Add are the graph's business, not this function's.
std::vector<LayerSpec> convert_layer(const Layer& l, bool mixed);

// A ZeroPadding2D's rows and columns added on each side (top = bottom, left = right;
// another form is refused).
std::pair<int, int> zero_padding(const Layer& l);

// The per-sample shape of an InputLayer's "batch_shape" / "batch_input_shape" (the batch
// dimension dropped); empty when unknown sizes (null) are in it.
std::vector<int> input_shape_of(const nlohmann::json& batch_shape);

} // namespace mixlab::keras
