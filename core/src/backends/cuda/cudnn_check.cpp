// Turns failed cuDNN calls into mixlab::CudaError / OutOfMemoryError messages; maps
// dtypes to cuDNN's.
#include "backends/cuda/cudnn_check.h"

#include "mixlab/error.h"

#include <cstring>
#include <string>

namespace mixlab::cuda {

namespace {

const char* short_path(const char* file)
{
    const char* p = std::strstr(file, "core/src/");
    return p ? p : file;
}

} // namespace

void throw_cudnn_error(cudnnStatus_t status, const char* call, const char* file, int line)
{
    // cuDNN 9 keeps a readable reason for the last failure ("... not supported for ...").
    char reason[512] = {0};
    cudnnGetLastErrorString(reason, sizeof reason);
    std::string where =
        std::string(" in ") + call + " at " + short_path(file) + ":" + std::to_string(line);
    if (reason[0]) where += " (" + std::string(reason) + ")";
    // Host or device memory cuDNN could not get (a handle or workspace on a full GPU):
    // out of memory, which a max-batch search or the user can act on.
    if (status == CUDNN_STATUS_ALLOC_FAILED ||
        status == CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED)
        throw OutOfMemoryError("cuDNN could not allocate memory" + where +
                               "; use a smaller batch size or model");
    throw CudaError(std::string("cuDNN error ") + cudnnGetErrorString(status) + where);
}

cudnnDataType_t cudnn_data_type(DType t, const char* op)
{
    switch (t) {
    case DType::F32: return CUDNN_DATA_FLOAT;
    case DType::F16: return CUDNN_DATA_HALF;
    case DType::BF16: return CUDNN_DATA_BFLOAT16;
    default: break;
    }
    throw Error(std::string("cuda backend: ") + op + ": expected a floating dtype, got " +
                std::string(dtype_name(t)));
}

const char* cudnn_runtime_version()
{
    // cudnnGetVersion: major * 10000 + minor * 100 + patch in cuDNN 9.
    static const std::string text = [] {
        const std::size_t v = cudnnGetVersion();
        return std::to_string(v / 10000) + "." + std::to_string((v / 100) % 100) + "." +
               std::to_string(v % 100);
    }();
    return text.c_str();
}

} // namespace mixlab::cuda
