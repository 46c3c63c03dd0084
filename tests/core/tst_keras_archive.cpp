// .keras archives (spec/keras_archive, model/keras_weights): archives the test writes with
// libzip around a model.weights.h5 it writes with libhdf5. A tiny MLP (Sequential) and a
// conv + batch norm + flatten + dense model (Functional) imported with their weights give
// on the CPU backend the logits computed here by hand from the same numbers in Keras's
// layouts; archives that are not zips, are truncated, lack config.json or hold a bad
// config, and weights that are missing or of another shape are refused by name. The
// variables sit where Keras's saving_lib puts them: layers/<class in snake case>[_k] by
// class and position in the model's list (not by the layers' names), a nested model's
// under its own group, layers/sequential/layers/dense.
#include "keras_archive_writer.h"
#include "mixlab/backend.h"
#include "mixlab/error.h"
#include "mixlab/graph.h"
#include "mixlab/keras_import.h"
#include "mixlab/keras_weights.h"
#include "mixlab/model_spec.h"
#include "model/model_weights.h"
#include "model/network.h"
#include "test_util.h"

#include <QtTest/QtTest>

#include <cmath>
#include <fstream>

using namespace mixlab;
using namespace mixlab::test;

namespace {

// Keras 3's Sequential JSON of an MLP: Input(3), Dense(4, relu), Dense(2).
const char* const k_mlp_config = R"({"module": "keras", "class_name": "Sequential",
  "config": {"name": "tiny", "layers": [
    {"class_name": "InputLayer", "config": {"batch_shape": [null, 3], "name": "input_layer"}},
    {"class_name": "Dense", "config": {"name": "dense", "units": 4, "activation": "relu"}},
    {"class_name": "Dense", "config": {"name": "dense_1", "units": 2}}]}})";

std::string tensor(const char* name)
{
    return R"({"class_name": "__keras_tensor__", "config": {"keras_history": [")" +
           std::string(name) + R"(", 0, 0]}})";
}

std::string functional_layer(const char* cls, const char* name, const char* from,
                             const std::string& config)
{
    return R"({"class_name": ")" + std::string(cls) + R"(", "name": ")" + name +
           R"(", "config": {"name": ")" + name + "\"" + config +
           R"(}, "inbound_nodes": [{"args": [)" + tensor(from) + R"(], "kwargs": {}}]})";
}

// Keras 3's Functional JSON: Input(3x3x2), Conv2D(2, 2x2, valid) -> 2x2x2,
// BatchNormalization, Flatten (8, HWC), Dense(2).
std::string conv_config()
{
    return R"({"module": "keras", "class_name": "Functional", "config": {"name": "convnet",
      "layers": [
        {"class_name": "InputLayer", "name": "img", "config": {"batch_shape": [null, 3, 3, 2],
         "name": "img"}, "inbound_nodes": []},)" +
           functional_layer("Conv2D", "conv", "img",
                            R"(, "filters": 2, "kernel_size": [2, 2], "padding": "valid")") +
           "," + functional_layer("BatchNormalization", "bn", "conv", R"(, "epsilon": 0.001)") +
           "," + functional_layer("Flatten", "flat", "bn", "") + "," +
           functional_layer("Dense", "out", "flat", R"(, "units": 2)") + R"(],
      "input_layers": [["img", 0, 0]], "output_layers": [["out", 0, 0]]}})";
}

// Numbers that are not round, so a transpose or a swap shows.
Vec numbers(std::size_t n, float scale, float shift)
{
    Vec v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = scale * float((i * 7 + 3) % 11) / 11.0f + shift;
    return v;
}

struct MlpWeights {
    Vec k1 = numbers(12, 1.0f, -0.5f), b1 = numbers(4, 0.2f, -0.1f); // [3, 4], [4]
    Vec k2 = numbers(8, 1.5f, -0.7f), b2 = numbers(2, 0.3f, 0.05f);  // [4, 2], [2]
    std::vector<H5Var> vars() const
    {
        return {{"layers/dense/vars/0", {3, 4}, k1},
                {"layers/dense/vars/1", {4}, b1},
                {"layers/dense_1/vars/0", {4, 2}, k2},
                {"layers/dense_1/vars/1", {2}, b2}};
    }
    // Keras's Dense: y[u] = sum_i x[i] * kernel[i][u] + bias[u].
    Vec logits(const Vec& x) const
    {
        Vec h(4), y(2);
        for (int u = 0; u < 4; ++u) {
            float s = b1[u];
            for (int i = 0; i < 3; ++i) s += x[i] * k1[i * 4 + u];
            h[u] = std::max(s, 0.0f);
        }
        for (int u = 0; u < 2; ++u) {
            float s = b2[u];
            for (int i = 0; i < 4; ++i) s += h[i] * k2[i * 2 + u];
            y[u] = s;
        }
        return y;
    }
};

struct ConvWeights {
    Vec kernel = numbers(16, 1.2f, -0.6f); // [2, 2, 2 in, 2 out]
    Vec bias = numbers(2, 0.4f, -0.2f);
    Vec gamma = numbers(2, 0.5f, 0.8f), beta = numbers(2, 0.3f, -0.1f);
    Vec mean = numbers(2, 0.2f, 0.1f), var = numbers(2, 0.5f, 0.6f);
    Vec dense = numbers(16, 1.0f, -0.4f); // [8, 2]
    Vec dense_bias = numbers(2, 0.2f, 0.0f);
    std::vector<H5Var> vars() const
    {
        return {{"layers/conv2d/vars/0", {2, 2, 2, 2}, kernel},
                {"layers/conv2d/vars/1", {2}, bias},
                {"layers/batch_normalization/vars/0", {2}, gamma},
                {"layers/batch_normalization/vars/1", {2}, beta},
                {"layers/batch_normalization/vars/2", {2}, mean},
                {"layers/batch_normalization/vars/3", {2}, var},
                {"layers/dense/vars/0", {8, 2}, dense},
                {"layers/dense/vars/1", {2}, dense_bias}};
    }
    // x is (3, 3, 2) HWC; Keras's conv kernel is [kh][kw][in][out], Flatten reads HWC.
    Vec logits(const Vec& x) const
    {
        Vec flat(8);
        for (int oh = 0; oh < 2; ++oh)
            for (int ow = 0; ow < 2; ++ow)
                for (int f = 0; f < 2; ++f) {
                    float s = bias[f];
                    for (int r = 0; r < 2; ++r)
                        for (int c = 0; c < 2; ++c)
                            for (int ci = 0; ci < 2; ++ci)
                                s += x[((oh + r) * 3 + (ow + c)) * 2 + ci] *
                                     kernel[((r * 2 + c) * 2 + ci) * 2 + f];
                    s = gamma[f] * (s - mean[f]) / std::sqrt(var[f] + 0.001f) + beta[f];
                    flat[(oh * 2 + ow) * 2 + f] = s;
                }
        Vec y(2);
        for (int u = 0; u < 2; ++u) {
            float s = dense_bias[u];
            for (int i = 0; i < 8; ++i) s += flat[i] * dense[i * 2 + u];
            y[u] = s;
        }
        return y;
    }
};

// Keras 3's Functional model using a Sequential block as a layer: Input(3), Dense "pre"(3),
// block = Sequential[Dense "hidden"(4, relu), Dense "mid"(4)], Dense "head"(2). Keras keeps
// the outer Dense layers at layers/dense and layers/dense_1, the block's at
// layers/sequential/layers/dense and .../dense_1.
std::string nested_config()
{
    return R"({"module": "keras", "class_name": "Functional", "config": {"name": "outer",
      "layers": [
        {"class_name": "InputLayer", "name": "x", "config": {"batch_shape": [null, 3],
         "name": "x"}, "inbound_nodes": []},)" +
           functional_layer("Dense", "pre", "x", R"(, "units": 3)") + R"(,
        {"module": "keras", "class_name": "Sequential", "name": "block", "config": {
           "name": "block", "layers": [
             {"class_name": "InputLayer", "config": {"batch_shape": [null, 3], "name": "bin"}},
             {"class_name": "Dense", "config": {"name": "hidden", "units": 4,
              "activation": "relu"}},
             {"class_name": "Dense", "config": {"name": "mid", "units": 4}}]},
         "inbound_nodes": [{"args": [)" +
           tensor("pre") + R"(], "kwargs": {}}]},)" +
           functional_layer("Dense", "head", "block", R"(, "units": 2)") + R"(],
      "input_layers": [["x", 0, 0]], "output_layers": [["head", 0, 0]]}})";
}

struct NestedWeights {
    Vec pre = numbers(9, 1.0f, -0.5f), pre_b = numbers(3, 0.2f, -0.1f);  // [3, 3], [3]
    Vec hid = numbers(12, 1.4f, -0.6f), hid_b = numbers(4, 0.3f, -0.1f); // [3, 4], [4]
    Vec mid = numbers(16, 1.1f, -0.5f), mid_b = numbers(4, 0.2f, 0.05f); // [4, 4], [4]
    Vec head = numbers(8, 1.3f, -0.7f), head_b = numbers(2, 0.1f, 0.0f); // [4, 2], [2]
    std::vector<H5Var> vars() const
    {
        return {{"layers/dense/vars/0", {3, 3}, pre},
                {"layers/dense/vars/1", {3}, pre_b},
                {"layers/sequential/layers/dense/vars/0", {3, 4}, hid},
                {"layers/sequential/layers/dense/vars/1", {4}, hid_b},
                {"layers/sequential/layers/dense_1/vars/0", {4, 4}, mid},
                {"layers/sequential/layers/dense_1/vars/1", {4}, mid_b},
                {"layers/dense_1/vars/0", {4, 2}, head},
                {"layers/dense_1/vars/1", {2}, head_b}};
    }
    // Keras's Dense: y[u] = sum_i x[i] * kernel[i][u] + bias[u].
    static Vec dense(const Vec& x, const Vec& k, const Vec& b, bool relu)
    {
        Vec y(b.size());
        for (std::size_t u = 0; u < b.size(); ++u) {
            float s = b[u];
            for (std::size_t i = 0; i < x.size(); ++i) s += x[i] * k[i * b.size() + u];
            y[u] = relu ? std::max(s, 0.0f) : s;
        }
        return y;
    }
    Vec logits(const Vec& x) const
    {
        return dense(dense(dense(dense(x, pre, pre_b, false), hid, hid_b, true), mid, mid_b, false),
                     head, head_b, false);
    }
};

// Keras 3's Sequential language model: Embedding(5, 3), LSTM(2), Dropout, LSTM(2) (one
// MixLab lstm of 2 layers), Dense(5) per time step.
const char* const k_lm_config = R"({"module": "keras", "class_name": "Sequential",
  "config": {"name": "lm", "layers": [
    {"class_name": "InputLayer", "config": {"batch_shape": [null, null], "name": "tokens"}},
    {"class_name": "Embedding", "config": {"name": "emb", "input_dim": 5, "output_dim": 3}},
    {"class_name": "LSTM", "config": {"name": "lstm", "units": 2, "return_sequences": true}},
    {"class_name": "Dropout", "config": {"name": "drop", "rate": 0.3}},
    {"class_name": "LSTM", "config": {"name": "lstm_1", "units": 2, "return_sequences": true}},
    {"class_name": "Dense", "config": {"name": "dense", "units": 5}}]}})";

struct LmWeights {
    Vec table = numbers(15, 1.6f, -0.8f); // [5, 3]
    Vec k1 = numbers(24, 1.0f, -0.5f), u1 = numbers(16, 0.8f, -0.4f), b1 = numbers(8, 0.4f, -0.1f);
    Vec k2 = numbers(16, 0.9f, -0.5f), u2 = numbers(16, 0.7f, -0.3f), b2 = numbers(8, 0.3f, 0.0f);
    Vec dense = numbers(10, 1.2f, -0.6f), dense_bias = numbers(5, 0.2f, -0.1f); // [2, 5], [5]
    std::vector<H5Var> vars() const
    {
        return {
            {"layers/embedding/vars/0", {5, 3}, table}, {"layers/lstm/cell/vars/0", {3, 8}, k1},
            {"layers/lstm/cell/vars/1", {2, 8}, u1},    {"layers/lstm/cell/vars/2", {8}, b1},
            {"layers/lstm_1/cell/vars/0", {2, 8}, k2},  {"layers/lstm_1/cell/vars/1", {2, 8}, u2},
            {"layers/lstm_1/cell/vars/2", {8}, b2},     {"layers/dense/vars/0", {2, 5}, dense},
            {"layers/dense/vars/1", {5}, dense_bias}};
    }
    // Keras's LSTM from a zero state: z = x K + h U + b split into gates i, f, c, o.
    static std::vector<Vec> lstm(const std::vector<Vec>& xs, const Vec& k, const Vec& u,
                                 const Vec& b)
    {
        const auto sigmoid = [](float v) { return 1.0f / (1.0f + std::exp(-v)); };
        const std::size_t in = xs[0].size(), h = 2;
        Vec hs(h, 0.0f), cs(h, 0.0f);
        std::vector<Vec> out;
        for (const Vec& x : xs) {
            Vec z(4 * h);
            for (std::size_t j = 0; j < 4 * h; ++j) {
                float s = b[j];
                for (std::size_t i = 0; i < in; ++i) s += x[i] * k[i * 4 * h + j];
                for (std::size_t i = 0; i < h; ++i) s += hs[i] * u[i * 4 * h + j];
                z[j] = s;
            }
            for (std::size_t j = 0; j < h; ++j) {
                cs[j] = sigmoid(z[h + j]) * cs[j] + sigmoid(z[j]) * std::tanh(z[2 * h + j]);
                hs[j] = sigmoid(z[3 * h + j]) * std::tanh(cs[j]);
            }
            out.push_back(hs);
        }
        return out;
    }
    Vec logits(const std::vector<int>& ids) const
    {
        std::vector<Vec> xs;
        for (int id : ids) xs.emplace_back(table.begin() + id * 3, table.begin() + id * 3 + 3);
        const std::vector<Vec> hs = lstm(lstm(xs, k1, u1, b1), k2, u2, b2);
        Vec y;
        for (const Vec& hv : hs)
            for (int c = 0; c < 5; ++c) {
                float s = dense_bias[c];
                for (int i = 0; i < 2; ++i) s += hv[i] * dense[i * 5 + c];
                y.push_back(s);
            }
        return y;
    }
};

// The imported model with its converted weights file loaded, evaluated on one sample.
Vec mixlab_logits(const KerasImport& imported, const Vec& x)
{
    const std::string file = keras_weights_file(imported);
    auto backend = make_backend(DeviceChoice::CPU);
    const Graph graph = build_graph(imported.spec, Shape{imported.input_shape, false}, 2);
    Network net(graph, Policy::FP32, OptimizerConfig{}, *backend, 1, 7);
    load_weights_bytes(net, file, "converted weights");
    backend->upload_f32(net.input(), x.data(), x.size());
    net.forward(1, false, 0);
    return download(*backend, net.logits());
}

} // namespace

class TestKerasArchive : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;

    std::string path(const char* name) const { return (m_dir.path() + "/" + name).toStdString(); }

    std::string archive(const char* name, const std::string& config, const std::vector<H5Var>& vars)
    {
        std::vector<std::pair<std::string, std::string>> members = {
            {"metadata.json", R"({"keras_version": "3.6.0"})"}, {"config.json", config}};
        if (!vars.empty()) members.emplace_back("model.weights.h5", h5_bytes(vars));
        write_zip(path(name), members);
        return path(name);
    }

private slots:
    void configOfAnArchiveImportsAsItsJson()
    {
        std::ifstream in(std::string(MIXLAB_SOURCE_DIR) + "/tests/data/keras/seed-mlp.keras3.json");
        const std::string json((std::istreambuf_iterator<char>(in)), {});
        const KerasImport from_json = import_keras_model(json);
        const KerasImport from_archive = load_keras_model(archive("seed.keras", json, {}));
        QVERIFY(from_archive.spec == from_json.spec);
        QCOMPARE(int(from_archive.policy), int(Policy::MixedFP16));
        QVERIFY(from_archive.weights_h5.empty());
        // Named otherwise, a zip is still read as one.
        const std::string renamed = path("seed.zip");
        QVERIFY(std::rename(path("seed.keras").c_str(), renamed.c_str()) == 0);
        QVERIFY(load_keras_model(renamed).spec == from_json.spec);
    }

    void mlpLogitsMatchTheHandComputedOnes()
    {
        const MlpWeights w;
        const KerasImport imported = load_keras_model(archive("mlp.keras", k_mlp_config, w.vars()));
        QVERIFY(!imported.weights_h5.empty());
        for (const Vec& x : {Vec{0.3f, -1.2f, 0.8f}, Vec{1.0f, 0.5f, -0.25f}}) {
            const Vec want = w.logits(x), got = mixlab_logits(imported, x);
            QCOMPARE(got.size(), want.size());
            for (std::size_t i = 0; i < want.size(); ++i)
                QVERIFY2(std::abs(got[i] - want[i]) < 1e-5f,
                         qPrintable(QString("logit %1: %2 vs %3").arg(i).arg(got[i]).arg(want[i])));
        }
    }

    void convLogitsMatchTheHandComputedOnes()
    {
        const ConvWeights w;
        const KerasImport imported =
            load_keras_model(archive("conv.keras", conv_config(), w.vars()));
        QCOMPARE(imported.model_class, std::string("Functional"));
        const Vec x = numbers(18, 2.0f, -1.0f);
        const Vec want = w.logits(x), got = mixlab_logits(imported, x);
        for (std::size_t i = 0; i < want.size(); ++i)
            QVERIFY2(std::abs(got[i] - want[i]) < 1e-4f,
                     qPrintable(QString("logit %1: %2 vs %3").arg(i).arg(got[i]).arg(want[i])));
        // The file is PyTorch's: the dense after the flatten of 2 channels reads CHW.
        const SafetensorsFile file = decode_safetensors(keras_weights_file(imported), "w");
        const SafeTensor* dense = file.find("3.weight");
        QVERIFY(dense);
        QCOMPARE(shape_text(dense->shape), std::string("[2, 8]"));
        float first_row_second;
        std::memcpy(&first_row_second, dense->data.data() + 4, 4);
        // PyTorch feature 1 is channel 0 at pixel 1: Keras's flat feature (0*2+1)*2+0 = 2.
        QCOMPARE(first_row_second, w.dense[2 * 2 + 0]);
        QVERIFY(file.find("1.running_var"));
    }

    void badArchivesAreRefused_data()
    {
        QTest::addColumn<QString>("file");
        QTest::addColumn<QString>("fragment");
        QTest::newRow("not a zip") << "text.keras"
                                   << "is not a whole zip archive";
        QTest::newRow("truncated") << "cut.keras"
                                   << "is not a whole zip archive";
        QTest::newRow("no config.json") << "noconfig.keras"
                                        << "holds no config.json";
        QTest::newRow("bad config") << "badconfig.keras"
                                    << "config.json: the Keras model is not valid JSON";
        QTest::newRow("unsupported layer")
            << "lstm.keras"
            << "config.json: layer \"l\" (GRU): MixLab has no equivalent";
        QTest::newRow("missing") << "none.keras"
                                 << "cannot read Keras archive";
    }

    void badArchivesAreRefused()
    {
        QFETCH(QString, file);
        QFETCH(QString, fragment);
        {
            std::ofstream(path("text.keras")) << "{\"class_name\": \"Sequential\"}";
        }
        const std::string whole = archive("whole.keras", k_mlp_config, MlpWeights().vars());
        std::ifstream in(whole, std::ios::binary);
        const std::string bytes((std::istreambuf_iterator<char>(in)), {});
        std::ofstream(path("cut.keras"), std::ios::binary) << bytes.substr(0, bytes.size() / 2);
        write_zip(path("noconfig.keras"), {{"metadata.json", "{}"}});
        write_zip(path("badconfig.keras"), {{"config.json", "{\"class_name\": "}});
        write_zip(path("lstm.keras"),
                  {{"config.json", R"({"class_name": "Sequential", "config": {"layers": [
                       {"class_name": "GRU", "config": {"name": "l", "units": 3}}]}})"}});
        const QString message = QString::fromStdString(thrown_message<InputError>(
            [&] { (void)load_keras_model(path(file.toUtf8().constData())); }));
        QVERIFY2(message.contains(fragment), qPrintable(message));
    }

    void badWeightsAreRefusedByName_data()
    {
        QTest::addColumn<int>("drop");    // a variable left out (-1: none)
        QTest::addColumn<int>("reshape"); // a variable given another shape (-1: none)
        QTest::addColumn<QString>("fragment");
        QTest::newRow("missing layer") << -2 << -1
                                       << "Keras layer 'dense_1' has no variables (no group "
                                          "layers/dense_1/vars";
        QTest::newRow("missing bias") << 1 << -1 << "Keras layer 'dense' has 1 variables";
        QTest::newRow("wrong shape")
            << -1 << 0
            << "Keras layer 'dense' variable 0 (kernel) has shape [4, 3], the model's config "
               "gives [3, 4]";
        QTest::newRow("no weights") << -3 << -1 << "came without weights";
    }

    void badWeightsAreRefusedByName()
    {
        QFETCH(int, drop);
        QFETCH(int, reshape);
        QFETCH(QString, fragment);
        std::vector<H5Var> vars = MlpWeights().vars();
        if (drop == -2) vars.resize(2);
        if (drop >= 0) vars.erase(vars.begin() + drop);
        if (reshape >= 0) vars[std::size_t(reshape)].shape = {4, 3};
        if (drop == -3) vars.clear();
        const KerasImport imported = load_keras_model(archive("w.keras", k_mlp_config, vars));
        const QString message = QString::fromStdString(
            thrown_message<InputError>([&] { (void)keras_weights_file(imported); }));
        QVERIFY2(message.contains(fragment), qPrintable(message));
    }

    void lstmLogitsMatchTheHandComputedOnes()
    {
        const LmWeights w;
        const KerasImport imported = load_keras_model(archive("lm.keras", k_lm_config, w.vars()));
        QCOMPARE(imported.spec.layers.size(), std::size_t(3));
        QCOMPARE(imported.spec.layers[1].num_layers, 2);
        const std::vector<int> ids = {3, 0, 4, 1};
        auto backend = make_backend(DeviceChoice::CPU);
        const Graph graph = build_graph(imported.spec, Shape::tokens(), 5);
        Network net(graph, Policy::FP32, OptimizerConfig{}, *backend, 1, int(ids.size()), 7);
        load_weights_bytes(net, keras_weights_file(imported), "converted weights");
        const std::vector<std::int32_t> tokens(ids.begin(), ids.end());
        backend->upload_raw(net.input(), tokens.data(), tokens.size() * 4);
        net.reset_state();
        net.forward(1, false, 0);
        const Vec got = download(*backend, net.logits()), want = w.logits(ids);
        QCOMPARE(got.size(), want.size());
        for (std::size_t i = 0; i < want.size(); ++i)
            QVERIFY2(std::abs(got[i] - want[i]) < 1e-5f,
                     qPrintable(QString("logit %1: %2 vs %3").arg(i).arg(got[i]).arg(want[i])));
        // A stacked layer's weights missing: named by its Keras layer.
        std::vector<H5Var> vars = w.vars();
        vars.erase(vars.begin() + 5);
        const KerasImport broken = load_keras_model(archive("lm-broken.keras", k_lm_config, vars));
        const QString message = QString::fromStdString(
            thrown_message<InputError>([&] { (void)keras_weights_file(broken); }));
        QVERIFY2(
            message.contains("Keras layer 'lstm_1' has 2 variables in layers/lstm_1/cell/vars"),
            qPrintable(message));
    }

    // A nested model's weights come from its own group, each layer's by class and
    // position: the logits are those computed by hand, and a missing variable is named by
    // the layer's path and the group Keras would have written.
    void nestedModelLogitsMatchTheHandComputedOnes()
    {
        const NestedWeights w;
        const KerasImport imported =
            load_keras_model(archive("nested.keras", nested_config(), w.vars()));
        QCOMPARE(imported.spec.layers.size(), std::size_t(4));
        for (const Vec& x : {Vec{0.3f, -1.2f, 0.8f}, Vec{1.0f, 0.5f, -0.25f}}) {
            const Vec want = w.logits(x), got = mixlab_logits(imported, x);
            QCOMPARE(got.size(), want.size());
            for (std::size_t i = 0; i < want.size(); ++i)
                QVERIFY2(std::abs(got[i] - want[i]) < 1e-5f,
                         qPrintable(QString("logit %1: %2 vs %3").arg(i).arg(got[i]).arg(want[i])));
        }
        std::vector<H5Var> vars = w.vars();
        vars.erase(vars.begin() + 4, vars.begin() + 6);
        const KerasImport broken =
            load_keras_model(archive("nested-broken.keras", nested_config(), vars));
        const QString message = QString::fromStdString(
            thrown_message<InputError>([&] { (void)keras_weights_file(broken); }));
        QVERIFY2(message.contains("Keras layer 'block/mid' has no variables (no group "
                                  "layers/sequential/layers/dense_1/vars"),
                 qPrintable(message));
    }

    // tf.keras 2.13-2.15 wrote .keras archives too, with the weights in another layout:
    // refused by the version metadata.json gives, before anything is converted.
    void keras2ArchivesAreRefusedByVersion()
    {
        write_zip(path("k213.keras"), {{"metadata.json", R"({"keras_version": "2.13.1"})"},
                                       {"config.json", k_mlp_config},
                                       {"model.weights.h5", h5_bytes(MlpWeights().vars())}});
        const QString message = QString::fromStdString(
            thrown_message<InputError>([&] { (void)load_keras_model(path("k213.keras")); }));
        QVERIFY2(message.contains("was written by Keras 2.13.1") &&
                     message.contains("MixLab reads .keras archives written by Keras 3"),
                 qPrintable(message));
        QVERIFY(!message.contains('\n'));
    }

    // The command line end to end: the spec and the weights written, then trained from.
    void cliImportsAndTrainingLoadsTheWeights()
    {
        const char* config = R"({"module": "keras", "class_name": "Sequential",
          "config": {"name": "synth", "layers": [
            {"class_name": "InputLayer", "config": {"batch_shape": [null, 32, 32, 3],
             "name": "input_layer"}},
            {"class_name": "Flatten", "config": {"name": "flatten"}},
            {"class_name": "Dense", "config": {"name": "dense", "units": 10}}]}})";
        const std::string keras =
            archive("synth.keras", config,
                    {{"layers/dense/vars/0", {3072, 10}, numbers(30720, 0.02f, -0.01f)},
                     {"layers/dense/vars/1", {10}, numbers(10, 0.1f, 0.0f)}});
        const QString spec = QString::fromStdString(path("synth.json"));
        const QString weights = QString::fromStdString(path("synth.safetensors"));
        auto run = [](const QStringList& args) {
            QProcess p;
            p.start(QStringLiteral(MIXLAB_CLI_PATH), args);
            p.waitForFinished(120000);
            return std::pair{p.exitCode(),
                             QString(p.readAllStandardOutput() + p.readAllStandardError())};
        };
        auto [code, out] =
            run({"import", QString::fromStdString(keras), "-o", spec, "--weights-out", weights});
        QVERIFY2(code == 0, qPrintable(out));
        QVERIFY2(out.contains("--load-weights " + weights), qPrintable(out));
        std::tie(code, out) =
            run({"train", "--model", spec, "--load-weights", weights, "--dataset", "synthetic",
                 "--synthetic-size", "32", "--steps", "1", "--batch", "16", "--device", "cpu"});
        QVERIFY2(code == 0, qPrintable(out));
        // Weights asked of a JSON model: refused, and no spec written beside.
        std::ofstream(path("plain.json")) << config;
        QFile::remove(spec);
        std::tie(code, out) = run({"import", QString::fromStdString(path("plain.json")), "-o", spec,
                                   "--weights-out", weights});
        QCOMPARE(code, 2);
        QVERIFY2(out.contains("came without weights"), qPrintable(out));
        QVERIFY(!QFile::exists(spec));
    }

    // Keras's "same" with a stride of 2 pads an even input only at the bottom and right:
    // with weights, that conv would compute other windows in MixLab, so it is refused; an
    // odd input pads evenly in both and is converted.
    void strideTwoSameOnAnEvenInputIsRefused()
    {
        const auto config = [](int side) {
            return R"({"class_name": "Sequential", "config": {"name": "s", "layers": [
              {"class_name": "InputLayer", "config": {"batch_shape": [null, )" +
                   std::to_string(side) + ", " + std::to_string(side) + R"(, 1], "name": "in"}},
              {"class_name": "Conv2D", "config": {"name": "conv", "filters": 1,
               "kernel_size": [3, 3], "strides": [2, 2], "padding": "same"}},
              {"class_name": "Flatten", "config": {"name": "flat"}},
              {"class_name": "Dense", "config": {"name": "out", "units": 2}}]}})";
        };
        const auto vars = [](int out_side) {
            const std::uint64_t n = std::uint64_t(out_side * out_side);
            return std::vector<H5Var>{
                {"layers/conv2d/vars/0", {3, 3, 1, 1}, numbers(9, 1.0f, 0.0f)},
                {"layers/conv2d/vars/1", {1}, {0.1f}},
                {"layers/dense/vars/0", {n, 2}, numbers(2 * n, 1.0f, -0.5f)},
                {"layers/dense/vars/1", {2}, {0.0f, 0.0f}}};
        };
        const KerasImport even = load_keras_model(archive("even.keras", config(4), vars(2)));
        const QString message = QString::fromStdString(
            thrown_message<InputError>([&] { (void)keras_weights_file(even); }));
        QVERIFY2(message.contains("Keras layer 'conv': \"padding\": \"same\" on a 4x4x1 input "
                                  "with stride 2x2 pads more at the bottom and right"),
                 qPrintable(message));
        const KerasImport odd = load_keras_model(archive("odd.keras", config(5), vars(3)));
        QVERIFY(!keras_weights_file(odd).empty());
    }

    void weightsThatAreNotHdf5AreRefused()
    {
        write_zip(path("nothdf5.keras"),
                  {{"config.json", k_mlp_config}, {"model.weights.h5", "not hdf5 at all"}});
        const KerasImport imported = load_keras_model(path("nothdf5.keras"));
        const QString message = QString::fromStdString(
            thrown_message<InputError>([&] { (void)keras_weights_file(imported); }));
        QVERIFY2(message.contains("is not an HDF5 file"), qPrintable(message));
        // Cut short: the signature is there, the rest is not.
        std::string h5 = h5_bytes(MlpWeights().vars());
        write_zip(path("cuth5.keras"),
                  {{"config.json", k_mlp_config}, {"model.weights.h5", h5.substr(0, 300)}});
        const QString cut = QString::fromStdString(thrown_message<InputError>(
            [&] { (void)keras_weights_file(load_keras_model(path("cuth5.keras"))); }));
        QVERIFY2(!cut.isEmpty(), "a truncated model.weights.h5 was read");
    }
};

QTEST_GUILESS_MAIN(TestKerasArchive)
#include "tst_keras_archive.moc"
