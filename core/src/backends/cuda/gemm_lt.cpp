// cuBLASLt GEMM plans: the row-major to column-major mapping, epilogue choice, the
// per-shape cache with its candidate timing, and the unfused fallback paths.
#include "backends/cuda/gemm_lt.h"

#include "backends/backend_validate.h"
#include "backends/backend_validate_fp8.h"
#include "backends/cuda/activation.cuh"
#include "backends/cuda/bias_grad.cuh"
#include "backends/cuda/gated_timing.h"
#include "backends/cuda/gemm_tune.h"
#include "backends/cuda/narrow_gemm.cuh"
#include "backends/cuda/skinny_gemm.cuh"
#include "mixlab/error.h"
#include "backends/op_names.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace mixlab::cuda {

namespace {

[[noreturn]] void fail(const std::string& what) { throw Error("cuda backend: gemm: " + what); }

cudaDataType_t lt_type(DType t)
{
    switch (t) {
    case DType::F32: return CUDA_R_32F;
    case DType::F16: return CUDA_R_16F;
    case DType::BF16: return CUDA_R_16BF;
    case DType::F8E4M3: return CUDA_R_8F_E4M3;
    case DType::F8E5M2: return CUDA_R_8F_E5M2;
    default:
        fail("operands must be float32, float16, bfloat16 or fp8, got " +
             std::string(dtype_name(t)));
    }
}

std::uint16_t alignment(const void* p)
{
    const auto v = reinterpret_cast<std::uintptr_t>(p);
    std::uint16_t a = 256;
    while (a > 1 && (v % a) != 0) a >>= 1;
    return a;
}

cublasLtEpilogue_t lt_epilogue(Epilogue e)
{
    switch (e) {
    case Epilogue::Bias: return CUBLASLT_EPILOGUE_BIAS;
    case Epilogue::BiasRelu: return CUBLASLT_EPILOGUE_RELU_BIAS;
    case Epilogue::BiasGelu: return CUBLASLT_EPILOGUE_GELU_BIAS;
    // bias_grad[i] sums row i of op(A) over k. Our A is cuBLASLt's B, and row i of op(A)
    // is column i of the column-major result: the reduction cuBLASLt calls BGRADB.
    case Epilogue::BiasGradA: return CUBLASLT_EPILOGUE_BGRADB;
    default: return CUBLASLT_EPILOGUE_DEFAULT;
    }
}

template <class T>
void set_attr(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t a, const T& v)
{
    MIXLAB_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(d, a, &v, sizeof v));
}

template <class T>
void set_pref(cublasLtMatmulPreference_t p, cublasLtMatmulPreferenceAttributes_t a, const T& v)
{
    MIXLAB_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(p, a, &v, sizeof v));
}

LtLayout make_layout(DType t, std::uint64_t rows, std::uint64_t cols, std::int64_t ld)
{
    cublasLtMatrixLayout_t l = nullptr;
    MIXLAB_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&l, lt_type(t), rows, cols, ld));
    return LtLayout(l);
}

} // namespace

std::size_t LtGemm::KeyHash::operator()(const Key& k) const noexcept
{
    std::size_t h = 0;
    auto mix = [&h](std::uint64_t v) {
        h ^= std::hash<std::uint64_t>{}(v) + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    };
    mix(std::uint64_t(k.m) << 32 | std::uint32_t(k.n));
    mix(std::uint64_t(k.k) << 8 | (k.trans_a ? 1 : 0) << 1 | (k.trans_b ? 1 : 0));
    mix(std::uint64_t(k.ab) | std::uint64_t(k.c) << 8 | std::uint64_t(k.aux) << 16 |
        std::uint64_t(k.epilogue) << 24 | std::uint64_t(k.math) << 32);
    mix(std::uint64_t(k.align_a) | std::uint64_t(k.align_b) << 16 | std::uint64_t(k.align_c) << 32 |
        std::uint64_t(k.align_aux) << 48);
    mix(std::uint64_t(k.stage) | std::uint64_t(k.b) << 8 | std::uint64_t(k.fast_accum) << 16);
    return h;
}

LtGemm::LtGemm(const GemmDevice& device, ReduceScratch& scratch)
    : m_device(device), m_scratch(scratch),
      m_workspace(k_workspace_bytes, "the cuBLASLt workspace"),
      // For checking and timing the unfused paths on a GPU where cuBLASLt fuses everything.
      m_fuse_epilogues(std::getenv("MIXLAB_GEMM_UNFUSED") == nullptr)
{
    // For A/B timing of the tuning itself.
    const char* tune = std::getenv("MIXLAB_GEMM_TUNE");
    m_tune = !(tune && std::strcmp(tune, "0") == 0);
    const char* skinny = std::getenv("MIXLAB_GEMM_SKINNY");
    m_skinny = !(skinny && std::strcmp(skinny, "0") == 0);
    cublasLtHandle_t h = nullptr;
    MIXLAB_CUBLAS_CHECK(cublasLtCreate(&h));
    m_handle = LtHandle(h);
}

// The call shape a plan reports (fused until a fallback says otherwise).
void LtGemm::set_shape(GemmPlanInfo& info, const Key& key)
{
    info.trans_a = key.trans_a;
    info.trans_b = key.trans_b;
    info.m = key.m;
    info.n = key.n;
    info.k = key.k;
    info.ab = key.ab;
    info.c = key.c;
    info.aux = key.aux;
    info.b = key.b;
    info.epilogue = key.epilogue;
    info.math = key.math;
    info.fast_accum = key.fast_accum;
    info.fused = true;
}

std::unique_ptr<LtGemm::Plan>
LtGemm::try_plan(const Key& key, const void* aux_ptr,
                 std::vector<cublasLtMatmulHeuristicResult_t>& candidates,
                 const GemmStaging* staging)
{
    auto plan = std::make_unique<Plan>();
    // TF32 only for fp32 operands; 16-bit operands use the tensor cores with fp32
    // accumulation under plain COMPUTE_32F, and fp32 without TF32 stays exact fp32.
    const bool tf32 = key.math == MathMode::TF32 && key.ab == DType::F32;
    cublasLtMatmulDesc_t d = nullptr;
    MIXLAB_CUBLAS_CHECK(cublasLtMatmulDescCreate(
        &d, tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F, CUDA_R_32F));
    plan->desc = LtMatmulDesc(d);
    const cublasOperation_t op_a = key.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N; // cuBLASLt's A = our B
    const cublasOperation_t op_b = key.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    set_attr(d, CUBLASLT_MATMUL_DESC_TRANSA, op_a);
    set_attr(d, CUBLASLT_MATMUL_DESC_TRANSB, op_b);
    const bool fp8 = is_fp8(key.ab);
    if (fp8) {
        // fp8 operands (validate::fp8_gemm admits only trans_a false, trans_b true). Our
        // row-major C (m x n) = A (m x k, stored m x k) . B^T (B stored n x k) is the
        // column-major C^T (n x m) = B . A^T where cuBLASLt's A is our B and its B our A.
        // Our B's rows (k apart) read column-major are a k x n matrix with ld k, which
        // op_a = T (trans_b) turns into n x k; our A's rows read column-major are k x m
        // with ld k, taken as is, op_b = N (trans_a false). So cuBLASLt sees TRANSA = T,
        // TRANSB = N, both with k contiguous: the "TN" form Hopper's fp8 kernels read.
        //
        // Fast accumulation only when the call asks (GemmCall::fp8_fast_accum): Hopper's
        // fp8 MMA accumulates in fewer bits than fp32, and without the periodic promotion
        // into fp32 registers that this mode skips, long k sums (the weight gradient
        // sums over the batch, 4096 terms) lose precision.
        const std::int8_t fast_accum = key.fast_accum ? 1 : 0;
        set_attr(d, CUBLASLT_MATMUL_DESC_FAST_ACCUM, fast_accum);
    }
    const std::uint32_t epi = lt_epilogue(key.epilogue);
    set_attr(d, CUBLASLT_MATMUL_DESC_EPILOGUE, epi);
    if (key.epilogue != Epilogue::None) {
        const std::int32_t aux_type = lt_type(key.aux);
        set_attr(d, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, aux_type);
        // The heuristic reads the pointer's value to know its alignment.
        set_attr(d, CUBLASLT_MATMUL_DESC_BIAS_POINTER, aux_ptr);
    }

    // Row-major X (r x c) is column-major X^T (c x r) with leading dimension c (or the
    // staged copy's row stride).
    const std::uint64_t m = key.m, n = key.n, k = key.k;
    const auto ld = [&](const StagedMatrix* sm, std::uint64_t cols) {
        return sm && sm->on ? sm->ld : std::int64_t(cols);
    };
    const std::int64_t ld_a = ld(staging ? &staging->a : nullptr, key.trans_a ? m : k);
    const std::int64_t ld_b = ld(staging ? &staging->b : nullptr, key.trans_b ? k : n);
    const std::int64_t ld_c = ld(staging ? &staging->c : nullptr, n);
    plan->a = key.trans_b ? make_layout(key.b, k, n, ld_b) : make_layout(key.b, n, k, ld_b);
    plan->b = key.trans_a ? make_layout(key.ab, m, k, ld_a) : make_layout(key.ab, k, m, ld_a);
    // An fp8 D (the next layer's input; n a multiple of 16) has a bfloat16 C that is
    // never read (beta 0, C passed null).
    if (is_fp8(key.c)) {
        plan->c = make_layout(DType::BF16, n, m, std::int64_t(n));
        plan->d = make_layout(key.c, n, m, std::int64_t(n));
    } else {
        plan->c = make_layout(key.c, n, m, ld_c);
        plan->d = make_layout(key.c, n, m, ld_c);
    }

    cublasLtMatmulPreference_t p = nullptr;
    MIXLAB_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&p));
    LtPreference pref(p);
    set_pref(p, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, m_workspace.bytes());
    set_pref(p, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, std::uint32_t(key.align_b));
    set_pref(p, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, std::uint32_t(key.align_a));
    set_pref(p, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, std::uint32_t(key.align_c));
    set_pref(p, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, std::uint32_t(key.align_c));
    // No reduction-scheme filter: every candidate is run-to-run deterministic. cuBLAS
    // documents bit-wise identical results on every run (same toolkit, architecture and
    // SM count) and that split-K partial results are "summed deterministically";
    // cublasLt.h describes its reduction schemes as in place in the output with counters
    // that "guarantee the sequentiality" (INPLACE) or a separate reduction kernel
    // (COMPUTE_TYPE, OUTPUT_TYPE). No scheme adds with unordered atomics.

    // Without tuning only the first result is ever used: ask for just that, as before.
    std::vector<cublasLtMatmulHeuristicResult_t> results(
        std::size_t(m_tune ? k_max_candidates : 1));
    int found = 0;
    const cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(
        m_handle.get(), d, plan->a.get(), plan->b.get(), plan->c.get(), plan->d.get(), p,
        int(results.size()), results.data(), &found);
    candidates.clear();
    if (st == CUBLAS_STATUS_SUCCESS)
        for (int i = 0; i < found; ++i)
            if (results[std::size_t(i)].state == CUBLAS_STATUS_SUCCESS &&
                results[std::size_t(i)].workspaceSize <= m_workspace.bytes())
                candidates.push_back(results[std::size_t(i)]);
    if (st == CUBLAS_STATUS_NOT_SUPPORTED || (st == CUBLAS_STATUS_SUCCESS && candidates.empty()))
        return nullptr;
    // An epilogue/type combination cuBLASLt rejects outright: our own kernel does it.
    if (st == CUBLAS_STATUS_INVALID_VALUE && key.epilogue != Epilogue::None) return nullptr;
    MIXLAB_CUBLAS_CHECK(st);
    plan->algo = candidates.front().algo;
    plan->workspace = candidates.front().workspaceSize;

    GemmPlanInfo& info = plan->info;
    set_shape(info, key);
    const bool half = key.ab == DType::F16 || key.ab == DType::BF16;
    info.tensor_cores = (key.ab == DType::F16 && m_device.tensor_cores) ||
                        (key.ab == DType::BF16 && m_device.bf16) || (tf32 && m_device.tf32) ||
                        (fp8 && m_device.fp8);
    const int q = fp8 ? 16 : half ? 8 : 4;
    info.tensor_core_shapes =
        info.tensor_cores && key.m % q == 0 && key.n % q == 0 && key.k % q == 0;
    return plan;
}

void LtGemm::tune(Plan& plan, const Key& key, const GemmCall& g, const void* a, const void* b,
                  const std::vector<cublasLtMatmulHeuristicResult_t>& candidates,
                  cudaStream_t stream)
{
    GemmPlanInfo& info = plan.info;
    if (!m_tune) {
        info.tune_note = "tuning off (MIXLAB_GEMM_TUNE=0)";
        return;
    }
    TuneProblem p;
    p.handle = m_handle.get();
    p.desc = plan.desc.get();
    p.a = plan.a.get();
    p.b = plan.b.get();
    p.c = plan.c.get();
    p.d = plan.d.get();
    p.c_null = is_fp8(key.c);
    p.a_ptr = b; // cuBLASLt's A is our B (see matmul)
    p.b_ptr = a;
    p.alpha = &g.alpha;
    p.beta = &g.beta;
    p.c_bytes = plan.staging.c.on ? plan.staging.c.bytes()
                                  : std::size_t(key.m) * std::size_t(key.n) * dtype_size(key.c);
    p.aux_is_output = key.epilogue == Epilogue::BiasGradA;
    p.aux_bytes = p.aux_is_output ? std::size_t(key.m) * dtype_size(key.aux) : 0;
    p.workspace = m_workspace.get();
    // The candidates of an fp8 plan read the call's descales like the real call.
    set_fp8_scales(plan.desc.get(), g);
    const TuneResult r = tune_gemm(p, candidates, stream);
    plan.algo = candidates[std::size_t(r.chosen)].algo;
    plan.workspace = candidates[std::size_t(r.chosen)].workspaceSize;
    info.tune_timed = r.timed;
    info.tune_choice = r.chosen + 1;
    info.tune_chosen_us = r.chosen_us;
    info.tune_first_us = r.first_us;
    info.tune_note = r.skipped;
}

LtGemm::Plan& LtGemm::plain_plan(const Key& key, const GemmCall& g, cudaStream_t stream)
{
    Key plain = key;
    plain.epilogue = Epilogue::None;
    plain.aux = DType::F32;
    plain.align_aux = 256;
    return plan_for(plain, g, nullptr, stream);
}

void LtGemm::make_unfused(Plan& plan, const Key& key, const char* why, const GemmCall& g,
                          cudaStream_t stream)
{
    plan.plain = &plain_plan(key, g, stream);
    plan.fused = false;
    plan.desc.reset();
    plan.staging = GemmStaging{}; // the plain plan stages (or not) by itself
    plan.info.staging.clear();
    plan.info.fused = false;
    // The GEMM that runs now is the plain plan's: report its tuning.
    plan.info.tune_timed = plan.plain->info.tune_timed;
    plan.info.tune_choice = plan.plain->info.tune_choice;
    plan.info.tune_chosen_us = plan.plain->info.tune_chosen_us;
    plan.info.tune_first_us = plan.plain->info.tune_first_us;
    plan.info.tune_note = plan.plain->info.tune_note;
    if (key.epilogue == Epilogue::BiasGradA) {
        plan.fallback = key.trans_a ? Fallback::BiasGradColumns : Fallback::BiasGradRows;
        plan.info.note = std::string(why) + "; bias gradient by a separate sum kernel";
    } else {
        plan.fallback = Fallback::BiasActivation;
        plan.info.note = std::string(why) + "; bias/activation by a separate kernel";
    }
}

LtGemm::Plan& LtGemm::plan_for(const Key& key, const GemmCall& g, const void* aux_ptr,
                               cudaStream_t stream)
{
    auto it = m_plans.find(key);
    if (it != m_plans.end()) return *it->second;
    std::unique_ptr<Plan> plan;
    std::vector<cublasLtMatmulHeuristicResult_t> candidates;
    // An fp8 output has no unfused form: its epilogue, scaling and amax are cuBLASLt's.
    const bool fp8_out = is_fp8(key.c);
    if (key.epilogue == Epilogue::None || m_fuse_epilogues || fp8_out)
        plan = try_plan(key, aux_ptr, candidates);
    if (plan) tune(*plan, key, g, g.a->data(), g.b->data(), candidates, stream);
    if (plan) consider_staging(plan, key, g, aux_ptr, stream);
    if (!plan) {
        if (fp8_out)
            fail("cuBLASLt has no algorithm for " + std::to_string(key.m) + "x" +
                 std::to_string(key.n) + "x" + std::to_string(key.k) + " " +
                 dtype_short_name(key.ab) + "." + dtype_short_name(key.b) + "->" +
                 dtype_short_name(key.c) + " with " + epilogue_name(key.epilogue) +
                 " on this GPU (an fp8 output needs it fused)");
        if (key.epilogue == Epilogue::None)
            fail("cuBLASLt has no algorithm for " + std::to_string(key.m) + "x" +
                 std::to_string(key.n) + "x" + std::to_string(key.k) + " " +
                 dtype_short_name(key.ab) +
                 (key.b != key.ab ? std::string(".") + dtype_short_name(key.b) : std::string()) +
                 "->" + dtype_short_name(key.c) + " (" + math_mode_name(key.math) + " math)");
        // The plain plan supplies the shape info; its epilogue is ours.
        plan = std::make_unique<Plan>();
        plan->info = plain_plan(key, g, stream).info;
        plan->info.epilogue = key.epilogue;
        plan->info.calls = 0;
        make_unfused(*plan, key,
                     m_fuse_epilogues ? "cuBLASLt has no algorithm with this epilogue"
                                      : "fused epilogues off (MIXLAB_GEMM_UNFUSED)",
                     g, stream);
    }
    Plan& ref = *plan;
    m_plans.emplace(key, std::move(plan));
    return ref;
}

void LtGemm::grow_staging(const GemmStaging& s, cudaStream_t stream)
{
    const auto needs = [](const StagedMatrix& sm, const DeviceMemory& mem) {
        return sm.on && sm.bytes() > mem.bytes();
    };
    if (!needs(s.a, m_stage_a) && !needs(s.b, m_stage_b) && !needs(s.c, m_stage_c)) return;
    // Work already enqueued may still read the old copies.
    MIXLAB_CUDA_CHECK(cudaStreamSynchronize(stream));
    if (needs(s.a, m_stage_a)) {
        m_stage_a = DeviceMemory();
        m_stage_a = DeviceMemory(s.a.bytes(), "the GEMM staging copies");
    }
    if (needs(s.b, m_stage_b)) {
        m_stage_b = DeviceMemory();
        m_stage_b = DeviceMemory(s.b.bytes(), "the GEMM staging copies");
    }
    if (needs(s.c, m_stage_c)) {
        m_stage_c = DeviceMemory();
        m_stage_c = DeviceMemory(s.c.bytes(), "the GEMM staging copies");
    }
}

LtGemm::Operands LtGemm::stage_in(const Plan& plan, const GemmCall& g, cudaStream_t stream)
{
    Operands o{g.a->data(), g.b->data(), g.c->data()};
    const GemmStaging& s = plan.staging;
    if (s.a.on) {
        copy_rows(m_stage_a.get(), s.a.ld, o.a, s.a.cols, s.a.rows, s.a.cols, s.a.elem, stream);
        o.a = m_stage_a.get();
    }
    if (s.b.on) {
        copy_rows(m_stage_b.get(), s.b.ld, o.b, s.b.cols, s.b.rows, s.b.cols, s.b.elem, stream);
        o.b = m_stage_b.get();
    }
    if (s.c.on) {
        // beta != 0 reads C: it goes in too.
        if (g.beta != 0.0f)
            copy_rows(m_stage_c.get(), s.c.ld, o.c, s.c.cols, s.c.rows, s.c.cols, s.c.elem, stream);
        o.c = m_stage_c.get();
    }
    return o;
}

void LtGemm::stage_out(const Plan& plan, const GemmCall& g, cudaStream_t stream)
{
    const StagedMatrix& c = plan.staging.c;
    if (c.on) copy_rows(g.c->data(), c.cols, m_stage_c.get(), c.ld, c.rows, c.cols, c.elem, stream);
}

void LtGemm::consider_staging(std::unique_ptr<Plan>& plan, const Key& key, const GemmCall& g,
                              const void* aux_ptr, cudaStream_t stream)
{
    GemmStaging s = staging_for(g, key.stage);
    if (!s.any()) return;
    // Not while the step is being recorded (no allocation or timing then), and not
    // untimed unless forced: only the timing can show that the copies pay.
    if (capturing(stream)) return;
    const bool forced = key.stage == StageMode::Force;
    // Timing runs both plans into the caller's C, which the call being planned is about
    // to overwrite: only where that call does not read C (beta 0).
    const bool can_time = g.beta == 0.0f;
    if (!forced && !can_time) return;
    try {
        grow_staging(s, stream);
    } catch (const OutOfMemoryError&) {
        if (forced) throw;
        return; // no room for the copies: the direct plan stays
    }
    // The staged copies are 256-byte aligned (cudaMalloc).
    Key sk = key;
    if (s.a.on) sk.align_a = 256;
    if (s.b.on) sk.align_b = 256;
    if (s.c.on) sk.align_c = 256;
    std::vector<cublasLtMatmulHeuristicResult_t> candidates;
    std::unique_ptr<Plan> staged = try_plan(sk, aux_ptr, candidates, &s);
    if (!staged) return;
    staged->staging = s;
    const Operands ops = stage_in(*staged, g, stream);
    tune(*staged, sk, g, ops.a, ops.b, candidates, stream);
    float direct_us = 0, staged_us = 0;
    bool timed = false;
    if (can_time) {
        // Whole calls as run() makes them, the copies included: 1 warm-up, 3 timed, the
        // median of those where this took their mean (the helper's one statistic; one
        // slow run then moves the comparison less). A call that fails throws, as the
        // real call would.
        const Operands direct{g.a->data(), g.b->data(), g.c->data()};
        const GatedTimes t = time_gated(stream, 2, GatedRuns{1, 3}, [&](int i) {
            if (i == 0) {
                MIXLAB_CUBLAS_CHECK(matmul(*plan, direct, g, aux_ptr, stream));
            } else {
                MIXLAB_CUBLAS_CHECK(
                    matmul(*staged, stage_in(*staged, g, stream), g, aux_ptr, stream));
                stage_out(*staged, g, stream);
            }
            return true;
        });
        if (t.timed && t.median_ms[0] && t.median_ms[1]) {
            timed = true;
            direct_us = 1000.0f * *t.median_ms[0];
            staged_us = 1000.0f * *t.median_ms[1];
        }
    }
    const bool wins = timed && staged_us < (1.0f - k_tune_min_gain) * direct_us;
    if (!forced && !wins) return;
    const char* which =
        s.a.on   ? (s.b.on ? (s.c.on ? "A, B and C" : "A and B") : (s.c.on ? "A and C" : "A"))
        : s.b.on ? (s.c.on ? "B and C" : "B")
                 : "C";
    char buf[160];
    if (timed)
        std::snprintf(buf, sizeof buf,
                      "%s copied to 16-byte aligned rows: %.1f us a call with the copies vs %.1f "
                      "us%s",
                      which, staged_us, direct_us, forced ? " (MIXLAB_GEMM_STAGE)" : "");
    else
        std::snprintf(buf, sizeof buf, "%s copied to 16-byte aligned rows (MIXLAB_GEMM_STAGE)",
                      which);
    staged->info.staging = buf;
    plan = std::move(staged);
}

cublasStatus_t LtGemm::matmul(const Plan& plan, const Operands& ops, const GemmCall& g,
                              const void* aux_ptr, cudaStream_t stream)
{
    if (aux_ptr) set_attr(plan.desc.get(), CUBLASLT_MATMUL_DESC_BIAS_POINTER, aux_ptr);
    set_fp8_scales(plan.desc.get(), g);
    // cuBLASLt computes D = op(B_ours) op(A_ours) in column-major terms: pass B first. An
    // fp8 output's C is never read (beta 0): none is passed.
    const void* c_in = is_fp8(g.c->dtype()) ? nullptr : ops.c;
    return cublasLtMatmul(m_handle.get(), plan.desc.get(), &g.alpha, ops.b, plan.a.get(), ops.a,
                          plan.b.get(), &g.beta, c_in, plan.c.get(), ops.c, plan.d.get(),
                          &plan.algo, m_workspace.get(), plan.workspace, stream);
}

void LtGemm::set_fp8_scales(cublasLtMatmulDesc_t desc, const GemmCall& g)
{
    if (!desc || !is_fp8(g.a->dtype())) return;
    // Device addresses, set on every call (the plan is shared by every call of its shape):
    // the values are read when the kernel runs, so a recorded step replays with the scales
    // of each step. cuBLASLt's A is our B: its A scale is our B's scale_inv. cuBLASLt
    // refuses a scale pointer that is not 16-byte aligned (NOT_SUPPORTED from
    // cublasLtMatmul, H200 2026-12-03: offsets of 4 bytes failed, 16 ran), which the meta
    // block's layout guarantees (backend.h).
    const float* meta = g.fp8_meta->as<float>();
    const float* a_scale = meta + g.b_scale_inv;
    const float* b_scale = meta + g.a_scale_inv;
    set_attr(desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, a_scale);
    set_attr(desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, b_scale);
    if (is_fp8(g.c->dtype())) {
        // D = scale * result, rounded; AMAX_D the unscaled result's max |value| (null: none
        // taken, as in evaluation).
        const float* d_scale = meta + g.c_scale;
        float* amax = g.c_amax_on ? const_cast<float*>(meta) + g.c_amax : nullptr;
        set_attr(desc, CUBLASLT_MATMUL_DESC_D_SCALE_POINTER, d_scale);
        set_attr(desc, CUBLASLT_MATMUL_DESC_AMAX_D_POINTER, amax);
    }
}

void LtGemm::run_fallback(const Plan& plan, const GemmCall& g, cudaStream_t stream)
{
    const std::size_t m = std::size_t(g.m), n = std::size_t(g.n), k = std::size_t(g.k);
    switch (plan.fallback) {
    case Fallback::BiasActivation: {
        const Activation act = g.epilogue == Epilogue::BiasRelu   ? Activation::Relu
                               : g.epilogue == Epilogue::BiasGelu ? Activation::Gelu
                                                                  : Activation::None;
        launch_bias_activation(act, g.c->data(), g.c->dtype(), g.bias->data(), g.bias->dtype(), m,
                               int(n), g.c->data(), g.c->dtype(), stream);
        break;
    }
    case Fallback::BiasGradColumns: // A stored (k x m): sum over its rows
        launch_column_sums(g.a->data(), g.a->dtype(), k, m, g.bias_grad->data(),
                           g.bias_grad->dtype(), m_scratch, stream);
        break;
    case Fallback::BiasGradRows: // A stored (m x k)
        launch_row_sums(g.a->data(), g.a->dtype(), m, k, g.bias_grad->data(), g.bias_grad->dtype(),
                        stream);
        break;
    case Fallback::None: break;
    }
}

void LtGemm::run(const GemmCall& g, cudaStream_t stream)
{
    const bool fp8 = validate::is_fp8_gemm(g);
    if (fp8) {
        validate::fp8_gemm("cuda", g);
        if (!m_device.fp8)
            fail("fp8 operands need fp8 tensor cores (compute capability 8.9 or newer)");
    } else {
        validate::gemm("cuda", g);
    }
    // cuBLASLt has no empty matrices (the CPU reference accepts them).
    if (g.m == 0 || g.n == 0 || g.k == 0)
        fail("dimensions must be positive, got m=" + std::to_string(g.m) +
             " n=" + std::to_string(g.n) + " k=" + std::to_string(g.k));
    const DType ab = g.a->dtype(), ct = g.c->dtype();
    const Buffer* aux = validate::epilogue_adds_bias(g.epilogue) ? g.bias
                        : g.epilogue == Epilogue::BiasGradA      ? g.bias_grad
                                                                 : nullptr;

    Key key{};
    key.trans_a = g.trans_a;
    key.trans_b = g.trans_b;
    key.m = g.m;
    key.n = g.n;
    key.k = g.k;
    key.ab = ab;
    key.b = g.b->dtype();
    key.c = ct;
    key.aux = aux ? aux->dtype() : DType::F32;
    key.epilogue = g.epilogue;
    key.math = g.math;
    key.align_a = alignment(g.a->data());
    key.align_b = alignment(g.b->data());
    key.align_c = alignment(g.c->data());
    key.align_aux = aux ? alignment(aux->data()) : 256;
    key.stage = stage_requested();
    key.fast_accum = g.fp8_fast_accum;

    if (skinny_applies(g)) {
        Plan& plan = own_kernel_plan(key, [&] {
            return "our split-k kernel: " + std::to_string(g.m) +
                   " rows are not a multiple of 8, so no tensor-core kernel can read them";
        });
        ++plan.info.calls;
        const bool bias = g.epilogue == Epilogue::BiasGradA;
        float* scratch = m_scratch.get(skinny_gemm_scratch_floats(g.m, g.n, g.k));
        launch_skinny_gemm(g.m, g.n, g.k, g.a->data(), g.b->data(), ab, g.alpha, g.beta,
                           g.c->data(), ct, bias ? g.bias_grad->data() : nullptr,
                           bias ? g.bias_grad->dtype() : DType::F32, scratch, stream);
        return;
    }
    if (narrow_dgrad_applies(g)) {
        Plan& plan = own_kernel_plan(key, [&] {
            return "our narrow kernel: k = " + std::to_string(g.k) +
                   " is not a multiple of 8, so no tensor-core kernel can read A";
        });
        ++plan.info.calls;
        launch_narrow_dgrad(g.m, g.n, g.k, g.a->data(), g.b->data(), ab, g.alpha, g.beta,
                            g.c->data(), ct, stream);
        return;
    }
    Plan& plan = plan_for(key, g, aux ? aux->data() : nullptr, stream);
    ++plan.info.calls;
    const Operands direct{g.a->data(), g.b->data(), g.c->data()};
    if (plan.fused) {
        const Operands ops = plan.staging.any() ? stage_in(plan, g, stream) : direct;
        const cublasStatus_t st = matmul(plan, ops, g, aux ? aux->data() : nullptr, stream);
        if (st == CUBLAS_STATUS_SUCCESS) {
            stage_out(plan, g, stream);
            return;
        }
        // An epilogue the heuristic offered but the kernel refused on its first use: fall
        // back for good rather than fail the run.
        const bool refused = st == CUBLAS_STATUS_NOT_SUPPORTED || st == CUBLAS_STATUS_INVALID_VALUE;
        if (!refused || plan.info.calls != 1 || g.epilogue == Epilogue::None || is_fp8(ct))
            MIXLAB_CUBLAS_CHECK(st);
        make_unfused(plan, key, "cuBLASLt refused this epilogue at run time", g, stream);
    }
    const Plan& plain = *plan.plain;
    const Operands ops = plain.staging.any() ? stage_in(plain, g, stream) : direct;
    MIXLAB_CUBLAS_CHECK(matmul(plain, ops, g, nullptr, stream));
    stage_out(plain, g, stream);
    run_fallback(plan, g, stream);
}

// A weight gradient (A^T B, A stored k x m) whose m is a handful of 16-bit rows that are
// not a multiple of 8: no tensor-core kernel can read A, and cuBLASLt's fallback walks
// k with a few blocks. Other shapes, fp32 and TF32 stay with cuBLASLt.
bool LtGemm::skinny_applies(const GemmCall& g) const
{
    const DType ab = g.a->dtype();
    // Below ~1024 rows of k cuBLASLt's kernel is as quick as ours (W1 at batch 32 and 256:
    // 3 and 8 us slower with ours; at 4096, 180 us faster). Measured with the first split-k
    // kernel, not again for the rewrite (bench/NOTES.md 44).
    return m_skinny && g.trans_a && !g.trans_b && (ab == DType::F16 || ab == DType::BF16) &&
           g.m <= k_skinny_max_m && g.m % 8 != 0 && g.k >= k_skinny_min_k &&
           (g.epilogue == Epilogue::None || g.epilogue == Epilogue::BiasGradA);
}

// The plan of a shape our own kernel runs: no cuBLASLt state, only what the plan report
// shows, note() saying why (called once, when the plan is made).
LtGemm::Plan& LtGemm::own_kernel_plan(const Key& key, const std::function<std::string()>& note)
{
    auto it = m_plans.find(key);
    if (it != m_plans.end()) return *it->second;
    auto plan = std::make_unique<Plan>();
    GemmPlanInfo& info = plan->info;
    set_shape(info, key);
    info.tensor_cores = false;
    info.tensor_core_shapes = false;
    info.note = note();
    Plan& ref = *plan;
    m_plans.emplace(key, std::move(plan));
    return ref;
}

// A classifier head's input gradient dZ W: k (its classes) is a handful of 16-bit values
// not a multiple of 8, so A's rows are not 16-byte aligned and no tensor-core kernel
// reads them; cuBLASLt took 6.9-7.3 us for the seed MLP's at batch 4096 (bench/NOTES.md
// 34), ours 6.5-6.7 in this session's H100 profiles (NOTES 44). It writes C once, 16 bytes a store; below batch 1024 it is
// not known to pay (W1's step at 256 was no faster), and n below 256 leaves a warp's
// lanes idle.
bool LtGemm::narrow_dgrad_applies(const GemmCall& g) const
{
    const DType ab = g.a->dtype();
    return m_skinny && !g.trans_a && !g.trans_b && (ab == DType::F16 || ab == DType::BF16) &&
           g.k <= k_narrow_max && g.k % 8 != 0 && g.n >= k_narrow_min_n && g.n <= k_narrow_max_n &&
           g.m >= k_narrow_min_m && g.epilogue == Epilogue::None;
}

std::vector<GemmPlanInfo> LtGemm::plans() const
{
    std::vector<GemmPlanInfo> out;
    out.reserve(m_plans.size());
    for (const auto& [key, plan] : m_plans) out.push_back(plan->info);
    return out;
}

std::string describe(const GemmPlanInfo& p)
{
    std::string s = "gemm " + std::to_string(p.m) + "x" + std::to_string(p.n) + "x" +
                    std::to_string(p.k) + " " + (p.trans_a ? "T" : "N") + (p.trans_b ? "T" : "N") +
                    " " + dtype_short_name(p.ab) +
                    (p.b != p.ab ? std::string(".") + dtype_short_name(p.b) : std::string()) +
                    "->" + dtype_short_name(p.c) + " " + epilogue_name(p.epilogue) + " " +
                    math_mode_name(p.math) + (p.fast_accum ? " fast-accumulation" : "") + ": " +
                    (p.epilogue == Epilogue::None ? "plain" : (p.fused ? "fused" : "unfused")) +
                    (p.tensor_cores ? ", tensor cores" : ", no tensor cores") +
                    (p.tensor_cores && !p.tensor_core_shapes ? " (dims not multiples of 8)" : "") +
                    ", " + std::to_string(p.calls) + " calls";
    if (p.tune_timed > 0) {
        char buf[96];
        std::snprintf(buf, sizeof buf, ", tuned %d candidates: #%d %.1f us vs #1 %.1f us",
                      p.tune_timed, p.tune_choice, p.tune_chosen_us, p.tune_first_us);
        s += buf;
    } else if (!p.tune_note.empty()) {
        s += ", heuristic #1 (" + p.tune_note + ")";
    }
    if (!p.note.empty()) s += " (" + p.note + ")";
    if (!p.staging.empty()) s += "; " + p.staging;
    return s;
}

} // namespace mixlab::cuda
