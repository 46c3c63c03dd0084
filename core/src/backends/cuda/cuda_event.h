// A cudaEvent recorded on the backend's stream: device-side timing without a sync.
#pragma once
#include "mixlab/backend.h"

#include <cuda_runtime.h>

namespace mixlab::cuda {

class CudaEvent final : public Event {
public:
    explicit CudaEvent(cudaStream_t stream);
    CudaEvent(const CudaEvent&) = delete;
    CudaEvent& operator=(const CudaEvent&) = delete;
    ~CudaEvent() override;

    void record() override;
    bool query() override;
    void synchronize() override;
    // Milliseconds from start to this event; both must have been recorded and reached.
    float elapsed_ms_since(const Event& start) override;

private:
    cudaStream_t m_stream;
    cudaEvent_t m_event = nullptr;
};

} // namespace mixlab::cuda
