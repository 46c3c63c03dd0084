// What every convolution route shares: the per-direction candidate search on the
// route's descriptors, cuDNN's three calls on them, and the copies' timing.
#include "backends/cuda/conv_route.h"

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/gated_timing.h"

#include <algorithm>

namespace mixlab::cuda {

using namespace conv_search;

void ConvRoute::make_conv_descriptors(const ConvGeometry& g)
{
    const cudnnMathType_t mt = requested_math(m_t, m_m);
    m_fwd_desc = make_conv_desc(g, mt);
    m_data_desc = make_conv_desc(g, mt);
    m_filter_desc = make_conv_desc(g, mt);
}

std::optional<float> ConvRoute::time_ms(cudaStream_t stream, const std::function<void()>& work)
{
    // The median of 3 where this took the mean of 3 back-to-back calls: one slow run
    // (a clock ramp) then moves the copies' time, and so the route's choice, less.
    return time_gated_ms(stream, GatedRuns{1, 3}, [&] {
        work(); // the copies' launchers throw on an error; they never refuse
        return true;
    });
}

void ConvRoute::search(cudnnHandle_t h, const Search& s, void* x, void* y, void* w, void* ws,
                       std::size_t ws_bytes)
{
    const float one = 1.0f, zero = 0.0f;
    // A candidate runs with the math type it was timed with (exact fp32 keeps FMA math).
    const auto with_math = [&](const ConvDesc& desc, cudnnMathType_t mt) {
        if (!fp32_exact(m_t, m_m)) MIXLAB_CUDNN_CHECK(cudnnSetConvolutionMathType(desc.get(), mt));
    };
    m_fwd.choice = pick_algorithm<cudnnConvolutionFwdAlgoPerf_t>(
        s, "forward on a route",
        [&](cudnnConvolutionFwdAlgoPerf_t* r, int* n) {
            return cudnnFindConvolutionForwardAlgorithmEx(
                h, m_x.get(), x, m_w.get(), w, m_fwd_desc.get(), m_y.get(), y,
                CUDNN_CONVOLUTION_FWD_ALGO_COUNT, n, r, ws, ws_bytes);
        },
        [&](cudnnConvolutionFwdAlgoPerf_t* r, int* n) {
            return cudnnGetConvolutionForwardAlgorithm_v7(h, m_x.get(), m_w.get(), m_fwd_desc.get(),
                                                          m_y.get(),
                                                          CUDNN_CONVOLUTION_FWD_ALGO_COUNT, n, r);
        },
        [&](const cudnnConvolutionFwdAlgoPerf_t& c) {
            with_math(m_fwd_desc, c.mathType);
            return cudnnConvolutionForward(h, &one, m_x.get(), x, m_w.get(), w, m_fwd_desc.get(),
                                           c.algo, ws, ws_bytes, &zero, m_y.get(), y);
        });
    if (m_fwd.available()) {
        const auto algo = cudnnConvolutionFwdAlgo_t(m_fwd.choice.algo);
        if (!fp32_exact(m_t, m_m))
            MIXLAB_CUDNN_CHECK(cudnnSetConvolutionMathType(m_fwd_desc.get(), m_fwd.choice.math));
        MIXLAB_CUDNN_CHECK(cudnnGetConvolutionForwardWorkspaceSize(
            h, m_x.get(), m_w.get(), m_fwd_desc.get(), m_y.get(), algo, &m_fwd.workspace));
        m_fwd.workspace = std::max(m_fwd.workspace, m_fwd.choice.memory);
    }

    m_data.choice = pick_algorithm<cudnnConvolutionBwdDataAlgoPerf_t>(
        s, "backward data on a route",
        [&](cudnnConvolutionBwdDataAlgoPerf_t* r, int* n) {
            return cudnnFindConvolutionBackwardDataAlgorithmEx(
                h, m_w.get(), w, m_y.get(), y, m_data_desc.get(), m_x.get(), x,
                CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, n, r, ws, ws_bytes);
        },
        [&](cudnnConvolutionBwdDataAlgoPerf_t* r, int* n) {
            return cudnnGetConvolutionBackwardDataAlgorithm_v7(
                h, m_w.get(), m_y.get(), m_data_desc.get(), m_x.get(),
                CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, n, r);
        },
        [&](const cudnnConvolutionBwdDataAlgoPerf_t& c) {
            with_math(m_data_desc, c.mathType);
            return cudnnConvolutionBackwardData(h, &one, m_w.get(), w, m_y.get(), y,
                                                m_data_desc.get(), c.algo, ws, ws_bytes, &zero,
                                                m_x.get(), x);
        });
    if (m_data.available()) {
        const auto algo = cudnnConvolutionBwdDataAlgo_t(m_data.choice.algo);
        if (!fp32_exact(m_t, m_m))
            MIXLAB_CUDNN_CHECK(cudnnSetConvolutionMathType(m_data_desc.get(), m_data.choice.math));
        MIXLAB_CUDNN_CHECK(cudnnGetConvolutionBackwardDataWorkspaceSize(
            h, m_w.get(), m_y.get(), m_data_desc.get(), m_x.get(), algo, &m_data.workspace));
        m_data.workspace = std::max(m_data.workspace, m_data.choice.memory);
    }

    m_filter.choice = pick_algorithm<cudnnConvolutionBwdFilterAlgoPerf_t>(
        s, "backward filter on a route",
        [&](cudnnConvolutionBwdFilterAlgoPerf_t* r, int* n) {
            return cudnnFindConvolutionBackwardFilterAlgorithmEx(
                h, m_x.get(), x, m_y.get(), y, m_filter_desc.get(), m_w.get(), w,
                CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, n, r, ws, ws_bytes);
        },
        [&](cudnnConvolutionBwdFilterAlgoPerf_t* r, int* n) {
            return cudnnGetConvolutionBackwardFilterAlgorithm_v7(
                h, m_x.get(), m_y.get(), m_filter_desc.get(), m_w.get(),
                CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, n, r);
        },
        [&](const cudnnConvolutionBwdFilterAlgoPerf_t& c) {
            with_math(m_filter_desc, c.mathType);
            return cudnnConvolutionBackwardFilter(h, &one, m_x.get(), x, m_y.get(), y,
                                                  m_filter_desc.get(), c.algo, ws, ws_bytes, &zero,
                                                  m_w.get(), w);
        });
    if (m_filter.available()) {
        const auto algo = cudnnConvolutionBwdFilterAlgo_t(m_filter.choice.algo);
        if (!fp32_exact(m_t, m_m))
            MIXLAB_CUDNN_CHECK(
                cudnnSetConvolutionMathType(m_filter_desc.get(), m_filter.choice.math));
        MIXLAB_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterWorkspaceSize(
            h, m_x.get(), m_y.get(), m_filter_desc.get(), m_w.get(), algo, &m_filter.workspace));
        m_filter.workspace = std::max(m_filter.workspace, m_filter.choice.memory);
    }
}

void ConvRoute::run_forward(cudnnHandle_t h, const void* x, const void* w, void* y,
                            const DeviceMemory& ws) const
{
    const float one = 1.0f, zero = 0.0f;
    MIXLAB_CUDNN_CHECK(cudnnConvolutionForward(
        h, &one, m_x.get(), x, m_w.get(), w, m_fwd_desc.get(),
        cudnnConvolutionFwdAlgo_t(m_fwd.choice.algo), ws.get(), ws.bytes(), &zero, m_y.get(), y));
}

void ConvRoute::run_backward_data(cudnnHandle_t h, const void* w, const void* dy, void* dx,
                                  const DeviceMemory& ws) const
{
    const float one = 1.0f, zero = 0.0f;
    MIXLAB_CUDNN_CHECK(
        cudnnConvolutionBackwardData(h, &one, m_w.get(), w, m_y.get(), dy, m_data_desc.get(),
                                     cudnnConvolutionBwdDataAlgo_t(m_data.choice.algo), ws.get(),
                                     ws.bytes(), &zero, m_x.get(), dx));
}

void ConvRoute::run_backward_filter(cudnnHandle_t h, const void* x, const void* dy, void* dw,
                                    const DeviceMemory& ws) const
{
    const float one = 1.0f, zero = 0.0f;
    MIXLAB_CUDNN_CHECK(
        cudnnConvolutionBackwardFilter(h, &one, m_x.get(), x, m_y.get(), dy, m_filter_desc.get(),
                                       cudnnConvolutionBwdFilterAlgo_t(m_filter.choice.algo),
                                       ws.get(), ws.bytes(), &zero, m_w.get(), dw));
}

} // namespace mixlab::cuda
