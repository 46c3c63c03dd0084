// Test hook: out-of-memory faults injected into the CPU backend, so that what a full GPU
// does to a run (OutOfMemoryError at allocation, or from a workspace mid-run) can be
// tested on any machine. Off unless one of these is set when a backend is made:
//   MIXLAB_FAULT_OOM_AFTER_BYTES=<n>  an alloc() fails once the backend's live buffer
//                                     bytes would pass n (as cudaMalloc on a full device)
//   MIXLAB_FAULT_OOM_AT_STEP=<n>      training step n (1-based, counted per backend over
//                                     every run on it) fails once, as a cuBLAS/cuDNN
//                                     workspace growing mid-run would
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>

namespace mixlab {

class OomFaults {
public:
    // Reads the environment (once per backend: tests set it before making one).
    static OomFaults from_environment();

    bool active() const { return m_limit >= 0 || m_fail_step > 0; }

    // Throws OutOfMemoryError, worded like the CUDA backend's, when `bytes` more would
    // pass the limit; `what` says what was asked for (the dtype and count).
    void before_alloc(std::size_t bytes, const std::string& what) const;
    void allocated(const void* p, std::size_t bytes);
    void released(const void* p) noexcept;

    // Called once per training step the backend runs; throws at the chosen step.
    void before_step();

    std::int64_t live_bytes() const { return m_live; }

private:
    std::int64_t m_limit = -1;    // bytes; -1: no limit
    std::int64_t m_fail_step = 0; // 1-based; 0: never
    std::int64_t m_steps = 0;
    std::int64_t m_live = 0;
    std::unordered_map<const void*, std::size_t> m_sizes;
};

} // namespace mixlab
