// Launcher for a language model's truncated-BPTT window: token ids and their next-token
// targets copied out of the corpus stream resident on the device, in one kernel.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace mixlab::cuda {

// ids[t * batch + j] = stream[j * column_len + r + t], targets[...] = the token after it,
// t < steps, where r = row, or (with step_counter set) row + (*step_counter %
// steps_per_epoch) * steps read on the device. One launch, no host work.
void launch_gather_tokens(const std::int32_t* stream, std::int64_t column_len, int batch, int steps,
                          std::int64_t row, const std::uint64_t* step_counter,
                          std::int64_t steps_per_epoch, std::int32_t* ids, std::int32_t* targets,
                          cudaStream_t stream_handle);

} // namespace mixlab::cuda
