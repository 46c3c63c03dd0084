// The `mixlab-model/1` format: strict parsing (every error names the layer by its path,
// its type and the field; unknown fields are errors so typos never pass silently) and writing.
#include "mixlab/model_spec.h"

#include "base/json_util.h"
#include "mixlab/error.h"
#include "mixlab/json_io.h"

#include <nlohmann/json.hpp>

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace mixlab {

using json_util::did_you_mean;
using json_util::join;
using json_util::quoted;
using json_util::shown;
using nlohmann::json;

std::string_view layer_type_name(LayerType t)
{
    switch (t) {
    case LayerType::Flatten: return "flatten";
    case LayerType::Dense: return "dense";
    case LayerType::Activation: return "activation";
    case LayerType::Dropout: return "dropout";
    case LayerType::Conv2D: return "conv2d";
    case LayerType::BatchNorm: return "batchnorm";
    case LayerType::MaxPool2D: return "maxpool2d";
    case LayerType::AvgPool2D: return "avgpool2d";
    case LayerType::GlobalAvgPool: return "global_avgpool";
    case LayerType::Residual: return "residual";
    case LayerType::Embedding: return "embedding";
    case LayerType::Lstm: return "lstm";
    }
    return "unknown";
}

std::string_view activation_name(Activation a)
{
    switch (a) {
    case Activation::None: return "linear";
    case Activation::Relu: return "relu";
    case Activation::Sigmoid: return "sigmoid";
    case Activation::Tanh: return "tanh";
    case Activation::Gelu: return "gelu";
    case Activation::Softmax: return "softmax";
    }
    return "unknown";
}

std::string_view padding_name(Padding p)
{
    switch (p) {
    case Padding::Valid: return "valid";
    case Padding::Same: return "same";
    case Padding::Explicit: return "explicit";
    }
    return "unknown";
}

namespace {

// Upper bounds: large enough for any network a GPU can train, small enough that a typo
// like 3000000000 is caught here rather than as an allocation failure at run start.
constexpr std::int64_t k_max_units = 1000000;
constexpr int k_max_filters = 65536;
constexpr int k_max_window = 64; // kernel, pool size, stride and padding, per dimension
// Residual blocks inside residual blocks: real networks nest one or two deep; the bound
// keeps a pathological file from recursing without end.
constexpr int k_max_depth = 16;
// Stacked LSTM layers: language models use 1-4; the bound catches a typo such as 200.
constexpr int k_max_lstm_layers = 16;
// An embedding's rows: text_corpus.h's vocabulary limit.
constexpr std::int64_t k_max_vocab = 1000000;

constexpr LayerType k_layer_types[] = {
    LayerType::Flatten,       LayerType::Dense,     LayerType::Activation, LayerType::Dropout,
    LayerType::Conv2D,        LayerType::BatchNorm, LayerType::MaxPool2D,  LayerType::AvgPool2D,
    LayerType::GlobalAvgPool, LayerType::Residual,  LayerType::Embedding,  LayerType::Lstm};
constexpr Activation k_activations[] = {Activation::Relu, Activation::Sigmoid, Activation::Tanh,
                                        Activation::Gelu, Activation::Softmax, Activation::None};
constexpr const char* k_type_list = "flatten, dense, activation, dropout, conv2d, batchnorm, "
                                    "maxpool2d, avgpool2d, global_avgpool, residual, embedding, "
                                    "lstm";
constexpr const char* k_activation_list = "relu, sigmoid, tanh, gelu, softmax, linear";

const json_util::DocumentKind k_document{
    "model spec",  "model file", k_model_format, "\"layers\": [...]", "run config",
    "mixlab-run/", true};

// A float as the shortest decimal that reads back to the same float, stored as a double
// so the written file says 0.3 rather than 0.30000001192092896.
json float_json(float f)
{
    if (f == 0.0f) return 0;
    char buf[32];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, f);
    (void)ec;
    return std::strtod(std::string(buf, end).c_str(), nullptr);
}

// The value of an integer JSON number, saturated to int64 (so 2^64-1 reads as "too large"
// rather than wrapping); nullopt for anything else, fractions and booleans included.
std::optional<std::int64_t> as_integer(const json& v)
{
    if (!v.is_number_integer()) return std::nullopt;
    if (v.is_number_unsigned()) {
        const auto u = v.get<std::uint64_t>();
        return u > std::uint64_t(std::numeric_limits<std::int64_t>::max())
                   ? std::numeric_limits<std::int64_t>::max()
                   : std::int64_t(u);
    }
    return v.get<std::int64_t>();
}

bool is_pooling(LayerType t) { return t == LayerType::MaxPool2D || t == LayerType::AvgPool2D; }

class LayerReader {
public:
    LayerReader(const json& j, std::string path, int depth)
        : m_j(j), m_path(std::move(path)), m_depth(depth)
    {}

    LayerSpec read()
    {
        if (!m_j.is_object())
            fail_plain("must be an object like {\"type\": \"dense\", \"units\": 10}, got " +
                       shown(m_j));
        read_type();
        check_fields();
        LayerSpec layer;
        layer.type = m_type;
        switch (m_type) {
        case LayerType::Flatten: break;
        case LayerType::Dense:
            layer.units = read_units();
            if (has("activation")) layer.activation = read_activation();
            if (has("use_bias")) layer.use_bias = read_bool("use_bias");
            if (has("tie_weights")) layer.tie_weights = read_bool("tie_weights");
            break;
        case LayerType::Activation:
            if (!has("activation"))
                fail("missing \"activation\" (one of " + std::string(k_activation_list) + ")");
            layer.activation = read_activation();
            break;
        case LayerType::Dropout:
            if (!has("rate")) fail("missing \"rate\" (the fraction of inputs zeroed, in [0, 1))");
            layer.rate = read_rate();
            break;
        case LayerType::Conv2D:
            if (!has("filters")) fail("missing \"filters\" (the number of output channels)");
            layer.filters = read_bounded("filters", 1, k_max_filters);
            read_window(layer, "kernel");
            if (has("activation")) {
                layer.activation = read_activation();
                if (layer.activation == Activation::Softmax)
                    fail("\"activation\": \"softmax\" is not available on conv2d (softmax "
                         "normalises a flat vector); put it after flatten and dense layers");
            }
            if (has("use_bias")) layer.use_bias = read_bool("use_bias");
            break;
        case LayerType::BatchNorm:
            if (has("momentum")) layer.momentum = read_momentum();
            if (has("epsilon")) layer.epsilon = read_epsilon();
            break;
        case LayerType::MaxPool2D:
        case LayerType::AvgPool2D: read_window(layer, "pool_size"); break;
        case LayerType::GlobalAvgPool: break;
        case LayerType::Residual:
            if (m_depth >= k_max_depth)
                fail("residual blocks nest more than " + std::to_string(k_max_depth) + " deep");
            if (!has("body"))
                fail("missing \"body\" (the list of layers whose output is added to the "
                     "shortcut's)");
            layer.body = read_list("body", false);
            if (has("shortcut")) layer.shortcut = read_list("shortcut", true);
            if (has("activation")) {
                layer.activation = read_activation();
                if (layer.activation != Activation::None && layer.activation != Activation::Relu)
                    fail("\"activation\" of a residual block (applied after the sum) must be "
                         "\"relu\" or \"linear\", got " +
                         shown(m_j.at("activation")));
            }
            break;
        case LayerType::Embedding:
            if (has("vocab")) layer.vocab = read_vocab();
            if (!has("dim")) fail("missing \"dim\" (the length of each word's vector)");
            layer.dim = read_bounded("dim", 1, k_max_units);
            break;
        case LayerType::Lstm:
            if (!has("hidden")) fail("missing \"hidden\" (the number of units per layer)");
            layer.hidden = read_bounded("hidden", 1, k_max_units);
            if (has("layers")) layer.num_layers = read_bounded("layers", 1, k_max_lstm_layers);
            if (has("dropout")) layer.rate = read_rate("dropout");
            break;
        }
        if (has("dtype")) read_dtype(layer);
        if (has("name") && !m_j.at("name").is_string())
            fail("\"name\" must be a string, got " + shown(m_j.at("name")));
        return layer;
    }

private:
    [[noreturn]] void fail_plain(const std::string& what) const
    {
        throw SpecError(m_path + ": " + what);
    }
    [[noreturn]] void fail(const std::string& what) const
    {
        throw SpecError(m_path + " (" + std::string(layer_type_name(m_type)) + "): " + what);
    }

    bool has(const char* field) const { return m_j.contains(field); }

    void read_type()
    {
        if (!has("type")) fail_plain("missing \"type\" (one of " + std::string(k_type_list) + ")");
        const json& t = m_j.at("type");
        if (!t.is_string())
            fail_plain("\"type\" must be a string (one of " + std::string(k_type_list) + "), got " +
                       shown(t));
        const auto name = t.get<std::string>();
        std::vector<std::string_view> names;
        for (auto lt : k_layer_types) {
            names.push_back(layer_type_name(lt));
            if (layer_type_name(lt) == name) {
                m_type = lt;
                return;
            }
        }
        fail_plain("unknown layer type \"" + name + "\"" + did_you_mean(name, names) +
                   " (known types: " + k_type_list + ")");
    }

    void check_fields() const
    {
        std::vector<std::string_view> known = {"type", "name", "dtype"};
        switch (m_type) {
        case LayerType::Flatten: break;
        case LayerType::Dense:
            known.insert(known.end(), {"units", "activation", "use_bias", "tie_weights"});
            break;
        case LayerType::Activation: known.push_back("activation"); break;
        case LayerType::Dropout: known.push_back("rate"); break;
        case LayerType::Conv2D:
            known.insert(known.end(),
                         {"filters", "kernel", "stride", "padding", "activation", "use_bias"});
            break;
        case LayerType::BatchNorm: known.insert(known.end(), {"momentum", "epsilon"}); break;
        case LayerType::MaxPool2D:
        case LayerType::AvgPool2D:
            known.insert(known.end(), {"pool_size", "stride", "padding"});
            break;
        case LayerType::GlobalAvgPool: break;
        case LayerType::Residual:
            known.insert(known.end(), {"body", "shortcut", "activation"});
            break;
        case LayerType::Embedding: known.insert(known.end(), {"vocab", "dim"}); break;
        case LayerType::Lstm: known.insert(known.end(), {"hidden", "layers", "dropout"}); break;
        }
        if (const auto key = json_util::unknown_field(m_j, known))
            fail("unknown field \"" + *key + "\"" + did_you_mean(*key, known) + " (" +
                 std::string(layer_type_name(m_type)) + " layers take: " + join(known) + ")");
    }

    int read_units() const
    {
        if (!has("units")) fail("missing \"units\" (a positive integer, \"classes\" or \"vocab\")");
        const json& v = m_j.at("units");
        if (v.is_string() && v.get<std::string>() == "classes") return k_units_classes;
        if (v.is_string() && v.get<std::string>() == "vocab") return k_units_vocab;
        if (!v.is_number())
            fail("\"units\" must be a positive integer or \"classes\" (one unit per class of "
                 "the dataset; \"vocab\" for a language model's decoder, one per word), got " +
                 shown(v));
        return read_bounded("units", 1, k_max_units);
    }

    int read_vocab() const
    {
        const json& v = m_j.at("vocab");
        if (v.is_string() && v.get<std::string>() == "dataset") return k_vocab_dataset;
        if (!v.is_number())
            fail("\"vocab\" must be a positive integer or \"dataset\" (as many words as the "
                 "corpus has), got " +
                 shown(v));
        return read_bounded("vocab", 1, k_max_vocab);
    }

    // A whole number in [lo, hi]; `lo` is 0 or 1 and decides how the message words it.
    int read_bounded(const char* field, int lo, std::int64_t hi) const
    {
        const json& v = m_j.at(field);
        const auto n = as_integer(v);
        if (!n || *n < lo)
            fail(quoted(field) + " must be " + integer_kind(lo) + ", got " + shown(v));
        if (*n > hi)
            fail(quoted(field) + " must be at most " + std::to_string(hi) + ", got " + shown(v));
        return int(*n);
    }

    static std::string integer_kind(int lo)
    {
        return lo == 0 ? "a non-negative integer" : "a positive integer";
    }

    // n (both dimensions) or [height, width], each in [lo, k_max_window].
    std::pair<int, int> read_pair(const char* field, int lo, const std::string& expected) const
    {
        const json& v = m_j.at(field);
        auto bad = [&] { fail(quoted(field) + " must be " + expected + ", got " + shown(v)); };
        std::optional<std::int64_t> h, w;
        if (v.is_array()) {
            if (v.size() != 2) bad();
            h = as_integer(v[0]);
            w = as_integer(v[1]);
        } else {
            h = w = as_integer(v);
        }
        if (!h || !w || *h < lo || *w < lo) bad();
        if (*h > k_max_window || *w > k_max_window)
            fail(quoted(field) + " must be at most " + std::to_string(k_max_window) + ", got " +
                 shown(v));
        return {int(*h), int(*w)};
    }

    // "kernel" (conv2d) or "pool_size" (pooling), then "stride" and "padding".
    void read_window(LayerSpec& layer, const char* size_field) const
    {
        const std::string pair_of = " or a list [height, width] of them";
        if (!has(size_field))
            fail("missing " + quoted(size_field) + " (a positive integer" + pair_of + ", e.g. " +
                 (is_pooling(m_type) ? "2" : "3") + ")");
        std::tie(layer.kernel_h, layer.kernel_w) =
            read_pair(size_field, 1, integer_kind(1) + pair_of);
        if (has("stride"))
            std::tie(layer.stride_h, layer.stride_w) =
                read_pair("stride", 1, integer_kind(1) + pair_of);
        if (has("padding")) read_padding(layer, size_field);
    }

    void read_padding(LayerSpec& layer, const char* size_field) const
    {
        const json& v = m_j.at("padding");
        const std::string expected =
            "\"same\", \"valid\", " + integer_kind(0) + " or a list [height, width] of them";
        if (v.is_string()) {
            const auto s = v.get<std::string>();
            if (s == "valid") {
                layer.padding = Padding::Valid;
            } else if (s == "same") {
                layer.padding = Padding::Same;
                // cuDNN pads both sides equally, and only an odd window keeps the size then.
                const int even = layer.kernel_h % 2 == 0 ? layer.kernel_h : layer.kernel_w;
                if (even % 2 == 0)
                    fail("\"padding\": \"same\" needs an odd " + quoted(size_field) +
                         " (the padding is the same on both sides), got " +
                         std::to_string(layer.kernel_h) + "x" + std::to_string(layer.kernel_w) +
                         "; use an odd size, or explicit \"padding\" numbers (for size " +
                         std::to_string(even) + ": " + std::to_string(even / 2) +
                         " makes the output one larger, " + std::to_string(even / 2 - 1) +
                         " one smaller)");
            } else {
                fail("unknown padding \"" + s + "\"" + did_you_mean(s, {"same", "valid"}) +
                     " (\"padding\" must be " + expected + ")");
            }
            return;
        }
        if (!v.is_number() && !v.is_array())
            fail("\"padding\" must be " + expected + ", got " + shown(v));
        layer.padding = Padding::Explicit;
        std::tie(layer.pad_h, layer.pad_w) = read_pair("padding", 0, expected);
    }

    Activation read_activation() const
    {
        const json& v = m_j.at("activation");
        std::vector<std::string_view> names;
        for (auto a : k_activations) names.push_back(activation_name(a));
        if (!v.is_string())
            fail("\"activation\" must be one of " + std::string(k_activation_list) + ", got " +
                 shown(v));
        const auto name = v.get<std::string>();
        for (auto a : k_activations)
            if (activation_name(a) == name) return a;
        fail("unknown activation \"" + name + "\"" + did_you_mean(name, names) + " (one of " +
             k_activation_list + ")");
    }

    bool read_bool(const char* field) const
    {
        const json& v = m_j.at(field);
        if (!v.is_boolean())
            fail("\"" + std::string(field) + "\" must be true or false, got " + shown(v));
        return v.get<bool>();
    }

    // dropout's "rate", lstm's "dropout".
    float read_rate(const char* field = "rate") const
    {
        const json& v = m_j.at(field);
        const std::string msg = quoted(field) + " must be a number in [0, 1), got ";
        if (!v.is_number()) fail(msg + shown(v));
        // Check after the conversion to float: 0.999999999 becomes 1.0f.
        const float r = float(v.get<double>());
        if (!(r >= 0.0f && r < 1.0f)) fail(msg + shown(v));
        return r;
    }

    float read_momentum() const
    {
        const json& v = m_j.at("momentum");
        const std::string msg = "\"momentum\" must be a number in [0, 1] (PyTorch's convention: "
                                "the weight of the new batch in the running statistics), got ";
        if (!v.is_number()) fail(msg + shown(v));
        const float m = float(v.get<double>());
        if (!(m >= 0.0f && m <= 1.0f)) fail(msg + shown(v));
        return m;
    }

    float read_epsilon() const
    {
        const json& v = m_j.at("epsilon");
        const std::string msg = "\"epsilon\" must be a positive number (added to the variance, "
                                "e.g. 1e-5), got ";
        if (!v.is_number()) fail(msg + shown(v));
        // After the conversion: 1e-50 becomes 0 and 1e300 infinity as a float.
        const float e = float(v.get<double>());
        if (!(e > 0.0f && std::isfinite(e))) fail(msg + shown(v));
        return e;
    }

    void read_dtype(LayerSpec& layer) const
    {
        const json& v = m_j.at("dtype");
        if (v.is_string() && v.get<std::string>() == "float32") {
            layer.force_fp32 = true;
            return;
        }
        if (v.is_string() && v.get<std::string>() == "bfloat16") {
            layer.no_fp8 = true;
            return;
        }
        fail("\"dtype\" can only be \"float32\" (it keeps the layer in full precision under a "
             "mixed policy) or \"bfloat16\" (it keeps a dense layer out of fp8 under "
             "mixed_fp8), got " +
             shown(v));
    }

    std::vector<LayerSpec> read_list(const char* field, bool may_be_empty) const
    {
        const json& v = m_j.at(field);
        const std::string what =
            may_be_empty ? "a list of layers ([] is the identity)" : "a non-empty list of layers";
        if (!v.is_array() || (!may_be_empty && v.empty()))
            fail(quoted(field) + " must be " + what + ", got " + shown(v));
        std::vector<LayerSpec> layers;
        for (std::size_t i = 0; i < v.size(); ++i)
            layers.push_back(
                LayerReader(v[i], m_path + " > " + field + " " + std::to_string(i), m_depth + 1)
                    .read());
        return layers;
    }

    const json& m_j;
    std::string m_path;
    int m_depth;
    LayerType m_type = LayerType::Dense;
};

// ---- writing ----

std::string pair_text(int h, int w)
{
    if (h == w) return std::to_string(h);
    return "[" + std::to_string(h) + ", " + std::to_string(w) + "]";
}

std::string string_text(std::string_view s) { return json(std::string(s)).dump(); }

using Fields = std::vector<std::pair<std::string, std::string>>; // key, value as JSON text

// A layer's own fields in a fixed order, leaving out the defaults.
Fields layer_fields(const LayerSpec& l)
{
    Fields f;
    f.emplace_back("type", string_text(layer_type_name(l.type)));
    auto activation = [&] {
        if (l.activation != Activation::None)
            f.emplace_back("activation", string_text(activation_name(l.activation)));
    };
    auto window = [&](const char* size_field) {
        f.emplace_back(size_field, pair_text(l.kernel_h, l.kernel_w));
        if (l.stride_h != 0 || l.stride_w != 0)
            f.emplace_back("stride", pair_text(l.stride_h, l.stride_w));
        if (l.padding == Padding::Same) f.emplace_back("padding", string_text("same"));
        if (l.padding == Padding::Explicit) f.emplace_back("padding", pair_text(l.pad_h, l.pad_w));
    };
    switch (l.type) {
    case LayerType::Flatten: break;
    case LayerType::Dense:
        f.emplace_back("units", l.units == k_units_classes ? string_text("classes")
                                : l.units == k_units_vocab ? string_text("vocab")
                                                           : std::to_string(l.units));
        activation();
        if (!l.use_bias) f.emplace_back("use_bias", "false");
        if (l.tie_weights) f.emplace_back("tie_weights", "true");
        break;
    case LayerType::Activation:
        f.emplace_back("activation", string_text(activation_name(l.activation)));
        break;
    case LayerType::Dropout: f.emplace_back("rate", float_json(l.rate).dump()); break;
    case LayerType::Conv2D:
        f.emplace_back("filters", std::to_string(l.filters));
        window("kernel");
        activation();
        if (!l.use_bias) f.emplace_back("use_bias", "false");
        break;
    case LayerType::BatchNorm:
        if (l.momentum != LayerSpec{}.momentum)
            f.emplace_back("momentum", float_json(l.momentum).dump());
        if (l.epsilon != LayerSpec{}.epsilon)
            f.emplace_back("epsilon", float_json(l.epsilon).dump());
        break;
    case LayerType::MaxPool2D:
    case LayerType::AvgPool2D: window("pool_size"); break;
    case LayerType::GlobalAvgPool: break;
    case LayerType::Residual: activation(); break;
    case LayerType::Embedding:
        f.emplace_back("vocab", l.vocab == k_vocab_dataset ? string_text("dataset")
                                                           : std::to_string(l.vocab));
        f.emplace_back("dim", std::to_string(l.dim));
        break;
    case LayerType::Lstm:
        f.emplace_back("hidden", std::to_string(l.hidden));
        if (l.num_layers != LayerSpec{}.num_layers)
            f.emplace_back("layers", std::to_string(l.num_layers));
        if (l.rate != 0.0f) f.emplace_back("dropout", float_json(l.rate).dump());
        break;
    }
    if (l.force_fp32)
        f.emplace_back("dtype", string_text("float32"));
    else if (l.no_fp8)
        f.emplace_back("dtype", string_text("bfloat16"));
    return f;
}

// One layer per line; a residual block opens on its line and lists its body and shortcut
// layers below it, two spaces deeper, so nested blocks read like a tree and diff cleanly.
std::string layer_text(const LayerSpec& l, const std::string& indent)
{
    std::string s = "{";
    bool first = true;
    for (const auto& [key, value] : layer_fields(l)) {
        if (!first) s += ", ";
        first = false;
        s += string_text(key) + ": " + value;
    }
    if (l.type != LayerType::Residual) return s + "}";

    auto list = [&](const char* field, const std::vector<LayerSpec>& layers) {
        s += ", " + string_text(field) + ": [";
        const std::string inner = indent + "  ";
        for (std::size_t i = 0; i < layers.size(); ++i)
            s += (i == 0 ? "\n" : ",\n") + inner + layer_text(layers[i], inner);
        s += layers.empty() ? "]" : "\n" + indent + "]";
    };
    list("body", l.body);
    if (!l.shortcut.empty()) list("shortcut", l.shortcut);
    return s + "}";
}

} // namespace

namespace {

// A model spec document, its format checked.
ModelSpec read_model_spec(const json& doc)
{
    const std::vector<std::string_view> known = {"format", "name", "layers"};
    if (const auto key = json_util::unknown_field(doc, known))
        throw SpecError("unknown field \"" + *key + "\" in the model spec" +
                        did_you_mean(*key, known) + " (known fields: " + join(known) + ")");

    ModelSpec spec;
    if (doc.contains("name")) {
        if (!doc.at("name").is_string())
            throw SpecError("\"name\" must be a string, got " + shown(doc.at("name")));
        spec.name = doc.at("name").get<std::string>();
    }
    if (!doc.contains("layers")) throw SpecError("the model spec has no \"layers\" list");
    const json& layers = doc.at("layers");
    if (!layers.is_array())
        throw SpecError("\"layers\" must be a list of layers, got " + shown(layers));
    for (std::size_t i = 0; i < layers.size(); ++i)
        spec.layers.push_back(LayerReader(layers[i], "layer " + std::to_string(i), 0).read());
    return spec;
}

} // namespace

ModelSpec parse_model_spec(std::string_view json_text)
{
    return read_model_spec(json_util::parse_document(json_text, k_document));
}

ModelSpec model_spec_from_json(const JsonReader& j)
{
    try {
        json_util::check_document(j.json(), k_document);
        return read_model_spec(j.json());
    } catch (const InputError& e) {
        j.fail((j.name().empty() ? std::string() : j.name() + ": ") + e.what());
    }
}

ModelSpec load_model_spec(const std::string& path)
{
    const std::string text = json_util::read_document_file(path, k_document);
    try {
        return parse_model_spec(text);
    } catch (const SpecError& e) {
        throw SpecError("model file \"" + path + "\": " + e.what());
    }
}

std::string model_spec_to_json(const ModelSpec& spec)
{
    // Keys in a fixed order: the file reads like docs/FORMATS.md's example and diffs cleanly.
    std::string out = "{\n  \"format\": " + string_text(k_model_format) + ",\n";
    if (!spec.name.empty()) out += "  \"name\": " + string_text(spec.name) + ",\n";
    out += "  \"layers\": [";
    const std::string indent = "    ";
    for (std::size_t i = 0; i < spec.layers.size(); ++i)
        out += (i == 0 ? "\n" : ",\n") + indent + layer_text(spec.layers[i], indent);
    out += spec.layers.empty() ? "]\n}\n" : "\n  ]\n}\n";
    return out;
}

bool is_language_model(const ModelSpec& spec)
{
    return !spec.layers.empty() && spec.layers.front().type == LayerType::Embedding;
}

} // namespace mixlab
