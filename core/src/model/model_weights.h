// A network's trained tensors as a safetensors file (safetensors.h) that PyTorch loads
// into the equivalent nn.Sequential with load_state_dict(strict=True), and back into a
// network of the same model. The naming, the layouts written and why: docs/WEIGHTS.md.
#pragma once
#include "mixlab/model_spec.h"
#include "mixlab/policy.h"
#include "model/network.h"
#include "model/safetensors.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mixlab {

inline constexpr std::string_view k_weights_format = "mixlab-weights/1";

// Every tensor of the network under its PyTorch state_dict name, in graph order, with
// PyTorch's shapes and layouts: fp32 masters as F32, batch norm's running statistics as
// F32 and its num_batches_tracked as an I64 scalar (`step`). Throws InputError naming a
// layer this mapping cannot express (the file would be wrong) rather than writing it.
std::vector<SafeTensor> network_tensors(Network& net, std::int64_t step);

// The file's bytes: network_tensors and "__metadata__" {"format": "mixlab-weights/1",
// "model": the model spec's JSON text, "policy": its name, "step": the steps trained}.
std::string encode_weights(Network& net, const ModelSpec& spec, Policy policy, std::int64_t step);
// encode_weights written atomically (atomic_file.h).
void save_weights(Network& net, const std::string& path, const ModelSpec& spec, Policy policy,
                  std::int64_t step);

// Loads every tensor of the network from a file's bytes; `what` names the file in
// messages. Nothing is written unless every tensor fits: InputError naming a missing
// tensor, a tensor this model does not have, a wrong dtype, a shape that differs
// (expected and found), or what decode_safetensors finds damaged.
void load_weights_bytes(Network& net, std::string_view bytes, const std::string& what);
// The same from a file (InputError when it cannot be read).
void load_weights(Network& net, const std::string& path);

} // namespace mixlab
