// CUDA backend embedding lookup and its gradient: argument checks on the host, then the
// kernels of embedding.cu on the stream.
#include "backends/cuda/cuda_backend.h"

#include "backends/backend_validate.h"
#include "backends/cuda/embedding.cuh"

#include <cstdint>

namespace mixlab::cuda {

namespace {

// Sizes and the ids buffer both ops share.
void check_ids(const char* op, const Buffer& ids, int rows, int dim, int vocab)
{
    require(rows >= 0 && dim > 0 && vocab > 0, op,
            "rows must be >= 0, dim and vocab positive (rows ", rows, ", dim ", dim, ", vocab ",
            vocab, ")");
    require(ids.dtype() == DType::I32, op, "ids must be int32, got ", ids.dtype());
    require(ids.count() >= std::size_t(rows), op, "ids holds ", ids.count(), " elements, needs ",
            rows);
}

} // namespace

void CudaBackend::embedding_forward(const Buffer& table, const Buffer& ids_i32, int rows, int dim,
                                    int vocab, Buffer& y)
{
    const char* op = "embedding_forward";
    check_ids(op, ids_i32, rows, dim, vocab);
    validate::floating(k_name, op, table, std::size_t(vocab) * dim, "table");
    validate::floating(k_name, op, y, std::size_t(rows) * dim, "y");
    require(y.dtype() == table.dtype(), op, "y is ", y.dtype(), ", the table ", table.dtype());
    launch_embedding_forward(table.data(), ids_i32.as<std::int32_t>(), rows, dim, vocab, y.data(),
                             y.dtype(), stream());
}

void CudaBackend::embedding_backward(const Buffer& dy, const Buffer& ids_i32, int rows, int dim,
                                     int vocab, bool accumulate, Buffer& dtable)
{
    const char* op = "embedding_backward";
    check_ids(op, ids_i32, rows, dim, vocab);
    validate::floating(k_name, op, dy, std::size_t(rows) * dim, "dy");
    validate::floating(k_name, op, dtable, std::size_t(vocab) * dim, "dtable");
    require(dtable.dtype() == DType::F32, op, "dtable must be float32, got ", dtable.dtype());
    launch_embedding_backward(dy.data(), dy.dtype(), ids_i32.as<std::int32_t>(), rows, dim, vocab,
                              accumulate, dtable.as<float>(), m_reduce, stream());
}

} // namespace mixlab::cuda
