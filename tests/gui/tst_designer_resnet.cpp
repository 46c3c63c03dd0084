// ModelDesigner with convolutional networks: ResNet-18 built by hand, every preset's shapes
// and counts, the residual tree, nested edits/inserts/removes/moves with undo/redo by path,
// the new property fields, and errors inside residual blocks.
#include "designer/layerpalette.h"
#include "designer/layerpath.h"
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
#include <QToolButton>
#include <QUndoStack>

#include <functional>

using mixlab::Activation;
using mixlab::LayerSpec;
using mixlab::LayerType;
using mixlab::ModelSpec;
using mixlab::Padding;

Q_DECLARE_METATYPE(mixlab::Shape)

// QCOMPARE prints paths as the engine writes them.
char *toString(const LayerPath &path) { return qstrdup(qPrintable(path.toString())); }

namespace {

QString json(const ModelSpec &s) { return QString::fromStdString(mixlab::model_spec_to_json(s)); }

ModelSpec resourcePreset(const QString &file)
{
    QFile f(QStringLiteral(":/models/") + file);
    if (!f.open(QIODevice::ReadOnly)) return {};
    return mixlab::parse_model_spec(f.readAll().toStdString());
}

LayerPath top(int i) { return LayerPath::top(i); }
LayerPath body(int block, int i) { return top(block).child(LayerGroup::Body, i); }
LayerPath shortcut(int block, int i) { return top(block).child(LayerGroup::Shortcut, i); }

template <typename W>
W *field(ModelDesigner &d, const char *name)
{
    W *w = d.propertyEditor()->findChild<W *>(QLatin1String(name));
    if (!w) qWarning("no field %s", name);
    return w;
}

void chooseData(QComboBox *c, int data) { c->setCurrentIndex(c->findData(data)); }

bool rowVisible(ModelDesigner &d, const char *name)
{
    QWidget *w = d.propertyEditor()->findChild<QWidget *>(QLatin1String(name));
    return w && w->isVisibleTo(d.propertyEditor());
}

LayerSpec conv(int filters, int kernel, int stride = 0)
{
    LayerSpec l;
    l.type = LayerType::Conv2D;
    l.filters = filters;
    l.kernel_h = l.kernel_w = kernel;
    l.stride_h = l.stride_w = stride;
    l.padding = kernel > 1 ? Padding::Same : Padding::Valid;
    l.use_bias = false;
    return l;
}

LayerSpec bn() { return LayerSpec{LayerType::BatchNorm}; }

// conv 16 > bn > relu > residual(body: conv 16 > bn) > global_avgpool > dense classes: a
// small model with one identity block, for the nested edits.
ModelSpec smallResNet()
{
    LayerSpec relu{LayerType::Activation};
    relu.activation = Activation::Relu;
    LayerSpec block{LayerType::Residual};
    block.activation = Activation::Relu;
    block.body = {conv(16, 3), bn(), relu, conv(16, 3), bn()};
    LayerSpec head{LayerType::Dense};
    head.units = mixlab::k_units_classes;
    return ModelSpec{"small-resnet",
                     {conv(16, 3), bn(), relu, block, LayerSpec{LayerType::GlobalAvgPool}, head}};
}

struct PresetCase {
    const char *file;
    mixlab::Shape input;
    int classes;
    qint64 params; // -1: checked only against the engine's own total
};

} // namespace

class TestDesignerResNet : public QObject {
    Q_OBJECT
private slots:
    void buildResNet18ByHand();
    void presets_data();
    void presets();
    void treeGroups();
    void rowsKeepTheirState();
    void nestedEditUndoRedo();
    void nestedStructureEdits_data();
    void nestedStructureEdits();
    void paletteInsertsIntoGroup();
    void blocks_data();
    void blocks();
    void convFields();
    void poolAndBatchNormFields();
    void unitsPerClass();
    void residualActivationChoices();
    void mismatchInsideResidual();
    void errorInsideBody();
};

// The check: ResNet-18 (CIFAR form) from its parts with the designer's own
// controls, most blocks from the palette, one downsampling block by editing a plain one.
void TestDesignerResNet::buildResNet18ByHand()
{
    ModelDesigner d;
    d.setInput(mixlab::Shape{{32, 32, 3}}, 100);
    d.setSpec(ModelSpec{});
    d.findChild<QLineEdit *>(QStringLiteral("modelName"))->setText(QStringLiteral("resnet18"));
    LayerPalette *palette = d.palette();

    // Stem: conv 64 3x3 same without bias, batch norm, relu.
    QVERIFY(palette->activate(QStringLiteral("conv2d")));
    QCOMPARE(d.selectedPath(), top(0));
    field<QSpinBox>(d, "filters")->setValue(64);
    chooseData(field<QComboBox>(d, "activation"), int(Activation::None));
    field<QCheckBox>(d, "useBias")->setChecked(false);
    QVERIFY(palette->activate(QStringLiteral("batchnorm")));
    QVERIFY(palette->activate(QStringLiteral("activation")));

    // Stage 1: two blocks keeping the 64 channels.
    palette->setBlockFilters(0);
    palette->setBlockStride(1);
    QVERIFY(palette->activate(QStringLiteral("basic block")));
    QVERIFY(palette->activate(QStringLiteral("basic block")));
    QVERIFY(d.spec().layers[3].shortcut.empty());
    // Not valid until the head is there, but every row so far has its shape.
    QCOMPARE(d.layerTree()->topLevelItem(4)->text(LayerTree::OutputColumn),
             QStringLiteral("32x32x64"));

    // Stage 2's first block by hand: a plain block edited to 128 filters with stride 2,
    // then a projection shortcut put into its (selected) shortcut row.
    QVERIFY(palette->activate(QStringLiteral("basic block")));
    QCOMPARE(d.selectedPath(), top(5));
    d.selectPath(body(5, 0));
    QCOMPARE(d.propertyEditor()->layerPath(), body(5, 0));
    field<QSpinBox>(d, "filters")->setValue(128);
    field<QSpinBox>(d, "strideH")->setValue(2);
    field<QSpinBox>(d, "strideW")->setValue(2);
    d.selectPath(body(5, 3));
    field<QSpinBox>(d, "filters")->setValue(128);
    QVERIFY(!d.isValid()); // the identity shortcut no longer fits
    QCOMPARE(d.errorPath(), top(5));
    d.selectPath(shortcut(5, LayerPath::k_group));
    QCOMPARE(d.insertionPoint(), shortcut(5, 0));
    QVERIFY(palette->activate(QStringLiteral("conv2d")));
    QCOMPARE(d.selectedPath(), shortcut(5, 0));
    field<QSpinBox>(d, "filters")->setValue(128);
    field<QSpinBox>(d, "kernelH")->setValue(1);
    field<QSpinBox>(d, "kernelW")->setValue(1);
    chooseData(field<QComboBox>(d, "padding"), int(Padding::Valid));
    field<QSpinBox>(d, "strideH")->setValue(2);
    field<QSpinBox>(d, "strideW")->setValue(2);
    chooseData(field<QComboBox>(d, "activation"), int(Activation::None));
    field<QCheckBox>(d, "useBias")->setChecked(false);
    QVERIFY(palette->activate(QStringLiteral("batchnorm")));
    QCOMPARE(d.selectedPath(), shortcut(5, 1));
    QVERIFY2(!d.validationMessage().contains(QLatin1String("shortcut gives")),
             qPrintable(d.validationMessage()));
    QCOMPARE(d.layerTree()->topLevelItem(5)->text(LayerTree::OutputColumn),
             QStringLiteral("16x16x128"));

    // The remaining blocks from the palette, after the block again.
    d.selectRow(5);
    for (auto [filters, stride] : {std::pair{128, 1}, {256, 2}, {256, 1}, {512, 2}, {512, 1}}) {
        palette->setBlockFilters(filters);
        palette->setBlockStride(stride);
        QVERIFY(palette->activate(QStringLiteral("basic block")));
    }
    QVERIFY(palette->activate(QStringLiteral("global_avgpool")));
    QVERIFY(palette->activate(QStringLiteral("dense")));
    field<QCheckBox>(d, "unitsPerClass")->setChecked(true);
    chooseData(field<QComboBox>(d, "activation"), int(Activation::None));

    QVERIFY2(d.isValid(), qPrintable(d.validationMessage()));
    const ModelSpec preset = resourcePreset(QStringLiteral("resnet18.json"));
    QCOMPARE(preset.layers.size(), std::size_t(13));
    QCOMPARE(json(d.spec()), json(preset));
    QVERIFY(d.spec() == preset);
    QCOMPARE(d.graph()->total_params, std::int64_t(11220132));
    const QString totals = d.findChild<QLabel *>(QStringLiteral("totals"))->text();
    QVERIFY2(totals.contains(QLocale().toString(qint64(11220132))), qPrintable(totals));
    LayerTree *tree = d.layerTree();
    QCOMPARE(tree->topLevelItem(5)->text(LayerTree::OutputColumn), QStringLiteral("16x16x128"));
    QCOMPARE(tree->topLevelItem(12)->text(LayerTree::OutputColumn), QStringLiteral("100"));

    // Every step was one undo entry at most; undoing them all empties the model.
    while (d.undoStack()->canUndo()) d.undoStack()->undo();
    QVERIFY(d.spec().layers.empty());
    while (d.undoStack()->canRedo()) d.undoStack()->redo();
    QCOMPARE(json(d.spec()), json(preset));
}

void TestDesignerResNet::presets_data()
{
    QTest::addColumn<QString>("file");
    QTest::addColumn<mixlab::Shape>("input");
    QTest::addColumn<int>("classes");
    QTest::addColumn<qint64>("params");
    // CIFAR ResNets: torchvision's counts with a 3x3 stem (7x7x3x64 - 3x3x3x64 = 7,680
    // fewer) and 100 classes; batch norm counts its scale and shift.
    const PresetCase cases[] = {
        {"resnet18.json", {{32, 32, 3}}, 100, 11220132},
        {"resnet34.json", {{32, 32, 3}}, 100, 21328292},
        {"resnet50.json", {{32, 32, 3}}, 100, 23705252},
        {"resnet101.json", {{32, 32, 3}}, 100, 42697380},
        {"resnet152.json", {{32, 32, 3}}, 100, 58341028},
        {"resnet18.json", {{32, 32, 3}}, 10, 11220132 - 90 * 513},
        {"lenet5.json", {{28, 28, 1}}, 10, 61706},
        {"small-cnn.json", {{28, 28, 1}}, 10, 421866},
        {"seed-mlp.json", {{32, 32, 3}}, 10, 12230010},
        {"seed-mlp-fixed.json", {{32, 32, 3}}, 10, -1},
        {"mnist-mlp.json", {{28, 28, 1}}, 10, -1},
    };
    for (const PresetCase &c : cases)
        QTest::addRow("%s %d", c.file, c.classes)
            << QString::fromLatin1(c.file) << c.input << c.classes << c.params;
}

// Every preset loads with the right shapes and counts, blocks closed.
void TestDesignerResNet::presets()
{
    QFETCH(QString, file);
    QFETCH(mixlab::Shape, input);
    QFETCH(int, classes);
    QFETCH(qint64, params);

    ModelDesigner d;
    d.setInput(input, classes);
    QVERIFY(d.loadPreset(file));
    QVERIFY2(d.isValid(), qPrintable(d.validationMessage()));
    const ModelSpec spec = resourcePreset(file);
    QCOMPARE(json(d.spec()), json(spec));
    QVERIFY(d.presetNames().contains(QString::fromStdString(spec.name)));

    LayerTree *tree = d.layerTree();
    QCOMPARE(tree->topLevelItemCount(), int(spec.layers.size()));
    QTreeWidgetItem *last = tree->topLevelItem(tree->topLevelItemCount() - 1);
    QCOMPARE(last->text(LayerTree::OutputColumn), QString::number(classes));
    qint64 sum = 0;
    int blocks = 0;
    for (int i = 0; i < tree->topLevelItemCount(); ++i) {
        QTreeWidgetItem *item = tree->topLevelItem(i);
        sum += item->data(LayerTree::ParamsColumn, LayerTree::k_valueRole).toLongLong();
        if (spec.layers[std::size_t(i)].type == LayerType::Residual) {
            ++blocks;
            QVERIFY2(!item->isExpanded(), "a preset opens with its blocks collapsed");
            QCOMPARE(item->childCount(), 2);
            QVERIFY(item->child(0)->isExpanded() && item->child(1)->isExpanded());
        }
    }
    if (file.startsWith(QLatin1String("resnet"))) QVERIFY(blocks >= 8);
    QCOMPARE(sum, qint64(d.graph()->total_params));
    if (params >= 0) QCOMPARE(qint64(d.graph()->total_params), params);
    const QString totals = d.findChild<QLabel *>(QStringLiteral("totals"))->text();
    QVERIFY2(totals.contains(QLocale().toString(qint64(d.graph()->total_params))),
             qPrintable(totals));
}

void TestDesignerResNet::treeGroups()
{
    ModelDesigner d;
    d.setInput(mixlab::Shape{{32, 32, 3}}, 100);
    d.setSpec(resourcePreset(QStringLiteral("resnet18.json")));
    LayerTree *tree = d.layerTree();

    // Layer 5 is the first 128-filter block: body of five layers, a projection shortcut.
    QTreeWidgetItem *block = tree->topLevelItem(5);
    QCOMPARE(block->text(LayerTree::LayerColumn),
             QStringLiteral("residual 3x3 128 /2 \u203a 3x3 128, projection"));
    QCOMPARE(tree->topLevelItem(3)->text(LayerTree::LayerColumn),
             QStringLiteral("residual 3x3 64 \u203a 3x3 64"));
    QTreeWidgetItem *bodyRow = block->child(0);
    QTreeWidgetItem *shortcutRow = block->child(1);
    QCOMPARE(bodyRow->text(LayerTree::LayerColumn), QStringLiteral("body"));
    QCOMPARE(shortcutRow->text(LayerTree::LayerColumn), QStringLiteral("shortcut"));
    QCOMPARE(bodyRow->childCount(), 5);
    QCOMPARE(shortcutRow->childCount(), 2);
    QCOMPARE(bodyRow->text(LayerTree::OutputColumn), QStringLiteral("16x16x128"));
    QCOMPARE(shortcutRow->text(LayerTree::OutputColumn), QStringLiteral("16x16x128"));
    QCOMPARE(bodyRow->child(0)->text(LayerTree::LayerColumn),
             QStringLiteral("conv2d 128 3x3 /2 same, no bias"));
    QCOMPARE(bodyRow->child(0)->text(LayerTree::IndexColumn), QStringLiteral("0"));
    QCOMPARE(bodyRow->child(0)->text(LayerTree::OutputColumn), QStringLiteral("16x16x128"));
    QCOMPARE(bodyRow->child(0)->data(LayerTree::ParamsColumn, LayerTree::k_valueRole).toLongLong(),
             qint64(3 * 3 * 64 * 128));
    QCOMPARE(bodyRow->child(0)->text(LayerTree::TensorCoreColumn), QStringLiteral("yes"));
    QCOMPARE(shortcutRow->child(0)->text(LayerTree::LayerColumn),
             QStringLiteral("conv2d 128 1x1 /2, no bias"));
    // The block's params are its layers' params; the two groups split them.
    const qint64 blockParams =
        block->data(LayerTree::ParamsColumn, LayerTree::k_valueRole).toLongLong();
    QCOMPARE(blockParams,
             bodyRow->data(LayerTree::ParamsColumn, LayerTree::k_valueRole).toLongLong() +
                 shortcutRow->data(LayerTree::ParamsColumn, LayerTree::k_valueRole).toLongLong());
    QCOMPARE(blockParams,
             qint64(3 * 3 * 64 * 128 + 256 + 3 * 3 * 128 * 128 + 256 + 64 * 128 + 256));
    QCOMPARE(block->text(LayerTree::TensorCoreColumn), QStringLiteral("yes"));
    // An identity block says so.
    QCOMPARE(tree->topLevelItem(3)->child(1)->text(LayerTree::LayerColumn),
             QStringLiteral("shortcut (identity)"));
    QCOMPARE(tree->topLevelItem(3)->child(1)->text(LayerTree::OutputColumn),
             QStringLiteral("32x32x64"));
    // The stem's 3 input channels keep its convolution off tensor cores.
    QCOMPARE(tree->topLevelItem(0)->text(LayerTree::TensorCoreColumn), QStringLiteral("no"));

    // Paths map both ways, for layers and for groups.
    for (const LayerPath &p : {top(0), top(5), body(5, 4), shortcut(5, 1),
                               body(5, LayerPath::k_group), shortcut(3, LayerPath::k_group)}) {
        QTreeWidgetItem *item = tree->itemFor(p);
        QVERIFY2(item, qPrintable(p.toString()));
        QCOMPARE(tree->pathOf(item), p);
    }
    QVERIFY(!tree->itemFor(body(5, 5)));
    QVERIFY(!tree->itemFor(shortcut(3, 0)));
    QCOMPARE(body(5, 4).toString(), QStringLiteral("layer 5 > body 4"));

    // Collapse all / expand all, from the bar's actions.
    QAction *expand = d.findChild<QAction *>(QStringLiteral("expandAll"));
    QAction *collapse = d.findChild<QAction *>(QStringLiteral("collapseAll"));
    QVERIFY(expand && collapse);
    QVERIFY(!block->isExpanded());
    expand->trigger();
    QVERIFY(block->isExpanded() && bodyRow->isExpanded() && tree->topLevelItem(10)->isExpanded());
    collapse->trigger();
    QVERIFY(!block->isExpanded() && !tree->topLevelItem(10)->isExpanded());
    QVERIFY(bodyRow->isExpanded()); // opening the block again shows its layers at once

    // Selecting a nested layer opens its block and shows it in the editor.
    d.selectPath(body(7, 3));
    QVERIFY(tree->topLevelItem(7)->isExpanded());
    QCOMPARE(d.propertyEditor()->layerPath(), body(7, 3));
    QCOMPARE(field<QSpinBox>(d, "filters")->value(), 256);
    QCOMPARE(d.findChild<QLabel *>(QStringLiteral("layerTitle"))->text(),
             QStringLiteral("Layer 7 > body 3: conv2d"));
}

// Rows stay with their layers: an insert above an open block leaves that block open.
void TestDesignerResNet::rowsKeepTheirState()
{
    ModelDesigner d;
    d.setInput(mixlab::Shape{{32, 32, 3}}, 100);
    d.setSpec(resourcePreset(QStringLiteral("resnet18.json")));
    LayerTree *tree = d.layerTree();
    QTreeWidgetItem *open = tree->topLevelItem(6);
    open->setExpanded(true);
    d.selectRow(0);
    d.addLayer(LayerType::BatchNorm);
    QCOMPARE(tree->topLevelItem(7), open);
    QVERIFY(open->isExpanded());
    QVERIFY(!tree->topLevelItem(6)->isExpanded());
    // Moving an open block moves it open.
    d.selectRow(7);
    d.moveSelectedLayer(-1);
    QCOMPARE(tree->topLevelItem(6), open);
    QVERIFY(open->isExpanded());
    QCOMPARE(d.selectedPath(), top(6));
    // A nested edit keeps the block's row (and its state).
    d.selectPath(body(6, 0));
    field<QSpinBox>(d, "filters")->setValue(120);
    QCOMPARE(tree->topLevelItem(6), open);
    QVERIFY(open->isExpanded());
    QCOMPARE(d.selectedPath(), body(6, 0));
}

void TestDesignerResNet::nestedEditUndoRedo()
{
    ModelDesigner d;
    d.setInput(mixlab::Shape{{32, 32, 3}}, 100);
    const ModelSpec original = resourcePreset(QStringLiteral("resnet18.json"));
    d.setSpec(original);
    const qint64 params = d.graph()->total_params;
    QSignalSpy changed(&d, &ModelDesigner::specChanged);

    d.selectPath(body(3, 0));
    QSpinBox *filters = field<QSpinBox>(d, "filters");
    QCOMPARE(filters->value(), 64);
    for (int v : {60, 48, 32}) filters->setValue(v); // spin steps merge into one
    QCOMPARE(d.undoStack()->count(), 1);
    QCOMPARE(changed.count(), 3);
    QCOMPARE(d.spec().layers[3].body[0].filters, 32);
    QVERIFY(d.isValid()); // the second convolution brings the body back to 64
    QCOMPARE(qint64(d.graph()->total_params), params - (3 * 3 * 64 * 32 + 3 * 3 * 32 * 64 + 64));
    QVERIFY2(
        d.undoAction()->text().endsWith(QLatin1String("Set filters of layer 3 > body 0 to 32")),
        qPrintable(d.undoAction()->text()));
    ModelSpec edited = original;
    edited.layers[3].body[0].filters = 32;
    QCOMPARE(json(d.spec()), json(edited));

    d.selectRow(0); // undo brings the edited layer back into view
    d.undoStack()->undo();
    QCOMPARE(json(d.spec()), json(original));
    QCOMPARE(d.selectedPath(), body(3, 0));
    QCOMPARE(d.propertyEditor()->layerPath(), body(3, 0));
    QCOMPARE(filters->value(), 64);
    QCOMPARE(qint64(d.graph()->total_params), params);
    QCOMPARE(d.layerTree()->itemFor(body(3, 0))->text(LayerTree::LayerColumn),
             QStringLiteral("conv2d 64 3x3 same, no bias"));
    d.undoStack()->redo();
    QCOMPARE(json(d.spec()), json(edited));
    QCOMPARE(d.layerTree()->itemFor(body(3, 0))->text(LayerTree::LayerColumn),
             QStringLiteral("conv2d 32 3x3 same, no bias"));

    // The same field of another nested layer is a step of its own.
    d.selectPath(body(4, 0));
    filters->setValue(40);
    QCOMPARE(d.undoStack()->count(), 2);
    d.undoStack()->undo();
    d.undoStack()->undo();
    QCOMPARE(json(d.spec()), json(original));
}

void TestDesignerResNet::nestedStructureEdits_data()
{
    QTest::addColumn<QString>("op");
    QTest::addColumn<LayerPath>("select");
    QTest::addColumn<QString>("expected");
    QTest::addColumn<LayerPath>("selectedAfter");

    const ModelSpec base = smallResNet();
    auto with = [&](const std::function<void(ModelSpec &)> &change) {
        ModelSpec s = base;
        change(s);
        return json(s);
    };
    LayerSpec relu{LayerType::Activation};
    relu.activation = Activation::Relu;
    QTest::newRow("remove body 1") << "remove" << body(3, 1) << with([](ModelSpec &s) {
        s.layers[3].body.erase(s.layers[3].body.begin() + 1);
    }) << body(3, 1);
    QTest::newRow("remove last of body")
        << "remove" << body(3, 4) << with([](ModelSpec &s) { s.layers[3].body.pop_back(); })
        << body(3, 3);
    QTest::newRow("move body 2 up") << "up" << body(3, 2) << with([](ModelSpec &s) {
        std::swap(s.layers[3].body[1], s.layers[3].body[2]);
    }) << body(3, 1);
    QTest::newRow("move body 0 down") << "down" << body(3, 0) << with([](ModelSpec &s) {
        std::swap(s.layers[3].body[0], s.layers[3].body[1]);
    }) << body(3, 1);
    QTest::newRow("duplicate body 1") << "duplicate" << body(3, 1) << with([](ModelSpec &s) {
        s.layers[3].body.insert(s.layers[3].body.begin() + 2, bn());
    }) << body(3, 2);
    QTest::newRow("duplicate the block")
        << "duplicate" << top(3)
        << with([](ModelSpec &s) { s.layers.insert(s.layers.begin() + 4, s.layers[3]); }) << top(4);
    QTest::newRow("remove the block")
        << "remove" << top(3) << with([](ModelSpec &s) { s.layers.erase(s.layers.begin() + 3); })
        << top(3);
    QTest::newRow("add after body 2") << "add batchnorm" << body(3, 2) << with([](ModelSpec &s) {
        s.layers[3].body.insert(s.layers[3].body.begin() + 3, bn());
    }) << body(3, 3);
    QTest::newRow("add into body")
        << "add activation" << body(3, LayerPath::k_group)
        << with([&](ModelSpec &s) { s.layers[3].body.push_back(relu); }) << body(3, 5);
    QTest::newRow("add into shortcut")
        << "add batchnorm" << shortcut(3, LayerPath::k_group)
        << with([](ModelSpec &s) { s.layers[3].shortcut.push_back(bn()); }) << shortcut(3, 0);
}

// Structure edits inside a block, each undone and redone, compared as JSON.
void TestDesignerResNet::nestedStructureEdits()
{
    QFETCH(QString, op);
    QFETCH(LayerPath, select);
    QFETCH(QString, expected);
    QFETCH(LayerPath, selectedAfter);

    ModelDesigner d;
    d.setInput(mixlab::Shape{{8, 8, 3}}, 10);
    d.setSpec(smallResNet());
    QVERIFY2(d.isValid(), qPrintable(d.validationMessage()));
    const QString original = json(d.spec());
    d.selectPath(select);
    QCOMPARE(d.selectedPath(), select);
    if (op == QLatin1String("remove"))
        d.removeSelectedLayer();
    else if (op == QLatin1String("up"))
        d.moveSelectedLayer(-1);
    else if (op == QLatin1String("down"))
        d.moveSelectedLayer(+1);
    else if (op == QLatin1String("duplicate"))
        d.duplicateSelectedLayer();
    else if (op == QLatin1String("add batchnorm"))
        d.addLayer(LayerType::BatchNorm);
    else if (op == QLatin1String("add activation"))
        d.addLayer(LayerType::Activation);
    QCOMPARE(d.undoStack()->count(), 1);
    QCOMPARE(json(d.spec()), expected);
    QCOMPARE(d.selectedPath(), selectedAfter);
    // The tree shows the edited block.
    const ModelSpec now = d.spec();
    const LayerSpec &block = now.layers[3];
    if (block.type == LayerType::Residual) {
        QTreeWidgetItem *row = d.layerTree()->topLevelItem(3);
        QCOMPARE(row->child(0)->childCount(), int(block.body.size()));
        QCOMPARE(row->child(1)->childCount(), int(block.shortcut.size()));
        for (int i = 0; i < int(block.body.size()); ++i)
            QCOMPARE(row->child(0)->child(i)->text(LayerTree::LayerColumn),
                     layerSummary(block.body[std::size_t(i)]));
    }

    d.undoStack()->undo();
    QCOMPARE(json(d.spec()), original);
    d.undoStack()->redo();
    QCOMPARE(json(d.spec()), expected);
    d.undoStack()->undo();
    QCOMPARE(json(d.spec()), original);
    QCOMPARE(d.layerTree()->topLevelItem(3)->child(0)->childCount(), 5);
}

// Nothing to move past either end of a body; a group row is not a layer to remove.
void TestDesignerResNet::paletteInsertsIntoGroup()
{
    ModelDesigner d;
    d.setInput(mixlab::Shape{{8, 8, 3}}, 10);
    d.setSpec(smallResNet());
    d.selectPath(body(3, 0));
    d.moveSelectedLayer(-1);
    d.selectPath(body(3, 4));
    d.moveSelectedLayer(+1);
    d.selectPath(body(3, LayerPath::k_group));
    d.removeSelectedLayer();
    d.duplicateSelectedLayer();
    QCOMPARE(d.undoStack()->count(), 0);

    // The palette's plain residual is an empty block whose body is selected next, so the
    // following adds fill it.
    d.selectRow(2);
    QVERIFY(d.palette()->activate(QStringLiteral("residual")));
    QCOMPARE(d.selectedPath(), body(3, LayerPath::k_group));
    QVERIFY(!d.isValid());
    QVERIFY2(d.validationMessage().startsWith(QLatin1String("layer 3 (residual)")),
             qPrintable(d.validationMessage()));
    QVERIFY(d.palette()->activate(QStringLiteral("conv2d")));
    QCOMPARE(d.selectedPath(), body(3, 0));
    field<QSpinBox>(d, "filters")->setValue(16);
    QVERIFY(d.palette()->activate(QStringLiteral("batchnorm")));
    QCOMPARE(d.selectedPath(), body(3, 1));
    QVERIFY2(d.isValid(), qPrintable(d.validationMessage()));
    QCOMPARE(d.spec().layers[3].body.size(), std::size_t(2));
    QCOMPARE(d.spec().layers[3].activation, Activation::Relu);
    QCOMPARE(d.spec().layers[4].body.size(), std::size_t(5)); // the old block moved down
    // Undo of the add into the body selects the body row again.
    d.undoStack()->undo();
    d.undoStack()->undo();
    d.undoStack()->undo();
    QCOMPARE(d.selectedPath(), body(3, LayerPath::k_group));
    QCOMPARE(d.propertyEditor()->layerPath(), LayerPath{});
    QVERIFY(d.findChild<QLabel *>(QStringLiteral("layerTitle"))
                ->text()
                .contains(QLatin1String("body")));
}

void TestDesignerResNet::blocks_data()
{
    QTest::addColumn<int>("kind");
    QTest::addColumn<int>("filters"); // palette setting; 0 = as input
    QTest::addColumn<int>("stride");
    QTest::addColumn<int>("outChannels");
    QTest::addColumn<bool>("projection");
    QTest::addColumn<QString>("output");

    // Inserted after the 16-channel stem of smallResNet on 8x8 inputs.
    QTest::newRow("basic, as input") << int(BlockKind::Basic) << 0 << 1 << 16 << false << "8x8x16";
    QTest::newRow("basic, 16") << int(BlockKind::Basic) << 16 << 1 << 16 << false << "8x8x16";
    QTest::newRow("basic, 32") << int(BlockKind::Basic) << 32 << 1 << 32 << true << "8x8x32";
    QTest::newRow("basic, 16 /2") << int(BlockKind::Basic) << 16 << 2 << 16 << true << "4x4x16";
    QTest::newRow("bottleneck, as input")
        << int(BlockKind::Bottleneck) << 0 << 1 << 16 << false << "8x8x16";
    QTest::newRow("bottleneck, 8")
        << int(BlockKind::Bottleneck) << 8 << 1 << 32 << true << "8x8x32";
    QTest::newRow("bottleneck, 4 /2")
        << int(BlockKind::Bottleneck) << 4 << 2 << 16 << true << "4x4x16";
}

// Blocks from the palette get a projection shortcut exactly when they change the
// stride or the channels, and fit wherever they go.
void TestDesignerResNet::blocks()
{
    QFETCH(int, kind);
    QFETCH(int, filters);
    QFETCH(int, stride);
    QFETCH(int, outChannels);
    QFETCH(bool, projection);
    QFETCH(QString, output);

    ModelDesigner d;
    d.setInput(mixlab::Shape{{8, 8, 3}}, 10);
    d.setSpec(smallResNet());
    d.selectRow(2);
    d.palette()->setBlockFilters(filters);
    d.palette()->setBlockStride(stride);
    QVERIFY(d.palette()->activate(kind == int(BlockKind::Basic)
                                      ? QStringLiteral("basic block")
                                      : QStringLiteral("bottleneck block")));
    QCOMPARE(d.undoStack()->count(), 1);
    QCOMPARE(d.selectedPath(), top(3));
    const LayerSpec block = d.spec().layers[3];
    QCOMPARE(block.type, LayerType::Residual);
    QCOMPARE(block.body.size(), std::size_t(kind == int(BlockKind::Basic) ? 5 : 8));
    QCOMPARE(block.shortcut.empty(), !projection);
    if (projection) {
        QCOMPARE(block.shortcut[0].filters, outChannels);
        QCOMPARE(block.shortcut[0].stride_h, stride == 1 ? 0 : stride);
    }
    QCOMPARE(d.layerTree()->topLevelItem(3)->text(LayerTree::OutputColumn), output);
    QVERIFY(d.layerTree()->topLevelItem(3)->isExpanded()); // a new block shows its layers
    // The old identity block after it fits any image of 16 channels.
    QCOMPARE(d.isValid(), outChannels == 16);
}

void TestDesignerResNet::convFields()
{
    ModelDesigner d;
    d.setInput(mixlab::Shape{{8, 8, 3}}, 10);
    d.setSpec(smallResNet());
    d.selectPath(body(3, 0));
    for (const char *name :
         {"filters", "kernelH", "strideH", "padding", "activation", "useBias", "forceFp32"})
        QVERIFY2(rowVisible(d, name), name);
    for (const char *name : {"units", "momentum", "epsilon", "rate", "padH"})
        QVERIFY2(!rowVisible(d, name), name);

    auto current = [&] { return d.spec().layers[3].body[0]; };
    // Stride shows the default and goes back to "none written" when set to it.
    QCOMPARE(field<QSpinBox>(d, "strideH")->value(), 1);
    field<QSpinBox>(d, "strideH")->setValue(2);
    QCOMPARE(current().stride_h, 2);
    QCOMPARE(current().stride_w, 1);
    field<QSpinBox>(d, "strideH")->setValue(1);
    QCOMPARE(current().stride_h, 0);
    QCOMPARE(current().stride_w, 0);
    QCOMPARE(d.undoStack()->count(), 0); // merged, and back where it started

    // Explicit padding starts from what "same" gave and shows its numbers.
    chooseData(field<QComboBox>(d, "padding"), int(Padding::Explicit));
    QCOMPARE(current().padding, Padding::Explicit);
    QCOMPARE(current().pad_h, 1);
    QCOMPARE(current().pad_w, 1);
    QVERIFY(rowVisible(d, "padH"));
    field<QSpinBox>(d, "padW")->setValue(0);
    QCOMPARE(current().pad_w, 0);
    QVERIFY(!d.isValid()); // 8x6 no longer adds to the 8x8 shortcut
    QVERIFY2(d.validationMessage().contains(QLatin1String("layer 3")),
             qPrintable(d.validationMessage()));
    chooseData(field<QComboBox>(d, "padding"), int(Padding::Same));
    QCOMPARE(current().pad_h, 0);
    QCOMPARE(current().pad_w, 0);
    QVERIFY(!rowVisible(d, "padH"));
    QVERIFY(d.isValid());

    field<QSpinBox>(d, "kernelH")->setValue(5);
    field<QSpinBox>(d, "kernelW")->setValue(5);
    QCOMPARE(current().kernel_h, 5);
    QCOMPARE(current().kernel_w, 5);
    QCOMPARE(d.undoStack()->count(), 4); // explicit, pad width, same, kernel
    QVERIFY2(
        d.undoAction()->text().endsWith(QLatin1String("Set kernel of layer 3 > body 0 to 5x5")),
        qPrintable(d.undoAction()->text()));
    field<QCheckBox>(d, "useBias")->setChecked(true);
    QVERIFY(current().use_bias);
    chooseData(field<QComboBox>(d, "activation"), int(Activation::Gelu));
    QCOMPARE(current().activation, Activation::Gelu);
    QCOMPARE(d.layerTree()->itemFor(body(3, 0))->text(LayerTree::LayerColumn),
             QStringLiteral("conv2d 16 5x5 same gelu"));
}

void TestDesignerResNet::poolAndBatchNormFields()
{
    ModelDesigner d;
    d.setInput(mixlab::Shape{{8, 8, 3}}, 10);
    d.setSpec(smallResNet());

    d.selectPath(body(3, 1));
    QVERIFY(rowVisible(d, "momentum") && rowVisible(d, "epsilon"));
    QVERIFY(!rowVisible(d, "filters") && !rowVisible(d, "activation"));
    field<QDoubleSpinBox>(d, "momentum")->setValue(0.01);
    QCOMPARE(d.spec().layers[3].body[1].momentum, 0.01f);
    QLineEdit *eps = field<QLineEdit>(d, "epsilon");
    QCOMPARE(eps->text(), QStringLiteral("1e-05"));
    eps->setText(QStringLiteral("0.001"));
    emit eps->editingFinished();
    QCOMPARE(d.spec().layers[3].body[1].epsilon, 0.001f);
    QCOMPARE(d.layerTree()->itemFor(body(3, 1))->text(LayerTree::LayerColumn),
             QStringLiteral("batchnorm momentum 0.01 epsilon 0.001"));
    QCOMPARE(d.undoStack()->count(), 2);

    // A max pool after the stem: "Pool size", stride defaulting to it.
    d.selectRow(0);
    d.addLayer(LayerType::MaxPool2D);
    QCOMPARE(d.selectedPath(), top(1));
    QVERIFY(rowVisible(d, "kernelH") && rowVisible(d, "strideH") && rowVisible(d, "padding"));
    QVERIFY(!rowVisible(d, "filters") && !rowVisible(d, "useBias"));
    QCOMPARE(field<QSpinBox>(d, "strideH")->value(), 2);
    QCOMPARE(d.layerTree()->topLevelItem(1)->text(LayerTree::OutputColumn),
             QStringLiteral("4x4x16"));
    field<QSpinBox>(d, "kernelH")->setValue(3);
    field<QSpinBox>(d, "kernelW")->setValue(3);
    QCOMPARE(field<QSpinBox>(d, "strideH")->value(), 3); // still the default: the window
    QCOMPARE(d.spec().layers[1].stride_h, 0);
    field<QSpinBox>(d, "strideH")->setValue(1);
    field<QSpinBox>(d, "strideW")->setValue(1);
    chooseData(field<QComboBox>(d, "padding"), int(Padding::Same));
    QCOMPARE(d.layerTree()->topLevelItem(1)->text(LayerTree::LayerColumn),
             QStringLiteral("maxpool2d 3x3 /1 same"));
    QCOMPARE(d.layerTree()->topLevelItem(1)->text(LayerTree::OutputColumn),
             QStringLiteral("8x8x16"));
    QVERIFY2(d.isValid(), qPrintable(d.validationMessage()));
}

void TestDesignerResNet::unitsPerClass()
{
    ModelDesigner d;
    d.setInput(mixlab::Shape{{8, 8, 3}}, 10);
    d.setSpec(smallResNet());
    d.selectRow(5);
    QCheckBox *perClass = field<QCheckBox>(d, "unitsPerClass");
    QSpinBox *units = field<QSpinBox>(d, "units");
    QVERIFY(perClass->isChecked());
    QVERIFY(!units->isEnabled());
    QCOMPARE(d.layerTree()->topLevelItem(5)->text(LayerTree::LayerColumn),
             QStringLiteral("dense classes"));
    QCOMPARE(d.layerTree()->topLevelItem(5)->text(LayerTree::OutputColumn), QStringLiteral("10"));
    d.setInput(mixlab::Shape{{8, 8, 3}}, 100);
    QVERIFY(d.isValid());
    QCOMPARE(d.layerTree()->topLevelItem(5)->text(LayerTree::OutputColumn), QStringLiteral("100"));

    // Off: a fixed number of units, which no longer matches the 100 classes.
    units->blockSignals(true);
    units->setValue(10);
    units->blockSignals(false);
    perClass->setChecked(false);
    QCOMPARE(d.spec().layers[5].units, 10);
    QVERIFY(units->isEnabled());
    QVERIFY(!d.isValid());
    QVERIFY2(d.validationMessage().startsWith(QLatin1String("layer 5 (dense)")),
             qPrintable(d.validationMessage()));
    QCOMPARE(d.errorPath(), top(5));
    d.undoStack()->undo();
    QCOMPARE(d.spec().layers[5].units, mixlab::k_units_classes);
    QVERIFY(perClass->isChecked());
    QVERIFY(d.isValid());
}

void TestDesignerResNet::residualActivationChoices()
{
    ModelDesigner d;
    d.setInput(mixlab::Shape{{8, 8, 3}}, 10);
    d.setSpec(smallResNet());
    d.selectRow(3);
    QComboBox *activation = field<QComboBox>(d, "activation");
    QVERIFY(rowVisible(d, "activation"));
    QVERIFY(!rowVisible(d, "forceFp32"));
    QCOMPARE(activation->count(), 2);
    QCOMPARE(activation->itemText(0), QStringLiteral("linear"));
    QCOMPARE(activation->itemText(1), QStringLiteral("relu"));
    QCOMPARE(activation->currentText(), QStringLiteral("relu"));
    chooseData(activation, int(Activation::None));
    QCOMPARE(d.spec().layers[3].activation, Activation::None);
    QVERIFY(d.isValid());
    QCOMPARE(d.layerTree()->topLevelItem(3)->text(LayerTree::LayerColumn),
             QStringLiteral("residual linear 3x3 16 \u203a 3x3 16"));
    // A dense layer gets the full list back.
    d.selectRow(5);
    QCOMPARE(activation->count(), 6);
}

void TestDesignerResNet::mismatchInsideResidual()
{
    ModelDesigner d;
    d.setInput(mixlab::Shape{{32, 32, 3}}, 100);
    d.setSpec(resourcePreset(QStringLiteral("resnet18.json")));
    QSignalSpy validity(&d, &ModelDesigner::validityChanged);
    // Take away block 5's projection: its body halves the image, the identity does not.
    d.selectPath(shortcut(5, 1));
    d.removeSelectedLayer();
    QVERIFY(d.isValid()); // a bare 1x1 convolution still fits
    d.undoStack()->undo();
    QVERIFY(d.isValid());
    d.selectPath(shortcut(5, 1));
    d.removeSelectedLayer();
    d.selectPath(shortcut(5, 0));
    d.removeSelectedLayer();
    QCOMPARE(d.selectedPath(), shortcut(5, LayerPath::k_group));
    QVERIFY(!d.isValid());
    const QString message = d.validationMessage();
    QVERIFY2(message.startsWith(QLatin1String("layer 5 (residual): body gives 16x16x128 but "
                                              "shortcut gives 32x32x64")),
             qPrintable(message));
    QCOMPARE(validity.last().at(0).toBool(), false);
    QCOMPARE(validity.last().at(1).toString(), message);
    QLabel *error = d.findChild<QLabel *>(QStringLiteral("validationError"));
    QVERIFY(!error->isHidden());
    QCOMPARE(error->text(), message);
    QCOMPARE(d.errorPath(), top(5));

    // The block's row is marked; rows before it and the block's own layers keep figures.
    LayerTree *tree = d.layerTree();
    QTreeWidgetItem *block = tree->topLevelItem(5);
    QVERIFY(block->data(LayerTree::LayerColumn, Qt::BackgroundRole).isValid());
    QCOMPARE(block->toolTip(LayerTree::IndexColumn), message);
    QVERIFY(!tree->topLevelItem(4)->data(LayerTree::LayerColumn, Qt::BackgroundRole).isValid());
    QCOMPARE(tree->topLevelItem(4)->text(LayerTree::OutputColumn), QStringLiteral("32x32x64"));
    QCOMPARE(block->text(LayerTree::OutputColumn), QStringLiteral("\u2013"));
    QCOMPARE(block->child(0)->text(LayerTree::OutputColumn), QStringLiteral("16x16x128"));
    QCOMPARE(block->child(1)->text(LayerTree::OutputColumn), QStringLiteral("32x32x64"));
    QCOMPARE(block->child(0)->child(4)->text(LayerTree::OutputColumn), QStringLiteral("16x16x128"));
    QCOMPARE(tree->topLevelItem(6)->text(LayerTree::OutputColumn), QStringLiteral("\u2013"));

    // "Show" selects the block the message names.
    auto *show = d.findChild<QToolButton *>(QStringLiteral("showErrorLayer"));
    QVERIFY(show && !show->isHidden());
    d.selectRow(0);
    show->click();
    QCOMPARE(d.selectedPath(), top(5));

    d.undoStack()->undo();
    d.undoStack()->undo();
    QVERIFY(d.isValid());
    QVERIFY(show->isHidden());
    QVERIFY(!block->data(LayerTree::LayerColumn, Qt::BackgroundRole).isValid());
}

void TestDesignerResNet::errorInsideBody()
{
    ModelDesigner d;
    d.setInput(mixlab::Shape{{32, 32, 3}}, 100);
    d.setSpec(resourcePreset(QStringLiteral("resnet34.json")));
    LayerTree *tree = d.layerTree();
    // An even kernel with "same" padding, deep in a block: the message names the path.
    d.selectPath(body(8, 3));
    field<QSpinBox>(d, "kernelH")->setValue(2);
    QVERIFY(!d.isValid());
    const QString message = d.validationMessage();
    QVERIFY2(message.startsWith(QLatin1String("layer 8 > body 3 (conv2d)")), qPrintable(message));
    QCOMPARE(d.errorPath(), body(8, 3));
    QTreeWidgetItem *bad = tree->itemFor(body(8, 3));
    QVERIFY(bad->data(LayerTree::LayerColumn, Qt::BackgroundRole).isValid());
    QCOMPARE(bad->toolTip(LayerTree::IndexColumn), message);
    QVERIFY(!tree->topLevelItem(8)->data(LayerTree::LayerColumn, Qt::BackgroundRole).isValid());

    // What comes before still has figures: earlier blocks, and the body up to the error.
    QCOMPARE(tree->topLevelItem(7)->text(LayerTree::OutputColumn), QStringLiteral("16x16x128"));
    QCOMPARE(tree->itemFor(body(8, 2))->text(LayerTree::OutputColumn), QStringLiteral("16x16x128"));
    QCOMPARE(bad->text(LayerTree::OutputColumn), QStringLiteral("\u2013"));
    QCOMPARE(tree->itemFor(shortcut(8, LayerPath::k_group))->text(LayerTree::OutputColumn),
             QStringLiteral("16x16x128"));

    // A closed block opens to show the marked layer on the next check.
    d.selectRow(0);
    tree->collapseAll();
    d.setInput(mixlab::Shape{{32, 32, 3}}, 100);
    QVERIFY(tree->topLevelItem(8)->isExpanded());
    QVERIFY(tree->topLevelItem(8)->child(0)->isExpanded());
    d.findChild<QToolButton *>(QStringLiteral("showErrorLayer"))->click();
    QCOMPARE(d.selectedPath(), body(8, 3));
    QCOMPARE(field<QSpinBox>(d, "kernelH")->value(), 2);
    d.undoStack()->undo();
    QVERIFY(d.isValid());
}

QTEST_MAIN(TestDesignerResNet)
#include "tst_designer_resnet.moc"
