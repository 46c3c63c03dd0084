// FLOPs, bytes and tensor-core notes of the layers a profile times: see layer_costs.h.
#include "analysis/layer_costs.h"

namespace mixlab {

namespace {

// Elements a shape holds per sample.
double per_sample(const Shape& s) { return double(s.elements()); }

// Why a GEMM layer did not run on tensor cores, in the order a user would fix it: the
// device has none for this dtype, the policy keeps fp32 math, a dimension is off, or the
// library's fastest algorithm for this shape does not use them.
std::string no_tensor_core_reason(const LayerTime& t, const NodeFacts& n, const DeviceInfo& dev)
{
    if (!t.is_gemm || t.tensor_cores) return {};
    if (dev.backend != BackendKind::Cuda) return "the CPU backend has no tensor cores";
    if (n.dtype == DType::F32 && n.math == MathMode::Pedantic)
        return "fp32 math (TF32 off under this policy)";
    if (n.dtype == DType::F32 && n.math == MathMode::TF32 && !dev.tf32)
        return "this GPU has no TF32 tensor cores (8.0+)";
    if (n.dtype == DType::BF16 && !dev.bf16) return "this GPU has no bf16 tensor cores (8.0+)";
    if (n.dtype == DType::F16 && !dev.tensor_cores) return "this GPU has no tensor cores (7.0+)";
    if (!n.layer->tensor_core_note.empty()) return n.layer->tensor_core_note;
    return "the fastest algorithm found for this shape does not use them";
}

} // namespace

// FLOPs are the graph's counts (forward per sample; backward twice that where both the
// data and the weight gradient are computed, once where only one is). Bytes are an
// estimate of the compulsory traffic: forward reads the input and weights and writes the
// output; backward reads the output gradient, the saved input/output and the weights,
// writes the input gradient and the fp32 weight gradient. Caches and re-reads inside a
// kernel are not counted, so achieved GB/s may exceed what the estimate says.
std::vector<LayerTime> layer_costs(const std::vector<NodeFacts>& nodes,
                                   const std::vector<LayerKernelInfo>& kernels,
                                   const DeviceInfo& dev, int rows)
{
    const double batch = double(rows);
    std::vector<LayerTime> out;
    for (const NodeFacts& n : nodes) {
        LayerTime t;
        if (!n.layer) { // a cast: reads one dtype, writes the other (and back for the gradient)
            t.path = "cast before " + n.cast_before;
            t.type = "cast";
            const double elems = double(n.per_sample) * batch;
            t.bytes = elems * double(dtype_size(n.from_dtype) + dtype_size(n.dtype)) *
                      (n.input_gradient ? 2.0 : 1.0);
            out.push_back(t);
            continue;
        }
        const GraphLayer& L = *n.layer;
        t.path = L.path;
        t.type = std::string(layer_type_name(L.spec.type));
        // A block (its body is not empty) holds GEMMs: its tensor-core use is theirs.
        t.is_gemm = L.is_gemm || !L.body.empty();
        const double fwd = double(L.flops) * batch;
        t.flops = fwd + (L.is_gemm ? fwd * (n.input_gradient ? 2.0 : 1.0) : fwd);
        const double es = double(dtype_size(n.dtype));
        const double act = (per_sample(L.in) + per_sample(L.out)) * batch * es;
        const double weights = double(L.params) * (es + 4.0); // read low, write fp32 grad
        t.bytes = act + double(L.params) * es + 2.0 * act + weights;
        bool any = false, all_tc = true;
        for (const LayerKernelInfo& k : kernels)
            if (k.path == L.path || k.path.rfind(L.path + " >", 0) == 0) {
                any = true;
                all_tc = all_tc && k.tensor_cores;
            }
        t.tensor_cores = any && all_tc && dev.backend == BackendKind::Cuda;
        t.tensor_core_note = no_tensor_core_reason(t, n, dev);
        if (n.shares_buffers) t.bytes = 0; // shares its input's (or the batch norm's) buffers
        out.push_back(t);
    }
    return out;
}

} // namespace mixlab
