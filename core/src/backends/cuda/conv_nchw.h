// The NCHW route (conv_route.h): the operands transposed NHWC -> NCHW and KRSC -> KCRS,
// cuDNN's NCHW algorithms, the result transposed back. For fp32 data cuDNN's NHWC
// kernels are slow SIMT ones (PyTorch's channels_last fp32 is slow for the same reason)
// while its NCHW kernels are fast. MIXLAB_CONV_LAYOUT=nchw forces the route wherever
// cuDNN has an NCHW algorithm (for `mixlab-cli check`), =nhwc turns it off (A/B runs).
#pragma once
#include "backends/cuda/conv_route.h"

namespace mixlab::cuda {

class NchwRoute final : public ConvRoute {
public:
    NchwRoute(const ConvGeometry& g, DType t, MathMode m);

    const char* name() const override { return "in NCHW (transposed)"; }
    void plan(cudnnHandle_t h, const conv_search::Search& s, void* sx, void* sy, void* sw, void* ws,
              std::size_t ws_bytes, cudaStream_t stream) override;
    std::size_t x_bytes() const override { return m_g.x_count() * dtype_size(m_t); }
    std::size_t y_bytes() const override { return m_g.y_count() * dtype_size(m_t); }
    std::size_t w_bytes() const override { return m_g.w_count() * dtype_size(m_t); }
    void forward(cudnnHandle_t h, const void* x, const void* w, void* y, RouteScratch& sc,
                 const DeviceMemory& ws, cudaStream_t stream) const override;
    void backward_data(cudnnHandle_t h, const void* dy, const void* w, void* dx, RouteScratch& sc,
                       const DeviceMemory& ws, cudaStream_t stream) const override;
    void backward_filter(cudnnHandle_t h, const void* x, const void* dy, void* dw, RouteScratch& sc,
                         const DeviceMemory& ws, cudaStream_t stream) const override;

private:
    // NHWC <-> NCHW for x- and y-shaped tensors, KRSC <-> KCRS for filters.
    void x_to_nchw(const void* src, void* dst, cudaStream_t s) const;
    void x_from_nchw(const void* src, void* dst, cudaStream_t s) const;
    void y_to_nchw(const void* src, void* dst, cudaStream_t s) const;
    void y_from_nchw(const void* src, void* dst, cudaStream_t s) const;
    void w_to_kcrs(const void* src, void* dst, cudaStream_t s) const;
    void w_from_kcrs(const void* src, void* dst, cudaStream_t s) const;
};

} // namespace mixlab::cuda
