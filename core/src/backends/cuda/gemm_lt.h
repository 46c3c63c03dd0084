// Row-major GEMMs with fused epilogues through cuBLASLt. One plan (descriptors, layouts,
// the algorithm) per distinct call shape, built on first use and reused, so steady-state
// steps make no heuristic queries. Building a plan times the heuristic's candidates and
// keeps a clearly faster one (gemm_tune.h; MIXLAB_GEMM_TUNE=0 keeps the heuristic's
// first). When cuBLASLt has no algorithm for an epilogue (or MIXLAB_GEMM_UNFUSED is set),
// the plan runs the plain GEMM plus our own kernel and says so. Operands whose rows are
// not 16-byte aligned may be copied through aligned scratch (gemm_staging.h).
#pragma once
#include "backends/cuda/device_memory.h"
#include "backends/cuda/gemm_report.h"
#include "backends/cuda/gemm_staging.h"
#include "backends/cuda/lt_handles.h"
#include "backends/cuda/reduce_scratch.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace mixlab::cuda {

// What the device offers (for the tensor-core column of the report).
struct GemmDevice {
    bool tensor_cores = false; // fp16 (7.0+)
    bool bf16 = false;         // bf16 (8.0+)
    bool tf32 = false;         // tf32 (8.0+)
    bool fp8 = false;          // E4M3/E5M2 operands (8.9+)
};

class LtGemm {
public:
    // scratch: for the unfused bias-gradient column sums (owned by the backend).
    LtGemm(const GemmDevice& device, ReduceScratch& scratch);
    LtGemm(const LtGemm&) = delete;
    LtGemm& operator=(const LtGemm&) = delete;

    // Enqueues call on stream; validates shapes and dtypes first (mixlab::Error).
    void run(const GemmCall& call, cudaStream_t stream);
    std::vector<GemmPlanInfo> plans() const;

    static constexpr std::size_t k_workspace_bytes = 32u << 20;
    // Heuristic results asked for per plan (all timed when tuning is on).
    static constexpr int k_max_candidates = 8;

private:
    struct Key {
        bool trans_a, trans_b;
        int m, n, k;
        DType ab, c, aux; // aux: bias or bias-grad dtype (F32 when neither)
        DType b;          // B's dtype: ab's but for fp8 GEMMs, whose operands may differ
        Epilogue epilogue;
        MathMode math;
        std::uint16_t align_a, align_b, align_c, align_aux; // pointer alignment, capped at 256
        StageMode stage;                                    // MIXLAB_GEMM_STAGE at the call
        bool fast_accum;                                    // fp8 only: GemmCall's
        bool operator==(const Key&) const = default;
    };
    struct KeyHash {
        std::size_t operator()(const Key& k) const noexcept;
    };
    enum class Fallback { None, BiasActivation, BiasGradRows, BiasGradColumns };
    struct Plan {
        LtMatmulDesc desc;
        LtLayout a, b, c; // cuBLASLt's A is our B: row-major C = op(A) op(B) is col-major C^T
        // D's layout: c's, but for an fp8 output (GemmCall::c_scale), whose C is bfloat16
        // (cuBLASLt's type table) and never read (beta 0).
        LtLayout d;
        cublasLtMatmulAlgo_t algo{};
        std::size_t workspace = 0;
        bool fused = true;
        Fallback fallback = Fallback::None;
        const Plan* plain = nullptr; // the epilogue-free plan an unfused plan runs
        GemmStaging staging;         // operands copied to aligned rows around the call
        GemmPlanInfo info;
    };
    // Our split-k kernel serves this shape better than any cuBLASLt kernel can.
    bool skinny_applies(const GemmCall& call) const;
    static void set_shape(GemmPlanInfo& info, const Key& key);
    // A classifier head's input gradient (k <= 16, not a multiple of 8), whose A no
    // tensor-core kernel can read: our narrow kernel instead.
    bool narrow_dgrad_applies(const GemmCall& call) const;
    // The plan of a shape our own kernel runs (skinny or narrow), note() saying why.
    Plan& own_kernel_plan(const Key& key, const std::function<std::string()>& note);

    // A new plan is built (and timed) with the operands of the call that first needs it.
    Plan& plan_for(const Key& key, const GemmCall& call, const void* aux_ptr, cudaStream_t stream);
    // The same shape with no epilogue.
    Plan& plain_plan(const Key& key, const GemmCall& call, cudaStream_t stream);
    // Null when the heuristic has no algorithm for this combination. The usable
    // heuristic results, best first, land in `candidates`; the plan takes the first.
    // With `staging`, the staged operands' layouts take its row strides.
    std::unique_ptr<Plan> try_plan(const Key& key, const void* aux_ptr,
                                   std::vector<cublasLtMatmulHeuristicResult_t>& candidates,
                                   const GemmStaging* staging = nullptr);
    // Times the candidates on the given operands (the call's own, or staged copies).
    void tune(Plan& plan, const Key& key, const GemmCall& call, const void* a, const void* b,
              const std::vector<cublasLtMatmulHeuristicResult_t>& candidates, cudaStream_t stream);
    // Replaces `plan` by a staged one when that times faster (or is forced).
    void consider_staging(std::unique_ptr<Plan>& plan, const Key& key, const GemmCall& call,
                          const void* aux_ptr, cudaStream_t stream);
    // The staged operands copied in (and C's place), for one call of a staged plan.
    struct Operands {
        const void* a;
        const void* b;
        void* c;
    };
    Operands stage_in(const Plan& plan, const GemmCall& call, cudaStream_t stream);
    void stage_out(const Plan& plan, const GemmCall& call, cudaStream_t stream);
    void grow_staging(const GemmStaging& s, cudaStream_t stream);
    cublasStatus_t matmul(const Plan& plan, const Operands& ops, const GemmCall& call,
                          const void* aux_ptr, cudaStream_t stream);
    // An fp8 plan's descale pointers, the call's own (the plan may serve several calls).
    // No-op for other calls.
    static void set_fp8_scales(cublasLtMatmulDesc_t desc, const GemmCall& call);
    void run_fallback(const Plan& plan, const GemmCall& call, cudaStream_t stream);
    void make_unfused(Plan& plan, const Key& key, const char* why, const GemmCall& call,
                      cudaStream_t stream);

    GemmDevice m_device;
    ReduceScratch& m_scratch;
    LtHandle m_handle;
    DeviceMemory m_workspace;
    bool m_fuse_epilogues = true; // MIXLAB_GEMM_UNFUSED=1 runs every epilogue as our kernel
    bool m_tune = true;           // MIXLAB_GEMM_TUNE=0 keeps the heuristic's first choice
    // MIXLAB_GEMM_SKINNY=0 leaves the skinny and narrow shapes to cuBLASLt (for A/B timing).
    bool m_skinny = true;
    // The staged copies of A, B and C: one set for every staged plan (stream order keeps
    // their uses apart), grown while planning.
    DeviceMemory m_stage_a, m_stage_b, m_stage_c;
    std::unordered_map<Key, std::unique_ptr<Plan>, KeyHash> m_plans;
};

} // namespace mixlab::cuda
