// Turns failed CUDA and cuBLAS calls into mixlab::CudaError / OutOfMemoryError messages.
#include "backends/cuda/cuda_check.h"

#include "mixlab/error.h"

#include <cstdio>
#include <cstring>
#include <string>

namespace mixlab::cuda {

namespace {

// Paths relative to the repository read better in a message than the build's absolute ones.
const char* short_path(const char* file)
{
    const char* p = std::strstr(file, "core/src/");
    return p ? p : file;
}

std::string where(const char* call, const char* file, int line)
{
    return std::string(" in ") + call + " at " + short_path(file) + ":" + std::to_string(line);
}

std::string mib(std::size_t bytes)
{
    return std::to_string((bytes + (1u << 20) - 1) >> 20) + " MiB";
}

std::string memory_state()
{
    std::size_t free_b = 0, total_b = 0;
    if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess) {
        cudaGetLastError();
        return "free device memory unknown";
    }
    return mib(free_b) + " of " + mib(total_b) + " free";
}

} // namespace

void throw_cuda_error(cudaError_t err, const char* call, const char* file, int line)
{
    if (err == cudaErrorMemoryAllocation) {
        cudaGetLastError(); // not sticky: clear it so the next call does not see it
        throw OutOfMemoryError("CUDA out of memory" + where(call, file, line) + " (" +
                               memory_state() + "); use a smaller batch size or model");
    }
    throw CudaError(std::string("CUDA error ") + cudaGetErrorName(err) + " (" +
                    cudaGetErrorString(err) + ")" + where(call, file, line));
}

void throw_cublas_error(cublasStatus_t status, const char* call, const char* file, int line)
{
    if (status == CUBLAS_STATUS_ALLOC_FAILED)
        throw OutOfMemoryError(std::string("cuBLAS could not allocate memory") +
                               where(call, file, line) + " (" + memory_state() + ")");
    throw CudaError(std::string("cuBLAS error ") + cublasLtGetStatusName(status) + " (" +
                    cublasLtGetStatusString(status) + ")" + where(call, file, line));
}

void throw_out_of_memory(std::size_t bytes, const char* what)
{
    cudaGetLastError();
    throw OutOfMemoryError("CUDA out of memory: " + std::string(what) + " asked for " +
                           std::to_string(bytes) + " bytes (" + mib(bytes) + ") with " +
                           memory_state() + "; use a smaller batch size or model");
}

void check_launch(const char* kernel, const char* file, int line)
{
    const cudaError_t err = cudaGetLastError();
    // NotReady is an answer from an event/stream query, never a launch failure.
    if (err != cudaSuccess && err != cudaErrorNotReady)
        throw_cuda_error(err, (std::string("launch of ") + kernel).c_str(), file, line);
}

void log_cuda_error(cudaError_t err, const char* call, const char* file, int line) noexcept
{
    if (err == cudaSuccess || err == cudaErrorCudartUnloading)
        return; // at process exit the runtime may be gone before our statics: nothing to free
    std::fprintf(stderr, "mixlab: CUDA error %s (%s) in %s at %s:%d (ignored in a destructor)\n",
                 cudaGetErrorName(err), cudaGetErrorString(err), call, short_path(file), line);
}

} // namespace mixlab::cuda
