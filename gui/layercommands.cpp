// The designer's undoable edits. Each command changes a copy of the current spec and
// hands it back through LayerEditTarget::applySpec, so undo restores the spec exactly.
#include "layercommands.h"

#include <QCoreApplication>

#include <utility>

using mixlab::LayerSpec;
using mixlab::LayerType;
using mixlab::ModelSpec;

namespace {

QString tr(const char *text) { return QCoreApplication::translate("LayerCommands", text); }

QString fromView(std::string_view s) { return QString::fromUtf8(s.data(), qsizetype(s.size())); }

QString fieldValueText(LayerField field, const LayerSpec &layer) {
    switch (field) {
    case LayerField::Units: return QString::number(layer.units);
    case LayerField::Activation: return fromView(mixlab::activation_name(layer.activation));
    case LayerField::UseBias: return layer.use_bias ? tr("on") : tr("off");
    case LayerField::Rate: return QString::number(double(layer.rate), 'g', 6);
    case LayerField::ForceFp32: return layer.force_fp32 ? tr("float32") : tr("policy dtype");
    }
    return {};
}

bool sameField(LayerField field, const LayerSpec &a, const LayerSpec &b) {
    switch (field) {
    case LayerField::Units: return a.units == b.units;
    case LayerField::Activation: return a.activation == b.activation;
    case LayerField::UseBias: return a.use_bias == b.use_bias;
    case LayerField::Rate: return a.rate == b.rate;
    case LayerField::ForceFp32: return a.force_fp32 == b.force_fp32;
    }
    return false;
}

} // namespace

QString layerFieldName(LayerField field) {
    switch (field) {
    case LayerField::Units: return QStringLiteral("units");
    case LayerField::Activation: return QStringLiteral("activation");
    case LayerField::UseBias: return QStringLiteral("use_bias");
    case LayerField::Rate: return QStringLiteral("rate");
    case LayerField::ForceFp32: return QStringLiteral("dtype");
    }
    return {};
}

QString layerSummary(const LayerSpec &layer) {
    QString s = fromView(mixlab::layer_type_name(layer.type));
    switch (layer.type) {
    case LayerType::Flatten: break;
    case LayerType::Dense:
        s += QLatin1Char(' ') + QString::number(layer.units);
        if (layer.activation != mixlab::Activation::None)
            s += QLatin1Char(' ') + fromView(mixlab::activation_name(layer.activation));
        if (!layer.use_bias) s += tr(", no bias");
        break;
    case LayerType::Activation:
        s += QLatin1Char(' ') + fromView(mixlab::activation_name(layer.activation));
        break;
    case LayerType::Dropout:
        s += QLatin1Char(' ') + QString::number(double(layer.rate), 'g', 6);
        break;
    }
    if (layer.force_fp32) s += tr(" (float32)");
    return s;
}

LayerSpec defaultLayer(LayerType type) {
    LayerSpec l;
    l.type = type;
    switch (type) {
    case LayerType::Flatten: break;
    case LayerType::Dense:
        l.units = 128;
        l.activation = mixlab::Activation::Relu;
        break;
    case LayerType::Activation: l.activation = mixlab::Activation::Relu; break;
    case LayerType::Dropout: l.rate = 0.5f; break;
    }
    return l;
}

// --- add ---------------------------------------------------------------------------

AddLayerCommand::AddLayerCommand(LayerEditTarget *target, int index, const LayerSpec &layer,
                                 QUndoCommand *parent)
    : QUndoCommand(parent), m_target(target), m_index(index), m_layer(layer) {
    setText(tr("Add %1 layer").arg(fromView(mixlab::layer_type_name(layer.type))));
}

void AddLayerCommand::redo() {
    ModelSpec spec = m_target->currentSpec();
    spec.layers.insert(spec.layers.begin() + m_index, m_layer);
    m_target->applySpec(spec, m_index);
}

void AddLayerCommand::undo() {
    ModelSpec spec = m_target->currentSpec();
    spec.layers.erase(spec.layers.begin() + m_index);
    m_target->applySpec(spec, spec.layers.empty() ? -1 : qMax(0, m_index - 1));
}

// --- remove ------------------------------------------------------------------------

RemoveLayerCommand::RemoveLayerCommand(LayerEditTarget *target, int index, QUndoCommand *parent)
    : QUndoCommand(parent), m_target(target), m_index(index),
      m_layer(target->currentSpec().layers.at(std::size_t(index))) {
    setText(tr("Remove layer %1 (%2)").arg(index).arg(layerSummary(m_layer)));
}

void RemoveLayerCommand::redo() {
    ModelSpec spec = m_target->currentSpec();
    spec.layers.erase(spec.layers.begin() + m_index);
    // Select what took the removed layer's place, or the new last layer.
    const int n = int(spec.layers.size());
    m_target->applySpec(spec, n == 0 ? -1 : qMin(m_index, n - 1));
}

void RemoveLayerCommand::undo() {
    ModelSpec spec = m_target->currentSpec();
    spec.layers.insert(spec.layers.begin() + m_index, m_layer);
    m_target->applySpec(spec, m_index);
}

// --- move --------------------------------------------------------------------------

MoveLayerCommand::MoveLayerCommand(LayerEditTarget *target, int from, int delta,
                                   QUndoCommand *parent)
    : QUndoCommand(parent), m_target(target), m_from(from), m_to(from + delta) {
    setText(delta < 0 ? tr("Move layer %1 up").arg(from) : tr("Move layer %1 down").arg(from));
}

void MoveLayerCommand::swapAndSelect(int select) {
    ModelSpec spec = m_target->currentSpec();
    std::swap(spec.layers.at(std::size_t(m_from)), spec.layers.at(std::size_t(m_to)));
    m_target->applySpec(spec, select);
}

void MoveLayerCommand::redo() { swapAndSelect(m_to); }
void MoveLayerCommand::undo() { swapAndSelect(m_from); }

// --- duplicate ---------------------------------------------------------------------

DuplicateLayerCommand::DuplicateLayerCommand(LayerEditTarget *target, int index,
                                             QUndoCommand *parent)
    : QUndoCommand(parent), m_target(target), m_index(index) {
    setText(tr("Duplicate layer %1").arg(index));
}

void DuplicateLayerCommand::redo() {
    ModelSpec spec = m_target->currentSpec();
    const LayerSpec copy = spec.layers.at(std::size_t(m_index));
    spec.layers.insert(spec.layers.begin() + m_index + 1, copy);
    m_target->applySpec(spec, m_index + 1);
}

void DuplicateLayerCommand::undo() {
    ModelSpec spec = m_target->currentSpec();
    spec.layers.erase(spec.layers.begin() + m_index + 1);
    m_target->applySpec(spec, m_index);
}

// --- edit a field ------------------------------------------------------------------

EditLayerCommand::EditLayerCommand(LayerEditTarget *target, int index, LayerField field,
                                   const LayerSpec &before, const LayerSpec &after,
                                   QUndoCommand *parent)
    : QUndoCommand(parent), m_target(target), m_index(index), m_field(field), m_before(before),
      m_after(after) {
    updateText();
}

void EditLayerCommand::updateText() {
    setText(tr("Set %1 of layer %2 to %3")
                .arg(layerFieldName(m_field))
                .arg(m_index)
                .arg(fieldValueText(m_field, m_after)));
}

void EditLayerCommand::put(const LayerSpec &layer) {
    ModelSpec spec = m_target->currentSpec();
    spec.layers.at(std::size_t(m_index)) = layer;
    m_target->applySpec(spec, m_index);
}

void EditLayerCommand::redo() { put(m_after); }
void EditLayerCommand::undo() { put(m_before); }

bool EditLayerCommand::mergeWith(const QUndoCommand *other) {
    // Only numbers typed or stepped in a spin box merge; a combo or check change is a
    // deliberate step of its own.
    if (m_field != LayerField::Units && m_field != LayerField::Rate) return false;
    const auto *o = static_cast<const EditLayerCommand *>(other);
    if (o->m_index != m_index || o->m_field != m_field) return false;
    m_after = o->m_after;
    updateText();
    // Stepping back to where it started leaves nothing to undo.
    setObsolete(sameField(m_field, m_before, m_after));
    return true;
}

// --- rename ------------------------------------------------------------------------

RenameModelCommand::RenameModelCommand(LayerEditTarget *target, const QString &before,
                                       const QString &after, QUndoCommand *parent)
    : QUndoCommand(parent), m_target(target), m_before(before), m_after(after) {
    setText(tr("Rename model to \"%1\"").arg(after));
}

void RenameModelCommand::put(const QString &name) {
    ModelSpec spec = m_target->currentSpec();
    spec.name = name.toStdString();
    m_target->applySpec(spec, LayerEditTarget::k_keepSelection);
}

void RenameModelCommand::redo() { put(m_after); }
void RenameModelCommand::undo() { put(m_before); }

bool RenameModelCommand::mergeWith(const QUndoCommand *other) {
    m_after = static_cast<const RenameModelCommand *>(other)->m_after;
    setText(tr("Rename model to \"%1\"").arg(m_after));
    setObsolete(m_after == m_before);
    return true;
}

// --- replace -----------------------------------------------------------------------

ReplaceModelCommand::ReplaceModelCommand(LayerEditTarget *target, const ModelSpec &before,
                                         const ModelSpec &after, const QString &text,
                                         QUndoCommand *parent)
    : QUndoCommand(text, parent), m_target(target), m_before(before), m_after(after) {}

void ReplaceModelCommand::redo() { m_target->applySpec(m_after, m_after.layers.empty() ? -1 : 0); }
void ReplaceModelCommand::undo() {
    m_target->applySpec(m_before, m_before.layers.empty() ? -1 : 0);
}
