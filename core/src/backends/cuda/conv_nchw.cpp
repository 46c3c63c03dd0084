// The NCHW convolution route: descriptors, the per-direction search with the transposes
// timed, and the three directions as transpose, cuDNN, transpose.
#include "backends/cuda/conv_nchw.h"

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/cuda_event.h"
#include "backends/cuda/layout_transpose.cuh"
#include "mixlab/error.h"

#include <algorithm>
#include <functional>

namespace mixlab::cuda {

using namespace conv_search;

NchwRoute::NchwRoute(const ConvGeometry& g, DType t, MathMode m) : m_g(g), m_t(t), m_m(m)
{
    const cudnnDataType_t dt = cudnn_data_type(t, "conv2d");
    m_x = TensorDesc::create();
    MIXLAB_CUDNN_CHECK(cudnnSetTensor4dDescriptor(m_x.get(), CUDNN_TENSOR_NCHW, dt, g.batch, g.in_c,
                                                  g.in_h, g.in_w));
    m_y = TensorDesc::create();
    MIXLAB_CUDNN_CHECK(cudnnSetTensor4dDescriptor(m_y.get(), CUDNN_TENSOR_NCHW, dt, g.batch,
                                                  g.out_c, g.out_h, g.out_w));
    m_w = FilterDesc::create(); // KCRS
    MIXLAB_CUDNN_CHECK(cudnnSetFilter4dDescriptor(m_w.get(), dt, CUDNN_TENSOR_NCHW, g.out_c, g.in_c,
                                                  g.kernel_h, g.kernel_w));
    const cudnnMathType_t mt = requested_math(t, m);
    m_fwd_desc = make_conv_desc(g, mt);
    m_data_desc = make_conv_desc(g, mt);
    m_filter_desc = make_conv_desc(g, mt);
}

void NchwRoute::x_to_nchw(const void* src, void* dst, cudaStream_t s) const
{
    launch_transpose_batched(src, dst, m_g.batch, m_g.in_h * m_g.in_w, m_g.in_c, m_t, s);
}
void NchwRoute::x_from_nchw(const void* src, void* dst, cudaStream_t s) const
{
    launch_transpose_batched(src, dst, m_g.batch, m_g.in_c, m_g.in_h * m_g.in_w, m_t, s);
}
void NchwRoute::y_to_nchw(const void* src, void* dst, cudaStream_t s) const
{
    launch_transpose_batched(src, dst, m_g.batch, m_g.out_h * m_g.out_w, m_g.out_c, m_t, s);
}
void NchwRoute::y_from_nchw(const void* src, void* dst, cudaStream_t s) const
{
    launch_transpose_batched(src, dst, m_g.batch, m_g.out_c, m_g.out_h * m_g.out_w, m_t, s);
}
void NchwRoute::w_to_kcrs(const void* src, void* dst, cudaStream_t s) const
{
    launch_transpose_batched(src, dst, m_g.out_c, m_g.kernel_h * m_g.kernel_w, m_g.in_c, m_t, s);
}
void NchwRoute::w_from_kcrs(const void* src, void* dst, cudaStream_t s) const
{
    launch_transpose_batched(src, dst, m_g.out_c, m_g.in_c, m_g.kernel_h * m_g.kernel_w, m_t, s);
}

namespace {

// Milliseconds per call of `work`, the mean of three after one warm-up call (the first
// launch of a kernel may load its module).
float time_ms(cudaStream_t stream, const std::function<void()>& work)
{
    work();
    CudaEvent start(stream), stop(stream);
    start.record();
    for (int i = 0; i < 3; ++i) work();
    stop.record();
    stop.synchronize();
    return stop.elapsed_ms_since(start) / 3.0f;
}

} // namespace

void NchwRoute::plan(cudnnHandle_t h, const Search& s, void* sx, void* sy, void* sw, void* ws,
                     std::size_t ws_bytes, cudaStream_t stream)
{
    if (s.force_direct || !s.can_time) return; // untimed, the route cannot show it wins
    // The transposes' destinations; without room for them the route stays unavailable.
    DeviceMemory tx, ty, tw;
    const std::size_t es = dtype_size(m_t);
    try {
        tx = DeviceMemory(m_g.x_count() * es, "convolution planning scratch");
        ty = DeviceMemory(m_g.y_count() * es, "convolution planning scratch");
        tw = DeviceMemory(m_g.w_count() * es, "convolution planning scratch");
    } catch (const OutOfMemoryError&) {
        return;
    }
    const float x_in = time_ms(stream, [&] { x_to_nchw(sx, tx.get(), stream); });
    const float x_out = time_ms(stream, [&] { x_from_nchw(tx.get(), sx, stream); });
    const float y_in = time_ms(stream, [&] { y_to_nchw(sy, ty.get(), stream); });
    const float y_out = time_ms(stream, [&] { y_from_nchw(ty.get(), sy, stream); });
    const float w_in = time_ms(stream, [&] { w_to_kcrs(sw, tw.get(), stream); });
    const float w_out = time_ms(stream, [&] { w_from_kcrs(tw.get(), sw, stream); });

    // The candidates run on the planner's scratch as if it were NCHW: the same sizes.
    m_fwd.choice = pick_algorithm<cudnnConvolutionFwdAlgoPerf_t>(
        s, "forward in NCHW",
        [&](cudnnConvolutionFwdAlgoPerf_t* r, int* n) {
            return cudnnFindConvolutionForwardAlgorithmEx(
                h, m_x.get(), sx, m_w.get(), sw, m_fwd_desc.get(), m_y.get(), sy,
                CUDNN_CONVOLUTION_FWD_ALGO_COUNT, n, r, ws, ws_bytes);
        },
        [&](cudnnConvolutionFwdAlgoPerf_t* r, int* n) {
            return cudnnGetConvolutionForwardAlgorithm_v7(h, m_x.get(), m_w.get(), m_fwd_desc.get(),
                                                          m_y.get(),
                                                          CUDNN_CONVOLUTION_FWD_ALGO_COUNT, n, r);
        });
    if (m_fwd.available()) {
        const auto algo = cudnnConvolutionFwdAlgo_t(m_fwd.choice.algo);
        if (!fp32_exact(m_t, m_m))
            MIXLAB_CUDNN_CHECK(cudnnSetConvolutionMathType(m_fwd_desc.get(), m_fwd.choice.math));
        MIXLAB_CUDNN_CHECK(cudnnGetConvolutionForwardWorkspaceSize(
            h, m_x.get(), m_w.get(), m_fwd_desc.get(), m_y.get(), algo, &m_fwd.workspace));
        m_fwd.workspace = std::max(m_fwd.workspace, m_fwd.choice.memory);
        m_fwd.transpose_ms = x_in + w_in + y_out;
    }

    m_data.choice = pick_algorithm<cudnnConvolutionBwdDataAlgoPerf_t>(
        s, "backward data in NCHW",
        [&](cudnnConvolutionBwdDataAlgoPerf_t* r, int* n) {
            return cudnnFindConvolutionBackwardDataAlgorithmEx(
                h, m_w.get(), sw, m_y.get(), sy, m_data_desc.get(), m_x.get(), sx,
                CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, n, r, ws, ws_bytes);
        },
        [&](cudnnConvolutionBwdDataAlgoPerf_t* r, int* n) {
            return cudnnGetConvolutionBackwardDataAlgorithm_v7(
                h, m_w.get(), m_y.get(), m_data_desc.get(), m_x.get(),
                CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, n, r);
        });
    if (m_data.available()) {
        const auto algo = cudnnConvolutionBwdDataAlgo_t(m_data.choice.algo);
        if (!fp32_exact(m_t, m_m))
            MIXLAB_CUDNN_CHECK(cudnnSetConvolutionMathType(m_data_desc.get(), m_data.choice.math));
        MIXLAB_CUDNN_CHECK(cudnnGetConvolutionBackwardDataWorkspaceSize(
            h, m_w.get(), m_y.get(), m_data_desc.get(), m_x.get(), algo, &m_data.workspace));
        m_data.workspace = std::max(m_data.workspace, m_data.choice.memory);
        m_data.transpose_ms = y_in + w_in + x_out;
    }

    m_filter.choice = pick_algorithm<cudnnConvolutionBwdFilterAlgoPerf_t>(
        s, "backward filter in NCHW",
        [&](cudnnConvolutionBwdFilterAlgoPerf_t* r, int* n) {
            return cudnnFindConvolutionBackwardFilterAlgorithmEx(
                h, m_x.get(), sx, m_y.get(), sy, m_filter_desc.get(), m_w.get(), sw,
                CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, n, r, ws, ws_bytes);
        },
        [&](cudnnConvolutionBwdFilterAlgoPerf_t* r, int* n) {
            return cudnnGetConvolutionBackwardFilterAlgorithm_v7(
                h, m_x.get(), m_y.get(), m_filter_desc.get(), m_w.get(),
                CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, n, r);
        });
    if (m_filter.available()) {
        const auto algo = cudnnConvolutionBwdFilterAlgo_t(m_filter.choice.algo);
        if (!fp32_exact(m_t, m_m))
            MIXLAB_CUDNN_CHECK(
                cudnnSetConvolutionMathType(m_filter_desc.get(), m_filter.choice.math));
        MIXLAB_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterWorkspaceSize(
            h, m_x.get(), m_y.get(), m_filter_desc.get(), m_w.get(), algo, &m_filter.workspace));
        m_filter.workspace = std::max(m_filter.workspace, m_filter.choice.memory);
        m_filter.transpose_ms = x_in + y_in + w_out;
    }
    // The transposes' scratch is freed on return: nothing may still be using it.
    MIXLAB_CUDA_CHECK(cudaStreamSynchronize(stream));
}

void NchwRoute::forward(cudnnHandle_t h, const void* x, const void* w, void* y, NchwScratch& sc,
                        const DeviceMemory& ws, cudaStream_t stream) const
{
    x_to_nchw(x, sc.x.get(), stream);
    w_to_kcrs(w, sc.w.get(), stream);
    const float one = 1.0f, zero = 0.0f;
    MIXLAB_CUDNN_CHECK(cudnnConvolutionForward(h, &one, m_x.get(), sc.x.get(), m_w.get(),
                                               sc.w.get(), m_fwd_desc.get(),
                                               cudnnConvolutionFwdAlgo_t(m_fwd.choice.algo),
                                               ws.get(), ws.bytes(), &zero, m_y.get(), sc.y.get()));
    y_from_nchw(sc.y.get(), y, stream);
}

void NchwRoute::backward_data(cudnnHandle_t h, const void* dy, const void* w, void* dx,
                              NchwScratch& sc, const DeviceMemory& ws, cudaStream_t stream) const
{
    y_to_nchw(dy, sc.y.get(), stream);
    w_to_kcrs(w, sc.w.get(), stream);
    const float one = 1.0f, zero = 0.0f;
    MIXLAB_CUDNN_CHECK(cudnnConvolutionBackwardData(
        h, &one, m_w.get(), sc.w.get(), m_y.get(), sc.y.get(), m_data_desc.get(),
        cudnnConvolutionBwdDataAlgo_t(m_data.choice.algo), ws.get(), ws.bytes(), &zero, m_x.get(),
        sc.x.get()));
    x_from_nchw(sc.x.get(), dx, stream);
}

void NchwRoute::backward_filter(cudnnHandle_t h, const void* x, const void* dy, void* dw,
                                NchwScratch& sc, const DeviceMemory& ws, cudaStream_t stream) const
{
    x_to_nchw(x, sc.x.get(), stream);
    y_to_nchw(dy, sc.y.get(), stream);
    const float one = 1.0f, zero = 0.0f;
    MIXLAB_CUDNN_CHECK(cudnnConvolutionBackwardFilter(
        h, &one, m_x.get(), sc.x.get(), m_y.get(), sc.y.get(), m_filter_desc.get(),
        cudnnConvolutionBwdFilterAlgo_t(m_filter.choice.algo), ws.get(), ws.bytes(), &zero,
        m_w.get(), sc.w.get()));
    w_from_kcrs(sc.w.get(), dw, stream);
}

} // namespace mixlab::cuda
