// Backend kinds by name, and whether a precision policy can run on a device.
#include "mixlab/device.h"

#include "mixlab/error.h"

#include <string>

namespace mixlab {

std::string_view backend_kind_name(BackendKind kind)
{
    switch (kind) {
    case BackendKind::Cpu: return "cpu";
    case BackendKind::Cuda: return "cuda";
    }
    return "cpu";
}

std::optional<BackendKind> parse_backend_kind(std::string_view name)
{
    for (BackendKind k : {BackendKind::Cpu, BackendKind::Cuda})
        if (backend_kind_name(k) == name) return k;
    return std::nullopt;
}

void check_policy_supported(const DeviceInfo& info, Policy policy)
{
    // The CPU backend emulates every format's rounding, so every policy runs there.
    if (!info.is_gpu())
        return;
    if (!policy_traits(policy).needs_sm80 || info.cc_major >= 8)
        return;
    const std::string what = policy == Policy::TF32 ? "TF32 tensor cores" : "bfloat16 tensor cores";
    throw DeviceError("policy '" + std::string(policy_name(policy)) + "' needs " + what +
                      " (compute capability 8.0 or newer, e.g. an A100 or RTX 30xx), but " +
                      info.name + " has compute capability " + std::to_string(info.cc_major) +
                      "." + std::to_string(info.cc_minor) +
                      "; choose fp32 or mixed_fp16 on this GPU, or --device cpu to emulate it");
}

} // namespace mixlab
