// The user-facing model format `mixlab-model/1`: parsing, validation and writing.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace mixlab {

enum class LayerType {
    Flatten,
    Dense,
    Activation,
    Dropout,
    Conv2D,
    BatchNorm,
    MaxPool2D,
    AvgPool2D,
    GlobalAvgPool,
    Residual,
    Embedding, // language models: token ids to vectors (the first layer)
    Lstm,      // language models: stacked LSTM layers over a sequence
};
// "padding": "valid" (none), "same" (symmetric (kernel-1)/2 per side, so the output is
// ceil(input/stride); odd kernels only, as cuDNN pads symmetrically) or explicit numbers.
enum class Padding { Valid, Same, Explicit };
enum class Activation { None, Relu, Sigmoid, Tanh, Gelu, Softmax };

std::string_view layer_type_name(LayerType t);  // "dense", ...
std::string_view activation_name(Activation a); // "relu", ... ("linear" for None)
std::string_view padding_name(Padding p);       // "valid", "same", "explicit"

// dense "units": "classes": as many units as the dataset has classes (presets use it
// so one file serves CIFAR-10 and CIFAR-100); build_graph resolves it.
inline constexpr int k_units_classes = -1;
// dense "units": "vocab": a language model's decoder, one unit per word of the corpus's
// vocabulary (which is the number of classes of a language model); resolved the same way,
// kept apart so the file reads back as written.
inline constexpr int k_units_vocab = -2;
// embedding "vocab": "dataset": as many rows as the corpus has words; build_graph resolves it.
inline constexpr int k_vocab_dataset = -1;

// One layer as the user wrote it. Fields a type does not use keep their defaults and
// are not written back. Images are NHWC: (height, width, channels) per sample.
struct LayerSpec {
    LayerType type = LayerType::Dense;
    int units = 0; // dense (k_units_classes: one per class; k_units_vocab: one per word)
    Activation activation = Activation::None; // dense/conv2d (fused), activation layer,
                                              // residual (applied after the sum)
    bool use_bias = true;                     // dense, conv2d
    float rate = 0.0f;                        // dropout probability of zeroing; lstm
                                              // "dropout" between its stacked layers
    bool force_fp32 = false;                  // "dtype": "float32": kept out of reduced precision
    // "dtype": "bfloat16": kept out of fp8 under mixed_fp8 (in the policy's bf16); under
    // the other policies it changes nothing.
    bool no_fp8 = false;

    // conv2d: "filters", "kernel" (n or [h, w]); pooling: "pool_size" (n or [h, w]),
    // both stored as kernel_h/kernel_w. "stride" (n or [h, w]) defaults to 1 for conv2d
    // and to the pool size for pooling. "padding": "valid", "same", n or [h, w].
    int filters = 0;
    int kernel_h = 0, kernel_w = 0;
    int stride_h = 0, stride_w = 0; // 0: the type's default (resolved by the graph)
    Padding padding = Padding::Valid;
    int pad_h = 0, pad_w = 0; // Explicit only

    // batchnorm, PyTorch's convention: running = (1 - momentum) * running
    // + momentum * batch statistic; the running variance is the unbiased one.
    float momentum = 0.1f;
    float epsilon = 1e-5f;

    // embedding: a (vocab x dim) table; "vocab" a number or "dataset" (k_vocab_dataset).
    int vocab = k_vocab_dataset;
    int dim = 0;
    // lstm: "hidden" units per layer, "layers" stacked (PyTorch's nn.LSTM num_layers), with
    // "dropout" (rate above) on the outputs of every layer but the last, as nn.LSTM does.
    int hidden = 0;
    int num_layers = 1;
    // dense: the decoder of a language model reads the embedding's table as its weights
    // (Press & Wolf 2017; the example's --tied): shapes checked by build_graph.
    bool tie_weights = false;

    // residual: output = activation(body(x) + shortcut(x)); an empty shortcut is the
    // identity.
    std::vector<LayerSpec> body, shortcut;

    bool operator==(const LayerSpec&) const = default;
};

struct ModelSpec {
    std::string name;
    std::vector<LayerSpec> layers;
    bool operator==(const ModelSpec&) const = default;
};

// A language model: a model whose first layer is an embedding (it reads token ids, and
// trains on a word-level corpus with truncated BPTT).
bool is_language_model(const ModelSpec& spec);

inline constexpr std::string_view k_model_format = "mixlab-model/1";

// Throw SpecError with messages such as
//   layer 3 (dense): "units" must be a positive integer, got -5
//   layer 4 > body 2 (conv2d): "filters" must be a positive integer, got 0
ModelSpec parse_model_spec(std::string_view json_text);
ModelSpec load_model_spec(const std::string& path);    // also names the file on error
std::string model_spec_to_json(const ModelSpec& spec); // parse(to_json(s)) == s
class JsonReader;
// A model spec held in another document (a log's, an experiment's): read as
// parse_model_spec reads a file, the message placed where the reader is.
ModelSpec model_spec_from_json(const JsonReader& json);

} // namespace mixlab
