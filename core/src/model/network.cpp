// Network: static allocation of every tensor a step needs, then forward and backward
// as backend operations. Layers form a tree (residual blocks hold a body and a
// shortcut sequence); each node reads `in`, writes `out`, and on the way back reads
// `out_grad` (which it may overwrite) and writes `in_grad`. Dtype boundaries (the
// per-layer "dtype": "float32" override) become cast nodes.
#include "model/network.h"

#include "base/hd_math.h"
#include "mixlab/error.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <sstream>

namespace mixlab {

struct Network::Node {
    enum class Kind { Layer, Cast } kind = Kind::Layer;
    GraphLayer layer;                  // Kind::Layer (sub-layers live in body/shortcut)
    DType dtype = DType::F32;
    MathMode math = MathMode::Pedantic;
    Activation act = Activation::None; // after folding into the loss
    bool fused_relu = false;           // dense + bias + relu in one GEMM epilogue
    bool passthrough = false;          // flatten: shares its input's buffers
    bool absorbed = false;             // relu run by the batch norm before it: shares its buffers
    int in_features = 0, out_features = 0; // per sample
    int channels = 0;                  // last dimension of the output (NHWC channels)

    Buffer* in = nullptr;
    Buffer* in_grad = nullptr;         // null when nothing before needs a gradient
    Buffer* pre = nullptr;             // pre-activation when the backward pass needs it
    Buffer* out = nullptr;
    Buffer* out_grad = nullptr;

    // dense / conv2d parameters (batch norm: w = scale, b = shift, both float32)
    Buffer* w_master = nullptr; Buffer* w_low = nullptr; Buffer* w_grad = nullptr;
    Buffer* w_grad_low = nullptr;      // conv: dW in the layer's dtype before the fp32 cast
    Buffer* b_master = nullptr; Buffer* b_low = nullptr; Buffer* b_grad = nullptr;

    // batch norm
    Buffer* running_mean = nullptr; Buffer* running_var = nullptr;
    Buffer* saved_mean = nullptr; Buffer* saved_inv_std = nullptr;
    Buffer* scratch_dx = nullptr;      // dx nobody reads, when BN sees the raw input

    ConvGeometry conv;                 // batch filled in per call
    PoolGeometry pool;
    ConvPlanInfo plan;

    // residual
    NodeList body, shortcut;
    Buffer* body_value = nullptr;      // what the body (and shortcut) end with
    Buffer* shortcut_value = nullptr;  // the block input itself for an identity shortcut
    Buffer* shortcut_in_grad = nullptr;  // the shortcut's dX, added into in_grad
    Buffer* body_grad_copy = nullptr;  // set when the body must not overwrite dS
    Buffer* shortcut_grad_copy = nullptr;

    const Buffer& w_read() const { return w_low ? *w_low : *w_master; }
    const Buffer* b_read() const { return b_low ? b_low : b_master; }
    LayerType type() const { return layer.spec.type; }
};

namespace {

using Node = Network::Node;

DType layer_dtype(const LayerSpec& spec, const PolicyTraits& traits)
{
    return spec.force_fp32 ? DType::F32 : traits.compute;
}

MathMode layer_math(DType dtype, Policy policy)
{
    if (dtype != DType::F32) return MathMode::Reduced;
    return policy == Policy::TF32 ? MathMode::TF32 : MathMode::Pedantic;
}

// Layers that pick their own dtype; the rest (dropout, pooling, flatten) run in
// whatever dtype reaches them.
bool has_own_dtype(LayerType t)
{
    switch (t) {
    case LayerType::Dense: case LayerType::Activation: case LayerType::Conv2D:
    case LayerType::BatchNorm: case LayerType::Residual:
        return true;
    default:
        return false;
    }
}

bool has_params(LayerType t)
{
    return t == LayerType::Dense || t == LayerType::Conv2D || t == LayerType::BatchNorm;
}

// The dtype of the first layer, in execution order, that chooses one.
bool first_own_dtype(const std::vector<GraphLayer>& layers, const PolicyTraits& traits,
                     DType& out)
{
    for (const auto& l : layers) {
        if (has_own_dtype(l.spec.type)) { // a residual block decides for its branches
            out = layer_dtype(l.spec, traits);
            return true;
        }
    }
    return false;
}

// Whether a node's backward pass overwrites the dY it reads (dense/conv with an
// activation turn dY into dZ in place; so does a residual with an activation).
bool overwrites_dy(const Node& n)
{
    if (n.kind != Node::Kind::Layer) return false;
    const LayerType t = n.type();
    return (t == LayerType::Dense || t == LayerType::Conv2D || t == LayerType::Residual) &&
           n.act != Activation::None;
}

int last_dim(const Shape& s) { return s.dims.empty() ? 1 : s.dims.back(); }

// MIXLAB_NO_BN_RELU_FUSION=1 keeps a relu after a batch norm as its own passes (A/B timing).
bool bn_relu_fusion_enabled()
{
    const char* v = std::getenv("MIXLAB_NO_BN_RELU_FUSION");
    return !v || !*v || std::strcmp(v, "0") == 0;
}

// Whether `prev` is a batch norm whose output, `value`, can take the following relu:
// nothing else reads it (a sequence hands a node's output to the next node alone) and no
// cast sits between them (the cast would be the previous node).
bool can_absorb_relu(const Node& prev, const Buffer* value)
{
    return prev.kind == Node::Kind::Layer && prev.type() == LayerType::BatchNorm &&
           prev.act == Activation::None && prev.out == value;
}

} // namespace

Network::Network(const Graph& graph, Policy policy, const OptimizerConfig& opt, Backend& backend,
                 int max_batch, std::uint64_t seed)
    : m_backend(backend), m_policy(policy), m_traits(policy_traits(policy)), m_seed(seed),
      m_max_batch(max_batch), m_graph(graph)
{
    DType input_dtype = m_traits.compute;
    first_own_dtype(graph.layers, m_traits, input_dtype);
    const std::size_t input_count = std::size_t(max_batch) * std::size_t(graph.input.elements());
    m_input = own(input_count, input_dtype);
    m_labels = m_backend.alloc(std::size_t(max_batch), DType::I32);
    m_device_bytes += std::int64_t(max_batch) * 4;

    Flow flow{m_input, nullptr, input_dtype, graph.input};
    flow = build_sequence(graph.layers, flow, m_nodes, opt);
    if (m_nodes.empty()) throw SpecError("the model has no layers that compute anything");
    m_logits = flow.value;
    // The loss always writes a gradient, even for a model without parameters.
    m_dlogits = flow.grad ? flow.grad : own(flow.value->count(), flow.dtype);
    if (!flow.grad) m_nodes.back()->out_grad = m_dlogits;

    init_parameters(m_nodes);
    m_param_table = m_backend.prepare_params(m_slots);
}

Network::~Network() = default;

Buffer* Network::own(std::size_t count, DType dtype)
{
    m_owned.push_back(std::make_unique<Buffer>(m_backend.alloc(count, dtype)));
    m_device_bytes += std::int64_t(count * dtype_size(dtype));
    return m_owned.back().get();
}

void Network::disown(Buffer* b)
{
    for (auto it = m_owned.begin(); it != m_owned.end(); ++it) {
        if (it->get() != b) continue;
        m_device_bytes -= std::int64_t(b->count() * dtype_size(b->dtype()));
        m_owned.erase(it);
        return;
    }
}

void Network::add_slot(Buffer* master, Buffer* grad, Buffer* low, const OptimizerConfig& opt)
{
    ParamSlot slot{master, grad, low, nullptr, nullptr};
    const bool sgd = opt.type == OptimizerType::SGD;
    if (!sgd || opt.momentum != 0.0f) slot.state1 = own(master->count(), master->dtype());
    if (!sgd) slot.state2 = own(master->count(), master->dtype());
    m_slots.push_back(slot);
}

Network::Flow Network::build_sequence(const std::vector<GraphLayer>& layers, Flow flow,
                                      NodeList& out, const OptimizerConfig& opt)
{
    for (const auto& layer : layers) {
        if (layer.spec.type == LayerType::Activation && layer.folded_into_loss) continue;
        flow = layer.spec.type == LayerType::Residual ? build_residual(layer, flow, out, opt)
                                                      : build_layer(layer, flow, out, opt);
    }
    return flow;
}

Network::Flow Network::cast_to(Flow flow, DType dtype, NodeList& out)
{
    if (flow.dtype == dtype) return flow;
    auto node = std::make_unique<Node>();
    node->kind = Node::Kind::Cast;
    node->dtype = dtype;
    node->in = flow.value;
    node->in_grad = flow.grad;
    node->out = own(flow.value->count(), dtype);
    node->out_grad = flow.grad ? own(flow.value->count(), dtype) : nullptr;
    Flow next{node->out, node->out_grad, dtype, flow.shape};
    out.push_back(std::move(node));
    return next;
}

Network::Flow Network::build_layer(const GraphLayer& layer, Flow flow, NodeList& out,
                                   const OptimizerConfig& opt)
{
    const LayerSpec& spec = layer.spec;
    const std::size_t batch = std::size_t(m_max_batch);
    if (spec.type == LayerType::Flatten) {
        auto node = std::make_unique<Node>();
        node->layer = layer;
        node->passthrough = true;
        node->dtype = flow.dtype;
        node->in = node->out = flow.value;
        node->in_grad = node->out_grad = flow.grad;
        node->in_features = node->out_features = int(flow.shape.elements());
        out.push_back(std::move(node));
        flow.shape = layer.out;
        return flow;
    }

    if (has_own_dtype(spec.type)) flow = cast_to(flow, layer_dtype(spec, m_traits), out);

    // A relu straight after a batch norm runs inside it, forward and backward (one pass
    // over the activations each way instead of two). Its node stays, as a no-op sharing
    // the batch norm's output and output gradient.
    if (spec.type == LayerType::Activation && spec.activation == Activation::Relu &&
        !out.empty() && can_absorb_relu(*out.back(), flow.value) && bn_relu_fusion_enabled()) {
        out.back()->act = Activation::Relu;
        auto node = std::make_unique<Node>();
        node->layer = layer;
        node->absorbed = true;
        node->dtype = flow.dtype;
        node->act = Activation::Relu;
        node->in = node->out = flow.value;
        node->in_grad = node->out_grad = flow.grad;
        node->in_features = node->out_features = int(layer.out.elements());
        node->channels = last_dim(layer.out);
        out.push_back(std::move(node));
        flow.shape = layer.out;
        return flow;
    }

    auto node = std::make_unique<Node>();
    Node& n = *node;
    n.layer = layer;
    n.dtype = flow.dtype;
    n.math = layer_math(n.dtype, m_policy);
    n.in = flow.value;
    n.in_grad = flow.grad;
    n.in_features = int(layer.in.elements());
    n.out_features = int(layer.out.elements());
    n.channels = last_dim(layer.out);
    const DType master = (m_traits.master_weights || n.dtype == DType::F32) ? DType::F32 : n.dtype;

    auto weights = [&](std::size_t n_w, std::size_t n_b, bool conv) {
        n.w_master = own(n_w, master);
        n.w_grad = own(n_w, master);
        if (master != n.dtype) n.w_low = own(n_w, n.dtype);
        // cuDNN computes dW in the data's dtype; it is cast into the fp32 gradient.
        if (conv && master != n.dtype) n.w_grad_low = own(n_w, n.dtype);
        add_slot(n.w_master, n.w_grad, n.w_low, opt);
        if (n_b) {
            n.b_master = own(n_b, master);
            n.b_grad = own(n_b, master);
            if (master != n.dtype) n.b_low = own(n_b, n.dtype);
            add_slot(n.b_master, n.b_grad, n.b_low, opt);
        }
    };

    switch (spec.type) {
    case LayerType::Dense:
        n.act = layer.folded_into_loss ? Activation::None : spec.activation;
        n.fused_relu = n.act == Activation::Relu && spec.use_bias;
        weights(std::size_t(n.out_features) * n.in_features, spec.use_bias ? n.out_features : 0,
                false);
        if (n.act != Activation::None && !n.fused_relu)
            n.pre = own(batch * n.out_features, n.dtype);
        break;
    case LayerType::Conv2D: {
        n.act = spec.activation;
        ConvGeometry& g = n.conv;
        g.batch = m_max_batch;
        g.in_h = layer.in.dims[0]; g.in_w = layer.in.dims[1]; g.in_c = layer.in.dims[2];
        g.out_h = layer.out.dims[0]; g.out_w = layer.out.dims[1]; g.out_c = layer.out.dims[2];
        g.kernel_h = spec.kernel_h; g.kernel_w = spec.kernel_w;
        g.stride_h = layer.stride_h; g.stride_w = layer.stride_w;
        g.pad_h = layer.pad_h; g.pad_w = layer.pad_w;
        weights(g.w_count(), spec.use_bias ? std::size_t(g.out_c) : 0, true);
        // Only GELU's backward needs the pre-activation; the others use the output.
        if (n.act == Activation::Gelu) n.pre = own(batch * n.out_features, n.dtype);
        n.plan = m_backend.conv2d_prepare(g, n.dtype, n.math);
        break;
    }
    case LayerType::BatchNorm: {
        const std::size_t c = std::size_t(n.channels);
        n.w_master = own(c, DType::F32);
        n.w_grad = own(c, DType::F32);
        n.b_master = own(c, DType::F32);
        n.b_grad = own(c, DType::F32);
        add_slot(n.w_master, n.w_grad, nullptr, opt);
        add_slot(n.b_master, n.b_grad, nullptr, opt);
        n.running_mean = own(c, DType::F32);
        n.running_var = own(c, DType::F32);
        n.saved_mean = own(c, DType::F32);
        n.saved_inv_std = own(c, DType::F32);
        if (!n.in_grad) n.scratch_dx = own(batch * n.in_features, n.dtype);
        break;
    }
    case LayerType::MaxPool2D:
    case LayerType::AvgPool2D:
    case LayerType::GlobalAvgPool: {
        PoolGeometry& g = n.pool;
        g.batch = m_max_batch;
        g.in_h = layer.in.dims[0]; g.in_w = layer.in.dims[1]; g.channels = layer.in.dims[2];
        if (spec.type == LayerType::GlobalAvgPool) {
            g.out_h = g.out_w = 1;
            g.window_h = g.stride_h = g.in_h;
            g.window_w = g.stride_w = g.in_w;
        } else {
            g.out_h = layer.out.dims[0]; g.out_w = layer.out.dims[1];
            g.window_h = spec.kernel_h; g.window_w = spec.kernel_w;
            g.stride_h = layer.stride_h; g.stride_w = layer.stride_w;
            g.pad_h = layer.pad_h; g.pad_w = layer.pad_w;
        }
        break;
    }
    case LayerType::Activation:
        n.act = spec.activation;
        break;
    default:
        break;
    }

    n.out = own(batch * n.out_features, n.dtype);
    const bool needs_grad = flow.grad != nullptr || has_params(spec.type);
    n.out_grad = needs_grad ? own(batch * n.out_features, n.dtype) : nullptr;
    Flow next{n.out, n.out_grad, n.dtype, layer.out};
    out.push_back(std::move(node));
    return next;
}

Network::Flow Network::build_residual(const GraphLayer& layer, Flow flow, NodeList& out,
                                      const OptimizerConfig& opt)
{
    const DType dtype = layer_dtype(layer.spec, m_traits);
    const std::size_t count = std::size_t(m_max_batch) * std::size_t(layer.out.elements());
    auto node = std::make_unique<Node>();
    Node& n = *node;
    n.layer = layer;
    n.dtype = dtype;
    n.math = layer_math(dtype, m_policy);
    n.act = layer.spec.activation;
    n.in = flow.value;
    n.in_grad = flow.grad;
    n.in_features = int(layer.in.elements());
    n.out_features = int(layer.out.elements());
    n.channels = last_dim(layer.out);

    // The body writes its dX straight into the block's input gradient; the shortcut
    // into its own buffer, added afterwards.
    Flow body = build_sequence(layer.body, flow, n.body, opt);
    body = cast_to(body, dtype, n.body);
    Flow sc_in = flow;
    if (flow.grad && (!layer.shortcut.empty() || flow.dtype != dtype))
        sc_in.grad = n.shortcut_in_grad = own(flow.value->count(), flow.dtype);
    Flow sc = build_sequence(layer.shortcut, sc_in, n.shortcut, opt);
    sc = cast_to(sc, dtype, n.shortcut);
    n.body_value = body.value;
    n.shortcut_value = sc.value;

    n.out = own(count, dtype);
    const bool needs_grad = flow.grad != nullptr || layer.params > 0;
    n.out_grad = needs_grad ? own(count, dtype) : nullptr;

    // Both branches read dS = the block's out_grad (after its activation's backward).
    // Point their last nodes at it instead of giving them buffers of their own, unless
    // a branch overwrites its dY while the other still needs dS.
    auto share = [&](NodeList& list, Buffer** copy, bool must_copy) {
        if (list.empty() || !n.out_grad) return;
        Node& last = *list.back();
        if (last.passthrough)
            throw SpecError(layer.path + " (residual): a branch cannot end with flatten");
        // A nested residual's branches already point at its own out_grad: copy into it.
        if (must_copy || (last.kind == Node::Kind::Layer && last.type() == LayerType::Residual)) {
            *copy = last.out_grad ? last.out_grad : own(count, dtype);
            last.out_grad = *copy;
        } else {
            if (last.out_grad) disown(last.out_grad);
            last.out_grad = n.out_grad;
        }
        // An absorbed relu shares its batch norm's gradient buffer: keep them one.
        if (last.absorbed) list[list.size() - 2]->out_grad = last.out_grad;
    };
    const bool identity = n.shortcut.empty();
    // Backward runs the shortcut first, then the body, then adds: the shortcut must not
    // spoil dS for the body, and with an identity shortcut the body must not spoil it
    // for the add.
    share(n.shortcut, &n.shortcut_grad_copy, !n.shortcut.empty() && overwrites_dy(*n.shortcut.back()));
    share(n.body, &n.body_grad_copy, identity && !n.body.empty() && overwrites_dy(*n.body.back()));
    if (n.body.empty())
        throw SpecError(layer.path + " (residual): \"body\" must hold at least one layer");

    Flow next{n.out, n.out_grad, dtype, layer.out};
    out.push_back(std::move(node));
    return next;
}

void Network::init_parameters(const NodeList& nodes)
{
    // Glorot-uniform weights (Keras's default; for a convolution the fans count the
    // kernel window) and zero biases, from a counter-based generator so every backend
    // and policy starts from the same values. Batch norm: scale 1, shift 0, running
    // mean 0, running variance 1.
    std::vector<float> host;
    for (const auto& np : nodes) {
        const Node& n = *np;
        if (n.kind != Node::Kind::Layer) continue;
        if (n.type() == LayerType::Residual) {
            init_parameters(n.body);
            init_parameters(n.shortcut);
            continue;
        }
        if (n.type() == LayerType::BatchNorm) {
            m_backend.fill(*n.w_master, 1.0f);
            m_backend.fill(*n.b_master, 0.0f);
            m_backend.fill(*n.running_mean, 0.0f);
            m_backend.fill(*n.running_var, 1.0f);
            m_backend.fill(*n.saved_mean, 0.0f);
            m_backend.fill(*n.saved_inv_std, 1.0f);
            continue;
        }
        if (!n.w_master) continue;
        int fan_in = n.in_features, fan_out = n.out_features;
        if (n.type() == LayerType::Conv2D) {
            const int window = n.conv.kernel_h * n.conv.kernel_w;
            fan_in = window * n.conv.in_c;
            fan_out = window * n.conv.out_c;
        }
        const float limit = std::sqrt(6.0f / float(fan_in + fan_out));
        host.resize(n.w_master->count());
        const std::uint64_t stream = 0x5EED0000ull + std::uint64_t(n.layer.id);
        for (std::size_t i = 0; i < host.size(); ++i)
            host[i] = (2.0f * hd::uniform01(m_seed, stream, i) - 1.0f) * limit;
        m_backend.upload_f32(*n.w_master, host.data(), host.size());
        if (n.w_low) m_backend.cast(*n.w_master, *n.w_low);
        if (n.b_master) {
            m_backend.fill(*n.b_master, 0.0f);
            if (n.b_low) m_backend.fill(*n.b_low, 0.0f);
        }
    }
    if (&nodes != &m_nodes) return;
    for (const auto& slot : m_slots) {
        if (slot.state1) m_backend.fill(*slot.state1, 0.0f);
        if (slot.state2) m_backend.fill(*slot.state2, 0.0f);
    }
}

const Buffer& Network::logits() const { return *m_logits; }
Buffer& Network::dlogits() { return *m_dlogits; }

void Network::forward(int batch, bool training, std::uint64_t step)
{
    if (!m_marks) {
        forward_nodes(m_nodes, batch, training, step);
        return;
    }
    for (std::size_t i = 0; i < m_nodes.size(); ++i) {
        m_marks->forward[i]->record();
        forward_node(*m_nodes[i], batch, training, step);
    }
    m_marks->forward[m_nodes.size()]->record();
}

void Network::backward(int batch, std::uint64_t step)
{
    if (!m_marks) {
        backward_nodes(m_nodes, batch, step);
        return;
    }
    const std::size_t n = m_nodes.size();
    for (std::size_t j = 0; j < n; ++j) {
        m_marks->backward[j]->record();
        backward_node(*m_nodes[n - 1 - j], batch, step);
    }
    m_marks->backward[n]->record();
}

void Network::forward_nodes(NodeList& nodes, int batch, bool training, std::uint64_t step)
{
    for (auto& np : nodes) forward_node(*np, batch, training, step);
}

void Network::backward_nodes(NodeList& nodes, int batch, std::uint64_t step)
{
    for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) backward_node(**it, batch, step);
}

void Network::forward_node(Node& n, int batch, bool training, std::uint64_t step)
{
    if (n.passthrough) return;
    if (n.kind == Node::Kind::Cast) {
        m_backend.cast(*n.in, *n.out);
        return;
    }
    const LayerSpec& spec = n.layer.spec;
    switch (spec.type) {
    case LayerType::Dense: {
        GemmCall g;
        g.trans_b = true; // Y (batch x out) = X (batch x in) . W^T, W stored (out x in)
        g.m = batch;
        g.n = n.out_features;
        g.k = n.in_features;
        g.a = n.in;
        g.b = &n.w_read();
        g.c = n.pre ? n.pre : n.out;
        g.bias = n.b_read();
        g.epilogue = !g.bias ? Epilogue::None : (n.fused_relu ? Epilogue::BiasRelu : Epilogue::Bias);
        g.math = n.math;
        m_backend.gemm(g);
        if (n.pre) m_backend.bias_activation(n.act, *n.pre, nullptr, n.out_features, *n.out);
        break;
    }
    case LayerType::Conv2D: {
        ConvGeometry g = n.conv;
        g.batch = batch;
        Buffer& y = n.pre ? *n.pre : *n.out;
        m_backend.conv2d_forward(g, *n.in, n.w_read(), n.math, y);
        if (n.b_master || n.act != Activation::None)
            m_backend.bias_activation(n.act, y, n.b_read(), n.channels, *n.out);
        break;
    }
    case LayerType::BatchNorm: {
        const int rows = batch * (n.in_features / n.channels);
        if (training)
            m_backend.batchnorm_forward_train(n.act, *n.in, rows, n.channels, *n.w_master,
                                              *n.b_master, spec.momentum, spec.epsilon,
                                              *n.running_mean, *n.running_var, *n.saved_mean,
                                              *n.saved_inv_std, *n.out);
        else
            m_backend.batchnorm_forward_eval(n.act, *n.in, rows, n.channels, *n.w_master,
                                             *n.b_master, *n.running_mean, *n.running_var,
                                             spec.epsilon, *n.out);
        break;
    }
    case LayerType::MaxPool2D:
    case LayerType::AvgPool2D:
    case LayerType::GlobalAvgPool: {
        PoolGeometry g = n.pool;
        g.batch = batch;
        m_backend.pool_forward(spec.type == LayerType::MaxPool2D ? PoolMode::Max : PoolMode::Average,
                               g, *n.in, *n.out);
        break;
    }
    case LayerType::Activation:
        if (!n.absorbed) m_backend.bias_activation(n.act, *n.in, nullptr, n.channels, *n.out);
        break;
    case LayerType::Dropout:
        // Evaluation is a plain copy (rate 0 keeps everything, scale 1).
        m_backend.dropout_forward(*n.in, training ? spec.rate : 0.0f,
                                  m_seed ^ hd::mix64(std::uint64_t(n.layer.id)), step,
                                  training ? m_step_counter : StepCounter{}, *n.out);
        break;
    case LayerType::Residual: {
        forward_nodes(n.body, batch, training, step);
        forward_nodes(n.shortcut, batch, training, step);
        m_backend.add_activation(n.act, *n.body_value, *n.shortcut_value, *n.out);
        break;
    }
    case LayerType::Flatten:
        break;
    }
}

void Network::backward_node(Node& n, int batch, std::uint64_t step)
{
    if (n.passthrough || !n.out_grad) return;
    if (n.kind == Node::Kind::Cast) {
        if (n.in_grad) m_backend.cast(*n.out_grad, *n.in_grad);
        return;
    }
    const LayerSpec& spec = n.layer.spec;
    switch (spec.type) {
    case LayerType::Dense: {
        // dZ overwrites dY in place: every activation here is element-wise.
        if (n.act != Activation::None) {
            const Buffer& x = n.pre ? *n.pre : *n.out;
            m_backend.activation_backward(n.act, x, *n.out, *n.out_grad, n.out_features,
                                          *n.out_grad);
        }
        GemmCall dw; // dW (out x in) = dZ^T . X, and dB = column sums of dZ
        dw.trans_a = true;
        dw.m = n.out_features;
        dw.n = n.in_features;
        dw.k = batch;
        dw.a = n.out_grad;
        dw.b = n.in;
        dw.c = n.w_grad;
        dw.epilogue = n.b_grad ? Epilogue::BiasGradA : Epilogue::None;
        dw.bias_grad = n.b_grad;
        dw.math = n.math;
        m_backend.gemm(dw);
        if (n.in_grad) {
            GemmCall dx; // dX (batch x in) = dZ . W
            dx.m = batch;
            dx.n = n.in_features;
            dx.k = n.out_features;
            dx.a = n.out_grad;
            dx.b = &n.w_read();
            dx.c = n.in_grad;
            dx.math = n.math;
            m_backend.gemm(dx);
        }
        break;
    }
    case LayerType::Conv2D: {
        ConvGeometry g = n.conv;
        g.batch = batch;
        if (n.act != Activation::None) {
            const Buffer& x = n.pre ? *n.pre : *n.out;
            m_backend.activation_backward(n.act, x, *n.out, *n.out_grad, n.channels, *n.out_grad);
        }
        if (n.b_grad) m_backend.bias_grad(*n.out_grad, batch * g.out_h * g.out_w, g.out_c, *n.b_grad);
        Buffer& dw = n.w_grad_low ? *n.w_grad_low : *n.w_grad;
        m_backend.conv2d_backward_filter(g, *n.in, *n.out_grad, n.math, dw);
        if (n.w_grad_low) m_backend.cast(*n.w_grad_low, *n.w_grad);
        if (n.in_grad) m_backend.conv2d_backward_data(g, *n.out_grad, n.w_read(), n.math, *n.in_grad);
        break;
    }
    case LayerType::BatchNorm: {
        const int rows = batch * (n.in_features / n.channels);
        // With an absorbed relu, out is the relu's output and out_grad its gradient.
        m_backend.batchnorm_backward(n.act, *n.in, *n.out, *n.out_grad, rows, n.channels,
                                     *n.w_master, *n.saved_mean, *n.saved_inv_std,
                                     n.in_grad ? *n.in_grad : *n.scratch_dx, *n.w_grad, *n.b_grad);
        break;
    }
    case LayerType::MaxPool2D:
    case LayerType::AvgPool2D:
    case LayerType::GlobalAvgPool: {
        if (!n.in_grad) break;
        PoolGeometry g = n.pool;
        g.batch = batch;
        m_backend.pool_backward(spec.type == LayerType::MaxPool2D ? PoolMode::Max : PoolMode::Average,
                                g, *n.in, *n.out, *n.out_grad, *n.in_grad);
        break;
    }
    case LayerType::Activation:
        if (n.in_grad && !n.absorbed)
            m_backend.activation_backward(n.act, *n.in, *n.out, *n.out_grad, n.channels, *n.in_grad);
        break;
    case LayerType::Dropout:
        if (n.in_grad)
            m_backend.dropout_backward(*n.out_grad, spec.rate,
                                       m_seed ^ hd::mix64(std::uint64_t(n.layer.id)), step,
                                       m_step_counter, *n.in_grad);
        break;
    case LayerType::Residual: {
        // dS = d(body + shortcut); relu(out) > 0 exactly where its input was.
        if (n.act != Activation::None)
            m_backend.activation_backward(n.act, *n.out, *n.out, *n.out_grad, n.channels,
                                          *n.out_grad);
        if (n.shortcut_grad_copy) m_backend.cast(*n.out_grad, *n.shortcut_grad_copy);
        if (n.body_grad_copy) m_backend.cast(*n.out_grad, *n.body_grad_copy);
        backward_nodes(n.shortcut, batch, step);
        backward_nodes(n.body, batch, step);
        if (n.in_grad) {
            const Buffer& sc = n.shortcut.empty() ? *n.out_grad : *n.shortcut_in_grad;
            m_backend.add_activation(Activation::None, *n.in_grad, sc, *n.in_grad);
        }
        break;
    }
    case LayerType::Flatten:
        break;
    }
}

std::vector<float> Network::read_parameters()
{
    std::vector<float> out;
    for (const auto& slot : m_slots) {
        const std::size_t at = out.size();
        out.resize(at + slot.master->count());
        m_backend.download_f32(*slot.master, out.data() + at, slot.master->count());
    }
    return out;
}

void Network::write_parameters(const std::vector<float>& values)
{
    std::size_t at = 0;
    for (const auto& slot : m_slots) {
        const std::size_t n = slot.master->count();
        if (at + n > values.size())
            throw Error("write_parameters: " + std::to_string(values.size()) +
                        " values for more parameters than that");
        m_backend.upload_f32(*slot.master, values.data() + at, n);
        if (slot.low) m_backend.cast(*slot.master, *slot.low);
        at += n;
    }
}

std::vector<float> Network::read_gradients()
{
    std::vector<float> out;
    for (const auto& slot : m_slots) {
        const std::size_t at = out.size();
        out.resize(at + slot.grad->count());
        m_backend.download_f32(*slot.grad, out.data() + at, slot.grad->count());
    }
    return out;
}

namespace {

void collect_kernels(const std::vector<std::unique_ptr<Node>>& nodes,
                     std::vector<LayerKernelInfo>& out)
{
    for (const auto& np : nodes) {
        const Node& n = *np;
        if (n.kind != Node::Kind::Layer) continue;
        if (n.type() == LayerType::Residual) {
            collect_kernels(n.body, out);
            collect_kernels(n.shortcut, out);
            continue;
        }
        if (n.type() != LayerType::Dense && n.type() != LayerType::Conv2D) continue;
        LayerKernelInfo k;
        k.path = n.layer.path.empty() ? "layer " + std::to_string(n.layer.index) : n.layer.path;
        k.type = std::string(layer_type_name(n.type()));
        k.dtype = n.dtype;
        k.math = n.math;
        std::ostringstream s;
        if (n.type() == LayerType::Dense) {
            s << n.in_features << "->" << n.out_features;
            k.tensor_cores = n.math != MathMode::Pedantic && n.layer.tensor_core_friendly;
            if (n.math == MathMode::Reduced && !n.layer.tensor_core_friendly)
                s << "; " << n.layer.tensor_core_note;
        } else {
            const ConvGeometry& g = n.conv;
            s << g.kernel_h << "x" << g.kernel_w << " " << g.in_c << "->" << g.out_c;
            if (g.stride_h != 1 || g.stride_w != 1) s << " stride " << g.stride_h;
            s << " on " << g.in_h << "x" << g.in_w;
            k.tensor_cores = n.plan.tensor_cores;
            if (!n.plan.forward_algo.empty())
                s << "; algorithms fwd " << n.plan.forward_algo << ", bwd data "
                  << n.plan.backward_data_algo << ", bwd filter " << n.plan.backward_filter_algo;
            if (n.math == MathMode::Reduced && !n.layer.tensor_core_friendly)
                s << "; " << n.layer.tensor_core_note;
        }
        if (n.w_low) s << "; fp32 master weights";
        k.detail = s.str();
        out.push_back(std::move(k));
    }
}

// One line per relu that runs inside the batch norm before it.
void collect_fused_relus(const std::vector<std::unique_ptr<Node>>& nodes,
                         std::vector<std::string>& out)
{
    for (const auto& np : nodes) {
        const Node& n = *np;
        if (n.kind != Node::Kind::Layer) continue;
        if (n.type() == LayerType::Residual) {
            collect_fused_relus(n.body, out);
            collect_fused_relus(n.shortcut, out);
        } else if (n.absorbed) {
            const std::string path =
                n.layer.path.empty() ? "layer " + std::to_string(n.layer.index) : n.layer.path;
            out.push_back(path + " activation " + std::string(dtype_name(n.dtype)) +
                          ": relu fused into the batch norm before it");
        }
    }
}

} // namespace

std::vector<LayerKernelInfo> Network::kernels() const
{
    std::vector<LayerKernelInfo> kernels;
    collect_kernels(m_nodes, kernels);
    return kernels;
}

namespace {

// Elements a shape holds per sample.
double per_sample(const Shape& s)
{
    return double(s.elements());
}

} // namespace

// Why a GEMM layer did not run on tensor cores, in the order a user would fix it: the
// device has none for this dtype, the policy keeps fp32 math, a dimension is off, or the
// library's fastest algorithm for this shape does not use them.
std::string Network::no_tensor_core_reason(const LayerTime& t, const Node& n, const GraphLayer& L,
                                           const DeviceInfo& dev) const
{
    if (!t.is_gemm || t.tensor_cores) return {};
    if (dev.backend != BackendKind::Cuda) return "the CPU backend has no tensor cores";
    if (n.dtype == DType::F32 && n.math == MathMode::Pedantic)
        return "fp32 math (TF32 off under this policy)";
    if (n.dtype == DType::F32 && n.math == MathMode::TF32 && !dev.tf32)
        return "this GPU has no TF32 tensor cores (8.0+)";
    if (n.dtype == DType::BF16 && !dev.bf16) return "this GPU has no bf16 tensor cores (8.0+)";
    if (n.dtype == DType::F16 && !dev.tensor_cores) return "this GPU has no tensor cores (7.0+)";
    if (!L.tensor_core_note.empty()) return L.tensor_core_note;
    return "the fastest algorithm found for this shape does not use them";
}

// FLOPs are the graph's counts (forward per sample; backward twice that where both the
// data and the weight gradient are computed, once where only one is). Bytes are an
// estimate of the compulsory traffic: forward reads the input and weights and writes the
// output; backward reads the output gradient, the saved input/output and the weights,
// writes the input gradient and the fp32 weight gradient. Caches and re-reads inside a
// kernel are not counted, so achieved GB/s may exceed what the estimate says.
std::vector<LayerTime> Network::top_level_layers(int batch) const
{
    const std::vector<LayerKernelInfo> ks = kernels();
    const DeviceInfo dev = m_backend.info();
    std::vector<LayerTime> out;
    for (std::size_t i = 0; i < m_nodes.size(); ++i) {
        const Node& n = *m_nodes[i];
        LayerTime t;
        if (n.kind == Node::Kind::Cast) {
            const std::string next =
                i + 1 < m_nodes.size() && m_nodes[i + 1]->kind == Node::Kind::Layer
                    ? m_nodes[i + 1]->layer.path
                    : std::string("the loss");
            t.path = "cast before " + next;
            t.type = "cast";
            const double elems = double(n.out->count()) * batch / std::max(m_max_batch, 1);
            t.bytes = elems * double(dtype_size(n.in->dtype()) + dtype_size(n.out->dtype())) *
                      (n.in_grad ? 2.0 : 1.0);
            out.push_back(t);
            continue;
        }
        const GraphLayer& L = n.layer;
        t.path = L.path;
        t.type = std::string(layer_type_name(L.spec.type));
        t.is_gemm = L.is_gemm || L.spec.type == LayerType::Residual;
        const double fwd = double(L.flops) * batch;
        const bool needs_dx = n.in_grad != nullptr;
        t.flops = fwd + (L.is_gemm ? fwd * (needs_dx ? 2.0 : 1.0) : fwd);
        const double es = double(dtype_size(n.dtype));
        const double act = (per_sample(L.in) + per_sample(L.out)) * batch * es;
        const double weights = double(L.params) * (es + 4.0); // read low, write fp32 grad
        t.bytes = act + double(L.params) * es + 2.0 * act + weights;
        bool any = false, all_tc = true;
        for (const LayerKernelInfo& k : ks)
            if (k.path == L.path || k.path.rfind(L.path + " >", 0) == 0) {
                any = true;
                all_tc = all_tc && k.tensor_cores;
            }
        t.tensor_cores = any && all_tc && dev.backend == BackendKind::Cuda;
        t.tensor_core_note = no_tensor_core_reason(t, n, L, dev);
        if (n.passthrough || n.absorbed) t.bytes = 0; // shares its input's (or BN's) buffers
        out.push_back(t);
    }
    return out;
}

std::vector<std::string> Network::describe() const
{
    std::vector<std::string> lines;
    for (const auto& k : kernels()) {
        std::ostringstream s;
        s << k.path << " " << k.type << " " << dtype_name(k.dtype)
          << (k.type == "conv2d" ? " conv" : " GEMM");
        switch (k.math) {
        case MathMode::Pedantic: s << ", fp32 math (no tensor cores)"; break;
        case MathMode::TF32: s << ", TF32 math"; break;
        case MathMode::Reduced: s << ", fp32 accumulate"; break;
        }
        if (k.math != MathMode::Pedantic)
            s << (k.tensor_cores ? ", tensor cores" : ", no tensor cores");
        s << ": " << k.detail;
        lines.push_back(s.str());
    }
    collect_fused_relus(m_nodes, lines);
    return lines;
}

} // namespace mixlab
