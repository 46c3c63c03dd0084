// Tests for build_graph: inferred shapes, parameter and FLOP counts, tensor-core notes,
// output heads and warnings, shape errors (inside residual blocks too), and every preset.
#include "mixlab/error.h"
#include "mixlab/graph.h"
#include "mixlab/model_spec.h"
#include "test_util.h"

#include <QtTest/QtTest>

#include <QDir>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

using namespace mixlab;

Q_DECLARE_METATYPE(std::vector<int>)

namespace {

QString models_dir() { return QStringLiteral(MIXLAB_SOURCE_DIR "/resources/models"); }

ModelSpec preset(const char* name)
{
    return load_model_spec((models_dir() + "/" + name).toStdString());
}

ModelSpec spec_of(const char* layers)
{
    return parse_model_spec(std::string(R"({"format": "mixlab-model/1", "name": "t", "layers": )") +
                            layers + "}");
}

Shape image(int h, int w, int c) { return Shape{{h, w, c}}; }

} // namespace

class TestGraph : public QObject {
    Q_OBJECT

private slots:
    void shape_text()
    {
        QCOMPARE(QString::fromStdString(image(32, 32, 3).to_string()), QString("32x32x3"));
        QCOMPARE(QString::fromStdString(Shape{{3000}}.to_string()), QString("3000"));
        QCOMPARE(image(32, 32, 3).elements(), std::int64_t(3072));
        QCOMPARE(Shape{{7}}.elements(), std::int64_t(7));
        QVERIFY(image(2, 3, 4) == image(2, 3, 4));
        QVERIFY(!(image(2, 3, 4) == image(4, 3, 2)));
        // Sequences: per time step, the steps being the run's.
        QCOMPARE(QString::fromStdString(Shape::tokens().to_string()), QString("T tokens"));
        QCOMPARE(QString::fromStdString((Shape{{200}, true}).to_string()), QString("T x 200"));
        QVERIFY(Shape::tokens().is_tokens());
        QVERIFY(!Shape{{1}}.is_tokens());
        QVERIFY(!(Shape{{200}, true} == Shape{{200}}));
        QCOMPARE((Shape{{200}, true}).elements(), std::int64_t(200));
    }

    // The word_language_model's medium model on WikiText-2, worked out by hand: shapes
    // per time step, PyTorch's parameter counts, FLOPs per token, tensor-core notes.
    void language_model()
    {
        const int V = 33278;
        const Graph g = build_graph(spec_of(R"([
            {"type": "embedding", "vocab": "dataset", "dim": 650},
            {"type": "dropout", "rate": 0.5},
            {"type": "lstm", "hidden": 650, "layers": 2, "dropout": 0.5},
            {"type": "dropout", "rate": 0.5},
            {"type": "dense", "units": "vocab", "tie_weights": true}])"),
                                    Shape::tokens(), V);
        QCOMPARE(g.layers.size(), std::size_t(5));
        const std::vector<std::string> outs = {"T x 650", "T x 650", "T x 650", "T x 650",
                                               "T x 33278"};
        for (std::size_t i = 0; i < outs.size(); ++i)
            QCOMPARE(g.layers[i].out.to_string(), outs[i]);
        QCOMPARE(g.layers[0].in, Shape::tokens());
        QCOMPARE(g.layers[0].spec.vocab, V); // "dataset" resolved
        QCOMPARE(g.layers[4].spec.units, V); // "vocab" resolved
        const std::int64_t lstm_layer = 4LL * 650 * (650 + 650 + 2);
        QCOMPARE(g.layers[0].params, std::int64_t(V) * 650);
        QCOMPARE(g.layers[2].params, 2 * lstm_layer);
        QCOMPARE(g.layers[4].params, std::int64_t(V)); // tied: the bias alone
        QCOMPARE(g.total_params, std::int64_t(V) * 650 + 2 * lstm_layer + V);
        // Per token: the gate GEMMs 2*4H(I+H) per layer and 17H element-wise; the decoder
        // 2*H*V and the bias; a lookup costs nothing.
        QCOMPARE(g.layers[0].flops, std::int64_t(0));
        QCOMPARE(g.layers[2].flops, 2 * (2LL * 4 * 650 * 1300 + 17 * 650));
        QCOMPARE(g.layers[4].flops, 2LL * 650 * V + V);
        QCOMPARE(g.total_flops, g.layers[2].flops + g.layers[4].flops);
        // 650 is not a multiple of 8: the network stores the embedding's and the lstm's
        // outputs padded to 656, and the lstm and the decoder are judged at that width.
        // WikiText-2's vocabulary is not padded.
        QCOMPARE(g.layers[0].stored_width, std::int64_t(656));
        QCOMPARE(g.layers[2].stored_width, std::int64_t(656));
        QCOMPARE(g.layers[1].stored_width, std::int64_t(0)); // dropout passes it on
        QCOMPARE(g.layers[4].stored_width, std::int64_t(0));
        QVERIFY(g.layers[2].is_gemm);
        QVERIFY2(g.layers[2].tensor_core_friendly, g.layers[2].tensor_core_note.c_str());
        const QString dec_note = QString::fromStdString(g.layers[4].tensor_core_note);
        QVERIFY2(dec_note.contains("vocab 33278 is not a multiple of 8 (33280 would be)") &&
                     dec_note.contains("2 never-used words") && !dec_note.contains("inputs"),
                 qPrintable(dec_note));
        // Without the padding (MIXLAB_NO_FEATURE_PADDING, for A/B timing) the sizes as written.
        qputenv("MIXLAB_NO_FEATURE_PADDING", "1");
        const Graph plain = build_graph(spec_of(R"([
            {"type": "embedding", "vocab": "dataset", "dim": 650},
            {"type": "lstm", "hidden": 650, "layers": 2},
            {"type": "dense", "units": "vocab", "tie_weights": true}])"),
                                        Shape::tokens(), V);
        qunsetenv("MIXLAB_NO_FEATURE_PADDING");
        QCOMPARE(plain.layers[0].stored_width, std::int64_t(0));
        QVERIFY(!plain.layers[1].tensor_core_friendly);
        const QString lstm_note = QString::fromStdString(plain.layers[1].tensor_core_note);
        QVERIFY2(lstm_note.contains("input 650 is not a multiple of 8 (656 would be)") &&
                     lstm_note.contains("hidden 650") &&
                     lstm_note.contains("batch a multiple of 8"),
                 qPrintable(lstm_note));
        // A sigmoid between the lstm and the decoder would turn padding into 0.5: no padding
        // there, and so none for the tied table either.
        const Graph sig = build_graph(spec_of(R"([
            {"type": "embedding", "vocab": "dataset", "dim": 650},
            {"type": "lstm", "hidden": 650, "layers": 1},
            {"type": "activation", "activation": "sigmoid"},
            {"type": "dense", "units": "vocab", "tie_weights": true}])"),
                                      Shape::tokens(), V);
        QCOMPARE(sig.layers[0].stored_width, std::int64_t(0));
        QCOMPARE(sig.layers[1].stored_width, std::int64_t(0));
        QVERIFY(!g.layers[0].is_gemm);

        // 200 units and a vocabulary of 10000 suit tensor cores throughout.
        const Graph small = build_graph(preset("word-lm-small.json"), Shape::tokens(), 10000);
        QVERIFY(small.layers[2].tensor_core_friendly);
        QVERIFY(small.layers[4].tensor_core_friendly);
        QCOMPARE(small.layers[4].params, 200LL * 10000 + 10000); // untied
    }

    void language_model_errors_data()
    {
        QTest::addColumn<QByteArray>("layers");
        QTest::addColumn<bool>("tokens");
        QTest::addColumn<QStringList>("fragments");
        QTest::addRow("embedding on an image")
            << QByteArray(R"([{"type": "embedding", "dim": 8}, {"type": "dense", "units": 10}])")
            << false
            << QStringList{"layer 0 (embedding): needs token input (one word id per time step) "
                           "but receives 32x32x3"};
        QTest::addRow("token input without an embedding")
            << QByteArray(R"([{"type": "dense", "units": 10}])") << true
            << QStringList{"layer 0 (dense): a language model's input is one word id per time "
                           "step; start the model with an embedding layer"};
        QTest::addRow("embedding not first")
            << QByteArray(R"([{"type": "embedding", "dim": 8}, {"type": "embedding", "dim": 8}])")
            << true << QStringList{"layer 1 (embedding): needs token input", "not the first layer"};
        QTest::addRow("vocab smaller than the corpus")
            << QByteArray(
                   R"([{"type": "embedding", "vocab": 5, "dim": 8}, {"type": "dense", "units": "vocab"}])")
            << true
            << QStringList{"layer 0 (embedding): \"vocab\" is 5 but the corpus has 10 words",
                           "\"vocab\": \"dataset\""};
        QTest::addRow("lstm on an image")
            << QByteArray(R"([{"type": "lstm", "hidden": 8}])") << false
            << QStringList{"layer 0 (lstm): needs a sequence (one vector per time step) but "
                           "receives 32x32x3"};
        QTest::addRow("flatten on a sequence")
            << QByteArray(R"([{"type": "embedding", "dim": 8}, {"type": "flatten"}])") << true
            << QStringList{"layer 1 (flatten): receives a sequence (T x 8)",
                           "dense layers apply per time step"};
        QTest::addRow("conv2d on a sequence")
            << QByteArray(
                   R"([{"type": "embedding", "dim": 8}, {"type": "conv2d", "filters": 4, "kernel": 3}])")
            << true
            << QStringList{"layer 1 (conv2d): needs an image input (H, W, C) but receives T x 8",
                           "do not apply to a language model"};
        QTest::addRow("decoder width")
            << QByteArray(
                   R"([{"type": "embedding", "dim": 8}, {"type": "lstm", "hidden": 8}, {"type": "dense", "units": 12}])")
            << true
            << QStringList{"layer 2 (dense): the model outputs 12 values but the vocabulary has "
                           "10 words",
                           "set \"units\" to 10"};
        QTest::addRow("tie without an embedding")
            << QByteArray(
                   R"([{"type": "flatten"}, {"type": "dense", "units": 10, "tie_weights": true}])")
            << false
            << QStringList{"layer 1 (dense): \"tie_weights\" shares the table of an embedding "
                           "layer, but there is none before it"};
        QTest::addRow("tie with another width")
            << QByteArray(
                   R"([{"type": "embedding", "dim": 200}, {"type": "lstm", "hidden": 650}, {"type": "dense", "units": "vocab", "tie_weights": true}])")
            << true
            << QStringList{"layer 2 (dense): \"tie_weights\" shares layer 0 (embedding)'s 10 x "
                           "200 table, but its input is 650 wide",
                           "\"dim\" (200) must equal the decoder's input width (650)"};
        QTest::addRow("tie with a larger table")
            << QByteArray(
                   R"([{"type": "embedding", "vocab": 16, "dim": 8}, {"type": "dense", "units": "vocab", "tie_weights": true}])")
            << true
            << QStringList{"layer 1 (dense): \"tie_weights\" shares layer 0 (embedding)'s 16 x 8 "
                           "table, but it has 10 units"};
    }
    void language_model_errors()
    {
        QFETCH(QByteArray, layers);
        QFETCH(bool, tokens);
        QFETCH(QStringList, fragments);
        try {
            build_graph(spec_of(layers.constData()), tokens ? Shape::tokens() : image(32, 32, 3),
                        10);
            QFAIL("built without an error");
        } catch (const SpecError& e) {
            const QString msg = QString::fromUtf8(e.what());
            for (const QString& f : fragments)
                QVERIFY2(msg.contains(f), qPrintable("message: " + msg + "\nmissing: " + f));
        }
    }

    // Specs made in code (the designer's) skip the parser: the graph checks their values.
    void language_model_errors_from_code()
    {
        ModelSpec spec;
        LayerSpec e;
        e.type = LayerType::Embedding;
        e.dim = 0;
        LayerSpec l;
        l.type = LayerType::Lstm;
        l.hidden = 8;
        spec.layers = {e};
        QVERIFY_THROWS_EXCEPTION(SpecError, build_graph(spec, Shape::tokens(), 10));
        e.dim = 8;
        l.hidden = 0;
        spec.layers = {e, l};
        try {
            build_graph(spec, Shape::tokens(), 10);
            QFAIL("built");
        } catch (const SpecError& err) {
            QVERIFY2(QString(err.what())
                         .contains("layer 1 (lstm): \"hidden\" must be a positive integer, got 0"),
                     err.what());
        }
    }

    // The seed's MLP, layer by layer, worked out by hand.
    void seed_mlp()
    {
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
        for (const char* f :
             {"layer 4 (activation)", "sigmoid", "categorical cross-entropy", "Keras",
              "divided by their sum", "[1e-7, 1-1e-7]", "softmax", "one-of-N"})
            QVERIFY2(w.contains(f), qPrintable(w + "\nmissing: " + f));
    }

    void seed_mlp_fixed()
    {
        const Graph g = build_graph(preset("seed-mlp-fixed.json"), image(32, 32, 3), 10);
        QCOMPARE(g.head, OutputHead::SoftmaxFolded);
        QVERIFY(g.warnings.empty());
        QVERIFY(g.layers.back().folded_into_loss);
        QVERIFY(g.layers.back().spec.force_fp32);
        QCOMPARE(g.layers.back().flops, std::int64_t(30)); // softmax: ~3 per element
        QCOMPARE(g.total_params, std::int64_t(12230010));
    }

    void mnist_mlp()
    {
        const Graph g = build_graph(preset("mnist-mlp.json"), image(28, 28, 1), 10);
        QCOMPARE(g.total_params, std::int64_t(784 * 256 + 256 + 256 * 128 + 128 + 128 * 10 + 10));
        QCOMPARE(g.layers[0].out, Shape{{784}});
        QCOMPARE(g.head, OutputHead::SoftmaxFolded);
        QVERIFY(g.layers[1].tensor_core_friendly); // 784 = 98 * 8
    }

    // Every preset builds on the datasets MixLab ships loaders for, and the totals are
    // the sums of the layers.
    void every_preset_builds()
    {
        const QStringList files = QDir(models_dir()).entryList({"*.json"}, QDir::Files);
        QVERIFY(!files.isEmpty());
        for (const QString& f : files) {
            // Language models read token ids; the vocabulary is their number of classes.
            const bool lm = f.startsWith("word-lm");
            const std::vector<Shape> inputs =
                lm ? std::vector<Shape>{Shape::tokens()}
                   : std::vector<Shape>{image(32, 32, 3), image(28, 28, 1)};
            for (const Shape& in : inputs) {
                try {
                    const Graph g = build_graph(preset(qPrintable(f)), in, 10);
                    std::int64_t params = 0, flops = 0;
                    for (const auto& l : g.layers) {
                        params += l.params;
                        flops += l.flops;
                    }
                    QCOMPARE(g.total_params, params);
                    QCOMPARE(g.total_flops, flops);
                    QCOMPARE(g.layers.back().out, (Shape{{10}, lm}));
                    QVERIFY(g.total_params > 0);
                } catch (const std::exception& e) {
                    QFAIL(qPrintable(f + " on " + QString::fromStdString(in.to_string()) + ": " +
                                     e.what()));
                }
            }
        }
    }

    void heads_data()
    {
        QTest::addColumn<QByteArray>("layers");
        QTest::addColumn<int>("head");
        QTest::addColumn<int>("folded");      // index of the folded layer, -1 for none
        QTest::addColumn<int>("warns_about"); // index of the layer warned about, -1 for none
        QTest::addRow("plain logits") << QByteArray(R"([{"type": "dense", "units": 4}])")
                                      << int(OutputHead::Logits) << -1 << -1;
        QTest::addRow("softmax layer")
            << QByteArray(
                   R"([{"type": "dense", "units": 4}, {"type": "activation", "activation": "softmax"}])")
            << int(OutputHead::SoftmaxFolded) << 1 << -1;
        QTest::addRow("sigmoid layer")
            << QByteArray(
                   R"([{"type": "dense", "units": 4}, {"type": "activation", "activation": "sigmoid"}])")
            << int(OutputHead::SigmoidKeras) << 1 << 1;
        QTest::addRow("dense with softmax")
            << QByteArray(R"([{"type": "dense", "units": 4, "activation": "softmax"}])")
            << int(OutputHead::SoftmaxFolded) << 0 << -1;
        QTest::addRow("dense with sigmoid")
            << QByteArray(R"([{"type": "dense", "units": 4, "activation": "sigmoid"}])")
            << int(OutputHead::SigmoidKeras) << 0 << 0;
        QTest::addRow("final relu stays a layer")
            << QByteArray(R"([{"type": "dense", "units": 4, "activation": "relu"}])")
            << int(OutputHead::Logits) << -1 << -1;
        QTest::addRow("linear activation last")
            << QByteArray(
                   R"([{"type": "dense", "units": 4}, {"type": "activation", "activation": "linear"}])")
            << int(OutputHead::Logits) << -1 << -1;
        QTest::addRow("softmax not last is not folded")
            << QByteArray(
                   R"([{"type": "dense", "units": 4, "activation": "softmax"}, {"type": "dropout", "rate": 0.2}])")
            << int(OutputHead::Logits) << -1 << 0;
        QTest::addRow("softmax in the middle")
            << QByteArray(
                   R"([{"type": "dense", "units": 8}, {"type": "activation", "activation": "softmax"}, {"type": "dense", "units": 4}])")
            << int(OutputHead::Logits) << -1 << 1;
    }
    void heads()
    {
        QFETCH(QByteArray, layers);
        QFETCH(int, head);
        QFETCH(int, folded);
        QFETCH(int, warns_about);
        const Graph g = build_graph(spec_of(layers.constData()), Shape{{6}}, 4);
        QCOMPARE(int(g.head), head);
        for (const auto& l : g.layers) QCOMPARE(l.folded_into_loss, l.index == folded);
        QCOMPARE(g.warnings.size(), std::size_t(warns_about >= 0 ? 1 : 0));
        if (warns_about >= 0)
            QVERIFY(QString::fromStdString(g.warnings[0])
                        .startsWith(QString("layer %1 (").arg(warns_about)));
    }

    void counts_data()
    {
        QTest::addColumn<QByteArray>("layers");
        QTest::addColumn<std::vector<int>>("input");
        QTest::addColumn<int>("classes");
        QTest::addColumn<QString>("shapes"); // out shape of each layer
        QTest::addColumn<qint64>("params");
        QTest::addColumn<qint64>("flops");
        QTest::addRow("no bias") << QByteArray(
                                        R"([{"type": "dense", "units": 5, "use_bias": false}])")
                                 << std::vector<int>{7} << 5 << "5" << qint64(35) << qint64(70);
        QTest::addRow("bias and tanh")
            << QByteArray(R"([{"type": "dense", "units": 5, "activation": "tanh"}])")
            << std::vector<int>{7} << 5 << "5" << qint64(40) << qint64(70 + 5 + 5);
        QTest::addRow("dense softmax costs 3 per unit")
            << QByteArray(R"([{"type": "dense", "units": 5, "activation": "softmax"}])")
            << std::vector<int>{7} << 5 << "5" << qint64(40) << qint64(70 + 5 + 15);
        QTest::addRow("elementwise on an image, then flatten")
            << QByteArray(
                   R"([{"type": "activation", "activation": "relu"}, {"type": "dropout", "rate": 0.5},
                              {"type": "flatten"}, {"type": "dense", "units": 3}])")
            << std::vector<int>{4, 4, 2} << 3 << "4x4x2 4x4x2 32 3" << qint64(32 * 3 + 3)
            << qint64(32 + 0 + 0 + 2 * 32 * 3 + 3);
        QTest::addRow("linear activation is free")
            << QByteArray(
                   R"([{"type": "dense", "units": 3}, {"type": "activation", "activation": "linear"}])")
            << std::vector<int>{2} << 3 << "3 3" << qint64(9) << qint64(2 * 2 * 3 + 3);
        QTest::addRow("flatten of a flat input")
            << QByteArray(R"([{"type": "flatten"}, {"type": "dense", "units": 2}])")
            << std::vector<int>{9} << 2 << "9 2" << qint64(20) << qint64(2 * 9 * 2 + 2);
        QTest::addRow("deep stack with dropout")
            << QByteArray(
                   R"([{"type": "flatten"}, {"type": "dense", "units": 64, "activation": "gelu"},
                              {"type": "dropout", "rate": 0.1}, {"type": "dense", "units": 32, "activation": "relu"},
                              {"type": "dense", "units": 10}, {"type": "activation", "activation": "softmax"}])")
            << std::vector<int>{8, 8, 1} << 10 << "64 64 64 32 10 10"
            << qint64(64 * 64 + 64 + 64 * 32 + 32 + 32 * 10 + 10)
            << qint64((2 * 64 * 64 + 64 + 64) + (2 * 64 * 32 + 32 + 32) + (2 * 32 * 10 + 10) + 30);
    }
    void counts()
    {
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

    void tensor_cores_data()
    {
        QTest::addColumn<int>("in");
        QTest::addColumn<int>("units");
        QTest::addColumn<bool>("friendly");
        QTest::addColumn<QString>("note");
        QTest::addRow("both multiples") << 3072 << 3000 << true << "";
        QTest::addRow("units off")
            << 3072 << 10 << false << "units 10 is not a multiple of 8 (16 would be)";
        QTest::addRow("inputs off")
            << 3073 << 16 << false << "inputs 3073 is not a multiple of 8 (3080 would be)";
        QTest::addRow("both off") << 5 << 12 << false
                                  << "inputs 5 is not a multiple of 8 (8 would be); units 12 is "
                                     "not a multiple of 8 (16 would be)";
        QTest::addRow("small multiples") << 8 << 8 << true << "";
    }
    void tensor_cores()
    {
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

    void errors_data()
    {
        QTest::addColumn<QByteArray>("layers");
        QTest::addColumn<std::vector<int>>("input");
        QTest::addColumn<int>("classes");
        QTest::addColumn<QStringList>("fragments");
        QTest::addRow("no layers") << QByteArray("[]") << std::vector<int>{32, 32, 3} << 10
                                   << QStringList{"no layers", "dense layer of 10 units"};
        QTest::addRow("dense on an image")
            << QByteArray(R"([{"type": "dense", "units": 10}])") << std::vector<int>{32, 32, 3}
            << 10
            << QStringList{"layer 0 (dense): needs a flat input but receives 32x32x3",
                           "add a {\"type\": \"flatten\"} layer before it"};
        QTest::addRow("dense after an elementwise layer on an image")
            << QByteArray(R"([{"type": "dropout", "rate": 0.2}, {"type": "dense", "units": 10}])")
            << std::vector<int>{28, 28, 1} << 10
            << QStringList{"layer 1 (dense): needs a flat input but receives 28x28x1", "flatten"};
        QTest::addRow("too many outputs")
            << QByteArray(R"([{"type": "flatten"}, {"type": "dense", "units": 12}])")
            << std::vector<int>{32, 32, 3} << 10
            << QStringList{
                   "layer 1 (dense): the model outputs 12 values but the dataset has 10 classes",
                   "set \"units\" to 10"};
        QTest::addRow("mismatch behind a softmax")
            << QByteArray(
                   R"([{"type": "flatten"}, {"type": "dense", "units": 12}, {"type": "activation", "activation": "softmax"}])")
            << std::vector<int>{32, 32, 3} << 10
            << QStringList{
                   "layer 1 (dense): the model outputs 12 values but the dataset has 10 classes"};
        QTest::addRow("flatten only")
            << QByteArray(R"([{"type": "flatten"}])") << std::vector<int>{32, 32, 3} << 10
            << QStringList{"layer 0 (flatten): the model outputs 3072 values but the dataset has "
                           "10 classes",
                           "end the model with a dense layer of 10 units"};
        QTest::addRow("image output")
            << QByteArray(R"([{"type": "dropout", "rate": 0.5}])") << std::vector<int>{32, 32, 3}
            << 10
            << QStringList{"layer 0 (dropout): the model outputs a 32x32x3 tensor but the dataset "
                           "has 10 classes"};
        QTest::addRow("softmax on an image")
            << QByteArray(
                   R"([{"type": "activation", "activation": "softmax"}, {"type": "flatten"}, {"type": "dense", "units": 10}])")
            << std::vector<int>{32, 32, 3} << 10
            << QStringList{"layer 0 (activation): softmax needs a flat input but receives 32x32x3"};
    }
    void errors()
    {
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
    void errors_from_code()
    {
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

    // One convolution, pooling, batch norm or global pooling layer, followed by flatten and
    // dense(2) so the model is complete; the checks are on the first layer. FLOPs by
    // hand: conv 2*kh*kw*cin*filters per output position (+1 per output for the bias, +1
    // for a pointwise activation); pooling kh*kw per output; batch norm 4 per element;
    // global pooling 1 per input element.
    void windows_data()
    {
        QTest::addColumn<QByteArray>("layer");
        QTest::addColumn<std::vector<int>>("input");
        QTest::addColumn<QString>("out");
        QTest::addColumn<std::vector<int>>("stride_pad"); // resolved stride h, w, pad h, w
        QTest::addColumn<qint64>("params");
        QTest::addColumn<qint64>("flops");
        QTest::addRow("conv 3x3 same")
            << QByteArray(R"({"type": "conv2d", "filters": 8, "kernel": 3, "padding": "same"})")
            << std::vector<int>{5, 5, 3} << "5x5x8" << std::vector<int>{1, 1, 1, 1}
            << qint64(9 * 3 * 8 + 8) << qint64(2 * 27 * 8 * 25 + 8 * 25);
        QTest::addRow("conv 3x3 same, stride 2, odd size")
            << QByteArray(
                   R"({"type": "conv2d", "filters": 16, "kernel": 3, "stride": 2, "padding": "same", "use_bias": false, "activation": "relu"})")
            << std::vector<int>{7, 7, 4} << "4x4x16" << std::vector<int>{2, 2, 1, 1}
            << qint64(9 * 4 * 16) << qint64(2 * 36 * 16 * 16 + 256);
        QTest::addRow("conv 3x3 valid, stride 2")
            << QByteArray(R"({"type": "conv2d", "filters": 4, "kernel": 3, "stride": 2})")
            << std::vector<int>{8, 8, 2} << "3x3x4" << std::vector<int>{2, 2, 0, 0}
            << qint64(9 * 2 * 4 + 4) << qint64(2 * 18 * 4 * 9 + 4 * 9);
        QTest::addRow("conv 1x3, explicit padding, stride 1x2")
            << QByteArray(
                   R"({"type": "conv2d", "filters": 3, "kernel": [1, 3], "stride": [1, 2], "padding": [0, 1]})")
            << std::vector<int>{4, 6, 2} << "4x3x3" << std::vector<int>{1, 2, 0, 1}
            << qint64(3 * 2 * 3 + 3) << qint64(2 * 6 * 3 * 12 + 3 * 12);
        QTest::addRow("conv 5x5 same, stride 2, odd size, tanh")
            << QByteArray(
                   R"({"type": "conv2d", "filters": 6, "kernel": 5, "stride": 2, "padding": "same", "activation": "tanh"})")
            << std::vector<int>{9, 9, 1} << "5x5x6" << std::vector<int>{2, 2, 2, 2}
            << qint64(25 * 6 + 6) << qint64(2 * 25 * 6 * 25 + 150 + 150);
        QTest::addRow("conv 1x1, stride 2, odd size")
            << QByteArray(
                   R"({"type": "conv2d", "filters": 16, "kernel": 1, "stride": 2, "use_bias": false})")
            << std::vector<int>{9, 9, 8} << "5x5x16" << std::vector<int>{2, 2, 0, 0}
            << qint64(8 * 16) << qint64(2 * 8 * 16 * 25);
        QTest::addRow("maxpool 2, stride defaults to the size, odd size")
            << QByteArray(R"({"type": "maxpool2d", "pool_size": 2})") << std::vector<int>{7, 7, 3}
            << "3x3x3" << std::vector<int>{2, 2, 0, 0} << qint64(0) << qint64(4 * 27);
        QTest::addRow("avgpool 3 same, stride 2, odd size")
            << QByteArray(
                   R"({"type": "avgpool2d", "pool_size": 3, "stride": 2, "padding": "same"})")
            << std::vector<int>{5, 5, 2} << "3x3x2" << std::vector<int>{2, 2, 1, 1} << qint64(0)
            << qint64(9 * 18);
        QTest::addRow("maxpool 3, stride 1")
            << QByteArray(R"({"type": "maxpool2d", "pool_size": 3, "stride": 1})")
            << std::vector<int>{4, 4, 1} << "2x2x1" << std::vector<int>{1, 1, 0, 0} << qint64(0)
            << qint64(9 * 4);
        QTest::addRow("avgpool 2x1") << QByteArray(R"({"type": "avgpool2d", "pool_size": [2, 1]})")
                                     << std::vector<int>{4, 3, 5} << "2x3x5"
                                     << std::vector<int>{2, 1, 0, 0} << qint64(0) << qint64(2 * 30);
        QTest::addRow("batchnorm on an image")
            << QByteArray(R"({"type": "batchnorm"})") << std::vector<int>{3, 3, 5} << "3x3x5"
            << std::vector<int>{1, 1, 0, 0} << qint64(10) << qint64(4 * 45);
        QTest::addRow("batchnorm on a vector")
            << QByteArray(R"({"type": "batchnorm", "momentum": 0.5})") << std::vector<int>{7} << "7"
            << std::vector<int>{1, 1, 0, 0} << qint64(14) << qint64(4 * 7);
        QTest::addRow("global_avgpool")
            << QByteArray(R"({"type": "global_avgpool"})") << std::vector<int>{4, 4, 6} << "6"
            << std::vector<int>{1, 1, 0, 0} << qint64(0) << qint64(96);
    }
    void windows()
    {
        QFETCH(QByteArray, layer);
        QFETCH(std::vector<int>, input);
        QFETCH(QString, out);
        QFETCH(std::vector<int>, stride_pad);
        QFETCH(qint64, params);
        QFETCH(qint64, flops);
        const Graph g = build_graph(
            spec_of(("[" + layer + R"(, {"type": "flatten"}, {"type": "dense", "units": 2}])")
                        .constData()),
            Shape{input}, 2);
        const GraphLayer& l = g.layers[0];
        QCOMPARE(QString::fromStdString(l.out.to_string()), out);
        QCOMPARE(l.in, Shape{input});
        QCOMPARE(g.layers[1].in, l.out);
        QCOMPARE((std::vector<int>{l.stride_h, l.stride_w, l.pad_h, l.pad_w}), stride_pad);
        QCOMPARE(qint64(l.params), params);
        QCOMPARE(qint64(l.flops), flops);
        QCOMPARE(l.is_gemm, l.spec.type == LayerType::Conv2D);
        QCOMPARE(g.total_params, l.params + g.layers[2].params);
    }

    void conv_tensor_cores_data()
    {
        QTest::addColumn<int>("channels");
        QTest::addColumn<int>("filters");
        QTest::addColumn<QString>("note"); // empty: friendly
        QTest::addRow("rgb stem") << 3 << 64
                                  << "input channels 3 is not a multiple of 8 (8 would be)";
        QTest::addRow("grey stem, 6 filters")
            << 1 << 6
            << "input channels 1 is not a multiple of 8 (8 would be); filters 6 is not a multiple "
               "of 8 (8 would be)";
        QTest::addRow("filters off")
            << 16 << 12 << "filters 12 is not a multiple of 8 (16 would be)";
        QTest::addRow("both multiples") << 64 << 128 << "";
    }
    void conv_tensor_cores()
    {
        QFETCH(int, channels);
        QFETCH(int, filters);
        QFETCH(QString, note);
        const std::string conv = R"([{"type": "conv2d", "kernel": 3, "filters": )" +
                                 std::to_string(filters) + R"(}, {"type": "global_avgpool"}])";
        const Graph g = build_graph(spec_of(conv.c_str()), image(5, 5, channels), filters);
        QVERIFY(g.layers[0].is_gemm);
        QCOMPARE(g.layers[0].tensor_core_friendly, note.isEmpty());
        QCOMPARE(QString::fromStdString(g.layers[0].tensor_core_note), note);
        QVERIFY(!g.layers[1].is_gemm && !g.layers[1].tensor_core_friendly);
    }

    // A basic block with the identity shortcut: shapes, params and FLOPs summed over the
    // body, plus the add and the relu after it.
    void residual_identity()
    {
        const Graph g = build_graph(spec_of(R"([{"type": "residual", "activation": "relu", "body": [
            {"type": "conv2d", "filters": 16, "kernel": 3, "padding": "same", "use_bias": false},
            {"type": "batchnorm"}, {"type": "activation", "activation": "relu"},
            {"type": "conv2d", "filters": 16, "kernel": 3, "padding": "same", "use_bias": false},
            {"type": "batchnorm"}]}, {"type": "global_avgpool"}, {"type": "dense", "units": 3}])"),
                                    image(8, 8, 16), 3);
        const GraphLayer& r = g.layers[0];
        QCOMPARE(r.out, image(8, 8, 16));
        QCOMPARE(r.body.size(), std::size_t(5));
        QVERIFY(r.shortcut.empty());
        const std::int64_t conv_flops = 2LL * 9 * 16 * 16 * 64, bn_flops = 4 * 1024;
        QCOMPARE(r.body[0].flops, conv_flops);
        QCOMPARE(r.body[1].flops, bn_flops);
        QCOMPARE(r.params, std::int64_t(2 * 9 * 16 * 16 + 2 * 32));
        QCOMPARE(r.flops, 2 * conv_flops + 2 * bn_flops + 1024 /* relu */ + 1024 /* add */ +
                              1024 /* relu after the add */);
        QVERIFY(!r.is_gemm);
        for (const GraphLayer& b : r.body) QCOMPARE(b.in, image(8, 8, 16));
        QCOMPARE(g.total_params, r.params + 16 * 3 + 3);
        QCOMPARE(g.total_flops, r.flops + 1024 + 2 * 16 * 3 + 3);
    }

    // Downsampling block: "same" 3x3 stride 2 at an odd size against a 1x1 stride-2
    // projection: both give ceil(9/2) = 5.
    void residual_projection()
    {
        const Graph g = build_graph(spec_of(R"([{"type": "residual", "body": [
            {"type": "conv2d", "filters": 16, "kernel": 3, "stride": 2, "padding": "same", "use_bias": false},
            {"type": "batchnorm"}], "shortcut": [
            {"type": "conv2d", "filters": 16, "kernel": 1, "stride": 2, "use_bias": false},
            {"type": "batchnorm"}]}, {"type": "flatten"}, {"type": "dense", "units": 2}])"),
                                    image(9, 9, 8), 2);
        const GraphLayer& r = g.layers[0];
        QCOMPARE(r.out, image(5, 5, 16));
        QCOMPARE(r.body[0].out, image(5, 5, 16));
        QCOMPARE(r.shortcut[0].out, image(5, 5, 16));
        QCOMPARE(r.shortcut[0].in, image(9, 9, 8));
        QCOMPARE(r.body[0].pad_h, 1);
        QCOMPARE(r.shortcut[0].pad_h, 0);
        QCOMPARE(r.params, std::int64_t(9 * 8 * 16 + 32 + 8 * 16 + 32));
        QCOMPARE(r.flops, std::int64_t(2 * 72 * 16 * 25 + 1600 + 2 * 8 * 16 * 25 + 1600 + 400));
        QCOMPARE(g.layers[1].out, Shape{{400}});
    }

    // Ids number every layer of the tree in pre-order (block, its body, its shortcut);
    // paths name where each sits.
    void ids_and_paths()
    {
        const Graph g = build_graph(spec_of(R"([{"type": "conv2d", "filters": 8, "kernel": 1},
            {"type": "residual", "body": [{"type": "batchnorm"},
                {"type": "residual", "body": [{"type": "activation", "activation": "relu"}]}],
             "shortcut": [{"type": "conv2d", "filters": 8, "kernel": 1}]},
            {"type": "global_avgpool"}, {"type": "dense", "units": 4}])"),
                                    image(3, 3, 2), 4);
        QStringList seen;
        std::vector<int> ids;
        std::function<void(const std::vector<GraphLayer>&)> walk = [&](const auto& layers) {
            for (const GraphLayer& l : layers) {
                seen << QString("%1=%2").arg(QString::fromStdString(l.path)).arg(l.id);
                ids.push_back(l.id);
                walk(l.body);
                walk(l.shortcut);
            }
        };
        walk(g.layers);
        QCOMPARE(
            seen.join(", "),
            QString("layer 0=0, layer 1=1, layer 1 > body 0=2, layer 1 > body 1=3, "
                    "layer 1 > body 1 > body 0=4, layer 1 > shortcut 0=5, layer 2=6, layer 3=7"));
        QCOMPARE(g.layers[1].body[1].body[0].index, 0);
        QCOMPARE(g.layers[1].body[1].index, 1);
        QCOMPARE(g.layers[1].shortcut[0].index, 0);
        QCOMPARE(g.layers[2].index, 2);
        // The block's totals include its nested block; the graph's count each layer once.
        QCOMPARE(g.layers[1].params,
                 std::int64_t(2 * 8 /* batchnorm */ + 8 * 8 + 8 /* shortcut */));
        QCOMPARE(g.total_params, std::int64_t((2 * 8 + 8) + (2 * 8 + 8 * 8 + 8) + (8 * 4 + 4)));
    }

    // "units": "classes" becomes the dataset's class count, in the graph's copy of the spec.
    void units_classes()
    {
        const ModelSpec spec =
            spec_of(R"([{"type": "flatten"}, {"type": "dense", "units": "classes"}])");
        for (int classes : {7, 100}) {
            const Graph g = build_graph(spec, image(4, 4, 1), classes);
            QCOMPARE(g.layers[1].spec.units, classes);
            QCOMPARE(g.layers[1].out, Shape{{classes}});
            QCOMPARE(g.total_params, std::int64_t(16 * classes + classes));
        }
        QCOMPARE(spec.layers[1].units, k_units_classes);
        // Inside a residual block too.
        const Graph g =
            build_graph(spec_of(R"([{"type": "flatten"}, {"type": "dense", "units": "classes"},
            {"type": "residual", "body": [{"type": "dense", "units": "classes", "activation": "relu"}]}])"),
                        image(2, 2, 1), 5);
        QCOMPARE(g.layers[2].body[0].spec.units, 5);
        QCOMPARE(g.layers[2].params, std::int64_t(30));
    }

    void conv_errors_data()
    {
        QTest::addColumn<QByteArray>("layers");
        QTest::addColumn<std::vector<int>>("input");
        QTest::addColumn<int>("classes");
        QTest::addColumn<QStringList>("fragments");
        QTest::addRow("conv after flatten")
            << QByteArray(
                   R"([{"type": "flatten"}, {"type": "conv2d", "filters": 4, "kernel": 3}, {"type": "dense", "units": 2}])")
            << std::vector<int>{10, 10, 30} << 2
            << QStringList{"layer 1 (conv2d): needs an image input (H, W, C) but receives 3000",
                           "before the flatten"};
        QTest::addRow("pool on a flat dataset")
            << QByteArray(
                   R"([{"type": "maxpool2d", "pool_size": 2}, {"type": "dense", "units": 2}])")
            << std::vector<int>{3000} << 2
            << QStringList{"layer 0 (maxpool2d): needs an image input (H, W, C) but receives 3000",
                           "the dataset gives flat samples"};
        QTest::addRow("global pool on a vector")
            << QByteArray(R"([{"type": "flatten"}, {"type": "global_avgpool"}])")
            << std::vector<int>{2, 2, 2} << 2
            << QStringList{
                   "layer 1 (global_avgpool): needs an image input (H, W, C) but receives 8"};
        QTest::addRow("dense after conv")
            << QByteArray(
                   R"([{"type": "conv2d", "filters": 4, "kernel": 3}, {"type": "dense", "units": 2}])")
            << std::vector<int>{8, 8, 1} << 2
            << QStringList{"layer 1 (dense): needs a flat input but receives 6x6x4",
                           "add a {\"type\": \"flatten\"} layer before it"};
        QTest::addRow("kernel larger than the input")
            << QByteArray(
                   R"([{"type": "conv2d", "filters": 4, "kernel": 5}, {"type": "global_avgpool"}])")
            << std::vector<int>{3, 4, 1} << 4
            << QStringList{"layer 0 (conv2d): its 5x5 window is larger than its input 3x4",
                           "use a smaller \"kernel\""};
        QTest::addRow("pool larger than the padded input")
            << QByteArray(
                   R"([{"type": "maxpool2d", "pool_size": 5, "padding": 1}, {"type": "global_avgpool"}])")
            << std::vector<int>{2, 2, 3} << 3
            << QStringList{
                   "layer 0 (maxpool2d): its 5x5 window is larger than its input 2x2 padded to 4x4",
                   "\"pool_size\""};
        QTest::addRow("too much downsampling")
            << QByteArray(
                   R"([{"type": "maxpool2d", "pool_size": 2}, {"type": "maxpool2d", "pool_size": 2},
                              {"type": "maxpool2d", "pool_size": 2}, {"type": "global_avgpool"}])")
            << std::vector<int>{5, 5, 3} << 3
            << QStringList{"layer 2 (maxpool2d): its 2x2 window is larger than its input 1x1",
                           "less downsampling"};
        QTest::addRow("pool padding over half the window")
            << QByteArray(
                   R"([{"type": "avgpool2d", "pool_size": 3, "padding": 2}, {"type": "global_avgpool"}])")
            << std::vector<int>{6, 6, 3} << 3
            << QStringList{"layer 0 (avgpool2d): padding 2 is more than half the 3x3 window"};
        QTest::addRow("image output")
            << QByteArray(R"([{"type": "conv2d", "filters": 10, "kernel": 3}])")
            << std::vector<int>{8, 8, 1} << 10
            << QStringList{"the model outputs a 6x6x10 tensor but the dataset has 10 classes",
                           "flatten (or global_avgpool)"};
        QTest::addRow("global pool as the output")
            << QByteArray(
                   R"([{"type": "conv2d", "filters": 4, "kernel": 3}, {"type": "global_avgpool"}])")
            << std::vector<int>{8, 8, 1} << 10
            << QStringList{"layer 1 (global_avgpool): the model outputs 4 values but the dataset "
                           "has 10 classes",
                           "end the model with a dense layer of 10 units"};
        // Residual blocks.
        QTest::addRow("identity shortcut after a stride-2 body")
            << QByteArray(R"([{"type": "batchnorm"}, {"type": "residual", "body": [
                   {"type": "conv2d", "filters": 32, "kernel": 3, "stride": 2, "padding": "same"}]},
                   {"type": "global_avgpool"}, {"type": "dense", "units": 2}])")
            << std::vector<int>{8, 8, 16} << 2
            << QStringList{
                   "layer 1 (residual): body gives 4x4x32 but shortcut gives 8x8x16 (the identity: "
                   "the block's input)",
                   "same shape",
                   "\"shortcut\": [{\"type\": \"conv2d\", \"filters\": 32, \"kernel\": 1, "
                   "\"stride\": 2, \"use_bias\": false}, {\"type\": \"batchnorm\"}] would match"};
        QTest::addRow("shortcut with the wrong stride, odd size")
            << QByteArray(R"([{"type": "residual", "body": [
                   {"type": "conv2d", "filters": 8, "kernel": 3, "stride": 2, "padding": "same"}],
                   "shortcut": [{"type": "conv2d", "filters": 8, "kernel": 1}]},
                   {"type": "global_avgpool"}, {"type": "dense", "units": 2}])")
            << std::vector<int>{7, 7, 8} << 2
            << QStringList{"layer 0 (residual): body gives 4x4x8 but shortcut gives 7x7x8;",
                           "\"filters\": 8, \"kernel\": 1, \"stride\": 2"};
        QTest::addRow("channel change only")
            << QByteArray(
                   R"([{"type": "residual", "body": [{"type": "conv2d", "filters": 8, "kernel": 3, "padding": "same"}]},
                   {"type": "global_avgpool"}, {"type": "dense", "units": 2}])")
            << std::vector<int>{5, 5, 4} << 2
            << QStringList{
                   "body gives 5x5x8 but shortcut gives 5x5x4",
                   "[{\"type\": \"conv2d\", \"filters\": 8, \"kernel\": 1, \"use_bias\": false}"};
        QTest::addRow("mismatch in a nested block")
            << QByteArray(
                   R"([{"type": "residual", "body": [{"type": "batchnorm"}, {"type": "residual", "body": [
                   {"type": "maxpool2d", "pool_size": 2}]}]}, {"type": "global_avgpool"}, {"type": "dense", "units": 2}])")
            << std::vector<int>{6, 6, 2} << 2
            << QStringList{
                   "layer 0 > body 1 (residual): body gives 3x3x2 but shortcut gives 6x6x2"};
        QTest::addRow("flat mismatch")
            << QByteArray(
                   R"([{"type": "flatten"}, {"type": "residual", "body": [{"type": "dense", "units": 4}]}, {"type": "dense", "units": 2}])")
            << std::vector<int>{3, 3, 1} << 2
            << QStringList{"layer 1 (residual): body gives 4 but shortcut gives 9",
                           "[{\"type\": \"dense\", \"units\": 4}] would match"};
        QTest::addRow("shape error inside a body")
            << QByteArray(
                   R"([{"type": "residual", "body": [{"type": "batchnorm"}, {"type": "dense", "units": 2}]}])")
            << std::vector<int>{4, 4, 2} << 2
            << QStringList{"layer 0 > body 1 (dense): needs a flat input but receives 4x4x2"};
        QTest::addRow("window error inside a shortcut")
            << QByteArray(
                   R"([{"type": "residual", "body": [{"type": "batchnorm"}], "shortcut": [{"type": "conv2d", "filters": 2, "kernel": 9}]}])")
            << std::vector<int>{4, 4, 2} << 2
            << QStringList{
                   "layer 0 > shortcut 0 (conv2d): its 9x9 window is larger than its input 4x4"};
    }
    void conv_errors()
    {
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

    // Values only code can make (the parser refuses them) are checked by build_graph too.
    void conv_errors_from_code()
    {
        auto message = [](const std::vector<LayerSpec>& layers, const Shape& in, int classes) {
            ModelSpec spec;
            spec.layers = layers;
            return QString::fromStdString(
                test::thrown_message<SpecError>([&] { build_graph(spec, in, classes); }));
        };
        LayerSpec gap;
        gap.type = LayerType::GlobalAvgPool;
        LayerSpec conv;
        conv.type = LayerType::Conv2D;
        conv.filters = 4;
        conv.kernel_h = conv.kernel_w = 4;
        conv.padding = Padding::Same;
        QString msg = message({conv, gap}, image(8, 8, 1), 4);
        QVERIFY2(msg.contains("layer 0 (conv2d): \"padding\": \"same\" needs an odd \"kernel\"") &&
                     msg.contains("4x4"),
                 qPrintable(msg));
        conv.padding = Padding::Valid;
        conv.filters = 0;
        msg = message({conv, gap}, image(8, 8, 1), 4);
        QVERIFY2(msg.contains("\"filters\" must be a positive integer, got 0"), qPrintable(msg));
        conv.filters = 4;
        conv.kernel_w = 0;
        msg = message({conv, gap}, image(8, 8, 1), 4);
        QVERIFY2(msg.contains("\"kernel\" must be positive"), qPrintable(msg));
        conv.kernel_w = 4;
        conv.activation = Activation::Softmax;
        msg = message({conv, gap}, image(8, 8, 1), 4);
        QVERIFY2(msg.contains("softmax"), qPrintable(msg));
        conv.activation = Activation::None;
        conv.filters = 65536;
        conv.kernel_h = conv.kernel_w = 64;
        msg = message({conv, gap}, image(64, 64, 4096), 65536);
        QVERIFY2(msg.contains("more weights than one layer may hold"), qPrintable(msg));

        LayerSpec bn;
        bn.type = LayerType::BatchNorm;
        bn.epsilon = 0.0f;
        msg = message({bn, gap}, image(2, 2, 3), 3);
        QVERIFY2(msg.contains("\"epsilon\" must be a positive number"), qPrintable(msg));
        bn.epsilon = 1e-5f;
        bn.momentum = 2.0f;
        msg = message({bn, gap}, image(2, 2, 3), 3);
        QVERIFY2(msg.contains("\"momentum\" must be a number in [0, 1]"), qPrintable(msg));

        LayerSpec block;
        block.type = LayerType::Residual;
        msg = message({block, gap}, image(2, 2, 3), 3);
        QVERIFY2(msg.contains("layer 0 (residual): \"body\" is empty"), qPrintable(msg));
        bn.momentum = 0.1f;
        block.body = {bn};
        block.activation = Activation::Tanh;
        msg = message({block, gap}, image(2, 2, 3), 3);
        QVERIFY2(msg.contains("\"relu\" or \"linear\""), qPrintable(msg));
        block.activation = Activation::Relu;
        QCOMPARE(message({block, gap}, image(2, 2, 3), 3), QString());

        LayerSpec dense;
        dense.units = k_units_vocab - 1; // below both sentinels
        msg = message({dense}, Shape{{3}}, 3);
        QVERIFY2(msg.contains("\"units\" must be a positive integer, got -3"), qPrintable(msg));
    }

    // A softmax inside a block is warned about like one before the output.
    void softmax_inside_a_block_warns()
    {
        const Graph g = build_graph(spec_of(R"([{"type": "flatten"}, {"type": "residual", "body": [
            {"type": "dense", "units": 4, "activation": "softmax"}]}, {"type": "dense", "units": 2}])"),
                                    Shape{{4}}, 2);
        QCOMPARE(g.warnings.size(), std::size_t(1));
        QVERIFY2(QString::fromStdString(g.warnings[0])
                     .startsWith("layer 1 > body 0 (dense): softmax before"),
                 g.warnings[0].c_str());
    }
};

QTEST_APPLESS_MAIN(TestGraph)
#include "tst_graph.moc"
