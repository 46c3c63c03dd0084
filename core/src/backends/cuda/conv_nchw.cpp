// The NCHW route: descriptors, the transposes and their timing, and each direction as
// transpose, cuDNN, transpose.
#include "backends/cuda/conv_nchw.h"

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/layout_transpose.cuh"
#include "mixlab/error.h"

namespace mixlab::cuda {

NchwRoute::NchwRoute(const ConvGeometry& g, DType t, MathMode m) : ConvRoute(g, t, m)
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
    make_conv_descriptors(g);
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

void NchwRoute::plan(cudnnHandle_t h, const conv_search::Search& s, void* sx, void* sy, void* sw,
                     void* ws, std::size_t ws_bytes, cudaStream_t stream)
{
    if (s.force_direct || !s.can_time) return; // untimed, the route cannot show it wins
    // The transposes' destinations; without room for them the route stays unavailable.
    DeviceMemory tx, ty, tw;
    try {
        tx = DeviceMemory(x_bytes(), "convolution planning scratch");
        ty = DeviceMemory(y_bytes(), "convolution planning scratch");
        tw = DeviceMemory(w_bytes(), "convolution planning scratch");
    } catch (const OutOfMemoryError&) {
        return;
    }
    const auto x_in = time_ms(stream, [&] { x_to_nchw(sx, tx.get(), stream); });
    const auto x_out = time_ms(stream, [&] { x_from_nchw(tx.get(), sx, stream); });
    const auto y_in = time_ms(stream, [&] { y_to_nchw(sy, ty.get(), stream); });
    const auto y_out = time_ms(stream, [&] { y_from_nchw(ty.get(), sy, stream); });
    const auto w_in = time_ms(stream, [&] { w_to_kcrs(sw, tw.get(), stream); });
    const auto w_out = time_ms(stream, [&] { w_from_kcrs(tw.get(), sw, stream); });
    if (x_in && x_out && y_in && y_out && w_in && w_out) {
        // The candidates run on the planner's scratch as if it were NCHW: the same sizes.
        search(h, s, sx, sy, sw, ws, ws_bytes);
        m_fwd.copy_ms = *x_in + *w_in + *y_out;
        m_data.copy_ms = *y_in + *w_in + *x_out;
        m_filter.copy_ms = *x_in + *y_in + *w_out;
    } // else untimed copies: the route stays unavailable
    // The transposes' scratch is freed on return: nothing may still be using it.
    MIXLAB_CUDA_CHECK(cudaStreamSynchronize(stream));
}

void NchwRoute::forward(cudnnHandle_t h, const void* x, const void* w, void* y, RouteScratch& sc,
                        const DeviceMemory& ws, cudaStream_t stream) const
{
    x_to_nchw(x, sc.x.get(), stream);
    w_to_kcrs(w, sc.w.get(), stream);
    run_forward(h, sc.x.get(), sc.w.get(), sc.y.get(), ws);
    y_from_nchw(sc.y.get(), y, stream);
}

void NchwRoute::backward_data(cudnnHandle_t h, const void* dy, const void* w, void* dx,
                              RouteScratch& sc, const DeviceMemory& ws, cudaStream_t stream) const
{
    y_to_nchw(dy, sc.y.get(), stream);
    w_to_kcrs(w, sc.w.get(), stream);
    run_backward_data(h, sc.w.get(), sc.y.get(), sc.x.get(), ws);
    x_from_nchw(sc.x.get(), dx, stream);
}

void NchwRoute::backward_filter(cudnnHandle_t h, const void* x, const void* dy, void* dw,
                                RouteScratch& sc, const DeviceMemory& ws, cudaStream_t stream) const
{
    x_to_nchw(x, sc.x.get(), stream);
    y_to_nchw(dy, sc.y.get(), stream);
    run_backward_filter(h, sc.x.get(), sc.y.get(), sc.w.get(), ws);
    w_from_kcrs(sc.w.get(), dw, stream);
}

} // namespace mixlab::cuda
