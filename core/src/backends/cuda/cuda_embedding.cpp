// CUDA backend embedding lookup and its gradient: argument checks on the host, then the
// kernels of embedding.cu on the stream.
#include "backends/cuda/cuda_backend.h"

#include "backends/backend_validate_sequence.h"
#include "backends/cuda/embedding.cuh"

#include <cstdint>

namespace mixlab::cuda {

void CudaBackend::embedding_forward(const Buffer& table, const Buffer& ids_i32, int rows, int dim,
                                    int vocab, Buffer& y)
{
    validate::embedding_forward(k_name, table, ids_i32, rows, dim, vocab, y);
    launch_embedding_forward(table.data(), ids_i32.as<std::int32_t>(), rows, dim, vocab, y.data(),
                             y.dtype(), stream());
}

void CudaBackend::embedding_backward(const Buffer& dy, const Buffer& ids_i32, int rows, int dim,
                                     int vocab, bool accumulate, Buffer& dtable)
{
    validate::embedding_backward(k_name, dy, ids_i32, rows, dim, vocab, dtable);
    launch_embedding_backward(dy.data(), dy.dtype(), ids_i32.as<std::int32_t>(), rows, dim, vocab,
                              accumulate, dtable.as<float>(), m_reduce, stream());
}

} // namespace mixlab::cuda
