// The graph-API search for one convolution direction: the operation graph over the
// engine's NHWC / KRSC operands, the configurations a request's math permits, their
// timing, and the run of the one kept.
#include "backends/cuda/conv_graph.h"

#include "backends/cuda/gated_timing.h"
#include "mixlab/error.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace mixlab::cuda {

using namespace conv_search;

namespace {

// cuDNN's (N, C, H, W) dims with the strides of NHWC storage (C fastest).
std::array<std::int64_t, 4> nhwc_strides(std::int64_t c, std::int64_t h, std::int64_t w)
{
    return {h * w * c, 1, w * c, c};
}

// Which engines a request may run, by the numerical notes cuDNN gives each, the rules
// the legacy search applies to a candidate's mathType (conv_search.h math_allowed):
// exact fp32 never on tensor cores (for fp32 data that is TF32); never a down-conversion
// of the inputs. Beyond those, never a reduced-precision reduction: the engine promises
// fp32 accumulation for 16-bit data, and the checks' tolerances assume it.
bool notes_allowed(const graph::EngineConfigInfo& e, DType t, MathMode m)
{
    if (e.has(CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS)) return false;
    if (e.has(CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION)) return false;
    if (fp32_exact(t, m) && e.has(CUDNN_NUMERICAL_NOTE_TENSOR_CORE)) return false;
    return true;
}

// One configuration that finalized into a plan within the workspace limit.
struct Candidate {
    graph::Descriptor plan;
    graph::EngineConfigInfo info;
    std::size_t workspace = 0;
    float ms = 0;
};

const char* op_name(graph::ConvOp op)
{
    switch (op) {
    case graph::ConvOp::Forward: return "forward";
    case graph::ConvOp::BackwardData: return "backward data";
    case graph::ConvOp::BackwardFilter: return "backward filter";
    }
    return "?";
}

} // namespace

std::unique_ptr<GraphConv> GraphConv::search(cudnnHandle_t h, const ConvGeometry& g,
                                             graph::ConvOp op, const Search& s, void* sx, void* sy,
                                             void* sw, void* ws, std::size_t ws_bytes,
                                             std::string* why_not)
{
    if (!s.can_time) {
        *why_not = "no room to time its candidates";
        return nullptr;
    }
    std::vector<Candidate> det, nondet; // by determinism, each in the heuristics' order
    int offered = 0;
    try {
        const cudnnDataType_t dt = cudnn_data_type(s.t, "conv2d");
        const graph::Descriptor x =
            graph::make_tensor(graph::k_uid_x, dt, {g.batch, g.in_c, g.in_h, g.in_w},
                               nhwc_strides(g.in_c, g.in_h, g.in_w), k_alignment, false);
        const graph::Descriptor y =
            graph::make_tensor(graph::k_uid_y, dt, {g.batch, g.out_c, g.out_h, g.out_w},
                               nhwc_strides(g.out_c, g.out_h, g.out_w), k_alignment, false);
        // KRSC weights: (K, C, R, S) dims, C fastest.
        const graph::Descriptor w =
            graph::make_tensor(graph::k_uid_w, dt, {g.out_c, g.in_c, g.kernel_h, g.kernel_w},
                               nhwc_strides(g.in_c, g.kernel_h, g.kernel_w), k_alignment, false);
        const graph::Descriptor conv = graph::make_convolution(g);
        const graph::Descriptor operation =
            graph::make_conv_operation(op, conv, x, w, y, 1.0f, 0.0f);
        const graph::Descriptor op_graph = graph::make_operation_graph(h, operation);
        std::vector<graph::Descriptor> configs = graph::engine_configs(op_graph);
        offered = int(configs.size());
        for (graph::Descriptor& config : configs) {
            if (int(det.size()) >= k_max_timed) break;
            graph::EngineConfigInfo info = graph::describe_config(config);
            if (!notes_allowed(info, s.t, s.m)) continue;
            // Engines compiled at run time (NVRTC) take seconds to finalize, once per plan:
            // a cost the start of every run would pay, and one the legacy API never asks.
            if (info.has(CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION)) continue;
            graph::Descriptor plan = graph::try_make_plan(h, config);
            if (!plan) continue;
            const std::size_t bytes = graph::workspace_bytes(plan);
            if (bytes > s.limit || bytes > ws_bytes) continue;
            auto& list = info.has(CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC) ? nondet : det;
            if (int(list.size()) < k_max_timed)
                list.push_back(Candidate{std::move(plan), std::move(info), bytes, 0.0f});
        }
    } catch (const CudaError& e) {
        // The graph API is a second candidate beside the legacy one: a problem it cannot
        // describe leaves the legacy pick in place rather than ending the run.
        *why_not = e.what();
        return nullptr;
    }
    // The planner's determinism rule (conv_search.h choose): deterministic candidates
    // where there are any, so the same seed gives the same run bit for bit.
    std::vector<Candidate>& cands = det.empty() ? nondet : det;
    if (cands.empty()) {
        *why_not = "none of the " + std::to_string(offered) +
                   " engine configurations offered is acceptable";
        return nullptr;
    }

    const std::int64_t uids[] = {graph::k_uid_x, graph::k_uid_w, graph::k_uid_y};
    void* const pointers[] = {sx, sw, sy};
    const graph::Descriptor pack = graph::make_variant_pack(uids, pointers, 3, ws);
    // The median of k_timed_runs runs of each after a warm-up run (the first launch of a
    // kernel may load its module); a configuration whose run fails is dropped (ms -1).
    const GatedTimes times =
        time_gated(s.stream, int(cands.size()), GatedRuns{1, k_timed_runs}, [&](int i) {
            return graph::try_execute(h, cands[std::size_t(i)].plan, pack) == CUDNN_STATUS_SUCCESS;
        });
    if (!times.timed) {
        *why_not = "its candidates were not timed: " + times.why_not;
        return nullptr;
    }
    Candidate* best = nullptr;
    for (std::size_t i = 0; i < cands.size(); ++i) {
        Candidate& c = cands[i];
        c.ms = times.median_ms[i].value_or(-1.0f);
        if (c.ms >= 0 && (!best || c.ms < best->ms)) best = &c;
    }
    // MIXLAB_CONV_LOG=1: every timed configuration on stderr, as for the legacy search.
    if (std::getenv("MIXLAB_CONV_LOG")) {
        std::fprintf(stderr, "conv graph search %s: %s (%d configurations offered)\n", op_name(op),
                     s.what.c_str(), offered);
        for (const Candidate& c : cands)
            std::fprintf(stderr, "conv graph candidate: %s %.3f ms workspace %zu%s\n",
                         c.info.text().c_str(), double(c.ms), c.workspace,
                         &c == best ? " <- chosen" : "");
    }
    if (!best) {
        *why_not = "every acceptable engine configuration failed to run";
        return nullptr;
    }
    std::unique_ptr<GraphConv> out(new GraphConv());
    out->m_plan = std::move(best->plan);
    out->m_name = "graph " + best->info.text();
    Choice& c = out->m_choice;
    c.direct = false;
    c.algo = int(best->info.engine);
    c.math =
        best->info.has(CUDNN_NUMERICAL_NOTE_TENSOR_CORE) ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH;
    c.memory = best->workspace;
    c.ms = best->ms;
    c.timed = true;
    c.deterministic = !best->info.has(CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC);
    return out;
}

bool GraphConv::aligned(const void* x, const void* w, const void* y)
{
    const auto ok = [](const void* p) {
        return reinterpret_cast<std::uintptr_t>(p) % std::uintptr_t(k_alignment) == 0;
    };
    return ok(x) && ok(w) && ok(y);
}

void GraphConv::run(cudnnHandle_t h, const void* x, const void* w, const void* y,
                    const DeviceMemory& ws) const
{
    const std::array<const void*, 4> now{x, w, y, ws.get()};
    if (!m_pack || now != m_pack_pointers) {
        const std::int64_t uids[] = {graph::k_uid_x, graph::k_uid_w, graph::k_uid_y};
        // cuDNN takes non-const pointers for every operand; the inputs are only read.
        void* const pointers[] = {const_cast<void*>(x), const_cast<void*>(w), const_cast<void*>(y)};
        m_pack = graph::make_variant_pack(uids, pointers, 3, ws.get());
        m_pack_pointers = now;
    }
    graph::execute(h, m_plan, m_pack);
}

} // namespace mixlab::cuda
