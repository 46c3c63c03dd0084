// The designer's undoable edits: one QUndoCommand per kind of change to a model spec
// (add, remove, move, duplicate, edit a layer field, rename, replace the whole model).
// Layers are addressed by LayerPath, so the commands reach into residual blocks too.
#pragma once
#include "designer/layerpath.h"
#include "designer/layertemplates.h"
#include "mixlab/model_spec.h"

#include <QString>
#include <QUndoCommand>

#include <optional>

// What the commands edit. The designer implements it, so every change, done or undone,
// goes through one door that refreshes the view and re-validates.
class LayerEditTarget {
public:
    virtual ~LayerEditTarget() = default;
    virtual const mixlab::ModelSpec &currentSpec() const = 0;
    // Takes the edited spec. `select` is the layer or group to select afterwards: an empty
    // path selects nothing, std::nullopt keeps the current selection.
    virtual void applySpec(const mixlab::ModelSpec &spec,
                           const std::optional<LayerPath> &select) = 0;
};

// The fields of a layer the property editor can change.
enum class LayerField {
    Units,
    UnitsPerClass,
    Activation,
    UseBias,
    Rate,
    ForceFp32,
    NoFp8, // dense: "dtype": "bfloat16", kept out of fp8 under mixed_fp8
    Filters,
    Kernel,
    Stride,
    Padding,
    PadSize,
    Momentum,
    Epsilon,
    UnitsPerWord, // dense "units": "vocab"
    TieWeights,
    Vocab, // embedding: a number or "dataset"
    Dim,
    Hidden, // lstm
    NumLayers,
};

// "units", "kernel", ... as in the JSON; `type` tells a pooling window ("pool_size")
// from a convolution's kernel.
QString layerFieldName(LayerField field, mixlab::LayerType type = mixlab::LayerType::Dense);
// The field's value in `layer` as the undo history writes it: "64", "relu", "float32".
QString fieldValueText(LayerField field, const mixlab::LayerSpec &layer);
// Whether an edit of this field of `a` and `b` differ.
bool sameField(LayerField field, const mixlab::LayerSpec &a, const mixlab::LayerSpec &b);

// Inserts `layer` at `at` (a layer path read as "before this index of that list").
class AddLayerCommand : public QUndoCommand {
public:
    AddLayerCommand(LayerEditTarget *target, const LayerPath &at, const mixlab::LayerSpec &layer,
                    const QString &text = {}, QUndoCommand *parent = nullptr);
    void redo() override;
    void undo() override;

private:
    LayerEditTarget *m_target;
    LayerPath m_at;
    mixlab::LayerSpec m_layer;
};

class RemoveLayerCommand : public QUndoCommand {
public:
    RemoveLayerCommand(LayerEditTarget *target, const LayerPath &path,
                       QUndoCommand *parent = nullptr);
    void redo() override;
    void undo() override;

private:
    LayerEditTarget *m_target;
    LayerPath m_path;
    mixlab::LayerSpec m_layer; // what was removed, for undo
};

// Swaps a layer with its neighbour (delta -1 or +1) in the same list.
class MoveLayerCommand : public QUndoCommand {
public:
    MoveLayerCommand(LayerEditTarget *target, const LayerPath &from, int delta,
                     QUndoCommand *parent = nullptr);
    void redo() override;
    void undo() override;

private:
    void swapAndSelect(const LayerPath &select);
    LayerEditTarget *m_target;
    LayerPath m_from, m_to;
};

// Inserts a copy of a layer (a whole block, for a residual) right after it.
class DuplicateLayerCommand : public QUndoCommand {
public:
    DuplicateLayerCommand(LayerEditTarget *target, const LayerPath &path,
                          QUndoCommand *parent = nullptr);
    void redo() override;
    void undo() override;

private:
    LayerEditTarget *m_target;
    LayerPath m_path;
};

// Changes one field of one layer. Consecutive edits of the same numeric field of the same
// layer (spin-box steps) merge into one undo step, unless the edit is made `Alone`: an edit
// from outside the property editor (the Why? panel's Apply) is one step of its own, so
// undo takes back that edit and no more, and the next spin-box step does not join it.
class EditLayerCommand : public QUndoCommand {
public:
    static constexpr int k_id = 0x4d4c01;
    enum class Merge { SpinSteps, Alone };
    EditLayerCommand(LayerEditTarget *target, const LayerPath &path, LayerField field,
                     const mixlab::LayerSpec &before, const mixlab::LayerSpec &after,
                     Merge merge = Merge::SpinSteps, QUndoCommand *parent = nullptr);
    void redo() override;
    void undo() override;
    // -1 (never compressed) for an edit made alone: QUndoStack merges only equal ids.
    int id() const override { return m_merge == Merge::Alone ? -1 : k_id; }
    bool mergeWith(const QUndoCommand *other) override;

private:
    void put(const mixlab::LayerSpec &layer);
    void updateText();
    LayerEditTarget *m_target;
    LayerPath m_path;
    LayerField m_field;
    mixlab::LayerSpec m_before, m_after;
    Merge m_merge;
};

// Renames the model; typing merges into one undo step.
class RenameModelCommand : public QUndoCommand {
public:
    static constexpr int k_id = 0x4d4c02;
    RenameModelCommand(LayerEditTarget *target, const QString &before, const QString &after,
                       QUndoCommand *parent = nullptr);
    void redo() override;
    void undo() override;
    int id() const override { return k_id; }
    bool mergeWith(const QUndoCommand *other) override;

private:
    void put(const QString &name);
    LayerEditTarget *m_target;
    QString m_before, m_after;
};

// Replaces the whole model (loading a preset); `text` names it in the undo history.
class ReplaceModelCommand : public QUndoCommand {
public:
    ReplaceModelCommand(LayerEditTarget *target, const mixlab::ModelSpec &before,
                        const mixlab::ModelSpec &after, const QString &text,
                        QUndoCommand *parent = nullptr);
    void redo() override;
    void undo() override;

private:
    LayerEditTarget *m_target;
    mixlab::ModelSpec m_before, m_after;
};
