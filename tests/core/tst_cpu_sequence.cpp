// The CPU reference sequence ops: embedding lookup and its row-ordered gradient, and one
// LSTM layer: a hand-computed step, central differences of every gradient, a sequence
// equal to its steps chained through (hT, cT), 16-bit storage rounding, TF32 operands,
// determinism, the saved state kept by inference, and the argument checks.
#include "backends/cpu/cpu_backend.h"
#include "check/refusal_check.h"

#include "mixlab/backend.h"
#include "mixlab/backend_check.h"
#include "mixlab/error.h"
#include "test_util.h"

#include <QtTest/QtTest>

#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

using namespace mixlab;
using namespace mixlab::test;

Q_DECLARE_METATYPE(mixlab::DType)

namespace {

// One layer's inputs, time-major: x (steps, batch, input), states (batch, hidden), w in
// PyTorch's flat order.
struct LstmInputs {
    Vec x, h0, c0, w;
};

struct LstmOutputs {
    Vec y, hT, cT;
};

struct LstmGrads {
    Vec dx, dh0, dc0, dw;
};

// Values of the layer's spread rounded to t, so that the f32 and 16-bit runs start from
// the same numbers.
LstmInputs random_inputs(const LstmShape& s, unsigned seed, DType t = DType::F32)
{
    LstmInputs in{random_vec(s.x_count(), seed), random_vec(s.state_count(), seed + 1),
                  random_vec(s.state_count(), seed + 2),
                  random_vec(s.weight_count(), seed + 3, -0.6f, 0.6f)};
    for (Vec* v : {&in.x, &in.h0, &in.c0, &in.w})
        for (float& e : *v) e = round_to(t, e);
    return in;
}

bool same_bits(const Vec& a, const Vec& b)
{
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

double sigmoid(double v) { return 1.0 / (1.0 + std::exp(-v)); }

// dot(a, r) in double.
double dot(const Vec& a, const Vec& r)
{
    double s = 0;
    for (std::size_t i = 0; i < a.size(); ++i) s += double(a[i]) * double(r[i]);
    return s;
}

} // namespace

class TestCpuSequence : public QObject {
    Q_OBJECT

private:
    std::unique_ptr<Backend> m_be = cpu::make_cpu_backend();

    // The inputs in buffers of dtype t and the forward's outputs, after one forward.
    struct Forward {
        Buffer x, h0, c0, w, y, hT, cT;
    };
    Forward run_forward(LstmPlan& plan, DType t, const LstmInputs& in, bool training)
    {
        Backend& be = *m_be;
        const LstmShape& s = plan.shape();
        Forward f{upload(be, in.x, t),
                  upload(be, in.h0, t),
                  upload(be, in.c0, t),
                  upload(be, in.w, t),
                  poisoned(be, s.y_count(), t),
                  poisoned(be, s.state_count(), t),
                  poisoned(be, s.state_count(), t)};
        be.lstm_forward(plan, f.x, f.h0, f.c0, f.w, training, f.y, f.hT, f.cT);
        return f;
    }

    LstmOutputs forward(LstmPlan& plan, DType t, const LstmInputs& in, bool training = false)
    {
        const Forward f = run_forward(plan, t, in, training);
        return {download(*m_be, f.y), download(*m_be, f.hT), download(*m_be, f.cT)};
    }

    // A training forward, then backward with dy = ry and (when given) dhT = rh, dcT = rc,
    // the weight gradient added into dw0 (zero when empty).
    LstmGrads backward(LstmPlan& plan, DType t, const LstmInputs& in, const Vec& ry, const Vec* rh,
                       const Vec* rc, const Vec& dw0 = {})
    {
        Backend& be = *m_be;
        const LstmShape& s = plan.shape();
        Forward f = run_forward(plan, t, in, true);
        Buffer dy = upload(be, ry, t);
        Buffer dhT = rh ? upload(be, *rh, t) : Buffer(), dcT = rc ? upload(be, *rc, t) : Buffer();
        Buffer dx = poisoned(be, s.x_count(), t), dh0 = poisoned(be, s.state_count(), t),
               dc0 = poisoned(be, s.state_count(), t);
        be.lstm_backward_data(plan, f.y, dy, rh ? &dhT : nullptr, rc ? &dcT : nullptr, f.w, f.h0,
                              f.c0, dx, &dh0, &dc0);
        Buffer dw = upload(be, dw0.empty() ? Vec(s.weight_count(), 0.0f) : dw0, t);
        be.lstm_backward_weights(plan, f.x, f.h0, f.y, dw);
        return {download(be, dx), download(be, dh0), download(be, dc0), download(be, dw)};
    }

private slots:
    void embedding_forward_gathers_rows();
    void embedding_backward_sums_rows_in_order();
    void embedding_backward_matches_finite_differences();
    void lstm_one_step_matches_hand_computation();
    void lstm_gradients_match_finite_differences();
    void lstm_null_final_gradients_are_zero();
    void lstm_sequence_equals_chained_steps();
    void lstm_sixteen_bit_storage_data();
    void lstm_sixteen_bit_storage();
    void lstm_tf32_rounds_gemm_operands();
    void lstm_is_deterministic();
    void lstm_inference_keeps_saved_state();
    void argument_checks();
    void refusal_checks_pass_on_the_cpu();
    void refusal_check_fails_on_other_words();
};

void TestCpuSequence::embedding_forward_gathers_rows()
{
    Backend& be = *m_be;
    const int vocab = 5, dim = 3;
    const Vec table = random_vec(std::size_t(vocab) * dim, 1);
    const std::vector<std::int32_t> ids{4, 0, 4, -1, 5, 2};
    const int rows = int(ids.size());
    Buffer bt = upload(be, table), bi = upload_i32(be, ids), y = poisoned(be, rows * dim);
    be.embedding_forward(bt, bi, rows, dim, vocab, y);
    const Vec got = download(be, y);
    for (int r = 0; r < rows; ++r)
        for (int j = 0; j < dim; ++j) {
            const bool inside = ids[r] >= 0 && ids[r] < vocab;
            EXPECT_EXACT(got[r * dim + j], inside ? table[ids[r] * dim + j] : 0.0f);
        }
}

void TestCpuSequence::embedding_backward_sums_rows_in_order()
{
    // Overwrite: a poisoned table comes back with zeros where no id occurs and, where one
    // does, its dy rows summed in row order in float32 (the bits every run must give).
    // Accumulate: the same sums added to what dtable held.
    Backend& be = *m_be;
    const int vocab = 6, dim = 4;
    const std::vector<std::int32_t> ids{3, 1, 3, 3, 7, 1, -2, 0};
    const int rows = int(ids.size());
    const Vec dy = random_vec(std::size_t(rows) * dim, 2, -100.0f, 100.0f);
    const Vec start = random_vec(std::size_t(vocab) * dim, 3);
    for (bool accumulate : {false, true}) {
        Buffer bdy = upload(be, dy), bi = upload_i32(be, ids);
        Buffer dt = accumulate ? upload(be, start) : poisoned(be, std::size_t(vocab) * dim);
        be.embedding_backward(bdy, bi, rows, dim, vocab, accumulate, dt);
        Vec expect = accumulate ? start : Vec(std::size_t(vocab) * dim, 0.0f);
        for (int r = 0; r < rows; ++r)
            if (ids[r] >= 0 && ids[r] < vocab)
                for (int j = 0; j < dim; ++j) expect[ids[r] * dim + j] += dy[r * dim + j];
        QVERIFY2(same_bits(download(be, dt), expect), accumulate ? "accumulate" : "overwrite");
    }
}

void TestCpuSequence::embedding_backward_matches_finite_differences()
{
    // L = sum(embedding(table, ids) * r) through the backend's forward; with repeated ids
    // an entry's derivative is the sum of the r rows that read it. L is linear in the
    // table, so central differences with eps 1e-2 carry only the loss's float32 rounding
    // (~1e-7 * 10 terms / 2e-2 ~ 5e-5): atol 1e-4, while a missed repeat is off by O(0.5).
    Backend& be = *m_be;
    const int vocab = 4, dim = 3;
    const std::vector<std::int32_t> ids{2, 0, 2, 2, 1};
    const int rows = int(ids.size());
    Vec table = random_vec(std::size_t(vocab) * dim, 4);
    const Vec r = random_vec(std::size_t(rows) * dim, 5);
    Buffer bi = upload_i32(be, ids);
    auto loss = [&] {
        Buffer bt = upload(be, table), y = poisoned(be, rows * dim);
        be.embedding_forward(bt, bi, rows, dim, vocab, y);
        return dot(download(be, y), r);
    };
    const float eps = 1e-2f;
    DVec numeric(table.size());
    for (std::size_t i = 0; i < table.size(); ++i) {
        const float saved = table[i];
        table[i] = saved + eps;
        const double up = loss();
        table[i] = saved - eps;
        const double down = loss();
        table[i] = saved;
        numeric[i] = (up - down) / (2.0 * eps);
    }
    // Accumulating onto a gradient a tied decoder wrote first adds exactly that much.
    const Vec first = random_vec(table.size(), 6);
    Buffer bdy = upload(be, r), dt = upload(be, first);
    be.embedding_backward(bdy, bi, rows, dim, vocab, true, dt);
    DVec with_first(numeric);
    for (std::size_t i = 0; i < numeric.size(); ++i) with_first[i] += first[i];
    expect_close(download(be, dt), with_first, 1e-4, 0.0, "dtable (accumulated)");
    be.embedding_backward(bdy, bi, rows, dim, vocab, false, dt);
    expect_close(download(be, dt), numeric, 1e-4, 0.0, "dtable");
}

void TestCpuSequence::lstm_one_step_matches_hand_computation()
{
    // One step, one unit, one input: distinct weights per gate, so that a gate order other
    // than i, f, g, o or a dropped bias shows.
    const LstmShape s{1, 1, 1, 1};
    const float x = 0.7f, h0 = -0.4f, c0 = 0.9f;
    // W_ih (i, f, g, o), W_hh, b_ih, b_hh.
    const Vec w{0.5f,  -0.3f, 0.8f,  0.2f, -0.6f, 0.4f,  0.1f,  -0.7f,
                0.05f, 0.1f,  -0.2f, 0.3f, 0.2f,  -0.1f, 0.15f, 0.25f};
    auto pre = [&](int k) {
        return double(w[k]) * x + double(w[4 + k]) * h0 + double(w[8 + k]) + double(w[12 + k]);
    };
    const double i = sigmoid(pre(0)), f = sigmoid(pre(1)), g = std::tanh(pre(2)),
                 o = sigmoid(pre(3));
    const double c = f * c0 + i * g, h = o * std::tanh(c);
    auto plan = m_be->lstm_prepare(s, DType::F32, MathMode::Pedantic);
    const LstmOutputs out = forward(*plan, DType::F32, {{x}, {h0}, {c0}, w});
    // float32 evaluation of a handful of O(1) terms: a few ulps, 1e-6.
    expect_close(out.y, {h}, 1e-6, 0.0, "y");
    expect_close(out.hT, {h}, 1e-6, 0.0, "hT");
    expect_close(out.cT, {c}, 1e-6, 0.0, "cT");
}

void TestCpuSequence::lstm_gradients_match_finite_differences()
{
    // L = sum(y * ry) + sum(hT * rh) + sum(cT * rc) through the backend's float32 forward;
    // central differences in every element of x, h0, c0 and w (W_ih, W_hh, b_ih, b_hh).
    // eps 1e-2 on inputs of spread ~1: the truncation error eps^2/6 * L''' is ~1e-5
    // (sigmoid and tanh have bounded third derivatives, L sums ~40 of them); each
    // evaluation re-rounds ~40 outputs by ~1e-7, adding ~40 * 1e-7 / 2e-2 = 2e-4 at worst.
    // The largest error measured is 1.4e-5 (in db). atol 3e-4 + rtol 1e-3, while a
    // dropped forget-gate factor in the carried cell gradient is off by 5e-3 (dW_hh) to 1
    // (dc0), a swapped gate by O(0.1).
    const LstmShape s{3, 2, 3, 4};
    auto plan = m_be->lstm_prepare(s, DType::F32, MathMode::Pedantic);
    LstmInputs in = random_inputs(s, 10);
    const Vec ry = random_vec(s.y_count(), 20), rh = random_vec(s.state_count(), 21),
              rc = random_vec(s.state_count(), 22);
    const LstmGrads grads = backward(*plan, DType::F32, in, ry, &rh, &rc);
    auto loss = [&] {
        const LstmOutputs out = forward(*plan, DType::F32, in);
        return dot(out.y, ry) + dot(out.hT, rh) + dot(out.cT, rc);
    };
    const float eps = 1e-2f;
    auto numeric = [&](Vec& v, std::size_t from, std::size_t to) {
        DVec d;
        for (std::size_t i = from; i < to; ++i) {
            const float saved = v[i];
            v[i] = saved + eps;
            const double up = loss();
            v[i] = saved - eps;
            const double down = loss();
            v[i] = saved;
            d.push_back((up - down) / (2.0 * eps));
        }
        return d;
    };
    auto part = [](const Vec& v, std::size_t from, std::size_t to) {
        return Vec(v.begin() + std::ptrdiff_t(from), v.begin() + std::ptrdiff_t(to));
    };
    expect_close(grads.dx, numeric(in.x, 0, in.x.size()), 3e-4, 1e-3, "dx");
    expect_close(grads.dh0, numeric(in.h0, 0, in.h0.size()), 3e-4, 1e-3, "dh0");
    expect_close(grads.dc0, numeric(in.c0, 0, in.c0.size()), 3e-4, 1e-3, "dc0");
    const std::size_t cut[] = {0, s.w_hh_offset(), s.b_ih_offset(), s.b_hh_offset(),
                               s.weight_count()};
    const char* names[] = {"dW_ih", "dW_hh", "db_ih", "db_hh"};
    for (int k = 0; k < 4; ++k)
        expect_close(part(grads.dw, cut[k], cut[k + 1]), numeric(in.w, cut[k], cut[k + 1]), 3e-4,
                     1e-3, names[k]);

    // dw is added into: starting from d0 gives d0 + the gradient (one float32 addition
    // per element, the same bits).
    const Vec d0 = random_vec(s.weight_count(), 23);
    const Vec added = backward(*plan, DType::F32, in, ry, &rh, &rc, d0).dw;
    Vec expect(d0.size());
    for (std::size_t i = 0; i < d0.size(); ++i) expect[i] = d0[i] + grads.dw[i];
    QVERIFY(same_bits(added, expect));
}

void TestCpuSequence::lstm_null_final_gradients_are_zero()
{
    const LstmShape s{2, 3, 2, 3};
    auto plan = m_be->lstm_prepare(s, DType::F32, MathMode::Pedantic);
    const LstmInputs in = random_inputs(s, 30);
    const Vec ry = random_vec(s.y_count(), 31), zero(s.state_count(), 0.0f);
    const LstmGrads a = backward(*plan, DType::F32, in, ry, nullptr, nullptr);
    const LstmGrads b = backward(*plan, DType::F32, in, ry, &zero, &zero);
    QVERIFY(same_bits(a.dx, b.dx) && same_bits(a.dh0, b.dh0) && same_bits(a.dc0, b.dc0) &&
            same_bits(a.dw, b.dw));
}

void TestCpuSequence::lstm_sequence_equals_chained_steps()
{
    // Truncated BPTT feeds a batch's (hT, cT) to the next as (h0, c0): a T-step call must
    // equal T one-step calls chained that way, bit for bit in float32 (the cell state the
    // sequence carries in float32 is what a float32 cT stores).
    const int steps = 5;
    const LstmShape s{steps, 3, 4, 6}, one{1, 3, 4, 6};
    auto seq = m_be->lstm_prepare(s, DType::F32, MathMode::Pedantic);
    auto step = m_be->lstm_prepare(one, DType::F32, MathMode::Pedantic);
    const LstmInputs in = random_inputs(s, 40);
    const LstmOutputs whole = forward(*seq, DType::F32, in);
    LstmInputs part{{}, in.h0, in.c0, in.w};
    Vec y;
    for (int t = 0; t < steps; ++t) {
        const std::size_t n = one.x_count();
        part.x.assign(in.x.begin() + std::ptrdiff_t(t * n),
                      in.x.begin() + std::ptrdiff_t((t + 1) * n));
        const LstmOutputs out = forward(*step, DType::F32, part, true);
        y.insert(y.end(), out.y.begin(), out.y.end());
        part.h0 = out.hT;
        part.c0 = out.cT;
    }
    QVERIFY(same_bits(whole.y, y));
    QVERIFY(same_bits(whole.hT, part.h0));
    QVERIFY(same_bits(whole.cT, part.c0));
}

void TestCpuSequence::lstm_sixteen_bit_storage_data()
{
    QTest::addColumn<DType>("dtype");
    QTest::addColumn<double>("epsilon"); // the dtype's machine epsilon
    QTest::newRow("float16") << DType::F16 << std::ldexp(1.0, -10);
    QTest::newRow("bfloat16") << DType::BF16 << std::ldexp(1.0, -7);
}

void TestCpuSequence::lstm_sixteen_bit_storage()
{
    // The same (already representable) inputs in a 16-bit layer and in float32: every
    // stored output is a value of the dtype, and within the rounding's reach of float32.
    QFETCH(DType, dtype);
    QFETCH(double, epsilon);
    const int steps = 4;
    const LstmShape s{steps, 2, 3, 5};
    const LstmInputs in = random_inputs(s, 50, dtype);
    auto p16 = m_be->lstm_prepare(s, dtype, MathMode::Reduced);
    auto p32 = m_be->lstm_prepare(s, DType::F32, MathMode::Pedantic);
    const LstmOutputs lo = forward(*p16, dtype, in), hi = forward(*p32, DType::F32, in);
    const Vec ry = random_vec(s.y_count(), 51);
    Vec ry16 = ry;
    for (float& v : ry16) v = round_to(dtype, v);
    const LstmGrads glo = backward(*p16, dtype, in, ry16, nullptr, nullptr);
    const LstmGrads ghi = backward(*p32, DType::F32, in, ry16, nullptr, nullptr);
    for (const Vec* v : {&lo.y, &lo.hT, &lo.cT, &glo.dx, &glo.dh0, &glo.dc0, &glo.dw})
        for (float e : *v) EXPECT_EXACT(e, round_to(dtype, e));
    // Forward: each step rounds h (|h| < 1) once, by eps/2; that error reaches the next
    // step through W_hh (entries < 0.6, 5 units) damped by the gates' slopes (<= 1), so
    // after T steps the error stays below T * eps absolute, plus the output's own eps/2
    // relative. cT (|c| < T) is rounded once on top of the h errors it integrated.
    const double bound = steps * epsilon;
    auto ref = [](const Vec& v) { return DVec(v.begin(), v.end()); };
    expect_close(lo.y, ref(hi.y), bound, epsilon / 2, "y");
    expect_close(lo.hT, ref(hi.hT), bound, epsilon / 2, "hT");
    expect_close(lo.cT, ref(hi.cT), bound, epsilon / 2, "cT");
    // Gradients: the forward's errors above scale the backward's factors, and dx, dh0,
    // dc0 and dw are rounded once more; sums of up to T * batch products of O(1): 4x the
    // forward's bound (times the magnitude for dw's sums) covers them.
    expect_close(glo.dx, ref(ghi.dx), 4 * bound, epsilon, "dx");
    expect_close(glo.dh0, ref(ghi.dh0), 4 * bound, epsilon, "dh0");
    expect_close(glo.dc0, ref(ghi.dc0), 4 * bound, epsilon, "dc0");
    expect_close(glo.dw, ref(ghi.dw), 4 * bound * s.batch, epsilon, "dw");
}

void TestCpuSequence::lstm_tf32_rounds_gemm_operands()
{
    // One step under TF32 equals float32 math on TF32-rounded x, h0, W_ih and W_hh with
    // the biases left whole (they are added after the product): the same bits.
    const LstmShape s{1, 3, 5, 4};
    const LstmInputs in = random_inputs(s, 60);
    LstmInputs rounded = in;
    for (Vec* v : {&rounded.x, &rounded.h0})
        for (float& e : *v) e = round_to_tf32(e);
    for (std::size_t i = 0; i < s.b_ih_offset(); ++i) rounded.w[i] = round_to_tf32(rounded.w[i]);
    QVERIFY(!same_bits(in.x, rounded.x)); // the inputs do carry bits TF32 drops
    auto tf32 = m_be->lstm_prepare(s, DType::F32, MathMode::TF32);
    auto exact = m_be->lstm_prepare(s, DType::F32, MathMode::Pedantic);
    const LstmOutputs a = forward(*tf32, DType::F32, in), b = forward(*exact, DType::F32, rounded);
    QVERIFY(same_bits(a.y, b.y) && same_bits(a.cT, b.cT));
    QVERIFY(!same_bits(a.y, forward(*exact, DType::F32, in).y));
}

void TestCpuSequence::lstm_is_deterministic()
{
    const LstmShape s{6, 4, 8, 8};
    const Vec ry = random_vec(s.y_count(), 71);
    const LstmInputs in = random_inputs(s, 70);
    for (MathMode math : {MathMode::Pedantic, MathMode::TF32}) {
        auto p1 = m_be->lstm_prepare(s, DType::F32, math);
        auto p2 = m_be->lstm_prepare(s, DType::F32, math);
        const LstmGrads a = backward(*p1, DType::F32, in, ry, nullptr, nullptr);
        const LstmGrads b = backward(*p2, DType::F32, in, ry, nullptr, nullptr);
        const LstmGrads c = backward(*p1, DType::F32, in, ry, nullptr, nullptr);
        for (const LstmGrads* g : {&b, &c})
            QVERIFY(same_bits(a.dx, g->dx) && same_bits(a.dh0, g->dh0) &&
                    same_bits(a.dc0, g->dc0) && same_bits(a.dw, g->dw));
    }
}

void TestCpuSequence::lstm_inference_keeps_saved_state()
{
    // An evaluation forward between a training forward and its backward (the validation
    // pass) must not replace what backward reads.
    Backend& be = *m_be;
    const LstmShape s{3, 2, 3, 4};
    auto plan = be.lstm_prepare(s, DType::F32, MathMode::Pedantic);
    const LstmInputs in = random_inputs(s, 80), other = random_inputs(s, 81);
    const Vec ry = random_vec(s.y_count(), 82);
    const LstmGrads clean = backward(*plan, DType::F32, in, ry, nullptr, nullptr);

    const Forward f = run_forward(*plan, DType::F32, in, true);
    forward(*plan, DType::F32, other, false);
    Buffer dy = upload(be, ry), dx = poisoned(be, s.x_count());
    be.lstm_backward_data(*plan, f.y, dy, nullptr, nullptr, f.w, f.h0, f.c0, dx, nullptr, nullptr);
    Buffer dw = upload(be, Vec(s.weight_count(), 0.0f));
    be.lstm_backward_weights(*plan, f.x, f.h0, f.y, dw);
    QVERIFY(same_bits(download(be, dx), clean.dx));
    QVERIFY(same_bits(download(be, dw), clean.dw));
}

void TestCpuSequence::argument_checks()
{
    Backend& be = *m_be;
    const LstmShape s{2, 2, 3, 4};
    auto plan = be.lstm_prepare(s, DType::F16, MathMode::Reduced);
    Buffer x = be.alloc(s.x_count(), DType::F16), x32 = be.alloc(s.x_count(), DType::F32);
    Buffer st = be.alloc(s.state_count(), DType::F16), st2 = be.alloc(s.state_count(), DType::F16);
    Buffer w = be.alloc(s.weight_count(), DType::F16), y = be.alloc(s.y_count(), DType::F16);
    Buffer hT = be.alloc(s.state_count(), DType::F16), cT = be.alloc(s.state_count(), DType::F16);
    Buffer small = be.alloc(s.y_count() - 1, DType::F16);
    be.fill(x, 0.1f);
    be.fill(st, 0.0f);
    be.fill(st2, 0.0f);
    be.fill(w, 0.1f);
    expect_cpu_error(
        [&] {
            be.lstm_prepare({0, 2, 3, 4}, DType::F32, MathMode::Pedantic);
        },
        "lstm_prepare", "every size must be positive");
    expect_cpu_error([&] { be.lstm_prepare(s, DType::I32, MathMode::Pedantic); }, "lstm_prepare",
                     "float32, float16 or bfloat16");
    expect_cpu_error([&] { be.lstm_forward(*plan, x32, st, st2, w, true, y, hT, cT); },
                     "lstm_forward", "x must be float16");
    expect_cpu_error([&] { be.lstm_forward(*plan, x, st, st2, w, true, small, hT, cT); },
                     "lstm_forward", "y holds");
    expect_cpu_error(
        [&] {
            be.lstm_backward_data(*plan, y, y, nullptr, nullptr, w, st, st2, x, nullptr, nullptr);
        },
        "lstm_backward_data", "no training forward");
    be.lstm_forward(*plan, x, st, st2, w, true, y, hT, cT);
    expect_cpu_error([&] { be.lstm_backward_weights(*plan, x, st, y, w); }, "lstm_backward_weights",
                     "lstm_backward_data has not run");
    // One backward data per training forward (cuDNN's overwrites what the forward kept).
    be.lstm_backward_data(*plan, y, y, nullptr, nullptr, w, st, st2, x, nullptr, nullptr);
    expect_cpu_error(
        [&] {
            be.lstm_backward_data(*plan, y, y, nullptr, nullptr, w, st, st2, x, nullptr, nullptr);
        },
        "lstm_backward_data", "already ran for this forward");

    Buffer table = upload(be, Vec(12, 1.0f)), ids = upload_i32(be, {0, 1}),
           ids_f = upload(be, {0.0f, 1.0f}), out = be.alloc(6, DType::F32),
           out16 = be.alloc(6, DType::F16), dt16 = be.alloc(12, DType::F16);
    expect_cpu_error([&] { be.embedding_forward(table, ids_f, 2, 3, 4, out); }, "embedding_forward",
                     "ids must be int32");
    expect_cpu_error([&] { be.embedding_forward(table, ids, 2, 3, 4, out16); }, "embedding_forward",
                     "y must be float32");
    expect_cpu_error([&] { be.embedding_forward(table, ids, 2, 3, 5, out); }, "embedding_forward",
                     "table holds");
    expect_cpu_error([&] { be.embedding_backward(out, ids, 3, 3, 4, false, table); },
                     "embedding_backward", "dy holds 6 elements, needs 9");
    Buffer dy9 = be.alloc(9, DType::F32);
    expect_cpu_error([&] { be.embedding_backward(dy9, ids, 3, 3, 4, false, table); },
                     "embedding_backward", "ids hold 2 elements, needs 3");
    expect_cpu_error([&] { be.embedding_backward(out, ids, 2, 3, 4, false, dt16); },
                     "embedding_backward", "dtable must be float32");
}

// mixlab-cli check's refusal checks, the CPU against itself: every call in them is one the
// reference refuses (a call it ran would fail as "the reference ran it"), and the words
// after the backend's name are the detail. On a GPU the same checks hold the CUDA backend
// to these words.
void TestCpuSequence::refusal_checks_pass_on_the_cpu()
{
    auto other = make_backend(DeviceChoice::CPU);
    const std::vector<CheckResult> results = run_backend_checks(*m_be, *other, 5, "refuses/");
    QCOMPARE(results.size(), std::size_t(13));
    for (const CheckResult& r : results) {
        QVERIFY2(r.passed, qPrintable(QString::fromStdString(r.name + ": " + r.detail)));
        QVERIFY2(r.detail.find("both: \"") != std::string::npos, r.detail.c_str());
    }
    const auto detail = [&](const std::string& name) {
        for (const CheckResult& r : results)
            if (r.name == name) return r.detail;
        return std::string("no check ") + name;
    };
    const std::string weights = detail("refuses/lstm_backward_weights/before_backward");
    QVERIFY2(weights.find("lstm_backward_weights: lstm_backward_data has not run for the latest "
                          "training forward pass") != std::string::npos,
             weights.c_str());
    const std::string conv = detail("refuses/conv2d_prepare/int32");
    QVERIFY2(conv.find("conv2d_prepare: convolutions need a floating dtype, got int32") !=
                 std::string::npos,
             conv.c_str());
}

// The rule the checks above apply, on answers no CPU gives: with the CPU on both sides a
// disagreement cannot happen there, so it is tested here on its own.
void TestCpuSequence::refusal_check_fails_on_other_words()
{
    const std::string words = "lstm_forward: w holds 219 elements, needs 220";
    QCOMPARE(refusal_disagreement(words, words), std::string());
    QCOMPARE(refusal_disagreement(words, std::nullopt),
             "the reference refused it with \"" + words + "\", the candidate ran it");
    QCOMPARE(refusal_disagreement(words, "lstm_forward: w is too short"),
             "the reference refused it with \"" + words +
                 "\", the candidate with \"lstm_forward: w is too short\"");
    QCOMPARE(refusal_disagreement(std::nullopt, std::nullopt), std::string("the reference ran it"));
    QCOMPARE(refusal_disagreement(std::nullopt, words), std::string("the reference ran it"));
    // A refusal worded like a marker is still a refusal: "(ran)" once stood for a call
    // that threw nothing.
    QCOMPARE(refusal_disagreement(std::string("(ran)"), std::string("(ran)")), std::string());
    QCOMPARE(refusal_disagreement(std::string("(ran)"), std::nullopt),
             std::string("the reference refused it with \"(ran)\", the candidate ran it"));
}

QTEST_APPLESS_MAIN(TestCpuSequence)
#include "tst_cpu_sequence.moc"
