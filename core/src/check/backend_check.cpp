// The op-by-op backend checker: every op, every floating dtype, GEMMs in every math
// mode, transpose combination and epilogue, the loss heads, the optimizer with loss
// scaling, and a three-step end-to-end training loop; each compared with the reference.
#include "mixlab/backend_check.h"
#include "check/backend_check_fp8.h"
#include "check/check_harness.h"
#include "check/refusal_check.h"
#include "check/step_graph_check.h"

#include "backends/backend_validate.h"
#include "mixlab/error.h"
#include "backends/op_names.h"
#include "base/hd_math.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <limits>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace mixlab {

namespace {

constexpr float k_nan = std::numeric_limits<float>::quiet_NaN();
constexpr float k_inf = std::numeric_limits<float>::infinity();
constexpr float k_sentinel = -7.25f; // record fields an op must leave alone

const DType k_floats[] = {DType::F32, DType::F16, DType::BF16};

// ---- tolerances ------------------------------------------------------------------------
// Outputs rounded to a 16-bit dtype can land one unit in the last place apart when the
// two backends' fp32 values straddle a rounding boundary: fp16 has 11 significant bits
// (one ulp is at most 2^-10 = 1e-3 relative), bf16 8 bits (2^-7 = 8e-3). The relative
// tolerances give that ulp a margin. fp32 outputs differ only by the few ulps that
// different summation orders and the GPU's expf/tanhf (2 ulp) bring: 1e-5.
double out_rtol(DType t)
{
    switch (t) {
    case DType::F16: return 1e-2;
    case DType::BF16: return 2e-2;
    default: return 1e-5;
    }
}

// Unit roundoff of a storage type: the most a single rounding moves a value, relative
// to its magnitude (0 for fp32: its roundings are inside the accumulation tolerance).
double unit_roundoff(DType t)
{
    switch (t) {
    case DType::F16: return 1.0 / 2048.0;
    case DType::BF16: return 1.0 / 256.0;
    default: return 0.0;
    }
}

// GEMM accumulation error relative to the magnitude scale s_ij (|alpha| ||row_i(op A)||
// ||col_j(op B)|| + |beta C0_ij| + |bias_j|, which bounds sum_k |a_ik b_kj| by
// Cauchy-Schwarz). fp32 in either order: a few 2^-24 per term, far below 1e-5. TF32:
// each operand rounded to 10 mantissa bits (cuBLAS may truncate where the CPU rounds to
// nearest): products move by up to ~2^-10 of their size, hence 1e-3. 16-bit operands:
// exact products, fp32 accumulation on the tensor cores: 1e-4 leaves room for their
// internal order.
double accumulation_tol(MathMode m, DType ab)
{
    if (ab == DType::F32) return m == MathMode::TF32 ? 1e-3 : 1e-5;
    return 1e-4;
}

// Tolerances, seeded inputs and verdicts: check_harness.h.
using check_harness::CheckBody;
using check_harness::num;
using check_harness::Rng;
using check_harness::run_check;
using check_harness::Tol;
using check_harness::Verdict;
constexpr Tol k_exact{0.0, 0.0};

// Check names say "none" where a model spec says "linear".
std::string activation_text(Activation a)
{
    return a == Activation::None ? "none" : std::string(activation_name(a));
}

// ---- a buffer on both backends -----------------------------------------------------------
struct Twin {
    Buffer ref, cand;
    DType dtype = DType::F32;
    std::size_t count = 0;
};

class Checker {
public:
    Checker(Backend& ref, Backend& cand, std::uint64_t seed, std::string filter)
        : m_ref(ref), m_cand(cand), m_seed(seed), m_filter(std::move(filter))
    {}

    std::vector<CheckResult> run_all();

private:
    using Body = CheckBody;
    void run(const std::string& name, const Body& body)
    {
        run_check(name, m_filter, m_seed, body, m_results);
    }

    // One backend's half of every Twin: on(w) is w.ref on the reference, w.cand on the
    // candidate. Each op runs once per backend through on_both, with the same arguments.
    struct Side {
        bool ref;
        Buffer& operator()(Twin& w) const { return ref ? w.ref : w.cand; }
        Buffer* operator()(Twin* w) const { return w ? &(*this)(*w) : nullptr; }
    };
    template <class Op>
    void on_both(const Op& op)
    {
        op(m_ref, Side{true});
        op(m_cand, Side{false});
    }

    Twin twin(std::size_t n, DType t)
    {
        Twin w;
        w.ref = m_ref.alloc(n, t);
        w.cand = m_cand.alloc(n, t);
        w.dtype = t;
        w.count = n;
        return w;
    }
    void set(Twin& w, const std::vector<float>& v, std::size_t offset = 0)
    {
        on_both([&](Backend& b, Side on) { b.upload_f32(on(w), v.data(), v.size(), offset); });
    }
    Twin make(const std::vector<float>& v, DType t)
    {
        Twin w = twin(v.size(), t);
        set(w, v);
        return w;
    }
    void fill(Twin& w, float value)
    {
        on_both([&](Backend& b, Side on) { b.fill(on(w), value); });
    }
    // NaN in every floating element: anything an op fails to write stays NaN and fails.
    void poison(Twin& w) { fill(w, is_floating(w.dtype) ? k_nan : -1.0f); }
    std::vector<float> get(Backend& b, const Buffer& buf)
    {
        std::vector<float> v(buf.count());
        b.download_f32(buf, v.data(), v.size());
        return v;
    }
    void compare(Verdict& v, const std::string& what, Twin& w, Tol tol,
                 const std::vector<double>* scale = nullptr, double scale_factor = 0.0)
    {
        v.compare(what, get(m_ref, w.ref), get(m_cand, w.cand), tol, scale, scale_factor);
    }

    // An optimizer step's record: the loss scales and the overflow flag exactly; the
    // gradient norm (clipping on) to the rounding of a sum of squares taken in another
    // order (float squares, double sums: relative 1e-6 covers it; inf after an
    // overflow must match exactly), every other field untouched.
    void compare_step_record(Verdict& v, Twin& record, std::size_t off)
    {
        std::vector<float> r = get(m_ref, record.ref), c = get(m_cand, record.cand);
        const std::size_t norm = off + k_rec_grad_norm;
        v.compare("record grad_norm", {r[norm]}, {c[norm]}, Tol{0.0, 1e-6});
        r[norm] = c[norm] = 0.0f;
        v.compare("record", r, c, k_exact);
    }

    // One trainable tensor on both backends; the Twins a slot does not use stay empty.
    struct ParamTwin {
        Twin master, grad, low, state1, state2;
    };
    // A split master's fp32 values on one side: its bf16 high halves (`low`) joined with
    // its int16 low halves (`master`).
    std::vector<float> joined(Backend& b, ParamTwin& p, bool ref)
    {
        const std::vector<float> hi = get(b, ref ? p.low.ref : p.low.cand);
        std::vector<float> out = get(b, ref ? p.master.ref : p.master.cand);
        for (std::size_t i = 0; i < out.size(); ++i)
            out[i] =
                hd::join_master(std::uint16_t(hd::float_bits(hi[i]) >> 16), std::int16_t(out[i]));
        return out;
    }
    // The parameter table each backend prepared for the same tensors.
    struct TwinTables {
        std::unique_ptr<ParamTable> ref, cand;
        ParamTable& operator()(Side on) const { return on.ref ? *ref : *cand; }
    };
    TwinTables prepare_params(std::vector<ParamTwin>& params)
    {
        TwinTables tables;
        on_both([&](Backend& b, Side on) {
            auto used = [&](Twin& w) { return w.count ? &on(w) : nullptr; };
            std::vector<ParamSlot> slots;
            for (ParamTwin& p : params)
                slots.push_back(
                    {&on(p.master), &on(p.grad), used(p.low), used(p.state1), used(p.state2)});
            (on.ref ? tables.ref : tables.cand) = b.prepare_params(slots);
        });
        return tables;
    }

    // A labelled uint8 data set and a sample order, on both backends.
    struct DataTwins {
        Twin images, labels, order;
    };
    DataTwins upload_data(const std::vector<std::uint8_t>& images,
                          const std::vector<std::uint8_t>& labels,
                          const std::vector<std::int32_t>& order)
    {
        DataTwins d{twin(images.size(), DType::U8), twin(labels.size(), DType::U8),
                    twin(order.size(), DType::I32)};
        on_both([&](Backend& b, Side on) {
            b.upload_raw(on(d.images), images.data(), images.size());
            b.upload_raw(on(d.labels), labels.data(), labels.size());
            b.upload_raw(on(d.order), order.data(), order.size() * sizeof(std::int32_t));
        });
        return d;
    }

    void fill_checks();
    void cast_check(DType tx, DType ty, const std::function<std::vector<float>(Rng&)>& input);
    void cast_checks();
    void gather_checks();
    void token_gather_checks();
    void gemm_checks();
    // One bias_activation check: inputs uniform in [-range, range), bias (in `in`'s dtype)
    // in [-1, 1); also in place when the output has the input's dtype.
    struct ActivationCase {
        Activation act;
        DType in, out;
        int rows, cols;
        bool bias;
        float range;
    };
    void bias_activation_check(const ActivationCase& c);
    void activation_checks();
    void bias_grad_checks();
    // The counters of a numerics histogram, read back with copy_raw_to_host_async.
    std::vector<float> counters(Backend& b, const Buffer& counts);
    void compare_counts(Verdict& v, const std::string& what, Twin& counts);
    void numerics_checks();
    void dropout_checks();
    void cross_entropy_checks();
    void optimizer_checks();
    void optimizer_mixed_dtype_checks();
    void add_activation_checks();
    enum class ConvPath { Planned, BwdAsFwd, Nchw, PadChannels, GraphApi };
    void conv_check(const ConvGeometry& g, DType t, MathMode math, ConvPath path);
    void conv_checks();
    void conv_plan_checks();
    void batchnorm_checks();
    void pool_checks();
    void embedding_checks();
    void lstm_check(const LstmShape& s, DType t, MathMode math);
    void lstm_checks();
    void end_to_end_checks();

    struct GemmCase {
        int m, n, k;
        bool ta, tb;
        DType ab, c;
        MathMode math;
        Epilogue epi;
        DType grad = DType::F32;
        float alpha = 1.0f, beta = 0.0f;
        // Operands with unaligned rows forced through aligned copies (MIXLAB_GEMM_STAGE=1).
        bool staged = false;
        // On the CUDA backend, words the note of the plan that ran must hold (our own
        // kernel's route, e.g. "narrow kernel"); null: any plan.
        const char* route = nullptr;
    };
    std::string gemm_name(const GemmCase& g) const;
    void gemm_check(const GemmCase& g);

    Backend& m_ref;
    Backend& m_cand;
    std::uint64_t m_seed;
    std::string m_filter;
    std::vector<CheckResult> m_results;
};

// ---- fill, cast ----------------------------------------------------------------------------

void Checker::fill_checks()
{
    for (DType t : {DType::F32, DType::F16, DType::BF16, DType::I32, DType::U8}) {
        run(std::string("fill/") + dtype_short_name(t), [&](Verdict& v, Rng&) {
            Twin w = twin(1003, t);
            poison(w);
            // 3.14159 rounds differently in each float type; integers round to 3.
            fill(w, 3.14159f);
            compare(v, "y", w, k_exact);
            fill(w, -0.0009765625f); // a power of two: exact everywhere, subnormal-free
            compare(v, "y (second fill)", w, k_exact);
        });
    }
}

void Checker::cast_check(DType tx, DType ty, const std::function<std::vector<float>(Rng&)>& input)
{
    run(std::string("cast/") + dtype_short_name(tx) + "->" + dtype_short_name(ty),
        [&](Verdict& v, Rng& rng) {
            Twin x = make(input(rng), tx);
            Twin y = twin(x.count, ty);
            poison(y);
            on_both([&](Backend& b, Side on) { b.cast(on(x), on(y)); });
            compare(v, "y", y, k_exact);
        });
}

void Checker::cast_checks()
{
    // Conversions are exact functions (round to nearest even) on both sides.
    for (DType tx : k_floats)
        for (DType ty : k_floats)
            cast_check(tx, ty, [tx](Rng& rng) {
                std::vector<float> x = rng.values(4099, tx, -3.0f, 3.0f);
                // Edges: beyond fp16's range (inf), fp16 subnormals, exact ties, zero signs.
                const float edges[] = {70000.0f, -65520.0f,     65504.0f, 3e-6f, -6e-8f,
                                       1e-9f,    1.0009765625f, 0.0f,     -0.0f, 1e30f};
                for (std::size_t i = 0; i < std::size(edges); ++i) x[i] = round_to(tx, edges[i]);
                return x;
            });
    const std::pair<DType, DType> ints[] = {{DType::U8, DType::F32},
                                            {DType::I32, DType::F32},
                                            {DType::U8, DType::F16},
                                            {DType::F32, DType::I32}};
    for (auto [tx, ty] : ints)
        cast_check(tx, ty, [tx = tx](Rng& rng) {
            std::vector<float> x(1000);
            for (float& e : x)
                e = tx == DType::F32 ? std::round(rng.uniform(-1000.0f, 1000.0f)) + 0.25f
                                     : float(rng.integer(0, 256));
            return x;
        });
}

// ---- gather ----------------------------------------------------------------------------

void Checker::gather_checks()
{
    struct Shape {
        ImageShape image;
        int n, batch;
        std::int64_t offset;
    };
    const Shape shapes[] = {
        {{4, 4, 3}, 50, 20, 7}, {{28, 28, 1}, 100, 32, 64}, {{9, 7, 3}, 40, 17, 3}};
    struct Aug {
        const char* name;
        bool crop;
        int pad;
        bool flip;
    };
    const Aug augs[] = {{"plain", false, 0, false},
                        {"crop4_flip", true, 4, true},
                        {"crop2", true, 2, false},
                        {"flip", false, 0, true}};
    for (const Shape& s : shapes)
        for (const Aug& a : augs)
            for (DType t : k_floats)
                run(std::string("gather_batch/") + dtype_short_name(t) + "/" +
                        std::to_string(s.batch) + "x" + std::to_string(s.image.height) + "x" +
                        std::to_string(s.image.width) + "x" + std::to_string(s.image.channels) +
                        "/" + a.name,
                    [&](Verdict& v, Rng& rng) {
                        const std::size_t sample = std::size_t(s.image.size());
                        const auto images = rng.bytes(std::size_t(s.n) * sample, 256);
                        const auto labels = rng.bytes(std::size_t(s.n), 10);
                        const std::vector<std::int32_t> order = rng.permutation(s.n);
                        const Normalization norm = rng.normalization(s.image.channels);
                        Augmentation aug;
                        aug.random_crop = a.crop;
                        aug.crop_padding = a.pad;
                        aug.horizontal_flip = a.flip;
                        aug.seed = 0xA5A5u + std::uint64_t(rng.integer(0, 1 << 30));
                        DataTwins data = upload_data(images, labels, order);
                        Twin out = twin(std::size_t(s.batch) * sample, t);
                        Twin out_labels = twin(std::size_t(s.batch), DType::I32);
                        // Two steps: each draws its own crops and flips.
                        for (std::uint64_t step : {0u, 1234567u}) {
                            v.context("step " + std::to_string(step));
                            poison(out);
                            poison(out_labels);
                            aug.step = step;
                            on_both([&](Backend& b, Side on) {
                                b.gather_batch(on(data.images), on(data.labels), on(data.order),
                                               s.offset, s.batch, s.image, norm, aug, StepCounter{},
                                               on(out), on(out_labels));
                            });
                            // The same draw, source pixel and expression in the same order
                            // (a division, a subtraction, a product: nothing to fuse), so
                            // fp32 agrees bit for bit and 16-bit values round identically.
                            compare(v, "out", out, k_exact);
                            compare(v, "labels", out_labels, k_exact);

                            // The candidate reads the step from a device counter (what a
                            // replayed CUDA graph does) and places the batch by it; the
                            // reference gets the same step and position as host numbers.
                            v.context("step " + std::to_string(step) + " from a step counter");
                            const std::int64_t per_epoch = (s.n - s.offset) / s.batch;
                            Twin counter = make({float(step), 0.0f}, DType::I32);
                            poison(out);
                            poison(out_labels);
                            on_both([&](Backend& b, Side on) {
                                Augmentation host = aug;
                                if (on.ref) {
                                    const std::int64_t at =
                                        s.offset +
                                        std::int64_t(step % std::uint64_t(per_epoch)) * s.batch;
                                    b.gather_batch(on(data.images), on(data.labels), on(data.order),
                                                   at, s.batch, s.image, norm, host, StepCounter{},
                                                   on(out), on(out_labels));
                                } else {
                                    host.step = 99; // ignored: the counter wins
                                    b.gather_batch(on(data.images), on(data.labels), on(data.order),
                                                   s.offset, s.batch, s.image, norm, host,
                                                   StepCounter{&on(counter), per_epoch}, on(out),
                                                   on(out_labels));
                                }
                            });
                            compare(v, "out", out, k_exact);
                            compare(v, "labels", out_labels, k_exact);
                        }
                        v.context("");
                    });
}

// A language model's window: ids and targets picked out of the corpus columns, placed by
// a host row or by the step counter on the device. A copy: exact.
void Checker::token_gather_checks()
{
    struct Case {
        int batch, steps;
        std::int64_t column_len, row;
    };
    const Case cases[] = {{20, 35, 400, 35}, {3, 7, 50, 0}, {80, 35, 120, 70}};
    for (const Case& c : cases)
        run("gather_tokens/" + std::to_string(c.steps) + "x" + std::to_string(c.batch) + "_col" +
                std::to_string(c.column_len),
            [&](Verdict& v, Rng& rng) {
                std::vector<std::int32_t> stream(std::size_t(c.column_len) * c.batch);
                for (auto& id : stream) id = rng.integer(0, 33278);
                Twin tokens = twin(stream.size(), DType::I32);
                on_both([&](Backend& b, Side on) {
                    b.upload_raw(on(tokens), stream.data(), stream.size() * sizeof(std::int32_t));
                });
                const std::size_t n = std::size_t(c.steps) * c.batch;
                Twin ids = twin(n, DType::I32), targets = twin(n, DType::I32);
                poison(ids);
                poison(targets);
                on_both([&](Backend& b, Side on) {
                    b.gather_tokens(on(tokens), c.column_len, c.batch, c.steps, c.row,
                                    StepCounter{}, on(ids), on(targets));
                });
                compare(v, "ids", ids, k_exact);
                compare(v, "targets", targets, k_exact);
                // The candidate reads the step from the device counter (a replayed graph);
                // the reference is given the row that step means.
                const std::int64_t per_epoch = (c.column_len - 1 - c.row) / c.steps;
                for (std::uint64_t step : {std::uint64_t(0), std::uint64_t(per_epoch * 3 - 1)}) {
                    v.context("step " + std::to_string(step) + " from a step counter");
                    Twin counter = make({float(step), 0.0f}, DType::I32);
                    poison(ids);
                    poison(targets);
                    on_both([&](Backend& b, Side on) {
                        if (on.ref)
                            b.gather_tokens(on(tokens), c.column_len, c.batch, c.steps,
                                            c.row + std::int64_t(step % std::uint64_t(per_epoch)) *
                                                        c.steps,
                                            StepCounter{}, on(ids), on(targets));
                        else
                            b.gather_tokens(on(tokens), c.column_len, c.batch, c.steps, c.row,
                                            StepCounter{&on(counter), per_epoch}, on(ids),
                                            on(targets));
                    });
                    compare(v, "ids", ids, k_exact);
                    compare(v, "targets", targets, k_exact);
                }
                v.context("");
            });
}

// Sets an environment variable for one scope and puts back what was there: the CUDA
// backend reads MIXLAB_CONV_BWD_AS_FWD, MIXLAB_CONV_LAYOUT, MIXLAB_CONV_API and
// MIXLAB_GEMM_STAGE at each plan lookup.
class ScopedEnv {
public:
    ScopedEnv(const char* name, const char* value) : m_name(name)
    {
        if (const char* old = std::getenv(name)) {
            m_had = true;
            m_old = old;
        }
        set(value);
    }
    ~ScopedEnv() { set(m_had ? m_old.c_str() : nullptr); }
    ScopedEnv(const ScopedEnv&) = delete;
    ScopedEnv& operator=(const ScopedEnv&) = delete;

private:
    void set(const char* value)
    {
#ifdef _WIN32
        _putenv_s(m_name.c_str(), value ? value : "");
#else
        if (value)
            setenv(m_name.c_str(), value, 1);
        else
            unsetenv(m_name.c_str());
#endif
    }
    std::string m_name, m_old;
    bool m_had = false;
};

// ---- GEMM ------------------------------------------------------------------------------

std::string Checker::gemm_name(const GemmCase& g) const
{
    std::string s = std::string("gemm/") + dtype_short_name(g.ab);
    if (g.c != g.ab) s += std::string("->") + dtype_short_name(g.c);
    s += std::string("/") + math_mode_name(g.math) + "/" + (g.ta ? "T" : "N") + (g.tb ? "T" : "N") +
         "/" + std::to_string(g.m) + "x" + std::to_string(g.n) + "x" + std::to_string(g.k) + "/" +
         epilogue_name(g.epi);
    if (g.epi == Epilogue::BiasGradA) s += std::string("_") + dtype_short_name(g.grad);
    if (g.beta != 0.0f || g.alpha != 1.0f) s += "/alpha" + num(g.alpha) + "_beta" + num(g.beta);
    if (g.staged) s += "/staged";
    return s;
}

void Checker::gemm_check(const GemmCase& g)
{
    run(gemm_name(g), [&](Verdict& v, Rng& rng) {
        std::unique_ptr<ScopedEnv> stage;
        if (g.staged) stage = std::make_unique<ScopedEnv>("MIXLAB_GEMM_STAGE", "1");
        const std::size_t m = g.m, n = g.n, k = g.k;
        // Stored shapes: A (m x k) or (k x m) when transposed; B (k x n) or (n x k).
        const std::vector<float> a = rng.values(m * k, g.ab, -1.0f, 1.0f);
        const std::vector<float> b = rng.values(k * n, g.ab, -1.0f, 1.0f);
        auto op_a = [&](std::size_t i, std::size_t kk) {
            return g.ta ? a[kk * m + i] : a[i * k + kk];
        };
        auto op_b = [&](std::size_t kk, std::size_t j) {
            return g.tb ? b[j * k + kk] : b[kk * n + j];
        };
        Twin ta = make(a, g.ab), tb = make(b, g.ab);
        Twin tc = twin(m * n, g.c);
        std::vector<float> c0;
        if (g.beta != 0.0f) {
            c0 = rng.values(m * n, g.c, -1.0f, 1.0f);
            set(tc, c0);
        } else {
            poison(tc); // beta == 0: C is not read, NaN included
        }
        const bool has_bias = validate::epilogue_adds_bias(g.epi);
        std::vector<float> bias;
        Twin tbias, tgrad;
        if (has_bias) {
            bias = rng.values(n, g.c, -1.0f, 1.0f);
            tbias = make(bias, g.c);
        }
        if (g.epi == Epilogue::BiasGradA) {
            tgrad = twin(m, g.grad);
            poison(tgrad);
        }

        GemmCall call;
        call.trans_a = g.ta;
        call.trans_b = g.tb;
        call.m = g.m;
        call.n = g.n;
        call.k = g.k;
        call.alpha = g.alpha;
        call.beta = g.beta;
        call.epilogue = g.epi;
        call.math = g.math;
        on_both([&](Backend& be, Side on) {
            call.a = &on(ta);
            call.b = &on(tb);
            call.c = &on(tc);
            call.bias = on(has_bias ? &tbias : nullptr);
            call.bias_grad = on(g.epi == Epilogue::BiasGradA ? &tgrad : nullptr);
            be.gemm(call);
        });

        // Magnitude scale per element (see accumulation_tol).
        std::vector<double> row_norm(m, 0.0), col_norm(n, 0.0), row_abs(m, 0.0);
        for (std::size_t i = 0; i < m; ++i)
            for (std::size_t kk = 0; kk < k; ++kk) {
                const double x = op_a(i, kk);
                row_norm[i] += x * x;
                row_abs[i] += std::fabs(x);
            }
        for (std::size_t kk = 0; kk < k; ++kk)
            for (std::size_t j = 0; j < n; ++j) {
                const double x = op_b(kk, j);
                col_norm[j] += x * x;
            }
        std::vector<double> scale(m * n);
        for (std::size_t i = 0; i < m; ++i)
            for (std::size_t j = 0; j < n; ++j)
                scale[i * n + j] = std::fabs(g.alpha) * std::sqrt(row_norm[i] * col_norm[j]) +
                                   (c0.empty() ? 0.0 : std::fabs(g.beta * c0[i * n + j])) +
                                   (bias.empty() ? 0.0 : std::fabs(bias[j]));
        // An unfused epilogue rounds C once more before the bias: one extra rounding of
        // something no bigger than the scale.
        const double acc = accumulation_tol(g.math, g.ab);
        compare(v, "c", tc, Tol{1e-30, out_rtol(g.c)}, &scale, acc + unit_roundoff(g.c));
        if (g.epi == Epilogue::BiasGradA)
            compare(v, "bias_grad", tgrad, Tol{1e-30, out_rtol(g.grad)}, &row_abs,
                    acc + unit_roundoff(g.grad));
        if (g.route && m_cand.info().backend == BackendKind::Cuda) {
            // The route must really have run, or the case checks cuBLASLt again; unless
            // MIXLAB_GEMM_SKINNY=0 sends every shape to cuBLASLt (for A/B timing).
            const char* own = std::getenv("MIXLAB_GEMM_SKINNY");
            const bool own_off = own && std::strcmp(own, "0") == 0;
            std::string ran;
            for (const PlanReport& p : backend_plan_reports(m_cand)) {
                if (p.kind != "gemm") continue;
                const nlohmann::json j = nlohmann::json::parse(p.json);
                const std::string d = j.at("description").get<std::string>();
                if (j.at("m") == g.m && j.at("n") == g.n && j.at("k") == g.k &&
                    j.at("trans_a") == g.ta && j.at("trans_b") == g.tb &&
                    j.at("ab") == std::string(dtype_name(g.ab)) &&
                    j.at("c") == std::string(dtype_name(g.c)) &&
                    j.at("epilogue") == epilogue_name(g.epi) &&
                    d.find(g.route) != std::string::npos)
                    ran = d;
            }
            if (!ran.empty())
                v.note(ran);
            else if (!own_off)
                v.fail(std::string("the plan that ran is not our ") + g.route);
        }
        if (g.staged && m_cand.info().backend == BackendKind::Cuda) {
            // The staged plan must really have run: else this only repeats the case. The
            // plan is matched on everything that keys it (shape, transposes, dtypes,
            // epilogue, math), so another case's plan of the same shape does not count.
            // The unstaged case of the same key built its own plan earlier (staging is part
            // of the plan cache's key, not of the report), so the staged one is looked for
            // among all the plans that match; a bias gradient's dtype (aux) keys it too. An epilogue cuBLASLt could not fuse runs the
            // plain plan of the same key (epilogue none) and a kernel of ours: then that
            // plain plan must be staged.
            const std::vector<PlanReport> reports = backend_plan_reports(m_cand);
            const auto plans_of = [&](const char* epilogue, const DType* aux) {
                std::vector<nlohmann::json> out;
                for (const PlanReport& p : reports) {
                    if (p.kind != "gemm") continue;
                    nlohmann::json j = nlohmann::json::parse(p.json);
                    if (j.at("m") == g.m && j.at("n") == g.n && j.at("k") == g.k &&
                        j.at("trans_a") == g.ta && j.at("trans_b") == g.tb &&
                        j.at("ab") == std::string(dtype_name(g.ab)) &&
                        j.at("c") == std::string(dtype_name(g.c)) && j.at("epilogue") == epilogue &&
                        j.at("math") == math_mode_name(g.math) &&
                        (!aux || j.at("aux") == std::string(dtype_name(*aux))))
                        out.push_back(std::move(j));
                }
                return out;
            };
            const auto staged_of = [](const std::vector<nlohmann::json>& plans) {
                for (const nlohmann::json& j : plans)
                    if (!j.at("staging").get<std::string>().empty()) return &j;
                return static_cast<const nlohmann::json*>(nullptr);
            };
            const bool grad = g.epi == Epilogue::BiasGradA;
            std::vector<nlohmann::json> ran =
                plans_of(epilogue_name(g.epi), grad ? &g.grad : nullptr);
            const bool unfused = !ran.empty() && !ran.front().at("fused").get<bool>();
            if (unfused && g.epi != Epilogue::None) {
                v.note(ran.front().at("description").get<std::string>());
                ran = plans_of(epilogue_name(Epilogue::None), nullptr);
            }
            if (const nlohmann::json* staged = staged_of(ran))
                v.note(staged->at("description").get<std::string>());
            else
                v.fail(!ran.empty() ? "MIXLAB_GEMM_STAGE=1 but the plan that ran was not staged"
                                    : "MIXLAB_GEMM_STAGE=1 but no plan of this case was built");
        }
    });
}

void Checker::gemm_checks()
{
    struct Mode {
        DType ab;
        MathMode math;
    };
    const Mode modes[] = {{DType::F32, MathMode::Pedantic},
                          {DType::F32, MathMode::TF32},
                          {DType::F16, MathMode::Reduced},
                          {DType::BF16, MathMode::Reduced}};
    const Epilogue epilogues[] = {Epilogue::None, Epilogue::Bias, Epilogue::BiasRelu,
                                  Epilogue::BiasGelu, Epilogue::BiasGradA};
    struct Dims {
        int m, n, k;
    };
    // Odd sizes (no tensor-core friendly multiple anywhere) and aligned ones.
    for (Dims d : {Dims{37, 19, 53}, Dims{64, 48, 32}})
        for (Mode md : modes) {
            // 16-bit operands also write an fp32 C (fp32 gradients from 16-bit operands).
            std::vector<DType> c_types = {md.ab};
            if (md.ab != DType::F32) c_types.push_back(DType::F32);
            for (DType c : c_types)
                for (int t = 0; t < 4; ++t)
                    for (Epilogue e : epilogues) {
                        GemmCase g{d.m, d.n, d.k, (t & 2) != 0, (t & 1) != 0, md.ab, c, md.math, e};
                        gemm_check(g);
                        // The bias gradient also in C's 16-bit dtype.
                        if (e == Epilogue::BiasGradA && c != DType::F32) {
                            g.grad = c;
                            gemm_check(g);
                        }
                    }
        }
    // The other math modes for the operand types where they mean something different.
    const GemmCase other_modes[] = {
        {37, 19, 53, false, false, DType::F16, DType::F16, MathMode::Pedantic, Epilogue::None},
        {37, 19, 53, false, false, DType::BF16, DType::F32, MathMode::Pedantic, Epilogue::Bias},
        {37, 19, 53, false, true, DType::F32, DType::F32, MathMode::Reduced, Epilogue::BiasRelu},
    };
    for (const GemmCase& g : other_modes) gemm_check(g);
    // alpha and beta: C read and scaled.
    for (Mode md : modes)
        for (Epilogue e : {Epilogue::None, Epilogue::BiasRelu}) {
            GemmCase g{37, 19, 53, true, false, md.ab, md.ab, md.math, e};
            g.alpha = 0.5f;
            g.beta = 0.25f;
            gemm_check(g);
            if (md.ab != DType::F32) {
                g.c = DType::F32;
                gemm_check(g);
            }
        }
    // The seed MLP's layer 1 at batch 256: forward X W^T + b with relu, dX = dZ W,
    // dW = dZ^T X with the bias gradient; and the 10-class head.
    for (Mode md : modes)
        gemm_check(
            GemmCase{256, 3000, 3072, false, true, md.ab, md.ab, md.math, Epilogue::BiasRelu});
    const Epilogue dw = Epilogue::BiasGradA;
    const GemmCase seed_mlp[] = {
        {256, 3072, 3000, false, false, DType::F16, DType::F16, MathMode::Reduced, Epilogue::None},
        {256, 3072, 3000, false, false, DType::F32, DType::F32, MathMode::Pedantic, Epilogue::None},
        {3000, 3072, 256, true, false, DType::F16, DType::F32, MathMode::Reduced, dw},
        {3000, 3072, 256, true, false, DType::BF16, DType::F32, MathMode::Reduced, dw},
        {3000, 3072, 256, true, false, DType::F32, DType::F32, MathMode::TF32, dw},
        {256, 10, 1000, false, true, DType::F16, DType::F16, MathMode::Reduced, Epilogue::Bias},
        // The 10-class head's weight gradient below 1024 rows of k stays with cuBLASLt.
        {10, 1000, 32, true, false, DType::BF16, DType::F32, MathMode::Reduced, dw},
        {10, 1000, 300, true, false, DType::F16, DType::F32, MathMode::Reduced, Epilogue::None,
         DType::F32, 0.5f, 1.0f},
        {3, 777, 1000, true, false, DType::BF16, DType::BF16, MathMode::Reduced, dw, DType::BF16},
        {13, 257, 129, true, false, DType::F16, DType::F16, MathMode::Reduced, Epilogue::None},
    };
    for (const GemmCase& g : seed_mlp) gemm_check(g);
    // From k = 1024, 16-bit rows not a multiple of 8 run our split-k kernel
    // (skinny_gemm.cuh): the seed's head at batch 4096 in fp16 and bf16, with and without
    // the bias gradient, in a 16-bit C; k 1100 leaves a last slice of 76 rows; 777 columns
    // (not a multiple of 4) its one-column loads, 996 its 4-column loads; the largest m it
    // takes (15: 16 is a multiple of 8) and m 1, 3, 5, 7, 11, 13, so that every even bound
    // of m it is built for runs; groups of 24 rows (k 5000) and of 32 (3000 columns), two
    // chunks of loads a thread; beta read; 64 slices (200 columns), two batches of the
    // finish's loads.
    const GemmCase split_k[] = {
        {10, 1000, 4096, true, false, DType::F16, DType::F32, MathMode::Reduced, dw},
        {10, 1000, 1100, true, false, DType::BF16, DType::BF16, MathMode::Reduced, dw, DType::BF16},
        {3, 777, 1100, true, false, DType::BF16, DType::BF16, MathMode::Reduced, dw, DType::BF16},
        {13, 998, 2049, true, false, DType::F16, DType::F32, MathMode::Reduced, Epilogue::None},
        {10, 1000, 4096, true, false, DType::BF16, DType::F32, MathMode::Reduced, dw},
        {15, 1000, 4096, true, false, DType::BF16, DType::F32, MathMode::Reduced, dw},
        {3, 1000, 4096, true, false, DType::F16, DType::F16, MathMode::Reduced, Epilogue::None},
        {5, 996, 2049, true, false, DType::F16, DType::F16, MathMode::Reduced, dw, DType::F16},
        {7, 3000, 2049, true, false, DType::BF16, DType::F32, MathMode::Reduced, Epilogue::None,
         DType::F32, 0.5f, 1.0f},
        {11, 1000, 5000, true, false, DType::F16, DType::F32, MathMode::Reduced, dw},
        {1, 200, 4096, true, false, DType::BF16, DType::BF16, MathMode::Reduced, dw, DType::BF16},
    };
    for (GemmCase g : split_k) {
        g.route = "split-k kernel";
        gemm_check(g);
    }
    // The head's input gradient (k up to 16, not a multiple of 8) runs our narrow kernel
    // (narrow_gemm.cuh) from batch 1024: the seed's at batch 4096, into a 16-bit and an
    // fp32 C; ragged m and n (one column at a time); every k it is built for (4 to 16);
    // alpha and beta; the smallest m and n the route takes.
    const Epilogue none = Epilogue::None;
    const MathMode red = MathMode::Reduced, exact = MathMode::Pedantic;
    const GemmCase narrow[] = {
        {4096, 1000, 10, false, false, DType::BF16, DType::BF16, red, none},
        {4096, 1000, 10, false, false, DType::BF16, DType::F32, red, none},
        {1030, 998, 13, false, false, DType::F16, DType::F16, red, none},
        {1030, 998, 13, false, false, DType::F16, DType::F32, red, none, DType::F32, 0.5f, 1.0f},
        {1100, 1024, 5, false, false, DType::BF16, DType::F32, red, none, DType::F32, 0.5f, 0.25f},
        {1024, 256, 3, false, false, DType::F16, DType::F16, exact, none, DType::F32, 2.0f, 0.5f},
        {1024, 512, 15, false, false, DType::BF16, DType::BF16, red, none},
    };
    for (GemmCase g : narrow) {
        g.route = "narrow kernel";
        gemm_check(g);
    }
    // Operands whose rows are not 16-byte aligned copied through aligned scratch (in
    // auto mode only for large matrices: W3's 33,278-word logits). Every transpose, the
    // epilogues that read a bias or write its gradient, beta reading a staged C.
    for (Mode md : modes)
        for (int t = 0; t < 4; ++t)
            for (Epilogue e : {Epilogue::None, Epilogue::Bias, Epilogue::BiasGradA}) {
                GemmCase g{37, 19, 53, (t & 2) != 0, (t & 1) != 0, md.ab, md.ab, md.math, e};
                g.staged = true;
                gemm_check(g);
            }
    for (Mode md : modes) {
        GemmCase g{37, 19, 53, false, false, md.ab, DType::F32, md.math, Epilogue::None};
        g.alpha = 0.5f;
        g.beta = 0.25f;
        g.staged = true;
        gemm_check(g);
    }
}

// ---- activations -------------------------------------------------------------------------

// Activation outputs: fp32 differs by the GPU's expf/tanhf ulps (rtol 1e-5); GELU and
// sigmoid lose relative accuracy near their zeros through cancellation, which the
// absolute 1e-6 covers (inputs are at most 4 in size).
Tol activation_tol(DType t) { return t == DType::F32 ? Tol{1e-6, 1e-5} : Tol{1e-5, out_rtol(t)}; }

void Checker::bias_activation_check(const ActivationCase& c)
{
    std::string name =
        std::string("bias_activation/") + activation_text(c.act) + "/" + dtype_short_name(c.in);
    if (c.out != c.in) name += std::string("->") + dtype_short_name(c.out);
    name += '/';
    name += std::to_string(c.rows) + "x" + std::to_string(c.cols);
    if (!c.bias) name += "/no_bias";
    run(name, [&](Verdict& v, Rng& rng) {
        const std::size_t n = std::size_t(c.rows) * c.cols;
        Twin x = make(rng.values(n, c.in, -c.range, c.range), c.in);
        Twin bias;
        if (c.bias) bias = make(rng.values(std::size_t(c.cols), c.in, -1.0f, 1.0f), c.in);
        auto forward = [&](Twin& y) {
            on_both([&](Backend& b, Side on) {
                b.bias_activation(c.act, on(x), on(c.bias ? &bias : nullptr), c.cols, on(y));
            });
        };
        Twin y = twin(n, c.out);
        poison(y);
        forward(y);
        compare(v, "y", y, activation_tol(c.out));
        if (c.out == c.in) {
            // In place (y aliases x), as the trainer runs activation layers.
            forward(x);
            compare(v, "y (in place)", x, activation_tol(c.out));
        }
    });
}

void Checker::activation_checks()
{
    const Activation acts[] = {Activation::None, Activation::Relu, Activation::Sigmoid,
                               Activation::Tanh, Activation::Gelu, Activation::Softmax};
    struct Shape {
        int rows, cols;
        bool bias;
    };
    for (Activation act : acts)
        for (DType t : k_floats) {
            std::vector<Shape> shapes = {{33, 77, true}, {16, 50, false}};
            if (act == Activation::Softmax)
                shapes = {{33, 10, true}, {8, 1000, true}, {5, 3001, false}};
            for (const Shape& s : shapes)
                bias_activation_check(ActivationCase{act, t, t, s.rows, s.cols, s.bias, 4.0f});
            // Backward: y = act(x) from the reference, given to both so they see the same y.
            const int rows = act == Activation::Softmax ? 8 : 33;
            const int cols = act == Activation::Softmax ? 1000 : 77;
            run(std::string("activation_backward/") + activation_text(act) + "/" +
                    dtype_short_name(t) + "/" + std::to_string(rows) + "x" + std::to_string(cols),
                [&](Verdict& v, Rng& rng) {
                    const std::size_t n = std::size_t(rows) * cols;
                    Twin x = make(rng.values(n, t, -3.0f, 3.0f), t);
                    Twin y = twin(n, t);
                    m_ref.bias_activation(act, x.ref, nullptr, cols, y.ref);
                    const std::vector<float> yv = get(m_ref, y.ref);
                    set(y, yv);
                    Twin dy = make(rng.values(n, t, -1.0f, 1.0f), t);
                    auto backward = [&](Twin& dx) {
                        poison(dx);
                        on_both([&](Backend& b, Side on) {
                            b.activation_backward(act, on(x), on(y), on(dy), cols, on(dx));
                        });
                    };
                    Twin dx = twin(n, t);
                    backward(dx);
                    compare(v, "dx", dx, activation_tol(t));
                    // fp32 gradient from a 16-bit layer (a layer kept out of reduced precision
                    // hands its gradient back in fp32).
                    Twin dx32 = twin(n, DType::F32);
                    backward(dx32);
                    compare(v, "dx (f32)", dx32, activation_tol(DType::F32));
                });
        }
    // A 16-bit input with an fp32 output (a softmax layer kept in float32).
    bias_activation_check(
        ActivationCase{Activation::Softmax, DType::F16, DType::F32, 64, 10, true, 6.0f});
}

// ---- numerics histograms -------------------------------------------------------------------

// As floats for Verdict::compare: exact for the counts these checks make (below 2^24).
std::vector<float> Checker::counters(Backend& b, const Buffer& counts)
{
    float* host = b.host_alloc(counts.count());
    b.copy_raw_to_host_async(counts, counts.count() * sizeof(std::uint32_t), host);
    b.synchronize();
    std::vector<std::uint32_t> c(counts.count());
    std::memcpy(c.data(), host, c.size() * sizeof(std::uint32_t));
    b.host_free(host);
    return std::vector<float>(c.begin(), c.end());
}

void Checker::compare_counts(Verdict& v, const std::string& what, Twin& counts)
{
    v.compare(what, counters(m_ref, counts.ref), counters(m_cand, counts.cand), k_exact);
}

void Checker::numerics_checks()
{
    // Counting is integer addition: the counts must agree exactly. Inputs are random bit
    // patterns (every binade, fp32 subnormals, infinities, NaNs, both zeros) rounded to
    // the dtype, plus each format's edges; the counters start at 5 (the ops add), and two
    // tensors add into one histogram at an offset, as a layer's weight and bias do.
    const float edges[] = {0.0f,
                           -0.0f,
                           65504.0f,
                           65520.0f,
                           6.103515625e-05f,
                           6.0975552e-05f,
                           5.9604645e-08f,
                           2.9802322e-08f,
                           1.1754944e-38f,
                           1.4e-45f,
                           3.4028235e38f,
                           448.0f,
                           57344.0f,
                           std::numeric_limits<float>::infinity(),
                           -std::numeric_limits<float>::infinity(),
                           k_nan};
    auto crafted = [&](Rng& rng, std::size_t n, DType t) {
        std::vector<float> x(n);
        for (float& e : x) e = round_to(t, hd::bits_float(rng.bits32()));
        for (std::size_t i = 0; i < std::size(edges) && i < n; ++i) x[i] = round_to(t, edges[i]);
        return x;
    };
    const std::size_t sizes[] = {1, 1000, 3000001};
    for (DType t : k_floats)
        for (std::size_t n : sizes)
            run(std::string("value_histogram/") + dtype_short_name(t) + "/" + std::to_string(n),
                [&](Verdict& v, Rng& rng) {
                    Twin a = make(crafted(rng, n, t), t);
                    Twin b = make(crafted(rng, n / 3 + 1, t), t);
                    const std::size_t offset = 7;
                    Twin counts = twin(offset + hd::k_value_slots, DType::I32);
                    fill(counts, 5.0f);
                    on_both([&](Backend& be, Side on) {
                        be.value_histogram(on(a), on(counts), offset);
                        be.value_histogram(on(b), on(counts), offset);
                    });
                    compare_counts(v, "counts", counts);
                });
    // Updates: weights spread over many binades, updates from 2^-40 to 2^4 times the weight
    // (some lost to the dtype's rounding, some exactly zero), gradients with zeros and a few
    // non-finite values; after = round(before + update) in the weights' dtype.
    for (DType tw : k_floats)
        for (DType tg : {DType::F32, tw})
            for (std::size_t n : sizes)
                run(std::string("update_histogram/") + dtype_short_name(tw) + "/grad_" +
                        dtype_short_name(tg) + "/" + std::to_string(n),
                    [&](Verdict& v, Rng& rng) {
                        std::vector<float> before(n), after(n), grad(n);
                        for (std::size_t i = 0; i < n; ++i) {
                            const float w =
                                rng.integer(0, 50) == 0
                                    ? 0.0f
                                    : std::ldexp(rng.uniform(-1.0f, 1.0f), rng.integer(-20, 10));
                            before[i] = round_to(tw, w);
                            const int kind = rng.integer(0, 20);
                            const float u = kind == 0
                                                ? 0.0f
                                                : std::ldexp(before[i] == 0 ? 1e-3f : before[i],
                                                             rng.integer(-40, 5)) *
                                                      rng.uniform(-1.0f, 1.0f);
                            after[i] = round_to(tw, before[i] + u);
                            grad[i] = kind == 1 ? 0.0f
                                      : kind == 2 && rng.integer(0, 50) == 0
                                          ? std::numeric_limits<float>::infinity()
                                          : round_to(tg, rng.uniform(-1.0f, 1.0f));
                        }
                        if (n > 3) before[3] = round_to(tw, k_nan);
                        Twin tb = make(before, tw), ta = make(after, tw), tgr = make(grad, tg);
                        Twin counts = twin(hd::k_update_slots + 3, DType::I32);
                        fill(counts, 5.0f);
                        on_both([&](Backend& be, Side on) {
                            be.update_histogram(on(tb), on(ta), on(tgr), on(counts), 3);
                        });
                        compare_counts(v, "counts", counts);
                    });
}

// ---- bias gradient -------------------------------------------------------------------------

void Checker::bias_grad_checks()
{
    struct Case {
        int rows, cols;
        DType in, out;
    };
    const Case cases[] = {{300, 77, DType::F32, DType::F32},
                          {300, 77, DType::F16, DType::F32},
                          {300, 77, DType::F16, DType::F16},
                          {300, 77, DType::BF16, DType::F32},
                          {300, 77, DType::BF16, DType::BF16},
                          {4096, 10, DType::F16, DType::F32},
                          {256, 3000, DType::F32, DType::F32},
                          {1, 5, DType::F32, DType::F32},
                          // A conv bias gradient: batch*H*W rows (128 x 32 x 32) of few
                          // channels, which the GPU splits across blocks.
                          {131072, 32, DType::F16, DType::F32},
                          {131072, 32, DType::F32, DType::F32},
                          {20000, 64, DType::BF16, DType::BF16},
                          {5000, 3, DType::F32, DType::F32}};
    for (const Case& c : cases)
        run(std::string("bias_grad/") + dtype_short_name(c.in) + "->" + dtype_short_name(c.out) +
                "/" + std::to_string(c.rows) + "x" + std::to_string(c.cols),
            [&](Verdict& v, Rng& rng) {
                const std::vector<float> dy =
                    rng.values(std::size_t(c.rows) * c.cols, c.in, -1.0f, 1.0f);
                std::vector<double> abs_sum(c.cols, 0.0);
                for (int i = 0; i < c.rows; ++i)
                    for (int j = 0; j < c.cols; ++j)
                        abs_sum[j] += std::fabs(dy[std::size_t(i) * c.cols + j]);
                Twin tdy = make(dy, c.in);
                Twin out = twin(std::size_t(c.cols), c.out);
                poison(out);
                on_both(
                    [&](Backend& b, Side on) { b.bias_grad(on(tdy), c.rows, c.cols, on(out)); });
                // fp32 sums in different orders: a few 2^-24 of sum |dy| each.
                compare(v, "out", out, Tol{1e-30, out_rtol(c.out)}, &abs_sum,
                        1e-5 + unit_roundoff(c.out));
            });
}

// ---- dropout -------------------------------------------------------------------------------

void Checker::dropout_checks()
{
    // Exact: the same mask function, IEEE division by (1 - rate) on both sides, then the
    // same rounding.
    for (DType t : k_floats)
        for (float rate : {0.0f, 0.1f, 0.5f, 0.9f})
            run(std::string("dropout/") + dtype_short_name(t) + "/rate" + num(rate),
                [&](Verdict& v, Rng& rng) {
                    const std::size_t n = 10007;
                    const std::uint64_t seed = 0x5EED0000u + std::uint64_t(rng.integer(0, 1 << 30));
                    Twin x = make(rng.values(n, t, -2.0f, 2.0f), t);
                    Twin y = twin(n, t), dx = twin(n, t);
                    poison(y);
                    poison(dx);
                    // The backward pass regenerates the forward mask from (seed, step).
                    auto pass = [&](bool forward, std::uint64_t step, Twin& out) {
                        on_both([&](Backend& b, Side on) {
                            if (forward)
                                b.dropout_forward(on(x), rate, seed, step, StepCounter{}, on(out));
                            else
                                b.dropout_backward(on(x), rate, seed, step, StepCounter{}, on(out));
                        });
                    };
                    pass(true, 17, y);
                    compare(v, "y", y, k_exact);
                    pass(false, 17, dx);
                    compare(v, "dx", dx, k_exact);
                    // Another step draws another mask.
                    pass(true, 18, y);
                    compare(v, "y (next step)", y, k_exact);
                    // The candidate reads step 18 from a device counter (a replayed graph's
                    // way), then advances it to 19; the reference gets the numbers.
                    Twin counter = make({18.0f, 0.0f}, DType::I32);
                    for (std::uint64_t step : {18u, 19u}) {
                        v.context("step " + std::to_string(step) + " from a step counter");
                        poison(y);
                        on_both([&](Backend& b, Side on) {
                            if (on.ref)
                                b.dropout_forward(on(x), rate, seed, step, StepCounter{}, on(y));
                            else
                                b.dropout_forward(on(x), rate, seed, 0,
                                                  StepCounter{&on(counter), 1}, on(y));
                        });
                        compare(v, "y", y, k_exact);
                        m_cand.advance_step(counter.cand);
                    }
                    v.context("");
                });
}

// ---- cross-entropy ---------------------------------------------------------------------------

void Checker::cross_entropy_checks()
{
    const std::pair<OutputHead, const char*> heads[] = {
        {OutputHead::Logits, "logits"},
        {OutputHead::SoftmaxFolded, "softmax_folded"},
        {OutputHead::SigmoidKeras, "sigmoid_keras"}};
    struct Shape {
        int batch, classes;
    };
    for (auto [head, head_name] : heads)
        for (DType t : k_floats)
            for (Shape s : {Shape{32, 10}, Shape{67, 1000}})
                for (bool train : {true, false})
                    run(std::string("cross_entropy/") + head_name + "/" + dtype_short_name(t) +
                            "/" + (train ? "train" : "eval") + "/" + std::to_string(s.batch) + "x" +
                            std::to_string(s.classes),
                        [&](Verdict& v, Rng& rng) {
                            const std::size_t n = std::size_t(s.batch) * s.classes;
                            std::vector<float> z = rng.values(n, t, -4.0f, 4.0f);
                            std::vector<float> labels(s.batch);
                            for (float& l : labels) l = float(rng.integer(0, s.classes));
                            // Rows that reach Keras's clip: p_t below eps, and p_t = 1.
                            const int t0 = int(labels[0]), t1 = int(labels[1]);
                            z[std::size_t(t0)] = -30.0f;
                            for (int j = 0; j < s.classes; ++j)
                                z[std::size_t(s.classes) + j] = j == t1 ? 20.0f : -30.0f;
                            Twin tz = make(z, t);
                            Twin tl = make(labels, DType::I32);
                            const float scale = 1024.0f;
                            Twin scaler = make({scale, 0.0f, 0.0f, 0.0f}, DType::F32);
                            const std::size_t off = k_record_fields;
                            Twin record = twin(2 * k_record_fields, DType::F32);
                            fill(record, k_sentinel);
                            if (train)
                                set(record, {k_nan, k_nan}, off);
                            else
                                set(record, {2.5f, 3.0f}, off);
                            Twin dz = twin(n, t);
                            poison(dz);
                            for (int rep = 0; rep < (train ? 1 : 2); ++rep)
                                on_both([&](Backend& b, Side on) {
                                    b.cross_entropy(head, on(tz), on(tl), s.batch, s.classes,
                                                    on(train ? &scaler : nullptr),
                                                    on(train ? &dz : nullptr), on(record), off);
                                });
                            // Loss: per-row fp32 losses a few ulps apart, summed; correct counts
                            // exact (identical logits, first maximum wins on both).
                            const std::vector<float> rr = get(m_ref, record.ref);
                            const std::vector<float> rc = get(m_cand, record.cand);
                            v.compare("record loss_sum", {rr[off + k_rec_loss_sum]},
                                      {rc[off + k_rec_loss_sum]}, Tol{1e-5 * s.batch, 1e-5});
                            v.compare("record correct", {rr[off + k_rec_correct]},
                                      {rc[off + k_rec_correct]}, k_exact);
                            std::vector<float> rest_r, rest_c;
                            for (std::size_t i = 0; i < rr.size(); ++i)
                                if (i != off + k_rec_loss_sum && i != off + k_rec_correct) {
                                    rest_r.push_back(rr[i]);
                                    rest_c.push_back(rc[i]);
                                }
                            v.compare("record (other fields untouched)", rest_r, rest_c, k_exact);
                            if (train) {
                                const double unit = scale / s.batch;
                                compare(v, "dlogits", dz,
                                        Tol{1e-6 * unit, t == DType::F32 ? 1e-5 : out_rtol(t)});
                            }
                        });
}

// ---- optimizer -------------------------------------------------------------------------------

void Checker::optimizer_checks()
{
    struct Layout {
        const char* name;
        DType master, grad;
        bool low;
        DType low_t;
        LossScaleMode mode;
    };
    const Layout layouts[] = {
        {"f32_master+f16_low/dynamic", DType::F32, DType::F32, true, DType::F16,
         LossScaleMode::Dynamic},
        {"f32_master+bf16_low/dynamic", DType::F32, DType::F32, true, DType::BF16,
         LossScaleMode::Dynamic},
        // mixed_bf16's layout: no scaling, so the CUDA update flags overflow itself.
        {"f32_master+bf16_low/none", DType::F32, DType::F32, true, DType::BF16,
         LossScaleMode::None},
        {"f32/none", DType::F32, DType::F32, false, DType::F32, LossScaleMode::None},
        {"f32/static", DType::F32, DType::F32, false, DType::F32, LossScaleMode::Static},
        {"pure_f16/dynamic", DType::F16, DType::F16, false, DType::F16, LossScaleMode::Dynamic},
        // mixed_bf16 with "master_weights": "bf16_split": int16 low halves as the master,
        // the bf16 high halves as the copy, compared joined (the fp32 masters) and as the
        // bf16 weights the GEMMs read.
        {"split_master/none", DType::I16, DType::F32, true, DType::BF16, LossScaleMode::None},
        {"split_master/dynamic", DType::I16, DType::F32, true, DType::BF16, LossScaleMode::Dynamic},
    };
    struct Opt {
        const char* name;
        OptimizerConfig cfg;
    };
    std::vector<Opt> opts;
    {
        OptimizerConfig c;
        c.type = OptimizerType::SGD;
        c.lr = 0.05f;
        c.momentum = 0.9f;
        opts.push_back({"sgd_momentum", c});
        c.nesterov = true;
        c.weight_decay = 0.01f;
        opts.push_back({"sgd_nesterov_wd", c});
        c.nesterov = false;
        c.weight_decay = 0.0f;
        c.momentum = 0.0f;
        opts.push_back({"sgd_plain", c});
        OptimizerConfig a;
        a.type = OptimizerType::Adam;
        a.lr = 0.01f;
        a.weight_decay = 0.01f;
        opts.push_back({"adam_wd", a});
        a.type = OptimizerType::AdamW;
        opts.push_back({"adamw", a});
        // Gradient clipping. The unscaled gradients below are uniform in [-g, g] over
        // 20081 elements with g between 0.25 and 4 (the loss scale and the layout decide),
        // a global norm between 20 and 330: clip_norm 1 scales every gradient down,
        // 1000 leaves them as they are (the factor is exactly 1).
        // Step 3's overflow: skipped with loss scaling, the record's norm inf; without,
        // the factor stays 1 on both backends.
        c.momentum = 0.9f;
        c.weight_decay = 0.01f;
        c.clip_norm = 1.0f;
        opts.push_back({"clip/sgd_momentum_wd_clipped", c});
        c.clip_norm = 1000.0f;
        opts.push_back({"clip/sgd_momentum_wd_unclipped", c});
        a.type = OptimizerType::Adam;
        a.clip_norm = 1.0f;
        opts.push_back({"clip/adam_wd_clipped", a});
        a.type = OptimizerType::AdamW;
        opts.push_back({"clip/adamw_clipped", a});
    }
    for (const Opt& o : opts)
        for (const Layout& l : layouts) {
            if (l.mode == LossScaleMode::Static && o.cfg.type != OptimizerType::SGD) continue;
            run(std::string("optimizer/") + o.name + "/" + l.name, [&](Verdict& v, Rng& rng) {
                const bool adam = o.cfg.type != OptimizerType::SGD;
                const bool state1 = adam || o.cfg.momentum != 0.0f;
                const bool split = l.master == DType::I16;
                const DType state_t = split ? DType::F32 : l.master;
                // Sizes: two chunks and an odd tail, a bias-like vector, a scalar.
                const std::size_t sizes[] = {20003, 77, 1};
                std::vector<ParamTwin> params(std::size(sizes));
                for (std::size_t p = 0; p < params.size(); ++p) {
                    ParamTwin& q = params[p];
                    if (split) {
                        const auto w = rng.values(sizes[p], DType::F32, -1.0f, 1.0f);
                        std::vector<float> hi(w.size()), lo(w.size());
                        for (std::size_t i = 0; i < w.size(); ++i) {
                            const hd::SplitMaster h = hd::split_master(w[i]);
                            hi[i] = hd::bits_float(std::uint32_t(h.hi) << 16);
                            lo[i] = float(h.lo);
                        }
                        q.master = make(lo, DType::I16);
                        q.low = make(hi, DType::BF16);
                    } else {
                        q.master = make(rng.values(sizes[p], l.master, -1.0f, 1.0f), l.master);
                    }
                    q.grad = twin(sizes[p], l.grad);
                    if (l.low && !split) {
                        q.low = twin(sizes[p], l.low_t);
                        poison(q.low);
                    }
                    if (state1) {
                        q.state1 = twin(sizes[p], state_t);
                        fill(q.state1, 0.0f);
                    }
                    if (adam) {
                        q.state2 = twin(sizes[p], state_t);
                        fill(q.state2, 0.0f);
                    }
                }
                const TwinTables tables = prepare_params(params);
                ScalerParams sp;
                sp.mode = l.mode;
                sp.growth_interval = 2; // growth after two clean steps
                const float init = l.mode == LossScaleMode::None     ? 1.0f
                                   : l.mode == LossScaleMode::Static ? 128.0f
                                                                     : 1024.0f;
                Twin scaler = make({init, 0.0f, 0.0f, 0.0f}, DType::F32);
                const std::size_t off = k_record_fields;
                Twin record = twin(2 * k_record_fields, DType::F32);
                fill(record, k_sentinel);

                // Master/state: fp32 agrees to a few ulps (fused multiply-adds on the GPU);
                // 16-bit storage one ulp apart where those land on a rounding boundary.
                Tol wtol = state_t == DType::F32 ? Tol{1e-6, 1e-5} : Tol{1e-3, out_rtol(l.master)};
                // Without loss scaling nothing skips the overflowing step: the inf/NaN
                // reaches those weights on both backends.
                wtol.nan_equal = l.mode == LossScaleMode::None;
                Tol ltol = Tol{1e-6, out_rtol(l.low_t)};
                ltol.nan_equal = wtol.nan_equal; // and their 16-bit copies
                const float gscale = l.mode == LossScaleMode::None ? 1.0f : 512.0f;
                // Step 3 overflows: skipped (when scaling), scale halved, growth reset.
                for (int step = 1; step <= 4; ++step) {
                    v.context("step " + std::to_string(step));
                    for (std::size_t p = 0; p < params.size(); ++p) {
                        std::vector<float> g = rng.values(sizes[p], l.grad, -gscale, gscale);
                        if (step == 3 && p == 0) {
                            g[12345] = k_inf;
                            g[20002] = k_nan;
                        }
                        set(params[p].grad, g);
                    }
                    set(record, {k_nan, k_nan, k_nan, k_nan}, off + k_rec_scale);
                    on_both([&](Backend& b, Side on) {
                        b.optimizer_step(tables(on), o.cfg, sp, on(scaler), on(record), off);
                    });
                    compare(v, "scaler", scaler, k_exact);
                    compare_step_record(v, record, off);
                    for (std::size_t p = 0; p < params.size(); ++p) {
                        const std::string i = std::string(1, '[') + std::to_string(p) + ']';
                        if (split)
                            v.compare("master" + i, joined(m_ref, params[p], true),
                                      joined(m_cand, params[p], false), wtol);
                        else
                            compare(v, "master" + i, params[p].master, wtol);
                        if (state1) compare(v, "state1" + i, params[p].state1, wtol);
                        if (adam) compare(v, "state2" + i, params[p].state2, wtol);
                        if (l.low) compare(v, "low" + i, params[p].low, ltol);
                    }
                }
                v.context("");
            });
        }
}

// ---- optimizer: float16 and float32 slots in one table ----------------------------------

// Under the pure `fp16` policy the weights are float16 while batch-norm parameters stay
// float32, so one parameter table holds both layouts; an overflow in either kind of
// slot must skip the whole step.
void Checker::optimizer_mixed_dtype_checks()
{
    OptimizerConfig sgd;
    sgd.type = OptimizerType::SGD;
    sgd.lr = 0.05f;
    sgd.momentum = 0.9f;
    OptimizerConfig adam;
    adam.type = OptimizerType::Adam;
    adam.lr = 0.01f;
    // Clipping over a table of two layouts: the norm sums both groups' chunks.
    OptimizerConfig sgd_clip = sgd;
    sgd_clip.clip_norm = 1.0f;
    OptimizerConfig adam_clip = adam;
    adam_clip.clip_norm = 1.0f;
    const std::pair<const char*, OptimizerConfig> opts[] = {{"sgd_momentum", sgd},
                                                            {"adam", adam},
                                                            {"clip/sgd_momentum", sgd_clip},
                                                            {"clip/adam", adam_clip}};
    for (const auto& [opt_name, cfg] : opts)
        for (int bad_slot : {0, 1})
            run(std::string("optimizer/") + opt_name + "/mixed_f16_f32_slots/overflow_in_" +
                    (bad_slot == 0 ? "f16" : "f32"),
                [&, cfg = cfg](Verdict& v, Rng& rng) {
                    struct Slot {
                        DType t;
                        std::size_t n;
                    };
                    const Slot slots[] = {
                        {DType::F16, 20003}, {DType::F32, 64}, {DType::F16, 64}, {DType::F32, 1}};
                    const bool adam_like = cfg.type != OptimizerType::SGD;
                    std::vector<ParamTwin> params(std::size(slots));
                    for (std::size_t p = 0; p < params.size(); ++p) {
                        const Slot& sl = slots[p];
                        params[p].master = make(rng.values(sl.n, sl.t, -1.0f, 1.0f), sl.t);
                        params[p].grad = twin(sl.n, sl.t);
                        params[p].state1 = twin(sl.n, sl.t);
                        fill(params[p].state1, 0.0f);
                        if (adam_like) {
                            params[p].state2 = twin(sl.n, sl.t);
                            fill(params[p].state2, 0.0f);
                        }
                    }
                    const TwinTables tables = prepare_params(params);
                    ScalerParams sp;
                    sp.mode = LossScaleMode::Dynamic;
                    sp.growth_interval = 2;
                    Twin scaler = make({1024.0f, 0.0f, 0.0f, 0.0f}, DType::F32);
                    const std::size_t off = k_record_fields;
                    Twin record = twin(2 * k_record_fields, DType::F32);
                    fill(record, k_sentinel);
                    for (int step = 1; step <= 4; ++step) {
                        v.context("step " + std::to_string(step));
                        for (std::size_t p = 0; p < params.size(); ++p) {
                            std::vector<float> g =
                                rng.values(slots[p].n, slots[p].t, -512.0f, 512.0f);
                            // Step 3 overflows in one slot: every slot's update is skipped.
                            if (step == 3 && int(p) == bad_slot) {
                                g[3] = k_inf;
                                g[5] = k_nan;
                            }
                            set(params[p].grad, g);
                        }
                        set(record, {k_nan, k_nan, k_nan, k_nan}, off + k_rec_scale);
                        on_both([&](Backend& b, Side on) {
                            b.optimizer_step(tables(on), cfg, sp, on(scaler), on(record), off);
                        });
                        compare(v, "scaler", scaler, k_exact);
                        compare_step_record(v, record, off);
                        for (std::size_t p = 0; p < params.size(); ++p) {
                            // As in the optimizer checks: fp32 a few ulps (fused multiply-
                            // adds), fp16 one ulp where a value lands on a rounding boundary.
                            const Tol wtol = slots[p].t == DType::F32
                                                 ? Tol{1e-6, 1e-5}
                                                 : Tol{1e-3, out_rtol(slots[p].t)};
                            const std::string i = std::string(1, '[') + std::to_string(p) + ']';
                            compare(v, "master" + i, params[p].master, wtol);
                            compare(v, "state1" + i, params[p].state1, wtol);
                            if (adam_like) compare(v, "state2" + i, params[p].state2, wtol);
                        }
                    }
                    v.context("");
                });
}

// ---- residual sum ------------------------------------------------------------------------------

void Checker::add_activation_checks()
{
    // One IEEE addition, then the same rounding: exact in every dtype.
    for (Activation act : {Activation::None, Activation::Relu})
        for (DType t : k_floats)
            for (std::size_t n : {std::size_t(10007), std::size_t(4096), std::size_t(3)})
                run(std::string("add_activation/") + activation_text(act) + "/" +
                        dtype_short_name(t) + "/" + std::to_string(n),
                    [&](Verdict& v, Rng& rng) {
                        Twin a = make(rng.values(n, t, -2.0f, 2.0f), t);
                        Twin b = make(rng.values(n, t, -2.0f, 2.0f), t);
                        Twin y = twin(n, t);
                        poison(y);
                        on_both([&](Backend& be, Side on) {
                            be.add_activation(act, on(a), on(b), on(y));
                        });
                        compare(v, "y", y, k_exact);
                        // In place, as a residual block adds its shortcut into the body's output.
                        on_both([&](Backend& be, Side on) {
                            be.add_activation(act, on(a), on(b), on(a));
                        });
                        compare(v, "y (in place)", a, k_exact);
                    });
}

// ---- convolution -------------------------------------------------------------------------------

// sum |a * b| over the terms of every output of the three convolutions: the magnitude
// their accumulation errors scale with (each is at most a few roundings per term).
struct ConvScales {
    std::vector<double> y, dx, dw;
};
ConvScales conv_abs_sums(const ConvGeometry& g, const std::vector<float>& x,
                         const std::vector<float>& w, const std::vector<float>& dy)
{
    ConvScales s;
    s.y.assign(g.y_count(), 0.0);
    s.dx.assign(g.x_count(), 0.0);
    s.dw.assign(g.w_count(), 0.0);
    for (int n = 0; n < g.batch; ++n)
        for (int p = 0; p < g.out_h; ++p)
            for (int q = 0; q < g.out_w; ++q)
                for (int r = 0; r < g.kernel_h; ++r) {
                    const int ih = p * g.stride_h - g.pad_h + r;
                    if (ih < 0 || ih >= g.in_h) continue;
                    for (int t = 0; t < g.kernel_w; ++t) {
                        const int iw = q * g.stride_w - g.pad_w + t;
                        if (iw < 0 || iw >= g.in_w) continue;
                        const std::size_t xo =
                            ((std::size_t(n) * g.in_h + ih) * g.in_w + iw) * g.in_c;
                        for (int k = 0; k < g.out_c; ++k) {
                            const std::size_t yi =
                                ((std::size_t(n) * g.out_h + p) * g.out_w + q) * g.out_c + k;
                            const std::size_t wo =
                                ((std::size_t(k) * g.kernel_h + r) * g.kernel_w + t) * g.in_c;
                            const double d = std::fabs(dy[yi]);
                            double acc = 0.0;
                            for (int c = 0; c < g.in_c; ++c) {
                                const double xv = std::fabs(x[xo + c]), wv = std::fabs(w[wo + c]);
                                acc += xv * wv;
                                s.dx[xo + c] += d * wv;
                                s.dw[wo + c] += d * xv;
                            }
                            s.y[yi] += acc;
                        }
                    }
                }
    return s;
}

// Accumulation error relative to sum |a * b|. fp32: both sides sum in fp32 in different
// orders: 3e-5 (a direction on cuDNN's FFT or Winograd is held to its tensor's largest
// scale instead: k_transform_tol below). TF32: the reference rounds each operand to nearest, cuDNN may
// truncate (or not use TF32 at all): a product moves by at most 2^-10 + 2^-9 of its size,
// so 3e-3 bounds the difference. 16-bit: exact products and fp32 accumulation, but some
// cuDNN algorithms keep transformed operands in the storage type: four units of its
// roundoff.
double conv_accumulation_tol(DType t, MathMode m)
{
    if (t == DType::F32) return m == MathMode::TF32 ? 3e-3 : 3e-5;
    return 4.0 * unit_roundoff(t);
}

// cuDNN's FFT and Winograd algorithms (the legacy fft, fft_tiling, winograd and
// winograd_nonfused; graph engines whose notes say so, which their names then carry)
// round in a transformed domain, where every output mixes the whole tile: their error
// follows the largest of the tensor's scales, not each element's own. A timed plan picks
// them only now and then: 6 of 32 runs of the case below, four processes sharing the GPU.
// Measured on an H100 for fp32 2x12x12x8 -> 8, 5x5 (bench/NOTES.md 43): up to 3.2e-4 of
// the largest scale with FMA math, where the per-element bound above failed hundreds of
// elements; 2e-3 leaves six times that.
constexpr double k_transform_tol = 2e-3;

bool transform_algo(const std::string& algo)
{
    return algo.find("fft") != std::string::npos || algo.find("winograd") != std::string::npos;
}

// Every element's scale raised to the tensor's largest: what a transform algorithm's
// output is compared against.
std::vector<double> largest_scales(const std::vector<double>& own)
{
    if (own.empty()) return own;
    return std::vector<double>(own.size(), *std::max_element(own.begin(), own.end()));
}

std::string conv_text(const ConvGeometry& g)
{
    return std::to_string(g.batch) + "x" + std::to_string(g.in_h) + "x" + std::to_string(g.in_w) +
           "x" + std::to_string(g.in_c) + "->" + std::to_string(g.out_c) + "/k" +
           std::to_string(g.kernel_h) + "x" + std::to_string(g.kernel_w) + "_s" +
           std::to_string(g.stride_h) + "x" + std::to_string(g.stride_w) + "_p" +
           std::to_string(g.pad_h) + "x" + std::to_string(g.pad_w);
}

struct ConvMode {
    DType t;
    MathMode math;
};
const ConvMode k_conv_modes[] = {{DType::F32, MathMode::Pedantic},
                                 {DType::F32, MathMode::TF32},
                                 {DType::F16, MathMode::Reduced},
                                 {DType::BF16, MathMode::Reduced}};

// path: the directions as the planner chose them; backward data forced onto the forward
// convolution of dy with flipped weights (MIXLAB_CONV_BWD_AS_FWD=1, stride-1 geometries
// only); every direction forced onto the NCHW route (MIXLAB_CONV_LAYOUT=nchw, the
// operands transposed around cuDNN's NCHW algorithms) or onto the channel-padded one
// (MIXLAB_CONV_PAD_CHANNELS=1, input channels not a multiple of 8 only); every direction
// forced onto cuDNN's graph API (MIXLAB_CONV_API=graph). All against the same reference.
void Checker::conv_check(const ConvGeometry& g, DType t, MathMode math, ConvPath path)
{
    const bool as_fwd = path == ConvPath::BwdAsFwd, nchw = path == ConvPath::Nchw,
               padded = path == ConvPath::PadChannels, graph_api = path == ConvPath::GraphApi;
    run(std::string(as_fwd      ? "conv2d_bwd_as_fwd/"
                    : nchw      ? "conv2d_nchw/"
                    : padded    ? "conv2d_pad_channels/"
                    : graph_api ? "conv2d_graph/"
                                : "conv2d/") +
            dtype_short_name(t) + "/" + math_mode_name(math) + "/" + conv_text(g),
        [&](Verdict& v, Rng& rng) {
            std::unique_ptr<ScopedEnv> force;
            if (as_fwd) force = std::make_unique<ScopedEnv>("MIXLAB_CONV_BWD_AS_FWD", "1");
            if (nchw) force = std::make_unique<ScopedEnv>("MIXLAB_CONV_LAYOUT", "nchw");
            if (padded) force = std::make_unique<ScopedEnv>("MIXLAB_CONV_PAD_CHANNELS", "1");
            if (graph_api) force = std::make_unique<ScopedEnv>("MIXLAB_CONV_API", "graph");
            const std::vector<float> x = rng.values(g.x_count(), t, -1.0f, 1.0f);
            const std::vector<float> w = rng.values(g.w_count(), t, -1.0f, 1.0f);
            const std::vector<float> dy = rng.values(g.y_count(), t, -1.0f, 1.0f);
            Twin tx = make(x, t), tw = make(w, t), tdy = make(dy, t);
            Twin y = twin(g.y_count(), t), dx = twin(g.x_count(), t), dw = twin(g.w_count(), t);
            poison(y);
            poison(dx);
            poison(dw);
            ConvPlanInfo plan;
            on_both([&](Backend& b, Side on) {
                const ConvPlanInfo info = b.conv2d_prepare(g, t, math);
                if (!on.ref) plan = info;
                b.conv2d_forward(g, on(tx), on(tw), math, on(y));
                b.conv2d_backward_data(g, on(tdy), on(tw), math, on(dx));
                b.conv2d_backward_filter(g, on(tx), on(tdy), math, on(dw));
            });
            const ConvScales s = conv_abs_sums(g, x, w, dy);
            // Outputs round once to t: one unit of roundoff of the scale on top; a
            // direction on a transform algorithm against its tensor's largest scale.
            const double f = conv_accumulation_tol(t, math) + unit_roundoff(t);
            const Tol tol{1e-30, out_rtol(t)};
            const auto check_direction = [&](const char* what, Twin& out,
                                             const std::vector<double>& own,
                                             const std::string& algo) {
                if (!transform_algo(algo)) {
                    compare(v, what, out, tol, &own, f);
                    return;
                }
                const std::vector<double> scales = largest_scales(own);
                v.context(std::string(what) + " on " + algo + ", against its largest scale");
                compare(v, what, out, tol, &scales, f + k_transform_tol);
                v.context("");
            };
            check_direction("y", y, s.y, plan.forward_algo);
            check_direction("dx", dx, s.dx, plan.backward_data_algo);
            check_direction("dw", dw, s.dw, plan.backward_filter_algo);
            if (as_fwd) {
                // The forced path must really have run (unless MIXLAB_CONV_DIRECT put every
                // direction on the direct kernels): else this would only repeat conv2d/.
                const std::string& algo = plan.backward_data_algo;
                const bool flipped = algo.find("flipped weights") != std::string::npos;
                const bool direct = algo.find("MIXLAB_CONV_DIRECT") != std::string::npos;
                if (m_cand.info().backend == BackendKind::Cuda && !flipped && !direct)
                    v.fail("MIXLAB_CONV_BWD_AS_FWD=1 but backward data ran " + algo);
                v.note("backward data " + algo);
            }
            if ((nchw || padded) && m_cand.info().backend == BackendKind::Cuda) {
                // Every direction cuDNN has an algorithm for on the route must have run there.
                const char* route = nchw ? "NCHW" : "padded";
                for (const std::string* algo :
                     {&plan.forward_algo, &plan.backward_data_algo, &plan.backward_filter_algo})
                    if (algo->find(route) == std::string::npos &&
                        algo->find("direct kernel") == std::string::npos)
                        v.fail(std::string("forced onto the ") + route +
                               " route but a direction ran " + *algo);
                v.note("forward " + plan.forward_algo + "; backward data " +
                       plan.backward_data_algo + "; backward filter " + plan.backward_filter_algo);
            }
            if (graph_api && m_cand.info().backend == BackendKind::Cuda) {
                // Every direction must have run an engine of the graph API: a direction it
                // has nothing for names the reason in its plan text, and fails here. Only
                // MIXLAB_CONV_DIRECT (every direction on the direct kernels) is exempt.
                for (const std::string* algo :
                     {&plan.forward_algo, &plan.backward_data_algo, &plan.backward_filter_algo})
                    if (algo->rfind("graph engine", 0) != 0 &&
                        algo->find("MIXLAB_CONV_DIRECT") == std::string::npos)
                        v.fail("forced onto cuDNN's graph API but a direction ran " + *algo);
                v.note("forward " + plan.forward_algo + "; backward data " +
                       plan.backward_data_algo + "; backward filter " + plan.backward_filter_algo);
            }
        });
}

void Checker::conv_checks()
{
    const ConvGeometry cases[] = {
        conv_geometry_of(3, 9, 11, 5, 7, 3, 3, 1, 1, 1, 1),   // odd sizes, "same" padding
        conv_geometry_of(2, 15, 13, 3, 16, 3, 3, 2, 2, 1, 1), // stride 2 on 3 channels
        conv_geometry_of(2, 20, 19, 3, 16, 7, 7, 2, 2, 3, 3), // an ImageNet-style stem
        conv_geometry_of(4, 8, 8, 64, 32, 1, 1, 1, 1, 0, 0),  // 1x1 over 64 channels
        conv_geometry_of(2, 10, 9, 16, 32, 1, 1, 2, 2, 0, 0), // a residual shortcut projection
        conv_geometry_of(2, 8, 8, 64, 64, 3, 3, 1, 1, 1, 1),  // ResNet's 64 -> 64 block conv
        conv_geometry_of(2, 12, 12, 8, 8, 5, 5, 1, 1, 0, 0),  // 5x5, no padding (LeNet)
        conv_geometry_of(2, 9, 7, 4, 6, 3, 1, 2, 1, 1, 0),    // non-square kernel, stride, pad
    };
    for (const ConvGeometry& g : cases)
        for (const ConvMode& md : k_conv_modes) conv_check(g, md.t, md.math, ConvPath::Planned);
    // The backward-data-as-forward path where it applies (stride 1, pad <= kernel - 1),
    // in every mode: the planner takes it only where it wins, so force it here.
    for (const ConvGeometry& g : cases)
        if (g.stride_h == 1 && g.stride_w == 1 && g.pad_h < g.kernel_h && g.pad_w < g.kernel_w)
            for (const ConvMode& md : k_conv_modes)
                conv_check(g, md.t, md.math, ConvPath::BwdAsFwd);
    // The NCHW route in every mode (the planner takes it only for fp32, where it wins).
    for (const ConvGeometry& g : cases)
        for (const ConvMode& md : k_conv_modes) conv_check(g, md.t, md.math, ConvPath::Nchw);
    // The channel-padded route where channels are not a multiple of 8, in every mode (the
    // planner considers it for 16-bit data only).
    for (const ConvGeometry& g : cases)
        if (g.in_c % 8 != 0)
            for (const ConvMode& md : k_conv_modes)
                conv_check(g, md.t, md.math, ConvPath::PadChannels);
    // cuDNN's graph API in every mode on every geometry (the planner takes it per direction
    // only where it times faster than the legacy API's pick).
    for (const ConvGeometry& g : cases)
        for (const ConvMode& md : k_conv_modes) conv_check(g, md.t, md.math, ConvPath::GraphApi);
}

// ResNet-18's 3x3 64 -> 64 convolution on 32x32 images at batch 128, per policy: the plan
// the candidate chooses (in the check's detail), that a second prepare reuses it, and
// that all three directions write every output with finite values. On the candidate
// alone: the CPU reference would need minutes for it.
void Checker::conv_plan_checks()
{
    const ConvGeometry g = conv_geometry_of(128, 32, 32, 64, 64, 3, 3, 1, 1, 1, 1);
    for (const ConvMode& md : k_conv_modes)
        run(std::string("conv2d_plan/") + dtype_short_name(md.t) + "/" + math_mode_name(md.math) +
                "/resnet18_3x3_64_b128",
            [&](Verdict& v, Rng& rng) {
                const DType t = md.t;
                const ConvPlanInfo first = m_cand.conv2d_prepare(g, t, md.math);
                const ConvPlanInfo again = m_cand.conv2d_prepare(g, t, md.math);
                if (again.forward_algo != first.forward_algo ||
                    again.backward_data_algo != first.backward_data_algo ||
                    again.backward_filter_algo != first.backward_filter_algo ||
                    again.workspace_bytes != first.workspace_bytes)
                    v.fail("a second conv2d_prepare chose another plan: plans are not cached");
                Buffer x = m_cand.alloc(g.x_count(), t), w = m_cand.alloc(g.w_count(), t);
                Buffer dy = m_cand.alloc(g.y_count(), t);
                // Small values: fp16 sums over 128*32*32 terms (the filter gradient) stay
                // far from its range.
                const std::vector<float> hx = rng.values(x.count(), t, -0.5f, 0.5f);
                const std::vector<float> hw = rng.values(w.count(), t, -0.5f, 0.5f);
                const std::vector<float> hdy = rng.values(dy.count(), t, -0.05f, 0.05f);
                m_cand.upload_f32(x, hx.data(), hx.size());
                m_cand.upload_f32(w, hw.data(), hw.size());
                m_cand.upload_f32(dy, hdy.data(), hdy.size());
                Buffer y = m_cand.alloc(g.y_count(), t), dx = m_cand.alloc(g.x_count(), t);
                Buffer dw = m_cand.alloc(g.w_count(), t);
                for (Buffer* b : {&y, &dx, &dw}) m_cand.fill(*b, k_nan);
                m_cand.conv2d_forward(g, x, w, md.math, y);
                m_cand.conv2d_backward_data(g, dy, w, md.math, dx);
                m_cand.conv2d_backward_filter(g, x, dy, md.math, dw);
                const std::pair<const char*, Buffer*> outs[] = {
                    {"y", &y}, {"dx", &dx}, {"dw", &dw}};
                for (const auto& [what, b] : outs) {
                    const std::vector<float> got = get(m_cand, *b);
                    const auto bad = std::count_if(got.begin(), got.end(),
                                                   [](float e) { return !std::isfinite(e); });
                    if (bad)
                        v.fail(std::string(what) + ": " + std::to_string(bad) + " of " +
                               std::to_string(got.size()) + " elements not written or not finite");
                }
                v.note("forward " + first.forward_algo + ", backward data " +
                       first.backward_data_algo + ", backward filter " +
                       first.backward_filter_algo + ", tensor cores " +
                       (first.tensor_cores ? "yes" : "no") + ", workspace " +
                       std::to_string(first.workspace_bytes) + " bytes");
            });
}

// ---- batch normalisation --------------------------------------------------------------------

void Checker::batchnorm_checks()
{
    struct Case {
        int rows, channels;
        Activation act;
    };
    // Few rows and channels; a full tile of 64 channels; many rows (the GPU splits them
    // across blocks) over a channel count that is not a multiple of 32; two rows. Each
    // also with the fused relu (act Relu), as the network runs a BN followed by a relu.
    constexpr Activation none = Activation::None, relu = Activation::Relu;
    const Case cases[] = {{70, 3, none}, {256, 64, none}, {20000, 40, none}, {2, 5, none},
                          {70, 3, relu}, {256, 64, relu}, {20000, 40, relu}, {2, 5, relu}};
    for (const Case& c : cases)
        for (DType t : k_floats)
            run(std::string("batchnorm/") + dtype_short_name(t) + "/" + std::to_string(c.rows) +
                    "x" + std::to_string(c.channels) + (c.act == relu ? "/relu" : ""),
                [&](Verdict& v, Rng& rng) {
                    const Activation act = c.act;
                    const std::size_t n = std::size_t(c.rows) * c.channels, nc = c.channels;
                    // Off-centre inputs: the mean is not small against the spread.
                    const std::vector<float> x = rng.values(n, t, -0.5f, 3.5f);
                    Twin tx = make(x, t);
                    Twin scale = make(rng.values(nc, DType::F32, 0.5f, 1.5f), DType::F32);
                    Twin shift = make(rng.values(nc, DType::F32, -0.5f, 0.5f), DType::F32);
                    const std::vector<float> rm0 = rng.values(nc, DType::F32, -0.2f, 0.2f);
                    const std::vector<float> rv0 = rng.values(nc, DType::F32, 0.5f, 1.5f);
                    Twin rm = make(rm0, DType::F32), rv = make(rv0, DType::F32);
                    Twin mean = twin(nc, DType::F32), inv_std = twin(nc, DType::F32);
                    Twin y = twin(n, t);
                    poison(mean);
                    poison(inv_std);
                    poison(y);
                    const float momentum = 0.1f, eps = 1e-5f;
                    v.context("train");
                    on_both([&](Backend& b, Side on) {
                        b.batchnorm_forward_train(act, on(tx), c.rows, c.channels, on(scale),
                                                  on(shift), momentum, eps, on(rm), on(rv),
                                                  on(mean), on(inv_std), on(y));
                    });
                    // Statistics: the reference sums in double, the GPU in fp32 over short
                    // runs (about 32 values per thread) combined in double: a few 2^-24 of
                    // the values' size (up to 3.5).
                    compare(v, "saved_mean", mean, Tol{2e-6, 2e-6});
                    compare(v, "saved_inv_std", inv_std, Tol{0.0, 1e-5});
                    compare(v, "running_mean", rm, Tol{1e-6, 2e-6});
                    compare(v, "running_var", rv, Tol{1e-6, 1e-5});
                    // y = (x - mean) * inv_std * scale + shift: statistics a few 1e-7 apart
                    // (relative) move y by that fraction of scale * inv_std * (|x - mean| +
                    // |mean|) + |shift|. Per element, because two rows can give a tiny
                    // variance and so a large inv_std. 16-bit outputs round once more. The
                    // relu moves nothing further (it clamps both sides alike).
                    const std::vector<float> hm_train = get(m_ref, mean.ref);
                    const std::vector<float> hs_train = get(m_ref, inv_std.ref);
                    const std::vector<float> hg = get(m_ref, scale.ref);
                    const std::vector<float> hb = get(m_ref, shift.ref);
                    std::vector<double> y_scale(n);
                    for (std::size_t i = 0; i < n; ++i) {
                        const std::size_t ch = i % nc;
                        y_scale[i] =
                            double(hg[ch]) * hs_train[ch] *
                                (std::fabs(x[i] - hm_train[ch]) + std::fabs(hm_train[ch])) +
                            std::fabs(hb[ch]);
                    }
                    // fp16 values below 2^-14 are subnormal, spaced 2^-24 apart: two sides
                    // whose fp32 results straddle a rounding point land one step apart,
                    // more than any relative tolerance allows at that size.
                    const Tol out_tol{t == DType::F16 ? 0x1p-24 : 1e-30,
                                      t == DType::F32 ? 1e-6 : out_rtol(t)};
                    compare(v, "y", y, out_tol, &y_scale, 1e-5);
                    // Backward's relu mask: the reference's output, on both sides.
                    const std::vector<float> y_train = get(m_ref, y.ref);

                    v.context("eval");
                    set(rm, rm0);
                    set(rv, rv0);
                    poison(y);
                    on_both([&](Backend& b, Side on) {
                        b.batchnorm_forward_eval(act, on(tx), c.rows, c.channels, on(scale),
                                                 on(shift), on(rm), on(rv), eps, on(y));
                    });
                    // The same fp32 expression in the same order on both: exact.
                    compare(v, "y", y, k_exact);

                    v.context("backward");
                    // Both sides get the reference's saved statistics.
                    const std::vector<float> hm = get(m_ref, mean.ref);
                    const std::vector<float> hs = get(m_ref, inv_std.ref);
                    set(mean, hm);
                    set(inv_std, hs);
                    set(y, y_train);
                    std::vector<float> dy = rng.values(n, t, -1.0f, 1.0f);
                    Twin tdy = make(dy, t);
                    // What the passes see of dy with the relu fused: 0 where y <= 0.
                    if (act == Activation::Relu)
                        for (std::size_t i = 0; i < n; ++i)
                            if (!(y_train[i] > 0.0f)) dy[i] = 0.0f;
                    Twin dx = twin(n, t), dscale = twin(nc, DType::F32),
                         dshift = twin(nc, DType::F32);
                    poison(dx);
                    poison(dscale);
                    poison(dshift);
                    on_both([&](Backend& b, Side on) {
                        b.batchnorm_backward(act, on(tx), on(y), on(tdy), c.rows, c.channels,
                                             on(scale), on(mean), on(inv_std), on(dx), on(dscale),
                                             on(dshift));
                    });
                    std::vector<double> abs_dy(nc, 0.0), abs_dy_xhat(nc, 0.0), sum_dy(nc, 0.0),
                        sum_dy_xhat(nc, 0.0);
                    for (std::size_t i = 0; i < n; ++i) {
                        const std::size_t ch = i % nc;
                        const double xhat = (double(x[i]) - hm[ch]) * hs[ch];
                        abs_dy[ch] += std::fabs(dy[i]);
                        abs_dy_xhat[ch] += std::fabs(dy[i] * xhat);
                        sum_dy[ch] += dy[i];
                        sum_dy_xhat[ch] += dy[i] * xhat;
                    }
                    // Column sums in different orders and precisions (fp32 runs of ~32
                    // terms on the GPU, double on the CPU): 1e-5 of sum |terms|.
                    compare(v, "dshift", dshift, Tol{1e-30, 1e-6}, &abs_dy, 1e-5);
                    compare(v, "dscale", dscale, Tol{1e-30, 1e-6}, &abs_dy_xhat, 1e-5);
                    // dx = gain * (dy - mean(dy) - xhat * mean(dy * xhat)). The fp32
                    // arithmetic agrees to a few ulps of the largest term: 2e-5 of gain *
                    // (|dy| + |mean(dy)| + |xhat * mean(dy * xhat)|). The two means are
                    // dshift / rows and dscale / rows and carry their error, 1e-5 of sum
                    // |terms| / rows, which does not shrink when the sums cancel: where the
                    // relu zeroes dy and x is near its mean, dx is the small difference of
                    // two means (seed 13 on the H200: dx -1.5e-6 from means of 1.2e-6 whose
                    // terms average 0.25, off by 2e-10 against an allowance of 3e-11 when
                    // the scale used |mean| alone).
                    std::vector<double> dx_scale(n);
                    for (std::size_t i = 0; i < n; ++i) {
                        const std::size_t ch = i % nc;
                        const double xhat = (double(x[i]) - hm[ch]) * hs[ch];
                        const double arithmetic = std::fabs(dy[i]) +
                                                  std::fabs(sum_dy[ch]) / c.rows +
                                                  std::fabs(xhat * sum_dy_xhat[ch]) / c.rows;
                        const double means =
                            (abs_dy[ch] + std::fabs(xhat) * abs_dy_xhat[ch]) / c.rows;
                        // In units of the 2e-5 factor: the means' 1e-5 is half of it.
                        dx_scale[i] = double(hg[ch]) * hs[ch] * (arithmetic + 0.5 * means);
                    }
                    compare(v, "dx", dx, out_tol, &dx_scale, 2e-5);
                    v.context("");
                });
}

// ---- pooling ------------------------------------------------------------------------------------

void Checker::pool_checks()
{
    struct Case {
        const char* name;
        PoolGeometry g;
        bool ties; // values from {0, 1, 2} (a ReLU's output in miniature): many equal maxima
    };
    const Case cases[] = {
        {"2x2_s2", pool_geometry_of(3, 9, 9, 5, 2, 2, 2, 2, 0, 0), false},
        {"3x3_s2_p1", pool_geometry_of(2, 11, 10, 7, 3, 3, 2, 2, 1, 1), false},
        {"3x3_s2_p1_ties", pool_geometry_of(2, 11, 10, 7, 3, 3, 2, 2, 1, 1), true},
        {"3x3_s1_p1", pool_geometry_of(2, 6, 6, 4, 3, 3, 1, 1, 1, 1), false},
        {"2x3_s2x1_p1x0", pool_geometry_of(2, 7, 5, 3, 2, 3, 2, 1, 1, 0), false},
        {"2x2_s2_ties", pool_geometry_of(2, 8, 8, 16, 2, 2, 2, 2, 0, 0), true},
        {"global_4x4", pool_geometry_of(3, 4, 4, 64, 4, 4, 4, 4, 0, 0), false},
    };
    for (const Case& c : cases)
        for (PoolMode mode : {PoolMode::Max, PoolMode::Average})
            for (DType t : k_floats)
                run(std::string("pool/") + (mode == PoolMode::Max ? "max" : "avg") + "/" +
                        dtype_short_name(t) + "/" + c.name,
                    [&](Verdict& v, Rng& rng) {
                        const PoolGeometry& g = c.g;
                        const std::size_t nx = g.x_count(), ny = g.y_count();
                        std::vector<float> x = rng.values(nx, t, -2.0f, 2.0f);
                        if (c.ties)
                            for (float& e : x) e = float(std::max(0, rng.integer(-3, 3)));
                        Twin tx = make(x, t), y = twin(ny, t), dx = twin(nx, t);
                        Twin dy = make(rng.values(ny, t, -1.0f, 1.0f), t);
                        poison(y);
                        poison(dx);
                        on_both([&](Backend& b, Side on) {
                            b.pool_forward(mode, g, on(tx), on(y));
                            b.pool_backward(mode, g, on(tx), on(y), on(dy), on(dx));
                        });
                        // The same windows, comparisons and fp32 sums in the same order (the
                        // gradient to the first maximum in row-major order): exact.
                        compare(v, "y", y, k_exact);
                        compare(v, "dx", dx, k_exact);
                    });
}

// ---- sequences: embedding, LSTM ------------------------------------------------------------------

void Checker::embedding_checks()
{
    struct Case {
        int rows, dim, vocab;
    };
    // Few words for many rows (every id repeats, dim not a multiple of 8), and a
    // language-model batch (bptt 35 x batch 20, dim 200) over a 1000-word vocabulary.
    const Case cases[] = {{37, 13, 11}, {700, 200, 1000}};
    for (const Case& c : cases)
        for (DType t : k_floats)
            run(std::string("embedding/") + dtype_short_name(t) + "/" + std::to_string(c.rows) +
                    "x" + std::to_string(c.dim) + "_v" + std::to_string(c.vocab),
                [&](Verdict& v, Rng& rng) {
                    const std::size_t n = std::size_t(c.rows) * c.dim;
                    const std::size_t table_n = std::size_t(c.vocab) * c.dim;
                    std::vector<std::int32_t> ids(std::size_t(c.rows));
                    for (auto& id : ids) id = rng.integer(0, c.vocab);
                    Twin tids = twin(ids.size(), DType::I32);
                    const auto upload_ids = [&] {
                        on_both([&](Backend& b, Side on) {
                            b.upload_raw(on(tids), ids.data(), ids.size() * sizeof(std::int32_t));
                        });
                    };
                    upload_ids();
                    Twin table = make(rng.values(table_n, t, -1.0f, 1.0f), t);
                    Twin dy = make(rng.values(n, t, -1.0f, 1.0f), t);
                    Twin y = twin(n, t), dtable = twin(table_n, DType::F32);
                    poison(y);
                    poison(dtable);
                    // Backward first, while every id is in range. Both backends sum each
                    // id's rows in row order in fp32 (the contract): exact.
                    on_both([&](Backend& b, Side on) {
                        b.embedding_backward(on(dy), on(tids), c.rows, c.dim, c.vocab, false,
                                             on(dtable));
                    });
                    compare(v, "dtable (overwrite)", dtable, k_exact);
                    // Accumulating onto what a tied decoder wrote first.
                    set(dtable, rng.values(table_n, DType::F32, -1.0f, 1.0f));
                    on_both([&](Backend& b, Side on) {
                        b.embedding_backward(on(dy), on(tids), c.rows, c.dim, c.vocab, true,
                                             on(dtable));
                    });
                    compare(v, "dtable (accumulate)", dtable, k_exact);
                    // Forward, with two ids out of range: rows of zeros.
                    ids.front() = -1;
                    ids.back() = c.vocab;
                    upload_ids();
                    on_both([&](Backend& b, Side on) {
                        b.embedding_forward(on(table), on(tids), c.rows, c.dim, c.vocab, on(y));
                    });
                    compare(v, "y", y, k_exact); // a copy of table rows
                });
}

// LSTM outputs relative to the magnitude of the whole tensor (max |ref|): per element
// relative tolerances fail on the small values that cancellation leaves, and the
// recurrence carries every step's rounding into the later steps, so an error scales with
// the tensor's size rather than with each element. fp32: both sides sum in fp32 in
// different orders and the GPU's expf/tanhf differ by ulps; over 35 steps 1e-4 of the
// magnitude leaves a wide margin. TF32: operands rounded to 10 mantissa bits (2^-11
// relative per product), summed over up to 400 terms, and for dw over steps x batch
// terms of both signs: 1e-2. 16-bit: y, h and c are stored in the dtype at every step and
// the two sides may round a value one ulp apart; cuDNN may keep the cell state in float32
// where the reference rounds it, so the difference grows along the sequence: 20 units of
// roundoff of the magnitude (fp16 1e-2, bf16 8e-2).
double lstm_magnitude_tol(DType t, MathMode m)
{
    if (t == DType::F32) return m == MathMode::TF32 ? 1e-2 : 1e-4;
    return 20.0 * unit_roundoff(t);
}

std::string lstm_text(const LstmShape& s)
{
    return "T" + std::to_string(s.steps) + "xB" + std::to_string(s.batch) + "xI" +
           std::to_string(s.input) + "xH" + std::to_string(s.hidden);
}

void Checker::lstm_check(const LstmShape& s, DType t, MathMode math)
{
    run(std::string("lstm/") + dtype_short_name(t) + "/" + math_mode_name(math) + "/" +
            lstm_text(s),
        [&](Verdict& v, Rng& rng) {
            // PyTorch's initialisation range, 1/sqrt(hidden): gates neither saturated nor
            // linear, the regime a trained model runs in.
            const float k = 1.0f / std::sqrt(float(s.hidden));
            const std::size_t ns = s.state_count();
            Twin x = make(rng.values(s.x_count(), t, -1.0f, 1.0f), t);
            Twin w = make(rng.values(s.weight_count(), t, -k, k), t);
            Twin h0 = make(rng.values(ns, t, -0.5f, 0.5f), t);
            Twin c0 = make(rng.values(ns, t, -0.5f, 0.5f), t);
            Twin dy = make(rng.values(s.y_count(), t, -1.0f, 1.0f), t);
            Twin dhT = make(rng.values(ns, t, -1.0f, 1.0f), t);
            Twin dcT = make(rng.values(ns, t, -1.0f, 1.0f), t);
            // dw starts non-zero: the weight gradient is added to it.
            Twin dw = make(rng.values(s.weight_count(), t, -0.1f, 0.1f), t);
            Twin y = twin(s.y_count(), t), hT = twin(ns, t), cT = twin(ns, t);
            Twin dx = twin(s.x_count(), t), dh0 = twin(ns, t), dc0 = twin(ns, t);
            for (Twin* o : {&y, &hT, &cT, &dx, &dh0, &dc0}) poison(*o);
            const double f = lstm_magnitude_tol(t, math);
            const auto near = [&](const std::string& what, Twin& out) {
                const std::vector<float> ref = get(m_ref, out.ref), got = get(m_cand, out.cand);
                double mag = 0.0;
                for (float r : ref) mag = std::max(mag, double(std::fabs(r)));
                v.compare(what, ref, got, Tol{f * mag + 1e-30, 0.0});
            };

            std::unique_ptr<LstmPlan> ref_plan, cand_plan;
            on_both([&](Backend& b, Side on) {
                (on.ref ? ref_plan : cand_plan) = b.lstm_prepare(s, t, math);
            });
            const auto plan = [&](Side on) -> LstmPlan& { return on.ref ? *ref_plan : *cand_plan; };
            if (!(cand_plan->shape() == s)) v.fail("the plan's shape is not the one prepared");
            on_both([&](Backend& b, Side on) {
                b.lstm_forward(plan(on), on(x), on(h0), on(c0), on(w), true, on(y), on(hT), on(cT));
                b.lstm_backward_data(plan(on), on(y), on(dy), &on(dhT), &on(dcT), on(w), on(h0),
                                     on(c0), on(dx), &on(dh0), &on(dc0));
                b.lstm_backward_weights(plan(on), on(x), on(h0), on(y), on(dw));
            });
            near("y", y);
            near("hT", hT);
            near("cT", cT);
            near("dx", dx);
            near("dh0", dh0);
            near("dc0", dc0);
            near("dw (added)", dw);

            // Truncated BPTT: no gradient arrives at the final state (null is zero). A
            // training forward first: backward data consumes what its forward kept.
            for (Twin* o : {&dx, &dh0, &dc0}) poison(*o);
            on_both([&](Backend& b, Side on) {
                b.lstm_forward(plan(on), on(x), on(h0), on(c0), on(w), true, on(y), on(hT), on(cT));
                b.lstm_backward_data(plan(on), on(y), on(dy), nullptr, nullptr, on(w), on(h0),
                                     on(c0), on(dx), &on(dh0), &on(dc0));
            });
            near("dx (no dhT, dcT)", dx);
            near("dh0 (no dhT, dcT)", dh0);
            near("dc0 (no dhT, dcT)", dc0);

            // Evaluation: the same outputs without keeping anything for backward.
            for (Twin* o : {&y, &hT, &cT}) poison(*o);
            on_both([&](Backend& b, Side on) {
                b.lstm_forward(plan(on), on(x), on(h0), on(c0), on(w), false, on(y), on(hT),
                               on(cT));
            });
            near("y (inference)", y);
            near("hT (inference)", hT);
            near("cT (inference)", cT);
            v.note("tolerance " + num(f) + " of each tensor's largest magnitude");
        });
}

void Checker::lstm_checks()
{
    // Odd sizes (no multiple of 8: cuDNN off its tensor-core fast path), and the word
    // language model's small configuration (bptt 35, batch 20, emsize = nhid = 200).
    const LstmShape cases[] = {{5, 3, 7, 11}, {35, 20, 200, 200}};
    for (const LstmShape& s : cases)
        for (const ConvMode& md : k_conv_modes) lstm_check(s, md.t, md.math);
}

// ---- end to end -------------------------------------------------------------------------------

// Three training steps of a small MLP built from the ops alone (gather, dense + relu,
// dense, loss, backward GEMMs with bias grads, relu backward, SGD with loss scaling):
// the records and final weights must agree.
void Checker::end_to_end_checks()
{
    for (const bool mixed : {false, true})
        run(std::string("end_to_end/mlp/") + (mixed ? "mixed_fp16" : "fp32"), [&](Verdict& v,
                                                                                  Rng& rng) {
            const int n_samples = 64, sample = 48, hidden = 32, classes = 10, batch = 16;
            const ImageShape image{4, 4, 3}; // sample = 48 values
            const DType ct = mixed ? DType::F16 : DType::F32;
            const MathMode math = mixed ? MathMode::Reduced : MathMode::Pedantic;
            const auto images = rng.bytes(std::size_t(n_samples) * sample, 256);
            const auto labels = rng.bytes(std::size_t(n_samples), classes);
            std::vector<std::int32_t> order(n_samples);
            for (int i = 0; i < n_samples; ++i) order[i] = (i * 37) % n_samples;
            DataTwins data = upload_data(images, labels, order);
            Normalization norm;
            norm.channels = 3;
            for (int c = 0; c < 3; ++c) {
                norm.mean[c] = 0.45f;
                norm.inv_std[c] = 4.0f;
            }

            // Parameters: fp32 masters, fp32 grads, fp16 copies under mixed precision.
            const std::size_t shapes[] = {std::size_t(hidden) * sample, std::size_t(hidden),
                                          std::size_t(classes) * hidden, std::size_t(classes)};
            std::vector<ParamTwin> P(4); // SGD momentum in state1
            for (int p = 0; p < 4; ++p) {
                const float lim = p % 2 == 0 ? 0.25f : 0.05f;
                P[p].master = make(rng.values(shapes[p], DType::F32, -lim, lim), DType::F32);
                P[p].grad = twin(shapes[p], DType::F32);
                P[p].state1 = twin(shapes[p], DType::F32);
                fill(P[p].state1, 0.0f);
                if (mixed) {
                    P[p].low = twin(shapes[p], DType::F16);
                    on_both([&](Backend& b, Side on) { b.cast(on(P[p].master), on(P[p].low)); });
                }
            }
            const TwinTables tables = prepare_params(P);
            OptimizerConfig opt;
            opt.lr = 0.1f;
            opt.momentum = 0.9f;
            ScalerParams sp;
            sp.mode = mixed ? LossScaleMode::Dynamic : LossScaleMode::None;
            sp.growth_interval = 2;
            Twin scaler = make({mixed ? 256.0f : 1.0f, 0, 0, 0}, DType::F32);
            const int steps = 3;
            Twin record = twin(std::size_t(steps) * k_record_fields, DType::F32);
            fill(record, k_nan);

            Twin x = twin(std::size_t(batch) * sample, ct),
                 y = twin(std::size_t(batch), DType::I32);
            Twin h = twin(std::size_t(batch) * hidden, ct),
                 z = twin(std::size_t(batch) * classes, ct);
            Twin dh = twin(std::size_t(batch) * hidden, ct);
            for (int s = 0; s < steps; ++s) {
                on_both([&](Backend& b, Side on) {
                    auto W = [&](int p) -> Buffer& {
                        return mixed ? on(P[p].low) : on(P[p].master);
                    };
                    b.gather_batch(on(data.images), on(data.labels), on(data.order),
                                   std::int64_t(s) * batch, batch, image, norm, Augmentation{},
                                   StepCounter{}, on(x), on(y));
                    GemmCall f1; // h = relu(x W1^T + b1)
                    f1.trans_b = true;
                    f1.m = batch;
                    f1.n = hidden;
                    f1.k = sample;
                    f1.a = &on(x);
                    f1.b = &W(0);
                    f1.c = &on(h);
                    f1.epilogue = Epilogue::BiasRelu;
                    f1.bias = &W(1);
                    f1.math = math;
                    b.gemm(f1);
                    GemmCall f2 = f1; // z = h W2^T + b2
                    f2.n = classes;
                    f2.k = hidden;
                    f2.a = &on(h);
                    f2.b = &W(2);
                    f2.c = &on(z);
                    f2.epilogue = Epilogue::Bias;
                    f2.bias = &W(3);
                    b.gemm(f2);
                    // dz overwrites z in place.
                    b.cross_entropy(OutputHead::Logits, on(z), on(y), batch, classes, &on(scaler),
                                    &on(z), on(record), std::size_t(s) * k_record_fields);
                    GemmCall g2; // dW2 = dz^T h, db2 = column sums of dz
                    g2.trans_a = true;
                    g2.m = classes;
                    g2.n = hidden;
                    g2.k = batch;
                    g2.a = &on(z);
                    g2.b = &on(h);
                    g2.c = &on(P[2].grad);
                    g2.epilogue = Epilogue::BiasGradA;
                    g2.bias_grad = &on(P[3].grad);
                    g2.math = math;
                    b.gemm(g2);
                    GemmCall d1; // dh = dz W2
                    d1.m = batch;
                    d1.n = hidden;
                    d1.k = classes;
                    d1.a = &on(z);
                    d1.b = &W(2);
                    d1.c = &on(dh);
                    d1.math = math;
                    b.gemm(d1);
                    b.activation_backward(Activation::Relu, on(h), on(h), on(dh), hidden, on(dh));
                    GemmCall g1; // dW1 = dh^T x, db1
                    g1.trans_a = true;
                    g1.m = hidden;
                    g1.n = sample;
                    g1.k = batch;
                    g1.a = &on(dh);
                    g1.b = &on(x);
                    g1.c = &on(P[0].grad);
                    g1.epilogue = Epilogue::BiasGradA;
                    g1.bias_grad = &on(P[1].grad);
                    g1.math = math;
                    b.gemm(g1);
                    b.optimizer_step(tables(on), opt, sp, on(scaler), on(record),
                                     std::size_t(s) * k_record_fields);
                });
            }
            // Differences start at fp32 ulps (fp32) or fp16 ulps of activations (mixed)
            // and grow a little through three steps.
            const Tol tol = mixed ? Tol{1e-3, 1e-2} : Tol{1e-5, 1e-4};
            compare(v, "record", record, tol);
            compare(v, "scaler", scaler, k_exact);
            for (int p = 0; p < 4; ++p)
                compare(v, "master[" + std::to_string(p) + "]", P[p].master, tol);
        });
}

std::vector<CheckResult> Checker::run_all()
{
    fill_checks();
    cast_checks();
    gather_checks();
    token_gather_checks();
    activation_checks();
    bias_grad_checks();
    numerics_checks();
    dropout_checks();
    cross_entropy_checks();
    optimizer_checks();
    optimizer_mixed_dtype_checks();
    add_activation_checks();
    batchnorm_checks();
    pool_checks();
    embedding_checks();
    lstm_checks();
    conv_checks();
    conv_plan_checks();
    gemm_checks();
    end_to_end_checks();
    return std::move(m_results);
}

} // namespace

std::vector<CheckResult> run_backend_checks(Backend& reference, Backend& candidate,
                                            std::uint64_t seed, const std::string& filter)
{
    Checker checker(reference, candidate, seed, filter);
    std::vector<CheckResult> results = checker.run_all();
    for (CheckResult& r : run_fp8_checks(reference, candidate, seed, filter))
        results.push_back(std::move(r));
    for (CheckResult& r : run_refusal_checks(reference, candidate, seed, filter))
        results.push_back(std::move(r));
    for (CheckResult& r : run_step_graph_checks(candidate, seed, filter))
        results.push_back(std::move(r));
    return results;
}

} // namespace mixlab
