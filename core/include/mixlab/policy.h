// Precision policies: which dtype each part of a training step uses.
#pragma once
#include "mixlab/dtype.h"

#include <string>
#include <string_view>

namespace mixlab {

// MixedFP8: mixed_bf16 with the dense layers' GEMMs in fp8 (E4M3 forward, E5M2 for
// gradients) under per-tensor delayed scaling (run_config's Fp8Config); emulated on the CPU.
enum class Policy { FP32, TF32, MixedFP16, MixedBF16, FP16, MixedFP8 };

enum class MathMode {
    Pedantic, // fp32 math, no TF32
    TF32,     // fp32 storage, TF32 tensor-core products
    Reduced,  // 16-bit operands, fp32 accumulate
};

struct PolicyTraits {
    DType compute;       // activations and the weights the GEMMs read
    bool master_weights; // fp32 master copy updated by the optimizer
    // The compute capability (major * 10 + minor) its tensor cores need: 80 for bf16 and
    // tf32, 89 for fp8 (Ada and Hopper); 0 for any GPU.
    int min_cc;
    MathMode math;
    bool default_loss_scaling; // dynamic loss scaling unless the config says otherwise
};

Policy parse_policy(std::string_view name); // throws InputError naming the valid ones
std::string_view policy_name(Policy p);
PolicyTraits policy_traits(Policy p);
// Every policy in table order (for --help text and the GUI).
inline constexpr Policy k_all_policies[] = {Policy::FP32,      Policy::TF32, Policy::MixedFP16,
                                            Policy::MixedBF16, Policy::FP16, Policy::MixedFP8};

} // namespace mixlab
