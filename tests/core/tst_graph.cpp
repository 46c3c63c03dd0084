// Tests for build_graph: inferred shapes, parameter and FLOP counts, tensor-core notes,
// output heads and warnings, shape errors, and every shipped preset.
#include "mixlab/error.h"
#include "mixlab/graph.h"
#include "mixlab/model_spec.h"

#include <QtTest/QtTest>

#include <QDir>

#include <cstdint>
#include <string>
#include <vector>

using namespace mixlab;

Q_DECLARE_METATYPE(std::vector<int>)

namespace {

QString models_dir() { return QStringLiteral(MIXLAB_SOURCE_DIR "/resources/models"); }

ModelSpec preset(const char* name) {
    return load_model_spec((models_dir() + "/" + name).toStdString());
}

ModelSpec spec_of(const char* layers) {
    return parse_model_spec(std::string(R"({"format": "mixlab-model/1", "name": "t", "layers": )") +
                            layers + "}");
}

Shape image(int h, int w, int c) { return Shape{{h, w, c}}; }

} // namespace

class TestGraph : public QObject {
    Q_OBJECT

private slots:
    void shape_text() {
        QCOMPARE(QString::fromStdString(image(32, 32, 3).to_string()), QString("32x32x3"));
        QCOMPARE(QString::fromStdString(Shape{{3000}}.to_string()), QString("3000"));
        QCOMPARE(image(32, 32, 3).elements(), std::int64_t(3072));
        QCOMPARE(Shape{{7}}.elements(), std::int64_t(7));
        QVERIFY(image(2, 3, 4) == image(2, 3, 4));
        QVERIFY(!(image(2, 3, 4) == image(4, 3, 2)));
    }

    // The seed's MLP, layer by layer, worked out by hand.
    void seed_mlp() {
        const Graph g = build_graph(preset("seed-mlp.json"), image(32, 32, 3), 10);
        QCOMPARE(g.name, std::string("seed-mlp"));
        QCOMPARE(g.input, image(32, 32, 3));
        QCOMPARE(g.classes, 10);
        QCOMPARE(g.layers.size(), std::size_t(5));

        const std::vector<std::string> outs = {"3072", "3000", "1000", "10", "10"};
        const std::vector<std::int64_t> params = {0, 3072LL * 3000 + 3000, 3000LL * 1000 + 1000,
                                                  1000LL * 10 + 10, 0};
        // dense: 2*in*units (multiply-add) + units (bias) + units (relu); sigmoid: 1/element.
        const std::vector<std::int64_t> flops = {0, 2LL * 3072 * 3000 + 3000 + 3000,
                                                 2LL * 3000 * 1000 + 1000 + 1000,
                                                 2LL * 1000 * 10 + 10, 10};
        for (std::size_t i = 0; i < 5; ++i) {
            const GraphLayer& l = g.layers[i];
            QCOMPARE(l.index, int(i));
            QCOMPARE(l.out.to_string(), outs[i]);
            QCOMPARE(l.in, i == 0 ? image(32, 32, 3) : g.layers[i - 1].out);
            QCOMPARE(l.params, params[i]);
            QCOMPARE(l.flops, flops[i]);
            QCOMPARE(l.is_gemm, l.spec.type == LayerType::Dense);
            QCOMPARE(l.folded_into_loss, i == 4);
        }
        QCOMPARE(g.total_params, std::int64_t(12230010));
        QCOMPARE(g.total_flops, flops[1] + flops[2] + flops[3] + flops[4]);
        QVERIFY(g.layers[4].spec.force_fp32);

        // 3072, 3000 and 1000 are multiples of 8; the 10-class head is not.
        QVERIFY(g.layers[1].tensor_core_friendly && g.layers[1].tensor_core_note.empty());
        QVERIFY(g.layers[2].tensor_core_friendly);
        QVERIFY(!g.layers[3].tensor_core_friendly);
        QCOMPARE(QString::fromStdString(g.layers[3].tensor_core_note),
                 QString("units 10 is not a multiple of 8 (16 would be)"));
        QVERIFY(!g.layers[0].tensor_core_friendly && !g.layers[4].tensor_core_friendly);

        QCOMPARE(g.head, OutputHead::SigmoidKeras);
        QCOMPARE(g.warnings.size(), std::size_t(1));
        const QString w = QString::fromStdString(g.warnings[0]);
        for (const char* f : {"layer 4 (activation)", "sigmoid", "categorical cross-entropy",
                              "Keras", "divided by their sum", "[1e-7, 1-1e-7]", "softmax",
                              "one-of-N"})
            QVERIFY2(w.contains(f), qPrintable(w + "\nmissing: " + f));
    }

    void seed_mlp_fixed() {
        const Graph g = build_graph(preset("seed-mlp-fixed.json"), image(32, 32, 3), 10);
        QCOMPARE(g.head, OutputHead::SoftmaxFolded);
        QVERIFY(g.warnings.empty());
        QVERIFY(g.layers.back().folded_into_loss);
        QVERIFY(g.layers.back().spec.force_fp32);
        QCOMPARE(g.layers.back().flops, std::int64_t(30)); // softmax: ~3 per element
        QCOMPARE(g.total_params, std::int64_t(12230010));
    }

    void mnist_mlp() {
        const Graph g = build_graph(preset("mnist-mlp.json"), image(28, 28, 1), 10);
        QCOMPARE(g.total_params, std::int64_t(784 * 256 + 256 + 256 * 128 + 128 + 128 * 10 + 10));
        QCOMPARE(g.layers[0].out, Shape{{784}});
        QCOMPARE(g.head, OutputHead::SoftmaxFolded);
        QVERIFY(g.layers[1].tensor_core_friendly); // 784 = 98 * 8
    }

    // Every preset builds on the datasets MixLab ships loaders for, and the totals are
    // the sums of the layers.
    void every_preset_builds() {
        const QStringList files = QDir(models_dir()).entryList({"*.json"}, QDir::Files);
        QVERIFY(!files.isEmpty());
        for (const QString& f : files) {
            for (const Shape& in : {image(32, 32, 3), image(28, 28, 1)}) {
                try {
                    const Graph g = build_graph(preset(qPrintable(f)), in, 10);
                    std::int64_t params = 0, flops = 0;
                    for (const auto& l : g.layers) {
                        params += l.params;
                        flops += l.flops;
                    }
                    QCOMPARE(g.total_params, params);
                    QCOMPARE(g.total_flops, flops);
                    QCOMPARE(g.layers.back().out, Shape{{10}});
                    QVERIFY(g.total_params > 0);
                } catch (const std::exception& e) {
                    QFAIL(qPrintable(f + " on " + QString::fromStdString(in.to_string()) + ": " +
                                     e.what()));
                }
            }
        }
    }

    void heads_data() {
        QTest::addColumn<QByteArray>("layers");
        QTest::addColumn<int>("head");
        QTest::addColumn<int>("folded"); // index of the folded layer, -1 for none
        QTest::addColumn<int>("warns_about"); // index of the layer warned about, -1 for none
        QTest::addRow("plain logits") << QByteArray(R"([{"type": "dense", "units": 4}])")
                                      << int(OutputHead::Logits) << -1 << -1;
        QTest::addRow("softmax layer") << QByteArray(R"([{"type": "dense", "units": 4}, {"type": "activation", "activation": "softmax"}])")
                                       << int(OutputHead::SoftmaxFolded) << 1 << -1;
        QTest::addRow("sigmoid layer") << QByteArray(R"([{"type": "dense", "units": 4}, {"type": "activation", "activation": "sigmoid"}])")
                                       << int(OutputHead::SigmoidKeras) << 1 << 1;
        QTest::addRow("dense with softmax") << QByteArray(R"([{"type": "dense", "units": 4, "activation": "softmax"}])")
                                            << int(OutputHead::SoftmaxFolded) << 0 << -1;
        QTest::addRow("dense with sigmoid") << QByteArray(R"([{"type": "dense", "units": 4, "activation": "sigmoid"}])")
                                            << int(OutputHead::SigmoidKeras) << 0 << 0;
        QTest::addRow("final relu stays a layer") << QByteArray(R"([{"type": "dense", "units": 4, "activation": "relu"}])")
                                                  << int(OutputHead::Logits) << -1 << -1;
        QTest::addRow("linear activation last") << QByteArray(R"([{"type": "dense", "units": 4}, {"type": "activation", "activation": "linear"}])")
                                                << int(OutputHead::Logits) << -1 << -1;
        QTest::addRow("softmax not last is not folded")
            << QByteArray(R"([{"type": "dense", "units": 4, "activation": "softmax"}, {"type": "dropout", "rate": 0.2}])")
            << int(OutputHead::Logits) << -1 << 0;
        QTest::addRow("softmax in the middle")
            << QByteArray(R"([{"type": "dense", "units": 8}, {"type": "activation", "activation": "softmax"}, {"type": "dense", "units": 4}])")
            << int(OutputHead::Logits) << -1 << 1;
    }
    void heads() {
        QFETCH(QByteArray, layers);
        QFETCH(int, head);
        QFETCH(int, folded);
        QFETCH(int, warns_about);
        const Graph g = build_graph(spec_of(layers.constData()), Shape{{6}}, 4);
        QCOMPARE(int(g.head), head);
        for (const auto& l : g.layers) QCOMPARE(l.folded_into_loss, l.index == folded);
        QCOMPARE(g.warnings.size(), std::size_t(warns_about >= 0 ? 1 : 0));
        if (warns_about >= 0)
            QVERIFY(QString::fromStdString(g.warnings[0]).startsWith(QString("layer %1 (").arg(warns_about)));
    }

    void counts_data() {
        QTest::addColumn<QByteArray>("layers");
        QTest::addColumn<std::vector<int>>("input");
        QTest::addColumn<int>("classes");
        QTest::addColumn<QString>("shapes");   // out shape of each layer
        QTest::addColumn<qint64>("params");
        QTest::addColumn<qint64>("flops");
        QTest::addRow("no bias") << QByteArray(R"([{"type": "dense", "units": 5, "use_bias": false}])")
            << std::vector<int>{7} << 5 << "5" << qint64(35) << qint64(70);
        QTest::addRow("bias and tanh") << QByteArray(R"([{"type": "dense", "units": 5, "activation": "tanh"}])")
            << std::vector<int>{7} << 5 << "5" << qint64(40) << qint64(70 + 5 + 5);
        QTest::addRow("dense softmax costs 3 per unit")
            << QByteArray(R"([{"type": "dense", "units": 5, "activation": "softmax"}])")
            << std::vector<int>{7} << 5 << "5" << qint64(40) << qint64(70 + 5 + 15);
        QTest::addRow("elementwise on an image, then flatten")
            << QByteArray(R"([{"type": "activation", "activation": "relu"}, {"type": "dropout", "rate": 0.5},
                              {"type": "flatten"}, {"type": "dense", "units": 3}])")
            << std::vector<int>{4, 4, 2} << 3 << "4x4x2 4x4x2 32 3" << qint64(32 * 3 + 3)
            << qint64(32 + 0 + 0 + 2 * 32 * 3 + 3);
        QTest::addRow("linear activation is free")
            << QByteArray(R"([{"type": "dense", "units": 3}, {"type": "activation", "activation": "linear"}])")
            << std::vector<int>{2} << 3 << "3 3" << qint64(9) << qint64(2 * 2 * 3 + 3);
        QTest::addRow("flatten of a flat input")
            << QByteArray(R"([{"type": "flatten"}, {"type": "dense", "units": 2}])")
            << std::vector<int>{9} << 2 << "9 2" << qint64(20) << qint64(2 * 9 * 2 + 2);
        QTest::addRow("deep stack with dropout")
            << QByteArray(R"([{"type": "flatten"}, {"type": "dense", "units": 64, "activation": "gelu"},
                              {"type": "dropout", "rate": 0.1}, {"type": "dense", "units": 32, "activation": "relu"},
                              {"type": "dense", "units": 10}, {"type": "activation", "activation": "softmax"}])")
            << std::vector<int>{8, 8, 1} << 10 << "64 64 64 32 10 10"
            << qint64(64 * 64 + 64 + 64 * 32 + 32 + 32 * 10 + 10)
            << qint64((2 * 64 * 64 + 64 + 64) + (2 * 64 * 32 + 32 + 32) + (2 * 32 * 10 + 10) + 30);
    }
    void counts() {
        QFETCH(QByteArray, layers);
        QFETCH(std::vector<int>, input);
        QFETCH(int, classes);
        QFETCH(QString, shapes);
        QFETCH(qint64, params);
        QFETCH(qint64, flops);
        const Graph g = build_graph(spec_of(layers.constData()), Shape{input}, classes);
        QStringList outs;
        for (const auto& l : g.layers) outs << QString::fromStdString(l.out.to_string());
        QCOMPARE(outs.join(' '), shapes);
        QCOMPARE(qint64(g.total_params), params);
        QCOMPARE(qint64(g.total_flops), flops);
    }

    void tensor_cores_data() {
        QTest::addColumn<int>("in");
        QTest::addColumn<int>("units");
        QTest::addColumn<bool>("friendly");
        QTest::addColumn<QString>("note");
        QTest::addRow("both multiples") << 3072 << 3000 << true << "";
        QTest::addRow("units off") << 3072 << 10 << false << "units 10 is not a multiple of 8 (16 would be)";
        QTest::addRow("inputs off") << 3073 << 16 << false << "inputs 3073 is not a multiple of 8 (3080 would be)";
        QTest::addRow("both off") << 5 << 12 << false
            << "inputs 5 is not a multiple of 8 (8 would be); units 12 is not a multiple of 8 (16 would be)";
        QTest::addRow("small multiples") << 8 << 8 << true << "";
    }
    void tensor_cores() {
        QFETCH(int, in);
        QFETCH(int, units);
        QFETCH(bool, friendly);
        QFETCH(QString, note);
        ModelSpec spec;
        LayerSpec d;
        d.units = units;
        spec.layers = {d};
        const Graph g = build_graph(spec, Shape{{in}}, units);
        QCOMPARE(g.layers[0].is_gemm, true);
        QCOMPARE(g.layers[0].tensor_core_friendly, friendly);
        QCOMPARE(QString::fromStdString(g.layers[0].tensor_core_note), note);
    }

    void errors_data() {
        QTest::addColumn<QByteArray>("layers");
        QTest::addColumn<std::vector<int>>("input");
        QTest::addColumn<int>("classes");
        QTest::addColumn<QStringList>("fragments");
        QTest::addRow("no layers") << QByteArray("[]") << std::vector<int>{32, 32, 3} << 10
            << QStringList{"no layers", "dense layer of 10 units"};
        QTest::addRow("dense on an image") << QByteArray(R"([{"type": "dense", "units": 10}])")
            << std::vector<int>{32, 32, 3} << 10
            << QStringList{"layer 0 (dense): needs a flat input but receives 32x32x3",
                           "add a {\"type\": \"flatten\"} layer before it"};
        QTest::addRow("dense after an elementwise layer on an image")
            << QByteArray(R"([{"type": "dropout", "rate": 0.2}, {"type": "dense", "units": 10}])")
            << std::vector<int>{28, 28, 1} << 10
            << QStringList{"layer 1 (dense): needs a flat input but receives 28x28x1", "flatten"};
        QTest::addRow("too many outputs") << QByteArray(R"([{"type": "flatten"}, {"type": "dense", "units": 12}])")
            << std::vector<int>{32, 32, 3} << 10
            << QStringList{"layer 1 (dense): the model outputs 12 values but the dataset has 10 classes",
                           "set \"units\" to 10"};
        QTest::addRow("mismatch behind a softmax")
            << QByteArray(R"([{"type": "flatten"}, {"type": "dense", "units": 12}, {"type": "activation", "activation": "softmax"}])")
            << std::vector<int>{32, 32, 3} << 10
            << QStringList{"layer 1 (dense): the model outputs 12 values but the dataset has 10 classes"};
        QTest::addRow("flatten only") << QByteArray(R"([{"type": "flatten"}])")
            << std::vector<int>{32, 32, 3} << 10
            << QStringList{"layer 0 (flatten): the model outputs 3072 values but the dataset has 10 classes",
                           "end the model with a dense layer of 10 units"};
        QTest::addRow("image output") << QByteArray(R"([{"type": "dropout", "rate": 0.5}])")
            << std::vector<int>{32, 32, 3} << 10
            << QStringList{"layer 0 (dropout): the model outputs a 32x32x3 tensor but the dataset has 10 classes"};
        QTest::addRow("softmax on an image")
            << QByteArray(R"([{"type": "activation", "activation": "softmax"}, {"type": "flatten"}, {"type": "dense", "units": 10}])")
            << std::vector<int>{32, 32, 3} << 10
            << QStringList{"layer 0 (activation): softmax needs a flat input but receives 32x32x3"};
    }
    void errors() {
        QFETCH(QByteArray, layers);
        QFETCH(std::vector<int>, input);
        QFETCH(int, classes);
        QFETCH(QStringList, fragments);
        const ModelSpec spec = spec_of(layers.constData());
        try {
            build_graph(spec, Shape{input}, classes);
            QFAIL("built without an error");
        } catch (const SpecError& e) {
            const QString msg = QString::fromUtf8(e.what());
            for (const QString& f : fragments)
                QVERIFY2(msg.contains(f), qPrintable("message: " + msg + "\nmissing: " + f));
        }
    }

    // Specs made in code (the GUI's designer) skip the parser, so build_graph checks
    // the values it depends on too.
    void errors_from_code() {
        ModelSpec spec;
        LayerSpec d;
        d.units = 0;
        spec.layers = {d};
        QVERIFY_THROWS_EXCEPTION(SpecError, build_graph(spec, Shape{{4}}, 1));
        LayerSpec drop;
        drop.type = LayerType::Dropout;
        drop.rate = 1.5f;
        LayerSpec ok;
        ok.units = 2;
        spec.layers = {drop, ok};
        QVERIFY_THROWS_EXCEPTION(SpecError, build_graph(spec, Shape{{4}}, 2));
        spec.layers = {ok};
        QVERIFY_THROWS_EXCEPTION(InputError, build_graph(spec, Shape{}, 2));
        QVERIFY_THROWS_EXCEPTION(InputError, build_graph(spec, Shape{{0}}, 2));
        QVERIFY_THROWS_EXCEPTION(InputError, build_graph(spec, Shape{{4}}, 0));
        QCOMPARE(build_graph(spec, Shape{{4}}, 2).total_params, std::int64_t(10));
    }
};

QTEST_APPLESS_MAIN(TestGraph)
#include "tst_graph.moc"
