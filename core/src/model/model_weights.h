// A network's trained tensors as a safetensors file (safetensors.h) that PyTorch loads
// into the equivalent nn.Sequential with load_state_dict(strict=True), and back into a
// network of the same model. The naming, the layouts written and why: docs/WEIGHTS.md.
#pragma once
#include "mixlab/model_spec.h"
#include "mixlab/policy.h"
#include "model/network.h"
#include "model/safetensors.h"

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace mixlab {

inline constexpr std::string_view k_weights_format = "mixlab-weights/1";
// A checkpoint (mixlab/checkpoint.h): the same tensors, with the optimizer's and the run's
// state beside them under names is_checkpoint_extra recognises.
inline constexpr std::string_view k_checkpoint_format = "mixlab-checkpoint/1";

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

// The optimizer state of every parameter tensor of network_tensors, named as torch.optim
// keys it, under the tensor's name: "optimizer.<tensor>.momentum_buffer" (SGD with
// momentum), "optimizer.<tensor>.exp_avg" and ".exp_avg_sq" (Adam, AdamW); F32, PyTorch's
// shapes and layouts. Empty for an optimizer without state.
std::vector<SafeTensor> optimizer_tensors(Network& net);

// A file's tensors checked against the network and held, ready to be written: every
// tensor is checked before apply() writes any, so a file that does not fit leaves the
// network as it was.
struct PendingLoad {
    std::vector<std::string> names; // every tensor the load takes
    std::vector<std::function<void()>> writes;
    void apply();
};
// The weights (and with `with_optimizer`, the optimizer state optimizer_tensors names) from
// `file`; InputError "<what>: ..." naming a missing tensor, a wrong dtype or a shape that
// differs (expected and found). Tensors the file has beyond these are the caller's.
PendingLoad check_weights(Network& net, const SafetensorsFile& file, const std::string& what,
                          bool with_optimizer);
// Names a checkpoint holds beyond the weights: "optimizer.*" and "mixlab.*".
bool is_checkpoint_extra(std::string_view name);

// Loads every tensor of the network from a file's bytes (a weights file, or a
// checkpoint's weights alone); `what` names the file in
// messages. Nothing is written unless every tensor fits: InputError naming a missing
// tensor, a tensor this model does not have, a wrong dtype, a shape that differs
// (expected and found), or what decode_safetensors finds damaged.
void load_weights_bytes(Network& net, std::string_view bytes, const std::string& what);
// The same from a file (InputError when it cannot be read).
void load_weights(Network& net, const std::string& path);

} // namespace mixlab
