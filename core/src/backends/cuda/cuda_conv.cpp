// CUDA backend convolutions: argument checks on the host, then the cuDNN plan for the
// geometry, dtype and math (built at conv2d_prepare, or on first use).
#include "backends/cuda/cuda_backend.h"

#include "backends/backend_validate.h"
#include "backends/cuda/conv_cudnn.h"

namespace mixlab::cuda {

ConvPlanInfo CudaBackend::conv2d_prepare(const ConvGeometry& g, DType dtype, MathMode math)
{
    validate::conv2d_prepare(k_name, g, dtype);
    return m_conv->prepare(g, dtype, math);
}

void CudaBackend::conv2d_forward(const ConvGeometry& g, const Buffer& x, const Buffer& w,
                                 MathMode math, Buffer& y)
{
    validate::conv2d(k_name, "conv2d_forward", g, x, w, y);
    m_conv->forward(g, x.dtype(), math, x.data(), w.data(), y.data());
}

void CudaBackend::conv2d_backward_data(const ConvGeometry& g, const Buffer& dy, const Buffer& w,
                                       MathMode math, Buffer& dx)
{
    validate::conv2d(k_name, "conv2d_backward_data", g, dx, w, dy);
    m_conv->backward_data(g, dy.dtype(), math, dy.data(), w.data(), dx.data());
}

void CudaBackend::conv2d_backward_filter(const ConvGeometry& g, const Buffer& x, const Buffer& dy,
                                         MathMode math, Buffer& dw)
{
    validate::conv2d(k_name, "conv2d_backward_filter", g, x, dw, dy);
    m_conv->backward_filter(g, x.dtype(), math, x.data(), dy.data(), dw.data());
}

std::vector<ConvPlanRecord> CudaBackend::conv_plans() const { return m_conv->plans(); }

std::vector<ConvPlanRecord> conv_plans(const Backend& backend)
{
    const auto* cuda = dynamic_cast<const CudaBackend*>(&backend);
    return cuda ? cuda->conv_plans() : std::vector<ConvPlanRecord>{};
}

} // namespace mixlab::cuda
