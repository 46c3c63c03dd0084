// ModelDesigner: every change to the spec, done or undone, goes through applySpec, which
// re-runs the engine's own validation (parse of the written JSON, then build_graph) so
// the figures and the verdict shown are exactly what a run would get.
#include "designer/modeldesigner.h"

#include "designer/layerdrag.h"
#include "designer/layerpalette.h"
#include "designer/layerpropertyeditor.h"
#include "designer/layertree.h"
#include "common/languagemodel.h"
#include "common/shortcuttext.h"
#include "mixlab/error.h"

#include <QAction>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QLocale>
#include <QMenu>
#include <QSignalBlocker>
#include <QScrollArea>
#include <QSplitter>
#include <QToolBar>
#include <QToolButton>
#include <QUndoStack>
#include <QVBoxLayout>
#include <QtDebug>

#include <algorithm>

using mixlab::GraphLayer;
using mixlab::LayerSpec;
using mixlab::LayerType;
using mixlab::ModelSpec;

namespace {

const QString k_defaultPreset = QStringLiteral("seed-mlp");
// The property editor's least height, in form rows (its title counts as one).
constexpr int k_editorMinRows = 5;

LayerSpec headFor(int classes)
{
    LayerSpec head;
    head.type = LayerType::Dense;
    head.units = std::max(classes, 1);
    return head;
}

// The engine's figures for as much of `list` as it can infer when the whole model does
// not validate. build_graph stops at the first error, so it is asked about shorter
// prefixes, each put after `context` (the top-level layers that lead to the list's
// input: a block's body and shortcut see what the layers before the block give) and
// closed with flatten + dense(classes) to meet the output check (a sequence model with
// dense(classes) alone: dense applies per time step there, and flatten does not apply). A layer's figures
// depend only on its input, so the rows it returns are the real ones. When inference
// stops at a residual block, its body and shortcut are inferred the same way, and the
// block itself gets an entry with its input but no output.
std::vector<GraphLayer> inferList(const std::vector<LayerSpec> &context,
                                  const std::vector<LayerSpec> &list, const mixlab::Shape &input,
                                  int classes)
{
    LayerSpec flatten;
    flatten.type = LayerType::Flatten;
    for (std::size_t k = list.size() + 1; k-- > 0;) {
        ModelSpec probe;
        probe.layers = context;
        probe.layers.insert(probe.layers.end(), list.begin(), list.begin() + std::ptrdiff_t(k));
        if (!input.sequence) probe.layers.push_back(flatten);
        probe.layers.push_back(headFor(classes));
        mixlab::Graph g;
        try {
            g = mixlab::build_graph(probe, input, classes);
        } catch (const std::exception &) {
            continue;
        }
        const auto first = g.layers.begin() + std::ptrdiff_t(context.size());
        std::vector<GraphLayer> rows(first, first + std::ptrdiff_t(k));
        if (k < list.size() && list[k].type == LayerType::Residual) {
            GraphLayer block;
            block.spec = list[k];
            block.in = k > 0 ? rows.back().out
                             : (context.empty() ? input : g.layers[context.size() - 1].out);
            std::vector<LayerSpec> inner = context;
            inner.insert(inner.end(), list.begin(), list.begin() + std::ptrdiff_t(k));
            block.body = inferList(inner, list[k].body, input, classes);
            block.shortcut = inferList(inner, list[k].shortcut, input, classes);
            rows.push_back(std::move(block));
        }
        return rows;
    }
    return {};
}

int channelsOf(const mixlab::Shape &s) { return s.dims.size() == 3 ? s.dims[2] : 0; }

} // namespace

ModelDesigner::ModelDesigner(QWidget *parent) : QWidget(parent)
{
    m_undoStack = new QUndoStack(this);
    m_undoAction = m_undoStack->createUndoAction(this, tr("&Undo"));
    m_undoAction->setShortcut(QKeySequence::Undo);
    m_redoAction = m_undoStack->createRedoAction(this, tr("&Redo"));
    m_redoAction->setShortcut(QKeySequence::Redo);

    readPresets();

    m_tree = new LayerTree(this);
    m_editor = new LayerPropertyEditor(this);
    m_palette = new LayerPalette(this);
    m_palette->setObjectName(QStringLiteral("layerPalette"));

    auto *nameLabel = new QLabel(tr("&Model"), this);
    m_nameEdit = new QLineEdit(this);
    m_nameEdit->setObjectName(QStringLiteral("modelName"));
    m_nameEdit->setPlaceholderText(tr("untitled"));
    nameLabel->setBuddy(m_nameEdit);

    m_totals = new QLabel(this);
    m_totals->setObjectName(QStringLiteral("totals"));
    m_totals->setTextInteractionFlags(Qt::TextSelectableByMouse);

    m_errorLabel = new QLabel(this);
    m_errorLabel->setObjectName(QStringLiteral("validationError"));
    m_errorLabel->setWordWrap(true);
    m_errorLabel->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_errorLabel->setStyleSheet(QStringLiteral(
        "QLabel { color: #b00020; background: rgba(220, 50, 47, 28); "
        "border: 1px solid rgba(220, 50, 47, 110); border-radius: 3px; padding: 4px; }"));
    m_showErrorButton = new QToolButton(this);
    m_showErrorButton->setObjectName(QStringLiteral("showErrorLayer"));
    m_showErrorButton->setText(tr("Show"));
    m_showErrorButton->setToolTip(tr("Select the layer the message names"));

    m_warningLabel = new QLabel(this);
    m_warningLabel->setObjectName(QStringLiteral("warnings"));
    m_warningLabel->setWordWrap(true);
    m_warningLabel->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_warningLabel->setStyleSheet(QStringLiteral(
        "QLabel { color: #7a4d00; background: rgba(230, 160, 0, 30); "
        "border: 1px solid rgba(230, 160, 0, 120); border-radius: 3px; padding: 4px; }"));
    m_dataLabel = new QLabel(this);
    m_dataLabel->setObjectName(QStringLiteral("dataMismatch"));
    m_dataLabel->setWordWrap(true);
    m_dataLabel->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_dataLabel->setStyleSheet(m_warningLabel->styleSheet());
    m_dataLabel->hide();

    auto *nameRow = new QHBoxLayout;
    nameRow->addWidget(nameLabel);
    nameRow->addWidget(m_nameEdit, 1);

    auto *errorRow = new QHBoxLayout;
    errorRow->addWidget(m_errorLabel, 1);
    errorRow->addWidget(m_showErrorButton, 0, Qt::AlignTop);

    auto *listPart = new QWidget(this);
    auto *listLayout = new QVBoxLayout(listPart);
    listLayout->setContentsMargins(0, 0, 0, 0);
    listLayout->addWidget(m_tree, 1);
    listLayout->addWidget(m_totals);
    listLayout->addLayout(errorRow);
    listLayout->addWidget(m_warningLabel);
    listLayout->addWidget(m_dataLabel);

    // The form scrolls rather than squeezing the tree: a convolution has seven fields.
    // Never shorter than a title and four fields, so it stays usable beside a long tree.
    auto *editorScroll = new QScrollArea(this);
    editorScroll->setObjectName(QStringLiteral("propertyEditorScroll"));
    editorScroll->setWidget(m_editor);
    editorScroll->setWidgetResizable(true);
    editorScroll->setFrameShape(QFrame::NoFrame);
    editorScroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    editorScroll->setMinimumHeight(k_editorMinRows * fontMetrics().lineSpacing() * 3 / 2);

    // Tree and form share what the column has left, the tree (with the palette and the
    // model's notes above it) the larger part, and give and take alike when the window
    // changes height; the form keeps its minimum and scrolls.
    auto *splitter = new QSplitter(Qt::Vertical, this);
    splitter->setObjectName(QStringLiteral("designerSplitter"));
    splitter->setChildrenCollapsible(false);
    splitter->addWidget(listPart);
    splitter->addWidget(editorScroll);
    splitter->setStretchFactor(0, 3);
    splitter->setStretchFactor(1, 2);
    splitter->setSizes({300, 200});

    auto *layout = new QVBoxLayout(this);
    layout->addWidget(buildToolBar());
    layout->addLayout(nameRow);
    layout->addWidget(m_palette);
    layout->addWidget(splitter, 1);

    connect(m_tree, &LayerTree::currentPathChanged, this, [this] { showSelectedLayer(); });
    connect(m_editor, &LayerPropertyEditor::layerEdited, this, &ModelDesigner::onLayerEdited);
    connect(m_palette, &LayerPalette::layerRequested, this, &ModelDesigner::addLayer);
    connect(m_palette, &LayerPalette::blockRequested, this, &ModelDesigner::addBlock);
    m_tree->setDropHandler([this](const QMimeData &data, const LayerPath &at) {
        if (const std::optional<LayerPath> from = layerdrag::layerOf(data))
            return moveLayer(*from, at);
        if (const std::optional<QString> entry = layerdrag::paletteEntryOf(data))
            return addPaletteEntry(*entry, at);
        return false;
    });
    connect(m_showErrorButton, &QToolButton::clicked, this, [this] { selectPath(m_errorPath); });
    connect(m_nameEdit, &QLineEdit::textChanged, this, [this](const QString &text) {
        const QString current = QString::fromStdString(m_spec.name);
        if (text != current) m_undoStack->push(new RenameModelCommand(this, current, text));
    });

    // Start from the seed MLP so a first Start works at once.
    ModelSpec initial;
    for (const Preset &p : m_presets)
        if (p.name == k_defaultPreset) initial = p.spec;
    setSpec(initial);
}

ModelDesigner::~ModelDesigner() = default;

void ModelDesigner::readPresets()
{
    const QDir dir(QStringLiteral(":/models"));
    for (const QString &file : dir.entryList({QStringLiteral("*.json")}, QDir::Files)) {
        QFile f(dir.filePath(file));
        if (!f.open(QIODevice::ReadOnly)) continue;
        const QByteArray text = f.readAll();
        try {
            Preset p;
            p.spec = mixlab::parse_model_spec(
                std::string_view(text.constData(), std::size_t(text.size())));
            p.fileName = file;
            p.name = p.spec.name.empty() ? QFileInfo(file).completeBaseName()
                                         : QString::fromStdString(p.spec.name);
            m_presets.push_back(std::move(p));
        } catch (const mixlab::Error &e) {
            // A broken built-in preset is a packaging bug; leave it out of the menu.
            qWarning("preset %s skipped: %s", qPrintable(file), e.what());
        }
    }
    std::sort(m_presets.begin(), m_presets.end(), [](const Preset &a, const Preset &b) {
        return QString::localeAwareCompare(a.name, b.name) < 0;
    });
}

QWidget *ModelDesigner::buildToolBar()
{
    auto *bar = new QToolBar(this);
    bar->setToolButtonStyle(Qt::ToolButtonTextOnly);
    bar->setIconSize(QSize(16, 16));

    m_presetsMenu = new QMenu(tr("&Presets"), this);
    for (const Preset &p : m_presets) {
        QAction *a = m_presetsMenu->addAction(p.name);
        a->setToolTip(p.fileName);
        const QString name = p.name;
        connect(a, &QAction::triggered, this, [this, name] { loadPreset(name); });
    }
    auto *presetsButton = new QToolButton(bar);
    presetsButton->setObjectName(QStringLiteral("presetsButton"));
    presetsButton->setText(tr("Presets"));
    presetsButton->setToolTip(tr("Replace the model with a built-in preset (undoable)"));
    presetsButton->setMenu(m_presetsMenu);
    presetsButton->setPopupMode(QToolButton::InstantPopup);
    bar->addWidget(presetsButton);
    bar->addSeparator();

    // The palette's entries, for the keyboard and for when the palette is hidden.
    m_addMenu = new QMenu(tr("&Add layer"), this);
    for (const QString &name : m_palette->entryNames()) {
        QAction *a = m_addMenu->addAction(name);
        connect(a, &QAction::triggered, this, [this, name] { m_palette->activate(name); });
    }
    auto *addButton = new QToolButton(bar);
    addButton->setObjectName(QStringLiteral("addButton"));
    addButton->setText(tr("Add"));
    addButton->setToolTip(tr("Insert a layer after the selected one, or into the selected "
                             "body/shortcut"));
    addButton->setMenu(m_addMenu);
    addButton->setPopupMode(QToolButton::InstantPopup);
    bar->addWidget(addButton);

    // The layer shortcuts act only while the layer tree (or this bar) has focus, so
    // Delete in the name field still deletes text.
    auto layerAction = [&](const QString &text, const QKeySequence &key, const QString &tip,
                           auto slot) {
        QAction *a = bar->addAction(text);
        a->setShortcut(key);
        a->setShortcutContext(Qt::WidgetWithChildrenShortcut);
        a->setToolTip(withShortcut(tip, key));
        m_tree->addAction(a);
        connect(a, &QAction::triggered, this, slot);
        return a;
    };
    m_removeAction = layerAction(tr("Remove"), QKeySequence::Delete,
                                 tr("Remove the selected layer (a block with all it holds)"),
                                 [this] { removeSelectedLayer(); });
    m_removeAction->setIconText(QStringLiteral("\u2715"));
    m_duplicateAction = layerAction(tr("Duplicate"), QKeySequence(Qt::CTRL | Qt::Key_D),
                                    tr("Insert a copy of the selected layer after it"),
                                    [this] { duplicateSelectedLayer(); });
    m_duplicateAction->setIconText(tr("Dup"));
    m_upAction = layerAction(tr("Move up"), QKeySequence(Qt::CTRL | Qt::Key_Up),
                             tr("Move the selected layer up"), [this] { moveSelectedLayer(-1); });
    m_upAction->setIconText(QStringLiteral("\u2191")); // the bar shows arrows, menus words
    m_downAction =
        layerAction(tr("Move down"), QKeySequence(Qt::CTRL | Qt::Key_Down),
                    tr("Move the selected layer down"), [this] { moveSelectedLayer(+1); });
    m_downAction->setIconText(QStringLiteral("\u2193"));
    bar->addSeparator();
    // Short buttons here; the actions themselves carry "Undo Set units of layer 3 to 12"
    // for the Edit menu, which would make this bar jump with every edit.
    auto historyButton = [&](const QString &text, QAction *action) {
        auto *b = new QToolButton(bar);
        b->setText(text);
        b->setEnabled(action->isEnabled());
        b->setToolTip(action->text());
        connect(b, &QToolButton::clicked, action, &QAction::trigger);
        connect(action, &QAction::changed, b, [b, action] {
            b->setEnabled(action->isEnabled());
            b->setToolTip(withShortcut(action->text(), action->shortcut()));
        });
        bar->addWidget(b);
    };
    historyButton(tr("Undo"), m_undoAction);
    historyButton(tr("Redo"), m_redoAction);
    bar->addSeparator();

    QAction *collapse = bar->addAction(tr("Collapse all"));
    collapse->setObjectName(QStringLiteral("collapseAll"));
    collapse->setIconText(QStringLiteral("\u25b8"));
    collapse->setToolTip(tr("Close every residual block"));
    connect(collapse, &QAction::triggered, m_tree, &LayerTree::collapseBlocks);
    QAction *expand = bar->addAction(tr("Expand all"));
    expand->setObjectName(QStringLiteral("expandAll"));
    expand->setIconText(QStringLiteral("\u25be"));
    expand->setToolTip(tr("Open every residual block"));
    connect(expand, &QAction::triggered, m_tree, &QTreeView::expandAll);
    QAction *showPalette = bar->addAction(tr("Palette"));
    showPalette->setObjectName(QStringLiteral("showPalette"));
    showPalette->setCheckable(true);
    showPalette->setChecked(true);
    showPalette->setToolTip(tr("Show the palette of layers and blocks"));
    connect(showPalette, &QAction::toggled, m_palette, &QWidget::setVisible);

    // Not on a menu or bar here, so the designer's own widget carries the shortcuts.
    addAction(m_undoAction);
    addAction(m_redoAction);
    return bar;
}

QStringList ModelDesigner::presetNames() const
{
    QStringList names;
    for (const Preset &p : m_presets) names << p.name;
    return names;
}

bool ModelDesigner::loadPreset(const QString &name)
{
    for (const Preset &p : m_presets) {
        if (p.name != name && p.fileName != name &&
            QFileInfo(p.fileName).completeBaseName() != name)
            continue;
        m_undoStack->push(
            new ReplaceModelCommand(this, m_spec, p.spec, tr("Load preset %1").arg(p.name)));
        // A deep ResNet reads as its stages only with every block closed.
        m_tree->collapseBlocks();
        return true;
    }
    return false;
}

void ModelDesigner::setSpec(const ModelSpec &spec)
{
    m_undoStack->clear();
    applySpec(spec, spec.layers.empty() ? LayerPath{} : LayerPath::top(0));
    m_tree->collapseBlocks();
    m_undoStack->setClean();
}

void ModelDesigner::setInput(const mixlab::Shape &input, int classes)
{
    m_input = input;
    m_classes = classes;
    revalidate();
    showSelectedLayer();
}

bool ModelDesigner::isLanguageModel() const { return mixlab::is_language_model(m_spec); }

ModelDesigner::GraphData ModelDesigner::graphDataFor(const ModelSpec &spec,
                                                     const mixlab::Shape &data, int classes)
{
    const bool text = data.is_tokens();
    if (mixlab::is_language_model(spec))
        return {mixlab::Shape::tokens(), text ? classes : defaultTextVocabulary()};
    if (text) return {mixlab::Shape{{32, 32, 3}}, 10};
    return {data, classes};
}

mixlab::Shape ModelDesigner::graphInput() const
{
    return graphDataFor(m_spec, m_input, m_classes).input;
}

int ModelDesigner::graphClasses() const { return graphDataFor(m_spec, m_input, m_classes).classes; }

QString ModelDesigner::dataMismatch() const
{
    if (isLanguageModel() && !m_input.is_tokens())
        return tr("A language model trains on a text corpus, and the dataset chosen holds "
                  "images: choose synthetic-text or a corpus folder (train.txt, valid.txt, "
                  "test.txt) in the run panel. The figures are for synthetic-text's %1 words.")
            .arg(QLocale().toString(defaultTextVocabulary()));
    if (!isLanguageModel() && m_input.is_tokens())
        return tr("This model reads images, and the dataset chosen is a text corpus: choose an "
                  "image dataset, or a language model (a word-lm preset, or an embedding as the "
                  "first layer). The figures are for 32x32x3 images and 10 classes.");
    return {};
}

LayerPath ModelDesigner::selectedPath() const { return m_tree->currentPath(); }

void ModelDesigner::selectPath(const LayerPath &path) { m_tree->selectPath(path); }

int ModelDesigner::selectedRow() const { return m_tree->currentRow(); }

void ModelDesigner::selectRow(int row) { m_tree->selectRow(row); }

LayerPath ModelDesigner::insertionPoint() const
{
    const LayerPath sel = selectedPath();
    if (sel.isEmpty()) return LayerPath::top(int(m_spec.layers.size()));
    if (sel.isGroup()) {
        const std::vector<LayerSpec> *list = layerList(m_spec, sel);
        return sel.sibling(list ? int(list->size()) : 0);
    }
    return sel.sibling(sel.index() + 1);
}

std::optional<mixlab::Shape> ModelDesigner::shapeAt(const LayerPath &at) const
{
    if (at.index() > 0) {
        const GraphLayer *before = graphLayerAt(m_inferred, at.sibling(at.index() - 1));
        if (before && !before->out.dims.empty()) return before->out;
        return std::nullopt;
    }
    if (at.isTopLevel()) return graphInput();
    // The first layer of a body or shortcut sees the block's input.
    const GraphLayer *block = graphLayerAt(m_inferred, at.owner());
    if (block && !block->in.dims.empty()) return block->in;
    return std::nullopt;
}

void ModelDesigner::addLayer(LayerType type) { addLayerAt(type, insertionPoint()); }

void ModelDesigner::addLayerAt(LayerType type, const LayerPath &at)
{
    m_undoStack->push(new AddLayerCommand(this, at, defaultLayer(type)));
    // An empty block is filled next: aim the following adds at its body.
    if (type == LayerType::Residual) selectPath(at.child(LayerGroup::Body, LayerPath::k_group));
}

void ModelDesigner::addBlock(BlockKind kind, int filters, int stride)
{
    addBlockAt(kind, filters, stride, insertionPoint());
}

void ModelDesigner::addBlockAt(BlockKind kind, int filters, int stride, const LayerPath &at)
{
    const std::optional<mixlab::Shape> in = shapeAt(at);
    const int channels = in ? channelsOf(*in) : 0;
    if (filters <= 0) {
        // Keep the channels: a bottleneck's inner width is a quarter of its output.
        filters = kind == BlockKind::Bottleneck ? channels / 4 : channels;
        if (filters <= 0) filters = 64;
    }
    const LayerSpec block = residualBlock(kind, filters, std::max(stride, 1), channels);
    const QString text = kind == BlockKind::Basic
                             ? tr("Add basic block (%1 filters)").arg(filters)
                             : tr("Add bottleneck block (%1 filters)").arg(filters);
    m_undoStack->push(new AddLayerCommand(this, at, block, text));
    if (QTreeWidgetItem *item = m_tree->itemFor(at)) item->setExpanded(true);
}

bool ModelDesigner::addPaletteEntry(const QString &entry, const LayerPath &at)
{
    const std::vector<LayerSpec> *list = at.isGroup() ? nullptr : layerList(m_spec, at);
    const std::optional<LayerPalette::Request> r = m_palette->requestFor(entry);
    if (!list || !r || at.index() < 0 || at.index() > int(list->size())) return false;
    if (r->block)
        addBlockAt(r->kind, r->filters, r->stride, at);
    else
        addLayerAt(r->type, at);
    return true;
}

bool ModelDesigner::moveLayer(const LayerPath &from, const LayerPath &to)
{
    const std::optional<LayerPath> landed = movedLayerPath(m_spec, from, to);
    if (!landed) return false;
    // One undo step made of the two edits it is.
    auto *move = new QUndoCommand(tr("Move %1 to %2").arg(from.toString(), landed->toString()));
    const LayerSpec layer = *layerAt(m_spec, from);
    new RemoveLayerCommand(this, from, move);
    new AddLayerCommand(this, *landed, layer, {}, move);
    m_undoStack->push(move);
    return true;
}

void ModelDesigner::removeSelectedLayer()
{
    const LayerPath path = selectedPath();
    if (path.isEmpty() || path.isGroup() || !layerAt(m_spec, path)) return;
    m_undoStack->push(new RemoveLayerCommand(this, path));
}

void ModelDesigner::moveSelectedLayer(int delta)
{
    const LayerPath path = selectedPath();
    if (path.isEmpty() || path.isGroup() || (delta != -1 && delta != 1)) return;
    const std::vector<LayerSpec> *list = layerList(m_spec, path);
    const int to = path.index() + delta;
    if (!list || to < 0 || to >= int(list->size())) return;
    m_undoStack->push(new MoveLayerCommand(this, path, delta));
}

void ModelDesigner::duplicateSelectedLayer()
{
    const LayerPath path = selectedPath();
    if (path.isEmpty() || path.isGroup() || !layerAt(m_spec, path)) return;
    m_undoStack->push(new DuplicateLayerCommand(this, path));
}

void ModelDesigner::onLayerEdited(const LayerPath &path, LayerField field, const LayerSpec &,
                                  const LayerSpec &after)
{
    const LayerSpec *current = layerAt(m_spec, path);
    if (!current) return;
    // The spec, not the editor's copy, is what undo must restore.
    m_undoStack->push(new EditLayerCommand(this, path, field, *current, after));
}

bool ModelDesigner::editLayer(const LayerPath &path, LayerField field, const LayerSpec &after)
{
    const LayerSpec *current = layerAt(m_spec, path);
    if (!current || sameField(field, *current, after)) return false;
    m_undoStack->push(
        new EditLayerCommand(this, path, field, *current, after, EditLayerCommand::Merge::Alone));
    return true;
}

void ModelDesigner::applySpec(const ModelSpec &spec, const std::optional<LayerPath> &select)
{
    const LayerPath kept = m_tree->currentPath();
    m_spec = spec;
    const QString name = QString::fromStdString(m_spec.name);
    if (m_nameEdit->text() != name) {
        const QSignalBlocker block(m_nameEdit);
        m_nameEdit->setText(name);
    }
    revalidate();
    LayerPath target = select ? *select : kept;
    if (!target.isEmpty() && !m_tree->itemFor(target) && target.isTopLevel() &&
        !m_spec.layers.empty())
        target = LayerPath::top(std::min(target.index(), int(m_spec.layers.size()) - 1));
    m_tree->selectPath(target);
    showSelectedLayer();
    emit specChanged();
}

void ModelDesigner::revalidate()
{
    m_graph.reset();
    m_warnings.clear();
    QString message;
    try {
        // The spec must also survive being written and read back: the parser holds
        // limits build_graph does not (e.g. at most 1,000,000 units), and a run, a
        // saved experiment or the CLI all go through that JSON.
        (void)mixlab::parse_model_spec(mixlab::model_spec_to_json(m_spec));
        m_graph = mixlab::build_graph(m_spec, graphInput(), graphClasses());
        m_inferred = m_graph->layers;
        for (const std::string &w : m_graph->warnings) m_warnings << QString::fromStdString(w);
    } catch (const std::exception &e) {
        message = QString::fromStdString(e.what());
        if (message.isEmpty()) message = tr("the model is not valid");
        m_inferred = inferList({}, m_spec.layers, graphInput(), graphClasses());
    }
    m_message = message;
    m_errorPath = message.isEmpty() ? LayerPath{} : pathNamedIn(message, m_spec);
    m_tree->showLayers(m_spec, m_inferred, m_errorPath, message);

    const QLocale locale;
    const bool lm = graphInput().sequence;
    QString io = lm ? tr("input %1 \u2192 %2 words")
                          .arg(QString::fromStdString(graphInput().to_string()),
                               locale.toString(graphClasses()))
                    : tr("input %1 \u2192 %2 classes")
                          .arg(QString::fromStdString(graphInput().to_string()))
                          .arg(graphClasses());
    // Whose vocabulary the figures are of: the chosen corpus's, or the built-in one's.
    if (lm)
        io += m_input.is_tokens() ? tr(" (the dataset's vocabulary)")
                                  : tr(" (synthetic-text's vocabulary: no text dataset chosen)");
    const QString per = lm ? tr("per token") : tr("per sample");
    if (m_graph) {
        m_totals->setText(tr("<b>%1</b> parameters \u00b7 <b>%2</b> FLOPs %3 \u00b7 %4")
                              .arg(locale.toString(qint64(m_graph->total_params)),
                                   compactCount(m_graph->total_flops), per, io));
        m_totals->setToolTip(lm ? tr("%1 forward FLOPs per token (per time step of one "
                                     "sequence); T is the run's bptt")
                                      .arg(locale.toString(qint64(m_graph->total_flops)))
                                : tr("%1 forward FLOPs per sample")
                                      .arg(locale.toString(qint64(m_graph->total_flops))));
    } else {
        m_totals->setText(io);
        m_totals->setToolTip(QString());
    }
    m_errorLabel->setText(message);
    m_errorLabel->setVisible(!message.isEmpty());
    m_showErrorButton->setVisible(!m_errorPath.isEmpty());
    m_showErrorButton->setToolTip(tr("Select %1").arg(m_errorPath.toString()));
    m_warningLabel->setText(m_warnings.join(QLatin1Char('\n')));
    m_warningLabel->setVisible(!m_warnings.isEmpty());
    const QString mismatch = dataMismatch();
    m_dataLabel->setText(mismatch);
    m_dataLabel->setVisible(!mismatch.isEmpty());

    const bool valid = message.isEmpty();
    if (valid != m_emittedValid || message != m_emittedMessage) {
        m_emittedValid = valid;
        m_emittedMessage = message;
        emit validityChanged(valid, message);
    }
}

void ModelDesigner::showSelectedLayer()
{
    const LayerPath path = selectedPath();
    const LayerSpec *layer = path.isGroup() ? nullptr : layerAt(m_spec, path);
    m_editor->setDatasetClasses(graphDataFor(m_spec, m_input, m_classes).classes);
    if (layer) {
        m_editor->setLayer(path, *layer);
    } else if (path.isGroup()) {
        if (const LayerSpec *block = layerAt(m_spec, path.owner()))
            m_editor->showGroup(path, *block);
        else
            m_editor->clearLayer();
    } else {
        m_editor->clearLayer();
    }
    const std::vector<LayerSpec> *list = layer ? layerList(m_spec, path) : nullptr;
    const int n = list ? int(list->size()) : 0;
    m_removeAction->setEnabled(layer != nullptr);
    m_duplicateAction->setEnabled(layer != nullptr);
    m_upAction->setEnabled(layer && path.index() > 0);
    m_downAction->setEnabled(layer && path.index() < n - 1);
}
