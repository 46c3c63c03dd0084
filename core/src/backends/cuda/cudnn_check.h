// Checks for cuDNN calls: a failure becomes a mixlab::CudaError naming the call text,
// file, line and cuDNN's own last message (OutOfMemoryError when it could not allocate);
// and the cuDNN data type of a dtype, checked.
#pragma once
#include "mixlab/dtype.h"

#include <cudnn.h>

namespace mixlab::cuda {

[[noreturn]] void throw_cudnn_error(cudnnStatus_t status, const char* call, const char* file,
                                    int line);
// "9.14.0": the version of the cuDNN library loaded at run time (not the header's).
const char* cudnn_runtime_version();
// cuDNN's type for a floating dtype; anything else throws mixlab::Error naming `op`.
cudnnDataType_t cudnn_data_type(DType t, const char* op);

} // namespace mixlab::cuda

#define MIXLAB_CUDNN_CHECK(call)                                                                   \
    do {                                                                                           \
        const cudnnStatus_t mixlab_cudnn_st_ = (call);                                             \
        if (mixlab_cudnn_st_ != CUDNN_STATUS_SUCCESS)                                              \
            ::mixlab::cuda::throw_cudnn_error(mixlab_cudnn_st_, #call, __FILE__, __LINE__);        \
    } while (0)
