// Shape rules several layer types share: see layer_rules.h.
#include "model/layers/layer_rules.h"

#include "mixlab/error.h"
#include "model/layers/layer_unit.h"

namespace mixlab {

namespace {

// 16-bit tensor-core GEMMs want every dimension a multiple of 8 (16 bytes of fp16);
// cuBLAS otherwise falls back to slower kernels or pads. For a convolution the GEMM's
// reduction and output dimensions are the channel counts, so those are the ones checked.
constexpr int k_tensor_core_multiple = 8;

} // namespace

std::string layer_label(const GraphLayer& gl)
{
    return gl.path + " (" + std::string(layer_type_name(gl.spec.type)) + ")";
}

std::string pair_text(int h, int w)
{
    if (h == w) return std::to_string(h);
    // Appended piece by piece: GCC 12 warns (-Wrestrict, a false positive) about the
    // chain of operator+ once this is inlined where its callers are.
    std::string s = "[";
    s += std::to_string(h);
    s += ", ";
    s += std::to_string(w);
    s += "]";
    return s;
}

bool is_image(const Shape& s) { return s.dims.size() == 3; }

// One op per element for the pointwise ones (a rough count; their cost is memory
// traffic, not math), exp + sum + divide for softmax, and nothing for linear.
std::int64_t activation_flops(Activation a, std::int64_t elements)
{
    switch (a) {
    case Activation::None: return 0;
    case Activation::Softmax: return 3 * elements;
    default: return elements;
    }
}

void set_gemm_fitness(GraphLayer& gl,
                      std::initializer_list<std::pair<const char*, std::int64_t>> dims)
{
    std::string note;
    for (const auto& [what, n] : dims) {
        if (n % k_tensor_core_multiple == 0) continue;
        const std::int64_t up = (n / k_tensor_core_multiple + 1) * k_tensor_core_multiple;
        if (!note.empty()) note += "; ";
        note += std::string(what) + " " + std::to_string(n) + " is not a multiple of " +
                std::to_string(k_tensor_core_multiple) + " (" + std::to_string(up) + " would be)";
    }
    gl.is_gemm = true;
    gl.tensor_core_note = note;
    gl.tensor_core_friendly = note.empty();
}

void need_image(const GraphLayer& gl, const GraphWalk& walk)
{
    if (is_image(gl.in)) return;
    std::string msg =
        layer_label(gl) + ": needs an image input (H, W, C) but receives " + gl.in.to_string();
    if (gl.in.sequence)
        msg += ", a sequence (one vector per time step); convolutions and pooling do not apply "
               "to a language model";
    else if (is_image(walk.model_input()))
        msg += "; put it before the flatten or dense layers (they turn the image into a "
               "vector)";
    else
        msg += "; the dataset gives flat samples of " + walk.model_input().to_string() +
               " values, so only dense-style layers apply";
    throw SpecError(msg);
}

std::pair<int, int> resolve_window(GraphLayer& gl, bool pooling, int default_stride_h,
                                   int default_stride_w)
{
    const LayerSpec& l = gl.spec;
    const std::string label = layer_label(gl);
    const char* size_field = pooling ? "\"pool_size\"" : "\"kernel\"";
    if (l.kernel_h < 1 || l.kernel_w < 1)
        throw SpecError(label + ": " + size_field + " must be positive, got " +
                        pair_text(l.kernel_h, l.kernel_w));
    if (l.stride_h < 0 || l.stride_w < 0)
        throw SpecError(label + ": \"stride\" must be positive, got " +
                        pair_text(l.stride_h, l.stride_w));
    gl.stride_h = l.stride_h == 0 ? default_stride_h : l.stride_h;
    gl.stride_w = l.stride_w == 0 ? default_stride_w : l.stride_w;
    switch (l.padding) {
    case Padding::Valid: gl.pad_h = gl.pad_w = 0; break;
    case Padding::Same:
        if (l.kernel_h % 2 == 0 || l.kernel_w % 2 == 0)
            throw SpecError(label + ": \"padding\": \"same\" needs an odd " + size_field +
                            " (the padding is the same on both sides), got " +
                            std::to_string(l.kernel_h) + "x" + std::to_string(l.kernel_w) +
                            "; use an odd size or explicit \"padding\" numbers");
        gl.pad_h = (l.kernel_h - 1) / 2;
        gl.pad_w = (l.kernel_w - 1) / 2;
        break;
    case Padding::Explicit:
        if (l.pad_h < 0 || l.pad_w < 0)
            throw SpecError(label + ": \"padding\" must not be negative, got " +
                            pair_text(l.pad_h, l.pad_w));
        gl.pad_h = l.pad_h;
        gl.pad_w = l.pad_w;
        break;
    }
    // A pooling window lying wholly in the padding has nothing to pool (and an
    // average that excludes padding would divide by zero).
    if (pooling && (2 * gl.pad_h > l.kernel_h || 2 * gl.pad_w > l.kernel_w))
        throw SpecError(label + ": padding " + pair_text(gl.pad_h, gl.pad_w) +
                        " is more than half the " + std::to_string(l.kernel_h) + "x" +
                        std::to_string(l.kernel_w) + " window");
    const std::int64_t h = std::int64_t(gl.in.dims[0]) + 2 * std::int64_t(gl.pad_h);
    const std::int64_t w = std::int64_t(gl.in.dims[1]) + 2 * std::int64_t(gl.pad_w);
    if (h < l.kernel_h || w < l.kernel_w)
        throw SpecError(
            label + ": its " + std::to_string(l.kernel_h) + "x" + std::to_string(l.kernel_w) +
            " window is larger than its input " + std::to_string(gl.in.dims[0]) + "x" +
            std::to_string(gl.in.dims[1]) +
            (gl.pad_h || gl.pad_w ? " padded to " + std::to_string(h) + "x" + std::to_string(w)
                                  : std::string()) +
            "; use a smaller " + size_field + ", more padding, or less downsampling before it");
    return {int((h - l.kernel_h) / gl.stride_h + 1), int((w - l.kernel_w) / gl.stride_w + 1)};
}

} // namespace mixlab
