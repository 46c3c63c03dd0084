// Precision policies: names (with Keras's aliases) and what each one means for storage,
// math mode, master weights and loss scaling (README's policy table).
#include "mixlab/policy.h"

#include "mixlab/error.h"

#include <algorithm>
#include <cctype>
#include <string>

namespace mixlab {

namespace {

struct PolicyName {
    std::string_view name;
    Policy policy;
};

// MixLab's names first, then Keras's, so a user coming from tf.keras.mixed_precision
// can keep the string they know.
constexpr PolicyName k_names[] = {
    {"fp32", Policy::FP32},
    {"tf32", Policy::TF32},
    {"mixed_fp16", Policy::MixedFP16},
    {"mixed_bf16", Policy::MixedBF16},
    {"fp16", Policy::FP16},
    {"mixed_fp8", Policy::MixedFP8},
    {"float32", Policy::FP32},
    {"mixed_float16", Policy::MixedFP16},
    {"mixed_bfloat16", Policy::MixedBF16},
};

std::string lower(std::string_view s)
{
    std::string out(s);
    std::transform(out.begin(), out.end(), out.begin(),
                   [](unsigned char c) { return char(std::tolower(c)); });
    return out;
}

} // namespace

Policy parse_policy(std::string_view name)
{
    const std::string key = lower(name);
    for (const auto& entry : k_names)
        if (entry.name == key) return entry.policy;
    throw InputError("unknown precision policy \"" + std::string(name) +
                     "\"; valid policies: fp32, tf32, mixed_fp16, mixed_bf16, fp16, mixed_fp8 "
                     "(Keras's names mixed_float16, mixed_bfloat16 and float32 also work)");
}

std::string_view policy_name(Policy p)
{
    switch (p) {
    case Policy::FP32: return "fp32";
    case Policy::TF32: return "tf32";
    case Policy::MixedFP16: return "mixed_fp16";
    case Policy::MixedBF16: return "mixed_bf16";
    case Policy::FP16: return "fp16";
    case Policy::MixedFP8: return "mixed_fp8";
    }
    return "unknown";
}

PolicyTraits policy_traits(Policy p)
{
    switch (p) {
    case Policy::FP32: return {DType::F32, false, 0, MathMode::Pedantic, false};
    case Policy::TF32: return {DType::F32, false, 80, MathMode::TF32, false};
    case Policy::MixedFP16:
        // fp16's 5-bit exponent underflows small gradients: scale the loss by default.
        return {DType::F16, true, 0, MathMode::Reduced, true};
    case Policy::MixedBF16:
        // bf16 has fp32's exponent range, so gradients do not underflow: no scaling.
        return {DType::BF16, true, 80, MathMode::Reduced, false};
    case Policy::FP16:
        // Pure fp16 (Apex O3-like): updates land on fp16 weights; scaling is opt-in.
        return {DType::F16, false, 0, MathMode::Reduced, false};
    case Policy::MixedFP8:
        // mixed_bf16 around the fp8 GEMMs: their scales are per tensor (delayed scaling),
        // so the loss needs none; E5M2 gradients have fp16's range besides.
        return {DType::BF16, true, 89, MathMode::Reduced, false};
    }
    throw InputError("unknown precision policy");
}

} // namespace mixlab
