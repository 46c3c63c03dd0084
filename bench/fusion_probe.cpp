// mixlab-fusion-probe: which of cuDNN's fusion graphs have engines on this GPU for W2's
// (ResNet-18 on 32x32 images) 3x3 convolutions, and what the fastest of each costs
// against the convolution alone: the measurement issue 16's fusion work starts from.
//
// For each geometry and 16-bit dtype it builds, through the graph API builders the
// engine uses (backends/cuda/cudnn_graph.h), the graphs a fused ResNet step would run:
//   fwd           conv forward                      (what the engine runs today)
//   fwd+stats     conv forward, GenStats on its output (batch norm's sums in the epilogue)
//   sbr+fwd+stats the previous batch norm's scale, bias and ReLU applied to the conv's
//                 input on the fly, then conv forward and GenStats (ConvBNfprop)
//   dgrad         conv backward data
//   dgrad+drelu   backward data with ReLU's backward in its epilogue
//   wgrad         conv backward filter
//   sbr+wgrad     backward filter on the scale-bias-ReLU of its input, computed on the fly
// and asks the heuristics for configurations, finalizes each (runtime-compiled ones
// too, timing their compile), times every plan with the planners' gated timing and
// prints a table: configurations offered, plans made, runtime-compiled plans, the best
// time and engine. What fusion would save is then the fused time against the parts' sum
// (the convolution here plus the copy-bandwidth pass over its output that our batch-norm
// kernels make: printed as bytes).
//
// Usage: mixlab-fusion-probe [--batch N] [--max-configs N]. Needs a GPU; prints to stdout.
#include "backends/cuda/cudnn_graph.h"
#include "backends/cuda/gated_timing.h"
#include "mixlab/error.h"

#include <cuda_runtime.h>
#include <cudnn.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

using namespace mixlab;
using namespace mixlab::cuda;

namespace {

struct Geometry {
    std::int64_t n, c, hw; // batch, channels in = out, height = width; 3x3, pad 1, stride 1
};

enum class Pattern { Fwd, FwdStats, SbrFwdStats, Dgrad, DgradDrelu, Wgrad, SbrWgrad };
constexpr Pattern k_patterns[] = {Pattern::Fwd,     Pattern::FwdStats,   Pattern::SbrFwdStats,
                                  Pattern::Dgrad,   Pattern::DgradDrelu, Pattern::Wgrad,
                                  Pattern::SbrWgrad};

const char* pattern_name(Pattern p)
{
    switch (p) {
    case Pattern::Fwd: return "fwd";
    case Pattern::FwdStats: return "fwd+stats";
    case Pattern::SbrFwdStats: return "sbr+fwd+stats";
    case Pattern::Dgrad: return "dgrad";
    case Pattern::DgradDrelu: return "dgrad+drelu";
    case Pattern::Wgrad: return "wgrad";
    case Pattern::SbrWgrad: return "sbr+wgrad";
    }
    return "?";
}

// Unique ids of every tensor a pattern may have; the virtual ones get ids too.
enum Uid : std::int64_t {
    X = 1,  // the convolution's input (or the pre-norm activation for sbr)
    W,      // weights (dw for wgrad)
    Y,      // output (dy for the backward directions)
    SUM,    // GenStats' per-channel sum
    SQSUM,  // and sum of squares
    SCALE,  // the batch norm's per-channel scale and bias (sbr)
    BIAS,   //
    RELU_X, // ReLU's saved input (dgrad+drelu)
    DX,     // dgrad's output
    V_SCALED,
    V_BIASED,
    V_RELU,
    V_DX, // virtual intermediates
};

std::array<std::int64_t, 4> nhwc(std::int64_t c, std::int64_t h, std::int64_t w)
{
    return {h * w * c, 1, w * c, c};
}

struct Built {
    std::vector<graph::Descriptor> keep; // tensors and operations the graph refers to
    std::vector<const graph::Descriptor*> ops;
    std::vector<std::int64_t> uids; // real (non-virtual) tensors to bind
    std::size_t output_bytes = 0;   // the conv's output: what a separate pass would re-read
};

Built build(Pattern p, const Geometry& g, cudnnDataType_t dt, std::size_t elem)
{
    Built b;
    const auto tensor = [&](std::int64_t uid, cudnnDataType_t t, std::array<std::int64_t, 4> dims,
                            std::array<std::int64_t, 4> st,
                            bool is_virtual) -> const graph::Descriptor& {
        b.keep.push_back(graph::make_tensor(uid, t, dims, st, 16, is_virtual));
        if (!is_virtual) b.uids.push_back(uid);
        return b.keep.back();
    };
    b.keep.reserve(32);
    const std::array<std::int64_t, 4> act{g.n, g.c, g.hw, g.hw};
    const std::array<std::int64_t, 4> act_st = nhwc(g.c, g.hw, g.hw);
    const std::array<std::int64_t, 4> wdims{g.c, g.c, 3, 3};
    const std::array<std::int64_t, 4> wst = nhwc(g.c, 3, 3);
    const std::array<std::int64_t, 4> chan{1, g.c, 1, 1};
    const std::array<std::int64_t, 4> chan_st{g.c, 1, g.c, g.c};
    ConvGeometry cg{};
    cg.batch = int(g.n);
    cg.in_c = cg.out_c = int(g.c);
    cg.in_h = cg.in_w = cg.out_h = cg.out_w = int(g.hw);
    cg.kernel_h = cg.kernel_w = 3;
    cg.pad_h = cg.pad_w = 1;
    cg.stride_h = cg.stride_w = 1;
    b.keep.push_back(graph::make_convolution(cg));
    const graph::Descriptor& conv = b.keep.back();
    const auto op = [&](graph::Descriptor d) {
        b.keep.push_back(std::move(d));
        b.ops.push_back(&b.keep.back());
    };
    b.output_bytes = std::size_t(g.n * g.c * g.hw * g.hw) * elem;

    const bool sbr = p == Pattern::SbrFwdStats || p == Pattern::SbrWgrad;
    const graph::Descriptor* conv_x = nullptr;
    if (sbr) {
        const graph::Descriptor& x = tensor(X, dt, act, act_st, false);
        const graph::Descriptor& scale = tensor(SCALE, dt, chan, chan_st, false);
        const graph::Descriptor& bias = tensor(BIAS, dt, chan, chan_st, false);
        const graph::Descriptor& scaled = tensor(V_SCALED, CUDNN_DATA_FLOAT, act, act_st, true);
        const graph::Descriptor& biased = tensor(V_BIASED, CUDNN_DATA_FLOAT, act, act_st, true);
        // The convolution reads its input in the data type (as the engine stores it).
        const graph::Descriptor& relu = tensor(V_RELU, dt, act, act_st, true);
        op(graph::make_pointwise_operation(CUDNN_POINTWISE_MUL, x, &scale, scaled));
        op(graph::make_pointwise_operation(CUDNN_POINTWISE_ADD, scaled, &bias, biased));
        op(graph::make_pointwise_operation(CUDNN_POINTWISE_RELU_FWD, biased, nullptr, relu));
        conv_x = &relu;
    } else if (p != Pattern::Dgrad && p != Pattern::DgradDrelu) {
        conv_x = &tensor(X, dt, act, act_st, false);
    }

    switch (p) {
    case Pattern::Fwd:
    case Pattern::FwdStats:
    case Pattern::SbrFwdStats: {
        const graph::Descriptor& w = tensor(W, dt, wdims, wst, false);
        const graph::Descriptor& y = tensor(Y, dt, act, act_st, false);
        op(graph::make_conv_operation(graph::ConvOp::Forward, conv, *conv_x, w, y, 1, 0));
        if (p != Pattern::Fwd) {
            const graph::Descriptor& sum = tensor(SUM, CUDNN_DATA_FLOAT, chan, chan_st, false);
            const graph::Descriptor& sq = tensor(SQSUM, CUDNN_DATA_FLOAT, chan, chan_st, false);
            op(graph::make_genstats_operation(y, sum, sq));
        }
        break;
    }
    case Pattern::Dgrad:
    case Pattern::DgradDrelu: {
        const graph::Descriptor& w = tensor(W, dt, wdims, wst, false);
        const graph::Descriptor& dy = tensor(Y, dt, act, act_st, false);
        if (p == Pattern::Dgrad) {
            const graph::Descriptor& dx = tensor(DX, dt, act, act_st, false);
            op(graph::make_conv_operation(graph::ConvOp::BackwardData, conv, dx, w, dy, 1, 0));
        } else {
            const graph::Descriptor& vdx = tensor(V_DX, CUDNN_DATA_FLOAT, act, act_st, true);
            const graph::Descriptor& rx = tensor(RELU_X, dt, act, act_st, false);
            const graph::Descriptor& dx = tensor(DX, dt, act, act_st, false);
            op(graph::make_conv_operation(graph::ConvOp::BackwardData, conv, vdx, w, dy, 1, 0));
            op(graph::make_relu_backward_operation(vdx, rx, dx));
        }
        break;
    }
    case Pattern::Wgrad:
    case Pattern::SbrWgrad: {
        const graph::Descriptor& dw = tensor(W, dt, wdims, wst, false);
        const graph::Descriptor& dy = tensor(Y, dt, act, act_st, false);
        op(graph::make_conv_operation(graph::ConvOp::BackwardFilter, conv, *conv_x, dw, dy, 1, 0));
        break;
    }
    }
    return b;
}

struct Result {
    int offered = 0, plans = 0, rtc = 0;
    std::optional<float> best_ms;
    std::string best;
    double best_compile_ms = 0;
    std::string error;
};

Result probe(cudnnHandle_t h, cudaStream_t stream, Pattern p, const Geometry& g, cudnnDataType_t dt,
             std::size_t elem, int max_configs, void* arena, std::size_t arena_bytes, void* ws,
             std::size_t ws_bytes)
{
    Result r;
    std::vector<graph::Descriptor> plans;
    std::vector<std::string> names;
    std::vector<double> compile_ms;
    Built b;
    try {
        b = build(p, g, dt, elem);
        const graph::Descriptor op_graph = graph::make_operation_graph(h, b.ops);
        std::vector<graph::Descriptor> configs = graph::engine_configs(op_graph);
        r.offered = int(configs.size());
        for (graph::Descriptor& config : configs) {
            if (int(plans.size()) >= max_configs) break;
            const graph::EngineConfigInfo info = graph::describe_config(config);
            // The engine's rule (conv_graph.cpp): fp32 accumulation, inputs as given.
            if (info.has(CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS) ||
                info.has(CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION))
                continue;
            const auto t0 = std::chrono::steady_clock::now();
            graph::Descriptor plan = graph::try_make_plan(h, config);
            const double ms =
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                    .count();
            if (!plan || graph::workspace_bytes(plan) > ws_bytes) continue;
            const bool rtc = info.has(CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION);
            r.rtc += rtc ? 1 : 0;
            plans.push_back(std::move(plan));
            names.push_back(info.text() + (rtc ? " rtc" : ""));
            compile_ms.push_back(ms);
        }
    } catch (const std::exception& e) {
        r.error = e.what();
        return r;
    }
    r.plans = int(plans.size());
    if (plans.empty()) return r;

    // Every real tensor gets its own slice of the arena (filled once by main).
    std::vector<void*> pointers;
    std::size_t offset = 0;
    const std::size_t slice = arena_bytes / 8;
    for (std::size_t i = 0; i < b.uids.size(); ++i, offset += slice)
        pointers.push_back(static_cast<char*>(arena) + offset);
    const graph::Descriptor pack =
        graph::make_variant_pack(b.uids.data(), pointers.data(), int(b.uids.size()), ws);
    const GatedTimes times = time_gated(stream, int(plans.size()), GatedRuns{2, 10}, [&](int i) {
        return graph::try_execute(h, plans[std::size_t(i)], pack) == CUDNN_STATUS_SUCCESS;
    });
    if (!times.timed) {
        r.error = times.why_not;
        return r;
    }
    for (std::size_t i = 0; i < plans.size(); ++i) {
        const std::optional<float> ms = times.median_ms[i];
        if (ms && (!r.best_ms || *ms < *r.best_ms)) {
            r.best_ms = ms;
            r.best = names[i];
            r.best_compile_ms = compile_ms[i];
        }
    }
    return r;
}

} // namespace

int main(int argc, char** argv)
{
    std::int64_t batch = 128;
    int max_configs = 24;
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--batch") && i + 1 < argc)
            batch = std::atoll(argv[++i]);
        else if (!std::strcmp(argv[i], "--max-configs") && i + 1 < argc)
            max_configs = std::atoi(argv[++i]);
        else {
            std::fprintf(stderr, "usage: mixlab-fusion-probe [--batch N] [--max-configs N]\n");
            return 2;
        }
    }
    if (batch < 1 || max_configs < 1) {
        std::fprintf(stderr, "mixlab-fusion-probe: --batch and --max-configs must be >= 1\n");
        return 2;
    }
    try {
        cudnnHandle_t h = nullptr;
        if (cudnnCreate(&h) != CUDNN_STATUS_SUCCESS) {
            std::fprintf(stderr, "mixlab-fusion-probe: cudnnCreate failed (no GPU?)\n");
            return 1;
        }
        cudaStream_t stream = nullptr;
        cudaStreamCreate(&stream);
        cudnnSetStream(h, stream);
        // W2's four stages at the batch: the largest tensor is batch x 64 x 32 x 32.
        const Geometry geometries[] = {
            {batch, 64, 32}, {batch, 128, 16}, {batch, 256, 8}, {batch, 512, 4}};
        const std::size_t slice = std::size_t(batch) * 64 * 32 * 32 * 4 + (1 << 20);
        const std::size_t arena_bytes = slice * 8, ws_bytes = std::size_t(256) << 20;
        void *arena = nullptr, *ws = nullptr;
        if (cudaMalloc(&arena, arena_bytes) != cudaSuccess ||
            cudaMalloc(&ws, ws_bytes) != cudaSuccess) {
            std::fprintf(stderr, "mixlab-fusion-probe: out of device memory\n");
            return 1;
        }
        // 0x3030 as fp16 is 0.13, as bf16 6.4e-10: finite, non-zero, the same everywhere.
        cudaMemset(arena, 0x30, arena_bytes);
        cudaDeviceSynchronize();
        std::printf("cuDNN %zu, batch %lld, up to %d configurations a graph\n", cudnnGetVersion(),
                    static_cast<long long>(batch), max_configs);
        std::printf("%-5s %-12s %-14s %7s %5s %4s %9s %10s  %s\n", "dtype", "geometry", "pattern",
                    "offered", "plans", "rtc", "best_ms", "compile_ms", "best engine");
        for (const auto& [dt, elem, dname] :
             {std::tuple{CUDNN_DATA_HALF, std::size_t(2), "fp16"},
              std::tuple{CUDNN_DATA_BFLOAT16, std::size_t(2), "bf16"}}) {
            for (const Geometry& g : geometries) {
                char geo[32];
                std::snprintf(geo, sizeof geo, "%lldx%lld^2", static_cast<long long>(g.c),
                              static_cast<long long>(g.hw));
                for (Pattern p : k_patterns) {
                    const Result r = probe(h, stream, p, g, dt, elem, max_configs, arena,
                                           arena_bytes, ws, ws_bytes);
                    if (!r.error.empty()) {
                        std::printf("%-5s %-12s %-14s not built: %s\n", dname, geo, pattern_name(p),
                                    r.error.c_str());
                        continue;
                    }
                    if (r.best_ms)
                        std::printf("%-5s %-12s %-14s %7d %5d %4d %9.4f %10.1f  %s\n", dname, geo,
                                    pattern_name(p), r.offered, r.plans, r.rtc, double(*r.best_ms),
                                    r.best_compile_ms, r.best.c_str());
                    else
                        std::printf("%-5s %-12s %-14s %7d %5d %4d %9s %10s  -\n", dname, geo,
                                    pattern_name(p), r.offered, r.plans, r.rtc, "none", "-");
                    std::fflush(stdout);
                }
                // What a separate pass over the output costs at the copy bandwidth
                // (read once: the statistics; read + write: a ReLU backward).
                std::printf("%-5s %-12s output %.2f MB\n", dname, geo,
                            double(std::size_t(g.n * g.c * g.hw * g.hw) * elem) / 1e6);
            }
        }
        cudaFree(arena);
        cudaFree(ws);
        cudnnDestroy(h);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "mixlab-fusion-probe: %s\n", e.what());
        return 1;
    }
    return 0;
}
