// The out-of-memory test hook of the CPU backend (fault_injection.h): a byte budget on
// live buffers and a one-shot failure at a chosen training step.
#include "backends/fault_injection.h"

#include "mixlab/error.h"

#include <algorithm>
#include <cstdlib>
#include <string>

namespace mixlab {

namespace {

// A non-negative integer from the environment, or -1 when unset or unreadable (a typo
// in a test hook should not quietly become a limit of 0).
std::int64_t env_count(const char* name)
{
    const char* v = std::getenv(name);
    if (!v || !*v) return -1;
    char* end = nullptr;
    const long long n = std::strtoll(v, &end, 10);
    return end && *end == '\0' && n >= 0 ? std::int64_t(n) : -1;
}

std::string mib(double bytes)
{
    return std::to_string(static_cast<long long>(bytes / (1024.0 * 1024.0))) + " MiB";
}

} // namespace

OomFaults OomFaults::from_environment()
{
    OomFaults f;
    f.m_limit = env_count("MIXLAB_FAULT_OOM_AFTER_BYTES");
    f.m_fail_step = std::max<std::int64_t>(env_count("MIXLAB_FAULT_OOM_AT_STEP"), 0);
    return f;
}

void OomFaults::before_alloc(std::size_t bytes, const std::string& what) const
{
    if (m_limit < 0 || m_live + std::int64_t(bytes) <= m_limit) return;
    // Worded as the CUDA backend words a failed cudaMalloc (cuda_check.cpp), so tests
    // see what a user with a full GPU sees; the hook names itself so nobody mistakes it.
    throw OutOfMemoryError("out of device memory: " + what + " asked for " + std::to_string(bytes) +
                           " bytes (" + mib(double(bytes)) + ") with " +
                           mib(double(m_limit - m_live)) + " of " + mib(double(m_limit)) +
                           " free (limit set by MIXLAB_FAULT_OOM_AFTER_BYTES=" +
                           std::to_string(m_limit) + "); use a smaller batch size or model");
}

void OomFaults::allocated(const void* p, std::size_t bytes)
{
    if (!active() || !p) return;
    m_sizes[p] = bytes;
    m_live += std::int64_t(bytes);
}

void OomFaults::released(const void* p) noexcept
{
    if (!active() || !p) return;
    const auto it = m_sizes.find(p);
    if (it == m_sizes.end()) return;
    m_live -= std::int64_t(it->second);
    m_sizes.erase(it);
}

void OomFaults::before_step()
{
    if (m_fail_step <= 0) return;
    if (++m_steps != m_fail_step) return;
    // What a workspace that grows mid-run (cuBLAS, cuDNN) reports on a full device.
    throw OutOfMemoryError("out of device memory: a step workspace asked for 67108864 bytes "
                           "(64 MiB) with 0 MiB free (injected at training step " +
                           std::to_string(m_fail_step) +
                           " by MIXLAB_FAULT_OOM_AT_STEP); use a smaller batch size or model");
}

} // namespace mixlab
