// The layer types, one unit each, in one table (registry.cpp) keyed by LayerType.
//
// The goal: a new layer type (embedding, lstm and layernorm are next) is
//   - its LayerType value and its JSON fields (core/include/mixlab/model_spec.h,
//     core/src/spec/model_spec.cpp: the spec ranks below the model, so the document
//     format cannot live here),
//   - one file here, model/layers/<type>.cpp, holding the whole rest of the type: shape
//     inference, parameters, FLOPs, tensor-core fitness and its reason, what it
//     allocates, parameter init, forward and backward over the Backend ops, and the
//     kernel facts it reports,
//   - its line in layer_unit() below and in core/sources.cmake,
//   - and its backend ops with their checks, where the existing ops do not serve it.
// The network (network.cpp) and the graph walk (graph.cpp) know no layer type by name,
// nor does the cost model (analysis/layer_costs.cpp).
#pragma once
#include "model/layers/layer_unit.h"

namespace mixlab {

const LayerUnit& layer_unit(LayerType type);

} // namespace mixlab
