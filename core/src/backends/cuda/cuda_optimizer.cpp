// CUDA parameter tables and the optimizer step. prepare_params groups the slots by dtype
// layout and uploads, once, a tensor table and a chunk list per group; optimizer_step is
// then a memset and three kinds of launch (four with gradient clipping), with no host sync.
#include "backends/cuda/cuda_backend.h"

#include "backends/backend_validate.h"
#include "backends/cuda/cuda_check.h"
#include "backends/cuda/optimizer.cuh"

#include <algorithm>
#include <string_view>
#include <vector>

namespace mixlab::cuda {

namespace {

struct TableGroup {
    OptLayout layout;
    DeviceMemory tensors, chunks;
    int n_chunks = 0;
    int chunk_offset = 0; // where this group's chunks start among the table's
    bool fp8 = false;     // a tensor with mixed_fp8's quantized copy among them
};

class CudaParamTable final : public ParamTable {
public:
    std::vector<TableGroup> groups;
    validate::SlotStates states;
    // Gradient clipping: a double per chunk of every group, then {norm, factor}. Made
    // here for every table (a few KB), so that no step allocates whatever its config.
    DeviceMemory clip_partials, clip_result;
    int n_chunks = 0;
};

} // namespace

std::unique_ptr<ParamTable> CudaBackend::prepare_params(const std::vector<ParamSlot>& slots)
{
    const char* op = "prepare_params";
    auto table = std::make_unique<CudaParamTable>();
    table->states = validate::param_slots(k_name, slots);
    struct HostGroup {
        OptLayout layout;
        std::vector<OptTensor> tensors;
        std::vector<OptChunk> chunks;
        bool fp8 = false;
    };
    std::vector<HostGroup> host;

    for (std::size_t i = 0; i < slots.size(); ++i) {
        const ParamSlot& s = slots[i];
        const std::size_t n = s.master->count();
        OptLayout l;
        l.master = s.master->dtype();
        l.grad = s.grad->dtype();
        l.has_low = s.low != nullptr;
        l.low = s.low ? s.low->dtype() : DType::F16;
        require(optimizer_layout_supported(l), op, "slot ", i, ": no optimizer kernel for master ",
                l.master, ", grad ", l.grad, ", low ",
                l.has_low ? dtype_name(l.low) : std::string_view("none"),
                " (supported: fp32 master and grads with an optional fp16/bf16 copy, a "
                "split master (int16 low halves, bf16 high halves, fp32 grads), or "
                "16-bit weights and grads of one dtype with no copy)");
        HostGroup* g = nullptr;
        for (auto& h : host)
            if (h.layout == l) g = &h;
        if (!g) {
            host.push_back(HostGroup{l, {}, {}, false});
            g = &host.back();
        }
        const auto t = std::int32_t(g->tensors.size());
        const Fp8Weights& f = s.fp8;
        g->fp8 = g->fp8 || f.w8;
        g->tensors.push_back(OptTensor{
            s.master->data(), s.grad->data(), s.low ? s.low->data() : nullptr,
            s.state1 ? s.state1->data() : nullptr, s.state2 ? s.state2->data() : nullptr,
            std::int64_t(n), f.w8 ? static_cast<std::uint8_t*>(f.w8->data()) : nullptr,
            f.w8 ? f.meta->as<float>() + f.block * fp8_block_floats(f.history_len) : nullptr,
            std::int32_t(f.cols), std::int32_t(fp8_padded(f.cols))});
        for (std::int64_t start = 0; start < std::int64_t(n); start += k_opt_chunk) {
            const std::int64_t len = std::min<std::int64_t>(k_opt_chunk, std::int64_t(n) - start);
            g->chunks.push_back(OptChunk{t, std::int32_t(len), start});
        }
    }

    for (HostGroup& h : host) {
        TableGroup g;
        g.layout = h.layout;
        g.fp8 = h.fp8;
        g.n_chunks = int(h.chunks.size());
        g.chunk_offset = table->n_chunks;
        table->n_chunks += g.n_chunks;
        g.tensors =
            DeviceMemory(h.tensors.size() * sizeof(OptTensor), "the optimizer's tensor table");
        g.chunks = DeviceMemory(h.chunks.size() * sizeof(OptChunk), "the optimizer's chunk list");
        MIXLAB_CUDA_CHECK(cudaMemcpyAsync(g.tensors.get(), h.tensors.data(), g.tensors.bytes(),
                                          cudaMemcpyHostToDevice, stream()));
        if (g.chunks.bytes())
            MIXLAB_CUDA_CHECK(cudaMemcpyAsync(g.chunks.get(), h.chunks.data(), g.chunks.bytes(),
                                              cudaMemcpyHostToDevice, stream()));
        table->groups.push_back(std::move(g));
    }
    table->clip_partials = DeviceMemory(std::size_t(std::max(table->n_chunks, 1)) * sizeof(double),
                                        "the gradient-clipping partial sums");
    table->clip_result = DeviceMemory(2 * sizeof(float), "the gradient norm");
    // The host vectors die here; a one-off sync at setup keeps the copies valid.
    MIXLAB_CUDA_CHECK(cudaStreamSynchronize(stream()));
    return table;
}

void CudaBackend::optimizer_step(ParamTable& table, const OptimizerConfig& opt,
                                 const ScalerParams& scaling, Buffer& scaler, Buffer& record,
                                 std::size_t record_offset)
{
    auto* t = dynamic_cast<CudaParamTable*>(&table);
    require(t != nullptr, "optimizer_step", "the parameter table was prepared by another backend");
    validate::optimizer_step(k_name, opt, scaling, t->states, scaler, record, record_offset);

    float* sc = scaler.as<float>();
    const bool scaling_on = scaling.mode != LossScaleMode::None;
    // Clipping off launches exactly what ran before it existed: no squares, no norm kernel.
    const bool clipping = opt.clip_norm > 0.0f;
    double* partials = clipping ? t->clip_partials.as<double>() : nullptr;
    // Without loss scaling or clipping the update runs whatever the gradients hold, so
    // nothing waits on the check: the update flags a non-finite gradient for the step's
    // record itself, and a pass over every gradient is saved (bf16, tf32 and fp32 runs).
    // MIXLAB_SEPARATE_INF_CHECK=1 keeps the pass (for A/B runs).
    const bool check_in_update = !scaling_on && !clipping && !m_separate_inf_check;
    MIXLAB_CUDA_CHECK(cudaMemsetAsync(sc + k_found_inf, 0, sizeof(float), stream()));
    for (const TableGroup& g : t->groups)
        if (!check_in_update)
            launch_found_inf(g.layout.grad, g.tensors.as<OptTensor>(), g.chunks.as<OptChunk>(),
                             g.n_chunks, sc, scaling_on,
                             partials ? partials + g.chunk_offset : nullptr, stream());
    float* clip = clipping ? t->clip_result.as<float>() : nullptr;
    if (clipping) launch_grad_norm(partials, t->n_chunks, opt.clip_norm, sc, clip, stream());
    if (m_inf_check_marker) m_inf_check_marker->record();

    OptArgs args;
    args.type = opt.type;
    args.lr = opt.lr;
    args.momentum = opt.momentum;
    args.weight_decay = opt.weight_decay;
    args.beta1 = opt.beta1;
    args.beta2 = opt.beta2;
    args.eps = opt.eps;
    args.nesterov = opt.nesterov;
    args.scaling_on = scaling_on;
    args.clip = clip;
    args.found_inf = check_in_update ? sc + k_found_inf : nullptr;
    for (const TableGroup& g : t->groups) {
        args.fp8 = g.fp8;
        launch_optimizer_update(g.layout, g.tensors.as<OptTensor>(), g.chunks.as<OptChunk>(),
                                g.n_chunks, args, sc, stream());
    }

    launch_scaler_update(scaling, sc, record.as<float>() + record_offset, clip, stream());
}

} // namespace mixlab::cuda
