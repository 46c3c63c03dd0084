// Programmatic dependent launch (compute capability 9.0 and newer): a kernel launched by
// launch_dependent may be scheduled while the kernel before it in the stream is still
// finishing, so that its launch and the previous kernel's tail overlap instead of adding
// up. The step is a chain of short kernels, each a few microseconds of which launch is a
// part. Every kernel launched this way calls wait_for_previous_grid() before it touches
// memory: that waits for the whole previous kernel and makes its writes visible
// (tools/check_dependent_launch.sh, run by CI, checks that each does). Elsewhere (older
// GPUs, or MIXLAB_PDL=0) both are no-ops and the launch is an ordinary one.
#pragma once
#include "backends/cuda/cuda_check.h"

#include <cuda_runtime.h>

#include <cstddef>
#include <utility>

namespace mixlab::cuda {

// First thing in each kernel launch_dependent launches: the previous kernel done and its
// writes visible, then the next kernel allowed to launch (its blocks then wait, in turn,
// for this one to finish).
__device__ __forceinline__ void wait_for_previous_grid()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// Whether launches on the current device are dependent ones.
bool dependent_launch_on();

template <class... Params, class... Args>
void launch_dependent(const char* name, void (*kernel)(Params...), dim3 grid, dim3 block,
                      std::size_t shared_bytes, cudaStream_t stream, Args&&... args)
{
    cudaLaunchAttribute attribute{};
    attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attribute.val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t config{};
    config.gridDim = grid;
    config.blockDim = block;
    config.dynamicSmemBytes = shared_bytes;
    config.stream = stream;
    config.attrs = &attribute;
    config.numAttrs = dependent_launch_on() ? 1 : 0;
    const cudaError_t err = cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...);
    if (err != cudaSuccess) throw_cuda_error(err, name, __FILE__, __LINE__);
}

} // namespace mixlab::cuda
