// The channel-padded route (conv_route.h): input channels zero-padded to a multiple of 8
// in x and w, cuDNN on the padded tensors, the data and filter gradients cut back to the
// real channels. A 3-channel image stem has rows of 6 bytes in 16-bit, which no
// tensor-core kernel reads; with 8 channels (zeros add nothing to any sum, and the
// gradients of the padding are never used) it gets them. MIXLAB_CONV_PAD_CHANNELS=1
// forces the route wherever channels are not a multiple of 8 (for `mixlab-cli check`),
// =0 turns it off (A/B runs).
#pragma once
#include "backends/cuda/conv_route.h"

namespace mixlab::cuda {

class ChannelPadRoute final : public ConvRoute {
public:
    ChannelPadRoute(const ConvGeometry& g, DType t, MathMode m);

    // The multiple input channels are padded to.
    static constexpr int k_channel_multiple = 8;

    const char* name() const override { return "on channels padded to 8"; }
    void plan(cudnnHandle_t h, const conv_search::Search& s, void* sx, void* sy, void* sw, void* ws,
              std::size_t ws_bytes, cudaStream_t stream) override;
    std::size_t x_bytes() const override;
    std::size_t y_bytes() const override { return 0; } // y is used as it is
    std::size_t w_bytes() const override;
    void forward(cudnnHandle_t h, const void* x, const void* w, void* y, RouteScratch& sc,
                 const DeviceMemory& ws, cudaStream_t stream) const override;
    void backward_data(cudnnHandle_t h, const void* dy, const void* w, void* dx, RouteScratch& sc,
                       const DeviceMemory& ws, cudaStream_t stream) const override;
    void backward_filter(cudnnHandle_t h, const void* x, const void* dy, void* dw, RouteScratch& sc,
                         const DeviceMemory& ws, cudaStream_t stream) const override;

private:
    std::size_t x_rows() const; // pixels: N * H * W
    std::size_t w_rows() const; // filter taps: K * R * S
    int m_padded;               // input channels rounded up to k_channel_multiple
};

} // namespace mixlab::cuda
