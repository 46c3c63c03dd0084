// Launchers for batch normalisation over NHWC rows of `channels` (x, y, dy, dx in one
// floating dtype; every per-channel array float32). Formulas and their order follow the
// CPU reference (cpu_batchnorm.cpp); statistics are reduced deterministically. A ReLU
// after the batch norm can be fused: into y's pass forward, as a mask from y backward.
#pragma once
#include "backends/cuda/reduce_scratch.h"
#include "mixlab/dtype.h"

#include <cuda_runtime.h>

#include <cstddef>

namespace mixlab::cuda {

struct BatchNormParams {
    std::size_t rows = 0;
    int channels = 0;
    const float* scale = nullptr;
    const float* shift = nullptr;
    bool relu = false; // y = max(y, 0); backward takes dy only where y > 0
};

// Batch mean and biased variance -> saved_mean, saved_inv_std = 1/sqrt(var + eps);
// running statistics updated with momentum (unbiased variance); then y. Three launches.
void launch_batchnorm_train(const BatchNormParams& p, const void* x, DType t, float momentum,
                            float epsilon, float* running_mean, float* running_var,
                            float* saved_mean, float* saved_inv_std, void* y,
                            ReduceScratch& scratch, cudaStream_t stream);
// y from the running statistics. One launch.
void launch_batchnorm_eval(const BatchNormParams& p, const void* x, DType t,
                           const float* running_mean, const float* running_var, float epsilon,
                           void* y, cudaStream_t stream);
// dshift = sum dy, dscale = sum dy * xhat, then dx. Three launches. y (the forward
// output) is read only with p.relu, by both passes that read dy.
void launch_batchnorm_backward(const BatchNormParams& p, const void* x, const void* y,
                               const void* dy, DType t, const float* saved_mean,
                               const float* saved_inv_std, void* dx, float* dscale, float* dshift,
                               ReduceScratch& scratch, cudaStream_t stream);

} // namespace mixlab::cuda
