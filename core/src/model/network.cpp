// Network: static allocation of every tensor a step needs, then forward and backward as
// the nodes' backend operations. Layers form a tree (residual blocks hold a body and a
// shortcut sequence); what each layer type allocates and runs is its unit's
// (model/layers/<type>.cpp). The network wires the nodes: each reads the flow's buffer and
// gradient; dtype boundaries (the per-layer "dtype": "float32" override) become cast
// nodes; a relu after a batch norm runs inside it; a block's branches share its gradient.
#include "model/network.h"

#include "model/master_io.h"

#include "base/hd_math.h"
#include "mixlab/error.h"
#include "model/layers/registry.h"
#include "model/layers/shared_table.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <sstream>

namespace mixlab {

namespace {

// y = x in another dtype; backward casts the gradient back.
class CastNode final : public Node {
public:
    void forward(const PassContext& c, int, bool, std::uint64_t) override
    {
        c.backend.cast(*in, *out);
    }
    void backward(const PassContext& c, int, std::uint64_t) override
    {
        if (in_grad) c.backend.cast(*out_grad, *in_grad);
    }
};

// The dtype of the first layer, in execution order, that chooses one.
bool first_own_dtype(const std::vector<GraphLayer>& layers, const PolicyTraits& traits, DType& out)
{
    for (const auto& l : layers) {
        if (layer_unit(l.spec.type).picks_dtype()) { // a residual block decides for its branches
            out = l.spec.force_fp32 ? DType::F32 : traits.compute;
            return true;
        }
    }
    return false;
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
    return prev.takes_relu() && prev.act == Activation::None && prev.out == value;
}

// MIXLAB_FP8_QUANTIZE_PASS=1: an fp8 layer's input is quantized by its own x pass from
// the 16-bit output before it, never written in E4M3 by that layer's GEMM (Fp8Output):
// A/B timing, and the test that both ways train alike.
bool fp8_output_enabled()
{
    const char* v = std::getenv("MIXLAB_FP8_QUANTIZE_PASS");
    return !v || !*v || std::strcmp(v, "0") == 0;
}

// Nodes that run a pass reading `value` as their input, at any depth (a block and the
// first node of its body both read the block's input: the shortcut is the block's).
int readers_of(const NodeList& nodes, const Buffer* value)
{
    int n = 0;
    for (const auto& node : nodes) {
        if (node->in == value && !node->passthrough && !node->absorbed) ++n;
        for (const NodeList* branch : node->branches()) n += readers_of(*branch, value);
    }
    return n;
}

} // namespace

// What the nodes ask of the network while they are built: buffers, parameter slots, the
// policy's dtypes, and the usual ways into the flow.
class Network::Builder final : public NodeBuilder {
public:
    // `max_batch` rows per buffer (batch x steps in a sequence graph).
    Builder(Network& net, Policy policy, const OptimizerConfig& opt, int max_batch, int steps)
        : m_net(net), m_policy(policy), m_traits(policy_traits(policy)), m_opt(opt),
          m_max_batch(max_batch), m_steps(steps)
    {}

    const PolicyTraits& traits() const { return m_traits; }

    Backend& backend() override { return m_net.m_backend; }
    int max_batch() const override { return m_max_batch; }
    int time_steps() const override { return m_steps; }
    void publish_table(SharedTable* table) override { m_table = table; }
    SharedTable* shared_table() const override { return m_table; }

    Buffer* own(std::size_t count, DType dtype) override
    {
        m_net.m_owned.push_back(std::make_unique<Buffer>(m_net.m_backend.alloc(count, dtype)));
        m_net.m_device_bytes += std::int64_t(count * dtype_size(dtype));
        return m_net.m_owned.back().get();
    }

    void disown(Buffer* b) override
    {
        auto& owned = m_net.m_owned;
        for (auto it = owned.begin(); it != owned.end(); ++it) {
            if (it->get() != b) continue;
            m_net.m_device_bytes -= std::int64_t(b->count() * dtype_size(b->dtype()));
            owned.erase(it);
            return;
        }
    }

    void add_param(Buffer* master, Buffer* grad, Buffer* low, PaddedLayout layout) override
    {
        ParamSlot slot{master, grad, low, nullptr, nullptr};
        const bool sgd = m_opt.type == OptimizerType::SGD;
        if (!sgd || m_opt.momentum != 0.0f) slot.state1 = own(master->count(), state_dtype(slot));
        if (!sgd) slot.state2 = own(master->count(), state_dtype(slot));
        m_net.m_slots.push_back(slot);
        m_net.m_layouts.push_back(std::move(layout));
        m_net.m_slot_layers.push_back(m_building);
    }

    DType master_dtype(DType dtype) const override
    {
        // Split masters hold their low halves (the copy, bf16, the high ones); a layer kept
        // in float32 has no copy and keeps a plain fp32 master.
        if (m_traits.master_weights && dtype == DType::BF16 &&
            m_opt.master_weights == MasterWeights::Bf16Split)
            return DType::I16;
        return (m_traits.master_weights || dtype == DType::F32) ? DType::F32 : dtype;
    }

    DType layer_dtype(const LayerSpec& spec) const override
    {
        return spec.force_fp32 ? DType::F32 : m_traits.compute;
    }

    const Fp8Config* fp8() const override
    {
        return m_policy == Policy::MixedFP8 ? &m_net.m_fp8 : nullptr;
    }

    std::size_t fp8_block(DType format, std::string name) override
    {
        m_net.m_fp8_names.push_back(std::move(name));
        m_net.m_fp8_formats.push_back(format);
        return m_net.m_fp8_names.size() - 1;
    }

    Buffer& fp8_meta() override { return m_net.m_fp8_meta; }

    ReluMask* request_relu_mask(const Node* owner, int rows, int cols) override
    {
        auto m = std::make_unique<ReluMask>();
        m->owner = owner;
        m->rows = rows;
        m->cols = cols;
        m_net.m_relu_masks.push_back(std::move(m));
        return m_net.m_relu_masks.back().get();
    }

    ReluMask* claim_relu_mask(const Buffer* value, int cols) override
    {
        for (auto& m : m_net.m_relu_masks) {
            if (m->owner->out != value || m->cols != cols) continue;
            if (!m->bits)
                m->bits =
                    own(std::size_t(m->rows) * std::size_t(relu_mask_words(cols)), DType::I32);
            return m.get();
        }
        return nullptr;
    }

    Fp8Output* offer_fp8_output(const Node* owner, int cols) override
    {
        auto o = std::make_unique<Fp8Output>();
        o->owner = owner;
        o->cols = cols;
        m_net.m_fp8_outputs.push_back(std::move(o));
        return m_net.m_fp8_outputs.back().get();
    }

    Fp8Output* take_fp8_output(const Buffer* value, int cols, Buffer* x8,
                               std::size_t block) override
    {
        if (!fp8_output_enabled()) return nullptr;
        for (auto& o : m_net.m_fp8_outputs) {
            if (o->owner->out != value || o->cols != cols || o->taken) continue;
            o->x8 = x8;
            o->block = block;
            o->taken = true;
            return o.get();
        }
        return nullptr;
    }

    void quantized_weights(const Buffer* master, const Fp8Weights& fp8) override
    {
        for (ParamSlot& s : m_net.m_slots)
            if (s.master == master) {
                s.fp8 = fp8;
                return;
            }
        throw Error("quantized_weights: no parameter slot holds those weights");
    }

    MathMode layer_math(DType dtype) const override
    {
        if (dtype != DType::F32) return MathMode::Reduced;
        return m_policy == Policy::TF32 ? MathMode::TF32 : MathMode::Pedantic;
    }

    void init_node(Node& n, const GraphLayer& layer, const Flow& flow, DType dtype) const override
    {
        n.layer = &layer;
        m_building = &layer;
        n.dtype = dtype;
        n.math = layer_math(dtype);
        n.in = flow.value;
        n.in_grad = flow.grad;
        n.in_features = flow.width ? flow.width : int(layer.in.elements());
        n.out_features = int(layer.out.elements());
        n.channels = last_dim(layer.out);
        if (layer.stored_width) { // build_graph's mark_padded_outputs
            n.out_features = n.channels = int(layer.stored_width);
        } else if (flow.width && layer_unit(layer.spec.type).keeps_padding(layer.spec)) {
            n.out_features = n.channels = flow.width; // dropout, relu ... on a padded row
        }
    }

    Flow build_sequence(const std::vector<GraphLayer>& layers, Flow flow, NodeList& out) override
    {
        for (const auto& layer : layers)
            flow = layer_unit(layer.spec.type).build(layer, flow, *this, out);
        return flow;
    }

    Flow cast_to(Flow flow, DType dtype, NodeList& out) override
    {
        if (flow.dtype == dtype) return flow;
        auto node = std::make_unique<CastNode>();
        node->dtype = dtype;
        node->in = flow.value;
        node->in_grad = flow.grad;
        node->out = own(flow.value->count(), dtype);
        node->out_grad = flow.grad ? own(flow.value->count(), dtype) : nullptr;
        Flow next{node->out, node->out_grad, dtype, flow.shape, flow.width};
        out.push_back(std::move(node));
        return next;
    }

    Flow add_layer(const LayerUnit& unit, const GraphLayer& layer, Flow flow,
                   NodeList& out) override
    {
        if (unit.picks_dtype()) flow = cast_to(flow, layer_dtype(layer.spec), out);

        // A relu straight after a batch norm runs inside it, forward and backward (one pass
        // over the activations each way instead of two). Its node stays, as a no-op sharing
        // the batch norm's output and output gradient.
        if (unit.absorbable(layer.spec) && !out.empty() &&
            can_absorb_relu(*out.back(), flow.value) && bn_relu_fusion_enabled()) {
            out.back()->act = Activation::Relu;
            auto node = unit.make_node();
            node->layer = &layer;
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

        auto node = unit.make_node();
        Node& n = *node;
        init_node(n, layer, flow, flow.dtype);
        n.allocate(*this);
        const std::size_t count = std::size_t(m_max_batch) * std::size_t(n.out_features);
        n.out = own(count, n.dtype);
        const bool needs_grad = flow.grad != nullptr || layer.params > 0;
        n.out_grad = needs_grad ? own(count, n.dtype) : nullptr;
        Flow next{n.out, n.out_grad, n.dtype, layer.out, padded_width(n, layer)};
        out.push_back(std::move(node));
        return next;
    }

    void share_out_grad(NodeList& branch, const GraphLayer& block, Buffer* grad, Buffer** copy,
                        bool must_copy) override
    {
        if (branch.empty()) return;
        Node& last = *branch.back();
        if (last.passthrough)
            throw SpecError(block.path + " (residual): a branch cannot end with flatten");
        // A nested block's branches already point at its own out_grad: copy into it.
        if (must_copy || !last.branches().empty()) {
            *copy = last.out_grad ? last.out_grad : own(grad->count(), grad->dtype());
            last.out_grad = *copy;
        } else {
            if (last.out_grad) disown(last.out_grad);
            last.out_grad = grad;
        }
        // An absorbed relu shares its batch norm's gradient buffer: keep them one.
        if (last.absorbed) branch[branch.size() - 2]->out_grad = last.out_grad;
    }

private:
    // The layer whose node is being built: init_node names it before the node's allocate()
    // adds its parameters (numerics_layers groups parameters by layer).
    mutable const GraphLayer* m_building = nullptr;
    Network& m_net;
    Policy m_policy;
    PolicyTraits m_traits;
    const OptimizerConfig& m_opt;
    int m_max_batch;
    int m_steps;
    SharedTable* m_table = nullptr;
};

Network::Network(const Graph& graph, Policy policy, const OptimizerConfig& opt, Backend& backend,
                 int max_batch, std::uint64_t seed)
    : Network(graph, policy, opt, backend, max_batch, 1, seed)
{}

Network::Network(const Graph& graph, Policy policy, const OptimizerConfig& opt, Backend& backend,
                 int max_batch, int time_steps, std::uint64_t seed, const Fp8Config& fp8)
    : m_backend(backend), m_seed(seed), m_max_batch(max_batch), m_graph(graph), m_fp8(fp8)
{
    if (time_steps < 1)
        throw InputError("time steps per pass must be at least 1, got " +
                         std::to_string(time_steps));
    m_steps = m_graph.input.sequence ? time_steps : 1;
    const int max_rows = rows(max_batch);
    Builder b(*this, policy, opt, max_rows, m_steps);
    // Token ids are indices: int32 whatever the policy.
    DType input_dtype = b.traits().compute;
    if (m_graph.input.is_tokens())
        input_dtype = DType::I32;
    else
        first_own_dtype(m_graph.layers, b.traits(), input_dtype);
    const std::size_t input_count = std::size_t(max_rows) * std::size_t(m_graph.input.elements());
    m_input = b.own(input_count, input_dtype);
    m_labels = m_backend.alloc(std::size_t(max_rows), DType::I32);
    m_device_bytes += std::int64_t(max_rows) * 4;

    Flow flow{m_input, nullptr, input_dtype, m_graph.input};
    flow = b.build_sequence(m_graph.layers, flow, m_nodes);
    if (m_nodes.empty()) throw SpecError("the model has no layers that compute anything");
    m_logits = flow.value;
    // The loss always writes a gradient, even for a model without parameters.
    m_dlogits = flow.grad ? flow.grad : b.own(flow.value->count(), flow.dtype);
    if (!flow.grad) m_nodes.back()->out_grad = m_dlogits;
    if (!m_fp8_names.empty()) {
        const std::size_t floats = m_fp8_names.size() * fp8_block_floats(m_fp8.amax_history);
        m_fp8_meta = m_backend.alloc(floats, DType::F32);
        m_device_bytes += std::int64_t(floats * sizeof(float));
        reset_fp8_meta();
    }

    init_parameters();
    reset_state();
    m_param_table = m_backend.prepare_params(m_slots);
    refresh_fp8_weights();
    m_fp8_batch_node = find_fp8_batch_node();
    if (m_fp8_batch_node) m_fp8_batch_node->input_gathered_fp8 = true;
    withdraw_shared_fp8_outputs();
}

void Network::withdraw_shared_fp8_outputs()
{
    for (auto& o : m_fp8_outputs)
        if (o->taken && readers_of(m_nodes, o->owner->out) != 1) o->taken = false;
}

Network::~Network() = default;

void Network::reset_fp8_meta()
{
    if (m_fp8_names.empty()) return;
    const std::size_t stride = fp8_block_floats(m_fp8.amax_history);
    std::vector<float> meta(m_fp8_names.size() * stride, 0.0f);
    for (std::size_t t = 0; t < m_fp8_names.size(); ++t) {
        float* m = meta.data() + t * stride;
        m[k_fp8_scale] = 1.0f;
        m[k_fp8_scale_inv] = 1.0f;
        m[k_fp8_max_finite] =
            m_fp8_formats[t] == DType::F8E5M2 ? hd::k_e5m2.max_finite : hd::k_e4m3.max_finite;
    }
    m_backend.upload_f32(m_fp8_meta, meta.data(), meta.size());
}

void Network::refresh_fp8_weights(std::optional<std::size_t> only)
{
    const std::size_t stride = fp8_block_floats(m_fp8.amax_history);
    for (std::size_t i = 0; i < m_slots.size(); ++i) {
        const ParamSlot& s = m_slots[i];
        const Fp8Weights& f = s.fp8;
        if (!f.w8 || (only && *only != i)) continue;
        // W's block holds W's amax alone, and its current slot stands for the weights the
        // next step reads: taken again, not folded with those the host just replaced.
        const float zero = 0.0f;
        m_backend.upload_f32(*f.meta, &zero, 1, f.block * stride + k_fp8_history);
        m_backend.fp8_quantize(*s.low, f.rows, f.cols, *f.meta, f.block, f.history_len, true, f.w8,
                               nullptr, nullptr, nullptr);
    }
}

void Network::init_parameters()
{
    for (const auto& n : m_nodes) n->init_parameters(m_backend, m_seed);
    for (const auto& slot : m_slots) {
        if (slot.state1) m_backend.fill(*slot.state1, 0.0f);
        if (slot.state2) m_backend.fill(*slot.state2, 0.0f);
    }
}

namespace {

void reset_nodes(const NodeList& nodes, Backend& backend)
{
    for (const auto& n : nodes) {
        n->reset_state(backend);
        for (const NodeList* branch : n->branches()) reset_nodes(*branch, backend);
    }
}

} // namespace

void Network::reset_state() { reset_nodes(m_nodes, m_backend); }

const Buffer& Network::logits() const { return *m_logits; }
Buffer& Network::dlogits() { return *m_dlogits; }

void Network::forward(int samples, bool training, std::uint64_t step, bool input_quantized,
                      bool outputs_read)
{
    const int batch = rows(samples); // what the nodes see: one row per sample or per token
    const PassContext c{m_backend, m_seed, m_step_counter, input_quantized ? m_input : nullptr,
                        outputs_read};
    if (!m_marks) {
        forward_nodes(m_nodes, c, batch, training, step);
        return;
    }
    for (std::size_t i = 0; i < m_nodes.size(); ++i) {
        m_marks->forward[i]->record();
        m_nodes[i]->run_forward(c, batch, training, step);
    }
    m_marks->forward[m_nodes.size()]->record();
}

Node* Network::find_fp8_batch_node() const
{
    if (m_graph.input.is_tokens() || m_graph.input.sequence) return nullptr;
    for (const auto& n : m_nodes) {
        if (n->passthrough) continue;
        Fp8Batch b;
        // Reading the input as the gather lays it out: one row of the sample's values.
        const bool reads_batch = n->in == m_input && n->in_features == m_graph.input.elements();
        return reads_batch && n->fp8_batch(b, true) ? n.get() : nullptr;
    }
    return nullptr;
}

std::optional<Fp8Batch> Network::fp8_batch(bool training) const
{
    Fp8Batch b;
    if (m_fp8_batch_node && m_fp8_batch_node->fp8_batch(b, training)) return b;
    return std::nullopt;
}

void Network::backward(int samples, std::uint64_t step)
{
    const int batch = rows(samples);
    const PassContext c{m_backend, m_seed, m_step_counter};
    if (!m_marks) {
        backward_nodes(m_nodes, c, batch, step);
        return;
    }
    const std::size_t n = m_nodes.size();
    for (std::size_t j = 0; j < n; ++j) {
        m_marks->backward[j]->record();
        m_nodes[n - 1 - j]->run_backward(c, batch, step);
    }
    m_marks->backward[n]->record();
}

// Every slot's `which` buffer (master or grad) as the model defines it, in slot order.
std::vector<float> Network::read_slots(Buffer* ParamSlot::*which)
{
    std::vector<float> out;
    for (std::size_t i = 0; i < m_slots.size(); ++i) {
        const ParamSlot& slot = m_slots[i];
        const Buffer& b = *(slot.*which);
        std::vector<float> stored(b.count());
        if (which == &ParamSlot::master)
            stored = download_master(m_backend, b, slot.low);
        else
            m_backend.download_f32(b, stored.data(), stored.size());
        if (!m_layouts[i].empty()) stored = unpad(m_layouts[i], stored);
        out.insert(out.end(), stored.begin(), stored.end());
    }
    return out;
}

std::vector<float> Network::read_parameters() { return read_slots(&ParamSlot::master); }

std::size_t Network::slot_size(std::size_t i) const
{
    const PaddedLayout& layout = m_layouts.at(i);
    return layout.empty() ? m_slots[i].master->count() : logical_count(layout);
}

std::vector<float> Network::read_slot(std::size_t i)
{
    const ParamSlot& slot = m_slots.at(i);
    std::vector<float> stored = download_master(m_backend, *slot.master, slot.low);
    return m_layouts[i].empty() ? stored : unpad(m_layouts[i], stored);
}

void Network::write_slot(std::size_t i, const std::vector<float>& values)
{
    const ParamSlot& slot = m_slots.at(i);
    const PaddedLayout& layout = m_layouts[i];
    const std::size_t n = slot_size(i);
    if (values.size() != n)
        throw Error("write_slot: " + std::to_string(values.size()) + " values for a tensor of " +
                    std::to_string(n));
    const std::vector<float> stored = layout.empty() ? values : pad(layout, values);
    upload_master(m_backend, *slot.master, slot.low, stored.data(), stored.size());
    refresh_fp8_weights(i);
}

namespace {

void collect_state(const NodeList& nodes, std::vector<Network::StateTensor>& out)
{
    for (const auto& n : nodes) {
        std::vector<Node::StateBuffer> own;
        n->state_buffers(own);
        for (auto& b : own) out.push_back({n->layer, std::move(b.name), b.buffer});
        for (const NodeList* branch : n->branches()) collect_state(*branch, out);
    }
}

} // namespace

std::vector<Network::StateTensor> Network::state_tensors() const
{
    std::vector<StateTensor> out;
    collect_state(m_nodes, out);
    return out;
}

std::vector<Network::StateTensor> Network::carried_tensors() const
{
    std::vector<StateTensor> out;
    for (const auto& n : m_nodes) {
        std::vector<Node::StateBuffer> own;
        n->carried_buffers(own);
        for (auto& b : own) out.push_back({n->layer, std::move(b.name), b.buffer});
    }
    return out;
}

bool Network::has_slot_buffer(std::size_t i, Buffer* ParamSlot::*which) const
{
    return m_slots.at(i).*which != nullptr;
}

std::vector<float> Network::read_slot_buffer(std::size_t i, Buffer* ParamSlot::*which)
{
    if (which == &ParamSlot::master) return read_slot(i);
    const Buffer& b = *(m_slots.at(i).*which);
    std::vector<float> stored(b.count());
    m_backend.download_f32(b, stored.data(), stored.size());
    return m_layouts[i].empty() ? stored : unpad(m_layouts[i], stored);
}

void Network::write_slot_buffer(std::size_t i, Buffer* ParamSlot::*which,
                                const std::vector<float>& values)
{
    if (which == &ParamSlot::master) return write_slot(i, values);
    if (values.size() != slot_size(i))
        throw Error("write_slot_buffer: " + std::to_string(values.size()) +
                    " values for a tensor of " + std::to_string(slot_size(i)));
    Buffer& b = *(m_slots.at(i).*which);
    // Padding stays zero: no gradient reaches it, so no optimizer state either.
    const std::vector<float> stored = m_layouts[i].empty() ? values : pad(m_layouts[i], values);
    m_backend.upload_f32(b, stored.data(), stored.size());
}

std::vector<float> Network::read_state(const StateTensor& t)
{
    std::vector<float> values(t.buffer->count());
    m_backend.download_f32(*t.buffer, values.data(), values.size());
    return values;
}

void Network::write_state(const StateTensor& t, const std::vector<float>& values)
{
    if (values.size() != t.buffer->count())
        throw Error("write_state: " + std::to_string(values.size()) + " values for a tensor of " +
                    std::to_string(t.buffer->count()));
    m_backend.upload_f32(*t.buffer, values.data(), values.size());
}

std::vector<float> Network::read_gradients() { return read_slots(&ParamSlot::grad); }

void Network::write_parameters(const std::vector<float>& values)
{
    std::size_t at = 0;
    for (std::size_t i = 0; i < m_slots.size(); ++i) {
        const ParamSlot& slot = m_slots[i];
        const PaddedLayout& layout = m_layouts[i];
        const std::size_t n = layout.empty() ? slot.master->count() : logical_count(layout);
        if (at + n > values.size())
            throw Error("write_parameters: " + std::to_string(values.size()) +
                        " values for more parameters than that");
        std::vector<float> own(values.begin() + std::ptrdiff_t(at),
                               values.begin() + std::ptrdiff_t(at + n));
        if (!layout.empty()) own = pad(layout, own);
        upload_master(m_backend, *slot.master, slot.low, own.data(), own.size());
        at += n;
    }
    refresh_fp8_weights();
}

std::vector<LayerKernelInfo> Network::kernels() const
{
    std::vector<LayerKernelInfo> kernels;
    for (const auto& n : m_nodes) n->kernels(kernels);
    return kernels;
}

namespace {

// One line per relu that runs inside the batch norm before it.
void collect_fused_relus(const NodeList& nodes, std::vector<std::string>& out)
{
    for (const auto& n : nodes) {
        const auto branches = n->branches();
        if (!branches.empty()) {
            for (const NodeList* branch : branches) collect_fused_relus(*branch, out);
        } else if (n->absorbed) {
            out.push_back(n->path() + " activation " + std::string(dtype_name(n->dtype)) +
                          ": relu fused into the batch norm before it");
        }
    }
}

} // namespace

std::vector<NodeFacts> Network::top_level_nodes() const
{
    std::vector<NodeFacts> out;
    for (std::size_t i = 0; i < m_nodes.size(); ++i) {
        const Node& n = *m_nodes[i];
        NodeFacts f;
        f.layer = n.layer;
        f.dtype = n.dtype;
        f.math = n.math;
        f.input_gradient = n.in_grad != nullptr;
        f.shares_buffers = n.passthrough || n.absorbed;
        if (!n.layer) { // a cast
            const Node* next = i + 1 < m_nodes.size() ? m_nodes[i + 1].get() : nullptr;
            f.cast_before = next && next->layer ? next->layer->path : std::string("the loss");
            f.from_dtype = n.in->dtype();
            // Per sample: in a sequence graph, per column of time_steps tokens.
            f.per_sample = std::int64_t(n.out->count()) / std::max(m_max_batch, 1);
        }
        out.push_back(std::move(f));
    }
    return out;
}

std::vector<std::string> Network::describe() const
{
    std::vector<std::string> lines;
    for (const auto& k : kernels()) {
        std::ostringstream s;
        s << k.path << " " << k.type << " " << dtype_name(k.dtype)
          << (k.type == "conv2d" ? " conv"
              : k.type == "lstm" ? " RNN"
                                 : " GEMM");
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
    for (const auto& n : m_nodes) n->describe(lines);
    collect_fused_relus(m_nodes, lines);
    return lines;
}

// The top-level part of a layer path: "layer 4" of "layer 4 > body 2".
static std::string top_level_path(const std::string& path)
{
    const std::size_t cut = path.find(" > ");
    return cut == std::string::npos ? path : path.substr(0, cut);
}

std::vector<Network::NumericsLayer> Network::numerics_layers() const
{
    std::vector<NumericsLayer> out;
    for (const auto& node : m_nodes) {
        // Casts are the previous layer's values in another dtype; flatten and an absorbed
        // relu share another node's buffers.
        if (!node->layer || node->passthrough || node->absorbed) continue;
        NumericsLayer l;
        l.path = node->path();
        l.type = std::string(layer_type_name(node->layer->spec.type));
        l.activation = node->out;
        for (std::size_t i = 0; i < m_slots.size(); ++i) {
            const GraphLayer* owner = m_slot_layers[i];
            const std::string owner_path =
                owner
                    ? (owner->path.empty() ? "layer " + std::to_string(owner->index) : owner->path)
                    : std::string();
            if (owner && top_level_path(owner_path) == l.path) l.params.push_back(m_slots[i]);
        }
        out.push_back(std::move(l));
    }
    return out;
}

} // namespace mixlab
