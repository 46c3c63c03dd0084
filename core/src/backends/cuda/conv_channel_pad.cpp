// The channel-padded route: descriptors of the padded tensors, the pad and unpad copies
// and their timing, and each direction around cuDNN.
#include "backends/cuda/conv_channel_pad.h"

#include "backends/cuda/channel_pad.cuh"
#include "backends/cuda/cuda_check.h"
#include "mixlab/error.h"

namespace mixlab::cuda {

ChannelPadRoute::ChannelPadRoute(const ConvGeometry& g, DType t, MathMode m)
    : ConvRoute(g, t, m),
      m_padded((g.in_c + k_channel_multiple - 1) / k_channel_multiple * k_channel_multiple)
{
    const cudnnDataType_t dt = cudnn_data_type(t, "conv2d");
    m_x = TensorDesc::create();
    MIXLAB_CUDNN_CHECK(cudnnSetTensor4dDescriptor(m_x.get(), CUDNN_TENSOR_NHWC, dt, g.batch,
                                                  m_padded, g.in_h, g.in_w));
    m_y = TensorDesc::create();
    MIXLAB_CUDNN_CHECK(cudnnSetTensor4dDescriptor(m_y.get(), CUDNN_TENSOR_NHWC, dt, g.batch,
                                                  g.out_c, g.out_h, g.out_w));
    m_w = FilterDesc::create(); // KRSC with C padded
    MIXLAB_CUDNN_CHECK(cudnnSetFilter4dDescriptor(m_w.get(), dt, CUDNN_TENSOR_NHWC, g.out_c,
                                                  m_padded, g.kernel_h, g.kernel_w));
    make_conv_descriptors(g);
}

std::size_t ChannelPadRoute::x_rows() const
{
    return std::size_t(m_g.batch) * std::size_t(m_g.in_h) * std::size_t(m_g.in_w);
}
std::size_t ChannelPadRoute::w_rows() const
{
    return std::size_t(m_g.out_c) * std::size_t(m_g.kernel_h) * std::size_t(m_g.kernel_w);
}
std::size_t ChannelPadRoute::x_bytes() const
{
    return x_rows() * std::size_t(m_padded) * dtype_size(m_t);
}
std::size_t ChannelPadRoute::w_bytes() const
{
    return w_rows() * std::size_t(m_padded) * dtype_size(m_t);
}

void ChannelPadRoute::plan(cudnnHandle_t h, const conv_search::Search& s, void* sx, void* sy,
                           void* sw, void* ws, std::size_t ws_bytes, cudaStream_t stream)
{
    if (s.force_direct || !s.can_time) return; // untimed, the route cannot show it wins
    DeviceMemory tx, tw; // the padded tensors, filled like the planner's scratch
    try {
        tx = DeviceMemory(x_bytes(), "convolution planning scratch");
        tw = DeviceMemory(w_bytes(), "convolution planning scratch");
    } catch (const OutOfMemoryError&) {
        return;
    }
    const int c = m_g.in_c;
    const auto x_in = time_ms(
        stream, [&] { launch_pad_channels(sx, tx.get(), x_rows(), c, m_padded, m_t, stream); });
    const auto x_out = time_ms(
        stream, [&] { launch_unpad_channels(tx.get(), sx, x_rows(), m_padded, c, m_t, stream); });
    const auto w_in = time_ms(
        stream, [&] { launch_pad_channels(sw, tw.get(), w_rows(), c, m_padded, m_t, stream); });
    const auto w_out = time_ms(
        stream, [&] { launch_unpad_channels(tw.get(), sw, w_rows(), m_padded, c, m_t, stream); });
    if (x_in && x_out && w_in && w_out) {
        search(h, s, tx.get(), sy, tw.get(), ws, ws_bytes);
        m_fwd.copy_ms = *x_in + *w_in;
        m_data.copy_ms = *w_in + *x_out;
        m_filter.copy_ms = *x_in + *w_out;
    } // else untimed copies: the route stays unavailable
    // The padded scratch is freed on return: nothing may still be using it.
    MIXLAB_CUDA_CHECK(cudaStreamSynchronize(stream));
}

void ChannelPadRoute::forward(cudnnHandle_t h, const void* x, const void* w, void* y,
                              RouteScratch& sc, const DeviceMemory& ws, cudaStream_t stream) const
{
    launch_pad_channels(x, sc.x.get(), x_rows(), m_g.in_c, m_padded, m_t, stream);
    launch_pad_channels(w, sc.w.get(), w_rows(), m_g.in_c, m_padded, m_t, stream);
    run_forward(h, sc.x.get(), sc.w.get(), y, ws);
}

void ChannelPadRoute::backward_data(cudnnHandle_t h, const void* dy, const void* w, void* dx,
                                    RouteScratch& sc, const DeviceMemory& ws,
                                    cudaStream_t stream) const
{
    launch_pad_channels(w, sc.w.get(), w_rows(), m_g.in_c, m_padded, m_t, stream);
    run_backward_data(h, sc.w.get(), dy, sc.x.get(), ws);
    launch_unpad_channels(sc.x.get(), dx, x_rows(), m_padded, m_g.in_c, m_t, stream);
}

void ChannelPadRoute::backward_filter(cudnnHandle_t h, const void* x, const void* dy, void* dw,
                                      RouteScratch& sc, const DeviceMemory& ws,
                                      cudaStream_t stream) const
{
    launch_pad_channels(x, sc.x.get(), x_rows(), m_g.in_c, m_padded, m_t, stream);
    run_backward_filter(h, sc.x.get(), dy, sc.w.get(), ws);
    launch_unpad_channels(sc.w.get(), dw, w_rows(), m_padded, m_g.in_c, m_t, stream);
}

} // namespace mixlab::cuda
