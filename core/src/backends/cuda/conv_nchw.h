// A convolution run by cuDNN in NCHW (KCRS filters) on the engine's NHWC tensors: the
// operands are transposed into scratch, cuDNN's NCHW algorithm runs, and the result is
// transposed back. Why: for fp32 data cuDNN's NHWC kernels are slow SIMT ones (PyTorch's
// channels_last fp32 is slow for the same reason) while its NCHW kernels are fast. The
// planner (conv_cudnn.cpp) takes this route per direction only where its time, the
// transposes included, beats the NHWC choice; MIXLAB_CONV_LAYOUT=nchw forces it (for
// `mixlab-cli check`), =nhwc turns it off (for A/B runs).
#pragma once
#include "backends/cuda/conv_search.h"
#include "backends/cuda/cudnn_handles.h"
#include "backends/cuda/device_memory.h"

#include <cuda_runtime.h>

#include <cstddef>

namespace mixlab::cuda {

// Where the route transposes its operands: one set for every plan that takes it (stream
// order keeps their uses apart), grown while planning like the workspace.
struct NchwScratch {
    DeviceMemory x, y, w; // x-, y- and w-sized
};

// One direction of the route as planned: cuDNN's choice in NCHW and what the transposes
// around it cost, timed at plan time.
struct NchwDirection {
    conv_search::Choice choice; // direct: cuDNN offered nothing acceptable (route unusable)
    std::size_t workspace = 0;
    float transpose_ms = 0;
    bool available() const { return !choice.direct; }
    float ms() const { return choice.ms + transpose_ms; }
};

class NchwRoute {
public:
    NchwRoute(const ConvGeometry& g, DType t, MathMode m);
    NchwRoute(const NchwRoute&) = delete;
    NchwRoute& operator=(const NchwRoute&) = delete;

    // Times cuDNN's NCHW candidates for each direction (FindEx on the planner's scratch
    // sx, sy, sw of x's, y's and w's sizes, and its workspace) and the transposes each
    // direction needs. A direction stays unavailable where cuDNN has nothing acceptable
    // or there is no room for the transposes' scratch.
    void plan(cudnnHandle_t h, const conv_search::Search& s, void* sx, void* sy, void* sw, void* ws,
              std::size_t ws_bytes, cudaStream_t stream);
    const NchwDirection& forward_plan() const { return m_fwd; }
    const NchwDirection& backward_data_plan() const { return m_data; }
    const NchwDirection& backward_filter_plan() const { return m_filter; }

    // Each runs one direction on NHWC / KRSC operands through `sc` (grown to this
    // geometry) and the shared workspace.
    void forward(cudnnHandle_t h, const void* x, const void* w, void* y, NchwScratch& sc,
                 const DeviceMemory& ws, cudaStream_t stream) const;
    void backward_data(cudnnHandle_t h, const void* dy, const void* w, void* dx, NchwScratch& sc,
                       const DeviceMemory& ws, cudaStream_t stream) const;
    void backward_filter(cudnnHandle_t h, const void* x, const void* dy, void* dw, NchwScratch& sc,
                         const DeviceMemory& ws, cudaStream_t stream) const;

private:
    // NHWC <-> NCHW for x- and y-shaped tensors, KRSC <-> KCRS for filters.
    void x_to_nchw(const void* src, void* dst, cudaStream_t s) const;
    void x_from_nchw(const void* src, void* dst, cudaStream_t s) const;
    void y_to_nchw(const void* src, void* dst, cudaStream_t s) const;
    void y_from_nchw(const void* src, void* dst, cudaStream_t s) const;
    void w_to_kcrs(const void* src, void* dst, cudaStream_t s) const;
    void w_from_kcrs(const void* src, void* dst, cudaStream_t s) const;

    ConvGeometry m_g;
    DType m_t;
    MathMode m_m;
    TensorDesc m_x, m_y;
    FilterDesc m_w;
    // One descriptor per direction: each carries the math type its algorithm needs.
    ConvDesc m_fwd_desc, m_data_desc, m_filter_desc;
    NchwDirection m_fwd, m_data, m_filter;
};

} // namespace mixlab::cuda
