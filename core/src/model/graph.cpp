// build_graph: walks a model spec (residual blocks included) over an input shape, inferring
// each layer's output shape, parameters, forward FLOPs, tensor-core fitness, resolved
// strides and padding, and how the output meets the loss.
#include "mixlab/graph.h"

#include "mixlab/error.h"

#include <cmath>
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
// cuBLAS otherwise falls back to slower kernels or pads. For a convolution the GEMM's
// reduction and output dimensions are the channel counts, so those are the ones checked.
constexpr int k_tensor_core_multiple = 8;

// One sample's tensors and one layer's weights are indexed with 32-bit integers by the
// backends; anything larger is a mistake in the spec, not a model to train.
constexpr std::int64_t k_max_elements = std::numeric_limits<int>::max();

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

// Batch norm per element: subtract the mean, multiply by 1/sqrt(var + eps), scale, shift.
constexpr std::int64_t k_batchnorm_flops_per_element = 4;

std::string layer_label(const GraphLayer& gl) {
    return gl.path + " (" + std::string(layer_type_name(gl.spec.type)) + ")";
}

std::string tensor_core_note(std::initializer_list<std::pair<const char*, std::int64_t>> dims) {
    std::string note;
    for (const auto& [what, n] : dims) {
        if (n % k_tensor_core_multiple == 0) continue;
        const std::int64_t up = (n / k_tensor_core_multiple + 1) * k_tensor_core_multiple;
        if (!note.empty()) note += "; ";
        note += std::string(what) + " " + std::to_string(n) + " is not a multiple of " +
                std::to_string(k_tensor_core_multiple) + " (" + std::to_string(up) +
                " would be)";
    }
    return note;
}

std::string pair_text(int h, int w) {
    if (h == w) return std::to_string(h);
    return "[" + std::to_string(h) + ", " + std::to_string(w) + "]";
}

bool is_image(const Shape& s) { return s.dims.size() == 3; }

class GraphBuilder {
public:
    GraphBuilder(const Shape& input, int classes) : m_input(input), m_classes(classes) {}

    // Infers `specs` in order from `in`; `prefix` starts each path ("layer ",
    // "layer 4 > body "). Returns the layers and leaves the last output in `out`.
    std::vector<GraphLayer> build_list(const std::vector<LayerSpec>& specs, const Shape& in,
                                       const std::string& prefix, Shape& out) {
        std::vector<GraphLayer> layers;
        Shape cur = in;
        for (std::size_t i = 0; i < specs.size(); ++i) {
            layers.push_back(build_layer(specs[i], cur, int(i), prefix + std::to_string(i)));
            cur = layers.back().out;
        }
        out = cur;
        return layers;
    }

private:
    GraphLayer build_layer(const LayerSpec& l, const Shape& in, int index, std::string path) {
        GraphLayer gl;
        gl.index = index;
        gl.id = m_next_id++;
        gl.path = std::move(path);
        gl.spec = l;
        gl.in = in;
        const std::string label = layer_label(gl);
        switch (l.type) {
        case LayerType::Flatten:
            if (in.elements() > k_max_elements)
                throw SpecError(label + ": flattens " + in.to_string() +
                                ", more values than one sample may hold");
            gl.out = Shape{{int(in.elements())}};
            break;
        case LayerType::Dense: dense(gl, label); break;
        case LayerType::Activation:
            // Softmax normalises over a row; on an image-shaped tensor the row is ambiguous.
            if (l.activation == Activation::Softmax && in.dims.size() != 1)
                throw SpecError(label + ": softmax needs a flat input but receives " +
                                in.to_string() + "; add a {\"type\": \"flatten\"} layer before it");
            gl.out = in;
            gl.flops = activation_flops(l.activation, in.elements());
            break;
        case LayerType::Dropout:
            if (!(l.rate >= 0.0f && l.rate < 1.0f))
                throw SpecError(label + ": \"rate\" must be a number in [0, 1), got " +
                                std::to_string(l.rate));
            gl.out = in;
            break;
        case LayerType::Conv2D: conv2d(gl, label); break;
        case LayerType::BatchNorm: {
            if (!(l.momentum >= 0.0f && l.momentum <= 1.0f))
                throw SpecError(label + ": \"momentum\" must be a number in [0, 1], got " +
                                std::to_string(l.momentum));
            if (!(l.epsilon > 0.0f && std::isfinite(l.epsilon)))
                throw SpecError(label + ": \"epsilon\" must be a positive number, got " +
                                std::to_string(l.epsilon));
            // Normalises each channel (the last dimension) over the batch and, for
            // images, over height and width.
            const std::int64_t channels = in.dims.back();
            gl.out = in;
            gl.params = 2 * channels;
            gl.flops = k_batchnorm_flops_per_element * in.elements();
            break;
        }
        case LayerType::MaxPool2D:
        case LayerType::AvgPool2D: pool(gl, label); break;
        case LayerType::GlobalAvgPool:
            need_image(gl, label);
            gl.out = Shape{{in.dims[2]}};
            gl.flops = in.elements();
            break;
        case LayerType::Residual: residual(gl, label); break;
        }
        if (gl.out.elements() > k_max_elements)
            throw SpecError(label + ": its output " + gl.out.to_string() +
                            " holds more values than one sample may");
        return gl;
    }

    void dense(GraphLayer& gl, const std::string& label) const {
        LayerSpec& l = gl.spec;
        if (gl.in.dims.size() != 1)
            throw SpecError(label + ": needs a flat input but receives " + gl.in.to_string() +
                            "; add a {\"type\": \"flatten\"} layer before it");
        if (l.units == k_units_classes) l.units = m_classes;
        if (l.units <= 0)
            throw SpecError(label + ": \"units\" must be a positive integer, got " +
                            std::to_string(l.units));
        const std::int64_t in = gl.in.dims[0];
        const std::int64_t units = l.units;
        if (in * units > k_max_elements)
            throw SpecError(label + ": " + std::to_string(in) + " inputs x " +
                            std::to_string(units) + " units is more weights than one layer "
                            "may hold");
        gl.out = Shape{{l.units}};
        gl.params = in * units + (l.use_bias ? units : 0);
        gl.flops =
            2 * in * units + (l.use_bias ? units : 0) + activation_flops(l.activation, units);
        gl.is_gemm = true;
        gl.tensor_core_note = tensor_core_note({{"inputs", in}, {"units", units}});
        gl.tensor_core_friendly = gl.tensor_core_note.empty();
    }

    void need_image(const GraphLayer& gl, const std::string& label) const {
        if (is_image(gl.in)) return;
        std::string msg = label + ": needs an image input (H, W, C) but receives " +
                          gl.in.to_string();
        if (is_image(m_input))
            msg += "; put it before the flatten or dense layers (they turn the image into a "
                   "vector)";
        else
            msg += "; the dataset gives flat samples of " + m_input.to_string() +
                   " values, so only dense-style layers apply";
        throw SpecError(msg);
    }

    // kernel, stride and padding of a conv2d or pooling layer, resolved into gl; returns
    // the output height and width.
    std::pair<int, int> window(GraphLayer& gl, const std::string& label, int default_stride_h,
                               int default_stride_w) const {
        const LayerSpec& l = gl.spec;
        const bool pooling = l.type != LayerType::Conv2D;
        const char* size_field = pooling ? "\"pool_size\"" : "\"kernel\"";
        if (l.kernel_h < 1 || l.kernel_w < 1)
            throw SpecError(label + ": " + size_field + " must be positive, got " +
                            pair_text(l.kernel_h, l.kernel_w));
        if (l.stride_h < 0 || l.stride_w < 0)
            throw SpecError(label + ": \"stride\" must be positive, got " +
                            pair_text(l.stride_h, l.stride_w));
        gl.stride_h = l.stride_h == 0 ? default_stride_h : l.stride_h;
        gl.stride_w = l.stride_w == 0 ? default_stride_w : l.stride_w;
        switch (l.padding) {
        case Padding::Valid: gl.pad_h = gl.pad_w = 0; break;
        case Padding::Same:
            if (l.kernel_h % 2 == 0 || l.kernel_w % 2 == 0)
                throw SpecError(label + ": \"padding\": \"same\" needs an odd " + size_field +
                                " (the padding is the same on both sides), got " +
                                std::to_string(l.kernel_h) + "x" + std::to_string(l.kernel_w) +
                                "; use an odd size or explicit \"padding\" numbers");
            gl.pad_h = (l.kernel_h - 1) / 2;
            gl.pad_w = (l.kernel_w - 1) / 2;
            break;
        case Padding::Explicit:
            if (l.pad_h < 0 || l.pad_w < 0)
                throw SpecError(label + ": \"padding\" must not be negative, got " +
                                pair_text(l.pad_h, l.pad_w));
            gl.pad_h = l.pad_h;
            gl.pad_w = l.pad_w;
            break;
        }
        // A pooling window lying wholly in the padding has nothing to pool (and an
        // average that excludes padding would divide by zero).
        if (pooling && (2 * gl.pad_h > l.kernel_h || 2 * gl.pad_w > l.kernel_w))
            throw SpecError(label + ": padding " + pair_text(gl.pad_h, gl.pad_w) +
                            " is more than half the " + std::to_string(l.kernel_h) + "x" +
                            std::to_string(l.kernel_w) + " window");
        const std::int64_t h = std::int64_t(gl.in.dims[0]) + 2 * std::int64_t(gl.pad_h);
        const std::int64_t w = std::int64_t(gl.in.dims[1]) + 2 * std::int64_t(gl.pad_w);
        if (h < l.kernel_h || w < l.kernel_w)
            throw SpecError(label + ": its " + std::to_string(l.kernel_h) + "x" +
                            std::to_string(l.kernel_w) + " window is larger than its input " +
                            std::to_string(gl.in.dims[0]) + "x" + std::to_string(gl.in.dims[1]) +
                            (gl.pad_h || gl.pad_w ? " padded to " + std::to_string(h) + "x" +
                                                        std::to_string(w)
                                                  : std::string()) +
                            "; use a smaller " + size_field +
                            ", more padding, or less downsampling before it");
        return {int((h - l.kernel_h) / gl.stride_h + 1), int((w - l.kernel_w) / gl.stride_w + 1)};
    }

    void conv2d(GraphLayer& gl, const std::string& label) const {
        const LayerSpec& l = gl.spec;
        need_image(gl, label);
        if (l.filters < 1)
            throw SpecError(label + ": \"filters\" must be a positive integer, got " +
                            std::to_string(l.filters));
        if (l.activation == Activation::Softmax)
            throw SpecError(label + ": \"activation\": \"softmax\" is not available on conv2d; "
                            "put it after flatten and dense layers");
        const auto [oh, ow] = window(gl, label, 1, 1);
        const std::int64_t cin = gl.in.dims[2], cout = l.filters;
        // Checked in floating point first, so absurd sizes made in code cannot overflow.
        if (double(l.kernel_h) * l.kernel_w * double(cin) * double(cout) > double(k_max_elements))
            throw SpecError(label + ": a " + std::to_string(l.kernel_h) + "x" +
                            std::to_string(l.kernel_w) + " kernel over " + std::to_string(cin) +
                            " channels for " + std::to_string(cout) +
                            " filters is more weights than one layer may hold");
        if (double(oh) * double(ow) * double(cout) > double(k_max_elements))
            throw SpecError(label + ": its output " + std::to_string(oh) + "x" +
                            std::to_string(ow) + "x" + std::to_string(cout) +
                            " holds more values than one sample may");
        const std::int64_t taps = std::int64_t(l.kernel_h) * l.kernel_w * cin;
        gl.out = Shape{{oh, ow, l.filters}};
        const std::int64_t positions = std::int64_t(oh) * ow;
        gl.params = taps * cout + (l.use_bias ? cout : 0);
        gl.flops = 2 * taps * cout * positions + (l.use_bias ? cout * positions : 0) +
                   activation_flops(l.activation, gl.out.elements());
        gl.is_gemm = true;
        gl.tensor_core_note = tensor_core_note({{"input channels", cin}, {"filters", cout}});
        gl.tensor_core_friendly = gl.tensor_core_note.empty();
    }

    void pool(GraphLayer& gl, const std::string& label) const {
        const LayerSpec& l = gl.spec;
        need_image(gl, label);
        const auto [oh, ow] = window(gl, label, l.kernel_h, l.kernel_w);
        gl.out = Shape{{oh, ow, gl.in.dims[2]}};
        // One compare (max) or add (average) per window element and output.
        gl.flops = std::int64_t(l.kernel_h) * l.kernel_w * gl.out.elements();
    }

    void residual(GraphLayer& gl, const std::string& label) {
        const LayerSpec& l = gl.spec;
        if (l.body.empty())
            throw SpecError(label + ": \"body\" is empty; a residual block adds the output of "
                            "at least one layer to its shortcut");
        if (l.activation != Activation::None && l.activation != Activation::Relu)
            throw SpecError(label + ": \"activation\" of a residual block must be \"relu\" or "
                            "\"linear\", got \"" + std::string(activation_name(l.activation)) +
                            "\"");
        Shape body_out, shortcut_out;
        gl.body = build_list(l.body, gl.in, gl.path + " > body ", body_out);
        gl.shortcut = build_list(l.shortcut, gl.in, gl.path + " > shortcut ", shortcut_out);
        if (!(body_out == shortcut_out)) mismatch(gl, label, body_out, shortcut_out);
        gl.out = body_out;
        for (const auto* part : {&gl.body, &gl.shortcut})
            for (const GraphLayer& sub : *part) {
                gl.params += sub.params;
                gl.flops += sub.flops;
            }
        // The sum, then the activation.
        gl.flops += gl.out.elements() + activation_flops(l.activation, gl.out.elements());
    }

    // Names both shapes and, where one exists, a shortcut that would match the body.
    [[noreturn]] void mismatch(const GraphLayer& gl, const std::string& label, const Shape& body,
                               const Shape& shortcut) const {
        std::string msg = label + ": body gives " + body.to_string() + " but shortcut gives " +
                          shortcut.to_string();
        if (gl.spec.shortcut.empty()) msg += " (the identity: the block's input)";
        msg += "; the two must have the same shape to be added";
        const Shape& in = gl.in;
        std::string fix;
        if (is_image(in) && is_image(body)) {
            // A 1x1 convolution with stride s maps h to (h - 1) / s + 1.
            auto stride_for = [](int from, int to) {
                for (int s = 1; s <= from; ++s)
                    if ((from - 1) / s + 1 == to) return s;
                return 0;
            };
            const int sh = stride_for(in.dims[0], body.dims[0]);
            const int sw = stride_for(in.dims[1], body.dims[1]);
            if (sh && sw) {
                fix = "{\"type\": \"conv2d\", \"filters\": " + std::to_string(body.dims[2]) +
                      ", \"kernel\": 1";
                if (sh != 1 || sw != 1) fix += ", \"stride\": " + pair_text(sh, sw);
                fix += ", \"use_bias\": false}, {\"type\": \"batchnorm\"}";
            }
        } else if (in.dims.size() == 1 && body.dims.size() == 1) {
            fix = "{\"type\": \"dense\", \"units\": " + std::to_string(body.dims[0]) + "}";
        }
        if (!fix.empty()) msg += "; a \"shortcut\": [" + fix + "] would match";
        throw SpecError(msg);
    }

    Shape m_input;
    int m_classes;
    int m_next_id = 0;
};

void warn_softmax_inside(const std::vector<GraphLayer>& layers, std::vector<std::string>& out) {
    // A softmax that is not the output feeds probabilities to a loss that applies its own
    // softmax to whatever comes last: almost always a mistake in a classifier.
    for (const GraphLayer& gl : layers) {
        if (gl.spec.activation == Activation::Softmax && !gl.folded_into_loss &&
            (gl.spec.type == LayerType::Dense || gl.spec.type == LayerType::Activation))
            out.push_back(layer_label(gl) +
                          ": softmax before the output layer; the loss applies softmax to the "
                          "final outputs itself, so put softmax last (or leave it out).");
        warn_softmax_inside(gl.body, out);
        warn_softmax_inside(gl.shortcut, out);
    }
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

    Shape cur;
    g.layers = GraphBuilder(input, classes).build_list(spec.layers, input, "layer ", cur);

    // The output must be one value per class. Name the layer that set the width (the
    // last dense, flatten or global pooling), since that is the one to edit.
    if (cur.dims.size() != 1 || cur.elements() != classes) {
        int culprit = int(g.layers.size()) - 1;
        for (int i = culprit; i >= 0; --i) {
            const LayerType t = g.layers[std::size_t(i)].spec.type;
            if (t == LayerType::Dense || t == LayerType::Flatten || t == LayerType::GlobalAvgPool) {
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
        msg += " but the dataset has " + std::to_string(classes) + " classes";
        const std::string dense =
            "a dense layer of " + std::to_string(classes) + " units (or \"units\": \"classes\")";
        if (c.spec.type == LayerType::Dense && cur.dims.size() == 1)
            msg += "; set \"units\" to " + std::to_string(classes);
        else if (is_image(cur))
            msg += "; end the model with a flatten (or global_avgpool) layer and " + dense;
        else
            msg += "; end the model with " + dense;
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
