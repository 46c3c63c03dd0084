// Tests for the `mixlab-model/1` format: valid and invalid specs with the messages a
// user sees, writing and reading back, loading files and the shipped presets.
#include "mixlab/error.h"
#include "mixlab/model_spec.h"

#include <QtTest/QtTest>

#include <QDir>
#include <QFile>
#include <QTemporaryDir>

#include <bit>
#include <fstream>
#include <random>
#include <sstream>
#include <string>

using namespace mixlab;

namespace {

// One line per layer, every field: two specs are equal exactly when these match.
std::string describe(const LayerSpec& l) {
    std::ostringstream s;
    s << layer_type_name(l.type);
    switch (l.type) {
    case LayerType::Flatten: break;
    case LayerType::Dense:
        s << " units=" << l.units << " act=" << activation_name(l.activation)
          << " bias=" << l.use_bias;
        break;
    case LayerType::Activation: s << " act=" << activation_name(l.activation); break;
    case LayerType::Dropout: s << " rate=" << l.rate; break;
    }
    if (l.force_fp32) s << " fp32";
    return s.str();
}

std::string describe(const ModelSpec& spec) {
    std::string out = spec.name + ":";
    for (const auto& l : spec.layers) out += " [" + describe(l) + "]";
    return out;
}

// Field-by-field equality, including fields the layer type does not use, and the
// rate's exact bits.
bool same(const LayerSpec& a, const LayerSpec& b) {
    return a.type == b.type && a.units == b.units && a.activation == b.activation &&
           a.use_bias == b.use_bias && std::bit_cast<std::uint32_t>(a.rate) ==
           std::bit_cast<std::uint32_t>(b.rate) && a.force_fp32 == b.force_fp32;
}

bool same(const ModelSpec& a, const ModelSpec& b) {
    if (a.name != b.name || a.layers.size() != b.layers.size()) return false;
    for (std::size_t i = 0; i < a.layers.size(); ++i)
        if (!same(a.layers[i], b.layers[i])) return false;
    return true;
}

std::string read_file(const QString& path) {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) return {};
    return f.readAll().toStdString();
}

void write_file(const QString& path, const std::string& text) {
    std::ofstream out(path.toStdString(), std::ios::binary);
    out << text;
}

QString models_dir() { return QStringLiteral(MIXLAB_SOURCE_DIR "/resources/models"); }

// A spec wrapper: `layers` is the JSON text of the layer list.
QByteArray with_layers(const char* layers) {
    return QByteArray(R"({"format": "mixlab-model/1", "name": "t", "layers": )") + layers + "}";
}

// Five valid layers before the one under test, so the index in messages is checked too.
QByteArray at_layer_5(const char* layer) {
    return with_layers((std::string(R"([{"type": "flatten"}, {"type": "dense", "units": 8},
        {"type": "dropout", "rate": 0.1}, {"type": "activation", "activation": "relu"},
        {"type": "dense", "units": 4}, )") + layer + "]").c_str());
}

} // namespace

class TestModelSpec : public QObject {
    Q_OBJECT

private slots:
    void names() {
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
    }

    void valid_data() {
        QTest::addColumn<QByteArray>("json");
        QTest::addColumn<QString>("expected");
        QTest::addRow("DESIGN.md's seed MLP") << QByteArray(R"({
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
            << with_layers(R"([{"type": "dense", "units": 7, "activation": "gelu", "use_bias": false, "dtype": "float32", "name": "d"}])")
            << "t: [dense units=7 act=gelu bias=0 fp32]";
        QTest::addRow("explicit linear, bias true")
            << with_layers(R"([{"activation": "linear", "use_bias": true, "units": 1000000, "type": "dense"}])")
            << "t: [dense units=1000000 act=linear bias=1]";
        QTest::addRow("every activation layer")
            << with_layers(R"([{"type": "activation", "activation": "relu"},
                {"type": "activation", "activation": "sigmoid"}, {"type": "activation", "activation": "tanh"},
                {"type": "activation", "activation": "gelu"}, {"type": "activation", "activation": "softmax"},
                {"type": "activation", "activation": "linear"}])")
            << "t: [activation act=relu] [activation act=sigmoid] [activation act=tanh] "
               "[activation act=gelu] [activation act=softmax] [activation act=linear]";
        QTest::addRow("dropout rates") << with_layers(R"([{"type": "dropout", "rate": 0},
                {"type": "dropout", "rate": 0.5, "name": "drop"}, {"type": "dropout", "rate": 0.999}])")
            << "t: [dropout rate=0] [dropout rate=0.5] [dropout rate=0.999]";
        QTest::addRow("layer names are ignored") << with_layers(R"([{"type": "flatten", "name": "in"}])")
            << "t: [flatten]";
        QTest::addRow("no model name") << QByteArray(R"({"layers": [{"type": "flatten"}], "format": "mixlab-model/1"})")
            << ": [flatten]";
        QTest::addRow("unicode name") << QByteArray(R"({"format": "mixlab-model/1", "name": "r\u00e9seau", "layers": []})")
            << "r\u00e9seau:";
        QTest::addRow("empty layer list parses (build_graph rejects it)") << with_layers("[]") << "t:";
    }
    void valid() {
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

    void invalid_data() {
        QTest::addColumn<QByteArray>("json");
        QTest::addColumn<QStringList>("fragments");
        // The format and the document.
        QTest::addRow("malformed JSON") << QByteArray("{\"format\": \"mixlab-model/1\",\n \"layers\": [}")
            << QStringList{"not valid JSON", "line 2, column"};
        QTest::addRow("empty text") << QByteArray("") << QStringList{"not valid JSON"};
        QTest::addRow("trailing garbage") << QByteArray(R"({"format": "mixlab-model/1", "layers": []} x)")
            << QStringList{"not valid JSON", "column"};
        QTest::addRow("not an object") << QByteArray("[1, 2]") << QStringList{"must be a JSON object", "[1,2]"};
        QTest::addRow("missing format") << QByteArray(R"({"layers": []})")
            << QStringList{"no \"format\"", "\"mixlab-model/1\""};
        QTest::addRow("newer format") << QByteArray(R"({"format": "mixlab-model/2", "layers": []})")
            << QStringList{"\"mixlab-model/2\"", "newer MixLab", "reads \"mixlab-model/1\""};
        QTest::addRow("run config given as a model") << QByteArray(R"({"format": "mixlab-run/1", "layers": []})")
            << QStringList{"run config", "not a model spec"};
        QTest::addRow("format not a string") << QByteArray(R"({"format": 1, "layers": []})")
            << QStringList{"\"format\" must be the string \"mixlab-model/1\", got 1"};
        QTest::addRow("foreign format") << QByteArray(R"({"format": "keras", "layers": []})")
            << QStringList{"\"format\" must be \"mixlab-model/1\", got \"keras\""};
        QTest::addRow("unknown top-level field") << QByteArray(R"({"format": "mixlab-model/1", "layer": []})")
            << QStringList{"unknown field \"layer\"", "did you mean \"layers\"?", "format, name, layers"};
        QTest::addRow("missing layers") << QByteArray(R"({"format": "mixlab-model/1"})")
            << QStringList{"no \"layers\""};
        QTest::addRow("layers not a list") << with_layers("{}") << QStringList{"\"layers\" must be a list"};
        QTest::addRow("model name not a string") << QByteArray(R"({"format": "mixlab-model/1", "name": 5, "layers": []})")
            << QStringList{"\"name\" must be a string, got 5"};
        // Layer types.
        QTest::addRow("layer not an object") << with_layers(R"([{"type": "flatten"}, 5])")
            << QStringList{"layer 1: must be an object", "got 5"};
        QTest::addRow("missing type") << with_layers(R"([{"type": "flatten"}, {"units": 5}])")
            << QStringList{"layer 1: missing \"type\"", "flatten, dense, activation, dropout"};
        QTest::addRow("type not a string") << with_layers(R"([{"type": 3}])")
            << QStringList{"layer 0: \"type\" must be a string", "got 3"};
        QTest::addRow("unknown type") << with_layers(R"([{"type": "conv"}])")
            << QStringList{"layer 0: unknown layer type \"conv\"", "known types: flatten, dense, activation, dropout"};
        QTest::addRow("type typo") << with_layers(R"([{"type": "dnese", "units": 5}])")
            << QStringList{"layer 0: unknown layer type \"dnese\"", "did you mean \"dense\"?"};
        // Dense.
        QTest::addRow("negative units") << at_layer_5(R"({"type": "dense", "units": -5})")
            << QStringList{"layer 5 (dense): \"units\" must be a positive integer, got -5"};
        QTest::addRow("zero units") << at_layer_5(R"({"type": "dense", "units": 0})")
            << QStringList{"layer 5 (dense): \"units\" must be a positive integer, got 0"};
        QTest::addRow("units as a string") << at_layer_5(R"({"type": "dense", "units": "3000"})")
            << QStringList{"layer 5 (dense): \"units\" must be a positive integer, got \"3000\""};
        QTest::addRow("fractional units") << at_layer_5(R"({"type": "dense", "units": 30.5})")
            << QStringList{"layer 5 (dense): \"units\" must be a positive integer, got 30.5"};
        QTest::addRow("units true") << at_layer_5(R"({"type": "dense", "units": true})")
            << QStringList{"\"units\" must be a positive integer, got true"};
        QTest::addRow("missing units") << at_layer_5(R"({"type": "dense", "activation": "relu"})")
            << QStringList{"layer 5 (dense): missing \"units\""};
        QTest::addRow("a billion units") << at_layer_5(R"({"type": "dense", "units": 1000000000})")
            << QStringList{"layer 5 (dense): \"units\" must be at most 1000000, got 1000000000"};
        QTest::addRow("units beyond int64") << at_layer_5(R"({"type": "dense", "units": 18446744073709551615})")
            << QStringList{"layer 5 (dense): \"units\" must be at most 1000000"};
        QTest::addRow("units typo") << at_layer_5(R"({"type": "dense", "unit": 10})")
            << QStringList{"layer 5 (dense): unknown field \"unit\"", "did you mean \"units\"?",
                           "dense layers take:"};
        QTest::addRow("field of another type") << at_layer_5(R"({"type": "dense", "units": 10, "rate": 0.5})")
            << QStringList{"layer 5 (dense): unknown field \"rate\""};
        QTest::addRow("Keras spelling") << at_layer_5(R"({"type": "dense", "units": 10, "kernel_initializer": "he"})")
            << QStringList{"layer 5 (dense): unknown field \"kernel_initializer\""};
        QTest::addRow("unknown activation") << at_layer_5(R"({"type": "dense", "units": 10, "activation": "swish"})")
            << QStringList{"layer 5 (dense): unknown activation \"swish\"",
                           "relu, sigmoid, tanh, gelu, softmax, linear"};
        QTest::addRow("activation typo") << at_layer_5(R"({"type": "dense", "units": 10, "activation": "rleu"})")
            << QStringList{"unknown activation \"rleu\"", "did you mean \"relu\"?"};
        QTest::addRow("activation not a string") << at_layer_5(R"({"type": "dense", "units": 10, "activation": 3})")
            << QStringList{"layer 5 (dense): \"activation\" must be one of", "got 3"};
        QTest::addRow("use_bias not a bool") << at_layer_5(R"({"type": "dense", "units": 10, "use_bias": "yes"})")
            << QStringList{"layer 5 (dense): \"use_bias\" must be true or false, got \"yes\""};
        // Activation, dropout, flatten.
        QTest::addRow("activation layer without activation") << at_layer_5(R"({"type": "activation"})")
            << QStringList{"layer 5 (activation): missing \"activation\"", "relu, sigmoid"};
        QTest::addRow("rate 1") << at_layer_5(R"({"type": "dropout", "rate": 1})")
            << QStringList{"layer 5 (dropout): \"rate\" must be a number in [0, 1), got 1"};
        QTest::addRow("negative rate") << at_layer_5(R"({"type": "dropout", "rate": -0.1})")
            << QStringList{"layer 5 (dropout): \"rate\" must be a number in [0, 1), got -0.1"};
        QTest::addRow("rate that is 1 as a float") << at_layer_5(R"({"type": "dropout", "rate": 0.99999999999})")
            << QStringList{"layer 5 (dropout): \"rate\" must be a number in [0, 1)"};
        QTest::addRow("rate as a string") << at_layer_5(R"({"type": "dropout", "rate": "0.5"})")
            << QStringList{"layer 5 (dropout): \"rate\" must be a number"};
        QTest::addRow("missing rate") << at_layer_5(R"({"type": "dropout"})")
            << QStringList{"layer 5 (dropout): missing \"rate\""};
        QTest::addRow("flatten with units") << at_layer_5(R"({"type": "flatten", "units": 3})")
            << QStringList{"layer 5 (flatten): unknown field \"units\""};
        // Shared fields.
        QTest::addRow("dtype float16") << at_layer_5(R"({"type": "activation", "activation": "softmax", "dtype": "float16"})")
            << QStringList{"layer 5 (activation): \"dtype\" can only be \"float32\"", "got \"float16\""};
        QTest::addRow("dtype policy name") << at_layer_5(R"({"type": "dense", "units": 2, "dtype": "mixed_float16"})")
            << QStringList{"layer 5 (dense): \"dtype\" can only be \"float32\""};
        QTest::addRow("layer name not a string") << at_layer_5(R"({"type": "flatten", "name": 5})")
            << QStringList{"layer 5 (flatten): \"name\" must be a string, got 5"};
    }
    void invalid() {
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
    void writes_only_what_differs_from_defaults() {
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
        QVERIFY2(text.find(R"({"type": "dense", "units": 12, "activation": "tanh", "use_bias": false})") !=
                     std::string::npos, text.c_str());
        QVERIFY(text.find("\"format\": \"mixlab-model/1\"") != std::string::npos);
        QVERIFY(same(parse_model_spec(text), spec));
    }

    // Random specs over every field: write, read back, compare; writing again gives the
    // same text. Rates are random floats, so the shortest-decimal writing is checked.
    void random_round_trip() {
        std::mt19937 rng(2024);
        std::uniform_int_distribution<int> type(0, 3), act(0, 5), units(1, 1000000), n_layers(0, 8), coin(0, 1);
        std::uniform_real_distribution<float> rate(0.0f, 1.0f);
        const Activation acts[] = {Activation::None, Activation::Relu, Activation::Sigmoid,
                                   Activation::Tanh, Activation::Gelu, Activation::Softmax};
        for (int trial = 0; trial < 2000; ++trial) {
            ModelSpec spec;
            spec.name = coin(rng) ? "model \"" + std::to_string(trial) + "\"\n" : "";
            const int n = n_layers(rng);
            for (int i = 0; i < n; ++i) {
                LayerSpec l;
                l.type = LayerType(type(rng));
                if (l.type == LayerType::Dense) {
                    l.units = units(rng);
                    l.activation = acts[act(rng)];
                    l.use_bias = coin(rng);
                } else if (l.type == LayerType::Activation) {
                    l.activation = acts[act(rng)];
                } else if (l.type == LayerType::Dropout) {
                    l.rate = std::min(rate(rng), std::nextafter(1.0f, 0.0f));
                }
                l.force_fp32 = coin(rng);
                spec.layers.push_back(l);
            }
            const std::string text = model_spec_to_json(spec);
            const ModelSpec back = parse_model_spec(text);
            if (!same(back, spec))
                QFAIL(qPrintable(QString::fromStdString(text + "\nread back as " + describe(back))));
            QCOMPARE(model_spec_to_json(back), text);
        }
    }

    // The presets are valid and already in the writer's canonical form.
    void presets() {
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
        const ModelSpec fixed = load_model_spec((models_dir() + "/seed-mlp-fixed.json").toStdString());
        QCOMPARE(QString::fromStdString(describe(fixed)),
                 QString("seed-mlp-fixed: [flatten] [dense units=3000 act=relu bias=1] "
                         "[dense units=1000 act=relu bias=1] [dense units=10 act=linear bias=1] "
                         "[activation act=softmax fp32]"));
    }

    void load_errors() {
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
