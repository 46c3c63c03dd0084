// The designer's undoable edits. Each command changes a copy of the current spec and
// hands it back through LayerEditTarget::applySpec, so undo restores the spec exactly.
#include "designer/layercommands.h"

#include "common/enginetext.h"

#include <QCoreApplication>

#include <algorithm>
#include <utility>

using mixlab::LayerSpec;
using mixlab::LayerType;
using mixlab::ModelSpec;

namespace {

QString tr(const char *text) { return QCoreApplication::translate("LayerCommands", text); }

// Where the selection goes when the layer at `path` has just left its list of `n` layers:
// what took its place, else the new last one, else the (now empty) group, else nothing.
LayerPath afterRemoval(const LayerPath &path, int n)
{
    if (n > 0) return path.sibling(std::min(path.index(), n - 1));
    if (path.isTopLevel()) return {};
    return path.sibling(LayerPath::k_group);
}

} // namespace

QString layerFieldName(LayerField field, LayerType type)
{
    switch (field) {
    case LayerField::Units: return QStringLiteral("units");
    case LayerField::UnitsPerClass: return QStringLiteral("units");
    case LayerField::Activation: return QStringLiteral("activation");
    case LayerField::UseBias: return QStringLiteral("use_bias");
    case LayerField::Rate:
        return type == LayerType::Lstm ? QStringLiteral("dropout") : QStringLiteral("rate");
    case LayerField::ForceFp32: return QStringLiteral("dtype");
    case LayerField::NoFp8: return QStringLiteral("dtype");
    case LayerField::Filters: return QStringLiteral("filters");
    case LayerField::Kernel:
        return type == LayerType::MaxPool2D || type == LayerType::AvgPool2D
                   ? QStringLiteral("pool_size")
                   : QStringLiteral("kernel");
    case LayerField::Stride: return QStringLiteral("stride");
    case LayerField::Padding: return QStringLiteral("padding");
    case LayerField::PadSize: return QStringLiteral("padding size");
    case LayerField::Momentum: return QStringLiteral("momentum");
    case LayerField::Epsilon: return QStringLiteral("epsilon");
    case LayerField::UnitsPerWord: return QStringLiteral("units");
    case LayerField::TieWeights: return QStringLiteral("tie_weights");
    case LayerField::Vocab: return QStringLiteral("vocab");
    case LayerField::Dim: return QStringLiteral("dim");
    case LayerField::Hidden: return QStringLiteral("hidden");
    case LayerField::NumLayers: return QStringLiteral("layers");
    }
    return {};
}

QString fieldValueText(LayerField field, const LayerSpec &layer)
{
    switch (field) {
    case LayerField::Units:
    case LayerField::UnitsPerClass:
    case LayerField::UnitsPerWord:
        return layer.units == mixlab::k_units_classes ? tr("classes")
               : layer.units == mixlab::k_units_vocab ? tr("vocab")
                                                      : QString::number(layer.units);
    case LayerField::Activation: return fromView(mixlab::activation_name(layer.activation));
    case LayerField::UseBias: return layer.use_bias ? tr("on") : tr("off");
    case LayerField::Rate: return QString::number(double(layer.rate), 'g', 6);
    case LayerField::ForceFp32: return layer.force_fp32 ? tr("float32") : tr("policy dtype");
    case LayerField::NoFp8: return layer.no_fp8 ? tr("bfloat16 (out of fp8)") : tr("policy dtype");
    case LayerField::Filters: return QString::number(layer.filters);
    case LayerField::Kernel: return QStringLiteral("%1x%2").arg(layer.kernel_h).arg(layer.kernel_w);
    case LayerField::Stride:
        return layer.stride_h == 0 && layer.stride_w == 0
                   ? tr("default")
                   : pairText(layer.stride_h, layer.stride_w);
    case LayerField::Padding: return fromView(mixlab::padding_name(layer.padding));
    case LayerField::PadSize: return pairText(layer.pad_h, layer.pad_w);
    case LayerField::Momentum: return QString::number(double(layer.momentum), 'g', 6);
    case LayerField::Epsilon: return QString::number(double(layer.epsilon), 'g', 6);
    case LayerField::TieWeights: return layer.tie_weights ? tr("on") : tr("off");
    case LayerField::Vocab:
        return layer.vocab == mixlab::k_vocab_dataset ? tr("dataset")
                                                      : QString::number(layer.vocab);
    case LayerField::Dim: return QString::number(layer.dim);
    case LayerField::Hidden: return QString::number(layer.hidden);
    case LayerField::NumLayers: return QString::number(layer.num_layers);
    }
    return {};
}

bool sameField(LayerField field, const LayerSpec &a, const LayerSpec &b)
{
    switch (field) {
    case LayerField::Units:
    case LayerField::UnitsPerClass:
    case LayerField::UnitsPerWord: return a.units == b.units;
    case LayerField::Activation: return a.activation == b.activation;
    case LayerField::UseBias: return a.use_bias == b.use_bias;
    case LayerField::Rate: return a.rate == b.rate;
    case LayerField::ForceFp32: return a.force_fp32 == b.force_fp32;
    case LayerField::NoFp8: return a.no_fp8 == b.no_fp8;
    case LayerField::Filters: return a.filters == b.filters;
    case LayerField::Kernel: return a.kernel_h == b.kernel_h && a.kernel_w == b.kernel_w;
    case LayerField::Stride: return a.stride_h == b.stride_h && a.stride_w == b.stride_w;
    case LayerField::Padding:
        return a.padding == b.padding && a.pad_h == b.pad_h && a.pad_w == b.pad_w;
    case LayerField::PadSize: return a.pad_h == b.pad_h && a.pad_w == b.pad_w;
    case LayerField::Momentum: return a.momentum == b.momentum;
    case LayerField::Epsilon: return a.epsilon == b.epsilon;
    case LayerField::TieWeights: return a.tie_weights == b.tie_weights;
    case LayerField::Vocab: return a.vocab == b.vocab;
    case LayerField::Dim: return a.dim == b.dim;
    case LayerField::Hidden: return a.hidden == b.hidden;
    case LayerField::NumLayers: return a.num_layers == b.num_layers;
    }
    return false;
}

// --- add ---------------------------------------------------------------------------

AddLayerCommand::AddLayerCommand(LayerEditTarget *target, const LayerPath &at,
                                 const LayerSpec &layer, const QString &text, QUndoCommand *parent)
    : QUndoCommand(parent), m_target(target), m_at(at), m_layer(layer)
{
    setText(!text.isEmpty()
                ? text
                : tr("Add %1 layer").arg(fromView(mixlab::layer_type_name(layer.type))));
}

void AddLayerCommand::redo()
{
    ModelSpec spec = m_target->currentSpec();
    std::vector<LayerSpec> *list = layerList(spec, m_at);
    if (!list) return;
    list->insert(list->begin() + m_at.index(), m_layer);
    m_target->applySpec(spec, m_at);
}

void AddLayerCommand::undo()
{
    ModelSpec spec = m_target->currentSpec();
    std::vector<LayerSpec> *list = layerList(spec, m_at);
    if (!list) return;
    list->erase(list->begin() + m_at.index());
    // Back to the layer it was added after, or to the group it was added into.
    LayerPath select;
    if (m_at.index() > 0)
        select = m_at.sibling(m_at.index() - 1);
    else if (!m_at.isTopLevel())
        select = m_at.sibling(LayerPath::k_group);
    else if (!list->empty())
        select = LayerPath::top(0);
    m_target->applySpec(spec, select);
}

// --- remove ------------------------------------------------------------------------

RemoveLayerCommand::RemoveLayerCommand(LayerEditTarget *target, const LayerPath &path,
                                       QUndoCommand *parent)
    : QUndoCommand(parent), m_target(target), m_path(path)
{
    if (const LayerSpec *layer = layerAt(target->currentSpec(), path)) m_layer = *layer;
    setText(
        tr("Remove %1 (%2)").arg(path.toString(), fromView(mixlab::layer_type_name(m_layer.type))));
}

void RemoveLayerCommand::redo()
{
    ModelSpec spec = m_target->currentSpec();
    std::vector<LayerSpec> *list = layerList(spec, m_path);
    if (!list) return;
    list->erase(list->begin() + m_path.index());
    m_target->applySpec(spec, afterRemoval(m_path, int(list->size())));
}

void RemoveLayerCommand::undo()
{
    ModelSpec spec = m_target->currentSpec();
    std::vector<LayerSpec> *list = layerList(spec, m_path);
    if (!list) return;
    list->insert(list->begin() + m_path.index(), m_layer);
    m_target->applySpec(spec, m_path);
}

// --- move --------------------------------------------------------------------------

MoveLayerCommand::MoveLayerCommand(LayerEditTarget *target, const LayerPath &from, int delta,
                                   QUndoCommand *parent)
    : QUndoCommand(parent), m_target(target), m_from(from), m_to(from.sibling(from.index() + delta))
{
    setText(delta < 0 ? tr("Move %1 up").arg(from.toString())
                      : tr("Move %1 down").arg(from.toString()));
}

void MoveLayerCommand::swapAndSelect(const LayerPath &select)
{
    ModelSpec spec = m_target->currentSpec();
    std::vector<LayerSpec> *list = layerList(spec, m_from);
    if (!list) return;
    std::swap(list->at(std::size_t(m_from.index())), list->at(std::size_t(m_to.index())));
    m_target->applySpec(spec, select);
}

void MoveLayerCommand::redo() { swapAndSelect(m_to); }
void MoveLayerCommand::undo() { swapAndSelect(m_from); }

// --- duplicate ---------------------------------------------------------------------

DuplicateLayerCommand::DuplicateLayerCommand(LayerEditTarget *target, const LayerPath &path,
                                             QUndoCommand *parent)
    : QUndoCommand(parent), m_target(target), m_path(path)
{
    setText(tr("Duplicate %1").arg(path.toString()));
}

void DuplicateLayerCommand::redo()
{
    ModelSpec spec = m_target->currentSpec();
    std::vector<LayerSpec> *list = layerList(spec, m_path);
    if (!list) return;
    const LayerSpec copy = list->at(std::size_t(m_path.index()));
    list->insert(list->begin() + m_path.index() + 1, copy);
    m_target->applySpec(spec, m_path.sibling(m_path.index() + 1));
}

void DuplicateLayerCommand::undo()
{
    ModelSpec spec = m_target->currentSpec();
    std::vector<LayerSpec> *list = layerList(spec, m_path);
    if (!list) return;
    list->erase(list->begin() + m_path.index() + 1);
    m_target->applySpec(spec, m_path);
}

// --- edit a field ------------------------------------------------------------------

EditLayerCommand::EditLayerCommand(LayerEditTarget *target, const LayerPath &path, LayerField field,
                                   const LayerSpec &before, const LayerSpec &after, Merge merge,
                                   QUndoCommand *parent)
    : QUndoCommand(parent), m_target(target), m_path(path), m_field(field), m_before(before),
      m_after(after), m_merge(merge)
{
    updateText();
}

void EditLayerCommand::updateText()
{
    setText(tr("Set %1 of %2 to %3")
                .arg(layerFieldName(m_field, m_after.type), m_path.toString(),
                     fieldValueText(m_field, m_after)));
}

void EditLayerCommand::put(const LayerSpec &layer)
{
    ModelSpec spec = m_target->currentSpec();
    LayerSpec *target = layerAt(spec, m_path);
    if (!target) return;
    *target = layer;
    m_target->applySpec(spec, m_path);
}

void EditLayerCommand::redo() { put(m_after); }
void EditLayerCommand::undo() { put(m_before); }

bool EditLayerCommand::mergeWith(const QUndoCommand *other)
{
    // Only numbers typed or stepped in a spin box merge; a combo or check change is a
    // deliberate step of its own.
    switch (m_field) {
    case LayerField::Units:
    case LayerField::Rate:
    case LayerField::Filters:
    case LayerField::Kernel:
    case LayerField::Stride:
    case LayerField::PadSize:
    case LayerField::Momentum:
    case LayerField::Epsilon: break;
    default: return false;
    }
    const auto *o = static_cast<const EditLayerCommand *>(other);
    if (o->m_path != m_path || o->m_field != m_field) return false;
    m_after = o->m_after;
    updateText();
    // Stepping back to where it started leaves nothing to undo.
    setObsolete(m_before == m_after);
    return true;
}

// --- rename ------------------------------------------------------------------------

RenameModelCommand::RenameModelCommand(LayerEditTarget *target, const QString &before,
                                       const QString &after, QUndoCommand *parent)
    : QUndoCommand(parent), m_target(target), m_before(before), m_after(after)
{
    setText(tr("Rename model to \"%1\"").arg(after));
}

void RenameModelCommand::put(const QString &name)
{
    ModelSpec spec = m_target->currentSpec();
    spec.name = name.toStdString();
    m_target->applySpec(spec, std::nullopt);
}

void RenameModelCommand::redo() { put(m_after); }
void RenameModelCommand::undo() { put(m_before); }

bool RenameModelCommand::mergeWith(const QUndoCommand *other)
{
    m_after = static_cast<const RenameModelCommand *>(other)->m_after;
    setText(tr("Rename model to \"%1\"").arg(m_after));
    setObsolete(m_after == m_before);
    return true;
}

// --- replace -----------------------------------------------------------------------

ReplaceModelCommand::ReplaceModelCommand(LayerEditTarget *target, const ModelSpec &before,
                                         const ModelSpec &after, const QString &text,
                                         QUndoCommand *parent)
    : QUndoCommand(text, parent), m_target(target), m_before(before), m_after(after)
{}

void ReplaceModelCommand::redo()
{
    m_target->applySpec(m_after, m_after.layers.empty() ? LayerPath{} : LayerPath::top(0));
}
void ReplaceModelCommand::undo()
{
    m_target->applySpec(m_before, m_before.layers.empty() ? LayerPath{} : LayerPath::top(0));
}
