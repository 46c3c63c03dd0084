// OpenMP helpers for the CPU ops that are not Eigen GEMMs (convolution chunks, pooling,
// batch norm): they expand to nothing when the build has no OpenMP, like Eigen does.
#pragma once
#include <cstddef>

#if defined(_OPENMP)
#include <omp.h>
#endif

#define MIXLAB_PRAGMA(x) _Pragma(#x)
#if defined(_OPENMP)
// A parallel loop only when `work` (elements touched or multiply-adds) pays for waking
// the team: tiny ops run faster alone, and on a busy machine every barrier can wait a
// whole time slice for a descheduled helper thread. Each op opens one region at most.
#define MIXLAB_OMP_FOR_IF(work)                                                                    \
    MIXLAB_PRAGMA(omp parallel for schedule(static) if ((work) >= mixlab::cpu::k_parallel_work))
#define MIXLAB_OMP_FOR_DYNAMIC_IF(work)                                                            \
    MIXLAB_PRAGMA(omp parallel for schedule(dynamic) if ((work) >= mixlab::cpu::k_parallel_work))
#else
#define MIXLAB_OMP_FOR_IF(work)
#define MIXLAB_OMP_FOR_DYNAMIC_IF(work)
#endif

namespace mixlab::cpu {

inline constexpr std::size_t k_parallel_work = std::size_t(1) << 17;

// Threads a parallel region may use, and the caller's index within its region.
inline int worker_threads()
{
#if defined(_OPENMP)
    return omp_get_max_threads();
#else
    return 1;
#endif
}
inline int worker_index()
{
#if defined(_OPENMP)
    return omp_get_thread_num();
#else
    return 0;
#endif
}

} // namespace mixlab::cpu
