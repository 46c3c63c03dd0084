// Precision policies: which dtype each part of a training step uses.
#pragma once
#include "mixlab/dtype.h"

#include <string>
#include <string_view>

namespace mixlab {

enum class Policy { FP32, TF32, MixedFP16, MixedBF16, FP16 };

enum class MathMode {
    Pedantic, // fp32 math, no TF32
    TF32,     // fp32 storage, TF32 tensor-core products
    Reduced,  // 16-bit operands, fp32 accumulate
};

struct PolicyTraits {
    DType compute;       // activations and the weights the GEMMs read
    bool master_weights; // fp32 master copy updated by the optimizer
    bool needs_sm80;     // bf16 / tf32 tensor cores need compute capability 8.0+
    MathMode math;
    bool default_loss_scaling; // dynamic loss scaling unless the config says otherwise
};

Policy parse_policy(std::string_view name); // throws InputError naming the valid ones
std::string_view policy_name(Policy p);
PolicyTraits policy_traits(Policy p);
// Every policy in table order (for --help text and the GUI).
inline constexpr Policy k_all_policies[] = {Policy::FP32, Policy::TF32, Policy::MixedFP16,
                                            Policy::MixedBF16, Policy::FP16};

} // namespace mixlab
