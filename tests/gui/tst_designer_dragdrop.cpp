// The designer's drag and drop, through the layer tree's item model as a drop reaches it
// (mimeData for a dragged row, dropMimeData where it lands): palette entries inserted at
// the drop, rows reordered, moved into and out of residual bodies, each one undo step;
// drops that cannot be made are refused and change nothing.
#include "designer/layerdrag.h"
#include "designer/layerpalette.h"
#include "designer/layerpath.h"
#include "designer/layertree.h"
#include "designer/modeldesigner.h"

#include "mixlab/model_spec.h"

#include <QApplication>
#include <QMimeData>
#include <QTest>
#include <QUndoStack>

#include <memory>

using mixlab::LayerSpec;
using mixlab::LayerType;
using mixlab::ModelSpec;

char *toString(const LayerPath &path) { return qstrdup(qPrintable(path.toString())); }

namespace {

QString json(const ModelSpec &s) { return QString::fromStdString(mixlab::model_spec_to_json(s)); }

LayerPath top(int i) { return LayerPath::top(i); }
LayerPath body(int block, int i) { return top(block).child(LayerGroup::Body, i); }

LayerSpec layer(LayerType type, int units = 0)
{
    LayerSpec l{type};
    if (type == LayerType::Dense) l.units = units;
    if (type == LayerType::Conv2D) {
        l.filters = units;
        l.kernel_h = l.kernel_w = 3;
        l.padding = mixlab::Padding::Same;
    }
    return l;
}

// 0 conv 8, 1 residual(body: conv 8, batchnorm), 2 batchnorm, 3 flatten, 4 dense classes.
ModelSpec blockModel()
{
    LayerSpec block{LayerType::Residual};
    block.body = {layer(LayerType::Conv2D, 8), layer(LayerType::BatchNorm)};
    LayerSpec head = layer(LayerType::Dense);
    head.units = mixlab::k_units_classes;
    return ModelSpec{"blocks",
                     {layer(LayerType::Conv2D, 8), block, layer(LayerType::BatchNorm),
                      layer(LayerType::Flatten), head}};
}

QModelIndex indexOf(LayerTree *tree, const LayerPath &path)
{
    QTreeWidgetItem *item = tree->itemFor(path);
    if (!item) return {};
    // QTreeWidget::indexFromItem is protected; the model finds the item by its row.
    QModelIndex parent =
        item->parent() ? indexOf(tree, tree->pathOf(item->parent())) : QModelIndex();
    const int row =
        item->parent() ? item->parent()->indexOfChild(item) : tree->indexOfTopLevelItem(item);
    return tree->model()->index(row, 0, parent);
}

// What the view hands the model when a row is dragged.
std::unique_ptr<QMimeData> dragOf(LayerTree *tree, const LayerPath &path)
{
    return std::unique_ptr<QMimeData>(tree->model()->mimeData({indexOf(tree, path)}));
}

// A drop as the view reports it: `row` under `parent` (-1: onto the parent itself).
bool drop(LayerTree *tree, const QMimeData &data, Qt::DropAction action, int row,
          const LayerPath &parent)
{
    const QModelIndex p = parent.isEmpty() ? QModelIndex() : indexOf(tree, parent);
    if (!tree->model()->canDropMimeData(&data, action, row, 0, p)) return false;
    return tree->model()->dropMimeData(&data, action, row, row < 0 ? -1 : 0, p);
}

} // namespace

class TestDesignerDragDrop : public QObject {
    Q_OBJECT
private slots:
    void paletteEntryLandsWhereDropped_data();
    void paletteEntryLandsWhereDropped();
    void rowsMove_data();
    void rowsMove();
    void refusedDrops();
    void dropEventsReachTheDesigner();
    void movedLayerPaths();
};

void TestDesignerDragDrop::paletteEntryLandsWhereDropped_data()
{
    QTest::addColumn<QString>("entry");
    QTest::addColumn<int>("row");        // where the view says it landed
    QTest::addColumn<QString>("parent"); // "" for the model's own list
    QTest::addColumn<QString>("landed"); // the new layer's path
    QTest::addColumn<int>("type");
    QTest::newRow("between top-level rows") << "dropout" << 3 << ""
                                            << "layer 3" << int(LayerType::Dropout);
    QTest::newRow("first") << "batchnorm" << 0 << ""
                           << "layer 0" << int(LayerType::BatchNorm);
    QTest::newRow("onto the empty area: the end") << "dense" << -1 << ""
                                                  << "layer 5" << int(LayerType::Dense);
    QTest::newRow("into a body") << "activation" << 1 << "layer 1 > body"
                                 << "layer 1 > body 1" << int(LayerType::Activation);
    QTest::newRow("onto a block: end of its body")
        << "batchnorm" << -1 << "layer 1"
        << "layer 1 > body 2" << int(LayerType::BatchNorm);
    QTest::newRow("onto a layer: after it") << "dropout" << -1 << "layer 2"
                                            << "layer 3" << int(LayerType::Dropout);
    QTest::newRow("into a shortcut") << "conv2d" << 0 << "layer 1 > shortcut"
                                     << "layer 1 > shortcut 0" << int(LayerType::Conv2D);
    QTest::newRow("a whole block") << "basic block" << 2 << ""
                                   << "layer 2" << int(LayerType::Residual);
}

void TestDesignerDragDrop::paletteEntryLandsWhereDropped()
{
    QFETCH(QString, entry);
    QFETCH(int, row);
    QFETCH(QString, parent);
    QFETCH(QString, landed);
    QFETCH(int, type);
    ModelDesigner d;
    d.setSpec(blockModel());
    d.layerTree()->expandAll();
    const QString before = json(d.spec());

    const std::unique_ptr<QMimeData> data(layerdrag::forPaletteEntry(entry));
    const LayerPath into = parent.isEmpty() ? LayerPath{} : *LayerPath::fromString(parent);
    QVERIFY(drop(d.layerTree(), *data, Qt::CopyAction, row, into));

    const LayerPath at = *LayerPath::fromString(landed);
    const ModelSpec after = d.spec();
    const LayerSpec *added = layerAt(after, at);
    QVERIFY2(added, qPrintable(json(after)));
    QCOMPARE(int(added->type), type);
    QCOMPARE(d.selectedPath(), at); // the new layer is selected, ready to edit
    QCOMPARE(d.undoStack()->count(), 1);
    d.undoStack()->undo();
    QCOMPARE(json(d.spec()), before);
}

void TestDesignerDragDrop::rowsMove_data()
{
    QTest::addColumn<QString>("from");
    QTest::addColumn<int>("row");
    QTest::addColumn<QString>("parent");
    QTest::addColumn<QString>("landed");
    QTest::addColumn<QStringList>("order"); // top-level types after the move
    QTest::newRow("down the list")
        << "layer 0" << 3 << ""
        << "layer 2" << QStringList{"residual", "batchnorm", "conv2d", "flatten", "dense"};
    QTest::newRow("up the list") << "layer 2" << 0 << ""
                                 << "layer 0"
                                 << QStringList{"batchnorm", "conv2d", "residual", "flatten",
                                                "dense"};
    QTest::newRow("to the end") << "layer 0" << -1 << ""
                                << "layer 4"
                                << QStringList{"residual", "batchnorm", "flatten", "dense",
                                               "conv2d"};
    QTest::newRow("into a later block's body")
        << "layer 0" << 0 << "layer 1 > body"
        << "layer 0 > body 0" << QStringList{"residual", "batchnorm", "flatten", "dense"};
    QTest::newRow("into an earlier block's body")
        << "layer 2" << 2 << "layer 1 > body"
        << "layer 1 > body 2" << QStringList{"conv2d", "residual", "flatten", "dense"};
    QTest::newRow("out of a body")
        << "layer 1 > body 1" << 3 << ""
        << "layer 3"
        << QStringList{"conv2d", "residual", "batchnorm", "batchnorm", "flatten", "dense"};
    QTest::newRow("within a body")
        << "layer 1 > body 1" << 0 << "layer 1 > body"
        << "layer 1 > body 0" << QStringList{"conv2d", "residual", "batchnorm", "flatten", "dense"};
    QTest::newRow("a whole block")
        << "layer 1" << 0 << ""
        << "layer 0" << QStringList{"residual", "conv2d", "batchnorm", "flatten", "dense"};
}

void TestDesignerDragDrop::rowsMove()
{
    QFETCH(QString, from);
    QFETCH(int, row);
    QFETCH(QString, parent);
    QFETCH(QString, landed);
    QFETCH(QStringList, order);
    ModelDesigner d;
    d.setSpec(blockModel());
    d.layerTree()->expandAll();
    const ModelSpec before = d.spec();
    const LayerPath source = *LayerPath::fromString(from);
    const LayerSpec moved = *layerAt(before, source);

    const std::unique_ptr<QMimeData> data = dragOf(d.layerTree(), source);
    QVERIFY(data);
    const LayerPath into = parent.isEmpty() ? LayerPath{} : *LayerPath::fromString(parent);
    QVERIFY(drop(d.layerTree(), *data, Qt::MoveAction, row, into));

    const LayerPath at = *LayerPath::fromString(landed);
    QVERIFY2(layerAt(d.spec(), at) && *layerAt(d.spec(), at) == moved, qPrintable(json(d.spec())));
    QStringList types;
    for (const LayerSpec &l : d.spec().layers)
        types << QString::fromUtf8(mixlab::layer_type_name(l.type).data());
    QCOMPARE(types, order);
    QCOMPARE(d.selectedPath(), at);
    // One step in the history, named for what it did.
    QCOMPARE(d.undoStack()->count(), 1);
    QCOMPARE(d.undoStack()->text(0), QStringLiteral("Move %1 to %2").arg(from, landed));
    d.undoStack()->undo();
    QCOMPARE(json(d.spec()), json(before));
    QCOMPARE(d.selectedPath(), source);
    d.undoStack()->redo();
    QVERIFY(*layerAt(d.spec(), at) == moved);
}

void TestDesignerDragDrop::refusedDrops()
{
    ModelDesigner d;
    d.setSpec(blockModel());
    d.layerTree()->expandAll();
    const QString before = json(d.spec());
    LayerTree *tree = d.layerTree();

    // A block into its own body, or onto itself.
    const std::unique_ptr<QMimeData> block = dragOf(tree, top(1));
    QVERIFY(
        !drop(tree, *block, Qt::MoveAction, 0, top(1).child(LayerGroup::Body, LayerPath::k_group)));
    QVERIFY(!drop(tree, *block, Qt::MoveAction, -1, top(1)));
    // Where it already is: before itself or before its next sibling.
    QVERIFY(!drop(tree, *block, Qt::MoveAction, 1, {}));
    QVERIFY(!drop(tree, *block, Qt::MoveAction, 2, {}));
    // An unknown palette entry; a path that is not in the model; data of another kind.
    const std::unique_ptr<QMimeData> unknown(layerdrag::forPaletteEntry(QStringLiteral("lstm9")));
    QVERIFY(!drop(tree, *unknown, Qt::CopyAction, 0, {}));
    const std::unique_ptr<QMimeData> gone(layerdrag::forLayer(top(9)));
    QVERIFY(!drop(tree, *gone, Qt::MoveAction, 0, {}));
    QMimeData text;
    text.setText(QStringLiteral("dense"));
    QVERIFY(!drop(tree, text, Qt::CopyAction, 0, {}));
    // A body or shortcut row is a place, not something to drag.
    QVERIFY(!dragOf(tree, top(1).child(LayerGroup::Body, LayerPath::k_group)));

    QCOMPARE(json(d.spec()), before);
    QCOMPARE(d.undoStack()->count(), 0);
}

// The events a real drop sends the tree's viewport, onto the middle of a row: the view
// reports "onto that layer", and the entry lands after it.
void TestDesignerDragDrop::dropEventsReachTheDesigner()
{
    ModelDesigner d;
    d.setSpec(blockModel());
    d.resize(520, 640);
    d.show();
    QVERIFY(QTest::qWaitForWindowExposed(&d));
    LayerTree *tree = d.layerTree();
    const QPoint onto = tree->visualItemRect(tree->itemFor(top(2))).center();
    const std::unique_ptr<QMimeData> data(layerdrag::forPaletteEntry(QStringLiteral("dropout")));
    QDragEnterEvent enter(onto, Qt::CopyAction, data.get(), Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(tree->viewport(), &enter);
    QVERIFY(enter.isAccepted());
    QDragMoveEvent move(onto, Qt::CopyAction, data.get(), Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(tree->viewport(), &move);
    QVERIFY(move.isAccepted());
    QDropEvent dropped(QPointF(onto), Qt::CopyAction, data.get(), Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(tree->viewport(), &dropped);
    QVERIFY(dropped.isAccepted());
    const ModelSpec after = d.spec();
    QCOMPARE(after.layers.size(), std::size_t(6));
    QCOMPARE(after.layers[3].type, LayerType::Dropout);
    QCOMPARE(d.undoStack()->count(), 1);
}

void TestDesignerDragDrop::movedLayerPaths()
{
    const ModelSpec spec = blockModel();
    const auto lands = [&spec](const LayerPath &from, const LayerPath &to) {
        const std::optional<LayerPath> p = movedLayerPath(spec, from, to);
        return p ? p->toString() : QStringLiteral("refused");
    };
    QCOMPARE(lands(top(0), top(5)), QStringLiteral("layer 4"));
    QCOMPARE(lands(top(3), top(0)), QStringLiteral("layer 0"));
    QCOMPARE(lands(top(0), body(1, 2)), QStringLiteral("layer 0 > body 2"));
    QCOMPARE(lands(body(1, 0), top(0)), QStringLiteral("layer 0"));
    QCOMPARE(lands(body(1, 0), body(1, 2)), QStringLiteral("layer 1 > body 1"));
    QCOMPARE(lands(top(2), top(2)), QStringLiteral("refused")); // no move at all
    QCOMPARE(lands(top(2), top(3)), QStringLiteral("refused"));
    QCOMPARE(lands(top(1), body(1, 0)), QStringLiteral("refused")); // into itself
    QCOMPARE(lands(top(0), top(6)), QStringLiteral("refused"));     // past the end
    QCOMPARE(lands(top(0), body(2, 0)), QStringLiteral("refused")); // batchnorm has no body
    QCOMPARE(lands(top(7), top(0)), QStringLiteral("refused"));     // no such layer

    for (const LayerPath &p :
         {top(3), body(1, 1), top(1).child(LayerGroup::Shortcut, LayerPath::k_group)}) {
        const std::optional<LayerPath> back = LayerPath::fromString(p.toString());
        QVERIFY(back);
        QCOMPARE(*back, p);
    }
    QVERIFY(!LayerPath::fromString(QStringLiteral("layer 1 > body > body 2")));
    QVERIFY(!LayerPath::fromString(QStringLiteral("layer x")));
}

QTEST_MAIN(TestDesignerDragDrop)
#include "tst_designer_dragdrop.moc"
