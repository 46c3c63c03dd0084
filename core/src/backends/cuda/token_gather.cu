// The token window gather (token_gather.cuh). A window is tiny (35 x 80 ids at most in the
// presets), so one thread per output id is plenty; what matters is that the window's
// position is read on the device, so the recorded step replays over the whole epoch.
#include "backends/cuda/token_gather.cuh"

#include "backends/cuda/cuda_check.h"

#include <algorithm>

namespace mixlab::cuda {

namespace {

__global__ void gather_tokens_kernel(const std::int32_t* stream, std::int64_t column_len, int batch,
                                     int steps, std::int64_t row, const std::uint64_t* step_counter,
                                     std::int64_t steps_per_epoch, std::int32_t* ids,
                                     std::int32_t* targets)
{
    if (step_counter) row += std::int64_t(*step_counter % std::uint64_t(steps_per_epoch)) * steps;
    const std::int64_t total = std::int64_t(steps) * batch;
    for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < total;
         i += std::int64_t(gridDim.x) * blockDim.x) {
        const std::int64_t t = i / batch;
        const std::int64_t j = i - t * batch;
        const std::int32_t* column = stream + j * column_len;
        ids[i] = column[row + t];
        targets[i] = column[row + t + 1];
    }
}

constexpr unsigned k_threads = 256;

} // namespace

void launch_gather_tokens(const std::int32_t* stream, std::int64_t column_len, int batch, int steps,
                          std::int64_t row, const std::uint64_t* step_counter,
                          std::int64_t steps_per_epoch, std::int32_t* ids, std::int32_t* targets,
                          cudaStream_t stream_handle)
{
    const std::int64_t total = std::int64_t(steps) * batch;
    if (total <= 0) return;
    const unsigned blocks =
        unsigned(std::min<std::int64_t>((total + k_threads - 1) / k_threads, 65535));
    gather_tokens_kernel<<<blocks, k_threads, 0, stream_handle>>>(
        stream, column_len, batch, steps, row, step_counter,
        steps_per_epoch < 1 ? 1 : steps_per_epoch, ids, targets);
    MIXLAB_CUDA_CHECK_LAUNCH("gather_tokens_kernel");
}

} // namespace mixlab::cuda
