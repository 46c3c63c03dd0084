// CUDA backend batch normalisation: argument checks on the host, then the kernels of
// batchnorm.cu (statistics through the backend's reduction scratch).
#include "cuda/cuda_backend.h"

#include "backend_validate.h"
#include "cuda/batchnorm.cuh"

namespace mixlab::cuda {

namespace {

BatchNormParams params(int rows, int channels, const Buffer& scale, const Buffer* shift)
{
    BatchNormParams p;
    p.rows = std::size_t(rows);
    p.channels = channels;
    p.scale = scale.as<float>();
    p.shift = shift ? shift->as<float>() : nullptr;
    return p;
}

} // namespace

void CudaBackend::batchnorm_forward_train(const Buffer& x, int rows, int channels,
                                          const Buffer& scale, const Buffer& shift,
                                          float momentum, float epsilon, Buffer& running_mean,
                                          Buffer& running_var, Buffer& saved_mean,
                                          Buffer& saved_inv_std, Buffer& y)
{
    validate::batchnorm(k_name, "batchnorm_forward_train", x, rows, channels,
                        {&scale, &shift, &running_mean, &running_var, &saved_mean, &saved_inv_std},
                        y);
    launch_batchnorm_train(params(rows, channels, scale, &shift), x.data(), x.dtype(), momentum,
                           epsilon, running_mean.as<float>(), running_var.as<float>(),
                           saved_mean.as<float>(), saved_inv_std.as<float>(), y.data(), m_reduce,
                           stream());
}

void CudaBackend::batchnorm_forward_eval(const Buffer& x, int rows, int channels,
                                         const Buffer& scale, const Buffer& shift,
                                         const Buffer& running_mean, const Buffer& running_var,
                                         float epsilon, Buffer& y)
{
    validate::batchnorm(k_name, "batchnorm_forward_eval", x, rows, channels,
                        {&scale, &shift, &running_mean, &running_var}, y);
    launch_batchnorm_eval(params(rows, channels, scale, &shift), x.data(), x.dtype(),
                          running_mean.as<float>(), running_var.as<float>(), epsilon, y.data(),
                          stream());
}

void CudaBackend::batchnorm_backward(const Buffer& x, const Buffer& dy, int rows, int channels,
                                     const Buffer& scale, const Buffer& saved_mean,
                                     const Buffer& saved_inv_std, Buffer& dx, Buffer& dscale,
                                     Buffer& dshift)
{
    const char* op = "batchnorm_backward";
    validate::batchnorm(k_name, op, x, rows, channels,
                        {&scale, &saved_mean, &saved_inv_std, &dscale, &dshift}, dx);
    validate::batchnorm(k_name, op, x, rows, channels, {}, dy);
    launch_batchnorm_backward(params(rows, channels, scale, nullptr), x.data(), dy.data(),
                              x.dtype(), saved_mean.as<float>(), saved_inv_std.as<float>(),
                              dx.data(), dscale.as<float>(), dshift.as<float>(), m_reduce,
                              stream());
}

} // namespace mixlab::cuda
