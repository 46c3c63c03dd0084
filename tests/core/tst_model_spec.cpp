// Tests for the `mixlab-model/1` format: valid and invalid specs with the messages a
// user sees, writing and reading back, loading files and the shipped presets.
#include "mixlab/error.h"
#include "mixlab/model_spec.h"

#include <QtTest/QtTest>

#include <QDir>
#include <QFile>
#include <QTemporaryDir>

#include <algorithm>
#include <bit>
#include <cmath>
#include <fstream>
#include <random>
#include <sstream>
#include <string>

using namespace mixlab;

namespace {

std::string describe(const LayerSpec& l);

std::string describe_list(const std::vector<LayerSpec>& layers)
{
    std::string out;
    for (const auto& l : layers) out += (out.empty() ? "" : "; ") + describe(l);
    return out;
}

// One line per layer, every field its type uses: two specs are equal exactly when these
// match.
std::string describe(const LayerSpec& l)
{
    std::ostringstream s;
    s << layer_type_name(l.type);
    auto window = [&](const char* size) {
        s << " " << size << "=" << l.kernel_h << "x" << l.kernel_w << " stride=" << l.stride_h
          << "x" << l.stride_w << " pad=";
        if (l.padding == Padding::Explicit)
            s << l.pad_h << "x" << l.pad_w;
        else
            s << padding_name(l.padding);
    };
    switch (l.type) {
    case LayerType::Flatten: break;
    case LayerType::Dense:
        s << " units=";
        if (l.units == k_units_classes)
            s << "classes";
        else if (l.units == k_units_vocab)
            s << "vocab";
        else
            s << l.units;
        s << " act=" << activation_name(l.activation) << " bias=" << l.use_bias;
        if (l.tie_weights) s << " tied";
        break;
    case LayerType::Activation: s << " act=" << activation_name(l.activation); break;
    case LayerType::Dropout: s << " rate=" << l.rate; break;
    case LayerType::Conv2D:
        s << " filters=" << l.filters;
        window("kernel");
        s << " act=" << activation_name(l.activation) << " bias=" << l.use_bias;
        break;
    case LayerType::BatchNorm: s << " momentum=" << l.momentum << " eps=" << l.epsilon; break;
    case LayerType::MaxPool2D:
    case LayerType::AvgPool2D: window("pool"); break;
    case LayerType::GlobalAvgPool: break;
    case LayerType::Residual:
        s << " act=" << activation_name(l.activation) << " body{" << describe_list(l.body)
          << "} shortcut{" << describe_list(l.shortcut) << "}";
        break;
    case LayerType::Embedding:
        s << " vocab=";
        if (l.vocab == k_vocab_dataset)
            s << "dataset";
        else
            s << l.vocab;
        s << " dim=" << l.dim;
        break;
    case LayerType::Lstm:
        s << " hidden=" << l.hidden << " layers=" << l.num_layers << " dropout=" << l.rate;
        break;
    }
    if (l.force_fp32) s << " fp32";
    return s.str();
}

std::string describe(const ModelSpec& spec)
{
    std::string out = spec.name + ":";
    for (const auto& l : spec.layers) out += " [" + describe(l) + "]";
    return out;
}

bool same_bits(float a, float b)
{
    return std::bit_cast<std::uint32_t>(a) == std::bit_cast<std::uint32_t>(b);
}

bool same(const LayerSpec& a, const LayerSpec& b);

bool same(const std::vector<LayerSpec>& a, const std::vector<LayerSpec>& b)
{
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (!same(a[i], b[i])) return false;
    return true;
}

// Field-by-field equality (LayerSpec's operator==, which covers every field, including
// those the layer type does not use), plus the floats' exact bits.
bool same(const LayerSpec& a, const LayerSpec& b)
{
    return a == b && same_bits(a.rate, b.rate) && same_bits(a.momentum, b.momentum) &&
           same_bits(a.epsilon, b.epsilon) && same(a.body, b.body) && same(a.shortcut, b.shortcut);
}

bool same(const ModelSpec& a, const ModelSpec& b)
{
    return a.name == b.name && same(a.layers, b.layers);
}

int uniform(std::mt19937& rng, int lo, int hi)
{
    return std::uniform_int_distribution<int>(lo, hi)(rng);
}

bool coin(std::mt19937& rng) { return uniform(rng, 0, 1) == 1; }

// A window as the parser can produce it: each side 1..64 (often square), stride absent or
// 1..64, padding valid, same (odd sizes only) or explicit 0..64.
void random_window(std::mt19937& rng, LayerSpec& l)
{
    l.kernel_h = uniform(rng, 1, 64);
    l.kernel_w = coin(rng) ? l.kernel_h : uniform(rng, 1, 64);
    if (coin(rng)) {
        l.stride_h = uniform(rng, 1, 64);
        l.stride_w = coin(rng) ? l.stride_h : uniform(rng, 1, 64);
    }
    switch (uniform(rng, 0, 2)) {
    case 0: break;
    case 1:
        l.padding = Padding::Same;
        l.kernel_h |= 1;
        l.kernel_w = std::min(l.kernel_w | 1, 63);
        l.kernel_h = std::min(l.kernel_h, 63);
        break;
    default:
        l.padding = Padding::Explicit;
        l.pad_h = uniform(rng, 0, 64);
        l.pad_w = coin(rng) ? l.pad_h : uniform(rng, 0, 64);
        break;
    }
}

std::vector<LayerSpec> random_layers(std::mt19937& rng, int min_n, int max_n, int depth)
{
    const Activation acts[] = {Activation::None, Activation::Relu, Activation::Sigmoid,
                               Activation::Tanh, Activation::Gelu, Activation::Softmax};
    std::uniform_real_distribution<float> unit(0.0f, 1.0f);
    std::vector<LayerSpec> layers;
    const int n = uniform(rng, min_n, max_n);
    for (int i = 0; i < n; ++i) {
        LayerSpec l;
        // No residual blocks below depth 2, so the specs stay small.
        l.type = LayerType(uniform(rng, 0, depth < 2 ? 9 : 8));
        switch (l.type) {
        case LayerType::Flatten:
        case LayerType::GlobalAvgPool: break;
        case LayerType::Dense:
            l.units = coin(rng)   ? uniform(rng, 1, 1000000)
                      : coin(rng) ? k_units_classes
                                  : k_units_vocab;
            l.activation = acts[uniform(rng, 0, 5)];
            l.use_bias = coin(rng);
            l.tie_weights = coin(rng);
            break;
        case LayerType::Activation: l.activation = acts[uniform(rng, 0, 5)]; break;
        case LayerType::Dropout: l.rate = std::min(unit(rng), std::nextafter(1.0f, 0.0f)); break;
        case LayerType::Conv2D:
            l.filters = uniform(rng, 1, 65536);
            random_window(rng, l);
            l.activation = acts[uniform(rng, 0, 4)]; // no softmax on a convolution
            l.use_bias = coin(rng);
            break;
        case LayerType::BatchNorm:
            if (coin(rng)) l.momentum = coin(rng) ? unit(rng) : float(uniform(rng, 0, 1));
            if (coin(rng)) l.epsilon = std::pow(10.0f, -8.0f * unit(rng)) * (0.5f + unit(rng));
            break;
        case LayerType::MaxPool2D:
        case LayerType::AvgPool2D: random_window(rng, l); break;
        case LayerType::Residual:
            l.activation = coin(rng) ? Activation::Relu : Activation::None;
            l.body = random_layers(rng, 1, 3, depth + 1);
            l.shortcut = random_layers(rng, 0, 2, depth + 1);
            break;
        case LayerType::Embedding:
        case LayerType::Lstm: break; // drawn below
        }
        // The sequence layers, as often as one of the others.
        if (uniform(rng, 0, 10) == 0) {
            l = LayerSpec{};
            if (coin(rng)) {
                l.type = LayerType::Embedding;
                l.vocab = coin(rng) ? uniform(rng, 1, 1000000) : k_vocab_dataset;
                l.dim = uniform(rng, 1, 1000000);
            } else {
                l.type = LayerType::Lstm;
                l.hidden = uniform(rng, 1, 1000000);
                l.num_layers = uniform(rng, 1, 16);
                if (coin(rng)) l.rate = std::min(unit(rng), std::nextafter(1.0f, 0.0f));
            }
        }
        l.force_fp32 = coin(rng);
        layers.push_back(l);
    }
    return layers;
}

std::string read_file(const QString& path)
{
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) return {};
    return f.readAll().toStdString();
}

void write_file(const QString& path, const std::string& text)
{
    std::ofstream out(path.toStdString(), std::ios::binary);
    out << text;
}

QString models_dir() { return QStringLiteral(MIXLAB_SOURCE_DIR "/resources/models"); }

// A spec wrapper: `layers` is the JSON text of the layer list.
QByteArray with_layers(const char* layers)
{
    return QByteArray(R"({"format": "mixlab-model/1", "name": "t", "layers": )") + layers + "}";
}

// Five valid layers before the one under test, so the index in messages is checked too.
QByteArray at_layer_5(const char* layer)
{
    return with_layers((std::string(R"([{"type": "flatten"}, {"type": "dense", "units": 8},
        {"type": "dropout", "rate": 0.1}, {"type": "activation", "activation": "relu"},
        {"type": "dense", "units": 4}, )") +
                        layer + "]")
                           .c_str());
}

} // namespace

class TestModelSpec : public QObject {
    Q_OBJECT

private slots:
    void names()
    {
        QCOMPARE(layer_type_name(LayerType::Flatten), std::string_view("flatten"));
        QCOMPARE(layer_type_name(LayerType::Dense), std::string_view("dense"));
        QCOMPARE(layer_type_name(LayerType::Activation), std::string_view("activation"));
        QCOMPARE(layer_type_name(LayerType::Dropout), std::string_view("dropout"));
        QCOMPARE(activation_name(Activation::None), std::string_view("linear"));
        QCOMPARE(activation_name(Activation::Relu), std::string_view("relu"));
        QCOMPARE(activation_name(Activation::Sigmoid), std::string_view("sigmoid"));
        QCOMPARE(activation_name(Activation::Tanh), std::string_view("tanh"));
        QCOMPARE(activation_name(Activation::Gelu), std::string_view("gelu"));
        QCOMPARE(activation_name(Activation::Softmax), std::string_view("softmax"));
        QCOMPARE(layer_type_name(LayerType::Conv2D), std::string_view("conv2d"));
        QCOMPARE(layer_type_name(LayerType::BatchNorm), std::string_view("batchnorm"));
        QCOMPARE(layer_type_name(LayerType::MaxPool2D), std::string_view("maxpool2d"));
        QCOMPARE(layer_type_name(LayerType::AvgPool2D), std::string_view("avgpool2d"));
        QCOMPARE(layer_type_name(LayerType::GlobalAvgPool), std::string_view("global_avgpool"));
        QCOMPARE(layer_type_name(LayerType::Residual), std::string_view("residual"));
        QCOMPARE(padding_name(Padding::Valid), std::string_view("valid"));
        QCOMPARE(padding_name(Padding::Same), std::string_view("same"));
        QCOMPARE(padding_name(Padding::Explicit), std::string_view("explicit"));
    }

    void valid_data()
    {
        QTest::addColumn<QByteArray>("json");
        QTest::addColumn<QString>("expected");
        QTest::addRow("FORMATS.md's seed MLP")
            << QByteArray(R"({
            "format": "mixlab-model/1",
            "name": "seed-mlp",
            "layers": [
              {"type": "flatten"},
              {"type": "dense", "units": 3000, "activation": "relu"},
              {"type": "dense", "units": 1000, "activation": "relu"},
              {"type": "dense", "units": 10},
              {"type": "activation", "activation": "sigmoid", "dtype": "float32"}
            ]})")
            << "seed-mlp: [flatten] [dense units=3000 act=relu bias=1] "
               "[dense units=1000 act=relu bias=1] [dense units=10 act=linear bias=1] "
               "[activation act=sigmoid fp32]";
        QTest::addRow("dense defaults") << with_layers(R"([{"type": "dense", "units": 5}])")
                                        << "t: [dense units=5 act=linear bias=1]";
        QTest::addRow("dense, every field")
            << with_layers(
                   R"([{"type": "dense", "units": 7, "activation": "gelu", "use_bias": false, "dtype": "float32", "name": "d"}])")
            << "t: [dense units=7 act=gelu bias=0 fp32]";
        QTest::addRow("explicit linear, bias true")
            << with_layers(
                   R"([{"activation": "linear", "use_bias": true, "units": 1000000, "type": "dense"}])")
            << "t: [dense units=1000000 act=linear bias=1]";
        QTest::addRow("every activation layer")
            << with_layers(R"([{"type": "activation", "activation": "relu"},
                {"type": "activation", "activation": "sigmoid"}, {"type": "activation", "activation": "tanh"},
                {"type": "activation", "activation": "gelu"}, {"type": "activation", "activation": "softmax"},
                {"type": "activation", "activation": "linear"}])")
            << "t: [activation act=relu] [activation act=sigmoid] [activation act=tanh] "
               "[activation act=gelu] [activation act=softmax] [activation act=linear]";
        QTest::addRow("dropout rates")
            << with_layers(R"([{"type": "dropout", "rate": 0},
                {"type": "dropout", "rate": 0.5, "name": "drop"}, {"type": "dropout", "rate": 0.999}])")
            << "t: [dropout rate=0] [dropout rate=0.5] [dropout rate=0.999]";
        QTest::addRow("layer names are ignored")
            << with_layers(R"([{"type": "flatten", "name": "in"}])") << "t: [flatten]";
        QTest::addRow("no model name")
            << QByteArray(R"({"layers": [{"type": "flatten"}], "format": "mixlab-model/1"})")
            << ": [flatten]";
        QTest::addRow("unicode name")
            << QByteArray(R"({"format": "mixlab-model/1", "name": "r\u00e9seau", "layers": []})")
            << "r\u00e9seau:";
        QTest::addRow("empty layer list parses (build_graph rejects it)")
            << with_layers("[]") << "t:";
        QTest::addRow("dense with units classes")
            << with_layers(R"([{"type": "dense", "units": "classes", "activation": "softmax"}])")
            << "t: [dense units=classes act=softmax bias=1]";
        // Convolution and pooling windows.
        QTest::addRow("conv2d defaults")
            << with_layers(R"([{"type": "conv2d", "filters": 8, "kernel": 3}])")
            << "t: [conv2d filters=8 kernel=3x3 stride=0x0 pad=valid act=linear bias=1]";
        QTest::addRow("conv2d, every field")
            << with_layers(
                   R"([{"type": "conv2d", "filters": 16, "kernel": [3, 5], "stride": [1, 2], "padding": [1, 2],
                "activation": "relu", "use_bias": false, "dtype": "float32", "name": "c"}])")
            << "t: [conv2d filters=16 kernel=3x5 stride=1x2 pad=1x2 act=relu bias=0 fp32]";
        QTest::addRow("conv2d at the upper bounds")
            << with_layers(
                   R"([{"type": "conv2d", "filters": 65536, "kernel": [63, 1], "stride": 64, "padding": "same"},
                {"type": "conv2d", "filters": 1, "kernel": 64, "padding": [64, 0]}])")
            << "t: [conv2d filters=65536 kernel=63x1 stride=64x64 pad=same act=linear bias=1] "
               "[conv2d filters=1 kernel=64x64 stride=0x0 pad=64x0 act=linear bias=1]";
        QTest::addRow("conv2d paddings valid and 0")
            << with_layers(
                   R"([{"type": "conv2d", "filters": 1, "kernel": 2, "padding": "valid", "activation": "gelu"},
                {"type": "conv2d", "filters": 1, "kernel": 2, "padding": 0, "activation": "linear"}])")
            << "t: [conv2d filters=1 kernel=2x2 stride=0x0 pad=valid act=gelu bias=1] "
               "[conv2d filters=1 kernel=2x2 stride=0x0 pad=0x0 act=linear bias=1]";
        QTest::addRow("pooling")
            << with_layers(
                   R"([{"type": "maxpool2d", "pool_size": 2}, {"type": "avgpool2d", "pool_size": [3, 1], "stride": 1, "padding": [1, 0]},
                {"type": "maxpool2d", "pool_size": 3, "stride": [2, 1], "padding": "same", "dtype": "float32"}, {"type": "global_avgpool"}])")
            << "t: [maxpool2d pool=2x2 stride=0x0 pad=valid] [avgpool2d pool=3x1 stride=1x1 "
               "pad=1x0] "
               "[maxpool2d pool=3x3 stride=2x1 pad=same fp32] [global_avgpool]";
        // Batch norm.
        QTest::addRow("batchnorm")
            << with_layers(
                   R"([{"type": "batchnorm"}, {"type": "batchnorm", "momentum": 0.01, "epsilon": 0.001},
                {"type": "batchnorm", "momentum": 0, "epsilon": 1e-30}, {"type": "batchnorm", "momentum": 1}])")
            << "t: [batchnorm momentum=0.1 eps=1e-05] [batchnorm momentum=0.01 eps=0.001] "
               "[batchnorm momentum=0 eps=1e-30] [batchnorm momentum=1 eps=1e-05]";
        // Residual blocks.
        QTest::addRow("residual, identity shortcut")
            << with_layers(
                   R"([{"type": "residual", "body": [{"type": "batchnorm"}, {"type": "activation", "activation": "relu"}]},
                {"type": "residual", "body": [{"type": "flatten"}], "shortcut": [], "activation": "linear"}])")
            << "t: [residual act=linear body{batchnorm momentum=0.1 eps=1e-05; activation "
               "act=relu} shortcut{}] "
               "[residual act=linear body{flatten} shortcut{}]";
        QTest::addRow("residual, projection and relu")
            << with_layers(R"([{"type": "residual", "activation": "relu", "dtype": "float32",
                "body": [{"type": "conv2d", "filters": 8, "kernel": 3, "stride": 2, "padding": "same"}],
                "shortcut": [{"type": "conv2d", "filters": 8, "kernel": 1, "stride": 2, "use_bias": false}, {"type": "batchnorm"}]}])")
            << "t: [residual act=relu body{conv2d filters=8 kernel=3x3 stride=2x2 pad=same "
               "act=linear bias=1} "
               "shortcut{conv2d filters=8 kernel=1x1 stride=2x2 pad=valid act=linear bias=0; "
               "batchnorm momentum=0.1 eps=1e-05} fp32]";
        QTest::addRow("language model, defaults")
            << with_layers(R"([{"type": "embedding", "dim": 200}, {"type": "lstm", "hidden": 200},
                {"type": "dense", "units": "vocab"}])")
            << "t: [embedding vocab=dataset dim=200] [lstm hidden=200 layers=1 dropout=0] "
               "[dense units=vocab act=linear bias=1]";
        QTest::addRow("language model, every field")
            << with_layers(
                   R"([{"type": "embedding", "vocab": 33278, "dim": 650, "dtype": "float32"},
                {"type": "lstm", "hidden": 650, "layers": 2, "dropout": 0.5},
                {"type": "dense", "units": "vocab", "tie_weights": true, "use_bias": false}])")
            << "t: [embedding vocab=33278 dim=650 fp32] [lstm hidden=650 layers=2 dropout=0.5] "
               "[dense units=vocab act=linear bias=0 tied]";
        QTest::addRow("tie_weights false, embedding vocab dataset")
            << with_layers(R"([{"type": "embedding", "vocab": "dataset", "dim": 1},
                {"type": "dense", "units": 3, "tie_weights": false}])")
            << "t: [embedding vocab=dataset dim=1] [dense units=3 act=linear bias=1]";
        QTest::addRow("nested residual")
            << with_layers(
                   R"([{"type": "residual", "body": [{"type": "residual", "body": [{"type": "global_avgpool"}],
                "shortcut": [{"type": "dense", "units": "classes"}]}]}])")
            << "t: [residual act=linear body{residual act=linear body{global_avgpool} "
               "shortcut{dense units=classes act=linear bias=1}} shortcut{}]";
    }
    void valid()
    {
        QFETCH(QByteArray, json);
        QFETCH(QString, expected);
        try {
            const ModelSpec spec = parse_model_spec(json.toStdString());
            QCOMPARE(QString::fromStdString(describe(spec)), expected);
            // Whatever parses must also write and read back to the same spec.
            QVERIFY(same(parse_model_spec(model_spec_to_json(spec)), spec));
        } catch (const std::exception& e) {
            QFAIL(e.what());
        }
    }

    void invalid_data()
    {
        QTest::addColumn<QByteArray>("json");
        QTest::addColumn<QStringList>("fragments");
        // The format and the document.
        QTest::addRow("malformed JSON")
            << QByteArray("{\"format\": \"mixlab-model/1\",\n \"layers\": [}")
            << QStringList{"not valid JSON", "line 2, column"};
        QTest::addRow("empty text") << QByteArray("") << QStringList{"not valid JSON"};
        QTest::addRow("trailing garbage")
            << QByteArray(R"({"format": "mixlab-model/1", "layers": []} x)")
            << QStringList{"not valid JSON", "column"};
        QTest::addRow("not an object")
            << QByteArray("[1, 2]") << QStringList{"must be a JSON object", "[1,2]"};
        QTest::addRow("missing format") << QByteArray(R"({"layers": []})")
                                        << QStringList{"no \"format\"", "\"mixlab-model/1\""};
        QTest::addRow("newer format")
            << QByteArray(R"({"format": "mixlab-model/2", "layers": []})")
            << QStringList{"\"mixlab-model/2\"", "newer MixLab", "reads \"mixlab-model/1\""};
        QTest::addRow("run config given as a model")
            << QByteArray(R"({"format": "mixlab-run/1", "layers": []})")
            << QStringList{"run config", "not a model spec"};
        QTest::addRow("format not a string")
            << QByteArray(R"({"format": 1, "layers": []})")
            << QStringList{"\"format\" must be the string \"mixlab-model/1\", got 1"};
        QTest::addRow("foreign format")
            << QByteArray(R"({"format": "keras", "layers": []})")
            << QStringList{"\"format\" must be \"mixlab-model/1\", got \"keras\""};
        QTest::addRow("unknown top-level field")
            << QByteArray(R"({"format": "mixlab-model/1", "layer": []})")
            << QStringList{"unknown field \"layer\"", "did you mean \"layers\"?",
                           "format, name, layers"};
        QTest::addRow("missing layers")
            << QByteArray(R"({"format": "mixlab-model/1"})") << QStringList{"no \"layers\""};
        QTest::addRow("layers not a list")
            << with_layers("{}") << QStringList{"\"layers\" must be a list"};
        QTest::addRow("model name not a string")
            << QByteArray(R"({"format": "mixlab-model/1", "name": 5, "layers": []})")
            << QStringList{"\"name\" must be a string, got 5"};
        // Layer types.
        QTest::addRow("layer not an object") << with_layers(R"([{"type": "flatten"}, 5])")
                                             << QStringList{"layer 1: must be an object", "got 5"};
        QTest::addRow("missing type")
            << with_layers(R"([{"type": "flatten"}, {"units": 5}])")
            << QStringList{"layer 1: missing \"type\"", "flatten, dense, activation, dropout"};
        QTest::addRow("type not a string")
            << with_layers(R"([{"type": 3}])")
            << QStringList{"layer 0: \"type\" must be a string", "got 3"};
        QTest::addRow("unknown type")
            << with_layers(R"([{"type": "conv"}])")
            << QStringList{"layer 0: unknown layer type \"conv\"",
                           "known types: flatten, dense, activation, dropout"};
        QTest::addRow("type typo")
            << with_layers(R"([{"type": "dnese", "units": 5}])")
            << QStringList{"layer 0: unknown layer type \"dnese\"", "did you mean \"dense\"?"};
        // Dense.
        QTest::addRow("negative units")
            << at_layer_5(R"({"type": "dense", "units": -5})")
            << QStringList{"layer 5 (dense): \"units\" must be a positive integer, got -5"};
        QTest::addRow("zero units")
            << at_layer_5(R"({"type": "dense", "units": 0})")
            << QStringList{"layer 5 (dense): \"units\" must be a positive integer, got 0"};
        QTest::addRow("units as a string")
            << at_layer_5(R"({"type": "dense", "units": "3000"})")
            << QStringList{"layer 5 (dense): \"units\" must be a positive integer or \"classes\"",
                           "got \"3000\""};
        QTest::addRow("units class")
            << at_layer_5(R"({"type": "dense", "units": "class"})")
            << QStringList{"layer 5 (dense): \"units\" must be a positive integer or \"classes\"",
                           "got \"class\""};
        QTest::addRow("units vocabulary")
            << at_layer_5(R"({"type": "dense", "units": "vocabulary"})")
            << QStringList{"layer 5 (dense): \"units\" must be a positive integer or \"classes\"",
                           "\"vocab\" for a language model's decoder", "got \"vocabulary\""};
        QTest::addRow("tie_weights not a bool")
            << at_layer_5(R"({"type": "dense", "units": "vocab", "tie_weights": 1})")
            << QStringList{"layer 5 (dense): \"tie_weights\" must be true or false, got 1"};
        // Embedding and lstm.
        QTest::addRow("embedding without dim")
            << at_layer_5(R"({"type": "embedding", "vocab": "dataset"})")
            << QStringList{"layer 5 (embedding): missing \"dim\""};
        QTest::addRow("embedding dim zero")
            << at_layer_5(R"({"type": "embedding", "dim": 0})")
            << QStringList{"layer 5 (embedding): \"dim\" must be a positive integer, got 0"};
        QTest::addRow("embedding vocab words")
            << at_layer_5(R"({"type": "embedding", "vocab": "words", "dim": 8})")
            << QStringList{"layer 5 (embedding): \"vocab\" must be a positive integer or "
                           "\"dataset\"",
                           "got \"words\""};
        QTest::addRow("embedding vocab negative")
            << at_layer_5(R"({"type": "embedding", "vocab": -3, "dim": 8})")
            << QStringList{"layer 5 (embedding): \"vocab\" must be a positive integer, got -3"};
        QTest::addRow("embedding vocab too large")
            << at_layer_5(R"({"type": "embedding", "vocab": 1000001, "dim": 8})")
            << QStringList{"layer 5 (embedding): \"vocab\" must be at most 1000000"};
        QTest::addRow("embedding field of lstm")
            << at_layer_5(R"({"type": "embedding", "dim": 8, "hidden": 8})")
            << QStringList{"layer 5 (embedding): unknown field \"hidden\"",
                           "embedding layers take: type, name, dtype, vocab, dim"};
        QTest::addRow("lstm without hidden") << at_layer_5(R"({"type": "lstm", "layers": 2})")
                                             << QStringList{"layer 5 (lstm): missing \"hidden\""};
        QTest::addRow("lstm hidden zero")
            << at_layer_5(R"({"type": "lstm", "hidden": 0})")
            << QStringList{"layer 5 (lstm): \"hidden\" must be a positive integer, got 0"};
        QTest::addRow("lstm layers zero")
            << at_layer_5(R"({"type": "lstm", "hidden": 8, "layers": 0})")
            << QStringList{"layer 5 (lstm): \"layers\" must be a positive integer, got 0"};
        QTest::addRow("lstm layers 200")
            << at_layer_5(R"({"type": "lstm", "hidden": 8, "layers": 200})")
            << QStringList{"layer 5 (lstm): \"layers\" must be at most 16, got 200"};
        QTest::addRow("lstm dropout 1")
            << at_layer_5(R"({"type": "lstm", "hidden": 8, "dropout": 1})")
            << QStringList{"layer 5 (lstm): \"dropout\" must be a number in [0, 1), got 1"};
        QTest::addRow("lstm rate instead of dropout")
            << at_layer_5(R"({"type": "lstm", "hidden": 8, "rate": 0.5})")
            << QStringList{"layer 5 (lstm): unknown field \"rate\"",
                           "lstm layers take: type, name, dtype, hidden, layers, dropout"};
        QTest::addRow("fractional units")
            << at_layer_5(R"({"type": "dense", "units": 30.5})")
            << QStringList{"layer 5 (dense): \"units\" must be a positive integer, got 30.5"};
        QTest::addRow("units true")
            << at_layer_5(R"({"type": "dense", "units": true})")
            << QStringList{"\"units\" must be a positive integer or \"classes\"", "got true"};
        QTest::addRow("missing units") << at_layer_5(R"({"type": "dense", "activation": "relu"})")
                                       << QStringList{"layer 5 (dense): missing \"units\""};
        QTest::addRow("a billion units")
            << at_layer_5(R"({"type": "dense", "units": 1000000000})")
            << QStringList{"layer 5 (dense): \"units\" must be at most 1000000, got 1000000000"};
        QTest::addRow("units beyond int64")
            << at_layer_5(R"({"type": "dense", "units": 18446744073709551615})")
            << QStringList{"layer 5 (dense): \"units\" must be at most 1000000"};
        QTest::addRow("units typo") << at_layer_5(R"({"type": "dense", "unit": 10})")
                                    << QStringList{"layer 5 (dense): unknown field \"unit\"",
                                                   "did you mean \"units\"?", "dense layers take:"};
        QTest::addRow("field of another type")
            << at_layer_5(R"({"type": "dense", "units": 10, "rate": 0.5})")
            << QStringList{"layer 5 (dense): unknown field \"rate\""};
        QTest::addRow("Keras spelling")
            << at_layer_5(R"({"type": "dense", "units": 10, "kernel_initializer": "he"})")
            << QStringList{"layer 5 (dense): unknown field \"kernel_initializer\""};
        QTest::addRow("unknown activation")
            << at_layer_5(R"({"type": "dense", "units": 10, "activation": "swish"})")
            << QStringList{"layer 5 (dense): unknown activation \"swish\"",
                           "relu, sigmoid, tanh, gelu, softmax, linear"};
        QTest::addRow("activation typo")
            << at_layer_5(R"({"type": "dense", "units": 10, "activation": "rleu"})")
            << QStringList{"unknown activation \"rleu\"", "did you mean \"relu\"?"};
        QTest::addRow("activation not a string")
            << at_layer_5(R"({"type": "dense", "units": 10, "activation": 3})")
            << QStringList{"layer 5 (dense): \"activation\" must be one of", "got 3"};
        QTest::addRow("use_bias not a bool")
            << at_layer_5(R"({"type": "dense", "units": 10, "use_bias": "yes"})")
            << QStringList{"layer 5 (dense): \"use_bias\" must be true or false, got \"yes\""};
        // Activation, dropout, flatten.
        QTest::addRow("activation layer without activation")
            << at_layer_5(R"({"type": "activation"})")
            << QStringList{"layer 5 (activation): missing \"activation\"", "relu, sigmoid"};
        QTest::addRow("rate 1")
            << at_layer_5(R"({"type": "dropout", "rate": 1})")
            << QStringList{"layer 5 (dropout): \"rate\" must be a number in [0, 1), got 1"};
        QTest::addRow("negative rate")
            << at_layer_5(R"({"type": "dropout", "rate": -0.1})")
            << QStringList{"layer 5 (dropout): \"rate\" must be a number in [0, 1), got -0.1"};
        QTest::addRow("rate that is 1 as a float")
            << at_layer_5(R"({"type": "dropout", "rate": 0.99999999999})")
            << QStringList{"layer 5 (dropout): \"rate\" must be a number in [0, 1)"};
        QTest::addRow("rate as a string")
            << at_layer_5(R"({"type": "dropout", "rate": "0.5"})")
            << QStringList{"layer 5 (dropout): \"rate\" must be a number"};
        QTest::addRow("missing rate") << at_layer_5(R"({"type": "dropout"})")
                                      << QStringList{"layer 5 (dropout): missing \"rate\""};
        QTest::addRow("flatten with units")
            << at_layer_5(R"({"type": "flatten", "units": 3})")
            << QStringList{"layer 5 (flatten): unknown field \"units\""};
        // Shared fields.
        QTest::addRow("dtype float16")
            << at_layer_5(R"({"type": "activation", "activation": "softmax", "dtype": "float16"})")
            << QStringList{"layer 5 (activation): \"dtype\" can only be \"float32\"",
                           "got \"float16\""};
        QTest::addRow("dtype policy name")
            << at_layer_5(R"({"type": "dense", "units": 2, "dtype": "mixed_float16"})")
            << QStringList{"layer 5 (dense): \"dtype\" can only be \"float32\""};
        QTest::addRow("layer name not a string")
            << at_layer_5(R"({"type": "flatten", "name": 5})")
            << QStringList{"layer 5 (flatten): \"name\" must be a string, got 5"};
        // Conv2d.
        QTest::addRow("conv2d without filters")
            << at_layer_5(R"({"type": "conv2d", "kernel": 3})")
            << QStringList{"layer 5 (conv2d): missing \"filters\""};
        QTest::addRow("zero filters")
            << at_layer_5(R"({"type": "conv2d", "filters": 0, "kernel": 3})")
            << QStringList{"layer 5 (conv2d): \"filters\" must be a positive integer, got 0"};
        QTest::addRow("fractional filters")
            << at_layer_5(R"({"type": "conv2d", "filters": 2.5, "kernel": 3})")
            << QStringList{"layer 5 (conv2d): \"filters\" must be a positive integer, got 2.5"};
        QTest::addRow("too many filters")
            << at_layer_5(R"({"type": "conv2d", "filters": 65537, "kernel": 3})")
            << QStringList{"layer 5 (conv2d): \"filters\" must be at most 65536, got 65537"};
        QTest::addRow("conv2d without kernel")
            << at_layer_5(R"({"type": "conv2d", "filters": 4})")
            << QStringList{"layer 5 (conv2d): missing \"kernel\"", "[height, width]"};
        QTest::addRow("zero kernel")
            << at_layer_5(R"({"type": "conv2d", "filters": 4, "kernel": 0})")
            << QStringList{"layer 5 (conv2d): \"kernel\" must be a positive integer or a list "
                           "[height, width] of them, got 0"};
        QTest::addRow("kernel list of one")
            << at_layer_5(R"({"type": "conv2d", "filters": 4, "kernel": [3]})")
            << QStringList{"layer 5 (conv2d): \"kernel\" must be a positive integer or a list",
                           "got [3]"};
        QTest::addRow("kernel list of three")
            << at_layer_5(R"({"type": "conv2d", "filters": 4, "kernel": [3, 3, 3]})")
            << QStringList{"\"kernel\" must be a positive integer or a list", "got [3,3,3]"};
        QTest::addRow("kernel with a string")
            << at_layer_5(R"({"type": "conv2d", "filters": 4, "kernel": [3, "3"]})")
            << QStringList{"\"kernel\" must be a positive integer or a list", "got [3,\"3\"]"};
        QTest::addRow("kernel too large")
            << at_layer_5(R"({"type": "conv2d", "filters": 4, "kernel": 65})")
            << QStringList{"layer 5 (conv2d): \"kernel\" must be at most 64, got 65"};
        QTest::addRow("kernel too large in a pair")
            << at_layer_5(R"({"type": "conv2d", "filters": 4, "kernel": [3, 100]})")
            << QStringList{"layer 5 (conv2d): \"kernel\" must be at most 64, got [3,100]"};
        QTest::addRow("zero stride")
            << at_layer_5(R"({"type": "conv2d", "filters": 4, "kernel": 3, "stride": 0})")
            << QStringList{"layer 5 (conv2d): \"stride\" must be a positive integer or a list",
                           "got 0"};
        QTest::addRow("stride too large")
            << at_layer_5(R"({"type": "conv2d", "filters": 4, "kernel": 3, "stride": [1, 65]})")
            << QStringList{"\"stride\" must be at most 64, got [1,65]"};
        QTest::addRow("padding typo")
            << at_layer_5(R"({"type": "conv2d", "filters": 4, "kernel": 3, "padding": "smae"})")
            << QStringList{"layer 5 (conv2d): unknown padding \"smae\"", "did you mean \"same\"?"};
        QTest::addRow("negative padding")
            << at_layer_5(R"({"type": "conv2d", "filters": 4, "kernel": 3, "padding": -1})")
            << QStringList{"layer 5 (conv2d): \"padding\" must be \"same\", \"valid\", a "
                           "non-negative integer or a list [height, width] of them, got -1"};
        QTest::addRow("padding true")
            << at_layer_5(R"({"type": "conv2d", "filters": 4, "kernel": 3, "padding": true})")
            << QStringList{"\"padding\" must be \"same\", \"valid\"", "got true"};
        QTest::addRow("padding too large")
            << at_layer_5(R"({"type": "conv2d", "filters": 4, "kernel": 3, "padding": 65})")
            << QStringList{"\"padding\" must be at most 64, got 65"};
        QTest::addRow("same with an even kernel")
            << at_layer_5(
                   R"({"type": "conv2d", "filters": 4, "kernel": [3, 4], "padding": "same"})")
            << QStringList{"layer 5 (conv2d): \"padding\": \"same\" needs an odd \"kernel\"",
                           "got 3x4", "2 makes the output one larger, 1 one smaller"};
        QTest::addRow("softmax on conv2d")
            << at_layer_5(
                   R"({"type": "conv2d", "filters": 4, "kernel": 3, "activation": "softmax"})")
            << QStringList{
                   "layer 5 (conv2d): \"activation\": \"softmax\" is not available on conv2d"};
        QTest::addRow("strides, Keras's spelling")
            << at_layer_5(R"({"type": "conv2d", "filters": 4, "kernel": 3, "strides": 2})")
            << QStringList{"layer 5 (conv2d): unknown field \"strides\"",
                           "did you mean \"stride\"?",
                           "conv2d layers take: type, name, dtype, filters, kernel, stride, "
                           "padding, activation, use_bias"};
        QTest::addRow("units on conv2d")
            << at_layer_5(R"({"type": "conv2d", "filters": 4, "kernel": 3, "units": 4})")
            << QStringList{"layer 5 (conv2d): unknown field \"units\""};
        // Pooling.
        QTest::addRow("pool without size")
            << at_layer_5(R"({"type": "maxpool2d"})")
            << QStringList{"layer 5 (maxpool2d): missing \"pool_size\"", "e.g. 2"};
        QTest::addRow("pool with a kernel")
            << at_layer_5(R"({"type": "avgpool2d", "kernel": 2})")
            << QStringList{"layer 5 (avgpool2d): unknown field \"kernel\"",
                           "avgpool2d layers take:", "pool_size"};
        QTest::addRow("pool size zero")
            << at_layer_5(R"({"type": "avgpool2d", "pool_size": [2, 0]})")
            << QStringList{
                   "layer 5 (avgpool2d): \"pool_size\" must be a positive integer or a list",
                   "got [2,0]"};
        QTest::addRow("same with an even pool")
            << at_layer_5(R"({"type": "maxpool2d", "pool_size": 2, "padding": "same"})")
            << QStringList{"layer 5 (maxpool2d): \"padding\": \"same\" needs an odd \"pool_size\"",
                           "got 2x2"};
        QTest::addRow("filters on a pool")
            << at_layer_5(R"({"type": "maxpool2d", "pool_size": 2, "filters": 3})")
            << QStringList{"layer 5 (maxpool2d): unknown field \"filters\""};
        QTest::addRow("global pool with a size")
            << at_layer_5(R"({"type": "global_avgpool", "pool_size": 2})")
            << QStringList{"layer 5 (global_avgpool): unknown field \"pool_size\""};
        // Batch norm.
        QTest::addRow("momentum above 1")
            << at_layer_5(R"({"type": "batchnorm", "momentum": 1.5})")
            << QStringList{"layer 5 (batchnorm): \"momentum\" must be a number in [0, 1]",
                           "got 1.5"};
        QTest::addRow("negative momentum")
            << at_layer_5(R"({"type": "batchnorm", "momentum": -0.1})")
            << QStringList{"layer 5 (batchnorm): \"momentum\" must be a number in [0, 1]",
                           "got -0.1"};
        QTest::addRow("momentum as a string")
            << at_layer_5(R"({"type": "batchnorm", "momentum": "0.1"})")
            << QStringList{"\"momentum\" must be a number in [0, 1]"};
        QTest::addRow("zero epsilon")
            << at_layer_5(R"({"type": "batchnorm", "epsilon": 0})")
            << QStringList{"layer 5 (batchnorm): \"epsilon\" must be a positive number", "got 0"};
        QTest::addRow("negative epsilon")
            << at_layer_5(R"({"type": "batchnorm", "epsilon": -1e-5})")
            << QStringList{"\"epsilon\" must be a positive number", "got -1e-05"};
        QTest::addRow("epsilon that is 0 as a float")
            << at_layer_5(R"({"type": "batchnorm", "epsilon": 1e-50})")
            << QStringList{"\"epsilon\" must be a positive number"};
        QTest::addRow("epsilon that overflows a float")
            << at_layer_5(R"({"type": "batchnorm", "epsilon": 1e300})")
            << QStringList{"\"epsilon\" must be a positive number"};
        QTest::addRow("eps, a near miss")
            << at_layer_5(R"({"type": "batchnorm", "eps": 0.001})")
            << QStringList{"layer 5 (batchnorm): unknown field \"eps\"", "momentum, epsilon"};
        // Residual blocks, and errors inside them named by their path.
        QTest::addRow("residual without body")
            << at_layer_5(R"({"type": "residual"})")
            << QStringList{"layer 5 (residual): missing \"body\""};
        QTest::addRow("empty body")
            << at_layer_5(R"({"type": "residual", "body": []})")
            << QStringList{
                   "layer 5 (residual): \"body\" must be a non-empty list of layers, got []"};
        QTest::addRow("body an object")
            << at_layer_5(R"({"type": "residual", "body": {"type": "flatten"}})")
            << QStringList{"layer 5 (residual): \"body\" must be a non-empty list of layers"};
        QTest::addRow("shortcut a number")
            << at_layer_5(R"({"type": "residual", "body": [{"type": "flatten"}], "shortcut": 5})")
            << QStringList{"layer 5 (residual): \"shortcut\" must be a list of layers ([] is the "
                           "identity), got 5"};
        QTest::addRow("residual tanh")
            << at_layer_5(
                   R"({"type": "residual", "body": [{"type": "flatten"}], "activation": "tanh"})")
            << QStringList{"layer 5 (residual): \"activation\" of a residual block",
                           "\"relu\" or \"linear\"", "got \"tanh\""};
        QTest::addRow("residual typo")
            << at_layer_5(R"({"type": "residual", "body": [{"type": "flatten"}], "shortcuts": []})")
            << QStringList{"layer 5 (residual): unknown field \"shortcuts\"",
                           "did you mean \"shortcut\"?"};
        QTest::addRow("error in a body")
            << at_layer_5(
                   R"({"type": "residual", "body": [{"type": "batchnorm"}, {"type": "activation", "activation": "relu"},
                {"type": "conv2d", "filters": 0, "kernel": 3}]})")
            << QStringList{
                   "layer 5 > body 2 (conv2d): \"filters\" must be a positive integer, got 0"};
        QTest::addRow("error in a nested shortcut")
            << at_layer_5(R"({"type": "residual", "body": [{"type": "batchnorm"},
                {"type": "residual", "body": [{"type": "flatten"}], "shortcut": [{"type": "dense", "units": -1}]}]})")
            << QStringList{"layer 5 > body 1 > shortcut 0 (dense): \"units\" must be a positive "
                           "integer, got -1"};
        QTest::addRow("unknown type in a shortcut")
            << at_layer_5(
                   R"({"type": "residual", "body": [{"type": "flatten"}], "shortcut": [{"type": "conv", "filters": 2}]})")
            << QStringList{"layer 5 > shortcut 0: unknown layer type \"conv\"",
                           "did you mean \"conv2d\"?"};
        QTest::addRow("body holding a number")
            << at_layer_5(R"({"type": "residual", "body": [3]})")
            << QStringList{"layer 5 > body 0: must be an object", "got 3"};
        {
            std::string nested = R"({"type": "batchnorm"})";
            for (int i = 0; i < 20; ++i)
                nested = R"({"type": "residual", "body": [)" + nested + "]}";
            QTest::addRow("residual blocks nested 20 deep")
                << with_layers(("[" + nested + "]").c_str())
                << QStringList{"layer 0 > body 0 > body 0",
                               "(residual): residual blocks nest more than 16 deep"};
        }
    }
    void invalid()
    {
        QFETCH(QByteArray, json);
        QFETCH(QStringList, fragments);
        try {
            parse_model_spec(json.toStdString());
            QFAIL("parsed without an error");
        } catch (const SpecError& e) {
            const QString msg = QString::fromUtf8(e.what());
            for (const QString& f : fragments)
                QVERIFY2(msg.contains(f), qPrintable("message: " + msg + "\nmissing: " + f));
            QVERIFY2(!msg.contains("json.exception"), qPrintable(msg));
        }
    }

    // Written files omit the defaults and read back to the same spec.
    void writes_only_what_differs_from_defaults()
    {
        ModelSpec spec;
        spec.name = "w";
        LayerSpec plain;
        plain.units = 10;
        LayerSpec nobias;
        nobias.units = 12;
        nobias.use_bias = false;
        nobias.activation = Activation::Tanh;
        spec.layers = {plain, nobias};
        const std::string text = model_spec_to_json(spec);
        QVERIFY2(text.find(R"({"type": "dense", "units": 10})") != std::string::npos, text.c_str());
        QVERIFY2(
            text.find(
                R"({"type": "dense", "units": 12, "activation": "tanh", "use_bias": false})") !=
                std::string::npos,
            text.c_str());
        QVERIFY(text.find("\"format\": \"mixlab-model/1\"") != std::string::npos);
        QVERIFY(same(parse_model_spec(text), spec));
    }

    // A language model's layers: vocab and dim always, the lstm's layers and dropout and
    // the decoder's tie only when they differ from their defaults.
    void writes_sequence_layers()
    {
        const ModelSpec spec = parse_model_spec(R"({"format": "mixlab-model/1", "layers": [
            {"type": "embedding", "dim": 650},
            {"type": "lstm", "hidden": 650},
            {"type": "lstm", "hidden": 650, "layers": 2, "dropout": 0.65},
            {"type": "dense", "units": "vocab", "tie_weights": true}]})");
        const std::string text = model_spec_to_json(spec);
        for (const char* line : {R"({"type": "embedding", "vocab": "dataset", "dim": 650})",
                                 R"({"type": "lstm", "hidden": 650})",
                                 R"({"type": "lstm", "hidden": 650, "layers": 2, "dropout": 0.65})",
                                 R"({"type": "dense", "units": "vocab", "tie_weights": true})"})
            QVERIFY2(text.find(line) != std::string::npos,
                     qPrintable(QString(line) + "\n" + QString::fromStdString(text)));
        QVERIFY(same(parse_model_spec(text), spec));
    }

    // The new layer types, each field written only when it differs from its default, and
    // a residual block written as a tree: its layers two spaces deeper, one per line.
    void writes_convolutional_layers()
    {
        ModelSpec spec;
        spec.name = "cnn";
        LayerSpec conv;
        conv.type = LayerType::Conv2D;
        conv.filters = 8;
        conv.kernel_h = conv.kernel_w = 3;
        LayerSpec conv_all = conv;
        conv_all.filters = 16;
        conv_all.kernel_w = 5;
        conv_all.stride_h = 1;
        conv_all.stride_w = 2;
        conv_all.padding = Padding::Explicit;
        conv_all.pad_h = 1;
        conv_all.pad_w = 2;
        conv_all.activation = Activation::Relu;
        conv_all.use_bias = false;
        conv_all.force_fp32 = true;
        LayerSpec bn;
        bn.type = LayerType::BatchNorm;
        LayerSpec bn_set = bn;
        bn_set.momentum = 0.01f;
        bn_set.epsilon = 1e-3f;
        LayerSpec pool;
        pool.type = LayerType::MaxPool2D;
        pool.kernel_h = pool.kernel_w = 3;
        pool.stride_h = pool.stride_w = 2;
        pool.padding = Padding::Same;
        LayerSpec avg;
        avg.type = LayerType::AvgPool2D;
        avg.kernel_h = avg.kernel_w = 2;
        LayerSpec gap;
        gap.type = LayerType::GlobalAvgPool;
        LayerSpec shortcut_conv = conv;
        shortcut_conv.kernel_h = shortcut_conv.kernel_w = 1;
        LayerSpec inner;
        inner.type = LayerType::Residual;
        inner.body = {bn};
        LayerSpec block;
        block.type = LayerType::Residual;
        block.activation = Activation::Relu;
        block.body = {bn, inner};
        block.shortcut = {shortcut_conv};
        LayerSpec head;
        head.units = k_units_classes;
        spec.layers = {conv, conv_all, bn, bn_set, pool, avg, block, gap, head};
        const std::string expected = R"({
  "format": "mixlab-model/1",
  "name": "cnn",
  "layers": [
    {"type": "conv2d", "filters": 8, "kernel": 3},
    {"type": "conv2d", "filters": 16, "kernel": [3, 5], "stride": [1, 2], "padding": [1, 2], "activation": "relu", "use_bias": false, "dtype": "float32"},
    {"type": "batchnorm"},
    {"type": "batchnorm", "momentum": 0.01, "epsilon": 0.001},
    {"type": "maxpool2d", "pool_size": 3, "stride": 2, "padding": "same"},
    {"type": "avgpool2d", "pool_size": 2},
    {"type": "residual", "activation": "relu", "body": [
      {"type": "batchnorm"},
      {"type": "residual", "body": [
        {"type": "batchnorm"}
      ]}
    ], "shortcut": [
      {"type": "conv2d", "filters": 8, "kernel": 1}
    ]},
    {"type": "global_avgpool"},
    {"type": "dense", "units": "classes"}
  ]
}
)";
        const std::string text = model_spec_to_json(spec);
        QCOMPARE(QString::fromStdString(text), QString::fromStdString(expected));
        QVERIFY(same(parse_model_spec(text), spec));
        QVERIFY(parse_model_spec(text) == spec);
    }

    // Random specs over every field and layer type, residual blocks nested two deep:
    // write, read back, compare; writing again gives the same text. Rates, momenta and
    // epsilons are random floats, so the shortest-decimal writing is checked.
    void random_round_trip()
    {
        std::mt19937 rng(2024);
        for (int trial = 0; trial < 2000; ++trial) {
            ModelSpec spec;
            spec.name = coin(rng) ? "model \"" + std::to_string(trial) + "\"\n" : "";
            spec.layers = random_layers(rng, 0, 8, 0);
            const std::string text = model_spec_to_json(spec);
            const ModelSpec back = parse_model_spec(text);
            if (!same(back, spec))
                QFAIL(
                    qPrintable(QString::fromStdString(text + "\nread back as " + describe(back))));
            QCOMPARE(model_spec_to_json(back), text);
        }
    }

    // The presets are valid and already in the writer's canonical form.
    void presets()
    {
        const QStringList files = QDir(models_dir()).entryList({"*.json"}, QDir::Files);
        QVERIFY2(files.size() >= 3, qPrintable(models_dir()));
        for (const QString& f : files) {
            const QString path = models_dir() + "/" + f;
            try {
                const ModelSpec spec = load_model_spec(path.toStdString());
                QCOMPARE(QString::fromStdString(spec.name) + ".json", f);
                QCOMPARE(model_spec_to_json(spec), read_file(path));
            } catch (const std::exception& e) {
                QFAIL(qPrintable(f + ": " + e.what()));
            }
        }
        const ModelSpec seed = load_model_spec((models_dir() + "/seed-mlp.json").toStdString());
        QCOMPARE(QString::fromStdString(describe(seed)),
                 QString("seed-mlp: [flatten] [dense units=3000 act=relu bias=1] "
                         "[dense units=1000 act=relu bias=1] [dense units=10 act=linear bias=1] "
                         "[activation act=sigmoid fp32]"));
        const ModelSpec fixed =
            load_model_spec((models_dir() + "/seed-mlp-fixed.json").toStdString());
        QCOMPARE(QString::fromStdString(describe(fixed)),
                 QString("seed-mlp-fixed: [flatten] [dense units=3000 act=relu bias=1] "
                         "[dense units=1000 act=relu bias=1] [dense units=10 act=linear bias=1] "
                         "[activation act=softmax fp32]"));
    }

    void load_errors()
    {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        auto message_of = [](const QString& path) -> QString {
            try {
                load_model_spec(path.toStdString());
            } catch (const InputError& e) {
                return QString::fromUtf8(e.what());
            }
            return QString();
        };
        const QString missing = dir.filePath("nope.json");
        QString msg = message_of(missing);
        QVERIFY2(msg.contains(missing) && msg.contains("does not exist"), qPrintable(msg));

        msg = message_of(dir.path());
        QVERIFY2(msg.contains(dir.path()) && msg.contains("is a directory"), qPrintable(msg));

        const QString empty = dir.filePath("empty.json");
        write_file(empty, "  \n");
        msg = message_of(empty);
        QVERIFY2(msg.contains(empty) && msg.contains("is empty"), qPrintable(msg));

        // A spec error inside a file keeps its class and gains the file name.
        const QString bad = dir.filePath("bad.json");
        write_file(bad, at_layer_5(R"({"type": "dense", "units": -5})").toStdString());
        try {
            load_model_spec(bad.toStdString());
            QFAIL("loaded a bad spec");
        } catch (const SpecError& e) {
            msg = QString::fromUtf8(e.what());
            QVERIFY2(msg.contains(bad), qPrintable(msg));
            QVERIFY2(msg.contains("layer 5 (dense): \"units\" must be a positive integer, got -5"),
                     qPrintable(msg));
        }

        const QString good = dir.filePath("good.json");
        write_file(good, with_layers(R"([{"type": "dense", "units": 3}])").toStdString());
        QCOMPARE(load_model_spec(good.toStdString()).layers.size(), std::size_t(1));

        const QString locked = dir.filePath("locked.json");
        write_file(locked, with_layers("[]").toStdString());
        QFile::setPermissions(locked, QFileDevice::Permissions());
        if (std::ifstream(locked.toStdString()).good())
            QSKIP("running with permission to read any file (root): unreadable-file case skipped");
        msg = message_of(locked);
        QVERIFY2(msg.contains(locked) && msg.contains("cannot open"), qPrintable(msg));
    }
};

QTEST_APPLESS_MAIN(TestModelSpec)
#include "tst_model_spec.moc"
