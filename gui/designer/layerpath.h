// LayerPath: where a layer sits in a model whose residual blocks nest other layers,
// written as the engine names it ("layer 4 > body 2"), plus lookups in a spec and a graph.
#pragma once
#include "mixlab/graph.h"
#include "mixlab/model_spec.h"

#include <QMetaType>
#include <QString>

#include <optional>
#include <vector>

// Which list a step indexes: the model's own layers, or a residual block's body or shortcut.
enum class LayerGroup { Top, Body, Shortcut };

struct LayerStep {
    LayerGroup group = LayerGroup::Top;
    int index = 0;
    bool operator==(const LayerStep &) const = default;
};

// The first step is always Top; each further step goes into the residual block named by
// the steps before it. A path is also an insertion point: "before index in that list".
// A group path (last index k_group) names a block's body or shortcut list as a whole, as
// the tree's "body"/"shortcut" rows do. Commands hold paths, never pointers, so undo
// stays valid however often the spec is copied.
struct LayerPath {
    static constexpr int k_group = -1;
    std::vector<LayerStep> steps;

    static LayerPath top(int index) { return LayerPath{{{LayerGroup::Top, index}}}; }
    bool isEmpty() const { return steps.empty(); }
    bool isGroup() const { return !steps.empty() && steps.back().index == k_group; }
    bool isTopLevel() const { return steps.size() == 1; }
    int index() const { return steps.empty() ? -1 : steps.back().index; }
    LayerGroup group() const { return steps.empty() ? LayerGroup::Top : steps.back().group; }
    int depth() const { return int(steps.size()) - 1; } // 0 for a top-level layer

    // The residual block whose list holds this layer (empty for a top-level layer).
    LayerPath owner() const;
    // The same list at another index.
    LayerPath sibling(int index) const;
    // A layer (or with k_group, the group itself) in this block's body or shortcut.
    LayerPath child(LayerGroup group, int index) const;
    // True when `other` is this path or lies inside the block it names.
    bool contains(const LayerPath &other) const;

    // "layer 4 > body 2", as build_graph and the parser write it; a group path ends in
    // "> body" or "> shortcut".
    QString toString() const;
    // The path toString wrote; nullopt for any other text.
    static std::optional<LayerPath> fromString(const QString &text);

    bool operator==(const LayerPath &) const = default;
};

Q_DECLARE_METATYPE(LayerPath)

QString layerGroupName(LayerGroup group); // "body", "shortcut" ("" for Top)

// The layer a path names; nullptr for a group path or one that leads nowhere.
const mixlab::LayerSpec *layerAt(const mixlab::ModelSpec &spec, const LayerPath &path);
mixlab::LayerSpec *layerAt(mixlab::ModelSpec &spec, const LayerPath &path);
// The list a path's last step indexes (for a group path: that group's list); nullptr
// when the owner is missing or not a residual block.
const std::vector<mixlab::LayerSpec> *layerList(const mixlab::ModelSpec &spec,
                                                const LayerPath &path);
std::vector<mixlab::LayerSpec> *layerList(mixlab::ModelSpec &spec, const LayerPath &path);
// The inferred figures for a layer, when the engine got that far.
const mixlab::GraphLayer *graphLayerAt(const std::vector<mixlab::GraphLayer> &layers,
                                       const LayerPath &path);

// Where the layer at `from` lands when moved to the insertion point `to`, read after it has
// left its place (later indices of its list move up by one); nullopt when the move cannot
// be made (no such layer or list, a block into its own body or shortcut) or changes nothing.
std::optional<LayerPath> movedLayerPath(const mixlab::ModelSpec &spec, const LayerPath &from,
                                        const LayerPath &to);

// The deepest existing layer named in an engine message ("layer 4 > body 2 (conv2d):
// ..."); empty when the message names none.
LayerPath pathNamedIn(const QString &message, const mixlab::ModelSpec &spec);
