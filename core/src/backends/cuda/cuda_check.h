// Checks for CUDA runtime and cuBLAS(Lt) calls: a failure becomes a mixlab::CudaError
// naming the call text, file and line (OutOfMemoryError when the device ran out).
#pragma once
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstddef>

namespace mixlab::cuda {

[[noreturn]] void throw_cuda_error(cudaError_t err, const char* call, const char* file, int line);
[[noreturn]] void throw_cublas_error(cublasStatus_t status, const char* call, const char* file,
                                     int line);
// cudaMalloc-style failure for `bytes`: reports what is free and total on the device.
[[noreturn]] void throw_out_of_memory(std::size_t bytes, const char* what);
// After a kernel launch: configuration errors surface here, not at the next sync.
void check_launch(const char* kernel, const char* file, int line);
// For destructors: logs a failed call to stderr instead of throwing.
void log_cuda_error(cudaError_t err, const char* call, const char* file, int line) noexcept;

} // namespace mixlab::cuda

#define MIXLAB_CUDA_CHECK(call)                                                                    \
    do {                                                                                           \
        const cudaError_t mixlab_err_ = (call);                                                    \
        if (mixlab_err_ != cudaSuccess)                                                            \
            ::mixlab::cuda::throw_cuda_error(mixlab_err_, #call, __FILE__, __LINE__);              \
    } while (0)

#define MIXLAB_CUBLAS_CHECK(call)                                                                  \
    do {                                                                                           \
        const cublasStatus_t mixlab_st_ = (call);                                                  \
        if (mixlab_st_ != CUBLAS_STATUS_SUCCESS)                                                   \
            ::mixlab::cuda::throw_cublas_error(mixlab_st_, #call, __FILE__, __LINE__);             \
    } while (0)

#define MIXLAB_CUDA_CHECK_LAUNCH(kernel) ::mixlab::cuda::check_launch(kernel, __FILE__, __LINE__)

// Destructors never throw: a failed free is logged and the program goes on.
#define MIXLAB_CUDA_LOG(call) ::mixlab::cuda::log_cuda_error((call), #call, __FILE__, __LINE__)
