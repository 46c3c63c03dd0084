// The layer types, one unit each, in one table (registry.cpp) keyed by LayerType.
//
// The goal: a new layer type (embedding, lstm and layernorm are next) is
//   - one file here, model/layers/<type>.cpp: its shape inference, parameter count,
//     FLOPs, tensor-core fitness and its note, what it allocates, parameter init, forward
//     and backward over the Backend ops, and the kernel facts it reports;
//   - its line in layer_unit() (registry.cpp) and in core/sources.cmake;
//   - its LayerType value, any new fields of LayerSpec (mixlab/model_spec.h) and their
//     JSON reading and writing (spec/model_spec.cpp): the spec ranks below the model, as
//     the app and the CLI read model files without an executor, so the document format
//     cannot live in the unit;
//   - its backend ops with their CPU/CUDA pairs and checks, where the existing ops do not
//     serve it.
// The network (network.cpp), the graph walk (graph.cpp) and the profile's cost model
// (analysis/layer_costs.cpp) name no layer type. Outside the engine's core, per-type code
// that a new type may want: cli/cmd_summary.cpp (its fields in `summary`), report/explain.cpp
// (a GEMM layer's wording in the tensor-core rule), the app's designer (gui/designer:
// palette, templates, property editor, tree).
#pragma once
#include "model/layers/layer_unit.h"

namespace mixlab {

const LayerUnit& layer_unit(LayerType type);

} // namespace mixlab
