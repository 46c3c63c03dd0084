// CPU numerics histograms: every element counted in its hd_math.h slot. Floating buffers
// hold floats already rounded to their dtype, so a 16-bit value is counted as the float
// the device widens it to.
#include "backends/cpu/cpu_backend.h"

#include "backends/backend_validate.h"
#include "base/hd_math.h"

#include <cstring>

namespace mixlab::cpu {

void CpuBackend::value_histogram(const Buffer& x, Buffer& counts, std::size_t offset)
{
    validate::value_histogram(k_name, x, counts, offset);
    // uint32 counters in int32 storage: unsigned arithmetic wraps where the device's does.
    auto* c = reinterpret_cast<std::uint32_t*>(counts.as<std::int32_t>() + offset);
    const float* px = x.as<float>();
    for (std::size_t i = 0; i < x.count(); ++i) c[hd::value_slot(px[i])] += 1u;
}

void CpuBackend::update_histogram(const Buffer& before, const Buffer& after, const Buffer& grad,
                                  Buffer& counts, std::size_t offset)
{
    validate::update_histogram(k_name, before, after, grad, counts, offset);
    auto* c = reinterpret_cast<std::uint32_t*>(counts.as<std::int32_t>() + offset);
    const float* b = before.as<float>();
    const float* a = after.as<float>();
    const float* g = grad.as<float>();
    for (std::size_t i = 0; i < after.count(); ++i) c[hd::update_slot(b[i], a[i], g[i])] += 1u;
}

void CpuBackend::copy_raw_to_host_async(const Buffer& src, std::size_t bytes, void* dst)
{
    validate::copy_raw_to_host(k_name, src, bytes);
    if (bytes) std::memcpy(dst, src.data(), bytes);
}

} // namespace mixlab::cpu
