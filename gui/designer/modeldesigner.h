// ModelDesigner: edits a model spec (presets, a palette of layers and ResNet blocks, the
// layer tree with live shapes/params/FLOPs/tensor-core fitness, drag and drop from the
// palette and between rows, property editor, undo/redo) and says whether the engine
// accepts it.
#pragma once
#include "designer/layercommands.h"
#include "designer/layerpath.h"
#include "designer/layertemplates.h"
#include "mixlab/graph.h"
#include "mixlab/model_spec.h"

#include <QStringList>
#include <QWidget>

#include <optional>
#include <vector>

class LayerPalette;
class LayerPropertyEditor;
class LayerTree;
class QAction;
class QLabel;
class QLineEdit;
class QMenu;
class QToolButton;
class QUndoStack;

class ModelDesigner : public QWidget, private LayerEditTarget {
    Q_OBJECT
public:
    explicit ModelDesigner(QWidget *parent = nullptr);
    ~ModelDesigner() override;

    mixlab::ModelSpec spec() const { return m_spec; }
    // Replaces the model without an undo step and clears the undo history (opening a
    // file). Residual blocks start collapsed.
    void setSpec(const mixlab::ModelSpec &spec);
    // The dataset's sample shape and class count; default 32x32x3 and 10. A text corpus
    // gives Shape::tokens() and its vocabulary.
    void setInput(const mixlab::Shape &input, int classes);
    mixlab::Shape input() const { return m_input; }
    int classes() const { return m_classes; }
    // What the graph is built on: the dataset's input, except when the model and the data
    // do not go together (a language model with images chosen: token input and
    // synthetic-text's vocabulary; an image model with a corpus: 32x32x3 and 10 classes),
    // so the figures stay readable while dataMismatch() says what to change.
    mixlab::Shape graphInput() const;
    int graphClasses() const;
    // The same rule for any model and dataset (importing a model file checks with it).
    struct GraphData {
        mixlab::Shape input;
        int classes = 0;
    };
    static GraphData graphDataFor(const mixlab::ModelSpec &spec, const mixlab::Shape &data,
                                  int classes);
    bool isLanguageModel() const;
    // Why the model cannot train on the chosen dataset; empty when it can.
    QString dataMismatch() const;

    // Valid when the spec parses back from its JSON and build_graph accepts it for the
    // current input. validityChanged fires only when this (or the message) changes, so a
    // listener connected late reads isValid()/validationMessage() once.
    bool isValid() const { return m_message.isEmpty(); }
    QString validationMessage() const { return m_message; }
    // The layer the message names ("layer 4 > body 2"); empty when valid or none.
    LayerPath errorPath() const { return m_errorPath; }
    // The engine's advice about a valid model (e.g. the sigmoid-output warning).
    QStringList warnings() const { return m_warnings; }
    // The inferred graph, when valid.
    const std::optional<mixlab::Graph> &graph() const { return m_graph; }

    QUndoStack *undoStack() const { return m_undoStack; }
    // Undo/redo with the standard shortcuts, for the main window's Edit menu too.
    QAction *undoAction() const { return m_undoAction; }
    QAction *redoAction() const { return m_redoAction; }
    QMenu *presetsMenu() const { return m_presetsMenu; }

    // Display names (each preset file's "name"), sorted.
    QStringList presetNames() const;
    // Loads a preset by display name or file name (with or without ".json") as one
    // undoable step, its blocks collapsed; false when there is no such preset.
    bool loadPreset(const QString &name);

    // The edits of the toolbar and palette, each one undoable. Adding inserts after the
    // selected layer, at the end of the selected body/shortcut row, or at the end of the
    // model when nothing is selected. The others act on the selected layer, nested or not.
    void addLayer(mixlab::LayerType type);
    // A ResNet block (see residualBlock); filters 0 keeps the channels it receives.
    void addBlock(BlockKind kind, int filters, int stride);
    // Drag and drop, each one undoable step: a palette entry inserted at `at`, a layer
    // moved to the insertion point `to` (into or out of residual blocks too). False, and
    // nothing changes, when there is no such entry, layer or place, or a block would go
    // into itself.
    bool addPaletteEntry(const QString &entry, const LayerPath &at);
    bool moveLayer(const LayerPath &from, const LayerPath &to);
    void removeSelectedLayer();
    void moveSelectedLayer(int delta); // -1 up, +1 down, within its own list
    void duplicateSelectedLayer();
    // Where addLayer would insert now.
    LayerPath insertionPoint() const;
    // Replaces the layer at `path` with `after`, the layer as it is now with one field
    // changed, as one undo step of its own (never merged with spin-box steps): how the
    // rest of the app (the Why? panel's Apply) edits a layer. False, and nothing changes,
    // when there is no such layer or the field has that value already.
    bool editLayer(const LayerPath &path, LayerField field, const mixlab::LayerSpec &after);

    // The selected layer or body/shortcut row (a group path); empty when none.
    LayerPath selectedPath() const;
    void selectPath(const LayerPath &path);
    // Top-level shorthands: -1 when nothing or a nested row is selected.
    int selectedRow() const;
    void selectRow(int row);

    LayerTree *layerTree() const { return m_tree; }
    LayerPropertyEditor *propertyEditor() const { return m_editor; }
    LayerPalette *palette() const { return m_palette; }

signals:
    void specChanged();
    void validityChanged(bool valid, const QString &message);

private:
    struct Preset {
        QString name;     // the file's "name"
        QString fileName; // e.g. "seed-mlp.json"
        mixlab::ModelSpec spec;
    };

    const mixlab::ModelSpec &currentSpec() const override { return m_spec; }
    void applySpec(const mixlab::ModelSpec &spec, const std::optional<LayerPath> &select) override;

    void readPresets();
    void addLayerAt(mixlab::LayerType type, const LayerPath &at);
    void addBlockAt(BlockKind kind, int filters, int stride, const LayerPath &at);
    QWidget *buildToolBar();
    void revalidate();        // graph, rows, totals, messages; emits validityChanged
    void showSelectedLayer(); // property editor and the enabled state of the actions
    void onLayerEdited(const LayerPath &path, LayerField field, const mixlab::LayerSpec &before,
                       const mixlab::LayerSpec &after);
    // The shape that reaches an insertion point, when the engine inferred that far.
    std::optional<mixlab::Shape> shapeAt(const LayerPath &at) const;

    mixlab::ModelSpec m_spec;
    mixlab::Shape m_input{{32, 32, 3}};
    int m_classes = 10;
    std::optional<mixlab::Graph> m_graph;
    std::vector<mixlab::GraphLayer> m_inferred; // as far as the engine got
    QString m_message;
    LayerPath m_errorPath;
    QStringList m_warnings;
    bool m_emittedValid = true;
    QString m_emittedMessage;
    std::vector<Preset> m_presets;

    QUndoStack *m_undoStack = nullptr;
    QAction *m_undoAction = nullptr;
    QAction *m_redoAction = nullptr;
    QAction *m_removeAction = nullptr;
    QAction *m_upAction = nullptr;
    QAction *m_downAction = nullptr;
    QAction *m_duplicateAction = nullptr;
    QMenu *m_presetsMenu = nullptr;
    QMenu *m_addMenu = nullptr;
    QLineEdit *m_nameEdit = nullptr;
    LayerPalette *m_palette = nullptr;
    LayerTree *m_tree = nullptr;
    LayerPropertyEditor *m_editor = nullptr;
    QLabel *m_totals = nullptr;
    QLabel *m_errorLabel = nullptr;
    QToolButton *m_showErrorButton = nullptr;
    QLabel *m_warningLabel = nullptr;
    QLabel *m_dataLabel = nullptr; // dataMismatch()
};
