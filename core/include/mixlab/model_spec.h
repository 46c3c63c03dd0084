// The user-facing model format `mixlab-model/1`: parsing, validation and writing.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace mixlab {

enum class LayerType { Flatten, Dense, Activation, Dropout };
enum class Activation { None, Relu, Sigmoid, Tanh, Gelu, Softmax };

std::string_view layer_type_name(LayerType t);   // "dense", ...
std::string_view activation_name(Activation a);  // "relu", ... ("linear" for None)

struct LayerSpec {
    LayerType type = LayerType::Dense;
    int units = 0;                        // dense
    Activation activation = Activation::None; // dense (fused) or activation layer
    bool use_bias = true;                 // dense
    float rate = 0.0f;                    // dropout probability of zeroing
    bool force_fp32 = false;              // "dtype": "float32": kept out of reduced precision
};

struct ModelSpec {
    std::string name;
    std::vector<LayerSpec> layers;
};

inline constexpr std::string_view k_model_format = "mixlab-model/1";

// Throw SpecError with messages such as
//   layer 3 (dense): "units" must be a positive integer, got -5
ModelSpec parse_model_spec(std::string_view json_text);
ModelSpec load_model_spec(const std::string& path); // also names the file on error
std::string model_spec_to_json(const ModelSpec& spec); // parse(to_json(s)) == s

} // namespace mixlab
