// Device allocation helpers: OutOfMemoryError on a full device, logged frees.
#include "backends/cuda/device_memory.h"

#include "backends/cuda/cuda_check.h"

#include <atomic>
#include <utility>

namespace mixlab::cuda {

void* device_malloc(std::size_t bytes, const char* what)
{
    void* p = nullptr;
    const cudaError_t err = cudaMalloc(&p, bytes);
    if (err == cudaErrorMemoryAllocation) throw_out_of_memory(bytes, what);
    if (err != cudaSuccess) throw_cuda_error(err, "cudaMalloc", __FILE__, __LINE__);
    return p;
}

namespace {
std::atomic<std::uint64_t> g_frees{0};
} // namespace

void device_free(void* p) noexcept
{
    if (!p) return;
    MIXLAB_CUDA_LOG(cudaFree(p));
    g_frees.fetch_add(1, std::memory_order_relaxed);
}

std::uint64_t device_frees() noexcept { return g_frees.load(std::memory_order_relaxed); }

DeviceMemory::DeviceMemory(std::size_t bytes, const char* what)
    : m_p(bytes ? device_malloc(bytes, what) : nullptr), m_bytes(bytes)
{}

DeviceMemory::DeviceMemory(DeviceMemory&& o) noexcept
    : m_p(std::exchange(o.m_p, nullptr)), m_bytes(std::exchange(o.m_bytes, 0))
{}

DeviceMemory& DeviceMemory::operator=(DeviceMemory&& o) noexcept
{
    if (this != &o) {
        device_free(m_p);
        m_p = std::exchange(o.m_p, nullptr);
        m_bytes = std::exchange(o.m_bytes, 0);
    }
    return *this;
}

DeviceMemory::~DeviceMemory() { device_free(m_p); }

} // namespace mixlab::cuda
