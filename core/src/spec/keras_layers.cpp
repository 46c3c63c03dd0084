// One Keras layer's config as MixLab layers. Options that change what a layer computes
// and that MixLab cannot express are refused by name; those that only change training
// (initializers, regularizers, constraints, trainable) are left behind, as the spec has
// no place for them.
#include "spec/keras_layers.h"

#include "base/json_util.h"
#include "mixlab/error.h"

#include <cstdint>
#include <optional>
#include <utility>

namespace mixlab::keras {

using json_util::shown;
using nlohmann::json;

const char* const k_supported_classes =
    "InputLayer, Flatten, Dense, Activation, ReLU, Softmax, Dropout, Conv2D, "
    "BatchNormalization, MaxPooling2D, AveragePooling2D, GlobalAveragePooling2D, Add "
    "(residual blocks), ZeroPadding2D (folded into the Conv2D or pooling after it), "
    "Embedding and LSTM";

namespace {

constexpr const char* k_activation_list = "linear, relu, sigmoid, tanh, gelu and softmax";
// The bounds model_spec enforces; checked here too so the message names the Keras layer.
constexpr std::int64_t k_max_units = 1000000;
constexpr std::int64_t k_max_filters = 65536;
constexpr std::int64_t k_max_window = 64;
constexpr std::int64_t k_max_vocab = 1000000;
constexpr std::int64_t k_max_hidden = 65536;

// A config field, nullptr when absent or null (Keras writes null for "not set").
const json* field(const Layer& l, const char* key)
{
    const auto it = l.config->find(key);
    if (it == l.config->end() || it->is_null()) return nullptr;
    return &*it;
}

std::int64_t positive(const Layer& l, const char* key, const json& v, std::int64_t max)
{
    if (!v.is_number_integer() || (v.is_number_unsigned() && v.get<std::uint64_t>() > 1u << 30) ||
        v.get<std::int64_t>() < 1 || v.get<std::int64_t>() > max)
        fail(l, json_util::quoted(key) + " must be an integer from 1 to " + std::to_string(max) +
                    ", got " + shown(v));
    return v.get<std::int64_t>();
}

int positive_int(const Layer& l, const char* key, std::int64_t max)
{
    const json* v = field(l, key);
    if (!v) fail(l, "has no " + json_util::quoted(key));
    return int(positive(l, key, *v, max));
}

// Keras writes sizes as [h, w] lists (and accepts one number for both).
std::optional<std::pair<int, int>> window(const Layer& l, const char* key)
{
    const json* v = field(l, key);
    if (!v) return std::nullopt;
    if (v->is_array() && v->size() == 2)
        return std::pair{int(positive(l, key, (*v)[0], k_max_window)),
                         int(positive(l, key, (*v)[1], k_max_window))};
    if (v->is_array())
        fail(l, json_util::quoted(key) + " must be [height, width], got " + shown(*v));
    const int n = int(positive(l, key, *v, k_max_window));
    return std::pair{n, n};
}

std::string text(const Layer& l, const char* key, const std::string& fallback)
{
    const json* v = field(l, key);
    if (!v) return fallback;
    if (!v->is_string()) fail(l, json_util::quoted(key) + " must be a string, got " + shown(*v));
    return v->get<std::string>();
}

bool boolean(const Layer& l, const char* key, bool fallback)
{
    const json* v = field(l, key);
    if (!v) return fallback;
    if (!v->is_boolean())
        fail(l, json_util::quoted(key) + " must be true or false, got " + shown(*v));
    return v->get<bool>();
}

// MixLab's tensors are NHWC: a channels_first layer would read its input in another order.
void check_channels_last(const Layer& l)
{
    const std::string f = text(l, "data_format", "channels_last");
    if (f != "channels_last")
        fail(l, "\"data_format\": " + shown(json(f)) +
                    " is not supported: MixLab's images are channels_last (NHWC) only");
}

Activation activation(const Layer& l)
{
    const json* v = field(l, "activation");
    if (!v) return Activation::None;
    std::string name;
    if (v->is_string()) {
        name = v->get<std::string>();
    } else if (v->is_object() && v->value("class_name", json()) == "function" &&
               v->contains("config") && v->at("config").is_string()) {
        name = v->at("config").get<std::string>(); // a serialized built-in function
    } else {
        fail(l, "\"activation\" " + shown(*v) + " is not a built-in activation; MixLab supports " +
                    k_activation_list);
    }
    if (name == "linear") return Activation::None;
    for (Activation a : {Activation::Relu, Activation::Sigmoid, Activation::Tanh, Activation::Gelu,
                         Activation::Softmax})
        if (activation_name(a) == name) return a;
    fail(l, "activation " + shown(json(name)) + " has no MixLab equivalent; MixLab supports " +
                k_activation_list);
}

// Keras's "same" pads (size - 1) in total, the odd one at the bottom and right; MixLab's
// pads both sides equally, which is the same thing for odd sizes only.
Padding padding(const Layer& l, std::pair<int, int> size, const char* size_key)
{
    const std::string p = text(l, "padding", "valid");
    if (p == "valid") return Padding::Valid;
    if (p == "same") {
        if (size.first % 2 == 0 || size.second % 2 == 0)
            fail(l, "\"padding\": \"same\" with an even " + json_util::quoted(size_key) +
                        " is not supported: Keras pads such a window more at the bottom and right, "
                        "MixLab pads both sides equally (odd sizes only)");
        return Padding::Same;
    }
    fail(l, "\"padding\": " + shown(json(p)) + " is not supported; MixLab supports valid and same");
}

LayerSpec conv2d(const Layer& l)
{
    LayerSpec s;
    s.type = LayerType::Conv2D;
    check_channels_last(l);
    s.filters = positive_int(l, "filters", k_max_filters);
    const auto kernel = window(l, "kernel_size");
    if (!kernel) fail(l, "has no \"kernel_size\"");
    s.kernel_h = kernel->first;
    s.kernel_w = kernel->second;
    const auto dilation = window(l, "dilation_rate").value_or(std::pair{1, 1});
    if (dilation != std::pair{1, 1})
        fail(l, "\"dilation_rate\" " + shown(*field(l, "dilation_rate")) +
                    " is not supported: MixLab's conv2d is not dilated (dilation_rate 1 only)");
    if (const json* g = field(l, "groups"); g && *g != 1)
        fail(l, "\"groups\" " + shown(*g) + " is not supported: MixLab's conv2d has one group");
    const auto stride = window(l, "strides").value_or(std::pair{1, 1});
    if (stride != std::pair{1, 1}) {
        s.stride_h = stride.first;
        s.stride_w = stride.second;
    }
    s.padding = padding(l, *kernel, "kernel_size");
    s.activation = activation(l);
    s.use_bias = boolean(l, "use_bias", true);
    return s;
}

LayerSpec pooling(const Layer& l, LayerType type)
{
    LayerSpec s;
    s.type = type;
    check_channels_last(l);
    const auto size = window(l, "pool_size").value_or(std::pair{2, 2});
    s.kernel_h = size.first;
    s.kernel_w = size.second;
    // Keras writes the strides out even when they default to the pool size, as MixLab's
    // do: left at 0 the spec reads as a hand-written one would.
    const auto stride = window(l, "strides").value_or(size);
    if (stride != size) {
        s.stride_h = stride.first;
        s.stride_w = stride.second;
    }
    s.padding = padding(l, size, "pool_size");
    return s;
}

LayerSpec batchnorm(const Layer& l)
{
    LayerSpec s;
    s.type = LayerType::BatchNorm;
    if (const json* axis = field(l, "axis")) {
        const json a = axis->is_array() && axis->size() == 1 ? (*axis)[0] : *axis;
        if (a != -1 && a != 3)
            fail(l, "\"axis\" " + shown(*axis) +
                        " is not supported: MixLab's batchnorm normalises the channels, the last "
                        "axis (-1)");
    }
    if (!boolean(l, "center", true) || !boolean(l, "scale", true))
        fail(l, "\"center\": false and \"scale\": false are not supported: MixLab's batchnorm "
                "always learns both its scale and its shift");
    if (boolean(l, "renorm", false))
        fail(l, "\"renorm\": true is not supported: MixLab's batchnorm is the plain one");
    auto number = [&](const char* key, double fallback, double lo, double hi) {
        const json* v = field(l, key);
        if (!v) return fallback;
        if (!v->is_number() || v->get<double>() <= lo || v->get<double>() >= hi)
            fail(l, json_util::quoted(key) + " must be a number between " + std::to_string(lo) +
                        " and " + std::to_string(hi) + ", got " + shown(*v));
        return v->get<double>();
    };
    // Keras keeps `momentum` of the running value, PyTorch (and MixLab) takes `momentum`
    // of the batch's: Keras's default 0.99 is MixLab's 0.01.
    s.momentum = float(1.0 - number("momentum", 0.99, 0.0, 1.0));
    s.epsilon = float(number("epsilon", 1e-3, 0.0, 1.0));
    return s;
}

// Embedding(input_dim, output_dim): MixLab's embedding, a (vocab x dim) table.
LayerSpec embedding(const Layer& l)
{
    LayerSpec s;
    s.type = LayerType::Embedding;
    s.vocab = positive_int(l, "input_dim", k_max_vocab);
    s.dim = positive_int(l, "output_dim", k_max_hidden);
    if (boolean(l, "mask_zero", false))
        fail(l, "\"mask_zero\": true is not supported: MixLab's embedding masks no token");
    return s;
}

// LSTM: MixLab's lstm is PyTorch's nn.LSTM (tanh, sigmoid gates, both biases, the whole
// output sequence, running forwards); every option that computes something else is
// refused by name. "unroll" and "implementation" only choose how Keras runs the loop.
LayerSpec lstm(const Layer& l)
{
    LayerSpec s;
    s.type = LayerType::Lstm;
    s.hidden = positive_int(l, "units", k_max_hidden);
    const auto expect_text = [&](const char* key, const char* want) {
        const json* v = field(l, key);
        if (!v) return;
        const std::string got = v->is_string() ? v->get<std::string>() : shown(*v);
        if (got != want)
            fail(l, json_util::quoted(key) + " " + shown(*v) + " is not supported: MixLab's lstm " +
                        (std::string(key) == "activation" ? "runs tanh" : "gates with sigmoid") +
                        " (" + want + " only)");
    };
    expect_text("activation", "tanh");
    expect_text("recurrent_activation", "sigmoid");
    // Each option read with Keras's default (return_sequences is false unless written).
    const auto expect_bool = [&](const char* key, bool keras_default, bool want, const char* why) {
        if (boolean(l, key, keras_default) != want)
            fail(l, json_util::quoted(key) + ": " + (want ? "false" : "true") +
                        " is not supported: " + why);
    };
    expect_bool("use_bias", true, true, "MixLab's lstm has biases");
    expect_bool("return_sequences", false, true,
                "MixLab's lstm gives the whole output sequence (a language model's); write "
                "return_sequences=True");
    expect_bool("return_state", false, false, "MixLab's lstm gives its output sequence only");
    expect_bool("go_backwards", false, false, "MixLab's lstm runs forwards");
    expect_bool("stateful", false, false,
                "MixLab's lstm carries its state between windows of a corpus itself");
    expect_bool("time_major", false, false, "MixLab's lstm reads batch-major Keras input");
    for (const char* key : {"dropout", "recurrent_dropout"})
        if (const json* v = field(l, key); v && *v != 0 && *v != 0.0)
            fail(l, json_util::quoted(key) + " " + shown(*v) +
                        " is not supported: MixLab's lstm drops out only between stacked "
                        "layers (a Dropout layer between two LSTMs)");
    return s;
}

} // namespace

std::pair<int, int> zero_padding(const Layer& l)
{
    check_channels_last(l);
    const json* v = field(l, "padding");
    const auto side = [&](const json& n) {
        if (!n.is_number_integer() || n.get<std::int64_t>() < 0 ||
            n.get<std::int64_t>() > k_max_window)
            fail(l, "\"padding\" " + shown(*v) + " must hold integers from 0 to " +
                        std::to_string(k_max_window));
        return int(n.get<std::int64_t>());
    };
    if (!v) return {1, 1};
    if (v->is_number()) return {side(*v), side(*v)};
    if (v->is_array() && v->size() == 2 && (*v)[0].is_number() && (*v)[1].is_number())
        return {side((*v)[0]), side((*v)[1])};
    if (v->is_array() && v->size() == 2 && (*v)[0].is_array() && (*v)[0].size() == 2 &&
        (*v)[1].is_array() && (*v)[1].size() == 2) {
        const int top = side((*v)[0][0]), bottom = side((*v)[0][1]);
        const int left = side((*v)[1][0]), right = side((*v)[1][1]);
        if (top != bottom || left != right)
            fail(l, "\"padding\" " + shown(*v) +
                        " pads one side more than the other; MixLab pads both sides of an "
                        "image equally");
        return {top, left};
    }
    fail(l, "\"padding\" " + shown(*v) + " is not n, [h, w] or [[top, bottom], [left, right]]");
}

std::string layer_label(const Layer& l)
{
    return "layer " + shown(json(l.path.empty() ? l.name : l.path)) + " (" +
           json_util::printable_utf8(l.class_name) + ")";
}

bool is_model(const Layer& l)
{
    const std::string& c = l.class_name;
    return (c == "Sequential" || c == "Functional" || c == "Model") &&
           l.config->contains("layers") && l.config->at("layers").is_array();
}

// Keras's naming.to_snake_case: non-word characters dropped, "_" before each capital
// that starts a lower-case run ("BatchNormalization" -> "Batch_Normalization") and between
// a lower-case letter and a capital, then lower case: "conv2d", "batch_normalization".
std::string snake_case(const std::string& name)
{
    const auto upper = [](char c) { return c >= 'A' && c <= 'Z'; };
    const auto lower = [](char c) { return c >= 'a' && c <= 'z'; };
    std::string word;
    for (char c : name)
        if (upper(c) || lower(c) || (c >= '0' && c <= '9') || c == '_') word += c;
    // re.sub("(.)([A-Z][a-z]+)", r"\1_\2"): matches left to right, never overlapping.
    std::string a;
    for (std::size_t i = 0; i < word.size(); ++i) {
        if (i > 0 && upper(word[i]) && i + 1 < word.size() && lower(word[i + 1])) {
            a += '_';
            a += word[i];
            while (i + 1 < word.size() && lower(word[i + 1])) a += word[++i];
            continue;
        }
        a += word[i];
    }
    // re.sub("([a-z])([A-Z])", r"\1_\2"), then lower case.
    std::string out;
    for (std::size_t i = 0; i < a.size(); ++i) {
        if (i > 0 && upper(a[i]) && lower(a[i - 1])) out += '_';
        out += upper(a[i]) ? char(a[i] - 'A' + 'a') : a[i];
    }
    return out;
}

std::string h5_group(const std::string& parent, const std::string& class_name,
                     std::map<std::string, int>& seen)
{
    const std::string snake = snake_case(class_name);
    const int k = seen[snake]++;
    return parent + "layers/" + snake + (k ? "_" + std::to_string(k) : "");
}

void fail(const Layer& l, const std::string& what)
{
    throw SpecError(layer_label(l) + ": " + what);
}

LayerDtype layer_dtype(const Layer& l)
{
    const json* v = field(l, "dtype");
    if (!v) return LayerDtype::Unset;
    std::string name;
    if (v->is_string()) {
        name = v->get<std::string>(); // a dtype, or a policy's name (Keras 3.0-3.3)
    } else if (v->is_object() && v->contains("config") && v->at("config").is_object() &&
               v->at("config").contains("name") && v->at("config").at("name").is_string()) {
        name = v->at("config").at("name").get<std::string>(); // Policy, DTypePolicy
    } else {
        fail(l, "\"dtype\" must be a dtype name or a dtype policy, got " + shown(*v));
    }
    if (name == "float32") return LayerDtype::Float32;
    if (name == "mixed_float16") return LayerDtype::MixedFloat16;
    if (name == "mixed_bfloat16") return LayerDtype::MixedBfloat16;
    fail(l, "dtype policy " + shown(json(name)) +
                " has no MixLab equivalent; MixLab imports float32, mixed_float16 and "
                "mixed_bfloat16 models, with float32 layers in a mixed one");
}

std::string_view dtype_name(LayerDtype d)
{
    switch (d) {
    case LayerDtype::Unset: return "unset";
    case LayerDtype::Float32: return "float32";
    case LayerDtype::MixedFloat16: return "mixed_float16";
    case LayerDtype::MixedBfloat16: return "mixed_bfloat16";
    }
    return "unknown";
}

std::vector<LayerSpec> convert_layer(const Layer& l, bool mixed)
{
    const std::string& c = l.class_name;
    std::vector<LayerSpec> out(1);
    LayerSpec& s = out.front();
    if (c == "Flatten") {
        check_channels_last(l);
        s.type = LayerType::Flatten;
    } else if (c == "Dense") {
        s.type = LayerType::Dense;
        s.units = positive_int(l, "units", k_max_units);
        s.activation = activation(l);
        s.use_bias = boolean(l, "use_bias", true);
    } else if (c == "Activation") {
        if (!field(l, "activation")) fail(l, "has no \"activation\"");
        s.type = LayerType::Activation;
        s.activation = activation(l);
        if (s.activation == Activation::None) return {}; // linear: the identity
    } else if (c == "ReLU") {
        // A capped (relu6), leaky or shifted relu has no MixLab equivalent.
        for (const char* key : {"max_value", "negative_slope", "threshold"})
            if (const json* v = field(l, key); v && *v != 0)
                fail(l, json_util::quoted(key) + " " + shown(*v) +
                            " is not supported: MixLab's relu is max(x, 0)");
        s.type = LayerType::Activation;
        s.activation = Activation::Relu;
    } else if (c == "Softmax") {
        if (const json* axis = field(l, "axis"); axis && *axis != -1 && *axis != json::array({-1}))
            fail(l, "\"axis\" " + shown(*axis) +
                        " is not supported: MixLab's softmax is over the last axis (-1)");
        s.type = LayerType::Activation;
        s.activation = Activation::Softmax;
    } else if (c == "Dropout") {
        s.type = LayerType::Dropout;
        const json* rate = field(l, "rate");
        if (!rate || !rate->is_number() || rate->get<double>() < 0.0 || rate->get<double>() >= 1.0)
            fail(l, "\"rate\" must be a number from 0 up to (not including) 1, got " +
                        (rate ? shown(*rate) : std::string("none")));
        s.rate = float(rate->get<double>());
        if (field(l, "noise_shape"))
            fail(l, "\"noise_shape\" is not supported: MixLab's dropout draws every element");
    } else if (c == "Conv2D") {
        s = conv2d(l);
        // Softmax over a feature map's channels: MixLab's conv2d fuses none, the
        // activation layer does it.
        if (s.activation == Activation::Softmax) {
            s.activation = Activation::None;
            LayerSpec softmax;
            softmax.type = LayerType::Activation;
            softmax.activation = Activation::Softmax;
            out.push_back(softmax);
        }
    } else if (c == "BatchNormalization") {
        s = batchnorm(l);
    } else if (c == "MaxPooling2D" || c == "MaxPool2D") {
        s = pooling(l, LayerType::MaxPool2D);
    } else if (c == "AveragePooling2D" || c == "AvgPool2D") {
        s = pooling(l, LayerType::AvgPool2D);
    } else if (c == "GlobalAveragePooling2D" || c == "GlobalAvgPool2D") {
        check_channels_last(l);
        if (boolean(l, "keepdims", false))
            fail(l, "\"keepdims\": true is not supported: MixLab's global_avgpool gives one "
                    "value per channel");
        s.type = LayerType::GlobalAvgPool;
    } else if (c == "Embedding") {
        s = embedding(l);
    } else if (c == "LSTM") {
        s = lstm(l);
    } else if (c == "ZeroPadding2D") {
        (void)zero_padding(l);
        fail(l, "is imported only folded into the Conv2D with \"padding\": \"valid\" right "
                "after it (or a MaxPooling2D after a relu, where a zero never wins a max): "
                "MixLab has no padding layer");
    } else {
        fail(l, "MixLab has no equivalent of this layer; it imports " +
                    std::string(k_supported_classes));
    }
    if (mixed && layer_dtype(l) == LayerDtype::Float32)
        for (LayerSpec& each : out) each.force_fp32 = true;
    return out;
}

std::vector<int> input_shape_of(const json& batch_shape)
{
    if (!batch_shape.is_array() || batch_shape.size() < 2) return {};
    std::vector<int> dims;
    for (std::size_t i = 1; i < batch_shape.size(); ++i) {
        const json& d = batch_shape[i];
        if (!d.is_number_integer() || d.get<std::int64_t>() < 1 || d.get<std::int64_t>() > 1 << 20)
            return {};
        dims.push_back(int(d.get<std::int64_t>()));
    }
    return dims;
}

} // namespace mixlab::keras
