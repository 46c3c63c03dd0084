#include "backends/cuda/dependent_launch.cuh"

#include <cstdlib>

namespace mixlab::cuda {

bool dependent_launch_on()
{
    // MIXLAB_PDL=1 turns it on (an experiment's switch while it is measured).
    static const bool wanted = [] {
        const char* e = std::getenv("MIXLAB_PDL");
        return e && e[0] == '1';
    }();
    if (!wanted) return false;
    int device = 0, major = 0;
    MIXLAB_CUDA_CHECK(cudaGetDevice(&device));
    MIXLAB_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
    return major >= 9;
}

} // namespace mixlab::cuda
