// A move-only device allocation for the backend's own needs (GEMM workspace, loss
// scratch, optimizer tables); user-visible tensors are mixlab::Buffer.
#pragma once
#include <cstddef>
#include <cstdint>

namespace mixlab::cuda {

class DeviceMemory {
public:
    DeviceMemory() = default;
    // Throws OutOfMemoryError naming `what` when the device is full.
    DeviceMemory(std::size_t bytes, const char* what);
    DeviceMemory(DeviceMemory&& o) noexcept;
    DeviceMemory& operator=(DeviceMemory&& o) noexcept;
    DeviceMemory(const DeviceMemory&) = delete;
    DeviceMemory& operator=(const DeviceMemory&) = delete;
    ~DeviceMemory();

    void* get() const { return m_p; }
    template <class T>
    T* as() const
    {
        return static_cast<T*>(m_p);
    }
    std::size_t bytes() const { return m_bytes; }

private:
    void* m_p = nullptr;
    std::size_t m_bytes = 0;
};

// cudaMalloc with the OutOfMemoryError the engine promises (bytes asked, free, total).
void* device_malloc(std::size_t bytes, const char* what);
// cudaFree that logs instead of throwing (for destructors).
void device_free(void* p) noexcept;
// How many allocations device_free has released so far in this process. A recorded
// step (CUDA graph) holds raw pointers: when this moved since the recording, some
// memory it may point at is gone, and the step is recorded again.
std::uint64_t device_frees() noexcept;

} // namespace mixlab::cuda
