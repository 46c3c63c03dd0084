#include "model/fp8_eligibility.h"

namespace mixlab {

std::string fp8_ineligibility(const LayerSpec& spec, DType dtype, std::int64_t in, std::int64_t out)
{
    if (dtype != DType::BF16)
        return "kept in " + std::string(dtype_name(dtype)) + " by the layer's dtype";
    if (spec.no_fp8) return "kept in bfloat16 by the layer's dtype";
    if (spec.tie_weights)
        return "kept in bfloat16: its weights are the embedding's table, which is not quantized";
    const auto m = std::int64_t(k_fp8_width_multiple);
    if (out % m != 0) return "out " + std::to_string(out) + " is not a multiple of 8";
    if (in % m != 0) return "in " + std::to_string(in) + " is not a multiple of 8";
    return "";
}

std::string fp8_ineligibility(const GraphLayer& layer, std::int64_t stored_in)
{
    const DType dtype = layer.spec.force_fp32 ? DType::F32 : DType::BF16;
    const std::int64_t in = stored_in > 0 ? stored_in : layer.in.elements();
    const std::int64_t out = layer.stored_width > 0 ? layer.stored_width : layer.out.elements();
    return fp8_ineligibility(layer.spec, dtype, in, out);
}

} // namespace mixlab
