// Which operands of a GEMM need staging, and the strided copy that stages them.
#include "backends/cuda/gemm_staging.h"

#include "backends/cuda/cuda_check.h"

#include <cstdlib>
#include <cstring>

namespace mixlab::cuda {

namespace {

StagedMatrix stage_if_unaligned(std::int64_t rows, std::int64_t cols, DType t, StageMode mode)
{
    StagedMatrix s;
    s.rows = rows;
    s.cols = cols;
    s.ld = cols;
    s.elem = dtype_size(t);
    const std::int64_t per_16 = std::int64_t(16 / s.elem); // elements per 16 bytes
    if (mode == StageMode::Off || cols % per_16 == 0) return s;
    if (mode == StageMode::Auto && rows * cols < k_min_staged_elements) return s;
    s.on = true;
    s.ld = (cols + per_16 - 1) / per_16 * per_16;
    return s;
}

} // namespace

StageMode stage_requested()
{
    const char* v = std::getenv("MIXLAB_GEMM_STAGE");
    if (v == nullptr || *v == '\0') return StageMode::Auto;
    return std::strcmp(v, "0") == 0 ? StageMode::Off : StageMode::Force;
}

GemmStaging staging_for(const GemmCall& g, StageMode mode)
{
    GemmStaging s;
    const DType ab = g.a->dtype(), ct = g.c->dtype();
    // Row-major storage: A is m x k (k x m when transposed), B k x n (n x k), C m x n.
    s.a =
        g.trans_a ? stage_if_unaligned(g.k, g.m, ab, mode) : stage_if_unaligned(g.m, g.k, ab, mode);
    s.b =
        g.trans_b ? stage_if_unaligned(g.n, g.k, ab, mode) : stage_if_unaligned(g.k, g.n, ab, mode);
    // An fp8 C (GemmCall::c_scale) has rows of a multiple of 16 bytes (validate::fp8_gemm).
    if (!is_fp8(ct)) s.c = stage_if_unaligned(g.m, g.n, ct, mode);
    return s;
}

void copy_rows(void* dst, std::int64_t dst_ld, const void* src, std::int64_t src_ld,
               std::int64_t rows, std::int64_t cols, std::size_t elem, cudaStream_t stream)
{
    MIXLAB_CUDA_CHECK(cudaMemcpy2DAsync(dst, std::size_t(dst_ld) * elem, src,
                                        std::size_t(src_ld) * elem, std::size_t(cols) * elem,
                                        std::size_t(rows), cudaMemcpyDeviceToDevice, stream));
}

} // namespace mixlab::cuda
