// Launcher for the batch gather: uint8 samples picked by an order, normalised per channel.
#pragma once
#include "mixlab/backend.h"

#include <cuda_runtime.h>

#include <cstdint>

namespace mixlab::cuda {

// out (batch, sample) = (images[order[offset + b]] / 255 - mean[c]) * inv_std[c] in out_t,
// c = i % channels; out_labels[b] = labels[order[offset + b]] as int32. One launch.
void launch_gather_batch(const std::uint8_t* images, const std::uint8_t* labels,
                         const std::int32_t* order, std::int64_t offset, int batch, int sample,
                         const Normalization& norm, void* out, DType out_t,
                         std::int32_t* out_labels, cudaStream_t stream);

} // namespace mixlab::cuda
