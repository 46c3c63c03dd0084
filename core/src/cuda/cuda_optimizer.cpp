// CUDA parameter tables and the optimizer step. prepare_params groups the slots by dtype
// layout and uploads, once, a tensor table and a chunk list per group; optimizer_step is
// then a memset and three kinds of launch, with no host sync.
#include "cuda/cuda_backend.h"

#include "cuda/cuda_check.h"
#include "cuda/optimizer.cuh"

#include <algorithm>
#include <string>
#include <vector>

namespace mixlab::cuda {

namespace {

struct TableGroup {
    OptLayout layout;
    DeviceMemory tensors, chunks;
    int n_chunks = 0;
};

class CudaParamTable final : public ParamTable {
public:
    std::vector<TableGroup> groups;
    bool all_state1 = true, all_state2 = true;
    std::size_t slots = 0;
};

std::string layout_text(const OptLayout& l)
{
    return "master " + std::string(dtype_name(l.master)) + ", grad " +
           std::string(dtype_name(l.grad)) + ", low " +
           (l.has_low ? std::string(dtype_name(l.low)) : std::string("none"));
}

} // namespace

std::unique_ptr<ParamTable> CudaBackend::prepare_params(const std::vector<ParamSlot>& slots)
{
    const char* op = "prepare_params";
    auto table = std::make_unique<CudaParamTable>();
    table->slots = slots.size();
    struct HostGroup {
        OptLayout layout;
        std::vector<OptTensor> tensors;
        std::vector<OptChunk> chunks;
    };
    std::vector<HostGroup> host;

    for (std::size_t i = 0; i < slots.size(); ++i) {
        const ParamSlot& s = slots[i];
        const std::string which = "slot " + std::to_string(i) + ": ";
        require(s.master && s.grad, op, which + "master and grad must be set");
        const std::size_t n = s.master->count();
        require_floating(*s.master, n, op, "master");
        require_floating(*s.grad, n, op, "grad");
        if (s.low)
            require_floating(*s.low, n, op, "low");
        for (const Buffer* st : {s.state1, s.state2})
            if (st) {
                require_floating(*st, n, op, "state");
                require(st->dtype() == s.master->dtype(), op,
                        which + "optimizer state must have the master's dtype");
            }
        OptLayout l;
        l.master = s.master->dtype();
        l.grad = s.grad->dtype();
        l.has_low = s.low != nullptr;
        l.low = s.low ? s.low->dtype() : DType::F16;
        require(optimizer_layout_supported(l), op,
                which + "no optimizer kernel for " + layout_text(l) +
                    " (supported: fp32 master and grads with an optional fp16/bf16 copy, or "
                    "16-bit weights and grads of one dtype with no copy)");
        table->all_state1 = table->all_state1 && s.state1;
        table->all_state2 = table->all_state2 && s.state2;

        HostGroup* g = nullptr;
        for (auto& h : host)
            if (h.layout == l)
                g = &h;
        if (!g) {
            host.push_back(HostGroup{l, {}, {}});
            g = &host.back();
        }
        const auto t = std::int32_t(g->tensors.size());
        g->tensors.push_back(OptTensor{s.master->data(), s.grad->data(),
                                       s.low ? s.low->data() : nullptr,
                                       s.state1 ? s.state1->data() : nullptr,
                                       s.state2 ? s.state2->data() : nullptr, std::int64_t(n)});
        for (std::int64_t start = 0; start < std::int64_t(n); start += k_opt_chunk) {
            const std::int64_t len = std::min<std::int64_t>(k_opt_chunk, std::int64_t(n) - start);
            g->chunks.push_back(OptChunk{t, std::int32_t(len), start});
        }
    }

    for (HostGroup& h : host) {
        TableGroup g;
        g.layout = h.layout;
        g.n_chunks = int(h.chunks.size());
        g.tensors = DeviceMemory(h.tensors.size() * sizeof(OptTensor), "the optimizer's tensor table");
        g.chunks = DeviceMemory(h.chunks.size() * sizeof(OptChunk), "the optimizer's chunk list");
        MIXLAB_CUDA_CHECK(cudaMemcpyAsync(g.tensors.get(), h.tensors.data(), g.tensors.bytes(),
                                          cudaMemcpyHostToDevice, stream()));
        if (g.chunks.bytes())
            MIXLAB_CUDA_CHECK(cudaMemcpyAsync(g.chunks.get(), h.chunks.data(), g.chunks.bytes(),
                                              cudaMemcpyHostToDevice, stream()));
        table->groups.push_back(std::move(g));
    }
    // The host vectors die here; a one-off sync at setup keeps the copies valid.
    MIXLAB_CUDA_CHECK(cudaStreamSynchronize(stream()));
    return table;
}

void CudaBackend::optimizer_step(ParamTable& table, const OptimizerConfig& opt,
                                 const ScalerParams& scaling, Buffer& scaler, Buffer& record,
                                 std::size_t record_offset)
{
    const char* op = "optimizer_step";
    auto* t = dynamic_cast<CudaParamTable*>(&table);
    require(t != nullptr, op, "the parameter table was prepared by another backend");
    require(scaling.mode != LossScaleMode::Default, op, "the loss-scale mode must be resolved");
    require(scaler.dtype() == DType::F32 && scaler.count() >= k_scaler_fields, op,
            "scaler must be float32 x " + std::to_string(k_scaler_fields));
    require(record.dtype() == DType::F32 && record.count() >= record_offset + k_record_fields, op,
            "record must be float32 with room for the fields at offset " +
                std::to_string(record_offset));
    const bool adam = opt.type != OptimizerType::SGD;
    if (t->slots > 0) {
        if (adam)
            require(t->all_state1 && t->all_state2, op, "Adam needs state1 (m) and state2 (v) per slot");
        else
            require(opt.momentum == 0.0f || t->all_state1, op, "SGD with momentum needs state1");
    }

    float* sc = scaler.as<float>();
    MIXLAB_CUDA_CHECK(cudaMemsetAsync(sc + k_found_inf, 0, sizeof(float), stream()));
    for (const TableGroup& g : t->groups)
        launch_found_inf(g.layout.grad, g.tensors.as<OptTensor>(), g.chunks.as<OptChunk>(),
                         g.n_chunks, sc, stream());

    OptArgs args;
    args.type = opt.type;
    args.lr = opt.lr;
    args.momentum = opt.momentum;
    args.weight_decay = opt.weight_decay;
    args.beta1 = opt.beta1;
    args.beta2 = opt.beta2;
    args.eps = opt.eps;
    args.nesterov = opt.nesterov;
    args.scaling_on = scaling.mode != LossScaleMode::None;
    for (const TableGroup& g : t->groups)
        launch_optimizer_update(g.layout, g.tensors.as<OptTensor>(), g.chunks.as<OptChunk>(),
                                g.n_chunks, args, sc, stream());

    launch_scaler_update(scaling, sc, record.as<float>() + record_offset, stream());
}

} // namespace mixlab::cuda
