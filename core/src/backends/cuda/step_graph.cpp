// CUDA graph capture of a training step. The graph holds raw device pointers, so it
// records how many device frees the process had made: a free since then (a workspace
// grown, planning scratch released) may have taken memory the graph points at, and
// replay() refuses so that the trainer records the step again.
#include "backends/cuda/step_graph.h"

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/device_memory.h"

#include <cstdint>

namespace mixlab::cuda {

namespace {

class CudaStepGraph final : public StepGraph {
public:
    CudaStepGraph(cudaGraphExec_t exec, cudaStream_t stream, int operations)
        : m_exec(exec), m_stream(stream), m_operations(operations), m_frees(device_frees())
    {}
    ~CudaStepGraph() override { MIXLAB_CUDA_LOG(cudaGraphExecDestroy(m_exec)); }

    bool replay() override
    {
        if (device_frees() != m_frees) return false;
        MIXLAB_CUDA_CHECK(cudaGraphLaunch(m_exec, m_stream));
        return true;
    }
    int operations() const override { return m_operations; }

private:
    cudaGraphExec_t m_exec;
    cudaStream_t m_stream;
    int m_operations;
    std::uint64_t m_frees;
};

} // namespace

void begin_step_capture(cudaStream_t stream)
{
    // Thread-local mode: calls that could synchronise (a workspace grown mid-step) fail
    // and end the capture instead of silently running outside it.
    MIXLAB_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
}

std::unique_ptr<StepGraph> end_step_capture(cudaStream_t stream, std::string* why)
{
    cudaGraph_t graph = nullptr;
    const cudaError_t end = cudaStreamEndCapture(stream, &graph);
    if (end != cudaSuccess || !graph) {
        cudaGetLastError(); // capture errors are not sticky; leave none behind
        if (graph) MIXLAB_CUDA_LOG(cudaGraphDestroy(graph));
        if (why) *why = std::string("the step could not be recorded: ") + cudaGetErrorString(end);
        return nullptr;
    }
    std::size_t nodes = 0;
    cudaGraphGetNodes(graph, nullptr, &nodes);
    cudaGraphExec_t exec = nullptr;
    const cudaError_t inst = cudaGraphInstantiate(&exec, graph, 0);
    MIXLAB_CUDA_LOG(cudaGraphDestroy(graph)); // the executable keeps its own copy
    if (inst != cudaSuccess) {
        cudaGetLastError();
        if (why)
            *why = std::string("the recorded step could not be instantiated: ") +
                   cudaGetErrorString(inst);
        return nullptr;
    }
    return std::make_unique<CudaStepGraph>(exec, stream, int(nodes));
}

} // namespace mixlab::cuda
