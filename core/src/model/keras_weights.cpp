// Keras 3's model.weights.h5 into a network's parameter slots. The file (saving_lib's
// H5IOStore) keeps each layer's variables, in the order the layer created them, as
// datasets "0", "1", ... of the group <layer's group>/vars (an RNN's under
// <group>/cell/vars: its cell holds them). saving_lib names a model's layers by class and
// position, not by their names (layers/dense, layers/dense_1, layers/conv2d); a nested
// model's under its own group (layers/sequential/layers/dense): the importer works the
// groups out (KerasOrigin::h5_groups). The values go into a CPU network of the imported
// spec in MixLab's own layouts; model_weights' writer then gives the file PyTorch's.
#include "mixlab/keras_weights.h"

#include "mixlab/atomic_file.h"
#include "mixlab/backend.h"
#include "mixlab/error.h"
#include "mixlab/graph.h"
#include "model/model_weights.h"
#include "model/network.h"
#include "model/safetensors.h"

#if MIXLAB_KERAS_ARCHIVES
#include <hdf5.h>
#endif

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>

namespace mixlab {

#if MIXLAB_KERAS_ARCHIVES
namespace {

const char* const k_what = "the archive's model.weights.h5";

// An HDF5 handle closed by its own function.
class Handle {
public:
    Handle(hid_t id, herr_t (*close)(hid_t)) : m_id(id), m_close(close) {}
    ~Handle()
    {
        if (m_id >= 0) m_close(m_id);
    }
    Handle(const Handle&) = delete;
    Handle& operator=(const Handle&) = delete;
    hid_t get() const { return m_id; }
    bool ok() const { return m_id >= 0; }

private:
    hid_t m_id;
    herr_t (*m_close)(hid_t);
};

struct Variable {
    std::vector<std::int64_t> shape;
    std::vector<float> values;
};

// The file's bytes as an HDF5 file in memory (the core driver, on a copy of the bytes):
// nothing is extracted to disk.
hid_t open_image(const std::string& bytes, hid_t fapl)
{
    // HDF5 prints its error stack to stderr by default; the messages here say it.
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    static const char k_signature[] = "\x89HDF\r\n\x1a\n";
    if (bytes.size() < 8 || std::memcmp(bytes.data(), k_signature, 8) != 0)
        throw InputError(std::string(k_what) + " is not an HDF5 file (no HDF5 signature)");
    if (fapl < 0 || H5Pset_fapl_core(fapl, 1 << 20, 0) < 0 ||
        H5Pset_file_image(fapl, const_cast<char*>(bytes.data()), bytes.size()) < 0)
        throw InputError(std::string(k_what) + ": HDF5 could not take the file's bytes");
    const hid_t file = H5Fopen("model.weights.h5", H5F_ACC_RDONLY, fapl);
    if (file < 0)
        throw InputError(std::string(k_what) + " cannot be opened by HDF5 (truncated or damaged?)");
    return file;
}

class H5Weights {
public:
    explicit H5Weights(const std::string& bytes)
        : m_fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose),
          m_file(open_image(bytes, m_fapl.get()), H5Fclose)
    {}

    // Whether the group path exists, one link at a time (H5Lexists wants every parent).
    bool has(const std::string& path) const
    {
        std::string at;
        std::size_t from = 0;
        while (from <= path.size()) {
            const std::size_t slash = path.find('/', from);
            if (!at.empty()) at += '/';
            at.append(path, from, slash == std::string::npos ? std::string::npos : slash - from);
            if (H5Lexists(m_file.get(), at.c_str(), H5P_DEFAULT) <= 0) return false;
            if (slash == std::string::npos) break;
            from = slash + 1;
        }
        return true;
    }

    // Whether the root has a link of exactly this name ('/' not special).
    bool has_link(const std::string& name) const
    {
        return H5Lexists(m_file.get(), name.c_str(), H5P_DEFAULT) > 0;
    }

    // The count of datasets in a vars group.
    std::size_t count(const std::string& group) const
    {
        Handle g(H5Gopen2(m_file.get(), group.c_str(), H5P_DEFAULT), H5Gclose);
        H5G_info_t info;
        if (!g.ok() || H5Gget_info(g.get(), &info) < 0)
            throw InputError(std::string(k_what) + ": cannot read the group " + group);
        return std::size_t(info.nlinks);
    }

    Variable read(const std::string& path, const std::string& label) const
    {
        Handle d(H5Dopen2(m_file.get(), path.c_str(), H5P_DEFAULT), H5Dclose);
        if (!d.ok()) throw InputError(label + " is missing (no dataset " + path + ")");
        Handle type(H5Dget_type(d.get()), H5Tclose);
        if (H5Tget_class(type.get()) != H5T_FLOAT)
            throw InputError(label + " is not a floating-point dataset");
        Handle space(H5Dget_space(d.get()), H5Sclose);
        const int rank = H5Sget_simple_extent_ndims(space.get());
        if (rank < 0 || rank > 8) throw InputError(label + " has an unreadable shape");
        hsize_t dims[8] = {};
        H5Sget_simple_extent_dims(space.get(), dims, nullptr);
        Variable v;
        std::size_t n = 1;
        for (int i = 0; i < rank; ++i) {
            v.shape.push_back(std::int64_t(dims[i]));
            n *= std::size_t(dims[i]);
        }
        if (n > (std::size_t(1) << 31)) throw InputError(label + " is too large");
        v.values.resize(n);
        // HDF5 converts float16 / float64 storage to float on the way.
        if (n &&
            H5Dread(d.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.values.data()) < 0)
            throw InputError(label + " cannot be read (damaged?)");
        return v;
    }

private:
    Handle m_fapl;
    Handle m_file;
};

// A Keras layer: its name (a path of names in a nested model) and its variables' group.
struct KerasLayer {
    std::string name, group;
};

// One Keras layer's variables, checked against the shapes the model's config gives.
class KerasVars {
public:
    KerasVars(const H5Weights& h5, const KerasLayer& layer, const char* cell, std::size_t expected)
        : m_h5(h5), m_layer("Keras layer '" + layer.name + "'")
    {
        m_group = layer.group + (cell ? std::string("/") + cell : "") + "/vars";
        // Keras 3 on Windows joined the path with backslashes: one link of that name.
        std::string windows = m_group;
        std::replace(windows.begin(), windows.end(), '/', '\\');
        if (!h5.has(m_group) && h5.has_link(windows)) m_group = windows;
        if (!h5.has(m_group))
            throw InputError(std::string(k_what) + ": " + m_layer + " has no variables (no group " +
                             m_group + "; weights of another model?)");
        const std::size_t n = h5.count(m_group);
        if (n != expected)
            throw InputError(std::string(k_what) + ": " + m_layer + " has " + std::to_string(n) +
                             " variables in " + m_group + ", the model's config gives it " +
                             std::to_string(expected));
    }

    std::vector<float> get(int index, const char* name,
                           const std::vector<std::int64_t>& shape) const
    {
        const std::string label = std::string(k_what) + ": " + m_layer + " variable " +
                                  std::to_string(index) + " (" + name + ")";
        Variable v = m_h5.read(m_group + "/" + std::to_string(index), label);
        if (v.shape != shape)
            throw InputError(label + " has shape " + shape_text(v.shape) +
                             ", the model's config gives " + shape_text(shape));
        return std::move(v.values);
    }

private:
    const H5Weights& m_h5;
    std::string m_layer, m_group;
};

// out[c * rows + r] = in[r * cols + c]: a (rows x cols) matrix transposed.
std::vector<float> transposed(const std::vector<float>& in, std::size_t rows, std::size_t cols)
{
    std::vector<float> out(in.size());
    for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t c = 0; c < cols; ++c) out[c * rows + r] = in[r * cols + c];
    return out;
}

void append(std::vector<float>& to, const std::vector<float>& more)
{
    to.insert(to.end(), more.begin(), more.end());
}

void map_origins(const std::vector<GraphLayer>& layers, const std::vector<KerasOrigin>& origins,
                 std::map<const GraphLayer*, const KerasOrigin*>& out)
{
    if (layers.size() != origins.size())
        throw Error("keras weights: the spec's layers and their Keras origins differ in number");
    for (std::size_t i = 0; i < layers.size(); ++i) {
        out[&layers[i]] = &origins[i];
        map_origins(layers[i].body, origins[i].body, out);
        map_origins(layers[i].shortcut, origins[i].shortcut, out);
    }
}

// Keras's "same" pads (out - 1) * stride + size - in in total, the odd one at the bottom
// and right; MixLab pads (size - 1) / 2 on each side. Where they differ (a stride above 1
// over an even input, typically) the windows sit apart and the weights would compute
// something else: refused, naming the layer.
void check_same_padding(const std::vector<GraphLayer>& layers,
                        const std::map<const GraphLayer*, const KerasOrigin*>& origins)
{
    const auto keras_top = [](int in, int stride, int size) {
        const int out = (in + stride - 1) / stride;
        return std::max((out - 1) * stride + size - in, 0) / 2;
    };
    for (const GraphLayer& l : layers) {
        check_same_padding(l.body, origins);
        check_same_padding(l.shortcut, origins);
        const LayerSpec& s = l.spec;
        const bool windowed = s.type == LayerType::Conv2D || s.type == LayerType::MaxPool2D ||
                              s.type == LayerType::AvgPool2D;
        if (!windowed || s.padding != Padding::Same || l.in.dims.size() != 3) continue;
        const int top = keras_top(l.in.dims[0], l.stride_h, s.kernel_h);
        const int left = keras_top(l.in.dims[1], l.stride_w, s.kernel_w);
        if (top == l.pad_h && left == l.pad_w) continue;
        const KerasOrigin* o = origins.at(&l);
        const std::string keras =
            o->keras_layers.empty() ? l.path : "Keras layer '" + o->keras_layers[0] + "'";
        throw InputError(keras + ": \"padding\": \"same\" on a " + l.in.to_string() +
                         " input with stride " + std::to_string(l.stride_h) + "x" +
                         std::to_string(l.stride_w) +
                         " pads more at the bottom and right in Keras, evenly in MixLab: its "
                         "weights would compute shifted windows (a ZeroPadding2D and "
                         "\"valid\" padding express it exactly)");
    }
}

// The width of the model's output: the last dense layer's units.
int output_width(const std::vector<LayerSpec>& layers)
{
    for (auto it = layers.rbegin(); it != layers.rend(); ++it)
        if (it->type == LayerType::Dense) return it->units;
    throw InputError("the Keras model does not end in a Dense layer; MixLab trains models that "
                     "give one value per class");
}

// The k-th Keras layer a MixLab layer came from.
KerasLayer keras_layer(const GraphLayer& l, const KerasOrigin& o, std::size_t k)
{
    if (k >= o.keras_layers.size() || k >= o.h5_groups.size())
        throw Error("keras weights: " + l.path + " has no Keras layer for its parameters");
    return {o.keras_layers[k], o.h5_groups[k]};
}

// The values of parameter slot `part` of a layer from its Keras variables, in MixLab's
// layout (model_weights.cpp's plan_slot reads the same layouts back).
std::vector<float> slot_values(const H5Weights& h5, const GraphLayer& l, const KerasOrigin& o,
                               int part)
{
    const LayerSpec& s = l.spec;
    switch (s.type) {
    case LayerType::Dense: {
        const std::int64_t in = l.in.elements(), units = l.out.elements();
        const KerasVars v(h5, keras_layer(l, o, 0), nullptr, s.use_bias ? 2 : 1);
        // Keras's kernel is [in, units], MixLab's (PyTorch's) weight [units, in]; a
        // flattened image's features are HWC in both.
        if (part == 0)
            return transposed(v.get(0, "kernel", {in, units}), std::size_t(in), std::size_t(units));
        return v.get(1, "bias", {units});
    }
    case LayerType::Conv2D: {
        const std::int64_t c = l.in.dims[2], k = s.filters, r = s.kernel_h, w = s.kernel_w;
        const KerasVars v(h5, keras_layer(l, o, 0), nullptr, s.use_bias ? 2 : 1);
        if (part == 1) return v.get(1, "bias", {k});
        // Keras's kernel is [kh, kw, in channels, filters] (RSCK), MixLab stores KRSC.
        const std::vector<float> rsck = v.get(0, "kernel", {r, w, c, k});
        return transposed(rsck, std::size_t(r * w * c), std::size_t(k));
    }
    case LayerType::BatchNorm: {
        const std::int64_t c = l.in.dims.back();
        const KerasVars v(h5, keras_layer(l, o, 0), nullptr, 4);
        return part == 0 ? v.get(0, "gamma", {c}) : v.get(1, "beta", {c});
    }
    case LayerType::Embedding: {
        const KerasVars v(h5, keras_layer(l, o, 0), nullptr, 1);
        return v.get(0, "embeddings", {s.vocab, s.dim});
    }
    case LayerType::Lstm: {
        // Keras: kernel [I, 4H], recurrent_kernel [H, 4H], bias [4H], gates i, f, c, o;
        // MixLab (PyTorch): w_ih [4H, I], w_hh [4H, H], b_ih, b_hh [4H], gates i, f, g, o
        // (the same order). Keras has one bias: it goes to b_ih, b_hh is zero.
        const std::int64_t h = s.hidden, g = 4 * h, in = part == 0 ? l.in.elements() : h;
        const KerasVars v(h5, keras_layer(l, o, std::size_t(part)), "cell", 3);
        std::vector<float> out =
            transposed(v.get(0, "kernel", {in, g}), std::size_t(in), std::size_t(g));
        append(out,
               transposed(v.get(1, "recurrent_kernel", {h, g}), std::size_t(h), std::size_t(g)));
        append(out, v.get(2, "bias", {g}));
        out.resize(out.size() + std::size_t(g), 0.0f);
        return out;
    }
    default: throw Error("keras weights: " + l.path + " has parameters this reader does not map");
    }
}

} // namespace

#endif

std::string keras_weights_file(const KerasImport& imported)
{
#if !MIXLAB_KERAS_ARCHIVES
    (void)imported;
    throw InputError("Keras weights: this MixLab was built without .keras archive support "
                     "(configured with -DMIXLAB_KERAS_ARCHIVES=OFF)");
#else
    if (imported.weights_h5.empty())
        throw InputError("the Keras model came without weights: only a .keras archive holding "
                         "model.weights.h5 has them (model.to_json() writes none)");
    const H5Weights h5(imported.weights_h5);

    const ModelSpec& spec = imported.spec;
    const bool lm = is_language_model(spec);
    if (!lm && imported.input_shape.empty())
        throw InputError("the Keras model does not give its input's shape (an InputLayer's "
                         "batch_shape), which its weights' shapes depend on");
    const Shape input = lm ? Shape::tokens() : Shape{imported.input_shape, false};
    const Graph graph = build_graph(spec, input, output_width(spec.layers));
    const std::unique_ptr<Backend> backend = make_backend(DeviceChoice::CPU);
    Network net(graph, Policy::FP32, OptimizerConfig{}, *backend, 1, 0);

    std::map<const GraphLayer*, const KerasOrigin*> origins;
    map_origins(net.graph().layers, imported.origins, origins);
    check_same_padding(net.graph().layers, origins);
    std::map<const GraphLayer*, int> parts;
    for (std::size_t s = 0; s < net.slot_count(); ++s) {
        const GraphLayer& l = net.slot_layer(s);
        std::vector<float> values = slot_values(h5, l, *origins.at(&l), parts[&l]++);
        if (values.size() != net.slot_size(s))
            throw Error("keras weights: " + l.path + " slot holds " +
                        std::to_string(net.slot_size(s)) + " values, Keras's " +
                        std::to_string(values.size()));
        net.write_slot(s, values);
    }
    // Batch norm's running statistics: Keras's moving_mean and moving_variance.
    for (const Network::StateTensor& st : net.state_tensors()) {
        const GraphLayer& l = *st.layer;
        const std::int64_t c = l.in.dims.back();
        const KerasVars v(h5, keras_layer(l, *origins.at(&l), 0), nullptr, 4);
        if (st.name == "running_mean")
            net.write_state(st, v.get(2, "moving_mean", {c}));
        else if (st.name == "running_var")
            net.write_state(st, v.get(3, "moving_variance", {c}));
    }
    return encode_weights(net, spec, imported.policy, 0);
#endif
}

void save_keras_weights(const KerasImport& imported, const std::string& path)
{
    write_file_atomically(path, keras_weights_file(imported));
}

} // namespace mixlab
