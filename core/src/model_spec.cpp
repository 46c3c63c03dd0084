// The `mixlab-model/1` format: strict parsing (every error names the layer, its type and
// the field; unknown fields are errors so typos never pass silently) and writing.
#include "mixlab/model_spec.h"

#include "json_util.h"
#include "mixlab/error.h"

#include <nlohmann/json.hpp>

#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

namespace mixlab {

using nlohmann::json;
using nlohmann::ordered_json;
using json_util::did_you_mean;
using json_util::join;
using json_util::shown;

std::string_view layer_type_name(LayerType t) {
    switch (t) {
    case LayerType::Flatten: return "flatten";
    case LayerType::Dense: return "dense";
    case LayerType::Activation: return "activation";
    case LayerType::Dropout: return "dropout";
    }
    return "unknown";
}

std::string_view activation_name(Activation a) {
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

namespace {

// Large enough for any MLP a GPU can train; small enough that a typo like 3000000000
// is caught here rather than as an allocation failure at run start.
constexpr std::int64_t k_max_units = 1000000;

constexpr LayerType k_layer_types[] = {LayerType::Flatten, LayerType::Dense,
                                       LayerType::Activation, LayerType::Dropout};
constexpr Activation k_activations[] = {Activation::Relu, Activation::Sigmoid, Activation::Tanh,
                                        Activation::Gelu, Activation::Softmax, Activation::None};
constexpr const char* k_type_list = "flatten, dense, activation, dropout";
constexpr const char* k_activation_list = "relu, sigmoid, tanh, gelu, softmax, linear";

const json_util::DocumentKind k_document{"model spec", "model file", k_model_format,
                                         "\"layers\": [...]", "run config", "mixlab-run/", true};

// A float as the shortest decimal that reads back to the same float, stored as a double
// so the written file says 0.3 rather than 0.30000001192092896.
json float_json(float f) {
    if (f == 0.0f) return 0;
    char buf[32];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, f);
    (void)ec;
    return std::strtod(std::string(buf, end).c_str(), nullptr);
}

class LayerReader {
public:
    LayerReader(const json& j, std::size_t index) : m_j(j), m_index(index) {}

    LayerSpec read() {
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
            if (m_j.contains("activation")) layer.activation = read_activation();
            if (m_j.contains("use_bias")) layer.use_bias = read_bool("use_bias");
            break;
        case LayerType::Activation:
            if (!m_j.contains("activation"))
                fail("missing \"activation\" (one of " + std::string(k_activation_list) + ")");
            layer.activation = read_activation();
            break;
        case LayerType::Dropout:
            if (!m_j.contains("rate"))
                fail("missing \"rate\" (the fraction of inputs zeroed, in [0, 1))");
            layer.rate = read_rate();
            break;
        }
        if (m_j.contains("dtype")) layer.force_fp32 = read_dtype();
        if (m_j.contains("name") && !m_j.at("name").is_string())
            fail("\"name\" must be a string, got " + shown(m_j.at("name")));
        return layer;
    }

private:
    [[noreturn]] void fail_plain(const std::string& what) const {
        throw SpecError("layer " + std::to_string(m_index) + ": " + what);
    }
    [[noreturn]] void fail(const std::string& what) const {
        throw SpecError("layer " + std::to_string(m_index) + " (" +
                        std::string(layer_type_name(m_type)) + "): " + what);
    }

    void read_type() {
        if (!m_j.contains("type"))
            fail_plain("missing \"type\" (one of " + std::string(k_type_list) + ")");
        const json& t = m_j.at("type");
        if (!t.is_string())
            fail_plain("\"type\" must be a string (one of " + std::string(k_type_list) +
                       "), got " + shown(t));
        const auto name = t.get<std::string>();
        std::vector<std::string_view> names;
        for (auto lt : k_layer_types) {
            names.push_back(layer_type_name(lt));
            if (layer_type_name(lt) == name) { m_type = lt; return; }
        }
        fail_plain("unknown layer type \"" + name + "\"" + did_you_mean(name, names) +
                   " (known types: " + k_type_list + ")");
    }

    void check_fields() const {
        std::vector<std::string_view> known = {"type", "name", "dtype"};
        switch (m_type) {
        case LayerType::Flatten: break;
        case LayerType::Dense: known.insert(known.end(), {"units", "activation", "use_bias"}); break;
        case LayerType::Activation: known.push_back("activation"); break;
        case LayerType::Dropout: known.push_back("rate"); break;
        }
        if (const auto key = json_util::unknown_field(m_j, known))
            fail("unknown field \"" + *key + "\"" + did_you_mean(*key, known) + " (" +
                 std::string(layer_type_name(m_type)) + " layers take: " + join(known) + ")");
    }

    int read_units() const {
        if (!m_j.contains("units")) fail("missing \"units\" (a positive integer)");
        const json& v = m_j.at("units");
        if (!v.is_number_integer()) fail("\"units\" must be a positive integer, got " + shown(v));
        if (v.is_number_unsigned()) {
            if (v.get<std::uint64_t>() > std::uint64_t(k_max_units))
                fail("\"units\" must be at most " + std::to_string(k_max_units) + ", got " +
                     shown(v));
            if (v.get<std::uint64_t>() == 0)
                fail("\"units\" must be a positive integer, got " + shown(v));
            return int(v.get<std::uint64_t>());
        }
        const auto n = v.get<std::int64_t>();
        if (n <= 0) fail("\"units\" must be a positive integer, got " + shown(v));
        if (n > k_max_units)
            fail("\"units\" must be at most " + std::to_string(k_max_units) + ", got " + shown(v));
        return int(n);
    }

    Activation read_activation() const {
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

    bool read_bool(const char* field) const {
        const json& v = m_j.at(field);
        if (!v.is_boolean())
            fail("\"" + std::string(field) + "\" must be true or false, got " + shown(v));
        return v.get<bool>();
    }

    float read_rate() const {
        const json& v = m_j.at("rate");
        const std::string msg = "\"rate\" must be a number in [0, 1), got ";
        if (!v.is_number()) fail(msg + shown(v));
        // Check after the conversion to float: 0.999999999 becomes 1.0f.
        const float r = float(v.get<double>());
        if (!(r >= 0.0f && r < 1.0f)) fail(msg + shown(v));
        return r;
    }

    bool read_dtype() const {
        const json& v = m_j.at("dtype");
        if (v.is_string() && v.get<std::string>() == "float32") return true;
        fail("\"dtype\" can only be \"float32\" (it keeps the layer in full precision under a "
             "mixed policy), got " + shown(v));
    }

    const json& m_j;
    std::size_t m_index;
    LayerType m_type = LayerType::Dense;
};

} // namespace

ModelSpec parse_model_spec(std::string_view json_text) {
    const json doc = json_util::parse_document(json_text, k_document);
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
    if (!doc.contains("layers"))
        throw SpecError("the model spec has no \"layers\" list");
    const json& layers = doc.at("layers");
    if (!layers.is_array())
        throw SpecError("\"layers\" must be a list of layers, got " + shown(layers));
    for (std::size_t i = 0; i < layers.size(); ++i)
        spec.layers.push_back(LayerReader(layers[i], i).read());
    return spec;
}

ModelSpec load_model_spec(const std::string& path) {
    const std::string text = json_util::read_document_file(path, k_document);
    try {
        return parse_model_spec(text);
    } catch (const SpecError& e) {
        throw SpecError("model file \"" + path + "\": " + e.what());
    }
}

std::string model_spec_to_json(const ModelSpec& spec) {
    // One layer per line, keys in a fixed order: the file reads like DESIGN.md's example
    // and diffs cleanly. Defaults (linear activation, use_bias true) are left out.
    std::string out = "{\n  \"format\": " + json(std::string(k_model_format)).dump() + ",\n";
    if (!spec.name.empty()) out += "  \"name\": " + json(spec.name).dump() + ",\n";
    out += "  \"layers\": [";
    for (std::size_t i = 0; i < spec.layers.size(); ++i) {
        const LayerSpec& l = spec.layers[i];
        ordered_json j;
        j["type"] = std::string(layer_type_name(l.type));
        switch (l.type) {
        case LayerType::Flatten: break;
        case LayerType::Dense:
            j["units"] = l.units;
            if (l.activation != Activation::None)
                j["activation"] = std::string(activation_name(l.activation));
            if (!l.use_bias) j["use_bias"] = false;
            break;
        case LayerType::Activation:
            j["activation"] = std::string(activation_name(l.activation));
            break;
        case LayerType::Dropout: j["rate"] = float_json(l.rate); break;
        }
        if (l.force_fp32) j["dtype"] = "float32";

        std::string line = "{";
        bool first = true;
        for (const auto& item : j.items()) {
            if (!first) line += ", ";
            first = false;
            line += json(item.key()).dump() + ": " + item.value().dump();
        }
        line += "}";
        out += (i == 0 ? "\n    " : ",\n    ") + line;
    }
    out += spec.layers.empty() ? "]\n}\n" : "\n  ]\n}\n";
    return out;
}

} // namespace mixlab
