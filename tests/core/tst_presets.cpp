// Tests for the shipped model presets (resources/models/): each parses and builds for the
// input it is meant for, with the parameter counts of the networks it reproduces.
#include "mixlab/error.h"
#include "mixlab/graph.h"
#include "mixlab/model_spec.h"

#include <QtTest/QtTest>

#include <QDir>

#include <cmath>
#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

using namespace mixlab;

Q_DECLARE_METATYPE(std::vector<int>)

namespace {

QString models_dir() { return QStringLiteral(MIXLAB_SOURCE_DIR "/resources/models"); }

Graph build(const QString& file, const Shape& input, int classes)
{
    return build_graph(load_model_spec((models_dir() + "/" + file).toStdString()), input, classes);
}

// Every layer of the tree, pre-order.
void walk(const std::vector<GraphLayer>& layers, const std::function<void(const GraphLayer&)>& f)
{
    for (const GraphLayer& l : layers) {
        f(l);
        walk(l.body, f);
        walk(l.shortcut, f);
    }
}

Shape image(int h, int w, int c) { return Shape{{h, w, c}}; }

const Shape k_cifar = image(32, 32, 3);
const Shape k_mnist = image(28, 28, 1);
const Shape k_tokens = Shape::tokens();
// WikiText-2's vocabulary, as the word_language_model example reads it.
constexpr int k_wikitext2_words = 33278;

// Every preset, the input it is meant for and its parameter count. ResNets, CIFAR form
// (3x3 stem, 100 classes): torchvision's counts (1000 classes, 7x7 stem) minus the 7x7
// stem (7*7*3*64 = 9408) plus the 3x3 one (3*3*3*64 = 1728), minus the 1000-class head
// plus a 100-class one:
//   resnet18  11,689,512 - 7,680 - 513,000 + 51,300     = 11,220,132
//   resnet34  21,797,672 - 7,680 - 513,000 + 51,300     = 21,328,292
//   resnet50  25,557,032 - 7,680 - 2,049,000 + 204,900  = 23,705,252
//   resnet101 44,549,160 - 7,680 - 2,049,000 + 204,900  = 42,697,380
//   resnet152 60,192,808 - 7,680 - 2,049,000 + 204,900  = 58,341,028
struct Preset {
    const char* file;
    Shape input;
    int classes;
    std::int64_t params;
};
const Preset k_presets[] = {
    {"resnet18.json", k_cifar, 100, 11220132},
    {"resnet34.json", k_cifar, 100, 21328292},
    {"resnet50.json", k_cifar, 100, 23705252},
    {"resnet101.json", k_cifar, 100, 42697380},
    {"resnet152.json", k_cifar, 100, 58341028},
    // conv 5*5*1*6+6, conv 5*5*6*16+16, dense 400*120+120, 120*84+84, 84*10+10
    {"lenet5.json", k_mnist, 10, 156 + 2416 + 48120 + 10164 + 850},
    // conv 3*3*1*32+32, conv 3*3*32*64+64, dense 7*7*64*128+128, 128*10+10
    {"small-cnn.json", k_mnist, 10, 288 + 64 + 18432 + 128 + 401408 + 256 + 1290},
    {"seed-mlp.json", k_cifar, 10, 12230010},
    {"seed-mlp-fixed.json", k_cifar, 10, 12230010},
    {"mnist-mlp.json", k_mnist, 10, 784 * 256 + 256 + 256 * 128 + 128 + 128 * 10 + 10},
    // PyTorch's word_language_model on WikiText-2: embedding V*E, per LSTM layer
    // 4H(I+H+2) (b_ih and b_hh), decoder H*V+V, or V alone when tied to the embedding.
    {"word-lm-small.json", k_tokens, k_wikitext2_words,
     33278LL * 200 + 2 * 4 * 200 * (200 + 200 + 2) + 200LL * 33278 + 33278}, // 13,987,678
    {"word-lm-medium.json", k_tokens, k_wikitext2_words,
     33278LL * 650 + 2 * 4 * 650 * (650 + 650 + 2) + 33278}, // 28,434,378
    {"word-lm-large.json", k_tokens, k_wikitext2_words,
     33278LL * 1500 + 2LL * 4 * 1500 * (1500 + 1500 + 2) + 33278}, // 85,974,278
};

} // namespace

class TestPresets : public QObject {
    Q_OBJECT

private slots:
    void presets_data()
    {
        QTest::addColumn<QString>("file");
        QTest::addColumn<std::vector<int>>("input");
        QTest::addColumn<int>("classes");
        QTest::addColumn<qint64>("params");
        QTest::addColumn<bool>("sequence");
        for (const Preset& p : k_presets)
            QTest::addRow("%s", p.file) << QString(p.file) << p.input.dims << p.classes
                                        << qint64(p.params) << p.input.sequence;
    }
    void presets()
    {
        QFETCH(QString, file);
        QFETCH(std::vector<int>, input);
        QFETCH(int, classes);
        QFETCH(qint64, params);
        QFETCH(bool, sequence);
        try {
            const Graph g = build(file, Shape{input, sequence}, classes);
            QCOMPARE(QString::fromStdString(g.name) + ".json", file);
            QCOMPARE(qint64(g.total_params), params);
            QCOMPARE(g.layers.back().out, (Shape{{classes}, sequence}));
            // Only the seed's MLP ends in a sigmoid, on purpose, and is warned about.
            QCOMPARE(g.warnings.size(), std::size_t(file == "seed-mlp.json" ? 1 : 0));
            // Totals are the sums over the top level; ids number the whole tree once.
            std::int64_t sum_params = 0, sum_flops = 0;
            for (const GraphLayer& l : g.layers) {
                sum_params += l.params;
                sum_flops += l.flops;
            }
            QCOMPARE(g.total_params, sum_params);
            QCOMPARE(g.total_flops, sum_flops);
            std::set<int> ids;
            int n = 0;
            walk(g.layers, [&](const GraphLayer& l) {
                ids.insert(l.id);
                ++n;
            });
            QCOMPARE(int(ids.size()), n);
            QCOMPARE(*ids.rbegin(), n - 1);
        } catch (const std::exception& e) {
            QFAIL(qPrintable(file + ": " + e.what()));
        }
    }

    // A new preset must get a row in k_presets.
    void every_file_is_tested()
    {
        QStringList files = QDir(models_dir()).entryList({"*.json"}, QDir::Files);
        QStringList tested;
        for (const Preset& p : k_presets) tested << p.file;
        files.sort();
        tested.sort();
        QCOMPARE(files, tested);
    }

    // The language models read tokens, the others images: each given the other's input
    // says what is wrong rather than building something meaningless.
    void language_models_need_tokens()
    {
        for (const char* f : {"word-lm-small.json", "word-lm-medium.json", "word-lm-large.json"}) {
            try {
                build(f, k_cifar, 10);
                QFAIL(qPrintable(QString(f) + " built on an image input"));
            } catch (const SpecError& e) {
                QVERIFY2(QString(e.what()).contains("layer 0 (embedding): needs token input"),
                         e.what());
            }
        }
        try {
            build("small-cnn.json", k_tokens, 10000);
            QFAIL("small-cnn built on token input");
        } catch (const SpecError& e) {
            QVERIFY2(QString(e.what()).contains("layer 0 (conv2d): a language model's input is "
                                                "one word id per time step"),
                     e.what());
        }
        // On synthetic-text's default vocabulary (10000, a multiple of 8) the decoder suits
        // tensor cores; on WikiText-2's (33278) it does not, and the note says why.
        const Graph synthetic = build("word-lm-small.json", k_tokens, 10000);
        QVERIFY(synthetic.layers.back().tensor_core_friendly);
        const Graph wiki = build("word-lm-small.json", k_tokens, k_wikitext2_words);
        QVERIFY(!wiki.layers.back().tensor_core_friendly);
        QVERIFY2(QString::fromStdString(wiki.layers.back().tensor_core_note)
                     .contains("vocab 33278 is not a multiple of 8 (33280 would be)"),
                 wiki.layers.back().tensor_core_note.c_str());
    }

    // The acceptance: ResNet-18 on CIFAR-100 has 11.2 M parameters, within 1 %.
    void resnet18_within_one_percent()
    {
        const Graph g = build("resnet18.json", k_cifar, 100);
        QVERIFY(std::abs(double(g.total_params) - 11.2e6) <= 0.01 * 11.2e6);
    }

    // The CIFAR ResNets' layout: 3x3 stem without max-pool, four stages halving the
    // size from the second on, projection shortcuts only where the shape changes, a
    // global pool and the classifier.
    void resnet_layout_data()
    {
        QTest::addColumn<QString>("file");
        QTest::addColumn<std::vector<int>>("blocks");
        QTest::addColumn<int>("expansion");
        QTest::addRow("resnet18") << "resnet18.json" << std::vector<int>{2, 2, 2, 2} << 1;
        QTest::addRow("resnet34") << "resnet34.json" << std::vector<int>{3, 4, 6, 3} << 1;
        QTest::addRow("resnet50") << "resnet50.json" << std::vector<int>{3, 4, 6, 3} << 4;
        QTest::addRow("resnet101") << "resnet101.json" << std::vector<int>{3, 4, 23, 3} << 4;
        QTest::addRow("resnet152") << "resnet152.json" << std::vector<int>{3, 8, 36, 3} << 4;
    }
    void resnet_layout()
    {
        QFETCH(QString, file);
        QFETCH(std::vector<int>, blocks);
        QFETCH(int, expansion);
        const Graph g = build(file, k_cifar, 100);
        int total_blocks = 0;
        for (int b : blocks) total_blocks += b;
        QCOMPARE(int(g.layers.size()), 3 + total_blocks + 2);
        QCOMPARE(g.layers[0].spec.type, LayerType::Conv2D);
        QCOMPARE(g.layers[0].spec.kernel_h, 3);
        QCOMPARE(g.layers[0].out, image(32, 32, 64));
        QCOMPARE(g.layers[1].spec.type, LayerType::BatchNorm);
        QCOMPARE(g.layers[2].spec.activation, Activation::Relu);

        std::size_t at = 3;
        int channels = 64;
        for (int stage = 0; stage < 4; ++stage) {
            const int size = 32 >> stage, width = 64 << stage;
            for (int i = 0; i < blocks[std::size_t(stage)]; ++i, ++at) {
                const GraphLayer& b = g.layers[at];
                const QString where = QString("%1 stage %2 block %3").arg(file).arg(stage).arg(i);
                QVERIFY2(b.spec.type == LayerType::Residual, qPrintable(where));
                QVERIFY2(b.spec.activation == Activation::Relu, qPrintable(where));
                QVERIFY2(b.out == image(size, size, width * expansion), qPrintable(where));
                QCOMPARE(b.body.size(), std::size_t(expansion == 1 ? 5 : 8));
                const bool projects = channels != width * expansion || (stage > 0 && i == 0);
                QVERIFY2(b.shortcut.size() == (projects ? 2u : 0u), qPrintable(where));
                if (projects) {
                    QCOMPARE(b.shortcut[0].spec.kernel_h, 1);
                    QCOMPARE(b.shortcut[0].stride_h, stage > 0 && i == 0 ? 2 : 1);
                    QCOMPARE(b.shortcut[1].spec.type, LayerType::BatchNorm);
                }
                // The stride sits on the first 3x3 convolution (torchvision's v1.5).
                bool first_3x3 = true;
                for (const GraphLayer& l : b.body) {
                    if (l.spec.type != LayerType::Conv2D) continue;
                    const bool strided = l.spec.kernel_h == 3 && first_3x3 && stage > 0 && i == 0;
                    QCOMPARE(l.stride_h, strided ? 2 : 1);
                    if (l.spec.kernel_h == 3) first_3x3 = false;
                }
                channels = width * expansion;
            }
        }
        QCOMPARE(g.layers[at].spec.type, LayerType::GlobalAvgPool);
        QCOMPARE(g.layers[at].out, Shape{{512 * expansion}});
        QCOMPARE(g.layers[at + 1].spec.units, 100); // "units": "classes", resolved
        QCOMPARE(g.head, OutputHead::Logits);

        // No convolution has a bias (batch norm's shift replaces it); every one but the
        // RGB stem fits tensor cores.
        int convs = 0;
        walk(g.layers, [&](const GraphLayer& l) {
            if (l.spec.type != LayerType::Conv2D) return;
            ++convs;
            QVERIFY(!l.spec.use_bias);
            if (l.path == "layer 0") {
                QVERIFY(!l.tensor_core_friendly);
                QCOMPARE(QString::fromStdString(l.tensor_core_note),
                         QString("input channels 3 is not a multiple of 8 (8 would be)"));
            } else {
                QVERIFY2(l.tensor_core_friendly, l.path.c_str());
            }
        });
        QCOMPARE(convs, 1 + total_blocks * (expansion == 1 ? 2 : 3) + 4 - (expansion == 1 ? 1 : 0));
    }

    // Forward FLOPs per sample. ResNet-18 on CIFAR is ~0.56 G multiply-adds (published
    // counts), so ~1.11 GFLOPs; batch norm, ReLU and the adds put a little on top.
    void resnet_flops()
    {
        const Graph r18 = build("resnet18.json", k_cifar, 100);
        QVERIFY2(r18.total_flops > 1.10e9 && r18.total_flops < 1.16e9,
                 qPrintable(QString::number(r18.total_flops)));
        const Graph r50 = build("resnet50.json", k_cifar, 100);
        QVERIFY2(r50.total_flops > 2.55e9 && r50.total_flops < 2.75e9,
                 qPrintable(QString::number(r50.total_flops)));
    }

    // The ResNets also build for Fashion-MNIST's native 28x28x1 and CIFAR-10.
    void resnets_on_other_inputs()
    {
        for (const char* f : {"resnet18.json", "resnet34.json", "resnet50.json", "resnet101.json",
                              "resnet152.json"}) {
            const Graph mnist = build(f, k_mnist, 10);
            QCOMPARE(mnist.layers[mnist.layers.size() - 2].in.dims[0], 4); // 28, 14, 7, 4
            const Graph cifar10 = build(f, k_cifar, 10);
            const Graph cifar100 = build(f, k_cifar, 100);
            // Only the head differs: (512 or 2048 inputs + 1) * 90.
            const std::int64_t head_inputs = cifar10.layers.back().in.dims[0];
            QCOMPARE(cifar100.total_params - cifar10.total_params, (head_inputs + 1) * 90);
        }
    }

    void small_cnns()
    {
        const Graph lenet = build("lenet5.json", k_mnist, 10);
        QStringList outs;
        for (const GraphLayer& l : lenet.layers) outs << QString::fromStdString(l.out.to_string());
        QCOMPARE(outs.join(' '), QString("28x28x6 14x14x6 10x10x16 5x5x16 400 120 84 10"));

        const Graph cnn = build("small-cnn.json", k_mnist, 10);
        outs.clear();
        for (const GraphLayer& l : cnn.layers) outs << QString::fromStdString(l.out.to_string());
        QCOMPARE(outs.join(' '), QString("28x28x32 28x28x32 28x28x32 14x14x32 14x14x64 14x14x64 "
                                         "14x14x64 7x7x64 3136 128 128 128 10"));
        // conv1 2*9*1*32*784 (no bias); bn 4 and relu 1 per element; pool 4 per output;
        // conv2 2*9*32*64*196; bn, relu, pool; dense 2*3136*128 (no bias), bn, relu;
        // dense 2*128*10 + bias. Small enough for two Fashion-MNIST epochs on a 2-core CPU.
        const std::int64_t flops = 451584 + 5 * 25088 + 4 * 6272 + 7225344 + 5 * 12544 + 4 * 3136 +
                                   2 * 3136 * 128 + 5 * 128 + (2 * 128 * 10 + 10);
        QCOMPARE(cnn.total_flops, flops);
        QVERIFY(cnn.layers[4].tensor_core_friendly);
        QCOMPARE(QString::fromStdString(cnn.layers[0].tensor_core_note),
                 QString("input channels 1 is not a multiple of 8 (8 would be)"));
        // On CIFAR's 32x32x3 too.
        QCOMPARE(build("lenet5.json", k_cifar, 10).layers[4].out, Shape{{6 * 6 * 16}});
        QCOMPARE(build("small-cnn.json", k_cifar, 100).layers[8].out, Shape{{8 * 8 * 64}});
    }
};

QTEST_APPLESS_MAIN(TestPresets)
#include "tst_presets.moc"
