// CUDA backend batch normalisation: argument checks on the host, then the kernels of
// batchnorm.cu (statistics through the backend's reduction scratch).
#include "backends/cuda/cuda_backend.h"

#include "backends/backend_validate.h"
#include "backends/cuda/batchnorm.cuh"

#include <string>

namespace mixlab::cuda {

namespace {

void check_activation(const char* op, Activation act)
{
    validate::require(act == Activation::None || act == Activation::Relu, k_name, op,
                      "the activation fused into a batch norm must be linear or relu, got ",
                      activation_name(act));
}

BatchNormParams params(Activation act, int rows, int channels, const Buffer& scale,
                       const Buffer* shift)
{
    BatchNormParams p;
    p.relu = act == Activation::Relu;
    p.rows = std::size_t(rows);
    p.channels = channels;
    p.scale = scale.as<float>();
    p.shift = shift ? shift->as<float>() : nullptr;
    return p;
}

} // namespace

void CudaBackend::batchnorm_forward_train(Activation act, const Buffer& x, int rows, int channels,
                                          const Buffer& scale, const Buffer& shift, float momentum,
                                          float epsilon, Buffer& running_mean, Buffer& running_var,
                                          Buffer& saved_mean, Buffer& saved_inv_std, Buffer& y)
{
    check_activation("batchnorm_forward_train", act);
    validate::batchnorm(k_name, "batchnorm_forward_train", x, rows, channels,
                        {&scale, &shift, &running_mean, &running_var, &saved_mean, &saved_inv_std},
                        y);
    launch_batchnorm_train(params(act, rows, channels, scale, &shift), x.data(), x.dtype(),
                           momentum, epsilon, running_mean.as<float>(), running_var.as<float>(),
                           saved_mean.as<float>(), saved_inv_std.as<float>(), y.data(), m_reduce,
                           stream());
}

void CudaBackend::batchnorm_forward_eval(Activation act, const Buffer& x, int rows, int channels,
                                         const Buffer& scale, const Buffer& shift,
                                         const Buffer& running_mean, const Buffer& running_var,
                                         float epsilon, Buffer& y)
{
    check_activation("batchnorm_forward_eval", act);
    validate::batchnorm(k_name, "batchnorm_forward_eval", x, rows, channels,
                        {&scale, &shift, &running_mean, &running_var}, y);
    launch_batchnorm_eval(params(act, rows, channels, scale, &shift), x.data(), x.dtype(),
                          running_mean.as<float>(), running_var.as<float>(), epsilon, y.data(),
                          stream());
}

void CudaBackend::batchnorm_backward(Activation act, const Buffer& x, const Buffer& y,
                                     const Buffer& dy, int rows, int channels, const Buffer& scale,
                                     const Buffer& saved_mean, const Buffer& saved_inv_std,
                                     Buffer& dx, Buffer& dscale, Buffer& dshift)
{
    const char* op = "batchnorm_backward";
    check_activation(op, act);
    validate::batchnorm(k_name, op, x, rows, channels,
                        {&scale, &saved_mean, &saved_inv_std, &dscale, &dshift}, dx);
    validate::batchnorm(k_name, op, x, rows, channels, {}, dy);
    validate::batchnorm(k_name, op, x, rows, channels, {}, y);
    launch_batchnorm_backward(params(act, rows, channels, scale, nullptr), x.data(), y.data(),
                              dy.data(), x.dtype(), saved_mean.as<float>(),
                              saved_inv_std.as<float>(), dx.data(), dscale.as<float>(),
                              dshift.as<float>(), m_reduce, stream());
}

} // namespace mixlab::cuda
