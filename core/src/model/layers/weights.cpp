// Allocation and initial values of a multiplying layer's weights and bias.
#include "model/layers/weights.h"

#include "base/hd_math.h"
#include "mixlab/error.h"
#include "model/layers/layer_unit.h"
#include "model/master_io.h"

#include <cmath>
#include <vector>

namespace mixlab {

namespace {

// Gradients have the master's dtype; a split master's (int16 low halves) are fp32.
DType grad_dtype(DType master) { return master == DType::I16 ? DType::F32 : master; }

} // namespace

Weights allocate_bias(NodeBuilder& b, DType dtype, std::size_t n_b, PaddedLayout layout)
{
    if (!layout.empty() && stored_count(layout) != n_b)
        throw Error("allocate_bias: a padded layout of " + std::to_string(stored_count(layout)) +
                    " values for " + std::to_string(n_b) + " biases");
    const DType master = b.master_dtype(dtype);
    Weights w;
    w.b_master = b.own(n_b, master);
    w.b_grad = b.own(n_b, grad_dtype(master));
    if (master != dtype) w.b_low = b.own(n_b, dtype);
    b.add_param(w.b_master, w.b_grad, w.b_low, std::move(layout));
    return w;
}

Weights allocate_weights(NodeBuilder& b, DType dtype, std::size_t n_w, std::size_t n_b,
                         bool grad_low, PaddedLayout layout, PaddedLayout bias_layout)
{
    if (!layout.empty() && stored_count(layout) != n_w)
        throw Error("allocate_weights: a padded layout of " + std::to_string(stored_count(layout)) +
                    " values for " + std::to_string(n_w) + " weights");
    const DType master = b.master_dtype(dtype);
    Weights w;
    w.w_master = b.own(n_w, master);
    w.w_grad = b.own(n_w, grad_dtype(master));
    if (master != dtype) w.w_low = b.own(n_w, dtype);
    // cuDNN computes dW in the data's dtype; it is cast into the fp32 gradient.
    if (grad_low && master != dtype) w.w_grad_low = b.own(n_w, dtype);
    b.add_param(w.w_master, w.w_grad, w.w_low, layout);
    w.layout = std::move(layout);
    if (n_b) {
        const Weights bias = allocate_bias(b, dtype, n_b, std::move(bias_layout));
        w.b_master = bias.b_master;
        w.b_grad = bias.b_grad;
        w.b_low = bias.b_low;
    }
    return w;
}

void init_uniform(Backend& backend, const Weights& w, float limit, std::uint64_t seed,
                  std::uint64_t stream)
{
    std::vector<float> host(w.layout.empty() ? w.w_master->count() : logical_count(w.layout));
    for (std::size_t i = 0; i < host.size(); ++i)
        host[i] = (2.0f * hd::uniform01(seed, stream, i) - 1.0f) * limit;
    if (!w.layout.empty()) host = pad(w.layout, host);
    upload_master(backend, *w.w_master, w.w_low, host.data(), host.size());
}

// Glorot-uniform weights (Keras's default; for a convolution the fans count the kernel
// window) and zero biases, from a counter-based generator so every backend and policy
// starts from the same values.
void init_weights(Backend& backend, const Weights& w, int fan_in, int fan_out, std::uint64_t seed,
                  int layer_id)
{
    if (w.w_master) {
        const float limit = std::sqrt(6.0f / float(fan_in + fan_out));
        init_uniform(backend, w, limit, seed, 0x5EED0000ull + std::uint64_t(layer_id));
    }
    if (w.b_master) {
        backend.fill(*w.b_master, 0.0f);
        if (w.b_low) backend.fill(*w.b_low, 0.0f);
    }
}

std::string detail_tail(const GraphLayer& layer, MathMode math, const Weights& w)
{
    std::string s;
    if (math == MathMode::Reduced && !layer.tensor_core_friendly)
        s += "; " + layer.tensor_core_note;
    if (w.w_master && w.w_master->dtype() == DType::I16)
        s += "; split fp32 master (these bf16 weights + int16 low halves)";
    else if (w.w_low)
        s += "; fp32 master weights";
    return s;
}

} // namespace mixlab
