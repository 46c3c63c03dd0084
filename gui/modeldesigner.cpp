// ModelDesigner: every change to the spec, done or undone, goes through applySpec, which
// re-runs the engine's own validation (parse of the written JSON, then build_graph) so
// the figures and the verdict shown are exactly what a run would get.
#include "modeldesigner.h"

#include "layerpropertyeditor.h"
#include "layertree.h"
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
#include <QRegularExpression>
#include <QSignalBlocker>
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

// The engine's figures for as many leading layers as it can infer when the whole model
// does not validate. build_graph stops at the first error, so it is asked again about
// shorter prefixes, each closed with flatten + dense(classes) to meet the output check;
// a layer's row depends only on its input, so the rows it returns are the real ones.
std::vector<GraphLayer> inferPrefix(const ModelSpec &spec, const mixlab::Shape &input,
                                    int classes) {
    LayerSpec flatten;
    flatten.type = LayerType::Flatten;
    LayerSpec head;
    head.type = LayerType::Dense;
    head.units = std::max(classes, 1);
    for (std::size_t k = spec.layers.size(); k > 0; --k) {
        ModelSpec probe;
        probe.layers.assign(spec.layers.begin(), spec.layers.begin() + std::ptrdiff_t(k));
        probe.layers.push_back(flatten);
        probe.layers.push_back(head);
        try {
            mixlab::Graph g = mixlab::build_graph(probe, input, classes);
            g.layers.resize(k);
            return g.layers;
        } catch (const mixlab::Error &) {
        }
    }
    return {};
}

// The layer a message names ("layer 3 (dense): ..."), or -1.
int layerNamedIn(const QString &message, int layerCount) {
    static const QRegularExpression re(QStringLiteral("\\blayer (\\d+)\\b"));
    const QRegularExpressionMatch m = re.match(message);
    if (!m.hasMatch()) return -1;
    const int row = m.captured(1).toInt();
    return row < layerCount ? row : -1;
}

} // namespace

ModelDesigner::ModelDesigner(QWidget *parent) : QWidget(parent) {
    m_undoStack = new QUndoStack(this);
    m_undoAction = m_undoStack->createUndoAction(this, tr("&Undo"));
    m_undoAction->setShortcut(QKeySequence::Undo);
    m_redoAction = m_undoStack->createRedoAction(this, tr("&Redo"));
    m_redoAction->setShortcut(QKeySequence::Redo);

    readPresets();

    m_tree = new LayerTree(this);
    m_editor = new LayerPropertyEditor(this);

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

    m_warningLabel = new QLabel(this);
    m_warningLabel->setObjectName(QStringLiteral("warnings"));
    m_warningLabel->setWordWrap(true);
    m_warningLabel->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_warningLabel->setStyleSheet(QStringLiteral(
        "QLabel { color: #7a4d00; background: rgba(230, 160, 0, 30); "
        "border: 1px solid rgba(230, 160, 0, 120); border-radius: 3px; padding: 4px; }"));

    auto *nameRow = new QHBoxLayout;
    nameRow->addWidget(nameLabel);
    nameRow->addWidget(m_nameEdit, 1);

    auto *listPart = new QWidget(this);
    auto *listLayout = new QVBoxLayout(listPart);
    listLayout->setContentsMargins(0, 0, 0, 0);
    listLayout->addWidget(m_tree, 1);
    listLayout->addWidget(m_totals);
    listLayout->addWidget(m_errorLabel);
    listLayout->addWidget(m_warningLabel);

    auto *splitter = new QSplitter(Qt::Vertical, this);
    splitter->setChildrenCollapsible(false);
    splitter->addWidget(listPart);
    splitter->addWidget(m_editor);
    splitter->setStretchFactor(0, 3);
    splitter->setStretchFactor(1, 1);

    auto *layout = new QVBoxLayout(this);
    layout->addWidget(buildToolBar());
    layout->addLayout(nameRow);
    layout->addWidget(splitter, 1);

    connect(m_tree, &LayerTree::currentRowChanged, this, [this](int) { showSelectedLayer(); });
    connect(m_editor, &LayerPropertyEditor::layerEdited, this, &ModelDesigner::onLayerEdited);
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

void ModelDesigner::readPresets() {
    const QDir dir(QStringLiteral(":/models"));
    for (const QString &file : dir.entryList({QStringLiteral("*.json")}, QDir::Files)) {
        QFile f(dir.filePath(file));
        if (!f.open(QIODevice::ReadOnly)) continue;
        const QByteArray text = f.readAll();
        try {
            Preset p;
            p.spec = mixlab::parse_model_spec(std::string_view(text.constData(), std::size_t(text.size())));
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

QWidget *ModelDesigner::buildToolBar() {
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

    m_addMenu = new QMenu(tr("&Add layer"), this);
    for (LayerType t : {LayerType::Flatten, LayerType::Dense, LayerType::Activation,
                        LayerType::Dropout}) {
        const auto name = mixlab::layer_type_name(t);
        QAction *a = m_addMenu->addAction(QString::fromUtf8(name.data(), qsizetype(name.size())));
        connect(a, &QAction::triggered, this, [this, t] { addLayer(t); });
    }
    auto *addButton = new QToolButton(bar);
    addButton->setObjectName(QStringLiteral("addButton"));
    addButton->setText(tr("Add"));
    addButton->setToolTip(tr("Insert a layer after the selected one"));
    addButton->setMenu(m_addMenu);
    addButton->setPopupMode(QToolButton::InstantPopup);
    bar->addWidget(addButton);

    // The layer shortcuts act only while the layer list (or this bar) has focus, so
    // Delete in the name field still deletes text.
    auto layerAction = [&](const QString &text, const QKeySequence &key, const QString &tip,
                           auto slot) {
        QAction *a = bar->addAction(text);
        a->setShortcut(key);
        a->setShortcutContext(Qt::WidgetWithChildrenShortcut);
        a->setToolTip(tip + QStringLiteral(" (") + key.toString(QKeySequence::NativeText) +
                      QLatin1Char(')'));
        m_tree->addAction(a);
        connect(a, &QAction::triggered, this, slot);
        return a;
    };
    m_removeAction = layerAction(tr("Remove"), QKeySequence::Delete, tr("Remove the selected layer"),
                                 [this] { removeSelectedLayer(); });
    m_duplicateAction = layerAction(tr("Duplicate"), QKeySequence(Qt::CTRL | Qt::Key_D),
                                    tr("Insert a copy of the selected layer after it"),
                                    [this] { duplicateSelectedLayer(); });
    m_upAction = layerAction(tr("Move up"), QKeySequence(Qt::CTRL | Qt::Key_Up),
                             tr("Move the selected layer up"), [this] { moveSelectedLayer(-1); });
    m_upAction->setIconText(QStringLiteral("\u2191")); // the bar shows arrows, menus words
    m_downAction = layerAction(tr("Move down"), QKeySequence(Qt::CTRL | Qt::Key_Down),
                               tr("Move the selected layer down"),
                               [this] { moveSelectedLayer(+1); });
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
            b->setToolTip(action->text() + QStringLiteral(" (") +
                          action->shortcut().toString(QKeySequence::NativeText) + QLatin1Char(')'));
        });
        bar->addWidget(b);
    };
    historyButton(tr("Undo"), m_undoAction);
    historyButton(tr("Redo"), m_redoAction);
    // Not on a menu or bar here, so the designer's own widget carries the shortcuts.
    addAction(m_undoAction);
    addAction(m_redoAction);
    return bar;
}

QStringList ModelDesigner::presetNames() const {
    QStringList names;
    for (const Preset &p : m_presets) names << p.name;
    return names;
}

bool ModelDesigner::loadPreset(const QString &name) {
    for (const Preset &p : m_presets) {
        if (p.name != name && p.fileName != name && QFileInfo(p.fileName).completeBaseName() != name)
            continue;
        m_undoStack->push(
            new ReplaceModelCommand(this, m_spec, p.spec, tr("Load preset %1").arg(p.name)));
        return true;
    }
    return false;
}

void ModelDesigner::setSpec(const ModelSpec &spec) {
    m_undoStack->clear();
    applySpec(spec, spec.layers.empty() ? k_noSelection : 0);
    m_undoStack->setClean();
}

void ModelDesigner::setInput(const mixlab::Shape &input, int classes) {
    m_input = input;
    m_classes = classes;
    revalidate();
    showSelectedLayer();
}

int ModelDesigner::selectedRow() const { return m_tree->currentRow(); }

void ModelDesigner::selectRow(int row) { m_tree->selectRow(row); }

void ModelDesigner::addLayer(LayerType type) {
    const int row = selectedRow();
    const int at = row >= 0 ? row + 1 : int(m_spec.layers.size());
    m_undoStack->push(new AddLayerCommand(this, at, defaultLayer(type)));
}

void ModelDesigner::removeSelectedLayer() {
    const int row = selectedRow();
    if (row < 0) return;
    m_undoStack->push(new RemoveLayerCommand(this, row));
}

void ModelDesigner::moveSelectedLayer(int delta) {
    const int row = selectedRow();
    const int to = row + delta;
    if (row < 0 || (delta != -1 && delta != 1) || to < 0 || to >= int(m_spec.layers.size()))
        return;
    m_undoStack->push(new MoveLayerCommand(this, row, delta));
}

void ModelDesigner::duplicateSelectedLayer() {
    const int row = selectedRow();
    if (row < 0) return;
    m_undoStack->push(new DuplicateLayerCommand(this, row));
}

void ModelDesigner::onLayerEdited(int index, LayerField field, const LayerSpec &,
                                  const LayerSpec &after) {
    if (index < 0 || index >= int(m_spec.layers.size())) return;
    // The spec, not the editor's copy, is what undo must restore.
    const LayerSpec before = m_spec.layers[std::size_t(index)];
    m_undoStack->push(new EditLayerCommand(this, index, field, before, after));
}

void ModelDesigner::applySpec(const ModelSpec &spec, int selectRow) {
    const int kept = m_tree->currentRow();
    m_spec = spec;
    const QString name = QString::fromStdString(m_spec.name);
    if (m_nameEdit->text() != name) {
        const QSignalBlocker block(m_nameEdit);
        m_nameEdit->setText(name);
    }
    revalidate();
    int row = selectRow == k_keepSelection ? kept : selectRow;
    row = std::min(row, int(m_spec.layers.size()) - 1);
    m_tree->selectRow(row);
    showSelectedLayer();
    emit specChanged();
}

void ModelDesigner::revalidate() {
    m_graph.reset();
    m_warnings.clear();
    QString message;
    std::vector<GraphLayer> inferred;
    try {
        // The spec must also survive being written and read back: the parser holds
        // limits build_graph does not (e.g. at most 1,000,000 units), and a run, a
        // saved experiment or the CLI all go through that JSON.
        (void)mixlab::parse_model_spec(mixlab::model_spec_to_json(m_spec));
        m_graph = mixlab::build_graph(m_spec, m_input, m_classes);
        inferred = m_graph->layers;
        for (const std::string &w : m_graph->warnings) m_warnings << QString::fromStdString(w);
    } catch (const std::exception &e) {
        message = QString::fromStdString(e.what());
        if (message.isEmpty()) message = tr("the model is not valid");
        inferred = inferPrefix(m_spec, m_input, m_classes);
    }
    m_message = message;
    const int errorRow = message.isEmpty() ? -1 : layerNamedIn(message, int(m_spec.layers.size()));
    m_tree->showLayers(m_spec, inferred, errorRow, message);

    const QLocale locale;
    const QString io = tr("input %1 \u2192 %2 classes")
                           .arg(QString::fromStdString(m_input.to_string()))
                           .arg(m_classes);
    if (m_graph) {
        m_totals->setText(tr("<b>%1</b> parameters \u00b7 <b>%2</b> FLOPs per sample \u00b7 %3")
                              .arg(locale.toString(qint64(m_graph->total_params)),
                                   compactCount(m_graph->total_flops), io));
        m_totals->setToolTip(tr("%1 forward FLOPs per sample")
                                 .arg(locale.toString(qint64(m_graph->total_flops))));
    } else {
        m_totals->setText(io);
        m_totals->setToolTip(QString());
    }
    m_errorLabel->setText(message);
    m_errorLabel->setVisible(!message.isEmpty());
    m_warningLabel->setText(m_warnings.join(QLatin1Char('\n')));
    m_warningLabel->setVisible(!m_warnings.isEmpty());

    const bool valid = message.isEmpty();
    if (valid != m_emittedValid || message != m_emittedMessage) {
        m_emittedValid = valid;
        m_emittedMessage = message;
        emit validityChanged(valid, message);
    }
}

void ModelDesigner::showSelectedLayer() {
    const int row = selectedRow();
    const int n = int(m_spec.layers.size());
    if (row >= 0 && row < n)
        m_editor->setLayer(row, m_spec.layers[std::size_t(row)]);
    else
        m_editor->clearLayer();
    m_removeAction->setEnabled(row >= 0);
    m_duplicateAction->setEnabled(row >= 0);
    m_upAction->setEnabled(row > 0);
    m_downAction->setEnabled(row >= 0 && row < n - 1);
}
