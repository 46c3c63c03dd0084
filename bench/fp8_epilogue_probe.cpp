// mixlab-fp8-epilogue-probe: whether cuBLASLt's fp8 GEMMs on this GPU can do, in their
// epilogue, the work mixed_fp8's own passes do around W1's two fp8 layers (issue 18), and
// what each fused GEMM costs against the GEMM the engine runs today.
//
// The engine's layer-1 forward writes bf16 X2 (relu'd, bias added); a pass then reads it
// back to quantize it to E4M3, write its transpose and relu's gate bits (X2's pass). The
// layer-2 dgrad writes bf16 dX2; a pass reads it with the gate bits, quantizes dZ1 to E5M2
// with its transpose and sums the bias gradient (dZ1's pass, then a column finish). If the
// GEMMs wrote the fp8 bytes (D_SCALE, AMAX_D) with relu's mask as cuBLASLt's aux output
// (RELU_AUX_BIAS) and read it back in the dgrad (DRELU_BGRAD), each pass would shrink to a
// byte transpose. Before any engine code, this says whether cuBLASLt offers those
// combinations for the TN fp8 shapes, how fast, and whether the bytes mean what we need:
//
//   fwd        X2 = relu(X1 W1^T + b1), D bf16                    (the engine's today)
//   fwd>e4m3   the same with D in E4M3: D_SCALE, AMAX_D
//   fwd+aux    D bf16, RELU_AUX_BIAS (relu's mask as 1 bit an element)
//   fwd+aux>e4m3  both
//   dgrad      dX2 = dZ2 W2, A = W2^T E4M3, B = dZ2 E5M2, D bf16  (the engine's today)
//   dgrad>e5m2              D in E5M2, no epilogue (relu's gate left to a pass on bytes)
//   dgrad+drelu>e5m2        D in E5M2 with relu's backward from the mask
//   dgrad+drelu+bgrad>e5m2  and the bias gradient (bf16, then fp32)
//   dgrad+drelu+bgrad       D bf16
//
// Each case asks the heuristic for up to 8 algorithms, times every one (the median of 20
// runs after 3 warm-up runs, CUDA events) and keeps the fastest. Its results are checked
// against the plain GEMM's on the host: the fp8 outputs decoded and divided by their
// scale must lie within half an fp8 step (plus the bf16 rounding of the reference) of
// the bf16 output, with the mask applied; the mask bits must equal "reference > 0"; AMAX_D
// must equal the largest |reference| within bf16 rounding; the bias gradient the column
// sums of the masked reference. A count of mismatches is printed, never hidden.
//
// Usage: mixlab-fp8-epilogue-probe [--batch N] [--in N] [--hidden N] [--out N]
// (W1 at batch 4096 by default: 3072 -> 3008 -> 1000, its 3000 units padded to 16 as an
// fp8 D needs; batch and in multiples of 16, the others padded as the engine pads its fp8
// copies: an fp8 D's row stride to 16 bytes, the dgrad's k with zeros). Needs a GPU of compute capability
// 8.9 or newer; prints to stdout; exit status 1 when a check failed, 2 on a CUDA error.
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

[[noreturn]] void die(const char* what, const char* detail)
{
    std::fprintf(stderr, "mixlab-fp8-epilogue-probe: %s: %s\n", what, detail);
    std::exit(2);
}

void cuda_ok(cudaError_t e, const char* what)
{
    if (e != cudaSuccess) die(what, cudaGetErrorString(e));
}

void lt_ok(cublasStatus_t s, const char* what)
{
    if (s != CUBLAS_STATUS_SUCCESS) die(what, cublasLtGetStatusName(s));
}

// A device allocation freed with the probe's scope.
struct DeviceBuffer {
    void* p = nullptr;
    std::size_t bytes = 0;
    explicit DeviceBuffer(std::size_t n) : bytes(n)
    {
        cuda_ok(cudaMalloc(&p, n), "cudaMalloc");
        cuda_ok(cudaMemset(p, 0, n), "cudaMemset");
    }
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;
    ~DeviceBuffer() { cudaFree(p); }
    template <class T>
    T* as() const
    {
        return static_cast<T*>(p);
    }
    template <class T>
    void upload(const std::vector<T>& v) const
    {
        cuda_ok(cudaMemcpy(p, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice), "upload");
    }
    template <class T>
    std::vector<T> download(std::size_t count) const
    {
        std::vector<T> v(count);
        cuda_ok(cudaMemcpy(v.data(), p, count * sizeof(T), cudaMemcpyDeviceToHost), "download");
        return v;
    }
};

float bf16_value(std::uint16_t bits)
{
    std::uint32_t u = std::uint32_t(bits) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

// Round to nearest even (finite values only: the probe makes no others).
std::uint16_t bf16_bits(float f)
{
    std::uint32_t u;
    std::memcpy(&u, &f, 4);
    return std::uint16_t((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

float e4m3_value(std::uint8_t b)
{
    __nv_fp8_e4m3 v;
    v.__x = b;
    return float(v);
}

float e5m2_value(std::uint8_t b)
{
    __nv_fp8_e5m2 v;
    v.__x = b;
    return float(v);
}

// A rows x cols matrix stored with its rows padded to ld (zeros there, as the engine's
// fp8 copies are): random values in [-range, range) as fp8 bytes of value * q (their
// descale is 1 / q).
std::vector<std::uint8_t> random_fp8(int rows, int cols, int ld, float range, float q, bool e5m2,
                                     std::mt19937& rng)
{
    std::uniform_real_distribution<float> u(-range, range);
    std::vector<std::uint8_t> out(std::size_t(rows) * ld, 0);
    for (int r = 0; r < rows; ++r)
        for (int c = 0; c < cols; ++c) {
            const float v = u(rng) * q;
            out[std::size_t(r) * ld + c] = e5m2 ? __nv_fp8_e5m2(v).__x : __nv_fp8_e4m3(v).__x;
        }
    return out;
}

template <class T>
void set_attr(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t a, const T& v)
{
    lt_ok(cublasLtMatmulDescSetAttribute(d, a, &v, sizeof(v)), "cublasLtMatmulDescSetAttribute");
}

// One GEMM in cuBLASLt's column-major terms: D (rows x cols) = A^T (rows x k) . B (k x cols),
// A stored k x rows (ld k), B stored k x cols (ld k): our row-major Y (cols x rows) =
// X (cols x k) . W^T with W (rows x k) as A and X as B, the TN form fp8 needs.
struct Case {
    std::string name;
    int rows, cols, k;
    cudaDataType_t a_type, b_type, d_type;
    cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
    cudaDataType_t bias_type = CUDA_R_16BF;
    const void *a = nullptr, *b = nullptr;
    void* d = nullptr;
    void* c = nullptr; // bf16, beta 0 (cuBLASLt wants a C even then; fp8 D needs a bf16 C)
    void* bias = nullptr;
    std::int64_t d_ld = 0; // rows when 0; an fp8 D's rows padded to 16 bytes, as x8's are
    void* aux = nullptr;
    std::int64_t aux_ld = 0;
    const float *a_scale = nullptr, *b_scale = nullptr, *d_scale = nullptr;
    float* amax_d = nullptr;
};

struct Timing {
    bool offered = false;      // the heuristic returned an algorithm
    std::string why;           // when not
    int algorithms = 0;        // offered
    int ran = 0;               // ran without error
    float best_us = 0.0f;      // the fastest algorithm's median
    std::size_t workspace = 0; // the fastest's
    // With AMAX_D: whether the GEMM replaces the value it finds (else folds its max into
    // it, which a slot other passes also fold into would need).
    bool amax_overwrites = false;
};

class Probe {
public:
    Probe()
    {
        lt_ok(cublasLtCreate(&m_lt), "cublasLtCreate");
        cuda_ok(cudaStreamCreate(&m_stream), "cudaStreamCreate");
        cuda_ok(cudaEventCreate(&m_t0), "cudaEventCreate");
        cuda_ok(cudaEventCreate(&m_t1), "cudaEventCreate");
    }
    ~Probe()
    {
        cudaEventDestroy(m_t0);
        cudaEventDestroy(m_t1);
        cudaStreamDestroy(m_stream);
        cublasLtDestroy(m_lt);
    }

    // Runs the fastest algorithm last, so that the outputs are its.
    Timing run(const Case& c)
    {
        Timing t;
        cublasLtMatmulDesc_t desc = nullptr;
        lt_ok(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), "descCreate");
        set_attr(desc, CUBLASLT_MATMUL_DESC_TRANSA, CUBLAS_OP_T);
        set_attr(desc, CUBLASLT_MATMUL_DESC_TRANSB, CUBLAS_OP_N);
        set_attr(desc, CUBLASLT_MATMUL_DESC_FAST_ACCUM, std::int8_t(0));
        set_attr(desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, c.a_scale);
        set_attr(desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, c.b_scale);
        if (c.d_scale) set_attr(desc, CUBLASLT_MATMUL_DESC_D_SCALE_POINTER, c.d_scale);
        if (c.amax_d) set_attr(desc, CUBLASLT_MATMUL_DESC_AMAX_D_POINTER, c.amax_d);
        set_attr(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, c.epilogue);
        if (c.bias) {
            set_attr(desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, std::int32_t(c.bias_type));
            set_attr(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, c.bias);
        }
        if (c.aux) {
            set_attr(desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, c.aux);
            set_attr(desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, c.aux_ld);
        }
        cublasLtMatrixLayout_t la, lb, lc, ld;
        lt_ok(cublasLtMatrixLayoutCreate(&la, c.a_type, c.k, c.rows, c.k), "layout A");
        lt_ok(cublasLtMatrixLayoutCreate(&lb, c.b_type, c.k, c.cols, c.k), "layout B");
        lt_ok(cublasLtMatrixLayoutCreate(&lc, CUDA_R_16BF, c.rows, c.cols, c.rows), "layout C");
        lt_ok(cublasLtMatrixLayoutCreate(&ld, c.d_type, c.rows, c.cols, c.d_ld ? c.d_ld : c.rows),
              "layout D");
        cublasLtMatmulPreference_t pref;
        lt_ok(cublasLtMatmulPreferenceCreate(&pref), "preference");
        const std::size_t ws = m_workspace.bytes;
        lt_ok(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                   &ws, sizeof(ws)),
              "preference workspace");
        cublasLtMatmulHeuristicResult_t found[8];
        int n = 0;
        const cublasStatus_t hs =
            cublasLtMatmulAlgoGetHeuristic(m_lt, desc, la, lb, lc, ld, pref, 8, found, &n);
        if (hs != CUBLAS_STATUS_SUCCESS || n == 0) {
            t.why = hs != CUBLAS_STATUS_SUCCESS ? cublasLtGetStatusName(hs) : "no algorithm";
        } else {
            t.offered = true;
            t.algorithms = n;
            int best = -1;
            for (int i = 0; i < n; ++i) {
                const float us = time_algo(c, desc, la, lb, lc, ld, found[i]);
                if (us < 0.0f) continue;
                ++t.ran;
                if (best < 0 || us < t.best_us) {
                    best = i;
                    t.best_us = us;
                    t.workspace = found[i].workspaceSize;
                }
            }
            if (best >= 0) {
                if (c.amax_d) {
                    const float big = 1e30f;
                    cuda_ok(cudaMemcpy(c.amax_d, &big, 4, cudaMemcpyHostToDevice), "amax set");
                    launch(c, desc, la, lb, lc, ld, found[best].algo);
                    float after = 0.0f;
                    cuda_ok(cudaMemcpy(&after, c.amax_d, 4, cudaMemcpyDeviceToHost), "amax read");
                    t.amax_overwrites = after != big;
                    cuda_ok(cudaMemset(c.amax_d, 0, 4), "amax reset");
                }
                launch(c, desc, la, lb, lc, ld, found[best].algo);
                cuda_ok(cudaStreamSynchronize(m_stream), "final run");
            } else {
                t.why = "every algorithm failed to run";
            }
        }
        cublasLtMatmulPreferenceDestroy(pref);
        cublasLtMatrixLayoutDestroy(la);
        cublasLtMatrixLayoutDestroy(lb);
        cublasLtMatrixLayoutDestroy(lc);
        cublasLtMatrixLayoutDestroy(ld);
        cublasLtMatmulDescDestroy(desc);
        return t;
    }

private:
    cublasStatus_t launch(const Case& c, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t la,
                          cublasLtMatrixLayout_t lb, cublasLtMatrixLayout_t lc,
                          cublasLtMatrixLayout_t ld, const cublasLtMatmulAlgo_t& algo)
    {
        const float alpha = 1.0f, beta = 0.0f;
        return cublasLtMatmul(m_lt, desc, &alpha, c.a, la, c.b, lb, &beta, c.c, lc, c.d, ld, &algo,
                              m_workspace.p, m_workspace.bytes, m_stream);
    }

    float time_algo(const Case& c, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t la,
                    cublasLtMatrixLayout_t lb, cublasLtMatrixLayout_t lc, cublasLtMatrixLayout_t ld,
                    const cublasLtMatmulHeuristicResult_t& r)
    {
        for (int i = 0; i < 3; ++i)
            if (launch(c, desc, la, lb, lc, ld, r.algo) != CUBLAS_STATUS_SUCCESS) return -1.0f;
        if (cudaStreamSynchronize(m_stream) != cudaSuccess) return -1.0f;
        std::vector<float> us;
        for (int i = 0; i < 20; ++i) {
            cuda_ok(cudaEventRecord(m_t0, m_stream), "event");
            launch(c, desc, la, lb, lc, ld, r.algo);
            cuda_ok(cudaEventRecord(m_t1, m_stream), "event");
            cuda_ok(cudaEventSynchronize(m_t1), "event sync");
            float ms = 0.0f;
            cuda_ok(cudaEventElapsedTime(&ms, m_t0, m_t1), "elapsed");
            us.push_back(ms * 1000.0f);
        }
        std::nth_element(us.begin(), us.begin() + 10, us.end());
        return us[10];
    }

    cublasLtHandle_t m_lt = nullptr;
    cudaStream_t m_stream = nullptr;
    cudaEvent_t m_t0 = nullptr, m_t1 = nullptr;
    DeviceBuffer m_workspace{32u << 20};
};

int arg_int(int argc, char** argv, const char* name, int fallback, bool multiple_of_16)
{
    for (int i = 1; i + 1 < argc; ++i)
        if (std::strcmp(argv[i], name) == 0) {
            const int v = std::atoi(argv[i + 1]);
            if (v <= 0) die(name, "must be a positive number");
            if (multiple_of_16 && v % 16 != 0) die(name, "must be a multiple of 16");
            return v;
        }
    return fallback;
}

int padded16(int n) { return (n + 15) / 16 * 16; }

// Mismatch counts of one checked output, printed under its case.
struct Check {
    std::string what;
    std::size_t bad = 0, total = 0;
    double worst = 0.0; // the largest error seen, in units of the allowed error
    // Mismatches tolerated (the mask: a pre-activation within the two algorithms' rounding
    // of 0 may take either sign; the H100 showed 11 to 18 of 12.3 million).
    std::size_t allowed_bad = 0;
    bool failed() const { return bad > allowed_bad; }
};

void print(const Case& c, const Timing& t, double gflop, const std::vector<Check>& checks)
{
    if (!t.offered || t.ran == 0) {
        std::printf("%-26s %s\n", c.name.c_str(), t.why.c_str());
        return;
    }
    std::printf("%-26s %8.1f us %7.0f TFLOP/s  %d of %d algorithms ran, workspace %zu%s\n",
                c.name.c_str(), t.best_us, gflop / t.best_us * 1e3, t.ran, t.algorithms,
                t.workspace,
                !c.amax_d           ? ""
                : t.amax_overwrites ? "; AMAX_D overwrites"
                                    : "; AMAX_D folds");
    for (const Check& k : checks)
        std::printf("    %-38s %zu of %zu outside (worst %.2f of the allowed)\n", k.what.c_str(),
                    k.bad, k.total, k.worst);
}

// |got - want| against the allowed error, into `k`.
void tally(Check& k, double got, double want, double allowed)
{
    const double e = std::fabs(got - want);
    ++k.total;
    if (e > allowed) ++k.bad;
    if (allowed > 0.0) k.worst = std::max(k.worst, e / allowed);
}

// Half an fp8 step at |v| (relative spacing 2^-mbits in the normal range, a fixed step
// below it), in the scaled domain, plus the reference's bf16 rounding and the two
// algorithms' different sums (2^-8 relative: at 2^-9, 0.1% of the values were up to 1.01
// of the allowance on the H100).
double fp8_allowed(double v_scaled, int mbits, double min_normal, double scale)
{
    const double a = std::fabs(v_scaled);
    const double step = a >= min_normal ? std::ldexp(1.0, int(std::floor(std::log2(a))) - mbits)
                                        : std::ldexp(min_normal, -mbits);
    return (0.5 * step + a * std::ldexp(1.0, -8)) / scale * 1.0001;
}

} // namespace

int main(int argc, char** argv)
{
    const int batch = arg_int(argc, argv, "--batch", 4096, true);
    const int in = arg_int(argc, argv, "--in", 3072, true);
    // 3008, not W1's 3000: cuBLASLt refuses every fp8 D whose rows (the layer's units) are
    // not a multiple of 16 (CUBLAS_STATUS_NOT_SUPPORTED at 3000 on the H100, cuBLASLt 13.1).
    const int hidden = arg_int(argc, argv, "--hidden", 3008, false);
    const int out = arg_int(argc, argv, "--out", 1000, false);
    // The k of the dgrad (out) padded with zeros; X2's fp8 rows padded for layer 2's k.
    const int out_p = padded16(out), hidden_p = padded16(hidden);
    int dev = 0;
    cudaDeviceProp prop{};
    cuda_ok(cudaGetDevice(&dev), "cudaGetDevice");
    cuda_ok(cudaGetDeviceProperties(&prop, dev), "cudaGetDeviceProperties");
    std::printf("%s (sm_%d%d), cuBLASLt %zu; batch %d, %d -> %d -> %d\n", prop.name, prop.major,
                prop.minor, cublasLtGetVersion(), batch, in, hidden, out);
    if (prop.major * 10 + prop.minor < 89) die("device", "fp8 GEMMs need compute capability 8.9");

    std::mt19937 rng(20261205);
    const std::size_t nx = std::size_t(batch) * in, nw1 = std::size_t(hidden) * in;
    const std::size_t ny = std::size_t(batch) * hidden, ny_p = std::size_t(batch) * hidden_p;
    const std::size_t nw2 = std::size_t(out_p) * hidden, ndz = std::size_t(batch) * out_p;
    // Quantization factors: values in [-1, 1) at 256 (E4M3's 448 is not exceeded); gradients
    // in [-1e-3, 1e-3) at 2^24 (E5M2).
    const float qx = 256.0f, qg = 16777216.0f;
    DeviceBuffer x1(nx), w1(nw1), w2t(nw2), dz2(ndz);
    x1.upload(random_fp8(batch, in, in, 1.0f, qx, false, rng));
    w1.upload(random_fp8(hidden, in, in, 0.03f, qx, false, rng));
    w2t.upload(random_fp8(hidden, out, out_p, 0.03f, qx, false, rng)); // W2^T: hidden x out_p
    dz2.upload(random_fp8(batch, out, out_p, 1e-3f, qg, true, rng));
    std::vector<std::uint16_t> b1(static_cast<std::size_t>(hidden));
    {
        std::uniform_real_distribution<float> u(-0.3f, 0.3f);
        for (auto& b : b1) b = bf16_bits(u(rng));
    }
    DeviceBuffer bias1(b1.size() * 2);
    bias1.upload(b1);
    // Scales: [0] 1/qx (X1, W1, W2^T), [4] 1/qg (dZ2), [8] D's scale for X2 (and [9] its
    // copy), [12] for dZ1; 16-byte apart, as cuBLASLt wants its A and B scale pointers.
    DeviceBuffer scales(64);
    DeviceBuffer amax(16);
    DeviceBuffer c_bf16(ny * 2), y_bf16(ny * 2), y_e4m3(ny_p), dy_bf16(ny * 2), dz_e5m2(ny_p);
    const std::int64_t aux_ld = (hidden + 127) / 128 * 128;
    DeviceBuffer mask(std::size_t(aux_ld) * batch / 8), bgrad(std::size_t(hidden) * 4);

    Probe probe;
    int failed = 0;
    const double fwd_gflop = 2.0 * batch * in * hidden * 1e-9;
    const double dgrad_gflop = 2.0 * batch * out * hidden * 1e-9;

    // The reference forward first: its amax sets X2's scale as delayed scaling would.
    Case fwd{"fwd", hidden, batch, in, CUDA_R_8F_E4M3, CUDA_R_8F_E4M3, CUDA_R_16BF};
    fwd.epilogue = CUBLASLT_EPILOGUE_RELU_BIAS;
    fwd.a = w1.p;
    fwd.b = x1.p;
    fwd.c = c_bf16.p;
    fwd.d = y_bf16.p;
    fwd.bias = bias1.p;
    fwd.a_scale = fwd.b_scale = scales.as<float>();
    float host_scales[16] = {1.0f / qx, 0, 0, 0, 1.0f / qg};
    scales.upload(std::vector<float>(host_scales, host_scales + 16));
    const Timing t_fwd = probe.run(fwd);
    print(fwd, t_fwd, fwd_gflop, {});
    if (!t_fwd.offered || t_fwd.ran == 0) return 2;
    const std::vector<std::uint16_t> y = y_bf16.download<std::uint16_t>(ny);
    float y_amax = 0.0f;
    for (std::uint16_t v : y) y_amax = std::max(y_amax, std::fabs(bf16_value(v)));
    host_scales[8] = 448.0f / y_amax;
    scales.upload(std::vector<float>(host_scales, host_scales + 16));
    const double x2_scale = host_scales[8];

    // Forward variants: E4M3 output, the mask, both; then the E4M3 output with D_SCALE 4
    // bytes past a 16-byte boundary (the engine's meta block keeps the scale at float 1:
    // cuBLASLt refused A and B scale pointers so placed, bench/NOTES.md 31), and with C null.
    host_scales[9] = host_scales[8];
    scales.upload(std::vector<float>(host_scales, host_scales + 16));
    for (int variant = 1; variant <= 5; ++variant) {
        const bool to_fp8 = variant != 2, with_aux = variant == 2 || variant == 3;
        Case c = fwd;
        c.name = std::string("fwd") + (with_aux ? "+aux" : "") + (to_fp8 ? ">e4m3" : "") +
                 (variant == 4 ? " D_SCALE+4" : "") + (variant == 5 ? " C=null" : "");
        // Variant 5: no C at all (beta is 0), which the engine would rather pass than keep a
        // bf16 matrix nothing reads.
        if (variant == 5) c.c = nullptr;
        if (with_aux) {
            c.epilogue = CUBLASLT_EPILOGUE_RELU_AUX_BIAS;
            c.aux = mask.p;
            c.aux_ld = aux_ld;
            cuda_ok(cudaMemset(mask.p, 0xA5, mask.bytes), "mask poison");
        }
        if (to_fp8) {
            c.d_type = CUDA_R_8F_E4M3;
            c.d = y_e4m3.p;
            c.d_ld = hidden_p;
            c.d_scale = scales.as<float>() + (variant == 4 ? 9 : 8);
            c.amax_d = amax.as<float>();
        } else {
            c.d = dy_bf16.p; // scratch: fwd's output stays the reference
        }
        const Timing t = probe.run(c);
        std::vector<Check> checks;
        if (t.offered && t.ran > 0) {
            if (to_fp8) {
                Check k{"E4M3 bytes / scale against bf16 fwd"};
                const auto q = y_e4m3.download<std::uint8_t>(ny_p);
                for (std::size_t s = 0; s < std::size_t(batch); ++s)
                    for (std::size_t f = 0; f < std::size_t(hidden); ++f) {
                        const double want = bf16_value(y[s * hidden + f]);
                        tally(k, e4m3_value(q[s * hidden_p + f]) / x2_scale, want,
                              fp8_allowed(want * x2_scale, 3, 0.015625, x2_scale));
                    }
                checks.push_back(k);
                Check a{"AMAX_D against max |bf16 fwd|"};
                const float got = amax.download<float>(1)[0];
                tally(a, got, y_amax, y_amax * std::ldexp(1.0, -8));
                checks.push_back(a);
            }
            if (with_aux) {
                Check k{"mask bit against bf16 fwd > 0"};
                k.allowed_bad = ny / 100000;
                const auto bits = mask.download<std::uint8_t>(mask.bytes);
                for (int s = 0; s < batch; ++s)
                    for (int f = 0; f < hidden; ++f) {
                        const std::size_t bit = std::size_t(s) * aux_ld + f;
                        const bool on = (bits[bit / 8] >> (bit % 8)) & 1u;
                        const bool want = bf16_value(y[std::size_t(s) * hidden + f]) > 0.0f;
                        tally(k, on ? 1.0 : 0.0, want ? 1.0 : 0.0, 0.5);
                    }
                checks.push_back(k);
            }
        }
        failed +=
            std::any_of(checks.begin(), checks.end(), [](const Check& k) { return k.failed(); });
        print(c, t, fwd_gflop, checks);
    }
    // The mask the dgrad variants read: cuBLASLt's own when it made one, else ours.
    {
        Case c = fwd;
        c.epilogue = CUBLASLT_EPILOGUE_RELU_AUX_BIAS;
        c.aux = mask.p;
        c.aux_ld = aux_ld;
        c.d = dy_bf16.p;
        c.name = "(mask for the dgrad)";
        const Timing t = probe.run(c);
        if (!t.offered || t.ran == 0) {
            std::printf("no RELU_AUX_BIAS: the dgrad cases read a mask made on the host\n");
            std::vector<std::uint8_t> bits(mask.bytes, 0);
            for (int s = 0; s < batch; ++s)
                for (int f = 0; f < hidden; ++f)
                    if (bf16_value(y[std::size_t(s) * hidden + f]) > 0.0f) {
                        const std::size_t bit = std::size_t(s) * aux_ld + f;
                        bits[bit / 8] |= std::uint8_t(1u << (bit % 8));
                    }
            mask.upload(bits);
        }
    }

    // The reference dgrad: dX2 = dZ2 W2 (A = W2^T, k = out).
    Case dgrad{"dgrad", hidden, batch, out_p, CUDA_R_8F_E4M3, CUDA_R_8F_E5M2, CUDA_R_16BF};
    dgrad.a = w2t.p;
    dgrad.b = dz2.p;
    dgrad.c = c_bf16.p;
    dgrad.d = dy_bf16.p;
    dgrad.a_scale = scales.as<float>();
    dgrad.b_scale = scales.as<float>() + 4;
    const Timing t_dgrad = probe.run(dgrad);
    print(dgrad, t_dgrad, dgrad_gflop, {});
    if (!t_dgrad.offered || t_dgrad.ran == 0) return 2;
    const std::vector<std::uint16_t> dy = dy_bf16.download<std::uint16_t>(ny);
    const std::vector<std::uint8_t> bits = mask.download<std::uint8_t>(mask.bytes);
    // The masked reference dZ1, its amax and column sums (over the batch, per feature).
    std::vector<float> dz(ny);
    std::vector<double> sums(std::size_t(hidden), 0.0);
    float dz_amax = 0.0f, dy_amax = 0.0f;
    for (int s = 0; s < batch; ++s)
        for (int f = 0; f < hidden; ++f) {
            const std::size_t bit = std::size_t(s) * aux_ld + f, i = std::size_t(s) * hidden + f;
            const bool on = (bits[bit / 8] >> (bit % 8)) & 1u;
            dz[i] = on ? bf16_value(dy[i]) : 0.0f;
            sums[std::size_t(f)] += dz[i];
            dz_amax = std::max(dz_amax, std::fabs(dz[i]));
            dy_amax = std::max(dy_amax, std::fabs(bf16_value(dy[i])));
        }
    host_scales[12] = 57344.0f / dz_amax;
    scales.upload(std::vector<float>(host_scales, host_scales + 16));
    const double dz_scale = host_scales[12];
    double sum_scale = 0.0;
    for (double s : sums) sum_scale = std::max(sum_scale, std::fabs(s));

    struct DgradVariant {
        const char* name;
        cublasLtEpilogue_t epilogue;
        bool to_fp8;
        cudaDataType_t bias_type;
    };
    // The first without relu's backward (no mask read): its E5M2 output is dX2 itself, for
    // a dZ pass that would gate and transpose the bytes.
    const DgradVariant variants[] = {
        {"dgrad>e5m2", CUBLASLT_EPILOGUE_DEFAULT, true, CUDA_R_16BF},
        {"dgrad+drelu>e5m2", CUBLASLT_EPILOGUE_DRELU, true, CUDA_R_16BF},
        {"dgrad+drelu+bgrad>e5m2", CUBLASLT_EPILOGUE_DRELU_BGRAD, true, CUDA_R_16BF},
        {"dgrad+drelu+bgrad32>e5m2", CUBLASLT_EPILOGUE_DRELU_BGRAD, true, CUDA_R_32F},
        {"dgrad+drelu+bgrad", CUBLASLT_EPILOGUE_DRELU_BGRAD, false, CUDA_R_16BF},
    };
    for (const DgradVariant& v : variants) {
        Case c = dgrad;
        c.name = v.name;
        c.epilogue = v.epilogue;
        if (v.epilogue != CUBLASLT_EPILOGUE_DEFAULT) {
            c.aux = mask.p;
            c.aux_ld = aux_ld;
        }
        const bool masked = c.aux != nullptr;
        const bool bgrad_on = v.epilogue == CUBLASLT_EPILOGUE_DRELU_BGRAD;
        if (bgrad_on) {
            c.bias = bgrad.p;
            c.bias_type = v.bias_type;
            cuda_ok(cudaMemset(bgrad.p, 0xFF, bgrad.bytes), "bgrad poison");
        }
        if (v.to_fp8) {
            c.d_type = CUDA_R_8F_E5M2;
            c.d = dz_e5m2.p;
            c.d_ld = hidden_p;
            c.d_scale = scales.as<float>() + 12;
            c.amax_d = amax.as<float>() + 1;
        } else {
            c.d = y_bf16.p; // scratch now: the forward reference was read above
        }
        const Timing t = probe.run(c);
        std::vector<Check> checks;
        if (t.offered && t.ran > 0) {
            if (v.to_fp8) {
                Check k{masked ? "E5M2 bytes / scale against masked dgrad"
                               : "E5M2 bytes / scale against bf16 dgrad"};
                const auto q = dz_e5m2.download<std::uint8_t>(ny_p);
                for (std::size_t s = 0; s < std::size_t(batch); ++s)
                    for (std::size_t f = 0; f < std::size_t(hidden); ++f) {
                        const std::size_t i = s * hidden + f;
                        const double want = masked ? double(dz[i]) : double(bf16_value(dy[i]));
                        tally(k, e5m2_value(q[s * hidden_p + f]) / dz_scale, want,
                              fp8_allowed(want * dz_scale, 2, 6.103515625e-05, dz_scale));
                    }
                checks.push_back(k);
                Check a{masked ? "AMAX_D against max |masked dgrad|"
                               : "AMAX_D against max |bf16 dgrad|"};
                const float want_amax = masked ? dz_amax : dy_amax;
                tally(a, amax.download<float>(2)[1], want_amax, want_amax * std::ldexp(1.0, -8));
                checks.push_back(a);
            } else {
                Check k{"bf16 D against masked dgrad"};
                const auto d = y_bf16.download<std::uint16_t>(ny);
                for (std::size_t i = 0; i < ny; ++i)
                    tally(k, bf16_value(d[i]), dz[i], std::fabs(dz[i]) * std::ldexp(1.0, -8));
                checks.push_back(k);
            }
            if (bgrad_on) {
                // Summed from fp32 products where the reference sums their bf16 roundings:
                // allowed 2^-7 of the largest column sum.
                Check k{"bias gradient against column sums"};
                if (v.bias_type == CUDA_R_32F) {
                    const auto g = bgrad.download<float>(std::size_t(hidden));
                    for (int f = 0; f < hidden; ++f)
                        tally(k, g[std::size_t(f)], sums[std::size_t(f)], sum_scale / 128.0);
                } else {
                    const auto g = bgrad.download<std::uint16_t>(std::size_t(hidden));
                    for (int f = 0; f < hidden; ++f)
                        tally(k, bf16_value(g[std::size_t(f)]), sums[std::size_t(f)],
                              sum_scale / 128.0);
                }
                checks.push_back(k);
            }
        }
        failed +=
            std::any_of(checks.begin(), checks.end(), [](const Check& k) { return k.failed(); });
        print(c, t, dgrad_gflop, checks);
    }
    std::printf("%s\n", failed ? "some outputs did not match (see above)" : "every output matched");
    return failed ? 1 : 0;
}
