// Convolutions through cuDNN over NHWC tensors with KRSC (= cuDNN's NHWC) filters. One
// plan per (geometry, dtype, math): descriptors plus the forward, backward-data and
// backward-filter algorithms, chosen once by timing cuDNN's candidates on scratch
// buffers. A direction may run on copies of its operands in another form (conv_route.h:
// NCHW for fp32, channels padded to 8 for a 16-bit stem) where that, copies included,
// times faster. Every plan shares one workspace, grown only while planning, so a training
// step never allocates. A direction cuDNN has no algorithm for runs a direct kernel.
// Stride-1 backward data may run as a forward convolution on flipped weights when that
// is faster or deterministic where cuDNN's own backward-data algorithms are not. Each
// direction's NHWC pick is the faster of the legacy API's (cudnnFind*Ex) and the graph
// API's (conv_graph.h: every engine configuration the heuristics offer, timed).
#pragma once
#include "backends/cuda/conv_graph.h"
#include "backends/cuda/conv_route.h"
#include "backends/cuda/conv_report.h"
#include "backends/cuda/cudnn_handles.h"
#include "backends/cuda/device_memory.h"

#include <cuda_runtime.h>

#include <cstddef>
#include <memory>
#include <vector>

namespace mixlab::cuda {

// Backward data as a forward convolution on flipped weights, by MIXLAB_CONV_BWD_AS_FWD:
// unset, where the plan's timings favour it; 1, wherever valid; 0, never (for A/B runs).
enum class BwdAsFwd { Auto, Force, Off };
// The NCHW route, by MIXLAB_CONV_LAYOUT: unset, considered for fp32 data and taken per
// direction where its timing wins; nchw, taken wherever cuDNN has an NCHW algorithm (any
// dtype; for checks); nhwc, never (for A/B runs).
enum class ConvLayout { Auto, Nchw, Nhwc };
// The channel-padded route, by MIXLAB_CONV_PAD_CHANNELS: unset, considered for 16-bit data
// whose input channels are not a multiple of 8; 1, taken wherever they are not (checks);
// 0, never.
enum class PadChannels { Auto, Force, Off };
// Which cuDNN API runs the NHWC directions, by MIXLAB_CONV_API: auto (unset), the faster
// per direction; graph, the graph API's pick wherever it has one, and no route unless
// one is forced too (for checks); legacy, never the graph API (for A/B runs).
enum class ConvApi { Auto, Graph, Legacy };

// What runs one direction of a plan, resolved once when the plan is made.
enum class ConvRun {
    Direct,    // our direct kernel (conv_direct.cuh): cuDNN offered nothing acceptable
    Legacy,    // the legacy API's NHWC algorithm (cudnnFind*Ex's pick)
    AsForward, // backward data only: a forward convolution on flipped weights
    Graph,     // the graph API's pick (conv_graph.h)
    Route,     // cuDNN on copies of the operands in another form (conv_route.h)
};

struct ConvDirection {
    ConvRun run = ConvRun::Legacy;
    // Where run is Graph: what runs for operands its plan was not made for (not 16-byte
    // aligned), the legacy API's path (Direct, Legacy or AsForward).
    ConvRun unaligned = ConvRun::Legacy;
    ConvRun on(bool aligned) const { return run == ConvRun::Graph && !aligned ? unaligned : run; }
    // Whether `k` can run, for either operands' alignment (its buffers must exist).
    bool may_run(ConvRun k) const { return run == k || (run == ConvRun::Graph && unaligned == k); }
};

class CudnnConv {
public:
    explicit CudnnConv(cudaStream_t stream);
    CudnnConv(const CudnnConv&) = delete;
    CudnnConv& operator=(const CudnnConv&) = delete;

    // Plans (or finds the cached plan); may synchronise the stream and allocate.
    ConvPlanInfo prepare(const ConvGeometry& g, DType t, MathMode math);
    void forward(const ConvGeometry& g, DType t, MathMode math, const void* x, const void* w,
                 void* y);
    void backward_data(const ConvGeometry& g, DType t, MathMode math, const void* dy, const void* w,
                       void* dx);
    void backward_filter(const ConvGeometry& g, DType t, MathMode math, const void* x,
                         const void* dy, void* dw);
    std::vector<ConvPlanRecord> plans() const;
    // The backend's one cuDNN handle, bound to its stream and created on first use (MLP
    // runs never load cuDNN); the LSTM plans (cuda_lstm.cpp) run on it too.
    cudnnHandle_t handle();

    // The largest workspace one algorithm may ask for; candidates needing more are skipped.
    // 512 MiB: fp32 implicit_precomp_gemm on 64 channels at batch 512 asks for 268 MB.
    static constexpr std::size_t k_max_workspace_bytes = std::size_t(512) << 20;

private:
    struct Plan {
        TensorDesc x, y;
        FilterDesc w;
        // One descriptor per direction: each carries the math type its algorithm needs.
        ConvDesc fwd, bwd_data, bwd_filter;
        // What runs each direction.
        ConvDirection fwd_run, bwd_data_run, bwd_filter_run;
        // Backward data as a forward convolution of dy with the flipped weights (in_c
        // outputs, out_c inputs, padding kernel-1-pad), where it may run (AsForward).
        FilterDesc w_flipped;
        ConvDesc bwd_as_fwd;
        cudnnConvolutionFwdAlgo_t bwd_as_fwd_algo{};
        BwdAsFwd as_fwd_mode = BwdAsFwd::Auto; // MIXLAB_CONV_BWD_AS_FWD when planned (in the key)
        cudnnConvolutionFwdAlgo_t fwd_algo{};
        cudnnConvolutionBwdDataAlgo_t bwd_data_algo{};
        cudnnConvolutionBwdFilterAlgo_t bwd_filter_algo{};
        std::size_t fwd_ws = 0, bwd_data_ws = 0, bwd_filter_ws = 0;
        // The route of the directions that run on copies of their operands (Route).
        std::unique_ptr<ConvRoute> route;
        // The graph API's picks of the directions that run them (Graph; operands it was
        // not planned for run the legacy path instead, whose workspace is counted too).
        std::unique_ptr<GraphConv> graph_fwd, graph_bwd_data, graph_bwd_filter;
        ConvApi api_mode = ConvApi::Auto; // MIXLAB_CONV_API when planned (in the key)
        // MIXLAB_CONV_LAYOUT and MIXLAB_CONV_PAD_CHANNELS when planned (in the key).
        ConvLayout layout_mode = ConvLayout::Auto;
        PadChannels pad_mode = PadChannels::Auto;
        ConvPlanRecord record;
    };

    Plan& plan_for(const ConvGeometry& g, DType t, MathMode math);
    std::unique_ptr<Plan> make_plan(const ConvGeometry& g, DType t, MathMode math,
                                    BwdAsFwd as_fwd_mode, ConvLayout layout_mode,
                                    PadChannels pad_mode, ConvApi api_mode);
    void choose_algorithms(Plan& plan, std::size_t limit);
    void grow_workspace(std::size_t bytes);
    void grow_flipped(std::size_t bytes);
    void grow_route(const ConvRoute& route);

    cudaStream_t m_stream;
    bool m_force_direct = false; // MIXLAB_CONV_DIRECT=1: every direction on the fallback
    CudnnHandle m_handle;        // created on first use: MLP runs never load cuDNN
    DeviceMemory m_workspace;
    // The flipped weights of the backward-data-as-forward plans, refilled before each
    // such call: one buffer for all of them (stream order keeps their uses apart).
    DeviceMemory m_flipped;
    RouteScratch m_route; // the routes' copies of the operands, shared the same way
    std::vector<std::unique_ptr<Plan>> m_plans; // few per run: a linear search is enough
};

} // namespace mixlab::cuda
