// CUDA events for step timing and for knowing when async metric copies have landed.
#include "backends/cuda/cuda_event.h"

#include "backends/cuda/cuda_check.h"
#include "mixlab/error.h"

namespace mixlab::cuda {

CudaEvent::CudaEvent(cudaStream_t stream) : m_stream(stream)
{
    MIXLAB_CUDA_CHECK(cudaEventCreate(&m_event));
}

CudaEvent::~CudaEvent()
{
    if (m_event) MIXLAB_CUDA_LOG(cudaEventDestroy(m_event));
}

void CudaEvent::record()
{
    // While the step is being recorded into a graph, a plain record would only order
    // work inside the graph; "external" makes it a node that records the event each
    // time the graph replays, which is what the profiling pass times.
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    MIXLAB_CUDA_CHECK(cudaStreamIsCapturing(m_stream, &status));
    if (status == cudaStreamCaptureStatusActive)
        MIXLAB_CUDA_CHECK(cudaEventRecordWithFlags(m_event, m_stream, cudaEventRecordExternal));
    else
        MIXLAB_CUDA_CHECK(cudaEventRecord(m_event, m_stream));
}

bool CudaEvent::query()
{
    const cudaError_t err = cudaEventQuery(m_event);
    if (err == cudaErrorNotReady) return false;
    MIXLAB_CUDA_CHECK(err);
    return true;
}

void CudaEvent::synchronize() { MIXLAB_CUDA_CHECK(cudaEventSynchronize(m_event)); }

float CudaEvent::elapsed_ms_since(const Event& start)
{
    const auto* s = dynamic_cast<const CudaEvent*>(&start);
    if (!s)
        throw Error("cuda backend: elapsed_ms_since: the start event belongs to another backend");
    float ms = 0.0f;
    MIXLAB_CUDA_CHECK(cudaEventElapsedTime(&ms, s->m_event, m_event));
    return ms;
}

} // namespace mixlab::cuda
