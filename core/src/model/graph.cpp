// build_graph: walks a model spec (residual blocks included) over an input shape, each
// layer inferred by its type's unit (model/layers: output shape, parameters, forward
// FLOPs, tensor-core fitness, resolved strides and padding), and decides how the output
// meets the loss.
#include "mixlab/graph.h"

#include "mixlab/error.h"
#include "model/layers/layer_rules.h"
#include "model/layers/layer_unit.h"
#include "model/layers/registry.h"

#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

namespace mixlab {

std::int64_t Shape::elements() const
{
    if (dims.empty()) return 0;
    std::int64_t n = 1;
    for (int d : dims) n *= d;
    return n;
}

std::string Shape::to_string() const
{
    if (dims.empty()) return "()";
    if (is_tokens()) return "T tokens";
    std::string s = sequence ? "T x " : "";
    for (std::size_t i = 0; i < dims.size(); ++i) {
        if (i) s += "x";
        s += std::to_string(dims[i]);
    }
    return s;
}

namespace {

class GraphBuilder final : public GraphWalk {
public:
    GraphBuilder(const Shape& input, int classes) : m_input(input), m_classes(classes) {}

    const Shape& model_input() const override { return m_input; }
    int classes() const override { return m_classes; }
    const GraphLayer* embedding() const override { return m_embedding ? &*m_embedding : nullptr; }

    std::vector<GraphLayer> infer_list(const std::vector<LayerSpec>& specs, const Shape& in,
                                       const std::string& prefix, Shape& out) override
    {
        std::vector<GraphLayer> layers;
        Shape cur = in;
        for (std::size_t i = 0; i < specs.size(); ++i) {
            layers.push_back(infer_layer(specs[i], cur, int(i), prefix + std::to_string(i)));
            cur = layers.back().out;
        }
        out = cur;
        return layers;
    }

private:
    // Ids number the tree pre-order: a block's id comes before its branches'.
    GraphLayer infer_layer(const LayerSpec& l, const Shape& in, int index, std::string path)
    {
        GraphLayer gl;
        gl.index = index;
        gl.id = m_next_id++;
        gl.path = std::move(path);
        gl.spec = l;
        gl.in = in;
        layer_unit(l.type).infer(gl, *this);
        if (gl.out.elements() > k_max_elements)
            throw SpecError(layer_label(gl) + ": its output " + gl.out.to_string() +
                            " holds more values than one sample may");
        if (l.type == LayerType::Embedding) m_embedding = gl;
        return gl;
    }

    Shape m_input;
    int m_classes;
    int m_next_id = 0;
    std::optional<GraphLayer> m_embedding; // for a decoder tied to it
};

void warn_softmax_inside(const std::vector<GraphLayer>& layers, std::vector<std::string>& out)
{
    // A softmax that is not the output feeds probabilities to a loss that applies its own
    // softmax to whatever comes last: almost always a mistake in a classifier.
    for (const GraphLayer& gl : layers) {
        if (gl.spec.activation == Activation::Softmax && !gl.folded_into_loss &&
            layer_unit(gl.spec.type).folds_output_activation())
            out.push_back(layer_label(gl) +
                          ": softmax before the output layer; the loss applies softmax to the "
                          "final outputs itself, so put softmax last (or leave it out).");
        warn_softmax_inside(gl.body, out);
        warn_softmax_inside(gl.shortcut, out);
    }
}

} // namespace

namespace {

// MIXLAB_NO_FEATURE_PADDING=1 stores sequence features at their own width (A/B timing,
// and the test that padding changes no number).
bool feature_padding_enabled()
{
    const char* v = std::getenv("MIXLAB_NO_FEATURE_PADDING");
    return !v || !*v || std::strcmp(v, "0") == 0;
}

// Which outputs the network stores zero-padded (k_feature_alignment, layer_unit.h): an
// embedding's or lstm's whose width is off the alignment and that reaches a layer reading
// padding (dense, lstm) through layers keeping it (dropout, relu ...). Any other path
// keeps the plain width: a sigmoid would turn the zeros into 0.5. The readers' fitness is
// then judged at the widths they run at. Top-level layers: a language model's.
void mark_padded_outputs(std::vector<GraphLayer>& layers)
{
    if (!feature_padding_enabled()) return;
    auto keeps = [&](std::size_t i) {
        return layer_unit(layers[i].spec.type).keeps_padding(layers[i].spec);
    };
    // The reader of layer i's output, past the layers keeping padding; null when none.
    auto reader_of = [&](std::size_t i) -> GraphLayer* {
        std::size_t j = i + 1;
        while (j < layers.size() && keeps(j)) ++j;
        return j < layers.size() && layer_unit(layers[j].spec.type).reads_padding() ? &layers[j]
                                                                                    : nullptr;
    };
    // The layer whose output reaches layer j, past the layers keeping padding; null: none.
    auto feeder_of = [&](std::size_t j) -> GraphLayer* {
        while (j > 0 && keeps(j - 1)) --j;
        return j > 0 ? &layers[j - 1] : nullptr;
    };
    for (std::size_t i = 0; i < layers.size(); ++i) {
        const int n = int(layers[i].out.elements());
        if (layer_unit(layers[i].spec.type).pads_output() && padded_features(n) != n &&
            reader_of(i))
            layers[i].stored_width = padded_features(n);
    }
    // A tied decoder multiplies its input by the embedding's table: both padded or neither.
    for (std::size_t j = 1; j < layers.size(); ++j) {
        if (!layers[j].spec.tie_weights) continue;
        GraphLayer* source = feeder_of(j);
        if (!source || source->stored_width != layers[0].stored_width) {
            layers[0].stored_width = 0;
            if (source) source->stored_width = 0;
        }
    }
    // Readers judged again at what they run at: a padded input, or their own padded output.
    for (std::size_t j = 0; j < layers.size(); ++j) {
        const LayerUnit& u = layer_unit(layers[j].spec.type);
        if (!u.reads_padding()) continue;
        const GraphLayer* feeder = feeder_of(j);
        const std::int64_t in =
            feeder && feeder->stored_width ? feeder->stored_width : layers[j].in.elements();
        if (in != layers[j].in.elements() || layers[j].stored_width) u.refit(layers[j], in);
    }
}

} // namespace

Graph build_graph(const ModelSpec& spec, const Shape& input, int classes)
{
    if (input.dims.empty())
        throw InputError("the input shape is empty; a dataset gives (H, W, C) or (D)");
    for (int d : input.dims)
        if (d <= 0)
            throw InputError("the input shape " + input.to_string() +
                             " has a dimension that is not positive");
    if (classes < 1)
        throw InputError("the dataset must have at least one class, got " +
                         std::to_string(classes));
    if (spec.layers.empty())
        throw SpecError("the model has no layers; end it with a dense layer of " +
                        std::to_string(classes) + " units (one per class)");
    // Token ids are indices, not features: only an embedding reads them.
    if (input.is_tokens() && spec.layers.front().type != LayerType::Embedding)
        throw SpecError("layer 0 (" + std::string(layer_type_name(spec.layers.front().type)) +
                        "): a language model's input is one word id per time step; start the "
                        "model with an embedding layer ({\"type\": \"embedding\", \"vocab\": "
                        "\"dataset\", \"dim\": 200})");

    Graph g;
    g.name = spec.name;
    g.input = input;
    g.classes = classes;

    Shape cur;
    g.layers = GraphBuilder(input, classes).infer_list(spec.layers, input, "layer ", cur);
    if (input.sequence) mark_padded_outputs(g.layers);

    // The output must be one value per class. Name the layer that set the width (the
    // last dense, flatten or global pooling), since that is the one to edit.
    if (cur.dims.size() != 1 || cur.elements() != classes) {
        int culprit = int(g.layers.size()) - 1;
        for (int i = culprit; i >= 0; --i) {
            if (layer_unit(g.layers[std::size_t(i)].spec.type).sets_width()) {
                culprit = i;
                break;
            }
        }
        const GraphLayer& c = g.layers[std::size_t(culprit)];
        std::string msg = layer_label(c) + ": the model outputs ";
        if (cur.dims.size() == 1)
            msg += std::to_string(cur.elements()) + " values";
        else
            msg += "a " + cur.to_string() + " tensor";
        const bool lm = input.sequence;
        msg += lm ? " but the vocabulary has " + std::to_string(classes) + " words"
                  : " but the dataset has " + std::to_string(classes) + " classes";
        const std::string dense =
            "a dense layer of " + std::to_string(classes) +
            (lm ? " units (or \"units\": \"vocab\")" : " units (or \"units\": \"classes\")");
        const char* width_field = layer_unit(c.spec.type).width_field();
        if (width_field && cur.dims.size() == 1)
            msg += "; set \"" + std::string(width_field) + "\" to " + std::to_string(classes);
        else if (is_image(cur))
            msg += "; end the model with a flatten (or global_avgpool) layer and " + dense;
        else
            msg += "; end the model with " + dense;
        throw SpecError(msg);
    }

    // How the output meets the loss: a final softmax or sigmoid (as its own layer or as
    // the last dense's activation) is computed inside the cross-entropy in float32.
    GraphLayer& last = g.layers.back();
    const bool can_fold = layer_unit(last.spec.type).folds_output_activation();
    if (can_fold && last.spec.activation == Activation::Softmax) {
        g.head = OutputHead::SoftmaxFolded;
        last.folded_into_loss = true;
    } else if (can_fold && last.spec.activation == Activation::Sigmoid) {
        g.head = OutputHead::SigmoidKeras;
        last.folded_into_loss = true;
        g.warnings.push_back(
            layer_label(last) +
            ": a sigmoid output trained with categorical cross-entropy follows Keras's "
            "semantics: the outputs are divided by their sum and clipped to [1e-7, 1-1e-7] "
            "before the log. Sigmoids score each class on its own; for one-of-N classes, "
            "softmax is the right output activation.");
    }
    warn_softmax_inside(g.layers, g.warnings);

    // Residual blocks already hold the sums of their sub-layers.
    for (const GraphLayer& gl : g.layers) {
        g.total_params += gl.params;
        g.total_flops += gl.flops;
    }
    return g;
}

} // namespace mixlab
