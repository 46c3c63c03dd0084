// Recording a training step into a CUDA graph and replaying it: one launch per step
// instead of one per kernel, which is most of a small network's step time.
#pragma once
#include "mixlab/backend.h"

#include <cuda_runtime.h>

#include <memory>
#include <string>

namespace mixlab::cuda {

// Starts recording what is enqueued on `stream` (this thread's calls only).
void begin_step_capture(cudaStream_t stream);
// Ends the recording; null with the reason in *why when it failed (an operation that
// cannot be recorded invalidates the capture; its error is cleared here).
std::unique_ptr<StepGraph> end_step_capture(cudaStream_t stream, std::string* why);

} // namespace mixlab::cuda
