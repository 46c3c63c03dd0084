// The profile's per-layer cost model: for each top-level node a network runs, its FLOPs
// and estimated bytes for a batch, whether its GEMMs ran on tensor cores and, when not,
// why. Computed from the graph, the kernel facts the network reports and the device.
#pragma once
#include "mixlab/device.h"
#include "mixlab/step_profile.h"
#include "model/node_facts.h"

#include <string>
#include <vector>

namespace mixlab {

// One LayerTime per node, in the order given, times left at zero. `rows`: what a step
// runs each layer's per-sample counts over: the batch, or batch x bptt tokens in a
// sequence graph (its FLOPs and shapes are per token).
std::vector<LayerTime> layer_costs(const std::vector<NodeFacts>& nodes,
                                   const std::vector<LayerKernelInfo>& kernels,
                                   const DeviceInfo& device, int rows);

} // namespace mixlab
