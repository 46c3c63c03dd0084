// The fp8 op checks: quantization (E4M3 and E5M2 from every floating input dtype, with and
// without the transposed copy and the amax, over ties, subnormals, saturation, NaN and
// infinities), delayed scaling's update (history roll, margin, zero and non-finite
// amax), and the three GEMMs of an fp8 dense layer against the reference. Quantization
// and the update are one exact function (hd_math.h) on both sides: their outputs must
// agree bit for bit. GEMMs see identical fp8 operands and descales, so only the order of
// the fp32 accumulation differs (the tolerances of backend_check.cpp's 16-bit GEMMs).
#include "check/backend_check_fp8.h"

#include "backends/op_names.h"
#include "base/hd_math.h"
#include "check/check_harness.h"
#include "mixlab/error.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace mixlab {

namespace {

using check_harness::CheckBody;
using check_harness::num;
using check_harness::Rng;
using check_harness::run_check;
using check_harness::Tol;
using check_harness::Verdict;

constexpr float k_nan = std::numeric_limits<float>::quiet_NaN();
constexpr float k_inf = std::numeric_limits<float>::infinity();

hd::Fp8Format format_of(DType t) { return t == DType::F8E5M2 ? hd::k_e5m2 : hd::k_e4m3; }

std::string hex(std::uint32_t bits)
{
    char buf[16];
    std::snprintf(buf, sizeof buf, "0x%08x", bits);
    return buf;
}

struct Twin {
    Buffer ref, cand;
    DType dtype = DType::F32;
    std::size_t count = 0;
};

class Fp8Checker {
public:
    Fp8Checker(Backend& ref, Backend& cand, std::uint64_t seed, std::string filter)
        : m_ref(ref), m_cand(cand), m_seed(seed), m_filter(std::move(filter))
    {}

    std::vector<CheckResult> run_all()
    {
        quantize_checks();
        relu_mask_checks();
        transpose_checks();
        gather_checks();
        weights_checks();
        update_checks();
        gemm_checks();
        reject_checks();
        graph_checks();
        return std::move(m_results);
    }

private:
    using Body = CheckBody;
    void run(const std::string& name, const Body& body)
    {
        run_check(name, m_filter, m_seed, body, m_results);
    }

    // op(backend, ref) once per backend, reference first, with the same arguments.
    template <class Op>
    void on_both(const Op& op)
    {
        op(m_ref, true);
        op(m_cand, false);
    }
    static Buffer& side(Twin& w, bool ref) { return ref ? w.ref : w.cand; }

    Twin twin(std::size_t n, DType t)
    {
        Twin w;
        w.ref = m_ref.alloc(n, t);
        w.cand = m_cand.alloc(n, t);
        w.dtype = t;
        w.count = n;
        return w;
    }
    void set(Twin& w, const std::vector<float>& v)
    {
        on_both([&](Backend& b, bool ref) { b.upload_f32(side(w, ref), v.data(), v.size(), 0); });
    }
    Twin make(const std::vector<float>& v, DType t)
    {
        Twin w = twin(v.size(), t);
        set(w, v);
        return w;
    }
    // An I32 buffer's words as they are (download_f32 would round them to floats).
    std::vector<std::uint32_t> words(Backend& b, const Buffer& buf)
    {
        float* host = b.host_alloc(buf.count());
        b.copy_raw_to_host_async(buf, buf.count() * 4, host);
        b.synchronize();
        std::vector<std::uint32_t> w(buf.count());
        std::memcpy(w.data(), host, w.size() * 4);
        b.host_free(host);
        return w;
    }
    Twin make_words(const std::vector<std::uint32_t>& w)
    {
        Twin t = twin(w.size(), DType::I32);
        on_both([&](Backend& b, bool ref) { b.upload_raw(side(t, ref), w.data(), w.size() * 4); });
        return t;
    }

    // NaN everywhere (fp8 buffers: the NaN byte): anything an op fails to write shows.
    void poison(Twin& w) { set(w, std::vector<float>(w.count, k_nan)); }
    std::vector<float> get(Backend& b, const Buffer& buf)
    {
        std::vector<float> v(buf.count());
        b.download_f32(buf, v.data(), v.size());
        return v;
    }

    // Bit for bit: the sign of a NaN and of a zero count too.
    void compare_bits(Verdict& v, const std::string& what, Twin& w)
    {
        compare_bits(v, what, get(m_ref, w.ref), get(m_cand, w.cand));
    }
    static void compare_bits(Verdict& v, const std::string& what, const std::vector<float>& r,
                             const std::vector<float>& c)
    {
        std::size_t bad = 0, first = 0;
        for (std::size_t i = 0; i < r.size() && i < c.size(); ++i)
            if (hd::float_bits(r[i]) != hd::float_bits(c[i]) && bad++ == 0) first = i;
        if (bad)
            v.fail(what + "[" + std::to_string(first) + "]: ref " + num(r[first]) + " (" +
                   hex(hd::float_bits(r[first])) + "), got " + num(c[first]) + " (" +
                   hex(hd::float_bits(c[first])) + "); " + std::to_string(bad) + " of " +
                   std::to_string(r.size()) + " elements differ");
        v.compare(what, r, c, Tol{0.0, 0.0, true}); // sizes, and the count of outputs
    }

    // Relu's gate bits (rows of relu_mask_words(cols) words) on both sides against each
    // other and against `value` (row-major, `ld` a row) > 0, which `what` names ("x");
    // returns how many words differ between the sides.
    std::size_t compare_gate_bits(Verdict& v, Twin& mask, int rows, int cols,
                                  const std::vector<float>& value, std::size_t ld, const char* what)
    {
        const std::size_t words_ld = std::size_t(relu_mask_words(cols));
        const std::vector<std::uint32_t> r = words(m_ref, mask.ref), c = words(m_cand, mask.cand);
        std::size_t bad = 0, ref_bad = 0;
        for (std::size_t i = 0; i < r.size() && i < std::size_t(rows) * words_ld; ++i) {
            bad += r[i] != c[i];
            std::uint32_t want = 0;
            const std::size_t row = i / words_ld, w = i % words_ld;
            for (std::size_t b = 0; b < 32; ++b) {
                const std::size_t col = w * 32 + b;
                if (col < std::size_t(cols) && value[row * ld + col] > 0.0f) want |= 1u << b;
            }
            ref_bad += r[i] != want;
        }
        if (ref_bad)
            v.fail("reference: " + std::to_string(ref_bad) + " words are not " + what + " > 0");
        if (bad)
            v.fail(std::to_string(bad) + " of " + std::to_string(r.size()) + " mask words differ");
        return bad;
    }

    // A step's outputs as the candidate left them: (name, values).
    using Outputs = std::vector<std::pair<std::string, std::vector<float>>>;
    // Records `step` once on the candidate and replays it twice: each replay must leave the
    // bits of the eager step it stands for (from `reset`: one step, then two), as
    // `outputs` reads them. The first eager step plans what it plans (GEMMs time their
    // candidates) before anything is recorded. Returns the two eager steps' outputs;
    // none where the backend records nothing (noted) or recording failed (failed).
    std::vector<Outputs> replay_matches_eager(Verdict& v, const std::function<void()>& reset,
                                              const std::function<void()>& step,
                                              const std::function<Outputs()>& outputs);

    void quantize_checks();
    void relu_mask_checks();
    void transpose_checks();
    void gather_checks();
    void weights_checks();
    void update_checks();
    void gemm_checks();
    void reject_checks();
    void graph_checks();

    struct QuantizeCase {
        DType y; // F8E4M3 or F8E5M2
        DType x; // the input's floating dtype
        int rows, cols;
        bool write_y, write_y_t, record_amax;
        const char* variant = ""; // "zeros", "odd_scale", "amax_kept", "sums"
        DType sums = DType::F32;  // the column sums' dtype, for "sums"
        bool relu_gate = false;   // x gated by a relu output (dense backward's dZ)
    };
    void quantize_check(const QuantizeCase& c);

    struct GemmCase {
        int m, n, k;
        DType a, b, c; // c fp8: the output quantized with its own scale (GemmCall::c_scale)
        Epilogue epi;
        bool fast = false; // GemmCall::fp8_fast_accum (mixed_fp8's forward by default)
        // fp8 c: its scale over max_finite / amax (above 1: the largest values saturate),
        // and whether its amax is taken.
        float c_headroom = 1.0f;
        bool c_amax = true;
    };
    void gemm_check(const GemmCase& g);

    Backend& m_ref;
    Backend& m_cand;
    std::uint64_t m_seed;
    std::string m_filter;
    std::vector<CheckResult> m_results;
};

// An output's tolerance as backend_check.cpp takes it, and the rounding to its dtype.
double out_rtol(DType t) { return t == DType::BF16 ? 2e-2 : 1e-5; }
double unit_roundoff(DType t) { return t == DType::BF16 ? 1.0 / 256.0 : 0.0; }

// ---- fp8_quantize --------------------------------------------------------------------

// Values in the scaled domain (what float_to_fp8 sees) at every boundary of the format:
// saturation (the tie above the largest value too), ties to even among normals and
// subnormals, underflow, NaN and infinities of both signs, signed zeros.
std::vector<float> special_values(DType t)
{
    const float u =
        t == DType::F8E5M2 ? std::ldexp(1.0f, -16) : std::ldexp(1.0f, -9); // min subnormal
    const float max = format_of(t).max_finite;
    std::vector<float> v = {0.0f,     -0.0f,    k_inf,     -k_inf,    k_nan,    -k_nan,
                            max,      -max,     1e30f,     -1e30f,    0.5f * u, 1.5f * u,
                            2.5f * u, 3.5f * u, -2.5f * u, 0.25f * u, 1e-20f};
    if (t == DType::F8E5M2) {
        const float more[] = {61440.0f, -61440.0f, 60000.0f, 1.125f,   1.375f,
                              -1.375f,  2.25f,     2.75f,    7.5f * u, std::ldexp(1.0f, -14),
                              1e6f};
        v.insert(v.end(), std::begin(more), std::end(more));
    } else {
        const float more[] = {464.0f,   -464.0f, 470.0f, 1.0625f,  1.1875f,
                              -1.1875f, 3.125f,  3.375f, 7.5f * u, std::ldexp(1.0f, -6),
                              1000.0f};
        v.insert(v.end(), std::begin(more), std::end(more));
    }
    return v;
}

void Fp8Checker::quantize_check(const QuantizeCase& c)
{
    std::string outputs = c.write_y ? (c.write_y_t ? "y+y_t" : "y") : "y_t";
    std::string name = std::string("fp8_quantize/") + dtype_short_name(c.y) + "/" +
                       dtype_short_name(c.x) + "/" + std::to_string(c.rows) + "x" +
                       std::to_string(c.cols) + "/" + outputs + "/" +
                       (c.record_amax ? "amax" : "no_amax");
    if (*c.variant) name += std::string("/") + c.variant;
    const bool sums = std::string(c.variant) == "sums";
    if (sums) name += std::string("/") + dtype_short_name(c.sums);
    if (c.relu_gate) name += "/relu_gate";
    run(name, [&](Verdict& v, Rng& rng) {
        const std::string variant = c.variant;
        const std::size_t n = std::size_t(c.rows) * std::size_t(c.cols);
        // Stored with k padded (fp8_padded): y's rows, y_t's columns; the padding is zero.
        const std::size_t y_ld = std::size_t(fp8_padded(c.cols));
        const std::size_t t_ld = std::size_t(fp8_padded(c.rows));
        // The scale: a power of two, so that a tie in x is a tie after scaling, or (odd_scale)
        // the scale delayed scaling would take from an amax of 3.7.
        const float scale = variant == "odd_scale" ? format_of(c.y).max_finite / 3.7f : 2.0f;
        std::vector<float> x(n, 0.0f);
        if (sums) {
            // Finite values of either sign whose sums stay far from the formats' ends.
            for (float& e : x) e = round_to(c.x, rng.uniform(-3.0f, 3.0f));
        } else if (variant != "zeros") {
            // Magnitudes spread over the format's whole range and past it (log-uniform),
            // random signs, rounded to x's dtype.
            const bool e5 = c.y == DType::F8E5M2;
            for (float& e : x) {
                const float mag = std::exp2(rng.uniform(e5 ? -20.0f : -13.0f, e5 ? 17.0f : 10.0f));
                e = round_to(c.x, rng.uniform(0.0f, 1.0f) < 0.5f ? -mag : mag);
            }
            // The boundary values, divided by the scale (exact for 2), at random places:
            // in vector groups, tails and partial tiles alike.
            if (variant != "odd_scale")
                for (float s : special_values(c.y)) {
                    const std::size_t i = std::size_t(rng.integer(0, int(n)));
                    x[i] = round_to(c.x, s / scale);
                }
            // fp32 input: raw bit patterns too (every binade, fp32 subnormals, NaN payloads).
            if (c.x == DType::F32)
                for (int i = 0; i < 64; ++i)
                    x[std::size_t(rng.integer(0, int(n)))] = hd::bits_float(rng.bits32());
        }
        Twin tx = make(x, c.x);
        // A relu output: zero (both signs) in about half the places, positive elsewhere,
        // some of those tiny; x as the reference sees it for the sums' scale below.
        Twin tgate;
        if (c.relu_gate) {
            std::vector<float> gate(n);
            for (float& e : gate) {
                const float u = rng.uniform(0.0f, 1.0f);
                e = round_to(c.x, u < 0.45f   ? 0.0f
                                  : u < 0.5f  ? -0.0f
                                  : u < 0.55f ? 1e-30f
                                              : rng.uniform(0.0f, 5.0f));
            }
            tgate = make(gate, c.x);
            for (std::size_t i = 0; i < n; ++i)
                if (!(gate[i] > 0.0f)) x[i] = 0.0f;
        }

        const int history_len = 4, blocks = 3;
        const std::size_t block = 1, bf = fp8_block_floats(history_len);
        std::vector<float> meta(bf * blocks);
        for (std::size_t i = 0; i < meta.size(); ++i) meta[i] = rng.uniform(0.5f, 4.0f);
        float* b = meta.data() + block * bf;
        b[k_fp8_scale] = scale;
        b[k_fp8_scale_inv] = 1.0f / scale;
        b[k_fp8_max_finite] = format_of(c.y).max_finite;
        b[k_fp8_last_amax] = 5.0f;
        // The current slot already holds an amax from an earlier quantization this step:
        // the fold keeps the larger (amax_kept: the earlier one).
        b[k_fp8_history] = variant == "amax_kept" ? 1e35f : 0.25f;
        b[k_fp8_history + 1] = 7.0f;
        Twin tmeta = make(meta, DType::F32);

        Twin ty, tyt, tsums;
        if (c.write_y) {
            ty = twin(std::size_t(c.rows) * y_ld, c.y);
            poison(ty);
        }
        if (c.write_y_t) {
            tyt = twin(std::size_t(c.cols) * t_ld, c.y);
            poison(tyt);
        }
        if (sums) {
            tsums = twin(std::size_t(c.cols), c.sums);
            poison(tsums);
        }
        on_both([&](Backend& be, bool ref) {
            be.fp8_quantize(
                side(tx, ref), c.rows, c.cols, side(tmeta, ref), block, history_len, c.record_amax,
                c.write_y ? &side(ty, ref) : nullptr, c.write_y_t ? &side(tyt, ref) : nullptr,
                sums ? &side(tsums, ref) : nullptr, c.relu_gate ? &side(tgate, ref) : nullptr);
        });
        // The padding too: poisoned above, so a byte left unwritten shows as NaN.
        if (c.write_y) compare_bits(v, "y", ty);
        if (c.write_y_t) compare_bits(v, "y_t", tyt);
        if (sums) {
            // Sums in another order (64-row tiles, then tile order): within the fp32
            // rounding of a sum of |x|, plus one rounding to the output's dtype.
            std::vector<double> scale(std::size_t(c.cols), 0.0);
            for (std::size_t r = 0; r < std::size_t(c.rows); ++r)
                for (std::size_t col = 0; col < std::size_t(c.cols); ++col)
                    scale[col] += std::fabs(double(x[r * std::size_t(c.cols) + col]));
            v.compare("col_sums", get(m_ref, tsums.ref), get(m_cand, tsums.cand),
                      Tol{1e-30, out_rtol(c.sums)}, &scale, 1e-5 + unit_roundoff(c.sums));
        }
        // The amax slot (or, without record_amax, every float of meta unchanged).
        compare_bits(v, "meta", tmeta);
        // The reference's own y_t must be its y transposed (a backend writing the copy
        // through another path could agree with a wrong reference only by accident).
        if (c.write_y && c.write_y_t) {
            const std::vector<float> y = get(m_ref, ty.ref), yt = get(m_ref, tyt.ref);
            for (int r = 0; r < c.rows; ++r)
                for (int col = 0; col < c.cols; ++col) {
                    const float a = y[std::size_t(r) * y_ld + std::size_t(col)];
                    const float t = yt[std::size_t(col) * t_ld + std::size_t(r)];
                    if (hd::float_bits(a) != hd::float_bits(t)) {
                        v.fail("reference: y_t is not y transposed at row " + std::to_string(r) +
                               ", column " + std::to_string(col));
                        return;
                    }
                }
        }
        if (c.record_amax && variant == "zeros") {
            const std::vector<float> m = get(m_cand, tmeta.cand);
            if (m[block * bf + k_fp8_history] != 0.25f)
                v.fail("an all-zero x moved the amax slot to " +
                       num(m[block * bf + k_fp8_history]));
        }
    });
}

void Fp8Checker::quantize_checks()
{
    struct Shape {
        int rows, cols;
    };
    // Full 64 x 64 tiles with aligned rows; odd sizes (partial tiles, no vector path,
    // a tail, both copies padded); the dense layer's wgrad operand shape (a batch of 128
    // by 256 features); W1's 1000 units at a batch of 200 (both padded, to 1008 and 208).
    const Shape shapes[] = {{64, 784}, {37, 53}, {128, 256}, {200, 1000}};
    struct Outputs {
        bool y, y_t, amax;
    };
    const Outputs outputs[] = {
        {true, false, true}, {false, true, false}, {true, true, true}, {true, true, false}};
    for (DType fmt : {DType::F8E4M3, DType::F8E5M2})
        for (DType tx : {DType::BF16, DType::F32})
            for (Shape s : shapes)
                for (Outputs o : outputs)
                    quantize_check({fmt, tx, s.rows, s.cols, o.y, o.y_t, o.amax});
    for (DType fmt : {DType::F8E4M3, DType::F8E5M2}) {
        quantize_check({fmt, DType::F16, 64, 784, true, true, true});
        quantize_check({fmt, DType::BF16, 64, 784, true, true, true, "odd_scale"});
        quantize_check({fmt, DType::F32, 37, 53, true, false, true, "odd_scale"});
        quantize_check({fmt, DType::BF16, 16, 32, true, true, true, "zeros"});
        quantize_check({fmt, DType::BF16, 128, 256, false, true, true, "amax_kept"});
    }
    // dZ's pass with the bias gradient: a bf16 and an fp32 bias, odd sizes, and a matrix
    // wide and tall enough that a block takes several row tiles (the partials' cap).
    quantize_check({DType::F8E5M2, DType::BF16, 200, 1000, true, true, true, "sums", DType::BF16});
    quantize_check({DType::F8E5M2, DType::BF16, 37, 53, true, true, true, "sums", DType::F32});
    quantize_check({DType::F8E5M2, DType::F32, 64, 784, true, true, true, "sums", DType::F32});
    quantize_check({DType::F8E5M2, DType::BF16, 2560, 8200, true, true, true, "sums", DType::F32});
    // A dense layer's dZ under relu: dY gated by Y > 0 in the quantize pass (and its sums).
    quantize_check(
        {DType::F8E5M2, DType::BF16, 200, 1000, true, true, true, "sums", DType::BF16, true});
    quantize_check({DType::F8E5M2, DType::F32, 37, 53, true, true, true, "sums", DType::F32, true});
    quantize_check({DType::F8E5M2, DType::BF16, 64, 784, true, true, true, "", DType::F32, true});
    // A network's first layer has no dX: its dZ pass writes only the transpose (dW's
    // operand) with the sums, gated.
    quantize_check(
        {DType::F8E5M2, DType::BF16, 200, 1000, false, true, true, "sums", DType::BF16, true});
    quantize_check(
        {DType::F8E5M2, DType::BF16, 37, 53, false, true, true, "sums", DType::F32, true});
}

// ---- relu's gate as bits -----------------------------------------------------------------

// The pass that quantizes a relu's output for the next layer writes x > 0 as bits
// (relu_mask_out; the words poisoned first, a row's last word partly used), and dZ's pass
// reads its gate from bits (relu_mask) instead of the 16-bit output: both with and without
// dX's copy, with the bias gradient's sums.
void Fp8Checker::relu_mask_checks()
{
    struct Shape {
        int rows, cols;
    };
    // W1's dZ1 just short of batch 4096: its 64 row tiles go in groups of three for the
    // sums, and the last group is one tile, itself cut short (4050 rows). 3940 rows: 62
    // row tiles in groups of two, the last group a full tile (its loads staged) and then a
    // ragged one (through registers) in one block.
    const Shape shapes[] = {{200, 1000}, {37, 53},     {64, 784},
                            {130, 3000}, {4050, 3000}, {3940, 3000}};
    for (Shape sh : shapes) {
        const std::string dims = std::to_string(sh.rows) + "x" + std::to_string(sh.cols);
        const std::size_t n = std::size_t(sh.rows) * std::size_t(sh.cols);
        const std::size_t ld = std::size_t(relu_mask_words(sh.cols));
        const int history_len = 2;
        auto fresh_meta = [&] {
            std::vector<float> m(2 * fp8_block_floats(history_len), 0.0f);
            for (std::size_t blk = 0; blk < 2; ++blk) {
                m[blk * fp8_block_floats(history_len) + k_fp8_scale] = 4.0f;
                m[blk * fp8_block_floats(history_len) + k_fp8_scale_inv] = 0.25f;
            }
            return make(m, DType::F32);
        };
        run("fp8_relu_mask/write/" + dims, [&](Verdict& v, Rng& rng) {
            // A relu output: zeros of both signs, positives, a few negatives and NaNs.
            std::vector<float> x(n);
            for (float& e : x) {
                const float u = rng.uniform(0.0f, 1.0f);
                e = round_to(DType::BF16, u < 0.4f    ? 0.0f
                                          : u < 0.45f ? -0.0f
                                          : u < 0.47f ? -rng.uniform(0.0f, 3.0f)
                                          : u < 0.48f ? k_nan
                                                      : rng.uniform(0.0f, 3.0f));
            }
            Twin tx = make(x, DType::BF16);
            Twin meta = fresh_meta();
            Twin y = twin(std::size_t(sh.rows) * std::size_t(fp8_padded(sh.cols)), DType::F8E4M3);
            Twin yt = twin(std::size_t(sh.cols) * std::size_t(fp8_padded(sh.rows)), DType::F8E4M3);
            poison(y);
            poison(yt);
            Twin mask =
                make_words(std::vector<std::uint32_t>(std::size_t(sh.rows) * ld, 0xA5A5A5A5u));
            on_both([&](Backend& be, bool ref) {
                be.fp8_quantize(side(tx, ref), sh.rows, sh.cols, side(meta, ref), 0, history_len,
                                true, &side(y, ref), &side(yt, ref), nullptr, nullptr, nullptr,
                                &side(mask, ref));
            });
            compare_bits(v, "y", y);
            compare_bits(v, "y_t", yt);
            compare_bits(v, "meta", meta);
            const std::size_t bad =
                compare_gate_bits(v, mask, sh.rows, sh.cols, x, std::size_t(sh.cols), "x");
            v.compare("mask words", {float(bad)}, {0.0f}, Tol{});
        });
        for (bool with_y : {false, true})
            run("fp8_relu_mask/read/" + dims + (with_y ? "/y+y_t" : "/y_t"), [&](Verdict& v,
                                                                                 Rng& rng) {
                std::vector<float> dy(n);
                for (float& e : dy) e = round_to(DType::BF16, rng.uniform(-3.0f, 3.0f));
                Twin tdy = make(dy, DType::BF16);
                std::vector<std::uint32_t> bits(std::size_t(sh.rows) * ld);
                for (auto& w : bits) w = rng.bits32();
                Twin mask = make_words(bits);
                Twin meta = fresh_meta();
                Twin y =
                    twin(std::size_t(sh.rows) * std::size_t(fp8_padded(sh.cols)), DType::F8E5M2);
                Twin yt =
                    twin(std::size_t(sh.cols) * std::size_t(fp8_padded(sh.rows)), DType::F8E5M2);
                Twin sums = twin(std::size_t(sh.cols), DType::BF16);
                poison(y);
                poison(yt);
                poison(sums);
                on_both([&](Backend& be, bool ref) {
                    be.fp8_quantize(side(tdy, ref), sh.rows, sh.cols, side(meta, ref), 1,
                                    history_len, true, with_y ? &side(y, ref) : nullptr,
                                    &side(yt, ref), &side(sums, ref), nullptr, &side(mask, ref),
                                    nullptr);
                });
                if (with_y) compare_bits(v, "y", y);
                compare_bits(v, "y_t", yt);
                compare_bits(v, "meta", meta);
                // Sums in another order: within the fp32 rounding of a sum of |x|, plus one
                // rounding to bf16 (as the relu_gate checks).
                std::vector<double> scale(std::size_t(sh.cols), 0.0);
                for (std::size_t r = 0; r < std::size_t(sh.rows); ++r)
                    for (std::size_t c = 0; c < std::size_t(sh.cols); ++c)
                        if ((bits[r * ld + c / 32] >> (c % 32)) & 1u)
                            scale[c] += std::fabs(double(dy[r * std::size_t(sh.cols) + c]));
                v.compare("col_sums", get(m_ref, sums.ref), get(m_cand, sums.cand),
                          Tol{1e-30, out_rtol(DType::BF16)}, &scale,
                          1e-5 + unit_roundoff(DType::BF16));
            });
    }
}

// ---- fp8_transpose ---------------------------------------------------------------------

// dX's transposed weights from w8: the bytes as they are, zeros past the rows (poisoned
// first, so an unwritten byte shows), on whole tiles, ragged ones and W1's two layers; for
// E4M3 with relu's gate bits of y > 0 as well. Then several in one call
// (fp8_transposes), as a dense layer issues its input's and its weights': W1's layer 2,
// and more jobs than one launch takes, each job against the reference as if alone.
void Fp8Checker::transpose_checks()
{
    struct Shape {
        int rows, cols;
    };
    // One job's buffers on both sides and what its y holds.
    struct Job {
        Shape sh;
        bool bits;
        std::vector<float> y;
        Twin ty, tt, mask;
    };
    const auto make_job = [&](Rng& rng, Shape sh, DType fmt, bool bits) {
        Job j{sh, bits, {}, {}, {}, {}};
        const std::size_t y_ld = std::size_t(fp8_padded(sh.cols));
        const std::size_t t_ld = std::size_t(fp8_padded(sh.rows));
        // fp8 values (NaN among them, not E5M2's infinities, which fp8_quantize never
        // writes) in y's columns, zeros in its padding: what fp8_quantize leaves.
        j.y.assign(std::size_t(sh.rows) * y_ld, 0.0f);
        for (std::size_t r = 0; r < std::size_t(sh.rows); ++r)
            for (std::size_t c = 0; c < std::size_t(sh.cols); ++c) {
                float e = k_inf;
                while (std::isinf(e))
                    e = hd::fp8_to_float(std::uint8_t(rng.integer(0, 256)), format_of(fmt));
                j.y[r * y_ld + c] = e;
            }
        j.ty = make(j.y, fmt);
        j.tt = twin(std::size_t(sh.cols) * t_ld, fmt);
        poison(j.tt);
        // relu's gate bits from y > 0 (an fp8 layer's input written by the GEMM before
        // it), the words poisoned first.
        const std::size_t words_ld = std::size_t(relu_mask_words(sh.cols));
        j.mask = make_words(
            std::vector<std::uint32_t>(bits ? std::size_t(sh.rows) * words_ld : 1, 0xA5A5A5A5u));
        return j;
    };
    const auto verify = [&](Verdict& v, Job& j, const std::string& what) {
        const std::size_t y_ld = std::size_t(fp8_padded(j.sh.cols));
        const std::size_t t_ld = std::size_t(fp8_padded(j.sh.rows));
        compare_bits(v, what + "y_t", j.tt);
        if (j.bits) compare_gate_bits(v, j.mask, j.sh.rows, j.sh.cols, j.y, y_ld, "y");
        const std::vector<float> t = get(m_ref, j.tt.ref);
        for (std::size_t c = 0; c < std::size_t(j.sh.cols); ++c)
            for (std::size_t r = 0; r < t_ld; ++r) {
                const float want = r < std::size_t(j.sh.rows) ? j.y[r * y_ld + c] : 0.0f;
                if (hd::float_bits(t[c * t_ld + r]) != hd::float_bits(want)) {
                    v.fail("reference: " + what + "y_t is not y transposed at row " +
                           std::to_string(r) + ", column " + std::to_string(c));
                    return;
                }
            }
    };
    // Each side's jobs as the backend takes them.
    const auto run_jobs = [&](std::vector<Job>& jobs) {
        on_both([&](Backend& be, bool ref) {
            std::vector<Fp8Transpose> calls;
            for (Job& j : jobs)
                calls.push_back({&side(j.ty, ref), j.sh.rows, j.sh.cols, &side(j.tt, ref),
                                 j.bits ? &side(j.mask, ref) : nullptr});
            be.fp8_transposes(calls);
        });
    };
    const Shape shapes[] = {{64, 64}, {37, 53}, {200, 1000}, {1000, 3000}, {5, 200}};
    for (DType fmt : {DType::F8E4M3, DType::F8E5M2})
        for (Shape sh : shapes) {
            const std::string name = std::string("fp8_transpose/") + dtype_short_name(fmt) + "/" +
                                     std::to_string(sh.rows) + "x" + std::to_string(sh.cols);
            run(name, [&](Verdict& v, Rng& rng) {
                std::vector<Job> jobs;
                jobs.push_back(make_job(rng, sh, fmt, fmt == DType::F8E4M3));
                run_jobs(jobs);
                verify(v, jobs[0], "");
            });
        }
    struct Several {
        const char* name;
        std::vector<std::pair<Shape, bool>> jobs; // shape, relu's bits
    };
    const Several several[] = {
        // W1's layer 2 at batch 4096: X2 with relu 1's bits, then W2.
        {"w1-layer2", {{{4096, 3000}, true}, {{1000, 3000}, false}}},
        // Ragged shapes, bits on some, more jobs than a launch takes (k_transpose_jobs 4).
        {"five-ragged",
         {{{37, 53}, true},
          {{200, 1000}, false},
          {{5, 200}, true},
          {{64, 64}, false},
          {{130, 70}, true}}},
    };
    for (const Several& sv : several)
        run(std::string("fp8_transpose/e4m3/jobs/") + sv.name, [&](Verdict& v, Rng& rng) {
            std::vector<Job> jobs;
            for (const auto& [sh, bits] : sv.jobs)
                jobs.push_back(make_job(rng, sh, DType::F8E4M3, bits));
            run_jobs(jobs);
            for (std::size_t i = 0; i < jobs.size(); ++i)
                verify(v, jobs[i], "job " + std::to_string(i) + " ");
        });
}

// ---- gather_batch_fp8 --------------------------------------------------------------------

// mixed_fp8's first layer fed by the gather: the candidate's one pass against the
// reference's gather then quantize, bit for bit: x8 and its padding, x8_t (training), the
// amax slot (training; evaluation leaves meta as it was) and the labels, the batch placed
// by a host offset and by the step counter. Whole and ragged tiles, a sample of 189 bytes
// (not a multiple of 4: the byte loads), three channels, W1's 4096 x 3072, and one run
// with augmentation (where the candidate may take the two-pass way).
void Fp8Checker::gather_checks()
{
    struct Shape {
        ImageShape image;
        int n, batch;
        std::int64_t offset;
        bool augment = false;
    };
    const Shape shapes[] = {{{28, 28, 1}, 300, 100, 64},
                            {{9, 7, 3}, 90, 37, 3},
                            {{4, 4, 3}, 200, 64, 5},
                            {{32, 32, 3}, 4200, 4096, 0},
                            {{8, 8, 3}, 120, 50, 0, true}};
    for (DType t : {DType::BF16, DType::F16})
        for (const Shape& s : shapes)
            for (bool training : {true, false}) {
                if (s.image.size() > 1000 && t == DType::F16) continue; // W1 is bf16
                const std::string name =
                    std::string("fp8_gather/") + dtype_short_name(t) + "/" +
                    std::to_string(s.batch) + "x" + std::to_string(s.image.height) + "x" +
                    std::to_string(s.image.width) + "x" + std::to_string(s.image.channels) +
                    (s.augment ? "/crop_flip" : "") + (training ? "/train" : "/eval");
                run(name, [&](Verdict& v, Rng& rng) {
                    const std::size_t sample = std::size_t(s.image.size());
                    const std::vector<std::uint8_t> images =
                        rng.bytes(std::size_t(s.n) * sample, 256);
                    const std::vector<std::uint8_t> labels = rng.bytes(std::size_t(s.n), 10);
                    const std::vector<std::int32_t> order = rng.permutation(s.n);
                    Twin timages = twin(images.size(), DType::U8);
                    Twin tlabels = twin(labels.size(), DType::U8);
                    on_both([&](Backend& be, bool ref) {
                        be.upload_raw(side(timages, ref), images.data(), images.size());
                        be.upload_raw(side(tlabels, ref), labels.data(), labels.size());
                    });
                    Twin torder = make_words({order.begin(), order.end()});
                    const Normalization norm = rng.normalization(s.image.channels);
                    Augmentation aug;
                    aug.random_crop = aug.horizontal_flip = s.augment;
                    aug.crop_padding = 2;
                    aug.seed = 0x5EEDu;
                    aug.step = 3;
                    // The x block's scale as delayed scaling would set it from an amax of
                    // 3.7 (an odd scale: products round), the current slot holding 0.25.
                    const int history_len = 4;
                    const std::size_t bf = fp8_block_floats(history_len);
                    std::vector<float> meta(bf, 0.0f);
                    meta[k_fp8_scale] = hd::k_e4m3.max_finite / 3.7f;
                    meta[k_fp8_scale_inv] = 1.0f / meta[k_fp8_scale];
                    meta[k_fp8_max_finite] = hd::k_e4m3.max_finite;
                    meta[k_fp8_history] = 0.25f;
                    Twin tmeta = twin(bf, DType::F32);
                    Twin out = twin(std::size_t(s.batch) * sample, t);
                    Twin x8 = twin(std::size_t(s.batch) * std::size_t(fp8_padded(int(sample))),
                                   DType::F8E4M3);
                    Twin x8_t = twin(sample * std::size_t(fp8_padded(s.batch)), DType::F8E4M3);
                    Twin out_labels = twin(std::size_t(s.batch), DType::I32);
                    const std::int64_t per_epoch = (s.n - s.offset) / s.batch;
                    const std::uint64_t step = 5;
                    Twin counter = make({float(step), 0.0f}, DType::I32);
                    for (bool by_counter : {false, true}) {
                        v.context(by_counter ? "placed by the step counter" : "placed by offset");
                        set(tmeta, meta);
                        poison(x8);
                        poison(x8_t);
                        poison(out_labels);
                        on_both([&](Backend& be, bool ref) {
                            const Fp8Batch fb{
                                &side(tmeta, ref), 0,
                                history_len,       training,
                                &side(x8, ref),    training ? &side(x8_t, ref) : nullptr};
                            // The reference gets the counter's step and placement as host
                            // numbers (the candidate's aug.step is then ignored).
                            std::int64_t at = s.offset;
                            Augmentation a = aug;
                            StepCounter sc;
                            if (by_counter && ref) {
                                at += std::int64_t(step % std::uint64_t(per_epoch)) * s.batch;
                                a.step = step;
                            } else if (by_counter) {
                                sc = StepCounter{&side(counter, ref), per_epoch};
                            }
                            be.gather_batch_fp8(side(timages, ref), side(tlabels, ref),
                                                side(torder, ref), at, s.batch, s.image, norm, a,
                                                sc, fb, side(out, ref), side(out_labels, ref));
                        });
                        compare_bits(v, "x8", x8);
                        if (training) compare_bits(v, "x8_t", x8_t);
                        compare_bits(v, "meta", tmeta);
                        if (words(m_ref, out_labels.ref) != words(m_cand, out_labels.cand))
                            v.fail("labels differ");
                        const float slot = get(m_ref, tmeta.ref)[k_fp8_history];
                        if (training ? !(slot > 0.25f) : slot != 0.25f)
                            v.fail("reference: the amax slot holds " + num(slot) +
                                   (training ? ", not the batch's amax" : ", moved in evaluation"));
                    }
                    v.context("");
                });
            }
}

// ---- the optimizer's fp8 weights --------------------------------------------------------

// mixed_fp8's W quantized by optimizer_step (ParamSlot::fp8) in one table with a plain
// slot (a bias): SGD with momentum and Adam, four steps under dynamic loss scaling, W's
// scale moved between steps as the scale update moves it, and step 3 overflowing (the
// update skipped, w8 rewritten from the unchanged weights with the moved scale). The
// weights themselves are compared as backend_check.cpp's optimizer checks compare them;
// each side's w8 must then be its own new master rounded to bf16 and quantized (hd_math.h's
// bytes, so a one-ulp difference between the two sides' updates cannot hide a wrong byte),
// its padding zero, and W's amax slot the larger of what it held and that copy's max |w|;
// W's low copy is not stored (backend.h's Fp8Weights) and keeps what the check wrote,
// where the bias's is updated.
// Two weight tensors: 100 x 200 (a chunk boundary inside a row) and 64 x 784.
void Fp8Checker::weights_checks()
{
    for (OptimizerType type : {OptimizerType::SGD, OptimizerType::Adam}) {
        const std::string name = std::string("fp8_weights/optimizer_step/") +
                                 (type == OptimizerType::SGD ? "sgd" : "adam");
        run(name, [&](Verdict& v, Rng& rng) {
            struct Tensor {
                int rows, cols;
                std::size_t block;
            };
            const Tensor shapes[] = {{100, 200, 1}, {64, 784, 3}, {1, 100, 0}}; // last: a bias
            const int history_len = 4;
            const std::size_t bf = fp8_block_floats(history_len);
            std::vector<float> meta(bf * 4, 0.0f);
            for (std::size_t blk = 0; blk < 4; ++blk) {
                meta[blk * bf + k_fp8_scale] = 1.0f;
                meta[blk * bf + k_fp8_scale_inv] = 1.0f;
                meta[blk * bf + k_fp8_max_finite] = 448.0f;
            }
            Twin tmeta = make(meta, DType::F32);
            struct Param {
                Tensor shape;
                Twin master, grad, low, s1, s2, w8;
            };
            std::vector<Param> params;
            std::vector<std::vector<float>> first_w; // each tensor's initial values
            for (const Tensor& t : shapes) {
                Param p;
                p.shape = t;
                const std::size_t n = std::size_t(t.rows) * std::size_t(t.cols);
                const std::vector<float> w = rng.values(n, DType::BF16, -0.5f, 0.5f);
                p.master = make(w, DType::F32);
                p.low = make(w, DType::BF16);
                first_w.push_back(w);
                p.grad = twin(n, DType::F32);
                p.s1 = make(std::vector<float>(n, 0.0f), DType::F32);
                if (type != OptimizerType::SGD)
                    p.s2 = make(std::vector<float>(n, 0.0f), DType::F32);
                if (t.rows > 1) {
                    p.w8 =
                        twin(std::size_t(t.rows) * std::size_t(fp8_padded(t.cols)), DType::F8E4M3);
                    poison(p.w8);
                    // The network's refresh: the padding zero, as every later step leaves it.
                    on_both([&](Backend& be, bool ref) {
                        be.fp8_quantize(side(p.low, ref), t.rows, t.cols, side(tmeta, ref), t.block,
                                        history_len, true, &side(p.w8, ref), nullptr, nullptr,
                                        nullptr);
                    });
                }
                params.push_back(std::move(p));
            }
            std::unique_ptr<ParamTable> tables[2];
            on_both([&](Backend& be, bool ref) {
                std::vector<ParamSlot> slots;
                for (Param& p : params) {
                    ParamSlot s{&side(p.master, ref), &side(p.grad, ref), &side(p.low, ref),
                                &side(p.s1, ref), p.s2.count ? &side(p.s2, ref) : nullptr};
                    if (p.w8.count)
                        s.fp8 = Fp8Weights{&side(p.w8, ref), &side(tmeta, ref), p.shape.block,
                                           history_len,      p.shape.rows,      p.shape.cols};
                    slots.push_back(s);
                }
                tables[ref ? 0 : 1] = be.prepare_params(slots);
            });
            OptimizerConfig opt;
            opt.type = type;
            opt.lr = type == OptimizerType::SGD ? 0.05f : 0.01f;
            ScalerParams sp;
            sp.mode = LossScaleMode::Dynamic;
            Twin scaler = make({1024.0f, 0.0f, 0.0f, 0.0f}, DType::F32);
            Twin record = twin(k_record_fields, DType::F32);
            const float w_scales[] = {16.0f, 448.0f / 3.7f, 0.75f, 700.0f};
            for (int step = 1; step <= 4; ++step) {
                v.context("step " + std::to_string(step));
                // W's scale as this step's scale update would leave it (the same on both).
                std::vector<float> m = get(m_ref, tmeta.ref);
                for (const Param& p : params)
                    if (p.w8.count) m[p.shape.block * bf + k_fp8_scale] = w_scales[step - 1];
                set(tmeta, m);
                for (Param& p : params) {
                    std::vector<float> g = rng.values(p.grad.count, DType::F32, -512.0f, 512.0f);
                    if (step == 3 && p.shape.cols == 784) g[4321] = k_inf;
                    set(p.grad, g);
                }
                on_both([&](Backend& be, bool ref) {
                    be.optimizer_step(*tables[ref ? 0 : 1], opt, sp, side(scaler, ref),
                                      side(record, ref), 0);
                });
                compare_bits(v, "scaler", scaler);
                const Tol wtol{1e-6, 1e-5};
                for (std::size_t pi = 0; pi < params.size(); ++pi) {
                    Param& p = params[pi];
                    // (A char string first trips GCC 12's -Wrestrict false positive.)
                    const std::string i = std::string(1, '[') + std::to_string(p.shape.rows) + "x" +
                                          std::to_string(p.shape.cols) + "]";
                    v.compare("master" + i, get(m_ref, p.master.ref), get(m_cand, p.master.cand),
                              wtol);
                    v.compare("low" + i, get(m_ref, p.low.ref), get(m_cand, p.low.cand),
                              Tol{1e-6, out_rtol(DType::BF16)});
                    if (!p.w8.count) continue;
                    const float scale = w_scales[step - 1];
                    for (bool ref : {true, false}) {
                        Backend& be = ref ? m_ref : m_cand;
                        const std::string who = ref ? "reference" : "candidate";
                        if (get(be, side(p.low, ref)) != first_w[pi])
                            v.fail(who + ": W" + i +
                                   "'s low copy was written (an fp8 weight's is not stored)");
                        std::vector<float> low = get(be, side(p.master, ref));
                        round_span(DType::BF16, low.data(), low.size());
                        const std::vector<float> w8 = get(be, side(p.w8, ref));
                        const std::size_t ld = std::size_t(fp8_padded(p.shape.cols));
                        float amax = 0.0f;
                        std::size_t bad = 0;
                        for (std::size_t r = 0; r < std::size_t(p.shape.rows); ++r)
                            for (std::size_t c = 0; c < ld; ++c) {
                                const bool in = c < std::size_t(p.shape.cols);
                                const float x = in ? low[r * std::size_t(p.shape.cols) + c] : 0.0f;
                                amax = std::max(amax, std::fabs(x));
                                const float want = in ? hd::fp8_to_float(hd::fp8_quantize_value(
                                                                             x, scale, hd::k_e4m3),
                                                                         hd::k_e4m3)
                                                      : 0.0f;
                                bad += hd::float_bits(w8[r * ld + c]) != hd::float_bits(want);
                            }
                        if (bad)
                            v.fail(who + ": w8" + i + " is not its low copy quantized with scale " +
                                   num(scale) + " (" + std::to_string(bad) + " bytes)");
                        const float slot =
                            get(be, side(tmeta, ref))[p.shape.block * bf + k_fp8_history];
                        if (slot != std::max(amax, m[p.shape.block * bf + k_fp8_history]))
                            v.fail(who + ": W" + i + "'s amax slot holds " + num(slot) +
                                   ", its copy's max |w| is " + num(amax));
                    }
                }
            }
            v.context("");
            const std::vector<float> rec = get(m_ref, record.ref);
            if (rec[k_rec_overflow] != 0.0f)
                v.fail("step 4 overflowed: the check's skipped step is step 3 alone");
        });
    }
}

// ---- fp8_update_scales ---------------------------------------------------------------

void Fp8Checker::update_checks()
{
    struct Case {
        int history_len, margin, updates;
    };
    // 1024: the longest history a run file allows (32 chunks of a warp in the CUDA kernel).
    const Case cases[] = {{4, 0, 1}, {4, 2, 1},   {1, 0, 1},    {16, 1, 1},
                          {4, 0, 3}, {16, -1, 2}, {1024, 0, 2}, {1023, 1, 1}};
    for (const Case& c : cases) {
        const std::string name = "fp8_update_scales/history" + std::to_string(c.history_len) +
                                 "/margin" + std::to_string(c.margin) +
                                 (c.updates > 1 ? "/x" + std::to_string(c.updates) : "");
        run(name, [&](Verdict& v, Rng& rng) {
            const std::size_t bf = fp8_block_floats(c.history_len);
            // Each block's largest history value, kept in its oldest slot (so that a
            // second update drops it): an ordinary amax, one exactly the format's largest,
            // zero (the scale stays), inf and NaN (a corrupt state: the scale stays), and
            // an fp32 subnormal whose quotient overflows (the scale becomes FLT_MAX).
            const float amaxes[] = {7.0f, 3e-2f, 448.0f, 0.0f, k_inf, k_nan, 1e-39f, 1234.5f};
            const int tensors = int(std::size(amaxes));
            std::vector<float> meta(bf * std::size_t(tensors + 1)); // one more: left alone
            for (std::size_t i = 0; i < meta.size(); ++i) meta[i] = rng.uniform(0.5f, 4.0f);
            for (int t = 0; t < tensors; ++t) {
                float* b = meta.data() + std::size_t(t) * bf;
                const bool e5 = t % 2 == 1;
                b[k_fp8_scale] = rng.uniform(1.0f, 100.0f);
                b[k_fp8_scale_inv] = 1.0f / b[k_fp8_scale];
                b[k_fp8_max_finite] = e5 ? 57344.0f : 448.0f;
                b[k_fp8_last_amax] = -1.0f;
                const float amax = amaxes[t];
                for (int i = 0; i < c.history_len; ++i)
                    b[k_fp8_history + std::size_t(i)] = amax == 0.0f || !std::isfinite(amax)
                                                            ? 0.0f
                                                            : amax * rng.uniform(0.0f, 0.9f);
                b[k_fp8_history + std::size_t(c.history_len - 1)] = amax;
                // Two NaNs of different payloads (in different warp chunks of the longest
                // histories): the newer one is the amax, as the CPU's scan meets it first.
                if (amax != amax && c.history_len > 2)
                    b[k_fp8_history + std::size_t(c.history_len / 3)] =
                        std::bit_cast<float>(0x7FC00123u);
            }
            Twin tmeta = make(meta, DType::F32);
            for (int u = 0; u < c.updates; ++u) {
                on_both([&](Backend& be, bool ref) {
                    be.fp8_update_scales(side(tmeta, ref), tensors, c.history_len, c.margin);
                });
                compare_bits(v, "meta after update " + std::to_string(u + 1), tmeta);
            }
        });
    }
}

// ---- fp8 GEMMs -------------------------------------------------------------------------

void Fp8Checker::gemm_check(const GemmCase& g)
{
    const std::string name =
        std::string("fp8_gemm/") + dtype_short_name(g.a) + "." + dtype_short_name(g.b) + "->" +
        dtype_short_name(g.c) + "/" + std::to_string(g.m) + "x" + std::to_string(g.n) + "x" +
        std::to_string(g.k) + "/" + epilogue_name(g.epi) + (g.fast ? "/fast" : "") +
        (g.c_headroom > 1.0f ? "/saturating" : "") + (is_fp8(g.c) && !g.c_amax ? "/no_amax" : "");
    run(name, [&](Verdict& v, Rng& rng) {
        const std::size_t m = std::size_t(g.m), n = std::size_t(g.n), k = std::size_t(g.k);
        // Operands as fp8_quantize leaves them (values up to a few hundred, E5M2's
        // further), already fp8 values so both backends hold the same bytes.
        auto operand = [&](std::size_t count, DType t) {
            const float r = t == DType::F8E5M2 ? 4000.0f : 400.0f;
            std::vector<float> x(count);
            for (float& e : x) e = round_to(t, rng.uniform(-r, r));
            return x;
        };
        const std::vector<float> a = operand(m * k, g.a); // m x k
        const std::vector<float> b = operand(n * k, g.b); // stored n x k (trans_b)
        Twin ta = make(a, g.a), tb = make(b, g.b);
        const bool fp8_out = is_fp8(g.c);
        Twin tc = twin(m * n, g.c);
        poison(tc);
        // Descales as delayed scaling leaves them: two blocks of history 1 (and c's).
        const float a_scale_inv = 1.0f / 36.7f, b_scale_inv = 1.0f / 211.3f;
        const int history_len = 1;
        std::vector<float> meta(3 * fp8_block_floats(history_len), 1.0f);
        meta[fp8_scale_inv_index(0, history_len)] = a_scale_inv;
        meta[fp8_scale_inv_index(1, history_len)] = b_scale_inv;
        Twin tmeta = make(meta, DType::F32);
        const bool has_bias = g.epi == Epilogue::Bias || g.epi == Epilogue::BiasRelu;
        std::vector<float> bias;
        Twin tbias;
        if (has_bias) {
            bias = std::vector<float>(n);
            for (float& e : bias) e = round_to(DType::BF16, rng.uniform(-40.0f, 40.0f));
            tbias = make(bias, DType::BF16);
        }
        GemmCall call;
        call.trans_a = false;
        call.trans_b = true;
        call.m = g.m;
        call.n = g.n;
        call.k = g.k;
        call.epilogue = g.epi;
        call.fp8_fast_accum = g.fast;
        call.math = MathMode::Reduced;
        call.a_scale_inv = fp8_scale_inv_index(0, history_len);
        call.b_scale_inv = fp8_scale_inv_index(1, history_len);
        const std::size_t c_block = 2 * fp8_block_floats(history_len);
        float c_scale = 1.0f;
        if (fp8_out) {
            // c's scale from the reference's own result in fp32, as delayed scaling would
            // have it from earlier steps; its amax slot poisoned (the GEMM replaces it).
            // (A bias makes the GEMM's c bf16: the amax of its rounding will do.)
            Twin wide = twin(m * n, has_bias ? DType::BF16 : DType::F32);
            GemmCall plain = call;
            plain.a = &ta.ref;
            plain.b = &tb.ref;
            plain.c = &wide.ref;
            plain.bias = has_bias ? &tbias.ref : nullptr;
            plain.fp8_meta = &tmeta.ref;
            m_ref.gemm(plain);
            float amax = 0.0f;
            for (float e : get(m_ref, wide.ref)) amax = std::max(amax, std::fabs(e));
            c_scale = format_of(g.c).max_finite / std::max(amax, 1e-30f) * g.c_headroom;
            meta[c_block + k_fp8_scale] = c_scale;
            meta[c_block + k_fp8_scale_inv] = 1.0f / c_scale;
            meta[c_block + k_fp8_history] = k_nan;
            set(tmeta, meta);
            call.c_scale = c_block + k_fp8_scale;
            call.c_amax = c_block + k_fp8_history;
            call.c_amax_on = g.c_amax;
        }
        on_both([&](Backend& be, bool ref) {
            call.a = &side(ta, ref);
            call.b = &side(tb, ref);
            call.c = &side(tc, ref);
            call.bias = has_bias ? &side(tbias, ref) : nullptr;
            call.fp8_meta = &side(tmeta, ref);
            be.gemm(call);
        });
        // The magnitude scale of each element, as backend_check.cpp's GEMM checks take it:
        // |descales| ||row_i(A)|| ||row_j(B)|| + |bias_j| bounds what the sum can hold.
        std::vector<double> row_a(m, 0.0), row_b(n, 0.0);
        for (std::size_t i = 0; i < m; ++i)
            for (std::size_t kk = 0; kk < k; ++kk)
                row_a[i] += double(a[i * k + kk]) * a[i * k + kk];
        for (std::size_t j = 0; j < n; ++j)
            for (std::size_t kk = 0; kk < k; ++kk)
                row_b[j] += double(b[j * k + kk]) * b[j * k + kk];
        std::vector<double> scale(m * n);
        const double descale = double(a_scale_inv) * double(b_scale_inv);
        for (std::size_t i = 0; i < m; ++i)
            for (std::size_t j = 0; j < n; ++j)
                scale[i * n + j] = descale * std::sqrt(row_a[i] * row_b[j]) +
                                   (bias.empty() ? 0.0 : std::fabs(bias[j]));
        // Exact products on both sides, but Hopper's fp8 tensor cores add them in an
        // accumulator narrower than fp32 before cuBLASLt promotes the partial sums into
        // fp32 (fast accumulation off only makes that promotion frequent; DeepSeek-V3's
        // report puts the MMA's own sums at about 14 bits). The H200 check of 2026-12-03
        // measured up to 3.1e-4 of the scale (e5m2 x e4m3 -> float32 at k 64 and 128)
        // against the 1e-4 of the 16-bit GEMMs, so 1e-3 here, plus one rounding of c.
        // Fast accumulation (never promoted) is held to the same bound: an error of u per
        // addition into a sum that grows like sqrt(k) stays ~u of a scale that grows like k.
        if (fp8_out) {
            // The same bound times c's scale, plus one fp8 step where the two sums fall on
            // either side of a rounding boundary (1/8 of a normal E4M3 value, 1/4 of E5M2's,
            // the subnormal step below); saturated values agree exactly.
            const hd::Fp8Format f = format_of(g.c);
            const double step_rel = g.c == DType::F8E5M2 ? 0.25 : 0.125;
            const double sub_step = std::ldexp(1.0, 1 - f.bias - f.mantissa_bits);
            std::vector<double> c_bound(m * n);
            for (std::size_t i = 0; i < m * n; ++i) c_bound[i] = scale[i] * c_scale;
            v.compare("c", get(m_ref, tc.ref), get(m_cand, tc.cand), Tol{sub_step, step_rel},
                      &c_bound, 1e-3);
            const std::vector<float> mr = get(m_ref, tmeta.ref), mc = get(m_cand, tmeta.cand);
            if (g.c_amax) {
                double smax = 0.0;
                for (double e : scale) smax = std::max(smax, e);
                v.compare("amax", {mr[c_block + k_fp8_history]}, {mc[c_block + k_fp8_history]},
                          Tol{1e-3 * smax, 0.0});
            } else if (!std::isnan(mc[c_block + k_fp8_history])) {
                v.fail("the amax slot was written with c_amax_on false");
            }
        } else {
            v.compare("c", get(m_ref, tc.ref), get(m_cand, tc.cand), Tol{1e-30, out_rtol(g.c)},
                      &scale, 1e-3 + unit_roundoff(g.c));
        }
        // The plan that ran, for the detail (fused or not, its tuning).
        if (m_cand.info().backend == BackendKind::Cuda)
            for (const PlanReport& p : backend_plan_reports(m_cand)) {
                if (p.kind != "gemm") continue;
                const nlohmann::json j = nlohmann::json::parse(p.json);
                if (j.at("m") == g.m && j.at("n") == g.n && j.at("k") == g.k &&
                    j.at("ab") == std::string(dtype_name(g.a)) &&
                    j.value("b", std::string()) == std::string(dtype_name(g.b)) &&
                    j.at("c") == std::string(dtype_name(g.c)) &&
                    j.at("epilogue") == epilogue_name(g.epi) &&
                    j.value("fast_accum", false) == g.fast) {
                    v.note(j.at("description").get<std::string>());
                    break;
                }
            }
    });
}

// fp8 GEMMs need fp8 tensor cores on a GPU (compute capability 8.9 on); the CPU emulates them.
bool runs_fp8_gemms(const DeviceInfo& info)
{
    return info.backend != BackendKind::Cuda || info.cc_major * 10 + info.cc_minor >= 89;
}

void Fp8Checker::gemm_checks()
{
    // Left out on older GPUs, where the CUDA backend refuses them by design (the
    // quantization and update kernels run there, and the refusals are checked below).
    if (!runs_fp8_gemms(m_ref.info()) || !runs_fp8_gemms(m_cand.info())) return;
    const DType e4 = DType::F8E4M3, e5 = DType::F8E5M2, bf = DType::BF16, f32 = DType::F32;
    // A dense layer of `in` inputs and `out` units at batch `batch`, as mixed_fp8 runs it:
    //   forward  y (batch x out)  = x8 (batch x in) . w8 (out x in)^T    E4M3 . E4M3 -> bf16
    //   dgrad    dx (batch x in)  = dy8 (batch x out) . w8_t (in x out)^T E5M2 . E4M3 -> bf16
    //   wgrad    dw (out x in)    = dy8_t (out x batch) . x8_t (in x batch)^T
    //                                                                  E5M2 . E4M3 -> fp32
    struct Layer {
        int batch, in, out;
    };
    // W1's first layer's inputs (784) at a small batch, a 256 -> 64 layer at batch 128,
    // and W1's width (3008 units) at batch 128.
    const Layer layers[] = {{64, 784, 256}, {128, 256, 64}};
    // W1's second layer (3000 -> 1000) at a batch of 100: every k padded (fp8_padded),
    // n a multiple of 8 but not of 16.
    {
        const int batch = 100, in = 3000, out = 1000;
        gemm_check({batch, out, fp8_padded(in), e4, e4, bf, Epilogue::BiasRelu});
        gemm_check({batch, out, fp8_padded(in), e4, e4, bf, Epilogue::BiasRelu, true});
        gemm_check({batch, in, fp8_padded(out), e5, e4, bf, Epilogue::None});
        gemm_check({out, in, fp8_padded(batch), e5, e4, f32, Epilogue::None});
    }
    for (const Layer& l : layers) {
        for (Epilogue e : {Epilogue::None, Epilogue::Bias, Epilogue::BiasRelu})
            gemm_check({l.batch, l.out, l.in, e4, e4, bf, e});
        gemm_check({l.batch, l.out, l.in, e4, e4, bf, Epilogue::BiasRelu, true});
        gemm_check({l.batch, l.in, l.out, e5, e4, bf, Epilogue::None});
        gemm_check({l.out, l.in, l.batch, e5, e4, f32, Epilogue::None});
    }
    gemm_check({128, 3008, 784, e4, e4, bf, Epilogue::BiasRelu});
    // The bench's W1 on its synthetic 3 x 32 x 32 inputs: the longest forward k (3072).
    gemm_check({128, 3000, 3072, e4, e4, bf, Epilogue::BiasRelu, true});
    gemm_check({128, 784, 3008, e5, e4, bf, Epilogue::None});
    gemm_check({3008, 784, 128, e5, e4, f32, Epilogue::None});
    // The other mixed pair and an fp32 forward output.
    gemm_check({64, 256, 784, e4, e5, bf, Epilogue::None});
    gemm_check({64, 256, 784, e4, e4, f32, Epilogue::None});
    // A forward writing the next fp8 layer's E4M3 input (GemmCall::c_scale): W1's first
    // layer (3000 units padded to 3008) and its second (1000 to 1008), each epilogue, the
    // largest values saturating, and evaluation's (no amax taken).
    gemm_check({128, 3008, 3072, e4, e4, e4, Epilogue::BiasRelu, true});
    gemm_check({100, 1008, fp8_padded(3000), e4, e4, e4, Epilogue::BiasRelu, true});
    gemm_check({128, 3008, 3072, e4, e4, e4, Epilogue::BiasRelu, true, 4.0f});
    gemm_check({64, 256, 784, e4, e4, e4, Epilogue::BiasRelu});
    gemm_check({64, 256, 784, e4, e4, e4, Epilogue::Bias});
    gemm_check({64, 256, 784, e4, e4, e4, Epilogue::None});
    gemm_check({64, 256, 784, e4, e4, e4, Epilogue::BiasRelu, false, 1.0f, false});
}

// Calls outside the fp8 GEMM's rules must be refused by both backends before anything
// runs (a CPU that computed them would hide a layer the GPU cannot run).
void Fp8Checker::reject_checks()
{
    struct Bad {
        const char* name;
        bool ta, tb;
        DType a, b;
        int k;
        DType c = DType::BF16;
        int n = 48;
    };
    const Bad bad[] = {
        {"fp8_gemm/rejects/nn", false, false, DType::F8E4M3, DType::F8E4M3, 64},
        {"fp8_gemm/rejects/tt", true, true, DType::F8E4M3, DType::F8E4M3, 64},
        {"fp8_gemm/rejects/e5m2.e5m2", false, true, DType::F8E5M2, DType::F8E5M2, 64},
        {"fp8_gemm/rejects/k40", false, true, DType::F8E4M3, DType::F8E4M3, 40},
        {"fp8_gemm/rejects/e4m3.bf16", false, true, DType::F8E4M3, DType::BF16, 64},
        // An fp8 c of 40 columns: cuBLASLt refuses fp8 outputs off multiples of 16.
        {"fp8_gemm/rejects/e4m3_c_n40", false, true, DType::F8E4M3, DType::F8E4M3, 64,
         DType::F8E4M3, 40}};
    for (const Bad& c : bad)
        run(c.name, [&](Verdict& v, Rng&) {
            const int m = 32, n = c.n;
            Twin ta = twin(std::size_t(m) * std::size_t(c.k), c.a);
            Twin tb = twin(std::size_t(n) * std::size_t(c.k), c.b);
            Twin tc = twin(std::size_t(m) * std::size_t(n), c.c);
            Twin tmeta = make(std::vector<float>(2 * fp8_block_floats(1), 1.0f), DType::F32);
            GemmCall call;
            call.trans_a = c.ta;
            call.trans_b = c.tb;
            call.m = m;
            call.n = n;
            call.k = c.k;
            call.math = MathMode::Reduced;
            call.a_scale_inv = fp8_scale_inv_index(0, 1);
            call.b_scale_inv = fp8_scale_inv_index(1, 1);
            on_both([&](Backend& be, bool ref) {
                call.a = &side(ta, ref);
                call.b = &side(tb, ref);
                call.c = &side(tc, ref);
                call.fp8_meta = &side(tmeta, ref);
                try {
                    be.gemm(call);
                    v.fail(std::string(ref ? "the reference" : "the candidate") +
                           " ran a GEMM the fp8 rules exclude");
                } catch (const Error&) {
                    // refused, as it should be
                }
                be.synchronize();
            });
            v.compare("refused", {1.0f}, {1.0f}, Tol{});
        });
}

// ---- recorded steps ---------------------------------------------------------------------

// mixed_fp8's step as the trainer records it (quantize the input with its transposed copy
// and the weight, both folding their amax; the forward GEMM reading both descales; the
// scale update), on the candidate alone: two replays of one recording must give the bits
// of two eager steps, the second of which runs with the scales the first one's update
// wrote. A scale baked into the recording, or a host value, would repeat step 1.
std::vector<Fp8Checker::Outputs>
Fp8Checker::replay_matches_eager(Verdict& v, const std::function<void()>& reset,
                                 const std::function<void()>& step,
                                 const std::function<Outputs()>& outputs)
{
    Backend& b = m_cand;
    reset();
    step();
    reset();
    std::vector<Outputs> eager;
    for (int i = 0; i < 2; ++i) {
        step();
        eager.push_back(outputs());
    }
    reset();
    if (!b.begin_capture()) {
        v.note("this backend does not record steps");
        return {};
    }
    step();
    std::string why;
    const std::unique_ptr<StepGraph> graph = b.end_capture(&why);
    if (!graph) {
        v.fail("the step could not be recorded: " + why);
        return {};
    }
    for (int r = 1; r <= 2; ++r) {
        if (!graph->replay()) {
            v.fail("replay " + std::to_string(r) + " refused");
            return {};
        }
        b.synchronize();
        const Outputs got = outputs();
        const Outputs& want = eager[std::size_t(r - 1)];
        for (std::size_t i = 0; i < want.size() && i < got.size(); ++i)
            compare_bits(v, want[i].first + " after replay " + std::to_string(r), want[i].second,
                         got[i].second);
    }
    return eager;
}

void Fp8Checker::graph_checks()
{
    run("fp8_graph/quantize_gemm_update_replay", [&](Verdict& v, Rng& rng) {
        Backend& b = m_cand;
        const bool gemm = runs_fp8_gemms(b.info());
        const int batch = 64, in = 784, out = 256, history_len = 4;
        auto values = [&](std::size_t n, float range) {
            std::vector<float> x(n);
            for (float& e : x) e = round_to(DType::BF16, rng.uniform(-range, range));
            return x;
        };
        auto upload = [&](Buffer& buf, const std::vector<float>& host) {
            b.upload_f32(buf, host.data(), host.size(), 0);
        };
        Buffer x = b.alloc(std::size_t(batch) * in, DType::BF16);
        Buffer w = b.alloc(std::size_t(out) * in, DType::BF16);
        Buffer bias = b.alloc(std::size_t(out), DType::BF16);
        upload(x, values(std::size_t(batch) * in, 3.0f));
        upload(w, values(std::size_t(out) * in, 0.1f));
        upload(bias, values(std::size_t(out), 1.0f));
        Buffer x8 = b.alloc(std::size_t(batch) * std::size_t(fp8_padded(in)), DType::F8E4M3);
        Buffer x8_t = b.alloc(std::size_t(fp8_padded(batch)) * in, DType::F8E4M3);
        Buffer w8 = b.alloc(std::size_t(out) * std::size_t(fp8_padded(in)), DType::F8E4M3);
        Buffer c = b.alloc(std::size_t(batch) * out, DType::BF16);
        // Scales of 1 to start with: the first update moves them far (448 / amax).
        const std::size_t bf = fp8_block_floats(history_len);
        std::vector<float> meta0(2 * bf, 0.0f);
        for (std::size_t blk = 0; blk < 2; ++blk) {
            meta0[blk * bf + k_fp8_scale] = meta0[blk * bf + k_fp8_scale_inv] = 1.0f;
            meta0[blk * bf + k_fp8_max_finite] = 448.0f;
        }
        Buffer meta = b.alloc(meta0.size(), DType::F32);
        auto step = [&] {
            b.fp8_quantize(x, batch, in, meta, 0, history_len, true, &x8, &x8_t, nullptr, nullptr);
            b.fp8_quantize(w, out, in, meta, 1, history_len, true, &w8, nullptr, nullptr, nullptr);
            if (gemm) {
                GemmCall call;
                call.trans_a = false;
                call.trans_b = true;
                call.m = batch;
                call.n = out;
                call.k = fp8_padded(in);
                call.a = &x8;
                call.b = &w8;
                call.c = &c;
                call.bias = &bias;
                call.epilogue = Epilogue::BiasRelu;
                call.math = MathMode::Reduced;
                call.fp8_meta = &meta;
                call.a_scale_inv = fp8_scale_inv_index(0, history_len);
                call.b_scale_inv = fp8_scale_inv_index(1, history_len);
                b.gemm(call);
            }
            b.fp8_update_scales(meta, 2, history_len, 0);
        };
        auto outputs = [&] {
            Outputs o{{"x8_t", get(b, x8_t)}, {"meta", get(b, meta)}};
            if (gemm) o.push_back({"c", get(b, c)});
            return o;
        };
        const std::vector<Outputs> eager = replay_matches_eager(
            v, [&] { upload(meta, meta0); }, step, outputs);
        if (eager.empty()) return;
        if (eager[0][0].second == eager[1][0].second)
            v.fail("steps 1 and 2 quantized alike: the check cannot tell replayed scales "
                   "from recorded ones");
        if (!gemm) v.note("no fp8 tensor cores: the GEMM left out");
    });
    // The step's tail as the trainer records it under mixed_fp8: the scale update, then
    // the optimizer writing W's E4M3 copy with the scale just updated, then (next step's
    // forward) the transposed copy. Two replays of one recording must give the bits of two
    // eager steps: a scale or a pointer baked into the optimizer's launch would repeat
    // step 1's bytes.
    run("fp8_graph/update_optimizer_weights_replay", [&](Verdict& v, Rng& rng) {
        Backend& b = m_cand;
        const int rows = 256, cols = 784, history_len = 2;
        const std::size_t n = std::size_t(rows) * cols, bf = fp8_block_floats(history_len);
        auto upload = [&](Buffer& buf, const std::vector<float>& host) {
            b.upload_f32(buf, host.data(), host.size(), 0);
        };
        Buffer master = b.alloc(n, DType::F32), low = b.alloc(n, DType::BF16);
        Buffer grad = b.alloc(n, DType::F32), mom = b.alloc(n, DType::F32);
        Buffer w8 = b.alloc(std::size_t(rows) * std::size_t(fp8_padded(cols)), DType::F8E4M3);
        Buffer w8_t = b.alloc(std::size_t(cols) * std::size_t(fp8_padded(rows)), DType::F8E4M3);
        Buffer meta = b.alloc(bf, DType::F32);
        Buffer scaler = b.alloc(k_scaler_fields, DType::F32);
        Buffer record = b.alloc(k_record_fields, DType::F32);
        const std::vector<float> w0 = rng.values(n, DType::BF16, -1.0f, 1.0f);
        upload(grad, rng.values(n, DType::F32, -4.0f, 4.0f));
        std::vector<float> meta0(bf, 0.0f);
        meta0[k_fp8_scale] = meta0[k_fp8_scale_inv] = 1.0f;
        meta0[k_fp8_max_finite] = 448.0f;
        meta0[k_fp8_history] = 1.0f; // the first update: scale 448, the second 448 / ~3
        auto reset = [&] {
            upload(master, w0);
            upload(low, w0);
            b.fill(mom, 0.0f);
            upload(meta, meta0);
            const float sc[k_scaler_fields] = {1.0f, 0.0f, 0.0f, 0.0f};
            b.upload_f32(scaler, sc, k_scaler_fields, 0);
            b.fp8_quantize(low, rows, cols, meta, 0, history_len, false, &w8, nullptr, nullptr,
                           nullptr);
        };
        ParamSlot slot{&master, &grad, &low, &mom, nullptr};
        slot.fp8 = Fp8Weights{&w8, &meta, 0, history_len, rows, cols};
        const std::unique_ptr<ParamTable> table = b.prepare_params({slot});
        OptimizerConfig opt;
        opt.lr = 0.5f; // large steps: each one moves W's amax, so the scale moves too
        const ScalerParams none;
        auto step = [&] {
            b.fp8_update_scales(meta, 1, history_len, 0);
            b.optimizer_step(*table, opt, none, scaler, record, 0);
            b.fp8_transpose(w8, rows, cols, w8_t);
        };
        auto outputs = [&] { return Outputs{{"w8_t", get(b, w8_t)}, {"meta", get(b, meta)}}; };
        const std::vector<Outputs> eager = replay_matches_eager(v, reset, step, outputs);
        if (eager.empty()) return;
        if (eager[0][1].second[k_fp8_scale] == eager[1][1].second[k_fp8_scale])
            v.fail("steps 1 and 2 quantized with one scale: the check cannot tell replayed "
                   "scales from recorded ones");
    });
}

} // namespace

std::vector<CheckResult> run_fp8_checks(Backend& reference, Backend& candidate, std::uint64_t seed,
                                        const std::string& filter)
{
    return Fp8Checker(reference, candidate, seed, filter).run_all();
}

} // namespace mixlab
