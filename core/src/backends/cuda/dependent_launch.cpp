#include "backends/cuda/dependent_launch.cuh"

#include <cstdlib>

namespace mixlab::cuda {

bool dependent_launch_on()
{
    // MIXLAB_PDL=0 launches every kernel the ordinary way, for measuring what dependent
    // launches bring (bench/NOTES.md 52: W1's mixed_fp8 step 0.5% faster on the H200).
    static const bool wanted = [] {
        const char* e = std::getenv("MIXLAB_PDL");
        return !(e && e[0] == '0');
    }();
    if (!wanted) return false;
    int device = 0, major = 0;
    MIXLAB_CUDA_CHECK(cudaGetDevice(&device));
    MIXLAB_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
    return major >= 9;
}

} // namespace mixlab::cuda
