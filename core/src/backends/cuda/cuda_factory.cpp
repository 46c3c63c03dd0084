// The door into the CUDA backend from plain C++: device detection and construction.
#include "backends/cuda/cuda_factory.h"

#include "backends/cuda/cuda_backend.h"
#include "mixlab/error.h"

#include <cuda_runtime.h>

namespace mixlab::cuda {

bool device_present()
{
    // No driver (CI, this build machine) answers with an error code: quietly false.
    int count = 0;
    const cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess) {
        cudaGetLastError();
        return false;
    }
    return count > 0;
}

std::unique_ptr<Backend> make_cuda_backend()
{
    if (!device_present())
        throw DeviceError("no CUDA device found: the driver reports no usable NVIDIA GPU "
                          "(check nvidia-smi and CUDA_VISIBLE_DEVICES), or use --device cpu");
    return std::make_unique<CudaBackend>();
}

} // namespace mixlab::cuda
