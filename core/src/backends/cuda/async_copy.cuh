// cp.async (sm_80 and newer): a global load that lands in shared memory without passing
// through registers, so a thread can keep the next tile's loads in flight while it works
// on this one, and a load's registers do not limit how many are in flight. Older GPUs
// copy synchronously (the kernels that stage loads run on fp8 GPUs only, but every
// architecture compiles them).
#pragma once

#include <cstdint>

namespace mixlab::cuda {

// Bytes (4, 8 or 16) from global p to shared s, both aligned to Bytes.
template <int Bytes>
__device__ __forceinline__ void async_copy(void* s, const void* p)
{
    static_assert(Bytes == 4 || Bytes == 8 || Bytes == 16, "cp.async copies 4, 8 or 16 bytes");
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    const auto at = static_cast<unsigned>(__cvta_generic_to_shared(s));
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::"r"(at), "l"(p), "n"(Bytes)
                 : "memory");
#else
    if constexpr (Bytes == 4)
        *static_cast<std::uint32_t*>(s) = *static_cast<const std::uint32_t*>(p);
    else if constexpr (Bytes == 8)
        *static_cast<uint2*>(s) = *static_cast<const uint2*>(p);
    else
        *static_cast<uint4*>(s) = *static_cast<const uint4*>(p);
#endif
}

// The copies issued since the last commit become one group.
__device__ __forceinline__ void async_commit()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}

// Waits until at most Pending of this thread's groups are still in flight: the older
// groups' bytes are then in shared memory and visible to this thread (to others only
// after a barrier).
template <int Pending>
__device__ __forceinline__ void async_wait()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_group %0;\n" ::"n"(Pending) : "memory");
#endif
}

} // namespace mixlab::cuda
