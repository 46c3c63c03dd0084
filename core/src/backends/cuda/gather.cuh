// Launcher for the batch gather: uint8 samples picked by an order, augmented (crop after
// zero padding, horizontal flip) and normalised per channel, in one kernel.
#pragma once
#include "mixlab/backend.h"

#include <cuda_runtime.h>

#include <cstdint>

namespace mixlab::cuda {

// out (batch, H, W, C) = (pixel / 255 - mean[c]) * inv_std[c] in out_t, the pixel read
// where hd::augment_source sends output (r, col) of sample b (a raw 0 in the padding);
// out_labels[b] = labels[order[offset + b]] as int32. One launch.
void launch_gather_batch(const std::uint8_t* images, const std::uint8_t* labels,
                         const std::int32_t* order, std::int64_t offset, int batch,
                         const ImageShape& image, const Normalization& norm,
                         const Augmentation& aug, const std::uint64_t* step_counter,
                         std::int64_t steps_per_epoch, void* out, DType out_t,
                         std::int32_t* out_labels, cudaStream_t stream);

} // namespace mixlab::cuda
