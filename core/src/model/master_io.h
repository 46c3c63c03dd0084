// fp32 master values in and out of a parameter's buffers: an fp32 master and the copy
// cast from it, or a split master's two halves (hd_math.h's split_master), so that
// initial values, tests and read-backs see one fp32 tensor whichever scheme holds it.
#pragma once
#include "mixlab/backend.h"

#include <cstddef>
#include <vector>

namespace mixlab {

// Writes `values` (master->count() of them) as the master: uploaded and cast into `low`
// when there is one; a split master (int16 `master`) gets its halves from the host.
void upload_master(Backend& backend, Buffer& master, Buffer* low, const float* values,
                   std::size_t count);
// The master's fp32 values (a split master's halves joined), waiting for the stream.
std::vector<float> download_master(Backend& backend, const Buffer& master, const Buffer* low);

} // namespace mixlab
