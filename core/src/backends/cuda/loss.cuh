// Launcher for the cross-entropy loss (three output heads) with its deterministic
// on-device reduction of the batch's loss sum and correct count.
#pragma once
#include "mixlab/dtype.h"
#include "mixlab/output_head.h"

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace mixlab::cuda {

// Device scratch for the batch reduction: one partial per block, and a ticket counter
// that is back at zero after every launch. Allocate once, zeroed.
inline constexpr int k_loss_max_blocks = 256;
struct LossScratch {
    double loss[k_loss_max_blocks];
    float correct[k_loss_max_blocks];
    unsigned int ticket;
};

// logits, dlogits (batch, classes) in tz; labels int32; scaler (float32, may be null) gives
// the loss scale on the device; dlogits may be null (evaluation: the record accumulates).
// record[k_rec_loss_sum / k_rec_correct] (float32) at record_offset.
void launch_cross_entropy(OutputHead head, const void* logits, DType tz, const std::int32_t* labels,
                          int batch, int classes, const float* scaler, void* dlogits, float* record,
                          LossScratch* scratch, cudaStream_t stream);

} // namespace mixlab::cuda
