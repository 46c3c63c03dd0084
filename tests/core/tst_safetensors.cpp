// Saved weights (model/safetensors.h, model/model_weights.h) on the CPU reference: a tiny
// dense model's file read byte by byte, round trips that give back the same masters and
// logits, PyTorch's layouts (a conv's KCRS weights, a flattened image's CHW features),
// the names of residual blocks and of an lstm's padded tensors, the metadata, and every
// damaged or mismatched file refused with its message, nothing loaded.
#include "mixlab/backend.h"
#include "mixlab/error.h"
#include "mixlab/graph.h"
#include "mixlab/model_spec.h"
#include "model/model_weights.h"
#include "model/network.h"
#include "test_util.h"

#include <QtTest/QtTest>

#include <nlohmann/json.hpp>

#include <cstring>

using namespace mixlab;
using namespace mixlab::test;

namespace {

LayerSpec of_type(LayerType t)
{
    LayerSpec l;
    l.type = t;
    return l;
}

LayerSpec dense(int units, Activation act = Activation::None)
{
    LayerSpec l;
    l.units = units;
    l.activation = act;
    return l;
}

LayerSpec conv(int filters, int kernel)
{
    LayerSpec l = of_type(LayerType::Conv2D);
    l.filters = filters;
    l.kernel_h = l.kernel_w = kernel;
    l.padding = Padding::Same;
    return l;
}

ModelSpec model(std::string name, std::vector<LayerSpec> layers)
{
    ModelSpec s;
    s.name = std::move(name);
    s.layers = std::move(layers);
    return s;
}

// flatten, dense 5 relu, dense 3 on 2x2x1 samples: 4 -> 5 -> 3.
ModelSpec tiny_mlp(int hidden = 5)
{
    return model("tiny-mlp",
                 {of_type(LayerType::Flatten), dense(hidden, Activation::Relu), dense(3)});
}

// conv 4 3x3, batch norm, relu, flatten, dense 3 on 3x3x2 samples: the dense reads a
// flattened image of 4 channels, so its columns change order for PyTorch.
ModelSpec conv_bn()
{
    LayerSpec relu = of_type(LayerType::Activation);
    relu.activation = Activation::Relu;
    return model("conv-bn", {conv(4, 3), of_type(LayerType::BatchNorm), relu,
                             of_type(LayerType::Flatten), dense(3)});
}

struct Net {
    static constexpr int k_batch = 4;
    std::unique_ptr<Backend> backend = make_backend(DeviceChoice::CPU);
    Graph graph;
    std::unique_ptr<Network> net;

    Net(const ModelSpec& spec, const Shape& input, int classes, std::uint64_t seed,
        Policy policy = Policy::FP32, OptimizerConfig opt = {})
    {
        graph = build_graph(spec, input, classes);
        net = std::make_unique<Network>(graph, policy, opt, *backend, k_batch, seed);
    }
    // Fresh random masters (not the initial ones: zero biases would hide a swap).
    void randomize(unsigned seed)
    {
        const auto n = net->read_parameters().size();
        net->write_parameters(random_vec(n, seed));
        for (const auto& st : net->state_tensors())
            net->write_state(st, random_vec(st.buffer->count(), seed + 1, 0.5f, 2.0f));
    }
    // Evaluation-mode logits (running statistics) for a fixed input.
    Vec logits()
    {
        const Vec x = random_vec(std::size_t(k_batch) * graph.input.elements(), 1234);
        backend->upload_f32(net->input(), x.data(), x.size());
        net->forward(k_batch, false, 0);
        return download(*backend, net->logits());
    }
};

struct Header {
    std::uint64_t length = 0;
    nlohmann::json json;
    std::size_t data_start = 0;
};

Header read_header(const std::string& bytes)
{
    Header h;
    std::memcpy(&h.length, bytes.data(), 8);
    h.json = nlohmann::json::parse(bytes.substr(8, std::size_t(h.length)));
    h.data_start = 8 + std::size_t(h.length);
    return h;
}

Vec floats_at(const std::string& bytes, const Header& h, const std::string& name)
{
    const auto& offsets = h.json.at(name).at("data_offsets");
    const std::size_t begin = offsets[0], end = offsets[1];
    Vec v((end - begin) / 4);
    std::memcpy(v.data(), bytes.data() + h.data_start + begin, end - begin);
    return v;
}

#define EXPECT_REFUSED(call, text)                                                                 \
    do {                                                                                           \
        const std::string message = thrown_message<InputError>([&] { call; });                     \
        QVERIFY2(message.find(text) != std::string::npos,                                          \
                 ("expected \"" + std::string(text) + "\" in: " + message).c_str());               \
    } while (0)

} // namespace

class TestSafetensors : public QObject {
    Q_OBJECT
private slots:
    void dense_file_read_by_hand();
    void dense_round_trip();
    void masters_of_every_scheme();
    void conv_batchnorm_round_trip_and_layouts();
    void residual_and_lstm_names();
    void metadata();
    void damaged_files_refused();
    void mismatched_models_refused();
    void inexpressible_models_refused();
};

// The format as the public description has it: length, a space-padded JSON header, then
// the tensors contiguous in order, little-endian, equal to the masters.
void TestSafetensors::dense_file_read_by_hand()
{
    Net n(tiny_mlp(), Shape{{2, 2, 1}}, 3, 7);
    n.randomize(11);
    const std::string bytes = encode_weights(*n.net, tiny_mlp(), Policy::FP32, 5);
    const Header h = read_header(bytes);
    QCOMPARE(h.length % 8, std::uint64_t(0));
    QVERIFY(h.data_start <= bytes.size());
    QVERIFY(!h.json.contains("0.weight")); // flatten: an index and nothing else
    const std::vector<std::pair<std::string, std::vector<std::int64_t>>> expected = {
        {"1.weight", {5, 4}}, {"1.bias", {5}}, {"2.weight", {3, 5}}, {"2.bias", {3}}};
    std::size_t at = 0;
    Vec all;
    for (const auto& [name, shape] : expected) {
        const auto& t = h.json.at(name);
        QCOMPARE(t.at("dtype").get<std::string>(), std::string("F32"));
        QVERIFY(t.at("shape").get<std::vector<std::int64_t>>() == shape);
        std::size_t count = 1;
        for (auto d : shape) count *= std::size_t(d);
        QCOMPARE(t.at("data_offsets")[0].get<std::size_t>(), at);
        QCOMPARE(t.at("data_offsets")[1].get<std::size_t>(), at + 4 * count);
        at += 4 * count;
        const Vec v = floats_at(bytes, h, name);
        all.insert(all.end(), v.begin(), v.end());
    }
    QCOMPARE(h.data_start + at, bytes.size());
    // Graph order is the file's order here: weights (out x in, as nn.Linear), then bias.
    QVERIFY(all == n.net->read_parameters());
    // Little-endian by hand: the first weight's four bytes.
    const float first = n.net->read_parameters()[0];
    std::uint32_t u = 0;
    std::memcpy(&u, &first, 4);
    for (int b = 0; b < 4; ++b)
        QCOMPARE(std::uint8_t(bytes[h.data_start + std::size_t(b)]), std::uint8_t(u >> (8 * b)));
}

// Under every scheme of masters (fp32 beside a 16-bit copy, bf16 split into two halves)
// the file holds the fp32 masters, and loading rebuilds the copies from them.
void TestSafetensors::masters_of_every_scheme()
{
    OptimizerConfig split;
    split.master_weights = MasterWeights::Bf16Split;
    for (const auto& [policy, opt] : {std::pair{Policy::MixedFP16, OptimizerConfig{}},
                                      {Policy::MixedBF16, OptimizerConfig{}},
                                      {Policy::MixedBF16, split}}) {
        Net a(tiny_mlp(), Shape{{2, 2, 1}}, 3, 7, policy, opt);
        a.randomize(51);
        const std::string bytes = encode_weights(*a.net, tiny_mlp(), policy, 1);
        const Vec masters = a.net->read_parameters();
        QVERIFY(floats_at(bytes, read_header(bytes), "1.weight") ==
                Vec(masters.begin(), masters.begin() + 20));
        Net b(tiny_mlp(), Shape{{2, 2, 1}}, 3, 99, policy, opt);
        load_weights_bytes(*b.net, bytes, "test");
        QVERIFY(b.net->read_parameters() == a.net->read_parameters());
        QVERIFY(b.logits() == a.logits());
    }
}

void TestSafetensors::dense_round_trip()
{
    Net a(tiny_mlp(), Shape{{2, 2, 1}}, 3, 7);
    a.randomize(21);
    const std::string bytes = encode_weights(*a.net, tiny_mlp(), Policy::FP32, 1);
    Net b(tiny_mlp(), Shape{{2, 2, 1}}, 3, 99); // other initial weights
    QVERIFY(b.net->read_parameters() != a.net->read_parameters());
    load_weights_bytes(*b.net, bytes, "test");
    QVERIFY(b.net->read_parameters() == a.net->read_parameters());
    QVERIFY(b.logits() == a.logits());
}

void TestSafetensors::conv_batchnorm_round_trip_and_layouts()
{
    const Shape input{{3, 3, 2}};
    Net a(conv_bn(), input, 3, 7);
    a.randomize(31);
    const std::string bytes = encode_weights(*a.net, conv_bn(), Policy::FP32, 9);
    Net b(conv_bn(), input, 3, 99);
    load_weights_bytes(*b.net, bytes, "test");
    QVERIFY(b.net->read_parameters() == a.net->read_parameters());
    for (std::size_t i = 0; i < a.net->state_tensors().size(); ++i)
        QVERIFY(b.net->read_state(b.net->state_tensors()[i]) ==
                a.net->read_state(a.net->state_tensors()[i]));
    QVERIFY(b.logits() == a.logits());

    const Header h = read_header(bytes);
    for (const char* name : {"1.weight", "1.bias", "1.running_mean", "1.running_var"})
        QVERIFY2(h.json.at(name).at("shape") == nlohmann::json({4}), name);
    QVERIFY(h.json.at("1.num_batches_tracked").at("dtype") == "I64");
    QVERIFY(h.json.at("1.num_batches_tracked").at("shape") == nlohmann::json::array());
    std::int64_t tracked = 0;
    const auto& off = h.json.at("1.num_batches_tracked").at("data_offsets");
    std::memcpy(&tracked, bytes.data() + h.data_start + off[0].get<std::size_t>(), 8);
    QCOMPARE(tracked, std::int64_t(9));

    // conv: MixLab's KRSC (4, 3, 3, 2) written as PyTorch's KCRS (4, 2, 3, 3).
    const Vec params = a.net->read_parameters();
    QVERIFY(h.json.at("0.weight").at("shape") == nlohmann::json({4, 2, 3, 3}));
    const Vec torch_w = floats_at(bytes, h, "0.weight");
    for (int k = 0; k < 4; ++k)
        for (int c = 0; c < 2; ++c)
            for (int r = 0; r < 3; ++r)
                for (int s = 0; s < 3; ++s)
                    QCOMPARE(torch_w[std::size_t(((k * 2 + c) * 3 + r) * 3 + s)],
                             params[std::size_t(((k * 3 + r) * 3 + s) * 2 + c)]);
    // dense after flatten of 3x3x4: PyTorch's column c*9 + p is MixLab's p*4 + c.
    const std::size_t dense_at = params.size() - 3 - 3 * 36; // the dense weights, then bias
    QVERIFY(h.json.at("4.weight").at("shape") == nlohmann::json({3, 36}));
    const Vec torch_d = floats_at(bytes, h, "4.weight");
    for (int o = 0; o < 3; ++o)
        for (int c = 0; c < 4; ++c)
            for (int p = 0; p < 9; ++p)
                QCOMPARE(torch_d[std::size_t(o * 36 + c * 9 + p)],
                         params[dense_at + std::size_t(o * 36 + p * 4 + c)]);
}

void TestSafetensors::residual_and_lstm_names()
{
    LayerSpec block = of_type(LayerType::Residual);
    block.body = {conv(2, 3), of_type(LayerType::BatchNorm)};
    block.shortcut = {conv(2, 1)};
    const ModelSpec res = model("res", {conv(3, 3), block, of_type(LayerType::Flatten), dense(3)});
    Net r(res, Shape{{2, 2, 1}}, 3, 7);
    const Header h = read_header(encode_weights(*r.net, res, Policy::FP32, 0));
    for (const char* name :
         {"0.weight", "0.bias", "1.body.0.weight", "1.body.0.bias", "1.body.1.weight",
          "1.body.1.running_var", "1.shortcut.0.weight", "3.weight", "3.bias"})
        QVERIFY2(h.json.contains(name), name);
    QVERIFY(h.json.at("1.body.0.weight").at("shape") == nlohmann::json({2, 3, 3, 3}));
    QVERIFY(h.json.at("1.shortcut.0.weight").at("shape") == nlohmann::json({2, 3, 1, 1}));

    // An embedding of 5 and an lstm of 6 are stored padded to 8 features; the file holds
    // the model's own shapes, in nn.LSTM's names.
    LayerSpec emb = of_type(LayerType::Embedding);
    emb.vocab = 11;
    emb.dim = 5;
    LayerSpec lstm = of_type(LayerType::Lstm);
    lstm.hidden = 6;
    lstm.num_layers = 2;
    LayerSpec decoder = dense(k_units_vocab);
    const ModelSpec lm = model("lm", {emb, lstm, decoder});
    auto backend = make_backend(DeviceChoice::CPU);
    const Graph graph = build_graph(lm, Shape::tokens(), 11);
    Network a(graph, Policy::FP32, OptimizerConfig{}, *backend, 2, 3, 7);
    const std::string bytes = encode_weights(a, lm, Policy::FP32, 0);
    const Header lh = read_header(bytes);
    const std::vector<std::pair<std::string, nlohmann::json>> shapes = {
        {"0.weight", {11, 5}},       {"1.weight_ih_l0", {24, 5}},
        {"1.weight_hh_l0", {24, 6}}, {"1.bias_ih_l0", {24}},
        {"1.bias_hh_l0", {24}},      {"1.weight_ih_l1", {24, 6}},
        {"1.weight_hh_l1", {24, 6}}, {"1.bias_hh_l1", {24}},
        {"2.weight", {11, 6}},       {"2.bias", {11}}};
    for (const auto& [name, shape] : shapes)
        QVERIFY2(lh.json.at(name).at("shape") == shape, name.c_str());
    Network b(graph, Policy::FP32, OptimizerConfig{}, *backend, 2, 3, 99);
    load_weights_bytes(b, bytes, "test");
    QVERIFY(b.read_parameters() == a.read_parameters());

    // A decoder tied to the embedding: PyTorch's state_dict lists the shared table under
    // the decoder's name too, so the file does; loading takes it back once.
    emb.dim = 6;
    decoder.tie_weights = true;
    const ModelSpec tied = model("tied", {emb, lstm, decoder});
    const Graph tied_graph = build_graph(tied, Shape::tokens(), 11);
    Network t(tied_graph, Policy::FP32, OptimizerConfig{}, *backend, 2, 3, 7);
    const std::string tied_bytes = encode_weights(t, tied, Policy::FP32, 0);
    const Header th = read_header(tied_bytes);
    QVERIFY(th.json.at("2.weight").at("shape") == nlohmann::json({11, 6}));
    QVERIFY(floats_at(tied_bytes, th, "2.weight") == floats_at(tied_bytes, th, "0.weight"));
    Network u(tied_graph, Policy::FP32, OptimizerConfig{}, *backend, 2, 3, 99);
    load_weights_bytes(u, tied_bytes, "test");
    QVERIFY(u.read_parameters() == t.read_parameters());
}

void TestSafetensors::metadata()
{
    Net n(tiny_mlp(), Shape{{2, 2, 1}}, 3, 7);
    const Header h = read_header(encode_weights(*n.net, tiny_mlp(), Policy::MixedBF16, 12));
    const auto& m = h.json.at("__metadata__");
    QCOMPARE(m.at("format").get<std::string>(), std::string("mixlab-weights/1"));
    QCOMPARE(m.at("model").get<std::string>(), model_spec_to_json(tiny_mlp()));
    QVERIFY(parse_model_spec(m.at("model").get<std::string>()) == tiny_mlp());
    QCOMPARE(m.at("policy").get<std::string>(), std::string("mixed_bf16"));
    QCOMPARE(m.at("step").get<std::string>(), std::string("12"));
    for (const auto& [key, value] : m.items()) QVERIFY2(value.is_string(), key.c_str());
}

void TestSafetensors::damaged_files_refused()
{
    Net src(tiny_mlp(), Shape{{2, 2, 1}}, 3, 7);
    src.randomize(41);
    const std::string good = encode_weights(*src.net, tiny_mlp(), Policy::FP32, 1);
    const Header h = read_header(good);
    Net n(tiny_mlp(), Shape{{2, 2, 1}}, 3, 99);
    const Vec before = n.net->read_parameters();
    const auto load = [&](const std::string& bytes) { load_weights_bytes(*n.net, bytes, "w.st"); };

    EXPECT_REFUSED(load(good.substr(0, 5)), "w.st: truncated at byte offset 5");
    std::string longer = good;
    const std::uint64_t huge = 1ull << 40;
    std::memcpy(longer.data(), &huge, 8);
    EXPECT_REFUSED(load(longer), "the header length 1099511627776 runs past the end of the file");
    std::string not_json = good;
    not_json[8] = 'x';
    EXPECT_REFUSED(load(not_json), "the header is not JSON");
    // The last tensor, 2.bias (3 floats), loses its last 4 bytes.
    const std::string cut = good.substr(0, good.size() - 4);
    EXPECT_REFUSED(load(cut), "truncated: tensor \"2.bias\" ends at byte offset " +
                                  std::to_string(good.size()) +
                                  " but the file ends at byte offset " +
                                  std::to_string(cut.size()));

    // Headers written by hand over the same data.
    const auto with_header = [&](nlohmann::json header) {
        std::string text = header.dump();
        const std::uint64_t len = text.size();
        std::string out(8, '\0');
        std::memcpy(out.data(), &len, 8);
        return out + text + good.substr(h.data_start);
    };
    nlohmann::json overlap = h.json;
    overlap["1.bias"]["data_offsets"] = {60, 80}; // inside 1.weight's [0, 80)
    EXPECT_REFUSED(load(with_header(overlap)), "tensor \"1.weight\" and tensor \"1.bias\" overlap");
    nlohmann::json short_range = h.json;
    short_range["1.bias"]["data_offsets"] = {80, 96};
    EXPECT_REFUSED(load(with_header(short_range)),
                   "tensor \"1.bias\": \"data_offsets\" [80, 96] hold 16 bytes, its shape [5] of "
                   "F32 needs 20");
    // Two dimensions of 2^40 multiply to 2^80, which wraps a 64-bit count to 0: the count
    // is checked before each multiplication.
    nlohmann::json huge_shape = h.json;
    huge_shape["1.bias"]["shape"] = {huge, huge};
    EXPECT_REFUSED(load(with_header(huge_shape)),
                   "tensor \"1.bias\": its shape [1099511627776, 1099511627776]... holds more "
                   "than 2^40 elements");
    nlohmann::json odd_dtype = h.json;
    odd_dtype["1.bias"]["dtype"] = "F33";
    EXPECT_REFUSED(load(with_header(odd_dtype)), "tensor \"1.bias\": unknown dtype \"F33\"");
    nlohmann::json f16 = h.json;
    f16["2.bias"]["dtype"] = "F16";
    f16["2.bias"]["shape"] = {6}; // the same 12 bytes as 6 halves
    EXPECT_REFUSED(load(with_header(f16)), "tensor \"2.bias\" is F16, expected F32");
    nlohmann::json missing = h.json;
    missing.erase("2.bias");
    EXPECT_REFUSED(load(with_header(missing)), "tensor \"2.bias\" is missing");
    nlohmann::json metadata = h.json;
    metadata["__metadata__"]["format"] = "mixlab-weights/9";
    EXPECT_REFUSED(load(with_header(metadata)), "\"format\" is \"mixlab-weights/9\"");

    // None of those loaded anything.
    QVERIFY(n.net->read_parameters() == before);
    EXPECT_REFUSED(load_weights(*n.net, "/nonexistent/w.st"), "cannot read weights");
}

void TestSafetensors::mismatched_models_refused()
{
    Net other(tiny_mlp(6), Shape{{2, 2, 1}}, 3, 7);
    Net n(tiny_mlp(), Shape{{2, 2, 1}}, 3, 99);
    const Vec before = n.net->read_parameters();
    EXPECT_REFUSED(load_weights_bytes(
                       *n.net, encode_weights(*other.net, tiny_mlp(6), Policy::FP32, 0), "w.st"),
                   "w.st: tensor \"1.weight\": expected shape [5, 4], found [6, 4]");
    // Another model's tensors: one this model lacks.
    const ModelSpec deeper = model(
        "deeper", {of_type(LayerType::Flatten), dense(5, Activation::Relu), dense(5), dense(3)});
    Net d(deeper, Shape{{2, 2, 1}}, 3, 7);
    EXPECT_REFUSED(
        load_weights_bytes(*n.net, encode_weights(*d.net, deeper, Policy::FP32, 0), "w.st"),
        "tensor \"2.weight\": expected shape [3, 5], found [5, 5]");
    std::vector<SafeTensor> extra = network_tensors(*n.net, 0);
    extra.push_back({"9.weight", "F32", {1}, std::string(4, '\0')});
    EXPECT_REFUSED(load_weights_bytes(*n.net, encode_safetensors(extra, {}), "w.st"),
                   "tensor \"9.weight\" is not in this model");
    QVERIFY(n.net->read_parameters() == before);
}

// What the PyTorch naming cannot express is refused, not written wrong.
void TestSafetensors::inexpressible_models_refused()
{
    LayerSpec block = of_type(LayerType::Residual);
    block.body = {dense(8)};
    const ModelSpec mixed_orders = model("r", {of_type(LayerType::Flatten), block, dense(3)});
    Net r(mixed_orders, Shape{{2, 2, 2}}, 3, 7);
    EXPECT_REFUSED(network_tensors(*r.net, 0),
                   "layer 1 (residual): a residual block reading a flattened image of several "
                   "channels cannot be saved in PyTorch's feature order");
    // One channel: both orders are the same, so it saves.
    Net one(mixed_orders, Shape{{2, 4, 1}}, 3, 7);
    QCOMPARE(network_tensors(*one.net, 0).size(), std::size_t(4));

    LayerSpec emb = of_type(LayerType::Embedding);
    emb.vocab = 11;
    emb.dim = 6;
    LayerSpec lstm = of_type(LayerType::Lstm);
    lstm.hidden = 6;
    LayerSpec decoder = dense(k_units_vocab);
    decoder.tie_weights = true;
    decoder.use_bias = false;
    const ModelSpec lm = model("lm", {emb, lstm, decoder});
    auto backend = make_backend(DeviceChoice::CPU);
    Network t(build_graph(lm, Shape::tokens(), 11), Policy::FP32, OptimizerConfig{}, *backend, 2, 3,
              7);
    EXPECT_REFUSED(network_tensors(t, 0), "layer 2 (dense): a tied decoder without a bias");
}

QTEST_APPLESS_MAIN(TestSafetensors)
#include "tst_safetensors.moc"
