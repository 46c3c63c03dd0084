// The PyTorch naming of a network's tensors, the layout changes between MixLab's storage
// and PyTorch's, and the checks a file must pass before a network takes its values.
//
// Names are those of the equivalent nn.Sequential's state_dict (docs/WEIGHTS.md): layer i
// of the model is module i; a residual block is a module with two nn.Sequential children
// "body" and "shortcut" (empty: the identity), so layer j of its body is "{i}.body.{j}".
#include "model/model_weights.h"

#include "mixlab/atomic_file.h"
#include "mixlab/error.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>

namespace mixlab {

namespace {

// PyTorch's flat index -> MixLab's, as a transpose: PyTorch's tensor read as `dims` (outer
// first), each of which steps `strides` values through MixLab's storage. Computed index by
// index, never held as a table: a dense layer of 3000 units over a flattened 32x32x3 image
// would want 9.2M entries (74 MB), built again for every save and load. Empty: the same
// order.
struct Perm {
    std::vector<std::size_t> dims, strides;
    bool empty() const { return dims.empty(); }
    void clear() { *this = {}; }
    std::size_t size() const
    {
        std::size_t n = 1;
        for (std::size_t d : dims) n *= d;
        return n;
    }
    // f(i, ours) for every PyTorch index i in order, `ours` its index in MixLab's storage:
    // an odometer over the dims, so no division per value.
    template <typename F>
    void walk(F&& f) const
    {
        std::vector<std::size_t> digit(dims.size(), 0);
        std::size_t ours = 0;
        const std::size_t n = size();
        for (std::size_t i = 0; i < n; ++i) {
            f(i, ours);
            for (std::size_t k = dims.size(); k-- > 0;) {
                ours += strides[k];
                if (++digit[k] < dims[k]) break;
                ours -= strides[k] * dims[k];
                digit[k] = 0;
            }
        }
    }
    // n values from MixLab's order (`ours`) into PyTorch's (`torch`), and back.
    void to_torch(const float* ours, float* torch, std::size_t n) const
    {
        if (empty()) return void(std::memcpy(torch, ours, n * sizeof(float)));
        check(n);
        walk([&](std::size_t i, std::size_t at) { torch[i] = ours[at]; });
    }
    void from_torch(const float* torch, float* ours, std::size_t n) const
    {
        if (empty()) return void(std::memcpy(ours, torch, n * sizeof(float)));
        check(n);
        walk([&](std::size_t i, std::size_t at) { ours[at] = torch[i]; });
    }
    void check(std::size_t n) const
    {
        if (size() != n) // a plan's shape and its reorder disagree: this file's bug
            throw Error("model weights: a reorder of " + std::to_string(size()) +
                        " values for a tensor of " + std::to_string(n));
    }
};

// Where one PyTorch tensor's values come from: a parameter slot's values (as the model
// defines them, no padding) from `offset`, reordered by `perm`; a state buffer; or the
// step count (num_batches_tracked).
struct TensorPlan {
    std::string name;
    std::string dtype = "F32";
    std::vector<std::int64_t> shape;
    enum class Source { Slot, State, Steps } source = Source::Slot;
    std::size_t slot = 0, offset = 0;
    Network::StateTensor state;
    Perm perm;
    std::size_t count() const
    {
        std::size_t n = 1;
        for (std::int64_t d : shape) n *= std::size_t(d);
        return n;
    }
};

// What the walk over the graph finds per layer: its name prefix and the order of the
// features it reads when they are a flattened image (see flatten_perm).
struct LayerNaming {
    std::string prefix; // "3." or "4.body.1."
    Perm in_perm;
};

// MixLab flattens an (H, W, C) sample in HWC order, PyTorch an NCHW one in CHW order: a
// layer reading the flattened vector sees feature c*H*W + h*W + w of PyTorch's at
// (h*W + w)*C + c of ours. Identity when there is one channel or one pixel.
Perm flatten_perm(const Shape& image)
{
    if (image.dims.size() != 3) return {};
    const std::size_t h = std::size_t(image.dims[0]), w = std::size_t(image.dims[1]),
                      c = std::size_t(image.dims[2]);
    if (c == 1 || h * w == 1) return {};
    return {{c, h * w}, {1, c}}; // PyTorch's (channel, pixel)
}

std::string label(const GraphLayer& l)
{
    return l.path + " (" + std::string(layer_type_name(l.spec.type)) + ")";
}

// Names and input orders of every layer of `layers`, recursively; `perm` is the feature
// order the list's input arrives in, and is left as the order its output leaves in.
void name_layers(const std::vector<GraphLayer>& layers, const std::string& prefix, Perm& perm,
                 std::map<const GraphLayer*, LayerNaming>& out)
{
    for (const GraphLayer& l : layers) {
        LayerNaming& n = out[&l];
        n.prefix = prefix + std::to_string(l.index) + ".";
        n.in_perm = perm;
        switch (l.spec.type) {
        case LayerType::Flatten: perm = flatten_perm(l.in); break;
        case LayerType::Activation:
        case LayerType::Dropout:
        case LayerType::BatchNorm: break; // element-wise or per feature: the order stays
        case LayerType::Residual: {
            if (!perm.empty())
                throw InputError(label(l) +
                                 ": a residual block reading a flattened image of several "
                                 "channels cannot be saved in PyTorch's feature order");
            Perm body, shortcut;
            name_layers(l.body, n.prefix + "body.", body, out);
            name_layers(l.shortcut, n.prefix + "shortcut.", shortcut, out);
            perm.clear();
            break;
        }
        case LayerType::Dense:
            // PyTorch's tied decoder is a Linear whose weight is the embedding's; without
            // a bias this network holds no tensor of the decoder's to write it beside.
            if (l.spec.tie_weights && !l.spec.use_bias)
                throw InputError(label(l) + ": a tied decoder without a bias cannot be saved "
                                            "yet (its PyTorch weight would have no slot here)");
            perm.clear();
            break;
        default: perm.clear(); // conv2d, pooling, embedding, lstm: a new order
        }
    }
}

// The perm of a (rows x cols) matrix whose columns are read in `cols_perm` order.
Perm column_perm(std::size_t rows, const Perm& cols_perm)
{
    if (cols_perm.empty()) return {};
    Perm p = cols_perm;
    p.dims.insert(p.dims.begin(), rows);
    p.strides.insert(p.strides.begin(), cols_perm.size());
    return p;
}

// conv2d: MixLab stores W as KRSC (filters, kh, kw, in channels), PyTorch as
// (filters, in channels, kh, kw).
Perm krsc_to_kcrs(std::size_t k, std::size_t r, std::size_t s, std::size_t c)
{
    return {{k, c, r, s}, {r * s * c, 1, s * c, c}};
}

TensorPlan slot_tensor(std::string name, std::size_t slot, std::vector<std::int64_t> shape,
                       std::size_t offset = 0, Perm perm = {})
{
    TensorPlan t;
    t.name = std::move(name);
    t.slot = slot;
    t.shape = std::move(shape);
    t.offset = offset;
    t.perm = std::move(perm);
    return t;
}

// The tensors of one parameter slot: the `part`-th slot its layer added.
void plan_slot(Network& net, std::size_t slot, int part, const LayerNaming& n,
               std::size_t embedding_slot, std::vector<TensorPlan>& out)
{
    const GraphLayer& l = net.slot_layer(slot);
    const LayerSpec& spec = l.spec;
    const std::string& p = n.prefix;
    const std::size_t count = net.slot_size(slot); // each shape below must cover it exactly
    const auto unknown = [&] {
        return InputError(label(l) + ": parameter " + std::to_string(part) +
                          " has no PyTorch name in this writer");
    };
    switch (spec.type) {
    case LayerType::Dense: {
        const std::int64_t units = l.out.elements(), in = l.in.elements();
        if (spec.tie_weights) {
            // PyTorch's tied decoder lists the embedding's table under its own name too;
            // strict loading wants it, so the table is written a second time.
            if (part != 0) throw unknown();
            const std::size_t table = net.slot_size(embedding_slot);
            out.push_back(
                slot_tensor(p + "weight", embedding_slot, {std::int64_t(table) / in, in}));
            out.push_back(slot_tensor(p + "bias", slot, {units}));
        } else if (part == 0) {
            out.push_back(slot_tensor(p + "weight", slot, {units, in}, 0,
                                      column_perm(std::size_t(units), n.in_perm)));
        } else if (part == 1) {
            out.push_back(slot_tensor(p + "bias", slot, {units}));
        } else {
            throw unknown();
        }
        break;
    }
    case LayerType::Conv2D: {
        const std::int64_t k = spec.filters, c = l.in.dims[2];
        if (part == 0)
            out.push_back(slot_tensor(p + "weight", slot, {k, c, spec.kernel_h, spec.kernel_w}, 0,
                                      krsc_to_kcrs(std::size_t(k), std::size_t(spec.kernel_h),
                                                   std::size_t(spec.kernel_w), std::size_t(c))));
        else if (part == 1)
            out.push_back(slot_tensor(p + "bias", slot, {k}));
        else
            throw unknown();
        break;
    }
    case LayerType::BatchNorm: {
        if (part > 1) throw unknown();
        const std::int64_t c = l.in.dims.back();
        out.push_back(slot_tensor(p + (part == 0 ? "weight" : "bias"), slot, {c}, 0, n.in_perm));
        break;
    }
    case LayerType::Embedding: {
        if (part != 0) throw unknown();
        const std::int64_t dim = spec.dim;
        out.push_back(slot_tensor(p + "weight", slot, {std::int64_t(count) / dim, dim}));
        break;
    }
    case LayerType::Lstm: {
        // One slot per stacked layer, already in PyTorch's flat order (backend.h's
        // LstmShape): w_ih (4H x I), w_hh (4H x H), b_ih (4H), b_hh (4H); gates i, f, g, o.
        const std::int64_t h = spec.hidden, g = 4 * h;
        const std::int64_t in = part == 0 ? l.in.elements() : h;
        const std::string k = std::to_string(part);
        std::size_t at = 0;
        for (const auto& [name, shape] :
             std::vector<std::pair<std::string, std::vector<std::int64_t>>>{
                 {"weight_ih_l", {g, in}},
                 {"weight_hh_l", {g, h}},
                 {"bias_ih_l", {g}},
                 {"bias_hh_l", {g}}}) {
            out.push_back(slot_tensor(p + name + k, slot, shape, at));
            at += out.back().count();
        }
        break;
    }
    default: throw unknown();
    }
    // Each slot's tensors must cover its values exactly; a mismatch is this file's bug.
    std::size_t covered = 0;
    for (const TensorPlan& t : out)
        if (t.source == TensorPlan::Source::Slot && t.slot == slot) covered += t.count();
    if (covered != count)
        throw Error("model weights: " + label(l) + " holds " + std::to_string(count) +
                    " values, its PyTorch tensors " + std::to_string(covered));
}

std::vector<TensorPlan> plan_tensors(Network& net)
{
    std::map<const GraphLayer*, LayerNaming> names;
    Perm perm;
    name_layers(net.graph().layers, "", perm, names);

    std::size_t embedding_slot = 0;
    for (std::size_t s = 0; s < net.slot_count(); ++s)
        if (net.slot_layer(s).spec.type == LayerType::Embedding) {
            embedding_slot = s;
            break;
        }
    const auto states = net.state_tensors();
    std::vector<TensorPlan> out;
    std::map<const GraphLayer*, int> parts;
    for (std::size_t s = 0; s < net.slot_count(); ++s) {
        const GraphLayer& l = net.slot_layer(s);
        const LayerNaming& n = names.at(&l);
        plan_slot(net, s, parts[&l]++, n, embedding_slot, out);
        // A batch norm's statistics follow its shift, as in PyTorch's state_dict.
        const bool last_of_layer = s + 1 == net.slot_count() || &net.slot_layer(s + 1) != &l;
        if (!last_of_layer || l.spec.type != LayerType::BatchNorm) continue;
        for (const Network::StateTensor& st : states) {
            if (st.layer != &l) continue;
            TensorPlan t;
            t.name = n.prefix + st.name;
            t.source = TensorPlan::Source::State;
            t.state = st;
            t.shape = {std::int64_t(st.buffer->count())};
            t.perm = n.in_perm;
            out.push_back(std::move(t));
        }
        TensorPlan steps;
        steps.name = n.prefix + "num_batches_tracked";
        steps.dtype = "I64";
        steps.source = TensorPlan::Source::Steps;
        out.push_back(std::move(steps)); // shape []: a scalar
    }
    return out;
}

} // namespace

namespace {

// The name torch.optim gives a slot's state buffers: SGD's momentum, Adam's two moments.
std::vector<std::pair<std::string, Buffer * ParamSlot::*>> slot_states(Network& net,
                                                                       std::size_t slot)
{
    if (!net.has_slot_buffer(slot, &ParamSlot::state1)) return {};
    if (!net.has_slot_buffer(slot, &ParamSlot::state2))
        return {{"momentum_buffer", &ParamSlot::state1}};
    return {{"exp_avg", &ParamSlot::state1}, {"exp_avg_sq", &ParamSlot::state2}};
}

std::string optimizer_name(const std::string& tensor, const std::string& state)
{
    return "optimizer." + tensor + "." + state;
}

// The planned tensors' values from the slots' `which` buffers (master: the weights), each
// under the name paired with it. Written straight into the tensors' bytes: a model's
// tensors are copied once (a checkpoint of the seed MLP is 100 MB).
using NamedPlan = std::pair<const TensorPlan*, std::string>;
std::vector<SafeTensor> slot_tensors(Network& net, const std::vector<NamedPlan>& plans,
                                     Buffer* ParamSlot::*which, std::int64_t step)
{
    std::map<std::size_t, std::vector<float>> slots; // read once each
    std::vector<SafeTensor> out;
    out.reserve(plans.size());
    for (const auto& [plan, name] : plans) {
        const TensorPlan& t = *plan;
        SafeTensor st{name, t.dtype, t.shape, {}};
        if (t.source == TensorPlan::Source::Steps) {
            st.data.resize(sizeof step);
            std::memcpy(st.data.data(), &step, sizeof step);
            out.push_back(std::move(st));
            continue;
        }
        std::vector<float> state;
        const float* from = nullptr;
        if (t.source == TensorPlan::Source::State) {
            state = net.read_state(t.state);
            from = state.data();
        } else {
            auto it = slots.find(t.slot);
            if (it == slots.end())
                it = slots.emplace(t.slot, net.read_slot_buffer(t.slot, which)).first;
            from = it->second.data() + t.offset;
        }
        const std::size_t n = t.count();
        st.data.resize(n * sizeof(float));
        float* to = reinterpret_cast<float*>(st.data.data());
        t.perm.to_torch(from, to, n);
        out.push_back(std::move(st));
    }
    return out;
}

} // namespace

std::vector<SafeTensor> network_tensors(Network& net, std::int64_t step)
{
    const std::vector<TensorPlan> plans = plan_tensors(net);
    std::vector<NamedPlan> named;
    for (const TensorPlan& t : plans) named.emplace_back(&t, t.name);
    return slot_tensors(net, named, &ParamSlot::master, step);
}

std::vector<SafeTensor> optimizer_tensors(Network& net)
{
    const std::vector<TensorPlan> plans = plan_tensors(net);
    std::vector<SafeTensor> out;
    // One pass per state kind, so that a slot's buffer is read once per kind; the file
    // lists every tensor's first state, then every tensor's second (Adam).
    for (int kind = 0; kind < 2; ++kind) {
        std::vector<NamedPlan> with;
        Buffer* ParamSlot::*which = nullptr;
        for (const TensorPlan& t : plans) {
            if (t.source != TensorPlan::Source::Slot) continue;
            const auto states = slot_states(net, t.slot);
            if (std::size_t(kind) >= states.size()) continue;
            with.emplace_back(&t, optimizer_name(t.name, states[std::size_t(kind)].first));
            which = states[std::size_t(kind)].second;
        }
        if (with.empty()) continue;
        for (SafeTensor& t : slot_tensors(net, with, which, 0)) out.push_back(std::move(t));
    }
    return out;
}

std::string encode_weights(Network& net, const ModelSpec& spec, Policy policy, std::int64_t step)
{
    const std::map<std::string, std::string> metadata = {
        {"format", std::string(k_weights_format)},
        {"model", model_spec_to_json(spec)},
        {"policy", std::string(policy_name(policy))},
        {"step", std::to_string(step)}};
    return encode_safetensors(network_tensors(net, step), metadata);
}

void save_weights(Network& net, const std::string& path, const ModelSpec& spec, Policy policy,
                  std::int64_t step)
{
    write_file_atomically(path, encode_weights(net, spec, policy, step));
}

PendingLoad check_weights(Network& net, const SafetensorsFile& file, const std::string& what,
                          bool with_optimizer)
{
    const auto fail = [&](const std::string& message) { throw InputError(what + ": " + message); };
    PendingLoad load;
    const std::vector<TensorPlan> plans = plan_tensors(net);
    // One pass per buffer kind: the weights (master), then each optimizer state.
    struct Pass {
        Buffer* ParamSlot::*which;
        std::string state; // empty: the weights
    };
    std::vector<Pass> passes{{&ParamSlot::master, ""}};
    if (with_optimizer && net.slot_count() > 0)
        for (const auto& [state, which] : slot_states(net, 0)) passes.push_back({which, state});
    for (const Pass& pass : passes) {
        // Every tensor checked and placed before any is written: nothing half-loaded.
        std::map<std::size_t, std::vector<float>> slots;
        for (const TensorPlan& p : plans) {
            if (!pass.state.empty() && p.source != TensorPlan::Source::Slot) continue;
            const std::string name =
                pass.state.empty() ? p.name : optimizer_name(p.name, pass.state);
            load.names.push_back(name);
            const SafeTensor* t = file.find(name);
            if (!t)
                fail("tensor \"" + name + "\" is missing" +
                     (pass.state.empty() ? " (weights of another model?)"
                                         : " (a checkpoint of another optimizer?)"));
            if (t->dtype != p.dtype)
                fail("tensor \"" + name + "\" is " + t->dtype + ", expected " + p.dtype);
            if (t->shape != p.shape)
                fail("tensor \"" + name + "\": expected shape " + shape_text(p.shape) + ", found " +
                     shape_text(t->shape));
            if (p.source == TensorPlan::Source::Steps) continue; // PyTorch's counter: not used
            std::vector<float> values(p.count());
            std::memcpy(values.data(), t->data.data(), t->data.size());
            if (p.source == TensorPlan::Source::State) {
                std::vector<float> ours(values.size());
                p.perm.from_torch(values.data(), ours.data(), values.size());
                load.writes.push_back(
                    [&net, st = p.state, v = std::move(ours)] { net.write_state(st, v); });
                continue;
            }
            auto& slot = slots[p.slot];
            if (slot.empty()) slot.assign(net.slot_size(p.slot), 0.0f);
            p.perm.from_torch(values.data(), slot.data() + p.offset, values.size());
        }
        for (auto& [s, values] : slots)
            load.writes.push_back([&net, s = s, which = pass.which, v = std::move(values)] {
                net.write_slot_buffer(s, which, v);
            });
    }
    return load;
}

void PendingLoad::apply()
{
    for (const auto& write : writes) write();
}

void load_weights_bytes(Network& net, std::string_view bytes, const std::string& what)
{
    const auto fail = [&](const std::string& message) { throw InputError(what + ": " + message); };
    const SafetensorsFile file = decode_safetensors(bytes, what);
    const auto format = file.metadata.find("format");
    // A checkpoint holds the weights under the same names: its weights alone are taken.
    const bool checkpoint = format != file.metadata.end() && format->second == k_checkpoint_format;
    if (format != file.metadata.end() && format->second != k_weights_format && !checkpoint)
        fail("\"__metadata__\" \"format\" is \"" + format->second + "\", not \"" +
             std::string(k_weights_format) + "\"");
    PendingLoad load = check_weights(net, file, what, false);
    for (const SafeTensor& t : file.tensors) {
        if (checkpoint && is_checkpoint_extra(t.name)) continue;
        if (std::find(load.names.begin(), load.names.end(), t.name) == load.names.end())
            fail("tensor \"" + t.name + "\" is not in this model (weights of another model?)");
    }
    load.apply();
}

bool is_checkpoint_extra(std::string_view name)
{
    return name.starts_with("optimizer.") || name.starts_with("mixlab.");
}

void load_weights(Network& net, const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    if (!in) throw InputError("cannot read weights '" + path + "': " + std::strerror(errno));
    std::ostringstream bytes;
    bytes << in.rdbuf();
    load_weights_bytes(net, bytes.str(), "weights '" + path + "'");
}

} // namespace mixlab
