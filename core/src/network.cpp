// Network: static allocation of every tensor a step needs, then forward and backward
// as backend operations. Layers whose dtype differs from their input's get a cast
// buffer (the per-layer "dtype": "float32" override and the boundaries it creates).
#include "network.h"

#include "hd_math.h"
#include "mixlab/error.h"

#include <cmath>
#include <sstream>

namespace mixlab {

struct Network::Node {
    GraphLayer layer;
    DType dtype = DType::F32;
    MathMode math = MathMode::Pedantic;
    Activation act = Activation::None; // after folding into the loss
    bool fused_relu = false;           // dense + bias + relu in one GEMM epilogue
    bool passthrough = false;          // flatten: shares its input's buffers
    int in_features = 0, out_features = 0;

    Buffer* cast_src = nullptr;       // previous output, cast into `in` before the layer
    Buffer* cast_src_grad = nullptr;  // where the cast's gradient goes back to
    Buffer* in = nullptr;
    Buffer* in_grad = nullptr;        // null when nothing before needs a gradient
    Buffer* pre = nullptr;            // dense pre-activation when the activation is separate
    Buffer* out = nullptr;
    Buffer* out_grad = nullptr;

    // dense parameters
    Buffer* w_master = nullptr; Buffer* w_low = nullptr; Buffer* w_grad = nullptr;
    Buffer* b_master = nullptr; Buffer* b_low = nullptr; Buffer* b_grad = nullptr;

    const Buffer& w_read() const { return w_low ? *w_low : *w_master; }
    const Buffer* b_read() const { return b_low ? b_low : b_master; }
};

namespace {

DType layer_dtype(const LayerSpec& spec, const PolicyTraits& traits)
{
    return spec.force_fp32 ? DType::F32 : traits.compute;
}

MathMode layer_math(DType dtype, Policy policy)
{
    if (dtype != DType::F32) return MathMode::Reduced;
    return policy == Policy::TF32 ? MathMode::TF32 : MathMode::Pedantic;
}

} // namespace

Network::Network(const Graph& graph, Policy policy, const OptimizerConfig& opt, Backend& backend,
                 int max_batch, std::uint64_t seed)
    : m_backend(backend), m_policy(policy), m_traits(policy_traits(policy)), m_seed(seed),
      m_graph(graph)
{
    build(graph, opt, max_batch);
    init_parameters(graph);
    m_param_table = m_backend.prepare_params(m_slots);
}

Network::~Network() = default;

Buffer Network::make(std::size_t count, DType dtype)
{
    m_device_bytes += std::int64_t(count * dtype_size(dtype));
    return m_backend.alloc(count, dtype);
}

void Network::build(const Graph& graph, const OptimizerConfig& opt, int max_batch)
{
    auto own = [this](std::size_t count, DType dtype) {
        m_owned.push_back(std::make_unique<Buffer>(make(count, dtype)));
        return m_owned.back().get();
    };
    const std::size_t batch = std::size_t(max_batch);

    // The input takes the dtype of the first layer that has one of its own.
    DType input_dtype = m_traits.compute;
    for (const auto& l : graph.layers) {
        if (l.spec.type == LayerType::Dense || l.spec.type == LayerType::Activation) {
            input_dtype = layer_dtype(l.spec, m_traits);
            break;
        }
    }
    const int input_features = int(graph.input.elements());
    m_input = own(batch * input_features, input_dtype);
    m_labels = make(batch, DType::I32);

    Buffer* cur = m_input;
    Buffer* cur_grad = nullptr; // no gradient flows into the input
    DType cur_dtype = input_dtype;
    int features = input_features;

    for (const auto& layer : graph.layers) {
        const LayerSpec& spec = layer.spec;
        if (spec.type == LayerType::Activation && layer.folded_into_loss) continue;

        auto node = std::make_unique<Node>();
        node->layer = layer;
        node->in_features = features;
        if (spec.type == LayerType::Flatten) {
            node->passthrough = true;
            node->dtype = cur_dtype;
            node->in = node->out = cur;
            node->in_grad = node->out_grad = cur_grad;
            node->out_features = features;
            m_nodes.push_back(std::move(node));
            continue;
        }

        const bool own_dtype = spec.type != LayerType::Dropout;
        node->dtype = own_dtype ? layer_dtype(spec, m_traits) : cur_dtype;
        node->math = layer_math(node->dtype, m_policy);
        node->in = cur;
        node->in_grad = cur_grad;
        if (node->dtype != cur_dtype) {
            node->cast_src = cur;
            node->cast_src_grad = cur_grad;
            node->in = own(batch * features, node->dtype);
            node->in_grad = cur_grad ? own(batch * features, node->dtype) : nullptr;
        }

        int out_features = features;
        if (spec.type == LayerType::Dense) {
            out_features = spec.units;
            node->act = layer.folded_into_loss ? Activation::None : spec.activation;
            node->fused_relu = node->act == Activation::Relu && spec.use_bias;
            const DType master = (m_traits.master_weights || node->dtype == DType::F32)
                                     ? DType::F32 : node->dtype;
            const std::size_t n_w = std::size_t(out_features) * features;
            node->w_master = own(n_w, master);
            node->w_grad = own(n_w, master);
            if (master != node->dtype) node->w_low = own(n_w, node->dtype);
            if (spec.use_bias) {
                node->b_master = own(out_features, master);
                node->b_grad = own(out_features, master);
                if (master != node->dtype) node->b_low = own(out_features, node->dtype);
            }
            auto add_slot = [&](Buffer* m, Buffer* g, Buffer* low) {
                ParamSlot slot{m, g, low, nullptr, nullptr};
                const bool sgd = opt.type == OptimizerType::SGD;
                if (!sgd || opt.momentum != 0.0f) slot.state1 = own(m->count(), master);
                if (!sgd) slot.state2 = own(m->count(), master);
                m_slots.push_back(slot);
            };
            add_slot(node->w_master, node->w_grad, node->w_low);
            if (spec.use_bias) add_slot(node->b_master, node->b_grad, node->b_low);
            if (node->act != Activation::None && !node->fused_relu)
                node->pre = own(batch * out_features, node->dtype);
        } else if (spec.type == LayerType::Activation) {
            node->act = spec.activation;
        }
        node->out_features = out_features;
        node->out = own(batch * out_features, node->dtype);
        // Every layer from the first trainable one on passes a gradient back.
        const bool trainable_so_far = cur_grad != nullptr || spec.type == LayerType::Dense;
        node->out_grad = trainable_so_far ? own(batch * out_features, node->dtype) : nullptr;

        cur = node->out;
        cur_grad = node->out_grad;
        cur_dtype = node->dtype;
        features = out_features;
        m_nodes.push_back(std::move(node));
    }
    if (m_nodes.empty() || m_nodes.back()->out_grad == nullptr) {
        // The loss always writes a gradient, even for a model without parameters.
        Node& last = *m_nodes.back();
        last.out_grad = own(batch * last.out_features, last.dtype);
    }
}

void Network::init_parameters(const Graph& graph)
{
    (void)graph;
    // Glorot-uniform weights (Keras's default) and zero biases, from a counter-based
    // generator so every backend and policy starts from the same values.
    std::vector<float> host;
    for (const auto& node : m_nodes) {
        if (!node->w_master) continue;
        const int fan_in = node->in_features, fan_out = node->out_features;
        const float limit = std::sqrt(6.0f / float(fan_in + fan_out));
        host.resize(node->w_master->count());
        const std::uint64_t stream = 0x5EED0000ull + std::uint64_t(node->layer.index);
        for (std::size_t i = 0; i < host.size(); ++i)
            host[i] = (2.0f * hd::uniform01(m_seed, stream, i) - 1.0f) * limit;
        m_backend.upload_f32(*node->w_master, host.data(), host.size());
        if (node->w_low) m_backend.cast(*node->w_master, *node->w_low);
        if (node->b_master) {
            m_backend.fill(*node->b_master, 0.0f);
            if (node->b_low) m_backend.fill(*node->b_low, 0.0f);
        }
    }
    for (const auto& slot : m_slots) {
        if (slot.state1) m_backend.fill(*slot.state1, 0.0f);
        if (slot.state2) m_backend.fill(*slot.state2, 0.0f);
    }
}

const Buffer& Network::logits() const { return *m_nodes.back()->out; }
Buffer& Network::dlogits() { return *m_nodes.back()->out_grad; }

void Network::forward(int batch, bool training, std::uint64_t step)
{
    for (const auto& np : m_nodes) {
        Node& n = *np;
        if (n.passthrough) continue;
        if (n.cast_src) m_backend.cast(*n.cast_src, *n.in);
        switch (n.layer.spec.type) {
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
            g.epilogue = !g.bias ? Epilogue::None
                                 : (n.fused_relu ? Epilogue::BiasRelu : Epilogue::Bias);
            g.math = n.math;
            m_backend.gemm(g);
            if (n.pre) m_backend.bias_activation(n.act, *n.pre, nullptr, n.out_features, *n.out);
            break;
        }
        case LayerType::Activation:
            m_backend.bias_activation(n.act, *n.in, nullptr, n.out_features, *n.out);
            break;
        case LayerType::Dropout:
            // Evaluation is a plain copy (rate 0 keeps everything, scale 1).
            m_backend.dropout_forward(*n.in, training ? n.layer.spec.rate : 0.0f,
                                      m_seed ^ hd::mix64(std::uint64_t(n.layer.index)), step,
                                      *n.out);
            break;
        case LayerType::Flatten:
            break;
        }
    }
}

void Network::backward(int batch, std::uint64_t step)
{
    for (auto it = m_nodes.rbegin(); it != m_nodes.rend(); ++it) {
        Node& n = **it;
        if (n.passthrough || !n.out_grad) continue;
        switch (n.layer.spec.type) {
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
        case LayerType::Activation:
            if (n.in_grad)
                m_backend.activation_backward(n.act, *n.in, *n.out, *n.out_grad, n.out_features,
                                              *n.in_grad);
            break;
        case LayerType::Dropout:
            if (n.in_grad)
                m_backend.dropout_backward(*n.out_grad, n.layer.spec.rate,
                                           m_seed ^ hd::mix64(std::uint64_t(n.layer.index)), step,
                                           *n.in_grad);
            break;
        case LayerType::Flatten:
            break;
        }
        if (n.cast_src && n.cast_src_grad && n.in_grad) m_backend.cast(*n.in_grad, *n.cast_src_grad);
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

std::vector<std::string> Network::describe() const
{
    std::vector<std::string> lines;
    for (const auto& np : m_nodes) {
        const Node& n = *np;
        if (n.layer.spec.type != LayerType::Dense) continue;
        std::ostringstream s;
        s << "layer " << n.layer.index << " dense " << n.in_features << "->" << n.out_features
          << ": " << dtype_name(n.dtype) << " GEMM";
        switch (n.math) {
        case MathMode::Pedantic: s << ", fp32 math (no tensor cores)"; break;
        case MathMode::TF32: s << ", TF32 tensor-core math"; break;
        case MathMode::Reduced:
            s << ", fp32 accumulate"
              << (n.layer.tensor_core_friendly ? ", tensor-core friendly"
                                               : ", " + n.layer.tensor_core_note);
            break;
        }
        if (n.w_low) s << "; fp32 master weights";
        if (n.cast_src) s << "; input cast to " << dtype_name(n.dtype);
        lines.push_back(s.str());
    }
    return lines;
}

} // namespace mixlab
