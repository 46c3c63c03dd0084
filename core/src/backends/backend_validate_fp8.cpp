// The fp8 argument checks both backends share (see backend_validate_fp8.h).
#include "backends/backend_validate_fp8.h"

#include "backends/backend_validate.h"
#include "mixlab/run_config.h"

#include <cstdint>
#include <string>

namespace mixlab::validate {

namespace {

// Which job of fp8_transposes a message is about: "job 1: " where there are several,
// nothing where there is one. A message part (written only when a check fails).
struct JobName {
    std::size_t index = 0;
    bool named = false;
};

void append_part(std::string& s, JobName at)
{
    if (at.named) append_parts(s, "job ", at.index, ": ");
}

void meta_buffer(const char* backend, const char* op, const Buffer& meta, std::size_t need)
{
    require(meta.dtype() == DType::F32, backend, op, "meta must be float32, got ", meta.dtype());
    require(meta.count() >= need && (need == 0 || meta.data() != nullptr), backend, op,
            "meta holds ", meta.count(), " floats, needs ", need);
}

// A relu gate's bits (backend.h's relu_mask_words a row); `at` prefixes the message.
void mask_buffer(const char* backend, const char* op, const Buffer& m, int rows, int cols,
                 const char* which, JobName at = {})
{
    const std::size_t mask_words = std::size_t(rows) * std::size_t(relu_mask_words(cols));
    require(m.dtype() == DType::I32 && m.count() >= mask_words &&
                (mask_words == 0 || m.data() != nullptr),
            backend, op, at, which, " must be int32 words of at least ", mask_words, ", got ",
            m.count(), " ", m.dtype());
}

// An fp8 output of `need` elements; `at` prefixes the message: a JobName, or prepare_params'
// SlotName.
template <class At = JobName>
void fp8_output(const char* backend, const char* op, const Buffer& y, std::size_t need,
                const char* name, const At& at = {})
{
    require(is_fp8(y.dtype()), backend, op, at, name, " must be float8_e4m3fn or float8_e5m2, got ",
            y.dtype());
    require(y.count() >= need && (need == 0 || y.data() != nullptr), backend, op, at, name,
            " holds ", y.count(), " elements, needs ", need);
    // fp8 rows are 16-byte multiples (fp8_padded) and the kernels move them 16 bytes at a
    // time, as cuBLASLt's fp8 GEMMs read them: a whole allocation always starts so.
    require(reinterpret_cast<std::uintptr_t>(y.data()) % 16 == 0, backend, op, at, name,
            " must start on a 16-byte boundary");
}

// One job of fp8_transposes.
void fp8_transpose(const char* backend, const char* op, const Fp8Transpose& job, JobName at)
{
    require(job.y && job.y_t, backend, op, at, "y and y_t must be given");
    const Buffer& y = *job.y;
    const Buffer& y_t = *job.y_t;
    const int rows = job.rows, cols = job.cols;
    require(rows >= 0 && cols >= 0, backend, op, at, "negative shape ", rows, "x", cols);
    fp8_output(backend, op, y, std::size_t(rows) * std::size_t(fp8_padded(cols)), "y", at);
    fp8_output(backend, op, y_t, std::size_t(cols) * std::size_t(fp8_padded(rows)), "y_t", at);
    require(y.dtype() == y_t.dtype(), backend, op, at, "y and y_t must share a dtype, got ",
            y.dtype(), " and ", y_t.dtype());
    if (job.relu_mask_out) {
        require(y.dtype() == DType::F8E4M3, backend, op, at,
                "relu_mask_out reads a float8_e4m3 y, got ", y.dtype());
        mask_buffer(backend, op, *job.relu_mask_out, rows, cols, "relu_mask_out", at);
    }
}

} // namespace

void fp8_quantize(const char* backend, const Buffer& x, int rows, int cols, const Buffer& meta,
                  std::size_t block, int history_len, const Buffer* y, const Buffer* y_t,
                  const Buffer* col_sums, const Buffer* relu_gate, const Buffer* relu_mask,
                  const Buffer* relu_mask_out)
{
    const char* op = "fp8_quantize";
    require(rows >= 0 && cols >= 0, backend, op, "negative shape ", rows, "x", cols);
    require(history_len >= 1, backend, op, "history_len must be at least 1, got ", history_len);
    const std::size_t n = std::size_t(rows) * std::size_t(cols);
    floating(backend, op, x, n, "x");
    require(y || y_t, backend, op, "y or y_t must be given");
    // Stored with k padded (mixlab/backend.h's fp8_padded): y's rows, y_t's columns.
    if (y) fp8_output(backend, op, *y, std::size_t(rows) * std::size_t(fp8_padded(cols)), "y");
    if (y_t)
        fp8_output(backend, op, *y_t, std::size_t(cols) * std::size_t(fp8_padded(rows)), "y_t");
    if (col_sums) floating(backend, op, *col_sums, std::size_t(cols), "col_sums");
    if (relu_gate) {
        floating(backend, op, *relu_gate, n, "relu_gate");
        require(relu_gate->dtype() == x.dtype(), backend, op,
                "relu_gate must share x's dtype, got ", relu_gate->dtype(), " and ", x.dtype());
    }
    require(int(relu_gate != nullptr) + int(relu_mask != nullptr) + int(relu_mask_out != nullptr) <=
                1,
            backend, op, "at most one of relu_gate, relu_mask and relu_mask_out");
    if (relu_mask) mask_buffer(backend, op, *relu_mask, rows, cols, "relu_mask");
    if (relu_mask_out) mask_buffer(backend, op, *relu_mask_out, rows, cols, "relu_mask_out");
    if (y && y_t)
        require(y->dtype() == y_t->dtype(), backend, op, "y and y_t must share a dtype, got ",
                y->dtype(), " and ", y_t->dtype());
    meta_buffer(backend, op, meta, (block + 1) * fp8_block_floats(history_len));
}

void fp8_update_scales(const char* backend, const Buffer& meta, int tensors, int history_len,
                       int margin)
{
    const char* op = "fp8_update_scales";
    require(tensors >= 0, backend, op, "negative tensor count ", tensors);
    require(margin >= -k_max_fp8_margin && margin <= k_max_fp8_margin, backend, op,
            "margin must be between -", k_max_fp8_margin, " and ", k_max_fp8_margin, ", got ",
            margin);
    require(history_len >= 1 && history_len <= k_max_fp8_history, backend, op,
            "history_len must be between 1 and ", k_max_fp8_history, ", got ", history_len);
    meta_buffer(backend, op, meta, std::size_t(tensors) * fp8_block_floats(history_len));
}

void fp8_transposes(const char* backend, std::span<const Fp8Transpose> jobs)
{
    const char* op = "fp8_transpose";
    for (std::size_t i = 0; i < jobs.size(); ++i)
        fp8_transpose(backend, op, jobs[i], JobName{i, jobs.size() > 1});
    // Every job's outputs (slots 1 and 2) against every buffer of every job, itself aside.
    for (std::size_t i = 0; i < jobs.size(); ++i)
        for (std::size_t k = 0; k < jobs.size(); ++k) {
            const Buffer* mine[3] = {jobs[i].y, jobs[i].y_t, jobs[i].relu_mask_out};
            const Buffer* theirs[3] = {jobs[k].y, jobs[k].y_t, jobs[k].relu_mask_out};
            for (int out = 1; out < 3; ++out)
                for (int other = 0; other < 3; ++other) {
                    if (i == k && out == other) continue;
                    const Buffer* a = mine[out];
                    const Buffer* b = theirs[other];
                    require(!a || !b || a->data() == nullptr || a->data() != b->data(), backend, op,
                            "job ", i, "'s output is also job ", k, "'s buffer");
                }
        }
}

void gather_batch_fp8(const char* backend, const Buffer& images_u8, const Buffer& labels_u8,
                      const Buffer& order_i32, std::int64_t offset, int batch,
                      const ImageShape& image, const Normalization& norm, const Augmentation& aug,
                      const StepCounter& counter, const Fp8Batch& fp8, const Buffer& out,
                      const Buffer& out_labels)
{
    validate::gather_batch(backend, images_u8, labels_u8, order_i32, offset, batch, image, norm,
                           aug, counter, out, out_labels);
    const char* op = "gather_batch_fp8";
    require(fp8.meta != nullptr && fp8.x8 != nullptr, backend, op, "meta and x8 must be given");
    for (const Buffer* y : {fp8.x8, fp8.x8_t})
        if (y)
            require(y->dtype() == DType::F8E4M3, backend, op, y == fp8.x8 ? "x8" : "x8_t",
                    " must be float8_e4m3fn, got ", y->dtype());
    fp8_quantize(backend, out, batch, image.size(), *fp8.meta, fp8.block, fp8.history_len, fp8.x8,
                 fp8.x8_t, nullptr, nullptr);
}

void fp8_weights(const char* backend, const ParamSlot& slot, SlotName which)
{
    const char* op = "prepare_params";
    const Fp8Weights& f = slot.fp8;
    require(f.w8->dtype() == DType::F8E4M3, backend, op, which,
            "fp8 weights must be float8_e4m3fn, got ", f.w8->dtype());
    require(f.rows >= 0 && f.cols >= 0 && f.cols % 4 == 0, backend, op, which, "fp8 weights of ",
            f.rows, "x", f.cols, ": cols must be a multiple of 4");
    require(std::size_t(f.rows) * std::size_t(f.cols) == slot.master->count(), backend, op, which,
            "fp8 weights of ", f.rows, "x", f.cols, " for a tensor of ", slot.master->count());
    fp8_output(backend, op, *f.w8, std::size_t(f.rows) * std::size_t(fp8_padded(f.cols)), "w8",
               which);
    require(slot.low && (slot.low->dtype() == DType::BF16 || slot.low->dtype() == DType::F16),
            backend, op, which, "fp8 weights are quantized from a 16-bit `low` copy");
    require(f.meta != nullptr && f.history_len >= 1, backend, op, which,
            "fp8 weights need the meta buffer and a history of at least 1");
    meta_buffer(backend, op, *f.meta, (f.block + 1) * fp8_block_floats(f.history_len));
}

void fp8_gemm(const char* backend, const GemmCall& g)
{
    const char* op = "gemm";
    require(g.a && g.b && g.c, backend, op, "a, b and c must be set");
    const DType ta = g.a->dtype(), tb = g.b->dtype(), tc = g.c->dtype();
    require(is_fp8(ta) && is_fp8(tb), backend, op, "fp8 GEMMs take two fp8 operands, got ", ta,
            " and ", tb);
    require(!(ta == DType::F8E5M2 && tb == DType::F8E5M2), backend, op,
            "a and b cannot both be float8_e5m2 (no such fp8 GEMM)");
    require(!g.trans_a && g.trans_b, backend, op,
            "fp8 operands must come in the TN form (trans_a false, trans_b true), "
            "got trans_a ",
            g.trans_a ? "true" : "false", ", trans_b ", g.trans_b ? "true" : "false",
            ": fp8_quantize's transposed copies make it possible");
    require(g.m > 0 && g.n > 0 && g.k > 0, backend, op,
            "fp8 GEMM dimensions must be positive, got m=", g.m, " n=", g.n, " k=", g.k);
    require(g.k % 16 == 0, backend, op,
            "fp8 GEMMs need k (the operands' leading dimension) a multiple of 16, got ", g.k);
    const std::size_t m = std::size_t(g.m), n = std::size_t(g.n), k = std::size_t(g.k);
    fp8_output(backend, op, *g.a, m * k, "a");
    fp8_output(backend, op, *g.b, n * k, "b");
    const bool fp8_out = is_fp8(tc);
    require(tc == DType::BF16 || tc == DType::F32 || fp8_out, backend, op,
            "an fp8 GEMM's c must be bfloat16, float32 or fp8, got ", tc);
    if (fp8_out) {
        // cuBLASLt refuses an fp8 D whose rows are not a multiple of 16 (bench/NOTES.md 37:
        // 3000 units refused, 3008 run): the layer pads its units, as both backends ask.
        require(g.n % k_fp8_pad == 0, backend, op,
                "an fp8 GEMM writing fp8 c needs n a multiple of ", k_fp8_pad,
                " (the layer's units padded), got ", g.n);
        fp8_output(backend, op, *g.c, m * n, "c");
    } else {
        floating(backend, op, *g.c, m * n, "c");
        // c's rows on 16-byte boundaries (fp8_eligibility.h: the widths the H200 ran,
        // widths off it untried), so that neither backend runs what the GPU was not
        // checked on.
        const int c_align = tc == DType::BF16 ? 8 : 4;
        require(g.n % c_align == 0, backend, op, "an fp8 GEMM's c rows (n = ", g.n,
                ") must be a multiple of ", c_align, " ", tc, " values (16 bytes)");
    }
    require(g.epilogue == Epilogue::None || g.epilogue == Epilogue::Bias ||
                g.epilogue == Epilogue::BiasRelu,
            backend, op, "an fp8 GEMM's epilogue must be None, Bias or BiasRelu");
    if (epilogue_adds_bias(g.epilogue)) {
        require(tc == DType::BF16 || fp8_out, backend, op,
                "an fp8 GEMM with a bias writes bfloat16 or fp8 c");
        require(g.bias != nullptr, backend, op, "this epilogue needs a bias");
        floating(backend, op, *g.bias, n, "bias");
        require(g.bias->dtype() == DType::BF16, backend, op,
                "an fp8 GEMM's bias must be bfloat16, got ", g.bias->dtype());
    }
    require(g.fp8_meta != nullptr, backend, op, "fp8 operands need fp8_meta");
    meta_buffer(backend, op, *g.fp8_meta, 0);
    require(g.a_scale_inv < g.fp8_meta->count() && g.b_scale_inv < g.fp8_meta->count(), backend, op,
            "scale_inv indices ", g.a_scale_inv, " and ", g.b_scale_inv, " lie outside fp8_meta's ",
            g.fp8_meta->count(), " floats");
    // cuBLASLt reads the descales by pointer and refuses one that is not 16-byte aligned;
    // backend.h's block layout keeps scale_inv there. Both backends refuse it alike.
    const auto aligned = [&](std::size_t index) {
        return (reinterpret_cast<std::uintptr_t>(g.fp8_meta->as<float>() + index) & 15u) == 0;
    };
    require(aligned(g.a_scale_inv) && aligned(g.b_scale_inv), backend, op, "the descales fp8_meta[",
            g.a_scale_inv, "] and [", g.b_scale_inv,
            "] must sit at 16-byte aligned addresses (fp8_scale_inv_index gives them)");
    if (fp8_out) {
        require(g.c_scale < g.fp8_meta->count(), backend, op, "c's scale index ", g.c_scale,
                " lies outside fp8_meta's ", g.fp8_meta->count(), " floats");
        require(!g.c_amax_on || g.c_amax < g.fp8_meta->count(), backend, op, "c's amax index ",
                g.c_amax, " lies outside fp8_meta's ", g.fp8_meta->count(), " floats");
    } else {
        require(!g.c_amax_on, backend, op, "c_amax_on needs an fp8 c, got ", tc);
    }
}

} // namespace mixlab::validate
