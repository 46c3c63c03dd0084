// Argument checks of mixed_fp8's ops (fp8_quantize, fp8_update_scales, GEMMs on fp8
// operands) that every backend makes before computing anything: what mixlab/backend.h
// promises, one copy for the CPU reference and the CUDA backend. Messages as in
// backend_validate.h.
#pragma once
#include "backends/backend_validate.h"
#include "mixlab/backend.h"

#include <cstddef>
#include <span>
#include <string>

namespace mixlab::validate {

// x floating (rows x cols), at least one of y and y_t, each an fp8 buffer of rows * cols
// (one fp8 dtype when both), meta float32 holding block `block` of history_len >= 1; at
// most one of relu_gate, relu_mask and relu_mask_out, the masks int32 words enough for
// rows of relu_mask_words(cols).
void fp8_quantize(const char* backend, const Buffer& x, int rows, int cols, const Buffer& meta,
                  std::size_t block, int history_len, const Buffer* y, const Buffer* y_t,
                  const Buffer* col_sums, const Buffer* relu_gate,
                  const Buffer* relu_mask = nullptr, const Buffer* relu_mask_out = nullptr);
// meta float32 holding `tensors` blocks of history_len >= 1; tensors >= 0; margin within
// [-k_max_fp8_margin, k_max_fp8_margin] (run_config.h's limits).
void fp8_update_scales(const char* backend, const Buffer& meta, int tensors, int history_len,
                       int margin);
// Each job: y (rows x fp8_padded(cols)) and y_t (cols x fp8_padded(rows)) fp8 buffers of
// one dtype that large, rows and cols >= 0; no job's y_t or relu_mask_out another job's
// y, y_t or relu_mask_out (one launch runs them all: the order between them is not kept).
void fp8_transposes(const char* backend, std::span<const Fp8Transpose> jobs);
// gather_batch's checks, then the batch's fp8 target: meta given, x8 (and x8_t when
// given) float8_e4m3fn and large enough for batch x sample, as fp8_quantize checks them.
void gather_batch_fp8(const char* backend, const Buffer& images_u8, const Buffer& labels_u8,
                      const Buffer& order_i32, std::int64_t offset, int batch,
                      const ImageShape& image, const Normalization& norm, const Augmentation& aug,
                      const StepCounter& counter, const Fp8Batch& fp8, const Buffer& out,
                      const Buffer& out_labels);
// A parameter slot's Fp8Weights (prepare_params, slot `which` in messages): w8 F8E4M3 of
// rows x fp8_padded(cols) with rows * cols the master's count and cols a multiple of 4, a
// 16-bit `low` copy to quantize from, meta float32 holding the block.
void fp8_weights(const char* backend, const ParamSlot& slot, SlotName which);
// A GEMM whose a or b is fp8 (GemmCall's fp8 rules): both fp8, not both E5M2, the "TN"
// form (trans_a false, trans_b true), positive sizes with k a multiple of 16 and c's rows
// 16-byte multiples, c bfloat16 or float32, epilogue None, Bias or BiasRelu (with c and the bias bfloat16), fp8_meta
// float32 holding both scale_inv indices.
void fp8_gemm(const char* backend, const GemmCall& call);

// Whether a GEMM call is an fp8 one (either operand fp8): fp8_gemm checks it, not gemm.
inline bool is_fp8_gemm(const GemmCall& call)
{
    return (call.a && is_fp8(call.a->dtype())) || (call.b && is_fp8(call.b->dtype()));
}

} // namespace mixlab::validate
