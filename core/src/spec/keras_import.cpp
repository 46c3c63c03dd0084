// Keras model JSON into a MixLab model spec: the document (Keras 2's and Keras 3's forms),
// the model-wide dtype policy, and a Functional graph read back into MixLab's shape, a
// chain of layers and residual blocks (body(x) + shortcut(x), then an optional relu). A
// Sequential or Functional model used as a layer is flattened into the model using it.
#include "mixlab/keras_import.h"

#include "base/json_util.h"
#include "mixlab/error.h"
#include "spec/keras_archive.h"
#include "spec/keras_layers.h"

#include <algorithm>
#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace mixlab {

using json_util::shown;
using keras::Layer;
using keras::LayerDtype;
using nlohmann::json;

namespace {

// Residual blocks nest like model_spec's (its k_max_depth), and models inside models no
// deeper: deeper is refused before the walk could exhaust the stack on a pathological file.
constexpr int k_max_depth = 16;

const json_util::DocumentKind k_document{"Keras model", "Keras model file", "", "", "", "", true};

const char* const k_not_keras =
    "not a Keras model: expected the JSON of model.to_json() or of a .keras archive's "
    "config.json, an object with \"class_name\" (Sequential or Functional) and \"config\"";

// A model's list of layers, and a nested model's own list under it (`depth` models deep):
// each layer's path of names and the group of its variables (keras::h5_group) under its
// model's (`parent`'s path and group are empty at the top).
std::vector<Layer> read_layers(const json& config, const Layer* parent, int depth)
{
    const json& list = config.at("layers");
    std::vector<Layer> layers;
    std::map<std::string, int> classes_seen;
    for (std::size_t i = 0; i < list.size(); ++i) {
        const json& entry = list[i];
        const std::string where = "layer " + std::to_string(i) + " of the Keras model";
        if (!entry.is_object() || !entry.contains("class_name") ||
            !entry.at("class_name").is_string())
            throw SpecError(where + " has no \"class_name\": got " + shown(entry));
        Layer l;
        l.class_name = entry.at("class_name").get<std::string>();
        if (!entry.contains("config") || !entry.at("config").is_object())
            throw SpecError(where + " (" + json_util::printable_utf8(l.class_name) +
                            ") has no \"config\" object");
        l.config = &entry.at("config");
        // Functional layers carry their name beside the config as well; Sequential ones
        // only inside it.
        const json* name = entry.contains("name")       ? &entry.at("name")
                           : l.config->contains("name") ? &l.config->at("name")
                                                        : nullptr;
        l.name = name && name->is_string() ? name->get<std::string>() : "#" + std::to_string(i);
        l.entry = &entry;
        l.path = parent->path.empty() ? l.name : parent->path + "/" + l.name;
        l.h5_group = keras::h5_group(parent->h5_group.empty() ? "" : parent->h5_group + "/",
                                     l.class_name, classes_seen);
        if (keras::is_model(l)) {
            if (depth >= k_max_depth)
                keras::fail(l, "nests models more than " + std::to_string(k_max_depth) + " deep");
            l.layers = read_layers(*l.config, &l, depth + 1);
        }
        layers.push_back(std::move(l));
    }
    return layers;
}

// The layers that convert to MixLab layers: those of nested models in place of the models.
void leaves(const std::vector<Layer>& layers, std::vector<Layer>& out)
{
    for (const Layer& l : layers) {
        if (keras::is_model(l))
            leaves(l.layers, out);
        else
            out.push_back(l);
    }
}

// The one mixed policy the model's layers run under, if any; float32 layers in a mixed
// model are its per-layer overrides. Keras 3 also records the model's own policy, which
// stands when no layer says.
LayerDtype model_dtype(const std::vector<Layer>& layers, const Layer& model)
{
    LayerDtype mixed = LayerDtype::Unset;
    const Layer* first_mixed = nullptr;
    bool any = false;
    for (const Layer& l : layers) {
        if (l.class_name == "InputLayer") continue; // its dtype is the input tensor's
        const LayerDtype d = keras::layer_dtype(l);
        any = any || d != LayerDtype::Unset;
        if (d != LayerDtype::MixedFloat16 && d != LayerDtype::MixedBfloat16) continue;
        if (first_mixed && d != mixed)
            keras::fail(l, "runs under " + std::string(keras::dtype_name(d)) + " while " +
                               keras::layer_label(*first_mixed) + " runs under " +
                               std::string(keras::dtype_name(mixed)) +
                               "; MixLab runs a model under one policy");
        mixed = d;
        first_mixed = &l;
    }
    if (mixed != LayerDtype::Unset) return mixed;
    if (!any) {
        const LayerDtype d = keras::layer_dtype(model);
        if (d != LayerDtype::Unset) return d;
    }
    return LayerDtype::Float32;
}

bool is_mixed(LayerDtype d)
{
    return d == LayerDtype::MixedFloat16 || d == LayerDtype::MixedBfloat16;
}

std::vector<int> input_layer_shape(const Layer& l)
{
    for (const char* key : {"batch_shape", "batch_input_shape"})
        if (l.config->contains(key)) return keras::input_shape_of(l.config->at(key));
    return {};
}

// MixLab layers and where each came from, kept in step.
struct Pieces {
    std::vector<LayerSpec> layers;
    std::vector<KerasOrigin> origins;
};

// The layers converted from one Keras layer: the one that holds its variables (the first;
// a Conv2D's split softmax holds none) is its origin.
Pieces from_layer(const Layer& l, std::vector<LayerSpec> layers)
{
    Pieces p;
    p.origins.resize(layers.size());
    if (!layers.empty()) {
        p.origins[0].keras_layers.push_back(l.path);
        p.origins[0].h5_groups.push_back(l.h5_group);
    }
    p.layers = std::move(layers);
    return p;
}

void append(Pieces& to, Pieces more)
{
    for (LayerSpec& s : more.layers) to.layers.push_back(std::move(s));
    for (KerasOrigin& o : more.origins) to.origins.push_back(std::move(o));
}

// Whether a layer's output is never negative: it ends in a relu.
bool ends_in_relu(const Layer& l)
{
    if (l.class_name == "InputLayer" || keras::is_model(l)) return false;
    const std::vector<LayerSpec> c = keras::convert_layer(l, false);
    return !c.empty() && c.back().type != LayerType::Residual &&
           c.back().activation == Activation::Relu;
}

// A ZeroPadding2D folded into the layer after it, `next` (converted into `into`), as that
// layer's explicit padding: exact for a Conv2D (it pads with zeros too), and for a
// MaxPooling2D whose input comes from a relu (`before`), where a zero never beats the
// window's largest value (ResNet-50's stem). Anything else is refused.
void fold_padding(const Layer& pad, const Layer& next, const Layer* before,
                  std::vector<LayerSpec>& into)
{
    const auto [h, w] = keras::zero_padding(pad);
    if (into.empty())
        keras::fail(pad, "is followed by " + keras::layer_label(next) +
                             ", which computes nothing; MixLab folds a ZeroPadding2D into the "
                             "Conv2D or MaxPooling2D right after it");
    LayerSpec& s = into.front();
    const bool conv = s.type == LayerType::Conv2D;
    const bool max_after_relu = s.type == LayerType::MaxPool2D && before && ends_in_relu(*before);
    if (!conv && !max_after_relu)
        keras::fail(pad, "is followed by " + keras::layer_label(next) +
                             "; MixLab folds a ZeroPadding2D into the Conv2D after it, or into a "
                             "MaxPooling2D whose input comes from a relu (MixLab's pooling does "
                             "not count padding as zeros), and has no padding layer");
    if (s.padding != Padding::Valid)
        keras::fail(pad, "is followed by " + keras::layer_label(next) +
                             " with \"padding\": \"same\"; MixLab folds a ZeroPadding2D only "
                             "into a layer with \"padding\": \"valid\"");
    if (h == 0 && w == 0) return;
    s.padding = Padding::Explicit;
    s.pad_h = h;
    s.pad_w = w;
}

// Consecutive LSTMs of the same units, a Dropout between each two or none, as one lstm of
// several layers (PyTorch's nn.LSTM num_layers, its dropout between them): the form of
// MixLab's lstm (and PyTorch's, whose weights the file names). Where the dropouts differ,
// the layers stay apart, which MixLab also runs.
void stack_lstms(Pieces& p)
{
    Pieces out;
    for (std::size_t i = 0; i < p.layers.size(); ++i) {
        LayerSpec& s = p.layers[i];
        const std::size_t n = out.layers.size();
        if (s.type == LayerType::Lstm && n > 0) {
            std::size_t at = n - 1;
            float rate = 0.0f;
            const bool dropout = out.layers[at].type == LayerType::Dropout;
            if (dropout && n >= 2) {
                rate = out.layers[at].rate;
                --at;
            }
            LayerSpec& prev = out.layers[at];
            if (prev.type == LayerType::Lstm && (!dropout || n >= 2) && prev.hidden == s.hidden &&
                prev.force_fp32 == s.force_fp32 && (prev.num_layers == 1 || prev.rate == rate) &&
                prev.num_layers < 16) {
                ++prev.num_layers;
                prev.rate = rate;
                for (std::string& name : p.origins[i].keras_layers)
                    out.origins[at].keras_layers.push_back(std::move(name));
                for (std::string& group : p.origins[i].h5_groups)
                    out.origins[at].h5_groups.push_back(std::move(group));
                if (dropout) {
                    out.layers.pop_back();
                    out.origins.pop_back();
                }
                continue;
            }
        }
        out.layers.push_back(std::move(s));
        out.origins.push_back(std::move(p.origins[i]));
    }
    p = std::move(out);
}

// A model's layers as MixLab layers with their origins, and the input shape it states.
struct ModelPieces {
    Pieces pieces;
    std::vector<int> input_shape;
};

ModelPieces read_model(const Layer& model, bool mixed);

// A ZeroPadding2D folds into the layer after it in its own model only.
void check_fold_target(const Layer& pad, const Layer& next)
{
    if (keras::is_model(next))
        keras::fail(pad, "is followed by the nested model " + keras::layer_label(next) +
                             "; MixLab folds a ZeroPadding2D into the Conv2D or MaxPooling2D "
                             "right after it in the same model");
}

// ---- Sequential ----

ModelPieces read_sequential(const Layer& model, bool mixed)
{
    const std::vector<Layer>& layers = model.layers;
    ModelPieces out;
    Pieces& pieces = out.pieces;
    for (std::size_t i = 0; i < layers.size(); ++i) {
        const Layer& l = layers[i];
        if (l.class_name == "InputLayer") {
            if (i != 0) keras::fail(l, "an InputLayer can only start a Sequential model");
            out.input_shape = input_layer_shape(l);
            continue;
        }
        if (l.class_name == "Add")
            keras::fail(l, "adds several tensors, which a Sequential model cannot give it; MixLab "
                           "imports Add from a Functional model's residual blocks");
        if (keras::is_model(l)) {
            ModelPieces nested = read_model(l, mixed);
            // A model whose first layer is a model with an input: that input is its own.
            if (out.input_shape.empty() && pieces.layers.empty())
                out.input_shape = std::move(nested.input_shape);
            append(pieces, std::move(nested.pieces));
            continue;
        }
        // Keras 2 keeps the input shape on the first layer when no InputLayer was written.
        if (out.input_shape.empty() && pieces.layers.empty() &&
            l.config->contains("batch_input_shape"))
            out.input_shape = keras::input_shape_of(l.config->at("batch_input_shape"));
        if (l.class_name == "ZeroPadding2D" && i + 1 < layers.size()) {
            const Layer& next = layers[i + 1];
            check_fold_target(l, next);
            std::vector<LayerSpec> converted = keras::convert_layer(next, mixed);
            fold_padding(l, next, i > 0 ? &layers[i - 1] : nullptr, converted);
            append(pieces, from_layer(next, std::move(converted)));
            ++i;
            continue;
        }
        append(pieces, from_layer(l, keras::convert_layer(l, mixed)));
    }
    if (out.input_shape.empty() && model.config->contains("build_input_shape"))
        out.input_shape = keras::input_shape_of(model.config->at("build_input_shape"));
    return out;
}

// ---- Functional ----

// A tensor a layer reads: the layer giving it and which of that layer's calls.
struct TensorRef {
    std::string name;
    int node = 0;
};

// What a "keras_history" or a Keras 2 node entry points at. The call is 0, or 1 for a
// nested Functional model (Keras counts its calls after the model's own built-in one;
// GraphReader checks that the layer is one); a later call of a layer or a second output
// is refused (MixLab has no shared layers).
TensorRef history_ref(const Layer& l, const json& h)
{
    if (!h.is_array() || h.size() < 3 || !h[0].is_string())
        keras::fail(l, "has an inbound tensor " + shown(h) + " that names no layer");
    if ((h[1] != 0 && h[1] != 1) || h[2] != 0)
        keras::fail(l, "reads " + shown(h) +
                           ", a shared layer's second call or a second output; MixLab imports "
                           "graphs in which each layer is called once");
    return {h[0].get<std::string>(), h[1] == 1 ? 1 : 0};
}

// A call numbered 1 is a nested model's first: of any other layer, its second.
void check_call(const Layer& reader, const Layer& source, int node)
{
    if (node == 1 && !keras::is_model(source))
        keras::fail(reader, "reads " + shown(json::array({source.name, 1, 0})) +
                                ", a shared layer's second call or a second output; MixLab "
                                "imports graphs in which each layer is called once");
}

void add_input(Layer& l, const json& h)
{
    TensorRef t = history_ref(l, h);
    l.inputs.push_back(std::move(t.name));
    l.input_nodes.push_back(t.node);
}

// Keras 3: every __keras_tensor__ in a node's args and kwargs (Add takes them as a list).
void collect_tensors(Layer& l, const json& v, int depth)
{
    if (depth > 8) return; // tensors sit at most two lists deep; deeper is not a node
    if (v.is_object() && v.value("class_name", json()) == "__keras_tensor__") {
        const json* h = nullptr;
        if (v.contains("config") && v.at("config").is_object() &&
            v.at("config").contains("keras_history"))
            h = &v.at("config").at("keras_history");
        if (!h) keras::fail(l, "has an inbound tensor without \"keras_history\"");
        add_input(l, *h);
        return;
    }
    if (v.is_array() || v.is_object())
        for (const auto& item : v) collect_tensors(l, item, depth + 1);
}

void read_inbound(Layer& l)
{
    const json& entry = *l.entry;
    if (!entry.contains("inbound_nodes")) return;
    const json& nodes = entry.at("inbound_nodes");
    if (!nodes.is_array()) keras::fail(l, "\"inbound_nodes\" must be a list, got " + shown(nodes));
    if (nodes.empty()) return;
    if (nodes.size() > 1)
        keras::fail(l, "is called " + std::to_string(nodes.size()) +
                           " times (a shared layer); MixLab imports graphs in which each layer "
                           "is called once");
    const json& node = nodes[0];
    if (node.is_object()) { // Keras 3: {"args": [...], "kwargs": {...}}
        collect_tensors(l, node.value("args", json::array()), 0);
        collect_tensors(l, node.value("kwargs", json::object()), 0);
    } else if (node.is_array()) { // Keras 2: [["name", 0, 0, {}], ...]
        for (const json& t : node) add_input(l, t);
    } else {
        keras::fail(l, "has an inbound node " + shown(node) + " that is neither form Keras writes");
    }
}

// How messages name a Functional model: the one imported, or one nested in it.
std::string model_words(const Layer& model)
{
    return model.path.empty() ? "the Functional model"
                              : "the nested model " + shown(json(model.path)) + " (" +
                                    json_util::printable_utf8(model.class_name) + ")";
}

// "input_layers" / "output_layers": [["name", 0, 0]] (one triple alone in some versions).
std::vector<TensorRef> endpoints(const Layer& model, const char* key)
{
    const json& config = *model.config;
    if (!config.contains(key))
        throw SpecError(model_words(model) + " has no " + json_util::quoted(key));
    const json& v = config.at(key);
    std::vector<TensorRef> refs;
    if (v.is_array() && !v.empty() && v[0].is_string()) {
        refs.push_back(history_ref(model, v));
    } else if (v.is_array()) {
        for (const json& t : v) refs.push_back(history_ref(model, t));
    } else {
        throw SpecError(model_words(model) + "'s " + json_util::quoted(key) + " " + shown(v) +
                        " is not a list of layers; MixLab imports one input and one output");
    }
    return refs;
}

class GraphReader {
public:
    GraphReader(std::vector<Layer>& layers, bool mixed) : m_layers(layers), m_mixed(mixed)
    {
        for (std::size_t i = 0; i < layers.size(); ++i)
            if (!m_index.emplace(layers[i].name, i).second)
                keras::fail(layers[i], "shares its name with another layer of the model");
        for (const Layer& l : layers)
            for (std::size_t k = 0; k < l.inputs.size(); ++k)
                check_call(l, at(l, l.inputs[k]), l.input_nodes[k]);
    }

    // The layers from `input` (an InputLayer) to `output`, which every other layer must
    // lie on.
    Pieces read(const std::string& input, const std::string& output)
    {
        Pieces spec = chain(input, output, 0);
        for (std::size_t i = 0; i < m_layers.size(); ++i)
            if (!m_seen.count(i) && m_layers[i].name != input)
                keras::fail(m_layers[i],
                            "is not on the path from the input to the output through chains "
                            "and residual blocks; MixLab imports such graphs only");
        return spec;
    }

private:
    const Layer& at(const Layer& from, const std::string& name) const
    {
        const auto it = m_index.find(name);
        if (it == m_index.end())
            keras::fail(from, "reads from " + shown(json(name)) + ", which is not in the model");
        return m_layers[it->second];
    }
    std::size_t index(const Layer& l) const { return std::size_t(&l - m_layers.data()); }

    // Walks back from `to` until `from`, each layer once: the MixLab layers in between,
    // `from` excluded. A branch that never meets `from` is a graph MixLab cannot hold.
    Pieces chain(const std::string& from, const std::string& to, int depth)
    {
        std::vector<Pieces> backwards;
        const Layer* cur = &at(m_layers.front(), to);
        while (cur->name != from) {
            const Layer& l = *cur;
            if (!m_seen.insert(index(l)).second)
                keras::fail(l, "is reached twice on the walk from the output (a cycle, or a "
                               "branch outside a residual block); MixLab imports chains and "
                               "residual blocks");
            // The model's one input (read_functional checked that): a residual branch that
            // reaches it has walked past its block's own input.
            if (l.class_name == "InputLayer")
                throw SpecError("the Functional graph is not a chain of layers and residual "
                                "blocks (a branch of an Add reaches back past the tensor it "
                                "forks from); MixLab imports such graphs only");
            if (l.class_name == "Add") {
                auto [block, fork] = residual(l, depth);
                backwards.push_back(std::move(block));
                cur = fork;
                continue;
            }
            if (l.inputs.size() != 1)
                keras::fail(l, "takes " + std::to_string(l.inputs.size()) +
                                   " inputs; MixLab's layers take one (Add aside)");
            const Layer& in = at(l, l.inputs[0]);
            if (keras::is_model(l)) { // its layers in its place
                backwards.push_back(read_model(l, m_mixed).pieces);
                cur = &in;
                continue;
            }
            std::vector<LayerSpec> converted = keras::convert_layer(l, m_mixed);
            if (in.class_name == "ZeroPadding2D" && consumers(in) == 1 && in.inputs.size() == 1) {
                check_fold_target(in, l);
                if (!m_seen.insert(index(in)).second)
                    keras::fail(in, "is reached twice on the walk from the output");
                const Layer& before = at(in, in.inputs[0]);
                fold_padding(in, l, &before, converted);
                backwards.push_back(from_layer(l, std::move(converted)));
                cur = &before;
                continue;
            }
            Pieces pieces = from_layer(l, converted);
            // Add then relu is a residual block's own activation, as resnet18.json writes it.
            if (in.class_name == "Add" && converted.size() == 1 &&
                converted[0].type == LayerType::Activation &&
                converted[0].activation == Activation::Relu && consumers(in) == 1) {
                if (!m_seen.insert(index(in)).second)
                    keras::fail(in, "is reached twice on the walk from the output");
                auto [block, fork] = residual(in, depth);
                if (block.layers[0].force_fp32 == converted[0].force_fp32) {
                    block.layers[0].activation = Activation::Relu;
                    backwards.push_back(std::move(block));
                } else {
                    backwards.push_back(std::move(pieces));
                    backwards.push_back(std::move(block));
                }
                cur = fork;
                continue;
            }
            backwards.push_back(std::move(pieces));
            cur = &in;
        }
        Pieces layers;
        for (auto it = backwards.rbegin(); it != backwards.rend(); ++it)
            append(layers, std::move(*it));
        return layers;
    }

    int consumers(const Layer& l) const
    {
        int n = 0;
        for (const Layer& other : m_layers)
            n += int(std::count(other.inputs.begin(), other.inputs.end(), l.name));
        return n;
    }

    // The layers `name` is computed from, itself included.
    std::set<std::string> ancestors(const Layer& from, const std::string& name) const
    {
        std::set<std::string> seen;
        std::vector<std::string> todo{name};
        while (!todo.empty()) {
            const std::string n = todo.back();
            todo.pop_back();
            if (!seen.insert(n).second) continue;
            for (const std::string& in : at(from, n).inputs) todo.push_back(in);
        }
        return seen;
    }

    // The longest path from a graph input: the latest of several common ancestors is the
    // one deepest (memoised; a cycle counts as depth 0 here and is refused by the walk).
    int depth_of(const Layer& from, const std::string& name)
    {
        if (const auto it = m_depth.find(name); it != m_depth.end()) return it->second;
        m_depth[name] = 0;
        int d = 0;
        for (const std::string& in : at(from, name).inputs) d = std::max(d, depth_of(from, in) + 1);
        return m_depth[name] = d;
    }

    // An Add of two branches from one fork: body and shortcut (the longer branch is the
    // body; an empty one, the identity, is the shortcut). Returns the block (one layer)
    // and the fork.
    std::pair<Pieces, const Layer*> residual(const Layer& add, int depth)
    {
        if (depth >= k_max_depth)
            keras::fail(add,
                        "nests residual blocks more than " + std::to_string(k_max_depth) + " deep");
        if (add.inputs.size() != 2)
            keras::fail(add, "adds " + std::to_string(add.inputs.size()) +
                                 " tensors; MixLab's residual block adds two, a branch and its "
                                 "shortcut");
        const std::set<std::string> a = ancestors(add, add.inputs[0]);
        const std::set<std::string> b = ancestors(add, add.inputs[1]);
        const Layer* fork = nullptr;
        for (const std::string& n : a)
            if (b.count(n) && (!fork || depth_of(add, n) > depth_of(add, fork->name)))
                fork = &at(add, n);
        if (!fork)
            keras::fail(add, "adds two tensors that share no input; MixLab imports Add as a "
                             "residual block, a branch and its shortcut from one tensor");
        if (add.inputs[0] == add.inputs[1])
            keras::fail(add, "adds a tensor to itself; MixLab imports Add as a residual block, a "
                             "branch and its shortcut");
        Pieces body = chain(fork->name, add.inputs[0], depth + 1);
        Pieces shortcut = chain(fork->name, add.inputs[1], depth + 1);
        if (body.layers.size() < shortcut.layers.size()) std::swap(body, shortcut);
        if (body.layers.empty())
            keras::fail(add, "adds two tensors with no layer between them and their input");
        Pieces block;
        block.layers.resize(1);
        block.origins.resize(1);
        LayerSpec& spec = block.layers[0];
        spec.type = LayerType::Residual;
        spec.body = std::move(body.layers);
        spec.shortcut = std::move(shortcut.layers);
        block.origins[0].body = std::move(body.origins);
        block.origins[0].shortcut = std::move(shortcut.origins);
        if (m_mixed && keras::layer_dtype(add) == LayerDtype::Float32) spec.force_fp32 = true;
        return {std::move(block), fork};
    }

    std::vector<Layer>& m_layers;
    bool m_mixed;
    std::map<std::string, std::size_t> m_index;
    std::map<std::string, int> m_depth;
    std::set<std::size_t> m_seen;
};

ModelPieces read_functional(const Layer& model, bool mixed)
{
    if (model.layers.empty()) throw SpecError(model_words(model) + " has no layers");
    std::vector<Layer> layers = model.layers;
    for (Layer& l : layers) read_inbound(l);
    const auto inputs = endpoints(model, "input_layers");
    const auto outputs = endpoints(model, "output_layers");
    if (inputs.size() != 1 || outputs.size() != 1)
        throw SpecError(model_words(model) + " has " + std::to_string(inputs.size()) +
                        " inputs and " + std::to_string(outputs.size()) +
                        " outputs; MixLab imports models with one of each");
    GraphReader graph(layers, mixed);
    const auto named = [&](const std::string& name) {
        return std::find_if(layers.begin(), layers.end(),
                            [&](const Layer& l) { return l.name == name; });
    };
    const auto input = named(inputs[0].name);
    if (input == layers.end() || input->class_name != "InputLayer" || inputs[0].node != 0)
        throw SpecError(model_words(model) + "'s input " + shown(json(inputs[0].name)) +
                        " is not one of its InputLayers");
    if (const auto output = named(outputs[0].name); output != layers.end())
        check_call(model, *output, outputs[0].node);
    ModelPieces out;
    out.input_shape = input_layer_shape(*input);
    out.pieces = graph.read(inputs[0].name, outputs[0].name);
    return out;
}

ModelPieces read_model(const Layer& model, bool mixed)
{
    return model.class_name == "Sequential" ? read_sequential(model, mixed)
                                            : read_functional(model, mixed);
}

} // namespace

KerasImport import_keras_model(std::string_view json_text)
{
    json doc;
    try {
        doc = json::parse(json_text.begin(), json_text.end());
    } catch (const json::exception& e) {
        throw SpecError("the Keras model is not valid JSON: " + json_util::json_error_text(e));
    }
    if (!doc.is_object()) throw SpecError(std::string(k_not_keras) + ", got " + shown(doc));
    if (doc.contains("format") && doc.at("format").is_string() &&
        doc.at("format").get<std::string>().rfind("mixlab-", 0) == 0)
        throw SpecError("this is a MixLab document (" + shown(doc.at("format")) +
                        "), not a Keras model; open it directly");
    const json cls = doc.value("class_name", json());
    const json* config = doc.contains("config") ? &doc.at("config") : nullptr;
    if (!cls.is_string() || !config || !config->is_object() || !config->contains("layers") ||
        !config->at("layers").is_array())
        throw SpecError(k_not_keras);
    const std::string model_class = cls.get<std::string>();
    const bool sequential = model_class == "Sequential";
    // Keras 2.0-2.3 called a Functional model "Model".
    if (!sequential && model_class != "Functional" && model_class != "Model")
        throw SpecError("the Keras object is a " + shown(cls) +
                        "; MixLab imports Sequential and Functional models");

    KerasImport out;
    out.model_class = sequential ? "Sequential" : "Functional";
    const std::string version = doc.value("keras_version", json("")).is_string()
                                    ? doc.value("keras_version", std::string())
                                    : std::string();
    // Keras 3's to_json() writes no version, but every object carries its "module".
    out.keras_major = version.rfind("2.", 0) == 0   ? 2
                      : version.rfind("3.", 0) == 0 ? 3
                      : doc.contains("module")      ? 3
                                                    : 2;
    if (config->contains("name") && config->at("name").is_string())
        out.spec.name = config->at("name").get<std::string>();

    Layer model;
    model.name = out.spec.name;
    model.class_name = model_class;
    model.config = config;
    model.entry = &doc;
    model.layers = read_layers(*config, &model, 0);
    std::vector<Layer> converted; // the layers that convert, nested models' included
    leaves(model.layers, converted);
    const LayerDtype dtype = model_dtype(converted, model);
    const bool mixed = is_mixed(dtype);
    out.keras_policy = keras::dtype_name(dtype);
    out.policy = dtype == LayerDtype::MixedFloat16    ? Policy::MixedFP16
                 : dtype == LayerDtype::MixedBfloat16 ? Policy::MixedBF16
                                                      : Policy::FP32;
    ModelPieces pieces = read_model(model, mixed);
    stack_lstms(pieces.pieces);
    out.spec.layers = std::move(pieces.pieces.layers);
    out.origins = std::move(pieces.pieces.origins);
    out.input_shape = std::move(pieces.input_shape);
    if (out.spec.layers.empty()) throw SpecError("the Keras model has no layers besides its input");

    // The spec read back as a file is: whatever the importer let through that MixLab's
    // own checks refuse is refused here, in MixLab's words.
    try {
        out.spec = parse_model_spec(model_spec_to_json(out.spec));
    } catch (const SpecError& e) {
        throw SpecError(std::string("the imported model is not a valid MixLab model: ") + e.what());
    }
    return out;
}

KerasImport load_keras_model(const std::string& path)
{
    if (keras::is_archive_path(path)) {
        keras::Archive archive = keras::read_archive(path);
        try {
            KerasImport out = import_keras_model(archive.config_json);
            out.weights_h5 = std::move(archive.weights_h5);
            return out;
        } catch (const SpecError& e) {
            throw SpecError("Keras archive '" + path + "': config.json: " + e.what());
        }
    }
    const std::string text = json_util::read_document_file(path, k_document);
    try {
        return import_keras_model(text);
    } catch (const SpecError& e) {
        throw SpecError("Keras model file \"" + path + "\": " + e.what());
    }
}

} // namespace mixlab
