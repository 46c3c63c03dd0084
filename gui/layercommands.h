// The designer's undoable edits: one QUndoCommand per kind of change to a model spec
// (add, remove, move, duplicate, edit a layer field, rename, replace the whole model).
#pragma once
#include "mixlab/model_spec.h"

#include <QString>
#include <QUndoCommand>

// What the commands edit. The designer implements it, so every change, done or undone,
// goes through one door that refreshes the view and re-validates.
class LayerEditTarget {
public:
    virtual ~LayerEditTarget() = default;
    virtual const mixlab::ModelSpec &currentSpec() const = 0;
    static constexpr int k_noSelection = -1;
    static constexpr int k_keepSelection = -2;
    // Takes the edited spec; selectRow is the layer to select afterwards, or one of the
    // two constants above.
    virtual void applySpec(const mixlab::ModelSpec &spec, int selectRow) = 0;
};

// The fields of a layer the property editor can change.
enum class LayerField { Units, Activation, UseBias, Rate, ForceFp32 };

QString layerFieldName(LayerField field); // "units", "activation", ... as in the JSON
// The one-line summary the layer list shows: "dense 3000 relu", "activation softmax (float32)".
QString layerSummary(const mixlab::LayerSpec &layer);
// A new layer of a type with settings that make sense on their own.
mixlab::LayerSpec defaultLayer(mixlab::LayerType type);

class AddLayerCommand : public QUndoCommand {
public:
    AddLayerCommand(LayerEditTarget *target, int index, const mixlab::LayerSpec &layer,
                    QUndoCommand *parent = nullptr);
    void redo() override;
    void undo() override;

private:
    LayerEditTarget *m_target;
    int m_index;
    mixlab::LayerSpec m_layer;
};

class RemoveLayerCommand : public QUndoCommand {
public:
    RemoveLayerCommand(LayerEditTarget *target, int index, QUndoCommand *parent = nullptr);
    void redo() override;
    void undo() override;

private:
    LayerEditTarget *m_target;
    int m_index;
    mixlab::LayerSpec m_layer; // what was removed, for undo
};

// Swaps the layer at `from` with its neighbour at `from + delta` (delta is -1 or +1).
class MoveLayerCommand : public QUndoCommand {
public:
    MoveLayerCommand(LayerEditTarget *target, int from, int delta, QUndoCommand *parent = nullptr);
    void redo() override;
    void undo() override;

private:
    void swapAndSelect(int select);
    LayerEditTarget *m_target;
    int m_from;
    int m_to;
};

// Inserts a copy of the layer at `index` right after it.
class DuplicateLayerCommand : public QUndoCommand {
public:
    DuplicateLayerCommand(LayerEditTarget *target, int index, QUndoCommand *parent = nullptr);
    void redo() override;
    void undo() override;

private:
    LayerEditTarget *m_target;
    int m_index;
};

// Changes one field of one layer. Consecutive edits of the same numeric field of the same
// layer (spin-box steps) merge into one undo step.
class EditLayerCommand : public QUndoCommand {
public:
    static constexpr int k_id = 0x4d4c01;
    EditLayerCommand(LayerEditTarget *target, int index, LayerField field,
                     const mixlab::LayerSpec &before, const mixlab::LayerSpec &after,
                     QUndoCommand *parent = nullptr);
    void redo() override;
    void undo() override;
    int id() const override { return k_id; }
    bool mergeWith(const QUndoCommand *other) override;

private:
    void put(const mixlab::LayerSpec &layer);
    void updateText();
    LayerEditTarget *m_target;
    int m_index;
    LayerField m_field;
    mixlab::LayerSpec m_before, m_after;
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
