// What the convolution planners share: the math type a request permits, the search
// over cuDNN's candidates for one direction (timed by FindEx, else the heuristics), and
// the names that logs and `mixlab-cli check` show for the algorithms chosen.
#pragma once
#include "backends/cuda/cudnn_handles.h"
#include "backends/cuda/gated_timing.h"
#include "mixlab/backend.h"

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

namespace mixlab::cuda::conv_search {

inline std::string geometry_text(const ConvGeometry& g)
{
    return std::to_string(g.batch) + "x" + std::to_string(g.in_h) + "x" + std::to_string(g.in_w) +
           "x" + std::to_string(g.in_c) + " -> " + std::to_string(g.out_h) + "x" +
           std::to_string(g.out_w) + "x" + std::to_string(g.out_c) + ", kernel " +
           std::to_string(g.kernel_h) + "x" + std::to_string(g.kernel_w) + ", stride " +
           std::to_string(g.stride_h) + "x" + std::to_string(g.stride_w) + ", pad " +
           std::to_string(g.pad_h) + "x" + std::to_string(g.pad_w);
}

// fp32 data: Pedantic (and Reduced, as for GEMMs) stays on FMA kernels; TF32 permits
// tensor cores, which for fp32 data means TF32 (TENSOR_OP_MATH rather than DEFAULT_MATH,
// which permits TF32 too, because cuDNN then says in each candidate's mathType whether
// it runs on tensor cores). 16-bit data: tensor cores with fp32 accumulation (the
// descriptor's compute type is float in every case).
inline cudnnMathType_t requested_math(DType t, MathMode m)
{
    if (t != DType::F32) return CUDNN_TENSOR_OP_MATH;
    return m == MathMode::TF32 ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH;
}

inline bool fp32_exact(DType t, MathMode m) { return t == DType::F32 && m != MathMode::TF32; }

// A candidate's math type is acceptable for the request: never a down-conversion of
// fp32 data, never tensor cores for exact fp32.
inline bool math_allowed(cudnnMathType_t got, DType t, MathMode m)
{
    if (got == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION) return false;
    if (fp32_exact(t, m)) return got != CUDNN_TENSOR_OP_MATH;
    return true;
}

// The first acceptable candidate (cuDNN sorts them fastest first), preferring the
// deterministic ones: the same seed then gives the same run, bit for bit.
template <class Perf>
const Perf* choose(const Perf* r, int n, std::size_t limit, DType t, MathMode m)
{
    const Perf* any = nullptr;
    for (int i = 0; i < n; ++i) {
        if (r[i].status != CUDNN_STATUS_SUCCESS || r[i].memory > limit ||
            !math_allowed(r[i].mathType, t, m))
            continue;
        if (r[i].determinism == CUDNN_DETERMINISTIC) return &r[i];
        if (!any) any = &r[i];
    }
    return any;
}

// What one direction's search may use, and what it found.
struct Search {
    bool can_time;     // scratch tensors and workspace exist: FindEx may run
    bool force_direct; // MIXLAB_CONV_DIRECT: no search at all
    std::size_t limit; // the most workspace an algorithm may ask for
    DType t;
    MathMode m;
    std::string what;      // the plan, for MIXLAB_CONV_LOG
    cudaStream_t stream{}; // where the candidates are timed again (retime)
};

struct Choice {
    bool direct = true; // no cuDNN algorithm: our direct kernel
    int algo = 0;
    cudnnMathType_t math = CUDNN_DEFAULT_MATH;
    std::size_t memory = 0;
    float ms = 0; // the median of its timed runs (retime), when timed
    bool timed = false;
    bool deterministic = false;
    bool tensor_cores() const { return !direct && math == CUDNN_TENSOR_OP_MATH; }
};

// Candidates within this factor of FindEx's pick are timed again, at most this many.
inline constexpr float k_retime_within = 1.25f;
inline constexpr int k_retime_max = 4;
inline constexpr int k_retime_runs = 5;

// FindEx runs each candidate once, and at ResNet-18's sizes one run is noisy: the pick
// moved by tens of microseconds from process to process. The acceptable candidates of
// the pick's determinism within k_retime_within of its time run again, k_retime_runs
// times each after a warm-up run (gated_timing.h: kernel time, not the calls' host
// cost), and the fastest median wins; *ms is that median. A pick alone within that
// range is timed so too: its time is compared with the graph API's pick (conv_graph.h),
// a median taken the same way, and a margin of a few percent means nothing between a
// median and FindEx's single run.
// `run` makes one call of a candidate on the planner's scratch.
template <class Perf, class Run>
const Perf* retime(const Perf* r, int n, const Perf* pick, const Search& s, Run run, float* ms)
{
    *ms = pick->time;
    std::vector<const Perf*> cands;
    for (int i = 0; i < n && int(cands.size()) < k_retime_max; ++i)
        if (r[i].status == CUDNN_STATUS_SUCCESS && r[i].memory <= s.limit &&
            math_allowed(r[i].mathType, s.t, s.m) && r[i].determinism == pick->determinism &&
            r[i].time <= k_retime_within * pick->time)
            cands.push_back(&r[i]);
    if (cands.empty()) return pick;
    const GatedTimes times =
        time_gated(s.stream, int(cands.size()), GatedRuns{1, k_retime_runs},
                   [&](int i) { return run(*cands[std::size_t(i)]) == CUDNN_STATUS_SUCCESS; });
    if (!times.timed) return pick; // FindEx's pick and time stand
    const Perf* best = pick;
    std::optional<float> best_ms;
    for (std::size_t i = 0; i < cands.size(); ++i) {
        const std::optional<float>& median = times.median_ms[i];
        if (median && (!best_ms || *median < *best_ms)) {
            best = cands[i];
            best_ms = median;
        }
    }
    if (best_ms) *ms = *best_ms;
    return best;
}

// Times the candidates (FindEx, then retime) when it can, falls back to cuDNN's
// heuristics, and leaves the direction to the direct kernel when neither offers an
// acceptable one.
template <class Perf, class Find, class Heuristic, class Run>
Choice pick_algorithm(const Search& s, const char* direction, Find find, Heuristic heuristic,
                      Run run)
{
    Choice c;
    if (s.force_direct) return c;
    Perf r[8];
    int n = 0;
    const Perf* pick = nullptr;
    // The first run of a kernel may load its module (CUDA loads them lazily) and time
    // far slower than it will run: a warm-up search first, discarded, so that the timed
    // one compares the kernels as the steps will run them.
    if (s.can_time) {
        Perf warm[8];
        int warm_n = 0;
        (void)find(warm, &warm_n);
    }
    float pick_ms = 0;
    if (s.can_time && find(r, &n) == CUDNN_STATUS_SUCCESS) {
        pick = choose(r, n, s.limit, s.t, s.m);
        if (pick) pick = retime(r, n, pick, s, run, &pick_ms);
        c.timed = pick != nullptr;
        // MIXLAB_CONV_LOG=1: every timed candidate on stderr, to see why one was picked.
        if (std::getenv("MIXLAB_CONV_LOG")) {
            std::fprintf(stderr, "conv search %s: %s\n", direction, s.what.c_str());
            for (int i = 0; i < n; ++i)
                std::fprintf(stderr,
                             "conv candidate %d: algo %d status %d FindEx %.3f ms memory %zu"
                             " deterministic %d math %d%s\n",
                             i, int(r[i].algo), int(r[i].status), double(r[i].time),
                             std::size_t(r[i].memory), int(r[i].determinism == CUDNN_DETERMINISTIC),
                             int(r[i].mathType), &r[i] == pick ? " <- chosen" : "");
        }
    }
    // A configuration cuDNN cannot describe at all also ends on the direct kernel.
    if (!pick && heuristic(r, &n) == CUDNN_STATUS_SUCCESS) pick = choose(r, n, s.limit, s.t, s.m);
    if (!pick) return c;
    c.direct = false;
    c.algo = int(pick->algo);
    c.math = pick->mathType;
    c.memory = pick->memory;
    c.ms = c.timed ? pick_ms : 0.0f;
    c.deterministic = pick->determinism == CUDNN_DETERMINISTIC;
    return c;
}

inline const char* fwd_name(cudnnConvolutionFwdAlgo_t a)
{
    static const char* const names[] = {
        "implicit_gemm", "implicit_precomp_gemm", "gemm", "direct", "fft", "fft_tiling",
        "winograd",      "winograd_nonfused"};
    return unsigned(a) < std::size(names) ? names[a] : "unknown";
}

inline const char* bwd_data_name(cudnnConvolutionBwdDataAlgo_t a)
{
    static const char* const names[] = {"algo_0",     "algo_1",   "fft",
                                        "fft_tiling", "winograd", "winograd_nonfused"};
    return unsigned(a) < std::size(names) ? names[a] : "unknown";
}

inline const char* bwd_filter_name(cudnnConvolutionBwdFilterAlgo_t a)
{
    static const char* const names[] = {
        "algo_0", "algo_1", "fft", "algo_3", "winograd", "winograd_nonfused", "fft_tiling"};
    return unsigned(a) < std::size(names) ? names[a] : "unknown";
}

// "implicit_precomp_gemm (tensor cores)"; fp32 data on tensor cores is TF32. A
// DEFAULT_MATH candidate for fp32 under TF32 may or may not use TF32 (cuDNN does not
// say): the name says it was permitted.
inline std::string algo_text(const char* name, cudnnMathType_t mt, DType t, MathMode m)
{
    std::string s = name;
    if (mt == CUDNN_TENSOR_OP_MATH)
        s += t == DType::F32 ? " (tf32 tensor cores)" : " (tensor cores)";
    else if (t == DType::F32 && m == MathMode::TF32)
        s += " (tf32 permitted)";
    return s;
}

// A convolution descriptor of g (fp32 compute type) asking for `math`.
inline ConvDesc make_conv_desc(const ConvGeometry& g, cudnnMathType_t math)
{
    ConvDesc d = ConvDesc::create();
    MIXLAB_CUDNN_CHECK(cudnnSetConvolution2dDescriptor(d.get(), g.pad_h, g.pad_w, g.stride_h,
                                                       g.stride_w, 1, 1, CUDNN_CROSS_CORRELATION,
                                                       CUDNN_DATA_FLOAT));
    MIXLAB_CUDNN_CHECK(cudnnSetConvolutionMathType(d.get(), math));
    return d;
}

} // namespace mixlab::cuda::conv_search
