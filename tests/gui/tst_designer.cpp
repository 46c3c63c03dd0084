// ModelDesigner on flat models: presets, the live shape/params/tensor-core columns, every
// edit and its undo/redo (compared as written JSON), merged spin edits, validation and
// setInput. Residual blocks and the convolutional presets: tst_designer_resnet.
#include "designer/layerpropertyeditor.h"
#include "designer/layertree.h"
#include "designer/modeldesigner.h"

#include "mixlab/model_spec.h"

#include <QAction>
#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFile>
#include <QLabel>
#include <QLineEdit>
#include <QLocale>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTest>
#include <QUndoStack>

using mixlab::Activation;
using mixlab::LayerSpec;
using mixlab::LayerType;
using mixlab::ModelSpec;

namespace {

QString json(const ModelSpec &s) { return QString::fromStdString(mixlab::model_spec_to_json(s)); }

ModelSpec resourcePreset(const QString &file)
{
    QFile f(QStringLiteral(":/models/") + file);
    if (!f.open(QIODevice::ReadOnly)) return {};
    return mixlab::parse_model_spec(f.readAll().toStdString());
}

LayerSpec dense(int units, Activation a = Activation::None)
{
    LayerSpec l;
    l.type = LayerType::Dense;
    l.units = units;
    l.activation = a;
    return l;
}

QString cell(ModelDesigner &d, int row, int column)
{
    QTreeWidgetItem *item = d.layerTree()->topLevelItem(row);
    return item ? item->text(column) : QStringLiteral("<no row>");
}

// The seed MLP with a dropout 0.25 after the first dense layer:
//   0 flatten, 1 dense 3000 relu, 2 dropout 0.25, 3 dense 1000 relu, 4 dense 10,
//   5 activation sigmoid (float32)
ModelSpec baseSpec()
{
    ModelSpec s = resourcePreset(QStringLiteral("seed-mlp.json"));
    LayerSpec drop{LayerType::Dropout};
    drop.rate = 0.25f;
    s.layers.insert(s.layers.begin() + 2, drop);
    return s;
}

template <typename W>
W *field(ModelDesigner &d, const char *name)
{
    return d.propertyEditor()->findChild<W *>(QLatin1String(name));
}

// The edits the designer offers, driven as the user would (toolbar calls and the
// property editor's widgets), so the tests cover the signal path too.
enum class Op {
    Add,
    Remove,
    MoveUp,
    MoveDown,
    Duplicate,
    Units,
    Activation,
    UseBias,
    Rate,
    ForceFp32,
    Rename
};

} // namespace

Q_DECLARE_METATYPE(Op)

class TestDesigner : public QObject {
    Q_OBJECT
private slots:
    void presets();
    void languageModelPresets();
    void seedColumns_data();
    void seedColumns();
    void edits_data();
    void edits();
    void noOpEditsPushNothing();
    void spinEditsMerge();
    void invalidOutputWidth();
    void invalidStructure();
    void setInputUpdatesShapes();
    void undoActions();
    void actionStates();
};

// The language-model presets load beside the others. With an image dataset chosen the
// designer still shows their figures (built on synthetic-text's vocabulary) and says what
// to choose instead; on token input they validate with the corpus's vocabulary.
void TestDesigner::languageModelPresets()
{
    ModelDesigner d;
    for (const char *n : {"word-lm-small", "word-lm-medium", "word-lm-large"}) {
        QVERIFY2(d.presetNames().contains(QLatin1String(n)), n);
        QVERIFY(d.loadPreset(QLatin1String(n)));
        QCOMPARE(d.layerTree()->topLevelItemCount(), 5);
        QVERIFY(d.isLanguageModel());
        QVERIFY2(d.isValid(), qPrintable(d.validationMessage()));
        QVERIFY(d.graphInput().is_tokens());
        QVERIFY2(d.dataMismatch().contains(QLatin1String("choose synthetic-text or a corpus")),
                 qPrintable(d.dataMismatch()));
    }
    QCOMPARE(cell(d, 0, LayerTree::LayerColumn), QStringLiteral("embedding dataset x 1500"));
    QCOMPARE(cell(d, 2, LayerTree::LayerColumn),
             QStringLiteral("lstm 1500 x2 layers, dropout 0.65"));
    QCOMPARE(cell(d, 4, LayerTree::LayerColumn),
             QStringLiteral("dense vocab, tied to the embedding"));
    d.setInput(mixlab::Shape::tokens(), 33278);
    QVERIFY2(d.isValid(), qPrintable(d.validationMessage()));
    QVERIFY(d.dataMismatch().isEmpty());
    QCOMPARE(d.graphClasses(), 33278);
}

void TestDesigner::presets()
{
    ModelDesigner d;
    const QStringList names = d.presetNames();
    for (const char *n : {"seed-mlp", "seed-mlp-fixed", "mnist-mlp"})
        QVERIFY2(names.contains(QLatin1String(n)), qPrintable(names.join(u',')));

    d.setSpec(ModelSpec{"scratch", {dense(10)}});
    QCOMPARE(d.undoStack()->count(), 0);
    QSignalSpy changed(&d, &ModelDesigner::specChanged);

    QVERIFY(d.loadPreset(QStringLiteral("seed-mlp")));
    QCOMPARE(changed.count(), 1);
    const ModelSpec seed = resourcePreset(QStringLiteral("seed-mlp.json"));
    QCOMPARE(seed.layers.size(), std::size_t(5));
    QCOMPARE(json(d.spec()), json(seed));
    QCOMPARE(d.layerTree()->topLevelItemCount(), 5);
    const QStringList expected = {"flatten", "dense 3000 relu", "dense 1000 relu", "dense 10",
                                  "activation sigmoid (float32)"};
    for (int i = 0; i < expected.size(); ++i) {
        QCOMPARE(cell(d, i, LayerTree::IndexColumn), QString::number(i));
        QCOMPARE(cell(d, i, LayerTree::LayerColumn), expected[i]);
    }
    QCOMPARE(d.findChild<QLineEdit *>(QStringLiteral("modelName"))->text(),
             QStringLiteral("seed-mlp"));
    QVERIFY(d.isValid());
    // The seed MLP's sigmoid output is exactly what the engine warns about.
    QCOMPARE(d.warnings().size(), 1);
    QVERIFY(d.warnings().first().contains(QLatin1String("sigmoid")));

    // Loading is one undoable step.
    QCOMPARE(d.undoStack()->count(), 1);
    d.undoStack()->undo();
    QCOMPARE(json(d.spec()), json(ModelSpec{"scratch", {dense(10)}}));
    QCOMPARE(d.layerTree()->topLevelItemCount(), 1);
    d.undoStack()->redo();
    QCOMPARE(json(d.spec()), json(seed));

    // By file name too; softmax output gives no warning.
    QVERIFY(d.loadPreset(QStringLiteral("mnist-mlp.json")));
    QCOMPARE(json(d.spec()), json(resourcePreset(QStringLiteral("mnist-mlp.json"))));
    QCOMPARE(cell(d, 4, LayerTree::LayerColumn), QStringLiteral("activation softmax (float32)"));
    QVERIFY(d.warnings().isEmpty());

    const int before = d.undoStack()->count();
    QVERIFY(!d.loadPreset(QStringLiteral("no-such-preset")));
    QCOMPARE(d.undoStack()->count(), before);
}

void TestDesigner::seedColumns_data()
{
    QTest::addColumn<int>("row");
    QTest::addColumn<QString>("output");
    QTest::addColumn<qint64>("params");
    QTest::addColumn<qint64>("flops");
    QTest::addColumn<QString>("tensorCores");
    QTest::addColumn<QString>("tipMentions");

    // 32x32x3 inputs, 10 classes. FLOPs: 2*in*units + bias + one per activation output.
    QTest::newRow("flatten") << 0 << "3072" << qint64(0) << qint64(0) << "\u2013"
                             << "";
    QTest::newRow("dense 3000") << 1 << "3000" << qint64(9219000)
                                << qint64(2LL * 3072 * 3000 + 3000 + 3000) << "yes"
                                << "";
    QTest::newRow("dense 1000") << 2 << "1000" << qint64(3001000)
                                << qint64(2LL * 3000 * 1000 + 1000 + 1000) << "yes"
                                << "";
    QTest::newRow("dense 10") << 3 << "10" << qint64(10010) << qint64(2LL * 1000 * 10 + 10) << "no"
                              << "units 10 is not a multiple of 8";
    QTest::newRow("sigmoid") << 4 << "10" << qint64(0) << qint64(10) << "\u2013"
                             << "";
}

void TestDesigner::seedColumns()
{
    QFETCH(int, row);
    QFETCH(QString, output);
    QFETCH(qint64, params);
    QFETCH(qint64, flops);
    QFETCH(QString, tensorCores);
    QFETCH(QString, tipMentions);

    ModelDesigner d;
    d.setSpec({});
    QVERIFY(d.loadPreset(QStringLiteral("seed-mlp")));
    QTreeWidgetItem *item = d.layerTree()->topLevelItem(row);
    QVERIFY(item);
    QCOMPARE(item->text(LayerTree::OutputColumn), output);
    QCOMPARE(item->data(LayerTree::ParamsColumn, LayerTree::k_valueRole).toLongLong(), params);
    QCOMPARE(item->text(LayerTree::ParamsColumn), QLocale().toString(params));
    QCOMPARE(item->data(LayerTree::FlopsColumn, LayerTree::k_valueRole).toLongLong(), flops);
    QCOMPARE(item->text(LayerTree::TensorCoreColumn), tensorCores);
    if (!tipMentions.isEmpty())
        QVERIFY2(item->toolTip(LayerTree::TensorCoreColumn).contains(tipMentions),
                 qPrintable(item->toolTip(LayerTree::TensorCoreColumn)));
    if (tensorCores == QLatin1String("no"))
        QVERIFY(item->toolTip(LayerTree::TensorCoreColumn).contains(QLatin1Char('8')));

    QVERIFY(d.graph().has_value());
    QCOMPARE(d.graph()->total_params, std::int64_t(12230010));
    QCOMPARE(d.graph()->total_flops, std::int64_t(24460020));
    const QString totals = d.findChild<QLabel *>(QStringLiteral("totals"))->text();
    QVERIFY2(totals.contains(QLocale().toString(qint64(12230010))), qPrintable(totals));
}

void TestDesigner::edits_data()
{
    QTest::addColumn<Op>("op");
    QTest::addColumn<int>("row"); // selected before the edit (-1: none)
    QTest::addColumn<QVariant>("value");
    QTest::addColumn<QString>("expected"); // the spec after the edit, as JSON

    const ModelSpec base = baseSpec();
    auto with = [&](auto change) {
        ModelSpec s = base;
        change(s);
        return json(s);
    };
    auto L = [](ModelSpec &s, int i) -> LayerSpec & { return s.layers[std::size_t(i)]; };

    QTest::newRow("add dense after 1")
        << Op::Add << 1 << QVariant(int(LayerType::Dense)) << with([](ModelSpec &s) {
               s.layers.insert(s.layers.begin() + 2, dense(128, Activation::Relu));
           });
    QTest::newRow("add flatten with none selected")
        << Op::Add << -1 << QVariant(int(LayerType::Flatten))
        << with([](ModelSpec &s) { s.layers.push_back(LayerSpec{LayerType::Flatten}); });
    QTest::newRow("add dropout after 5")
        << Op::Add << 5 << QVariant(int(LayerType::Dropout)) << with([](ModelSpec &s) {
               LayerSpec l{LayerType::Dropout};
               l.rate = 0.5f;
               s.layers.push_back(l);
           });
    QTest::newRow("add activation after 0")
        << Op::Add << 0 << QVariant(int(LayerType::Activation)) << with([](ModelSpec &s) {
               LayerSpec l{LayerType::Activation};
               l.activation = Activation::Relu;
               s.layers.insert(s.layers.begin() + 1, l);
           });
    QTest::newRow("remove 2") << Op::Remove << 2 << QVariant()
                              << with([](ModelSpec &s) { s.layers.erase(s.layers.begin() + 2); });
    QTest::newRow("remove last") << Op::Remove << 5 << QVariant()
                                 << with([](ModelSpec &s) { s.layers.pop_back(); });
    QTest::newRow("move 3 up") << Op::MoveUp << 3 << QVariant()
                               << with([](ModelSpec &s) { std::swap(s.layers[2], s.layers[3]); });
    QTest::newRow("move 1 down") << Op::MoveDown << 1 << QVariant()
                                 << with([](ModelSpec &s) { std::swap(s.layers[1], s.layers[2]); });
    QTest::newRow("duplicate 3") << Op::Duplicate << 3 << QVariant() << with([](ModelSpec &s) {
        s.layers.insert(s.layers.begin() + 4, s.layers[3]);
    });
    QTest::newRow("units 3 -> 512")
        << Op::Units << 3 << QVariant(512) << with([&](ModelSpec &s) { L(s, 3).units = 512; });
    QTest::newRow("activation 1 -> gelu")
        << Op::Activation << 1 << QVariant(int(Activation::Gelu))
        << with([&](ModelSpec &s) { L(s, 1).activation = Activation::Gelu; });
    QTest::newRow("activation 5 -> softmax")
        << Op::Activation << 5 << QVariant(int(Activation::Softmax))
        << with([&](ModelSpec &s) { L(s, 5).activation = Activation::Softmax; });
    QTest::newRow("dense 4 without bias") << Op::UseBias << 4 << QVariant(false)
                                          << with([&](ModelSpec &s) { L(s, 4).use_bias = false; });
    QTest::newRow("rate 2 -> 0.6")
        << Op::Rate << 2 << QVariant(0.6) << with([&](ModelSpec &s) { L(s, 2).rate = 0.6f; });
    QTest::newRow("dense 1 in float32") << Op::ForceFp32 << 1 << QVariant(true)
                                        << with([&](ModelSpec &s) { L(s, 1).force_fp32 = true; });
    QTest::newRow("sigmoid 5 out of float32")
        << Op::ForceFp32 << 5 << QVariant(false)
        << with([&](ModelSpec &s) { L(s, 5).force_fp32 = false; });
    QTest::newRow("rename") << Op::Rename << 0 << QVariant(QStringLiteral("my mlp"))
                            << with([](ModelSpec &s) { s.name = "my mlp"; });
}

void TestDesigner::edits()
{
    QFETCH(Op, op);
    QFETCH(int, row);
    QFETCH(QVariant, value);
    QFETCH(QString, expected);

    ModelDesigner d;
    d.setSpec(baseSpec());
    const QString original = json(d.spec());
    d.selectRow(row);
    QCOMPARE(d.selectedRow(), row);
    if (row >= 0) QCOMPARE(d.propertyEditor()->layerPath(), LayerPath::top(row));
    QSignalSpy changed(&d, &ModelDesigner::specChanged);

    switch (op) {
    case Op::Add: d.addLayer(LayerType(value.toInt())); break;
    case Op::Remove: d.removeSelectedLayer(); break;
    case Op::MoveUp: d.moveSelectedLayer(-1); break;
    case Op::MoveDown: d.moveSelectedLayer(+1); break;
    case Op::Duplicate: d.duplicateSelectedLayer(); break;
    case Op::Units: field<QSpinBox>(d, "units")->setValue(value.toInt()); break;
    case Op::Activation: {
        QComboBox *c = field<QComboBox>(d, "activation");
        c->setCurrentIndex(c->findData(value.toInt()));
        break;
    }
    case Op::UseBias: field<QCheckBox>(d, "useBias")->setChecked(value.toBool()); break;
    case Op::Rate: field<QDoubleSpinBox>(d, "rate")->setValue(value.toDouble()); break;
    case Op::ForceFp32: field<QCheckBox>(d, "forceFp32")->setChecked(value.toBool()); break;
    case Op::Rename:
        d.findChild<QLineEdit *>(QStringLiteral("modelName"))->setText(value.toString());
        break;
    }

    QCOMPARE(json(d.spec()), expected);
    QCOMPARE(d.undoStack()->count(), 1);
    QCOMPARE(changed.count(), 1);
    QCOMPARE(d.layerTree()->topLevelItemCount(), int(d.spec().layers.size()));
    // The list shows the edited spec.
    for (int i = 0; i < int(d.spec().layers.size()); ++i)
        QCOMPARE(cell(d, i, LayerTree::LayerColumn), layerSummary(d.spec().layers[std::size_t(i)]));

    d.undoStack()->undo();
    QCOMPARE(json(d.spec()), original);
    QCOMPARE(d.findChild<QLineEdit *>(QStringLiteral("modelName"))->text(),
             QString::fromStdString(d.spec().name));
    d.undoStack()->redo();
    QCOMPARE(json(d.spec()), expected);
    d.undoStack()->undo();
    QCOMPARE(json(d.spec()), original);
    QCOMPARE(d.layerTree()->topLevelItemCount(), int(baseSpec().layers.size()));
}

void TestDesigner::noOpEditsPushNothing()
{
    ModelDesigner d;
    d.setSpec(baseSpec());
    d.selectRow(0);
    d.moveSelectedLayer(-1); // already first
    d.selectRow(5);
    d.moveSelectedLayer(+1); // already last
    d.selectRow(-1);
    d.removeSelectedLayer();
    d.duplicateSelectedLayer();
    QCOMPARE(d.undoStack()->count(), 0);
    QCOMPARE(json(d.spec()), json(baseSpec()));
}

void TestDesigner::spinEditsMerge()
{
    ModelDesigner d;
    d.setSpec(baseSpec());
    d.selectRow(3);
    QSpinBox *units = field<QSpinBox>(d, "units");
    QCOMPARE(units->value(), 1000);
    for (int v : {1001, 1002, 1003, 1024}) units->setValue(v);
    QCOMPARE(d.spec().layers[3].units, 1024);
    QCOMPARE(d.undoStack()->count(), 1); // four steps, one undo

    // Another field ends the run of merges.
    field<QComboBox>(d, "activation")
        ->setCurrentIndex(field<QComboBox>(d, "activation")->findData(int(Activation::Tanh)));
    units->setValue(2048);
    QCOMPARE(d.undoStack()->count(), 3);
    d.undoStack()->undo();
    QCOMPARE(d.spec().layers[3].units, 1024);
    QCOMPARE(units->value(), 1024); // the editor follows undo
    d.undoStack()->undo();
    QCOMPARE(d.spec().layers[3].activation, Activation::Relu);
    d.undoStack()->undo();
    QCOMPARE(json(d.spec()), json(baseSpec()));

    // The same field of another layer does not merge; stepping back to the start leaves
    // nothing to undo.
    d.undoStack()->clear();
    units->setValue(999);
    d.selectRow(1);
    units->setValue(2999);
    QCOMPARE(d.undoStack()->count(), 2);
    units->setValue(3000);
    QCOMPARE(d.undoStack()->count(), 1);
    QCOMPARE(d.spec().layers[3].units, 999);

    QDoubleSpinBox *rate = field<QDoubleSpinBox>(d, "rate");
    d.selectRow(2);
    rate->setValue(0.3);
    rate->setValue(0.35);
    QCOMPARE(d.undoStack()->count(), 2);
    QCOMPARE(d.spec().layers[2].rate, 0.35f);
}

void TestDesigner::invalidOutputWidth()
{
    ModelDesigner d;
    d.setSpec(resourcePreset(QStringLiteral("seed-mlp.json")));
    QVERIFY(d.isValid());
    QSignalSpy validity(&d, &ModelDesigner::validityChanged);
    QLabel *error = d.findChild<QLabel *>(QStringLiteral("validationError"));
    QVERIFY(error->isHidden());

    d.selectRow(3);
    field<QSpinBox>(d, "units")->setValue(12);
    QVERIFY(!d.isValid());
    const QString message = d.validationMessage();
    QVERIFY2(message.contains(QLatin1String("layer 3 (dense)")), qPrintable(message));
    QVERIFY2(message.contains(QLatin1String("12")) && message.contains(QLatin1String("10 classes")),
             qPrintable(message));
    QCOMPARE(validity.count(), 1);
    QCOMPARE(validity.at(0).at(0).toBool(), false);
    QCOMPARE(validity.at(0).at(1).toString(), message);
    QVERIFY(!error->isHidden());
    QCOMPARE(error->text(), message);

    // The offending row is marked; the others are not, and all still show their shapes.
    for (int i = 0; i < 5; ++i) {
        QTreeWidgetItem *item = d.layerTree()->topLevelItem(i);
        QCOMPARE(item->data(LayerTree::LayerColumn, Qt::BackgroundRole).isValid(), i == 3);
    }
    QCOMPARE(d.layerTree()->topLevelItem(3)->toolTip(LayerTree::IndexColumn), message);
    QCOMPARE(cell(d, 3, LayerTree::OutputColumn), QStringLiteral("12"));
    QCOMPARE(cell(d, 3, LayerTree::ParamsColumn), QLocale().toString(12012));
    QVERIFY(!d.graph().has_value());

    // Another invalid width: a new message, one more signal.
    field<QSpinBox>(d, "units")->setValue(11);
    QCOMPARE(validity.count(), 2);
    QVERIFY(validity.at(1).at(1).toString().contains(QLatin1String("11 values")));

    // Fixing it re-validates.
    field<QSpinBox>(d, "units")->setValue(10);
    QVERIFY(d.isValid());
    QVERIFY(d.validationMessage().isEmpty());
    QCOMPARE(validity.count(), 3);
    QCOMPARE(validity.at(2).at(0).toBool(), true);
    QVERIFY(validity.at(2).at(1).toString().isEmpty());
    QVERIFY(error->isHidden());
    QVERIFY(!d.layerTree()
                 ->topLevelItem(3)
                 ->data(LayerTree::LayerColumn, Qt::BackgroundRole)
                 .isValid());
    QVERIFY(d.graph().has_value());

    // 10 -> 12 -> 11 -> 10 merged into one step that changes nothing: no undo left.
    QCOMPARE(d.undoStack()->count(), 0);

    // A valid edit emits nothing more; undo into an invalid state emits again.
    d.selectRow(1);
    field<QSpinBox>(d, "units")->setValue(2048);
    QCOMPARE(validity.count(), 3);
    d.selectRow(4);
    d.removeSelectedLayer(); // without the sigmoid: still valid
    d.selectRow(3);
    d.removeSelectedLayer(); // the output is now layer 2's 1000 values
    QVERIFY(!d.isValid());
    QVERIFY(d.validationMessage().startsWith(QLatin1String("layer 2 (dense)")));
    QCOMPARE(validity.count(), 4);
    d.undoStack()->undo();
    QVERIFY(d.isValid());
    QCOMPARE(validity.count(), 5);
    d.undoStack()->redo();
    QCOMPARE(validity.count(), 6);
    QCOMPARE(validity.last().at(0).toBool(), false);
}

void TestDesigner::invalidStructure()
{
    ModelDesigner d;
    d.setSpec(resourcePreset(QStringLiteral("seed-mlp.json")));
    QSignalSpy validity(&d, &ModelDesigner::validityChanged);
    d.selectRow(0);
    d.removeSelectedLayer(); // the dense layer now meets a 32x32x3 image
    QVERIFY(!d.isValid());
    QVERIFY2(d.validationMessage().startsWith(QLatin1String("layer 0 (dense)")),
             qPrintable(d.validationMessage()));
    QVERIFY(d.validationMessage().contains(QLatin1String("flatten")));
    QCOMPARE(validity.count(), 1);
    // Nothing past the broken layer can be inferred.
    QCOMPARE(cell(d, 0, LayerTree::OutputColumn), QStringLiteral("\u2013"));
    QCOMPARE(cell(d, 2, LayerTree::ParamsColumn), QStringLiteral("\u2013"));
    QVERIFY(
        d.layerTree()->topLevelItem(0)->data(LayerTree::IndexColumn, Qt::BackgroundRole).isValid());

    d.undoStack()->undo();
    QVERIFY(d.isValid());
    QCOMPARE(validity.count(), 2);
    QCOMPARE(validity.last().at(0).toBool(), true);

    // No layers at all: a message without a layer index, nothing highlighted.
    d.setSpec(ModelSpec{"empty", {}});
    QVERIFY(!d.isValid());
    QVERIFY(d.validationMessage().contains(QLatin1String("no layers")));
    QCOMPARE(d.layerTree()->topLevelItemCount(), 0);
    QVERIFY(d.propertyEditor()->layerPath().isEmpty());
}

void TestDesigner::setInputUpdatesShapes()
{
    ModelDesigner d;
    d.setSpec(resourcePreset(QStringLiteral("seed-mlp.json")));
    QCOMPARE(d.input(), (mixlab::Shape{{32, 32, 3}}));
    QCOMPARE(d.classes(), 10);
    QSignalSpy validity(&d, &ModelDesigner::validityChanged);
    QSignalSpy changed(&d, &ModelDesigner::specChanged);

    d.setInput(mixlab::Shape{{28, 28, 1}}, 10);
    QCOMPARE(cell(d, 0, LayerTree::OutputColumn), QStringLiteral("784"));
    QTreeWidgetItem *first = d.layerTree()->topLevelItem(1);
    QCOMPARE(first->data(LayerTree::ParamsColumn, LayerTree::k_valueRole).toLongLong(),
             qint64(784) * 3000 + 3000);
    QCOMPARE(first->text(LayerTree::TensorCoreColumn), QStringLiteral("yes"));
    QCOMPARE(d.graph()->total_params, std::int64_t(784 * 3000 + 3000 + 3001000 + 10010));
    QCOMPARE(validity.count(), 0);
    QCOMPARE(changed.count(), 0); // the spec did not change

    // An odd input width makes the first GEMM unfriendly.
    d.setInput(mixlab::Shape{{5, 5, 3}}, 10);
    QCOMPARE(d.layerTree()->topLevelItem(1)->text(LayerTree::TensorCoreColumn),
             QStringLiteral("no"));
    QVERIFY(d.layerTree()
                ->topLevelItem(1)
                ->toolTip(LayerTree::TensorCoreColumn)
                .contains(QLatin1String("inputs 75")));

    // 100 classes: the 10-unit output layer is now wrong, and the message says what to set.
    d.setInput(mixlab::Shape{{32, 32, 3}}, 100);
    QVERIFY(!d.isValid());
    QVERIFY2(d.validationMessage().contains(QLatin1String("layer 3 (dense)")) &&
                 d.validationMessage().contains(QLatin1String("100")),
             qPrintable(d.validationMessage()));
    QCOMPARE(validity.count(), 1);
    d.setInput(mixlab::Shape{{32, 32, 3}}, 10);
    QVERIFY(d.isValid());
    QCOMPARE(validity.count(), 2);
}

void TestDesigner::undoActions()
{
    ModelDesigner d;
    d.setSpec(baseSpec());
    QCOMPARE(d.undoAction()->shortcut(), QKeySequence(QKeySequence::Undo));
    QCOMPARE(d.redoAction()->shortcut(), QKeySequence(QKeySequence::Redo));
    QVERIFY(!d.undoAction()->isEnabled());
    d.selectRow(2);
    d.removeSelectedLayer();
    QVERIFY(d.undoAction()->isEnabled());
    QVERIFY(d.undoAction()->text().contains(QLatin1String("Remove layer 2")));
    d.undoAction()->trigger();
    QCOMPARE(json(d.spec()), json(baseSpec()));
    QCOMPARE(d.selectedRow(), 2); // the restored layer is selected again
    d.redoAction()->trigger();
    QCOMPARE(d.spec().layers.size(), baseSpec().layers.size() - 1);
}

void TestDesigner::actionStates()
{
    ModelDesigner d;
    d.setSpec(baseSpec());
    auto action = [&](const QString &text) {
        for (QAction *a : d.layerTree()->actions())
            if (a->text() == text) return a;
        return static_cast<QAction *>(nullptr);
    };
    QAction *up = action(QStringLiteral("Move up"));
    QAction *down = action(QStringLiteral("Move down"));
    QAction *remove = action(QStringLiteral("Remove"));
    QVERIFY(up && down && remove);
    d.selectRow(0);
    QVERIFY(!up->isEnabled());
    QVERIFY(down->isEnabled());
    d.selectRow(5);
    QVERIFY(up->isEnabled());
    QVERIFY(!down->isEnabled());
    d.selectRow(-1);
    QVERIFY(!remove->isEnabled());
    // The toolbar's Remove acts like removeSelectedLayer.
    d.selectRow(1);
    remove->trigger();
    QCOMPARE(d.spec().layers.size(), baseSpec().layers.size() - 1);
    QCOMPARE(d.selectedRow(), 1);
}

QTEST_MAIN(TestDesigner)
#include "tst_designer.moc"
