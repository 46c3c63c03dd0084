// cuDNN convolution plans: descriptors, algorithm choice by timing (FindEx) with the
// heuristics as fallback, the shared workspace, and the three convolution calls (backward
// data possibly as a forward convolution on flipped weights).
#include "backends/cuda/conv_cudnn.h"

#include "backends/cuda/cast_fill.cuh"
#include "backends/cuda/conv_direct.cuh"
#include "backends/cuda/conv_channel_pad.h"
#include "backends/cuda/conv_flip.cuh"
#include "backends/cuda/conv_nchw.h"
#include "backends/cuda/conv_search.h"
#include "backends/cuda/cuda_check.h"
#include "mixlab/error.h"
#include "backends/op_names.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace mixlab::cuda {

using namespace conv_search;

namespace {

// Backward data of a stride-1 convolution is a forward convolution of dy with the
// weights flipped in both kernel axes and their channel axes swapped, padded by
// kernel-1-pad on each side: dx[h] = sum_r dy[h + pad - r] w[r] = sum_r' dy[h - (R-1-pad)
// + r'] w[R-1-r']. Valid while that padding is not negative.
bool as_fwd_valid(const ConvGeometry& g)
{
    return g.stride_h == 1 && g.stride_w == 1 && g.pad_h <= g.kernel_h - 1 &&
           g.pad_w <= g.kernel_w - 1;
}

// The forward convolution that computes g's backward data: dy in, dx out.
ConvGeometry as_fwd_geometry(const ConvGeometry& g)
{
    ConvGeometry f = g;
    f.in_h = g.out_h;
    f.in_w = g.out_w;
    f.in_c = g.out_c;
    f.out_h = g.in_h;
    f.out_w = g.in_w;
    f.out_c = g.in_c;
    f.pad_h = g.kernel_h - 1 - g.pad_h;
    f.pad_w = g.kernel_w - 1 - g.pad_w;
    return f;
}

// MIXLAB_CONV_BWD_AS_FWD=1 forces backward data onto the forward convolution wherever
// that is valid (to check that path on every geometry), =0 keeps it off (to measure what
// it gains). Read at each plan lookup, not once, so that `mixlab-cli check` can run its
// convolution cases both ways in one process.
BwdAsFwd as_fwd_requested()
{
    const char* v = std::getenv("MIXLAB_CONV_BWD_AS_FWD");
    if (v == nullptr || *v == '\0') return BwdAsFwd::Auto;
    return std::string(v) == "0" ? BwdAsFwd::Off : BwdAsFwd::Force;
}

// Whether backward data runs as the forward convolution on flipped weights: never where
// cuDNN has no forward algorithm for it, always where forced or where cuDNN has no
// backward-data algorithm; else the deterministic one, and between equals the faster by
// FindEx's times, by a margin that covers the flip kernel (a few microseconds) and noise.
bool prefer_as_fwd(const Choice& d, const Choice& f, BwdAsFwd mode)
{
    if (f.direct || mode == BwdAsFwd::Off) return false;
    if (mode == BwdAsFwd::Force || d.direct) return true;
    if (f.deterministic != d.deterministic) return f.deterministic;
    return f.timed && d.timed && f.ms < 0.95f * d.ms && d.ms - f.ms > 0.005f;
}

// "forward implicit_gemm on flipped weights", as the backward-data algorithm.
std::string as_fwd_name(cudnnConvolutionFwdAlgo_t a)
{
    return std::string("forward ") + fwd_name(a) + " on flipped weights";
}

// MIXLAB_CONV_LAYOUT, read at each plan lookup like MIXLAB_CONV_BWD_AS_FWD.
ConvLayout layout_requested()
{
    const char* v = std::getenv("MIXLAB_CONV_LAYOUT");
    if (v == nullptr) return ConvLayout::Auto;
    const std::string s = v;
    return s == "nchw" ? ConvLayout::Nchw : s == "nhwc" ? ConvLayout::Nhwc : ConvLayout::Auto;
}

// MIXLAB_CONV_PAD_CHANNELS, read at each plan lookup too.
PadChannels pad_requested()
{
    const char* v = std::getenv("MIXLAB_CONV_PAD_CHANNELS");
    if (v == nullptr || *v == '\0') return PadChannels::Auto;
    return std::string(v) == "0" ? PadChannels::Off : PadChannels::Force;
}

// MIXLAB_CONV_API, read at each plan lookup too.
ConvApi api_requested()
{
    const char* v = std::getenv("MIXLAB_CONV_API");
    if (v == nullptr) return ConvApi::Auto;
    const std::string s = v;
    return s == "graph" ? ConvApi::Graph : s == "legacy" ? ConvApi::Legacy : ConvApi::Auto;
}

// The route a plan considers, if any: a forced one; else (unless the graph API is forced)
// channel padding for 16-bit data whose input channels are not a multiple of 8, NCHW for
// fp32 data.
std::unique_ptr<ConvRoute> route_for(const ConvGeometry& g, DType t, MathMode m, ConvLayout layout,
                                     PadChannels pad, ConvApi api, bool* forced)
{
    const bool odd_channels = g.in_c % ChannelPadRoute::k_channel_multiple != 0;
    *forced = true;
    if (layout == ConvLayout::Nchw) return std::make_unique<NchwRoute>(g, t, m);
    if (pad == PadChannels::Force && odd_channels)
        return std::make_unique<ChannelPadRoute>(g, t, m);
    *forced = false;
    if (api == ConvApi::Graph) return nullptr;
    if (pad == PadChannels::Auto && odd_channels && t != DType::F32)
        return std::make_unique<ChannelPadRoute>(g, t, m);
    if (layout == ConvLayout::Auto && t == DType::F32) return std::make_unique<NchwRoute>(g, t, m);
    return nullptr;
}

// Whether a direction takes the route: where forced and available; else where the NHWC
// search found nothing, where only the route is deterministic, or where the route with
// its copies is at least 10% faster (a margin wide enough that timing noise does not flip
// the choice, and so the run's bits, from one process to the next).
bool prefer_route(const Choice& nhwc, const RouteDirection& route, bool forced)
{
    if (!route.available()) return false;
    if (forced || nhwc.direct) return true;
    if (nhwc.deterministic != route.choice.deterministic) return route.choice.deterministic;
    return nhwc.timed && route.choice.timed && route.ms() < 0.9f * nhwc.ms;
}

// Whether a direction runs the graph API's pick rather than the legacy NHWC one: where
// forced and available; else where the legacy search found nothing, where only the graph
// pick is deterministic, or where it is at least 3% faster. Both sides are medians of
// several runs after a warm-up on the same scratch, operands and stream, so the margin
// only has to cover their run-to-run noise (the routes' 10% also covers their copies'
// separate timing); a pick that flipped between processes on noise would change the
// run's bits from one process to the next. Both are timed behind a host-side gate
// (gated_timing.h), so that the time is the kernels', which is what the step, replayed as
// a CUDA graph, pays: timed as back-to-back calls, a small convolution's legacy call
// measured its launch cost more than its kernel (bench/NOTES.md section 18).
bool prefer_graph(const Choice& legacy, const GraphConv* graph, ConvApi api)
{
    if (!graph || api == ConvApi::Legacy) return false;
    if (api == ConvApi::Graph || legacy.direct) return true;
    const Choice& c = graph->choice();
    if (legacy.deterministic != c.deterministic) return c.deterministic;
    return legacy.timed && c.ms < 0.97f * legacy.ms;
}

std::string direct_text(bool forced)
{
    return forced ? "mixlab direct kernel (MIXLAB_CONV_DIRECT)"
                  : "mixlab direct kernel (cuDNN has no algorithm for this case)";
}

// Scratch for timing: a device allocation of up to `bytes`, halved until it fits.
DeviceMemory scratch_up_to(std::size_t bytes)
{
    while (bytes >= (std::size_t(1) << 20)) {
        try {
            return DeviceMemory(bytes, "the convolution planning workspace");
        } catch (const OutOfMemoryError&) {
            bytes /= 2;
        }
    }
    return DeviceMemory();
}

// Replaces `mem` by a larger allocation, freeing the old one first to make room. When
// the device cannot give `bytes`, the old size is taken back before OutOfMemoryError
// goes on: the plans made so far still use it, and the backend outlives the failure (a
// max-batch search carries on with smaller batches).
void regrow(DeviceMemory& mem, std::size_t bytes, const char* what)
{
    const std::size_t old = mem.bytes();
    mem = DeviceMemory();
    try {
        mem = DeviceMemory(bytes, what);
    } catch (const OutOfMemoryError&) {
        mem = DeviceMemory(old, what); // free a moment ago; if not, this OOM goes instead
        throw;
    }
}

} // namespace

CudnnConv::CudnnConv(cudaStream_t stream)
    : m_stream(stream),
      // For checking the fallback on a GPU where cuDNN has an algorithm for everything.
      m_force_direct(std::getenv("MIXLAB_CONV_DIRECT") != nullptr)
{}

cudnnHandle_t CudnnConv::handle()
{
    if (!m_handle) {
        m_handle = CudnnHandle::create();
        MIXLAB_CUDNN_CHECK(cudnnSetStream(m_handle.get(), m_stream));
    }
    return m_handle.get();
}

void CudnnConv::grow_workspace(std::size_t bytes)
{
    if (bytes <= m_workspace.bytes()) return;
    // Work already enqueued may still read the old workspace.
    MIXLAB_CUDA_CHECK(cudaStreamSynchronize(m_stream));
    regrow(m_workspace, bytes, "the cuDNN convolution workspace");
}

void CudnnConv::grow_flipped(std::size_t bytes)
{
    if (bytes <= m_flipped.bytes()) return;
    MIXLAB_CUDA_CHECK(cudaStreamSynchronize(m_stream)); // as for the workspace
    regrow(m_flipped, bytes, "the flipped convolution weights");
}

void CudnnConv::grow_route(const ConvRoute& route)
{
    const std::size_t x = route.x_bytes(), y = route.y_bytes(), w = route.w_bytes();
    if (x <= m_route.x.bytes() && y <= m_route.y.bytes() && w <= m_route.w.bytes()) return;
    MIXLAB_CUDA_CHECK(cudaStreamSynchronize(m_stream)); // as for the workspace
    if (x > m_route.x.bytes()) regrow(m_route.x, x, "the convolution route's copies");
    if (y > m_route.y.bytes()) regrow(m_route.y, y, "the convolution route's copies");
    if (w > m_route.w.bytes()) regrow(m_route.w, w, "the convolution route's copies");
}

std::unique_ptr<CudnnConv::Plan> CudnnConv::make_plan(const ConvGeometry& g, DType t, MathMode math,
                                                      BwdAsFwd as_fwd_mode, ConvLayout layout_mode,
                                                      PadChannels pad_mode, ConvApi api_mode)
{
    // cuDNN describes tensors with int32 strides: 2^31 elements or more it refuses with
    // NOT_SUPPORTED, which says nothing to the user.
    const std::size_t biggest = std::max(g.x_count(), g.y_count());
    if (biggest > std::size_t(INT32_MAX))
        throw LimitError("batch " + std::to_string(g.batch) + " makes a convolution tensor of " +
                         std::to_string(biggest) + " elements (" + geometry_text(g) +
                         "); cuDNN's convolutions take at most 2^31 - 1: use a smaller batch");
    auto p = std::make_unique<Plan>();
    p->as_fwd_mode = as_fwd_mode;
    p->layout_mode = layout_mode;
    p->pad_mode = pad_mode;
    p->api_mode = api_mode;
    const cudnnDataType_t dt = cudnn_data_type(t, "conv2d");
    p->x = TensorDesc::create();
    MIXLAB_CUDNN_CHECK(cudnnSetTensor4dDescriptor(p->x.get(), CUDNN_TENSOR_NHWC, dt, g.batch,
                                                  g.in_c, g.in_h, g.in_w));
    p->y = TensorDesc::create();
    MIXLAB_CUDNN_CHECK(cudnnSetTensor4dDescriptor(p->y.get(), CUDNN_TENSOR_NHWC, dt, g.batch,
                                                  g.out_c, g.out_h, g.out_w));
    // KRSC weights are cuDNN's NHWC filter layout: (k, r, s, c) with c fastest.
    p->w = FilterDesc::create();
    MIXLAB_CUDNN_CHECK(cudnnSetFilter4dDescriptor(p->w.get(), dt, CUDNN_TENSOR_NHWC, g.out_c,
                                                  g.in_c, g.kernel_h, g.kernel_w));
    const cudnnMathType_t mt = requested_math(t, math);
    p->fwd = make_conv_desc(g, mt);
    p->bwd_data = make_conv_desc(g, mt);
    p->bwd_filter = make_conv_desc(g, mt);

    int n = 0, c = 0, h = 0, w = 0;
    MIXLAB_CUDNN_CHECK(cudnnGetConvolution2dForwardOutputDim(p->fwd.get(), p->x.get(), p->w.get(),
                                                             &n, &c, &h, &w));
    if (n != g.batch || c != g.out_c || h != g.out_h || w != g.out_w)
        throw Error("cuda backend: conv2d: cuDNN computes an output of " + std::to_string(h) + "x" +
                    std::to_string(w) + "x" + std::to_string(c) + " for " + geometry_text(g));

    ConvPlanRecord& r = p->record;
    r.geometry = g;
    r.dtype = t;
    r.math = math;

    std::size_t free_b = 0, total_b = 0;
    MIXLAB_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
    choose_algorithms(*p, std::min(k_max_workspace_bytes, free_b / 4));

    r.info.workspace_bytes = std::int64_t(std::max({p->fwd_ws, p->bwd_data_ws, p->bwd_filter_ws}));
    grow_workspace(std::size_t(r.info.workspace_bytes));
    if (p->bwd_data_run.may_run(ConvRun::AsForward)) grow_flipped(g.w_count() * dtype_size(t));
    return p;
}

void CudnnConv::choose_algorithms(Plan& p, std::size_t limit)
{
    const ConvGeometry& g = p.record.geometry;
    const DType t = p.record.dtype;
    const MathMode m = p.record.math;
    const cudnnHandle_t h = handle();

    // Timing runs the real kernels, so they write into scratch tensors of the real sizes
    // (filled with a small non-zero value: zeros can time faster than data).
    const std::size_t nx = g.x_count();
    const std::size_t ny = g.y_count();
    const std::size_t nw = g.w_count();
    const std::size_t es = dtype_size(t);
    bool can_time = !m_force_direct;
    DeviceMemory sx, sy, sw, ws;
    if (can_time) {
        try {
            sx = DeviceMemory(nx * es, "convolution planning scratch");
            sy = DeviceMemory(ny * es, "convolution planning scratch");
            sw = DeviceMemory(nw * es, "convolution planning scratch");
            launch_fill(sx.get(), t, nx, 0.25f, m_stream);
            launch_fill(sy.get(), t, ny, 0.25f, m_stream);
            launch_fill(sw.get(), t, nw, 0.125f, m_stream);
            ws = scratch_up_to(limit);
            limit = ws.bytes(); // FindEx only tries what fits in the scratch workspace
        } catch (const OutOfMemoryError&) {
            can_time = false; // no room to time: cuDNN's heuristics choose instead
        }
    }
    const Search s{can_time, m_force_direct,
                   limit,    t,
                   m,        geometry_text(g) + " " + dtype_short_name(t) + " " + math_mode_name(m),
                   m_stream};
    void* const wsp = ws.get();
    const std::size_t wsb = ws.bytes();
    const float one = 1.0f, zero = 0.0f;
    // A candidate runs with the math type it was timed with (exact fp32 keeps FMA math).
    const auto with_math = [&](const ConvDesc& desc, cudnnMathType_t mt) {
        if (!fp32_exact(t, m)) MIXLAB_CUDNN_CHECK(cudnnSetConvolutionMathType(desc.get(), mt));
    };
    // The graph API's pick per direction (conv_graph.h), timed on the same scratch; `why`
    // keeps the reason a direction has none, for the plan text of a forced run.
    const bool graph_on = can_time && p.api_mode != ConvApi::Legacy;
    std::string why_fwd, why_data, why_filter;
    const auto graph_search = [&](graph::ConvOp op,
                                  std::string* why) -> std::unique_ptr<GraphConv> {
        if (!graph_on) return nullptr;
        return GraphConv::search(h, g, op, s, sx.get(), sy.get(), sw.get(), wsp, wsb, why);
    };
    // A graph pick's workspace counts beside the legacy pick's: operands the graph plan was
    // not made for (not 16-byte aligned) run the legacy path, which `dir` holds so far.
    const auto take_graph = [&](std::unique_ptr<GraphConv>& from, std::unique_ptr<GraphConv>& to,
                                std::size_t& workspace, ConvDirection& dir) {
        to = std::move(from);
        workspace = std::max(workspace, to->workspace());
        dir.unaligned = dir.run;
        dir.run = ConvRun::Graph;
    };

    const Choice f = pick_algorithm<cudnnConvolutionFwdAlgoPerf_t>(
        s, "forward",
        [&](cudnnConvolutionFwdAlgoPerf_t* r, int* n) {
            return cudnnFindConvolutionForwardAlgorithmEx(
                h, p.x.get(), sx.get(), p.w.get(), sw.get(), p.fwd.get(), p.y.get(), sy.get(),
                CUDNN_CONVOLUTION_FWD_ALGO_COUNT, n, r, wsp, wsb);
        },
        [&](cudnnConvolutionFwdAlgoPerf_t* r, int* n) {
            return cudnnGetConvolutionForwardAlgorithm_v7(h, p.x.get(), p.w.get(), p.fwd.get(),
                                                          p.y.get(),
                                                          CUDNN_CONVOLUTION_FWD_ALGO_COUNT, n, r);
        },
        [&](const cudnnConvolutionFwdAlgoPerf_t& c) {
            with_math(p.fwd, c.mathType);
            return cudnnConvolutionForward(h, &one, p.x.get(), sx.get(), p.w.get(), sw.get(),
                                           p.fwd.get(), c.algo, wsp, wsb, &zero, p.y.get(),
                                           sy.get());
        });
    p.fwd_run.run = f.direct ? ConvRun::Direct : ConvRun::Legacy;
    if (!f.direct) {
        p.fwd_algo = cudnnConvolutionFwdAlgo_t(f.algo);
        if (!fp32_exact(t, m)) MIXLAB_CUDNN_CHECK(cudnnSetConvolutionMathType(p.fwd.get(), f.math));
        MIXLAB_CUDNN_CHECK(cudnnGetConvolutionForwardWorkspaceSize(
            h, p.x.get(), p.w.get(), p.fwd.get(), p.y.get(), p.fwd_algo, &p.fwd_ws));
        p.fwd_ws = std::max(p.fwd_ws, f.memory);
    }
    std::unique_ptr<GraphConv> gf = graph_search(graph::ConvOp::Forward, &why_fwd);
    if (prefer_graph(f, gf.get(), p.api_mode)) take_graph(gf, p.graph_fwd, p.fwd_ws, p.fwd_run);

    // Backward data: dy and w in, dx out.
    const Choice d = pick_algorithm<cudnnConvolutionBwdDataAlgoPerf_t>(
        s, "backward data",
        [&](cudnnConvolutionBwdDataAlgoPerf_t* r, int* n) {
            return cudnnFindConvolutionBackwardDataAlgorithmEx(
                h, p.w.get(), sw.get(), p.y.get(), sy.get(), p.bwd_data.get(), p.x.get(), sx.get(),
                CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, n, r, wsp, wsb);
        },
        [&](cudnnConvolutionBwdDataAlgoPerf_t* r, int* n) {
            return cudnnGetConvolutionBackwardDataAlgorithm_v7(
                h, p.w.get(), p.y.get(), p.bwd_data.get(), p.x.get(),
                CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, n, r);
        },
        [&](const cudnnConvolutionBwdDataAlgoPerf_t& c) {
            with_math(p.bwd_data, c.mathType);
            return cudnnConvolutionBackwardData(h, &one, p.w.get(), sw.get(), p.y.get(), sy.get(),
                                                p.bwd_data.get(), c.algo, wsp, wsb, &zero,
                                                p.x.get(), sx.get());
        });
    // Backward data as a forward convolution: dy (the y descriptor) in, dx (x) out,
    // through the flipped weights (sw stands in for them: the same element count).
    Choice a; // direct: not available
    if (as_fwd_valid(g) && !m_force_direct && p.as_fwd_mode != BwdAsFwd::Off) {
        const ConvGeometry fg = as_fwd_geometry(g);
        p.w_flipped = FilterDesc::create();
        MIXLAB_CUDNN_CHECK(cudnnSetFilter4dDescriptor(
            p.w_flipped.get(), cudnn_data_type(t, "conv2d"), CUDNN_TENSOR_NHWC, fg.out_c, fg.in_c,
            fg.kernel_h, fg.kernel_w));
        p.bwd_as_fwd = make_conv_desc(fg, requested_math(t, m));
        int on = 0, oc = 0, oh = 0, ow = 0;
        const bool shape_ok =
            cudnnGetConvolution2dForwardOutputDim(p.bwd_as_fwd.get(), p.y.get(), p.w_flipped.get(),
                                                  &on, &oc, &oh, &ow) == CUDNN_STATUS_SUCCESS &&
            on == g.batch && oc == g.in_c && oh == g.in_h && ow == g.in_w;
        if (shape_ok)
            a = pick_algorithm<cudnnConvolutionFwdAlgoPerf_t>(
                s, "backward data as forward on flipped weights",
                [&](cudnnConvolutionFwdAlgoPerf_t* r, int* n) {
                    return cudnnFindConvolutionForwardAlgorithmEx(
                        h, p.y.get(), sy.get(), p.w_flipped.get(), sw.get(), p.bwd_as_fwd.get(),
                        p.x.get(), sx.get(), CUDNN_CONVOLUTION_FWD_ALGO_COUNT, n, r, wsp, wsb);
                },
                [&](cudnnConvolutionFwdAlgoPerf_t* r, int* n) {
                    return cudnnGetConvolutionForwardAlgorithm_v7(
                        h, p.y.get(), p.w_flipped.get(), p.bwd_as_fwd.get(), p.x.get(),
                        CUDNN_CONVOLUTION_FWD_ALGO_COUNT, n, r);
                },
                [&](const cudnnConvolutionFwdAlgoPerf_t& c) {
                    with_math(p.bwd_as_fwd, c.mathType);
                    return cudnnConvolutionForward(h, &one, p.y.get(), sy.get(), p.w_flipped.get(),
                                                   sw.get(), p.bwd_as_fwd.get(), c.algo, wsp, wsb,
                                                   &zero, p.x.get(), sx.get());
                });
    }
    const bool as_fwd = prefer_as_fwd(d, a, p.as_fwd_mode);
    p.bwd_data_run.run = as_fwd ? ConvRun::AsForward : d.direct ? ConvRun::Direct : ConvRun::Legacy;
    if (as_fwd) {
        p.bwd_as_fwd_algo = cudnnConvolutionFwdAlgo_t(a.algo);
        if (!fp32_exact(t, m))
            MIXLAB_CUDNN_CHECK(cudnnSetConvolutionMathType(p.bwd_as_fwd.get(), a.math));
        MIXLAB_CUDNN_CHECK(cudnnGetConvolutionForwardWorkspaceSize(
            h, p.y.get(), p.w_flipped.get(), p.bwd_as_fwd.get(), p.x.get(), p.bwd_as_fwd_algo,
            &p.bwd_data_ws));
        p.bwd_data_ws = std::max(p.bwd_data_ws, a.memory);
    }

    if (p.bwd_data_run.run == ConvRun::Legacy) {
        p.bwd_data_algo = cudnnConvolutionBwdDataAlgo_t(d.algo);
        if (!fp32_exact(t, m))
            MIXLAB_CUDNN_CHECK(cudnnSetConvolutionMathType(p.bwd_data.get(), d.math));
        MIXLAB_CUDNN_CHECK(cudnnGetConvolutionBackwardDataWorkspaceSize(
            h, p.w.get(), p.y.get(), p.bwd_data.get(), p.x.get(), p.bwd_data_algo, &p.bwd_data_ws));
        p.bwd_data_ws = std::max(p.bwd_data_ws, d.memory);
    }
    // Against backward data as the legacy NHWC path runs it; backward data forced onto
    // flipped weights (a check of that path) stays there.
    const Choice& data_legacy = as_fwd ? a : d;
    std::unique_ptr<GraphConv> gd = graph_search(graph::ConvOp::BackwardData, &why_data);
    if (p.as_fwd_mode != BwdAsFwd::Force && prefer_graph(data_legacy, gd.get(), p.api_mode))
        take_graph(gd, p.graph_bwd_data, p.bwd_data_ws, p.bwd_data_run);

    // Backward filter: x and dy in, dw out.
    const Choice w = pick_algorithm<cudnnConvolutionBwdFilterAlgoPerf_t>(
        s, "backward filter",
        [&](cudnnConvolutionBwdFilterAlgoPerf_t* r, int* n) {
            return cudnnFindConvolutionBackwardFilterAlgorithmEx(
                h, p.x.get(), sx.get(), p.y.get(), sy.get(), p.bwd_filter.get(), p.w.get(),
                sw.get(), CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, n, r, wsp, wsb);
        },
        [&](cudnnConvolutionBwdFilterAlgoPerf_t* r, int* n) {
            return cudnnGetConvolutionBackwardFilterAlgorithm_v7(
                h, p.x.get(), p.y.get(), p.bwd_filter.get(), p.w.get(),
                CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, n, r);
        },
        [&](const cudnnConvolutionBwdFilterAlgoPerf_t& c) {
            with_math(p.bwd_filter, c.mathType);
            return cudnnConvolutionBackwardFilter(h, &one, p.x.get(), sx.get(), p.y.get(), sy.get(),
                                                  p.bwd_filter.get(), c.algo, wsp, wsb, &zero,
                                                  p.w.get(), sw.get());
        });
    p.bwd_filter_run.run = w.direct ? ConvRun::Direct : ConvRun::Legacy;
    if (!w.direct) {
        p.bwd_filter_algo = cudnnConvolutionBwdFilterAlgo_t(w.algo);
        if (!fp32_exact(t, m))
            MIXLAB_CUDNN_CHECK(cudnnSetConvolutionMathType(p.bwd_filter.get(), w.math));
        MIXLAB_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterWorkspaceSize(
            h, p.x.get(), p.y.get(), p.bwd_filter.get(), p.w.get(), p.bwd_filter_algo,
            &p.bwd_filter_ws));
        p.bwd_filter_ws = std::max(p.bwd_filter_ws, w.memory);
    }
    std::unique_ptr<GraphConv> gw = graph_search(graph::ConvOp::BackwardFilter, &why_filter);
    if (prefer_graph(w, gw.get(), p.api_mode))
        take_graph(gw, p.graph_bwd_filter, p.bwd_filter_ws, p.bwd_filter_run);

    // The route, per direction, against what the NHWC search found (either API's pick).
    // Backward data forced onto flipped weights (a check of that path) stays there.
    const Choice& ff = p.graph_fwd ? p.graph_fwd->choice() : f;
    const Choice& dd = p.graph_bwd_data ? p.graph_bwd_data->choice() : data_legacy;
    const Choice& ww = p.graph_bwd_filter ? p.graph_bwd_filter->choice() : w;
    bool forced = false;
    if (!m_force_direct)
        p.route = route_for(g, t, m, p.layout_mode, p.pad_mode, p.api_mode, &forced);
    if (p.route) {
        p.route->plan(h, s, sx.get(), sy.get(), sw.get(), wsp, wsb, m_stream);
        const RouteDirection &rf = p.route->forward_plan(), &rd = p.route->backward_data_plan(),
                             &rw = p.route->backward_filter_plan();
        bool route_fwd = prefer_route(ff, rf, forced);
        bool route_data = p.as_fwd_mode != BwdAsFwd::Force && prefer_route(dd, rd, forced);
        bool route_filter = prefer_route(ww, rw, forced);
        // The route's copies must fit beside everything else. Where they do not, every
        // direction stays NHWC, so a batch near the device's limit still runs (without
        // the route), unless the route was forced.
        if (route_fwd || route_data || route_filter) {
            try {
                grow_route(*p.route);
            } catch (const OutOfMemoryError&) {
                if (forced) throw;
                route_fwd = route_data = route_filter = false;
            }
        }
        const auto take_route = [](ConvDirection& dir, std::unique_ptr<GraphConv>& graph,
                                   std::size_t& workspace, const RouteDirection& route) {
            dir = ConvDirection{ConvRun::Route};
            graph.reset();
            workspace = route.workspace;
        };
        if (route_fwd) take_route(p.fwd_run, p.graph_fwd, p.fwd_ws, rf);
        if (route_data) take_route(p.bwd_data_run, p.graph_bwd_data, p.bwd_data_ws, rd);
        if (route_filter) take_route(p.bwd_filter_run, p.graph_bwd_filter, p.bwd_filter_ws, rw);
        if (!route_fwd && !route_data && !route_filter) p.route.reset();
    }

    ConvPlanRecord& r = p.record;
    const auto text = [&](const Choice& c, const char* name) {
        return c.direct ? direct_text(m_force_direct) : algo_text(name, c.math, t, m);
    };
    // Each direction as it runs: NHWC, on the route's copies, or (backward data) the
    // forward convolution on flipped weights. Times include the route's copies.
    struct AsRun {
        std::string algo;
        float ms;
        bool timed, tensor_cores;
    };
    const auto route_run = [&](const RouteDirection& n, const char* name) {
        const std::string named = std::string(name) + " " + p.route->name();
        return AsRun{algo_text(named.c_str(), n.choice.math, t, m), n.ms(), n.choice.timed,
                     n.choice.tensor_cores()};
    };
    // A direction the graph API was forced onto but could not take says why.
    const auto nhwc_run = [&](const Choice& c, std::string algo, const std::string& why_not) {
        if (p.api_mode == ConvApi::Graph && !why_not.empty())
            algo += " (MIXLAB_CONV_API=graph: " + why_not + ")";
        return AsRun{std::move(algo), c.ms, c.timed, c.tensor_cores()};
    };
    // An engine's numerical notes say whether it runs on tensor cores, so its name says
    // so or nothing (algo_text's "tf32 permitted" is for the legacy API, which does not).
    const auto graph_run = [&](const GraphConv& c) {
        const Choice& k = c.choice();
        const std::string algo =
            k.tensor_cores() ? algo_text(c.name().c_str(), k.math, t, m) : c.name();
        return AsRun{algo, k.ms, k.timed, k.tensor_cores()};
    };
    // The text and time of what runs a direction; `route` and `nhwc` make them for
    // those kinds.
    const auto as_run = [&](ConvRun run, const GraphConv* graph, const auto& route,
                            const auto& nhwc) -> AsRun {
        switch (run) {
        case ConvRun::Route: return route();
        case ConvRun::Graph: return graph_run(*graph);
        case ConvRun::Direct:
        case ConvRun::Legacy:
        case ConvRun::AsForward: break;
        }
        return nhwc();
    };
    const AsRun rf = as_run(
        p.fwd_run.run, p.graph_fwd.get(),
        [&] {
            const RouteDirection& rt = p.route->forward_plan();
            return route_run(rt, fwd_name(cudnnConvolutionFwdAlgo_t(rt.choice.algo)));
        },
        [&] { return nhwc_run(f, text(f, fwd_name(p.fwd_algo)), why_fwd); });
    const AsRun rd = as_run(
        p.bwd_data_run.run, p.graph_bwd_data.get(),
        [&] {
            const RouteDirection& rt = p.route->backward_data_plan();
            return route_run(rt, bwd_data_name(cudnnConvolutionBwdDataAlgo_t(rt.choice.algo)));
        },
        [&] {
            if (p.bwd_data_run.run != ConvRun::AsForward)
                return nhwc_run(d, text(d, bwd_data_name(p.bwd_data_algo)), why_data);
            const bool forced_as_fwd = p.as_fwd_mode == BwdAsFwd::Force;
            return nhwc_run(a,
                            algo_text(as_fwd_name(p.bwd_as_fwd_algo).c_str(), a.math, t, m) +
                                (forced_as_fwd ? " (MIXLAB_CONV_BWD_AS_FWD)" : ""),
                            forced_as_fwd ? std::string() : why_data);
        });
    const AsRun rw = as_run(
        p.bwd_filter_run.run, p.graph_bwd_filter.get(),
        [&] {
            const RouteDirection& rt = p.route->backward_filter_plan();
            return route_run(rt, bwd_filter_name(cudnnConvolutionBwdFilterAlgo_t(rt.choice.algo)));
        },
        [&] { return nhwc_run(w, text(w, bwd_filter_name(p.bwd_filter_algo)), why_filter); });
    r.info.forward_algo = rf.algo;
    r.info.backward_data_algo = rd.algo;
    r.info.backward_filter_algo = rw.algo;
    r.info.tensor_cores = rf.tensor_cores && rd.tensor_cores && rw.tensor_cores;
    r.backward_data_as_forward = p.bwd_data_run.run == ConvRun::AsForward;
    r.forward_ms = rf.ms;
    r.backward_data_ms = rd.ms;
    r.backward_filter_ms = rw.ms;
    r.info.forward_ms = rf.timed ? rf.ms : 0.0f;
    r.info.backward_data_ms = rd.timed ? rd.ms : 0.0f;
    r.info.backward_filter_ms = rw.timed ? rw.ms : 0.0f;
    r.timed = rf.timed && rd.timed && rw.timed;
    // The scratch is freed on return; FindEx has finished with it (it synchronises).
    MIXLAB_CUDA_CHECK(cudaStreamSynchronize(m_stream));
}

CudnnConv::Plan& CudnnConv::plan_for(const ConvGeometry& g, DType t, MathMode math)
{
    // The variable changes only the plans it applies to: the others stay shared.
    const BwdAsFwd mode = as_fwd_valid(g) ? as_fwd_requested() : BwdAsFwd::Auto;
    const ConvLayout layout = layout_requested();
    const PadChannels pad = pad_requested();
    const ConvApi api = api_requested();
    for (auto& p : m_plans)
        if (p->record.geometry == g && p->record.dtype == t && p->record.math == math &&
            p->as_fwd_mode == mode && p->layout_mode == layout && p->pad_mode == pad &&
            p->api_mode == api)
            return *p;
    m_plans.push_back(make_plan(g, t, math, mode, layout, pad, api));
    return *m_plans.back();
}

ConvPlanInfo CudnnConv::prepare(const ConvGeometry& g, DType t, MathMode math)
{
    return plan_for(g, t, math).record.info;
}

void CudnnConv::forward(const ConvGeometry& g, DType t, MathMode math, const void* x, const void* w,
                        void* y)
{
    Plan& p = plan_for(g, t, math);
    ++p.record.calls;
    switch (p.fwd_run.on(GraphConv::aligned(x, w, y))) {
    case ConvRun::Route:
        p.route->forward(handle(), x, w, y, m_route, m_workspace, m_stream);
        return;
    case ConvRun::Graph: p.graph_fwd->run(handle(), x, w, y, m_workspace); return;
    case ConvRun::Direct: launch_conv_direct_forward(g, t, x, w, y, m_stream); return;
    case ConvRun::Legacy:
    case ConvRun::AsForward: // backward data's kind only: never planned for forward
        break;
    }
    const float one = 1.0f, zero = 0.0f;
    MIXLAB_CUDNN_CHECK(cudnnConvolutionForward(handle(), &one, p.x.get(), x, p.w.get(), w,
                                               p.fwd.get(), p.fwd_algo, m_workspace.get(),
                                               m_workspace.bytes(), &zero, p.y.get(), y));
}

void CudnnConv::backward_data(const ConvGeometry& g, DType t, MathMode math, const void* dy,
                              const void* w, void* dx)
{
    Plan& p = plan_for(g, t, math);
    ++p.record.calls;
    const float one = 1.0f, zero = 0.0f;
    switch (p.bwd_data_run.on(GraphConv::aligned(dx, w, dy))) {
    case ConvRun::Route:
        p.route->backward_data(handle(), dy, w, dx, m_route, m_workspace, m_stream);
        return;
    case ConvRun::Graph: p.graph_bwd_data->run(handle(), dx, w, dy, m_workspace); return;
    case ConvRun::AsForward:
        // The weights change every step: flip them again, ahead on the same stream.
        launch_conv_flip_weights(g, t, w, m_flipped.get(), m_stream);
        MIXLAB_CUDNN_CHECK(cudnnConvolutionForward(
            handle(), &one, p.y.get(), dy, p.w_flipped.get(), m_flipped.get(), p.bwd_as_fwd.get(),
            p.bwd_as_fwd_algo, m_workspace.get(), m_workspace.bytes(), &zero, p.x.get(), dx));
        return;
    case ConvRun::Direct: launch_conv_direct_backward_data(g, t, dy, w, dx, m_stream); return;
    case ConvRun::Legacy: break;
    }
    MIXLAB_CUDNN_CHECK(cudnnConvolutionBackwardData(
        handle(), &one, p.w.get(), w, p.y.get(), dy, p.bwd_data.get(), p.bwd_data_algo,
        m_workspace.get(), m_workspace.bytes(), &zero, p.x.get(), dx));
}

void CudnnConv::backward_filter(const ConvGeometry& g, DType t, MathMode math, const void* x,
                                const void* dy, void* dw)
{
    Plan& p = plan_for(g, t, math);
    ++p.record.calls;
    switch (p.bwd_filter_run.on(GraphConv::aligned(x, dw, dy))) {
    case ConvRun::Route:
        p.route->backward_filter(handle(), x, dy, dw, m_route, m_workspace, m_stream);
        return;
    case ConvRun::Graph: p.graph_bwd_filter->run(handle(), x, dw, dy, m_workspace); return;
    case ConvRun::Direct: launch_conv_direct_backward_filter(g, t, x, dy, dw, m_stream); return;
    case ConvRun::Legacy:
    case ConvRun::AsForward: // backward data's kind only: never planned for backward filter
        break;
    }
    const float one = 1.0f, zero = 0.0f;
    MIXLAB_CUDNN_CHECK(cudnnConvolutionBackwardFilter(
        handle(), &one, p.x.get(), x, p.y.get(), dy, p.bwd_filter.get(), p.bwd_filter_algo,
        m_workspace.get(), m_workspace.bytes(), &zero, p.w.get(), dw));
}

std::vector<ConvPlanRecord> CudnnConv::plans() const
{
    std::vector<ConvPlanRecord> out;
    out.reserve(m_plans.size());
    for (const auto& p : m_plans) out.push_back(p->record);
    return out;
}

std::string describe(const ConvPlanRecord& p)
{
    auto ms = [&](float v) {
        if (!p.timed) return std::string();
        char buf[32];
        std::snprintf(buf, sizeof buf, " %.3f ms", double(v));
        return std::string(buf);
    };
    return "conv " + geometry_text(p.geometry) + " " + dtype_short_name(p.dtype) + " " +
           math_mode_name(p.math) + ": forward " + p.info.forward_algo + ms(p.forward_ms) +
           ", backward data " + p.info.backward_data_algo + ms(p.backward_data_ms) +
           ", backward filter " + p.info.backward_filter_algo + ms(p.backward_filter_ms) +
           (p.info.tensor_cores ? "; tensor cores" : "; not all on tensor cores") + "; workspace " +
           std::to_string((p.info.workspace_bytes + (1 << 20) - 1) >> 20) + " MiB; " +
           (p.timed ? "timed" : "heuristic") + "; " + std::to_string(p.calls) + " calls";
}

} // namespace mixlab::cuda
