// build_graph: walks a model spec over an input shape, inferring each layer's output
// shape, parameters, forward FLOPs, tensor-core fitness and how the output meets the loss.
#include "mixlab/graph.h"

#include "mixlab/error.h"

#include <limits>
#include <string>

namespace mixlab {

std::int64_t Shape::elements() const {
    if (dims.empty()) return 0;
    std::int64_t n = 1;
    for (int d : dims) n *= d;
    return n;
}

std::string Shape::to_string() const {
    if (dims.empty()) return "()";
    std::string s;
    for (std::size_t i = 0; i < dims.size(); ++i) {
        if (i) s += "x";
        s += std::to_string(dims[i]);
    }
    return s;
}

namespace {

// 16-bit tensor-core GEMMs want every dimension a multiple of 8 (16 bytes of fp16);
// cuBLAS otherwise falls back to slower kernels or pads.
constexpr int k_tensor_core_multiple = 8;

// Forward FLOPs per element of an activation: one op for the pointwise ones (a rough
// count; their cost is memory traffic, not math), exp + sum + divide for softmax, and
// nothing for linear.
std::int64_t activation_flops(Activation a, std::int64_t elements) {
    switch (a) {
    case Activation::None: return 0;
    case Activation::Softmax: return 3 * elements;
    default: return elements;
    }
}

std::string layer_label(int index, const LayerSpec& l) {
    return "layer " + std::to_string(index) + " (" + std::string(layer_type_name(l.type)) + ")";
}

std::string tensor_core_note(std::int64_t in, std::int64_t units) {
    std::string note;
    auto check = [&](const char* what, std::int64_t n) {
        if (n % k_tensor_core_multiple == 0) return;
        const std::int64_t up = (n / k_tensor_core_multiple + 1) * k_tensor_core_multiple;
        if (!note.empty()) note += "; ";
        note += std::string(what) + " " + std::to_string(n) + " is not a multiple of " +
                std::to_string(k_tensor_core_multiple) + " (" + std::to_string(up) +
                " would be)";
    };
    check("inputs", in);
    check("units", units);
    return note;
}

} // namespace

Graph build_graph(const ModelSpec& spec, const Shape& input, int classes) {
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

    Graph g;
    g.name = spec.name;
    g.input = input;
    g.classes = classes;

    Shape cur = input;
    for (std::size_t i = 0; i < spec.layers.size(); ++i) {
        const LayerSpec& l = spec.layers[i];
        GraphLayer gl;
        gl.index = int(i);
        gl.spec = l;
        gl.in = cur;
        const std::string label = layer_label(int(i), l);
        switch (l.type) {
        case LayerType::Flatten:
            if (cur.elements() > std::numeric_limits<int>::max())
                throw SpecError(label + ": flattens " + cur.to_string() +
                                ", more values than one sample may hold");
            gl.out = Shape{{int(cur.elements())}};
            break;
        case LayerType::Dense: {
            if (cur.dims.size() != 1)
                throw SpecError(label + ": needs a flat input but receives " + cur.to_string() +
                                "; add a {\"type\": \"flatten\"} layer before it");
            if (l.units <= 0)
                throw SpecError(label + ": \"units\" must be a positive integer, got " +
                                std::to_string(l.units));
            const std::int64_t in = cur.dims[0];
            const std::int64_t units = l.units;
            gl.out = Shape{{l.units}};
            gl.params = in * units + (l.use_bias ? units : 0);
            gl.flops = 2 * in * units + (l.use_bias ? units : 0) +
                       activation_flops(l.activation, units);
            gl.is_gemm = true;
            gl.tensor_core_note = tensor_core_note(in, units);
            gl.tensor_core_friendly = gl.tensor_core_note.empty();
            break;
        }
        case LayerType::Activation:
            // Softmax normalises over a row; on an image-shaped tensor the row is ambiguous.
            if (l.activation == Activation::Softmax && cur.dims.size() != 1)
                throw SpecError(label + ": softmax needs a flat input but receives " +
                                cur.to_string() + "; add a {\"type\": \"flatten\"} layer before it");
            gl.out = cur;
            gl.flops = activation_flops(l.activation, cur.elements());
            break;
        case LayerType::Dropout:
            if (!(l.rate >= 0.0f && l.rate < 1.0f))
                throw SpecError(label + ": \"rate\" must be a number in [0, 1), got " +
                                std::to_string(l.rate));
            gl.out = cur;
            break;
        }
        cur = gl.out;
        g.layers.push_back(std::move(gl));
    }

    // The output must be one value per class. Name the layer that set the width (the
    // last dense or flatten), since that is the one to edit.
    if (cur.dims.size() != 1 || cur.elements() != classes) {
        int culprit = int(g.layers.size()) - 1;
        for (int i = culprit; i >= 0; --i) {
            const LayerType t = g.layers[std::size_t(i)].spec.type;
            if (t == LayerType::Dense || t == LayerType::Flatten) { culprit = i; break; }
        }
        const GraphLayer& c = g.layers[std::size_t(culprit)];
        std::string msg = layer_label(culprit, c.spec) + ": the model outputs ";
        if (cur.dims.size() == 1)
            msg += std::to_string(cur.elements()) + " values";
        else
            msg += "a " + cur.to_string() + " tensor";
        msg += " but the dataset has " + std::to_string(classes) + " classes";
        if (c.spec.type == LayerType::Dense && cur.dims.size() == 1)
            msg += "; set \"units\" to " + std::to_string(classes);
        else
            msg += "; end the model with a dense layer of " + std::to_string(classes) + " units";
        throw SpecError(msg);
    }

    // How the output meets the loss: a final softmax or sigmoid (as its own layer or as
    // the last dense's activation) is computed inside the cross-entropy in float32.
    GraphLayer& last = g.layers.back();
    const bool can_fold =
        last.spec.type == LayerType::Activation || last.spec.type == LayerType::Dense;
    if (can_fold && last.spec.activation == Activation::Softmax) {
        g.head = OutputHead::SoftmaxFolded;
        last.folded_into_loss = true;
    } else if (can_fold && last.spec.activation == Activation::Sigmoid) {
        g.head = OutputHead::SigmoidKeras;
        last.folded_into_loss = true;
        g.warnings.push_back(
            layer_label(last.index, last.spec) +
            ": a sigmoid output trained with categorical cross-entropy follows Keras's "
            "semantics: the outputs are divided by their sum and clipped to [1e-7, 1-1e-7] "
            "before the log. Sigmoids score each class on its own; for one-of-N classes, "
            "softmax is the right output activation.");
    }

    // A softmax that is not the output feeds probabilities to a loss that applies its own
    // softmax to whatever comes last: almost always a mistake in a classifier.
    for (const GraphLayer& gl : g.layers)
        if (gl.spec.activation == Activation::Softmax && !gl.folded_into_loss &&
            (gl.spec.type == LayerType::Dense || gl.spec.type == LayerType::Activation))
            g.warnings.push_back(layer_label(gl.index, gl.spec) +
                                 ": softmax before the output layer; the loss applies softmax "
                                 "to the final outputs itself, so put softmax last (or leave "
                                 "it out).");

    for (const GraphLayer& gl : g.layers) {
        g.total_params += gl.params;
        g.total_flops += gl.flops;
    }
    return g;
}

} // namespace mixlab
