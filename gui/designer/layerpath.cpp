// LayerPath: navigation is by value through the spec each time, so a path stays
// meaningful after the spec it came from has been replaced by an edited copy.
#include "designer/layerpath.h"

#include <QRegularExpression>

#include <algorithm>
#include <type_traits>

using mixlab::GraphLayer;
using mixlab::LayerSpec;
using mixlab::LayerType;
using mixlab::ModelSpec;

LayerPath LayerPath::owner() const
{
    LayerPath p = *this;
    if (!p.steps.empty()) p.steps.pop_back();
    return p;
}

LayerPath LayerPath::sibling(int index) const
{
    LayerPath p = *this;
    if (!p.steps.empty()) p.steps.back().index = index;
    return p;
}

LayerPath LayerPath::child(LayerGroup group, int index) const
{
    LayerPath p = *this;
    p.steps.push_back({group, index});
    return p;
}

bool LayerPath::contains(const LayerPath &other) const
{
    if (other.steps.size() < steps.size()) return false;
    return std::equal(steps.begin(), steps.end(), other.steps.begin());
}

QString layerGroupName(LayerGroup group)
{
    switch (group) {
    case LayerGroup::Top: return {};
    case LayerGroup::Body: return QStringLiteral("body");
    case LayerGroup::Shortcut: return QStringLiteral("shortcut");
    }
    return {};
}

QString LayerPath::toString() const
{
    QString s;
    for (const LayerStep &step : steps) {
        if (step.group == LayerGroup::Top) {
            s = QStringLiteral("layer ") + QString::number(step.index);
            continue;
        }
        s += QStringLiteral(" > ") + layerGroupName(step.group);
        if (step.index != k_group) s += QLatin1Char(' ') + QString::number(step.index);
    }
    return s;
}

std::optional<LayerPath> LayerPath::fromString(const QString &text)
{
    static const QRegularExpression re(
        QStringLiteral("^layer (\\d+)((?: > (?:body|shortcut)(?: \\d+)?)*)$"));
    static const QRegularExpression stepRe(QStringLiteral(" > (body|shortcut)(?: (\\d+))?"));
    const QRegularExpressionMatch m = re.match(text);
    if (!m.hasMatch()) return std::nullopt;
    LayerPath path = top(m.captured(1).toInt());
    auto steps = stepRe.globalMatch(m.captured(2));
    while (steps.hasNext()) {
        if (path.isGroup()) return std::nullopt; // a group is always the last step
        const QRegularExpressionMatch s = steps.next();
        const LayerGroup group =
            s.captured(1) == QLatin1String("body") ? LayerGroup::Body : LayerGroup::Shortcut;
        path = path.child(group, s.captured(2).isEmpty() ? k_group : s.captured(2).toInt());
    }
    return path;
}

namespace {

// The list `step` indexes, inside `owner` (nullptr: the model's own list).
template <typename Spec, typename Layer>
auto *listIn(Spec &spec, Layer *owner, LayerGroup group)
{
    using List = std::remove_reference_t<decltype((spec.layers))>;
    List *list = nullptr;
    if (group == LayerGroup::Top) {
        if (!owner) list = &spec.layers;
    } else if (owner && owner->type == LayerType::Residual) {
        list = group == LayerGroup::Body ? &owner->body : &owner->shortcut;
    }
    return list;
}

template <typename Spec>
auto *listFor(Spec &spec, const LayerPath &path)
{
    using Layer = std::remove_reference_t<decltype(spec.layers.front())>;
    using List = std::remove_reference_t<decltype((spec.layers))>;
    if (path.steps.empty()) return static_cast<List *>(nullptr);
    Layer *owner = nullptr;
    for (std::size_t i = 0; i + 1 < path.steps.size(); ++i) {
        List *list = listIn(spec, owner, path.steps[i].group);
        const int index = path.steps[i].index;
        if (!list || index < 0 || index >= int(list->size())) return static_cast<List *>(nullptr);
        owner = &(*list)[std::size_t(index)];
    }
    return listIn(spec, owner, path.steps.back().group);
}

template <typename Spec>
auto *layerFor(Spec &spec, const LayerPath &path)
{
    using Layer = std::remove_reference_t<decltype(spec.layers.front())>;
    auto *list = listFor(spec, path);
    const int index = path.index();
    if (!list || index < 0 || index >= int(list->size())) return static_cast<Layer *>(nullptr);
    return &(*list)[std::size_t(index)];
}

} // namespace

const LayerSpec *layerAt(const ModelSpec &spec, const LayerPath &path)
{
    return layerFor(spec, path);
}
LayerSpec *layerAt(ModelSpec &spec, const LayerPath &path) { return layerFor(spec, path); }

const std::vector<LayerSpec> *layerList(const ModelSpec &spec, const LayerPath &path)
{
    return listFor(spec, path);
}
std::vector<LayerSpec> *layerList(ModelSpec &spec, const LayerPath &path)
{
    return listFor(spec, path);
}

const GraphLayer *graphLayerAt(const std::vector<GraphLayer> &layers, const LayerPath &path)
{
    const std::vector<GraphLayer> *list = &layers;
    const GraphLayer *layer = nullptr;
    for (const LayerStep &step : path.steps) {
        if (step.group != LayerGroup::Top) {
            if (!layer) return nullptr;
            list = step.group == LayerGroup::Body ? &layer->body : &layer->shortcut;
        }
        if (step.index < 0 || step.index >= int(list->size())) return nullptr;
        layer = &(*list)[std::size_t(step.index)];
    }
    return layer;
}

std::optional<LayerPath> movedLayerPath(const ModelSpec &spec, const LayerPath &from,
                                        const LayerPath &to)
{
    if (from.isGroup() || !layerAt(spec, from) || to.isEmpty() || to.isGroup()) return std::nullopt;
    const std::vector<LayerSpec> *target = layerList(spec, to);
    if (!target || to.index() < 0 || to.index() > int(target->size())) return std::nullopt;
    if (to.steps.size() > from.steps.size() && from.contains(to)) return std::nullopt;
    // Leaving its list moves every later layer of that list, and all they hold, up by one.
    LayerPath landed = to;
    const std::size_t k = from.steps.size() - 1;
    const bool sameList =
        to.steps.size() > k &&
        std::equal(from.steps.begin(), from.steps.begin() + std::ptrdiff_t(k), to.steps.begin()) &&
        to.steps[k].group == from.steps[k].group;
    if (sameList && to.steps[k].index > from.index()) --landed.steps[k].index;
    if (landed == from) return std::nullopt;
    return landed;
}

LayerPath pathNamedIn(const QString &message, const ModelSpec &spec)
{
    static const QRegularExpression re(
        QStringLiteral("\\blayer (\\d+)((?: > (?:body|shortcut) \\d+)*)"));
    static const QRegularExpression stepRe(QStringLiteral(" > (body|shortcut) (\\d+)"));
    const QRegularExpressionMatch m = re.match(message);
    if (!m.hasMatch()) return {};
    LayerPath path = LayerPath::top(m.captured(1).toInt());
    if (!layerAt(spec, path)) return {};
    auto steps = stepRe.globalMatch(m.captured(2));
    while (steps.hasNext()) {
        const QRegularExpressionMatch s = steps.next();
        const LayerPath next = path.child(
            s.captured(1) == QLatin1String("body") ? LayerGroup::Body : LayerGroup::Shortcut,
            s.captured(2).toInt());
        if (!layerAt(spec, next)) break; // keep the deepest layer that exists
        path = next;
    }
    return path;
}
