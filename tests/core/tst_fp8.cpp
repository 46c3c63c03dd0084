// mixed_fp8 (issue 18) on the CPU: E4M3/E5M2 rounding at every boundary, the CPU fp8
// ops (quantize, scale update, the fp8 GEMM) and their argument checks, the policy and
// its device gate, the run file's "fp8" object, which dense layers run in fp8 and why
// the others do not, what a run's log says, and one epoch of Fashion-MNIST against fp32.
#include "base/hd_math.h"
#include "mixlab/backend.h"
#include "mixlab/dataset.h"
#include "mixlab/device.h"
#include "mixlab/dtype.h"
#include "mixlab/environment.h"
#include "mixlab/error.h"
#include "mixlab/graph.h"
#include "mixlab/model_spec.h"
#include "mixlab/policy.h"
#include "mixlab/run_config.h"
#include "mixlab/run_log.h"
#include "mixlab/trainer.h"
#include "model/network.h"
#include "train/fp8_scales.h"
#include "test_util.h"

#include <QtTest>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <optional>
#include <nlohmann/json.hpp>

using namespace mixlab;
using mixlab::test::download;
using mixlab::test::expect_error;

namespace {

float e4m3(float f) { return hd::fp8_to_float(hd::float_to_fp8(f, hd::k_e4m3), hd::k_e4m3); }
float e5m2(float f) { return hd::fp8_to_float(hd::float_to_fp8(f, hd::k_e5m2), hd::k_e5m2); }
std::uint8_t c4(float f) { return hd::float_to_fp8(f, hd::k_e4m3); }
std::uint8_t c5(float f) { return hd::float_to_fp8(f, hd::k_e5m2); }

// Bitwise equality, so that +0 and -0 differ.
bool same(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

struct RecordingSink : MetricsSink {
    std::vector<StepMetrics> steps;
    std::vector<EpochMetrics> epochs;
    std::vector<RunEvent> events;
    void on_step(int, const StepMetrics& m) override { steps.push_back(m); }
    void on_epoch(int, const EpochMetrics& m) override { epochs.push_back(m); }
    void on_event(int, const RunEvent& e) override { events.push_back(e); }
};

LayerSpec dense(int units, Activation act = Activation::None)
{
    LayerSpec l;
    l.units = units;
    l.activation = act;
    return l;
}

ModelSpec mlp(std::vector<LayerSpec> dense_layers)
{
    ModelSpec spec;
    spec.name = "fp8-mlp";
    LayerSpec flatten;
    flatten.type = LayerType::Flatten;
    spec.layers.push_back(flatten);
    for (const auto& l : dense_layers) spec.layers.push_back(l);
    LayerSpec act;
    act.type = LayerType::Activation;
    act.activation = Activation::Softmax;
    act.force_fp32 = true;
    spec.layers.push_back(act);
    return spec;
}

// The 16-16-10 MLP over 4x4x1 inputs the fp8 network tests build, with an amax history
// of 2: both hidden layers run in fp8, the 10-unit head does not.
struct Fp8Mlp {
    ModelSpec spec = mlp({dense(16, Activation::Relu), dense(16), dense(10)});
    Graph graph = build_graph(spec, Shape{{4, 4, 1}}, 10);
    Fp8Config fp8 = [] {
        Fp8Config c;
        c.amax_history = 2;
        return c;
    }();
};

RunConfig cpu_config(Policy policy, int batch)
{
    RunConfig c;
    c.policy = policy;
    c.batch_size = batch;
    c.device = DeviceChoice::CPU;
    c.optimizer.lr = 0.01f;
    c.optimizer.momentum = 0.9f;
    return c;
}

// A meta buffer of `blocks` blocks of `history` slots, each scale 1 / max_finite e4m3.
Buffer fresh_meta(Backend& b, int blocks, int history)
{
    const std::size_t stride = fp8_block_floats(history);
    std::vector<float> m(std::size_t(blocks) * stride, 0.0f);
    for (int t = 0; t < blocks; ++t) {
        m[std::size_t(t) * stride + k_fp8_scale] = 1.0f;
        m[std::size_t(t) * stride + k_fp8_scale_inv] = 1.0f;
        m[std::size_t(t) * stride + k_fp8_max_finite] = 448.0f;
    }
    Buffer buf = b.alloc(m.size(), DType::F32);
    b.upload_f32(buf, m.data(), m.size());
    return buf;
}

} // namespace

class TestFp8 : public QObject {
    Q_OBJECT
private slots:
    // ---- rounding (hd_math.h), exact values ----------------------------------------------
    void e4m3Boundaries()
    {
        const float inf = std::numeric_limits<float>::infinity();
        // Largest normal, 1.75 * 2^8, and everything beyond it, saturating.
        QCOMPARE(c4(448.0f), std::uint8_t(0x7E));
        QCOMPARE(e4m3(448.0f), 448.0f);
        QCOMPARE(e4m3(460.0f), 448.0f); // below the half ulp
        QCOMPARE(e4m3(464.0f), 448.0f); // max + half ulp (32 / 2): the tie saturates
        QCOMPARE(e4m3(480.0f), 448.0f); // a whole ulp past
        QCOMPARE(e4m3(1e30f), 448.0f);
        QCOMPARE(c4(inf), std::uint8_t(0x7E));
        QCOMPARE(c4(-inf), std::uint8_t(0xFE));
        QCOMPARE(e4m3(-inf), -448.0f);
        QCOMPARE(e4m3(-464.0f), -448.0f);
        // Below the top: 416 (1.625 * 2^8) + half its ulp ties to the even 448.
        QCOMPARE(e4m3(432.0f), 448.0f);
        QCOMPARE(e4m3(431.0f), 416.0f);
        // Smallest normal 2^-6, largest subnormal 7 * 2^-9, smallest subnormal 2^-9.
        QCOMPARE(c4(0.015625f), std::uint8_t(0x08));
        QCOMPARE(c4(7 * 0.001953125f), std::uint8_t(0x07));
        QCOMPARE(e4m3(7 * 0.001953125f), 0.013671875f);
        QCOMPARE(e4m3(7.5f * 0.001953125f), 0.015625f);        // tie: 8 units (the normal) is even
        QCOMPARE(e4m3(6.5f * 0.001953125f), 6 * 0.001953125f); // tie: 6 is even
        QCOMPARE(c4(0.001953125f), std::uint8_t(0x01));
        QCOMPARE(e4m3(0.0009765625f), 0.0f);                   // half the smallest: ties to 0
        QCOMPARE(e4m3(0.00097657f), 0.001953125f);             // just above half
        QCOMPARE(e4m3(1.5f * 0.001953125f), 2 * 0.001953125f); // 1.5 units: tie to 2
        QCOMPARE(e4m3(0.00048828125f), 0.0f);                  // a quarter
        QVERIFY(same(e4m3(-0.0009765625f), -0.0f));            // the sign survives to zero
        QCOMPARE(c4(0.0f), std::uint8_t(0x00));
        QCOMPARE(c4(-0.0f), std::uint8_t(0x80));
        QVERIFY(same(e4m3(-0.0f), -0.0f));
        // NaN stays NaN, with its sign.
        QCOMPARE(c4(std::nanf("")), std::uint8_t(0x7F));
        QCOMPARE(c4(-std::nanf("")), std::uint8_t(0xFF));
        QVERIFY(std::isnan(e4m3(std::nanf(""))));
        // Ties to even mid-range: the ulp at 1 is 1/8.
        QCOMPARE(c4(1.0f), std::uint8_t(0x38));
        QCOMPARE(e4m3(1.0625f), 1.0f);  // between 1 (even) and 1.125
        QCOMPARE(e4m3(1.1875f), 1.25f); // between 1.125 and 1.25 (even)
        QCOMPARE(e4m3(1.0626f), 1.125f);
        QCOMPARE(e4m3(-3.3f), -3.25f);
    }

    void e5m2Boundaries()
    {
        const float inf = std::numeric_limits<float>::infinity();
        QCOMPARE(c5(57344.0f), std::uint8_t(0x7B)); // 1.75 * 2^15
        QCOMPARE(e5m2(57344.0f), 57344.0f);
        QCOMPARE(e5m2(61440.0f), 57344.0f); // max + half ulp (8192 / 2): the tie saturates
        QCOMPARE(e5m2(61439.0f), 57344.0f);
        QCOMPARE(e5m2(70000.0f), 57344.0f);
        QCOMPARE(c5(inf), std::uint8_t(0x7B)); // saturating: no infinities come out
        QCOMPARE(c5(-inf), std::uint8_t(0xFB));
        QCOMPARE(e5m2(-1e38f), -57344.0f);
        // Smallest normal 2^-14, largest subnormal 3 * 2^-16, smallest subnormal 2^-16.
        const float unit = 1.0f / 65536.0f;
        QCOMPARE(c5(1.0f / 16384.0f), std::uint8_t(0x04));
        QCOMPARE(c5(3 * unit), std::uint8_t(0x03));
        QCOMPARE(e5m2(3.5f * unit), 4 * unit); // tie: the normal's 4 units are even
        QCOMPARE(e5m2(2.5f * unit), 2 * unit); // tie: 2 is even
        QCOMPARE(c5(unit), std::uint8_t(0x01));
        QCOMPARE(e5m2(0.5f * unit), 0.0f); // half the smallest: ties to 0
        QCOMPARE(e5m2(0.50001f * unit), unit);
        QCOMPARE(e5m2(1.5f * unit), 2 * unit);
        QCOMPARE(e5m2(0.25f * unit), 0.0f);
        QCOMPARE(c5(-0.0f), std::uint8_t(0x80));
        QVERIFY(same(e5m2(-0.0f), -0.0f));
        QCOMPARE(c5(std::nanf("")), std::uint8_t(0x7F));
        QVERIFY(std::isnan(e5m2(std::nanf(""))));
        // The codes past the largest: infinities and NaNs, read as such.
        QCOMPARE(hd::fp8_to_float(0x7C, hd::k_e5m2), inf);
        QCOMPARE(hd::fp8_to_float(0xFC, hd::k_e5m2), -inf);
        QVERIFY(std::isnan(hd::fp8_to_float(0x7D, hd::k_e5m2)));
        // Ties to even mid-range: the ulp at 1 is 1/4.
        QCOMPARE(c5(1.0f), std::uint8_t(0x3C));
        QCOMPARE(e5m2(1.125f), 1.0f);
        QCOMPARE(e5m2(1.375f), 1.5f);
        QCOMPARE(e5m2(1.126f), 1.25f);
    }

    void everyCodeRoundTrips()
    {
        for (const hd::Fp8Format fmt : {hd::k_e4m3, hd::k_e5m2}) {
            int finite = 0;
            for (int c = 0; c < 256; ++c) {
                const float f = hd::fp8_to_float(std::uint8_t(c), fmt);
                const std::uint8_t back = hd::float_to_fp8(f, fmt);
                if (std::isnan(f)) {
                    QCOMPARE(back & 0x7F, 0x7F);
                } else if (std::isinf(f)) {
                    QCOMPARE(back, std::uint8_t((c & 0x80) | fmt.max_code)); // saturates
                } else {
                    QCOMPARE(int(back), c);
                    QCOMPARE(round_to(fmt.bias == 7 ? DType::F8E4M3 : DType::F8E5M2, f), f);
                    ++finite;
                }
            }
            QCOMPARE(finite, fmt.bias == 7 ? 254 : 248); // E4M3: 2 NaNs; E5M2: 2 inf, 6 NaN
        }
    }

    // ---- the CPU ops ---------------------------------------------------------------------
    void quantizeScalesTransposesAndRecordsAmax()
    {
        auto be = make_backend(DeviceChoice::CPU);
        const int h = 4;
        Buffer meta = fresh_meta(*be, 2, h);
        // Block 1: scale 2 and an amax of 100 already in the current slot.
        const std::size_t b1 = fp8_block_floats(h);
        const float two = 2.0f, hundred = 100.0f;
        be->upload_f32(meta, &two, 1, b1 + k_fp8_scale);
        be->upload_f32(meta, &hundred, 1, b1 + k_fp8_history);
        const float inf = std::numeric_limits<float>::infinity();
        const std::vector<float> x = {1.0f, -2.1f, 500.0f, 0.3f, inf, -std::nanf("")};
        Buffer bx = be->alloc(6, DType::BF16);
        be->upload_f32(bx, x.data(), x.size());
        // 2 x 3, stored with k padded to 16 (fp8_padded): y 2 x 16, y_t 3 x 16.
        Buffer y = be->alloc(32, DType::F8E4M3), yt = be->alloc(48, DType::F8E4M3);
        const float nan = std::nanf("");
        be->upload_f32(y, std::vector<float>(32, nan).data(), 32);
        be->upload_f32(yt, std::vector<float>(48, nan).data(), 48);
        be->fp8_quantize(bx, 2, 3, meta, 1, h, true, &y, &yt, nullptr, nullptr);
        const std::vector<float> q = download(*be, y);
        // x (as bf16: -2.1 -> -2.09375, 0.3 -> 0.30078125) times 2, in E4M3, saturated.
        QCOMPARE(q[0], 2.0f);
        QCOMPARE(q[1], -4.0f);   // -4.1875 rounds to -4
        QCOMPARE(q[2], 448.0f);  // 1000 saturates
        QCOMPARE(q[16], 0.625f); // 0.6015625 rounds to 0.625 (ulp 1/16 in [0.5, 1))
        QCOMPARE(q[17], 448.0f); // inf saturates
        QVERIFY(std::isnan(q[18]));
        // The padding is written, zero: a GEMM over k = 16 adds nothing from it.
        for (int r = 0; r < 2; ++r)
            for (int c = 3; c < 16; ++c) QCOMPARE(q[std::size_t(r * 16 + c)], 0.0f);
        const std::vector<float> t = download(*be, yt); // 3 x 2, rows padded to 16
        QCOMPARE(t[0], q[0]);
        QCOMPARE(t[1], q[16]);
        QCOMPARE(t[16], q[1]);
        QCOMPARE(t[17], q[17]);
        QCOMPARE(t[32], q[2]);
        QVERIFY(std::isnan(t[33]));
        for (int c = 0; c < 3; ++c)
            for (int r = 2; r < 16; ++r) QCOMPARE(t[std::size_t(c * 16 + r)], 0.0f);
        // amax: the largest finite |x| (500), folded into block 1's current slot.
        std::vector<float> m = download(*be, meta);
        QCOMPARE(m[b1 + k_fp8_history], 500.0f);
        QCOMPARE(m[k_fp8_history], 0.0f); // block 0 untouched
        // Evaluation: no amax recorded, y_t may be left out.
        const float big = 4000.0f;
        be->upload_f32(bx, &big, 1, 0);
        be->fp8_quantize(bx, 2, 3, meta, 1, h, false, &y, nullptr, nullptr, nullptr);
        m = download(*be, meta);
        QCOMPARE(m[b1 + k_fp8_history], 500.0f);
        QCOMPARE(download(*be, y)[0], 448.0f);
        // E5M2 keeps the range: 4000 * 2 fits.
        Buffer y5 = be->alloc(32, DType::F8E5M2);
        be->fp8_quantize(bx, 2, 3, meta, 1, h, true, &y5, nullptr, nullptr, nullptr);
        QCOMPARE(download(*be, y5)[0], 8192.0f);
        QCOMPARE(download(*be, meta)[b1 + k_fp8_history], 4000.0f);
    }

    // Relu's gate as bits: the x pass writes x > 0 (bit c % 32 of word c / 32 of its row),
    // and dZ's pass gated by those bits writes what the 16-bit gate gives.
    void reluMaskGatesLikeTheOutput()
    {
        auto be = make_backend(DeviceChoice::CPU);
        const int rows = 3, cols = 40, h = 2; // two words a row, the second partly used
        Buffer meta = fresh_meta(*be, 2, h);
        std::vector<float> y(std::size_t(rows) * cols), dy(y.size());
        for (std::size_t i = 0; i < y.size(); ++i) {
            y[i] = i % 3 == 0 ? 0.0f : i % 3 == 1 ? 0.25f * float(i) : -1.0f;
            dy[i] = 0.5f - 0.03f * float(i);
        }
        y[5] = -0.0f;
        y[6] = std::nanf("");
        Buffer by = be->alloc(y.size(), DType::BF16), bdy = be->alloc(dy.size(), DType::BF16);
        be->upload_f32(by, y.data(), y.size());
        be->upload_f32(bdy, dy.data(), dy.size());
        Buffer x8 = be->alloc(std::size_t(rows) * 48, DType::F8E4M3);
        Buffer mask = be->alloc(std::size_t(rows) * std::size_t(relu_mask_words(cols)), DType::I32);
        be->fp8_quantize(by, rows, cols, meta, 0, h, true, &x8, nullptr, nullptr, nullptr, nullptr,
                         &mask);
        std::vector<std::uint32_t> bits(mask.count());
        std::memcpy(bits.data(), mask.data(), bits.size() * sizeof(std::uint32_t));
        for (int r = 0; r < rows; ++r)
            for (int c = 0; c < 64; ++c) {
                const bool bit = (bits[std::size_t(r * 2 + c / 32)] >> (c % 32)) & 1u;
                const bool want = c < cols && y[std::size_t(r * cols + c)] > 0.0f;
                QVERIFY2(bit == want, qPrintable(QString("row %1 col %2").arg(r).arg(c)));
            }
        Buffer a = be->alloc(std::size_t(cols) * 16, DType::F8E5M2);
        Buffer b = be->alloc(a.count(), DType::F8E5M2);
        Buffer sa = be->alloc(std::size_t(cols), DType::F32),
               sb = be->alloc(sa.count(), DType::F32);
        be->fp8_quantize(bdy, rows, cols, meta, 1, h, true, nullptr, &a, &sa, &by);
        be->fp8_quantize(bdy, rows, cols, meta, 1, h, true, nullptr, &b, &sb, nullptr, &mask);
        QCOMPARE(download(*be, b), download(*be, a));
        QCOMPARE(download(*be, sb), download(*be, sa));
        expect_error(
            [&] {
                be->fp8_quantize(bdy, rows, cols, meta, 1, h, true, nullptr, &b, nullptr, &by,
                                 &mask);
            },
            "at most one of relu_gate, relu_mask and relu_mask_out");
        Buffer small = be->alloc(5, DType::I32);
        expect_error(
            [&] {
                be->fp8_quantize(bdy, rows, cols, meta, 1, h, true, nullptr, &b, nullptr, nullptr,
                                 &small);
            },
            "relu_mask must be int32 words of at least 6");
    }

    // dX's transposed weights come from w8 byte for byte, the padding zero.
    void transposeCopiesBytes()
    {
        auto be = make_backend(DeviceChoice::CPU);
        Buffer meta = fresh_meta(*be, 1, 1);
        std::vector<float> x(5 * 8);
        for (std::size_t i = 0; i < x.size(); ++i) x[i] = float(int(i) - 17) * 0.375f;
        Buffer bx = be->alloc(x.size(), DType::BF16);
        be->upload_f32(bx, x.data(), x.size());
        Buffer y = be->alloc(5 * 16, DType::F8E4M3), want = be->alloc(8 * 16, DType::F8E4M3);
        be->fp8_quantize(bx, 5, 8, meta, 0, 1, false, &y, &want, nullptr, nullptr);
        Buffer yt = be->alloc(8 * 16, DType::F8E4M3);
        be->upload_f32(yt, std::vector<float>(8 * 16, std::nanf("")).data(), 8 * 16);
        be->fp8_transpose(y, 5, 8, yt);
        const std::vector<float> got = download(*be, yt), expected = download(*be, want);
        for (std::size_t i = 0; i < got.size(); ++i) QVERIFY2(same(got[i], expected[i]), "y_t");
        QCOMPARE(got[1 * 16 + 3], x[3 * 8 + 1]); // in E4M3's range and grid: exact
        Buffer y5 = be->alloc(5 * 16, DType::F8E5M2);
        expect_error([&] { be->fp8_transpose(y5, 5, 8, yt); }, "must share a dtype");
        expect_error([&] { be->fp8_transpose(y, 5, 17, yt); }, "y holds 80 elements, needs 160");
        // Several at once, as a dense layer issues its input's and its weights': the same
        // bytes as one at a time; one job's output may not be another's buffer, and a
        // bad job is named.
        Buffer yt2 = be->alloc(8 * 16, DType::F8E4M3), y_twice = be->alloc(8 * 16, DType::F8E4M3);
        const Fp8Transpose both[] = {{&y, 5, 8, &yt2, nullptr}, {&y, 5, 8, &y_twice, nullptr}};
        be->fp8_transposes(both);
        const std::vector<float> a = download(*be, yt2), b = download(*be, y_twice);
        for (std::size_t i = 0; i < a.size(); ++i)
            QVERIFY2(same(a[i], expected[i]) && same(b[i], expected[i]), "y_t of each job");
        const Fp8Transpose clash[] = {{&y, 5, 8, &yt2, nullptr}, {&yt2, 8, 5, &y_twice, nullptr}};
        expect_error([&] { be->fp8_transposes(clash); }, "job 0's output is also job 1's buffer");
        expect_error([&] { be->fp8_transpose(yt2, 8, 5, yt2); },
                     "job 0's output is also job 0's buffer");
        const Fp8Transpose bad[] = {{&y, 5, 8, &yt2, nullptr}, {&y5, 5, 8, &y_twice, nullptr}};
        expect_error([&] { be->fp8_transposes(bad); }, "job 1: y and y_t must share a dtype");
        const Fp8Transpose short_y[] = {{&y, 5, 8, &yt2, nullptr}, {&y, 5, 17, &y_twice, nullptr}};
        expect_error([&] { be->fp8_transposes(short_y); }, "job 1: y holds 80 elements, needs 160");
    }

    // mixed_fp8's weights are quantized by the optimizer as it updates them: w8 is what
    // fp8_quantize writes from the values the low copy would hold (the new master rounded
    // to bf16; the copy itself is not stored) with W's scale, the amax folded into W's
    // current slot; a skipped step (overflow under loss scaling) rewrites w8 from the
    // unchanged weights, with the scale as it now is.
    void optimizerQuantizesWeights()
    {
        auto be = make_backend(DeviceChoice::CPU);
        const int rows = 3, cols = 8, h = 4;
        Buffer meta = fresh_meta(*be, 2, h);
        const std::size_t w_block = fp8_block_floats(h); // block 1
        const float scale = 32.0f;
        be->upload_f32(meta, &scale, 1, w_block + k_fp8_scale);
        std::vector<float> w(rows * cols), g(rows * cols);
        for (int i = 0; i < rows * cols; ++i) {
            w[std::size_t(i)] = 0.01f * float(i) - 0.1f;
            g[std::size_t(i)] = i == 7 ? 300.0f : 0.5f - 0.04f * float(i);
        }
        Buffer master = be->alloc(w.size(), DType::F32), low = be->alloc(w.size(), DType::BF16);
        Buffer grad = be->alloc(g.size(), DType::F32), mom = be->alloc(w.size(), DType::F32);
        be->upload_f32(master, w.data(), w.size());
        be->upload_f32(low, w.data(), w.size());
        be->upload_f32(grad, g.data(), g.size());
        be->fill(mom, 0.0f);
        Buffer w8 = be->alloc(std::size_t(rows) * 16, DType::F8E4M3);
        be->fill(w8, 0.0f); // its padding: the network's refresh writes it first
        ParamSlot slot{&master, &grad, &low, &mom, nullptr};
        slot.fp8 = Fp8Weights{&w8, &meta, 1, h, rows, cols};
        auto table = be->prepare_params({slot});
        Buffer scaler = be->alloc(k_scaler_fields, DType::F32);
        const float scaler_init[k_scaler_fields] = {1.0f, 0.0f, 0.0f, 0.0f};
        be->upload_f32(scaler, scaler_init, k_scaler_fields);
        Buffer record = be->alloc(k_record_fields, DType::F32);
        OptimizerConfig opt;
        opt.lr = 0.1f;
        ScalerParams none;
        be->optimizer_step(*table, opt, none, scaler, record, 0);

        // What the quantize op writes from the copy's values (the master rounded: the copy
        // of fp8 weights is not stored), into a second block holding the same scale.
        const std::vector<float> low_before = download(*be, low);
        auto copy_values = [&] {
            std::vector<float> v = download(*be, master);
            round_span(DType::BF16, v.data(), v.size());
            return v;
        };
        auto expected = [&](float block_scale, std::vector<float>& amax_out) {
            Buffer m2 = fresh_meta(*be, 1, h);
            be->upload_f32(m2, &block_scale, 1, k_fp8_scale);
            Buffer want = be->alloc(w8.count(), DType::F8E4M3);
            Buffer values = be->alloc(master.count(), DType::BF16);
            const std::vector<float> v = copy_values();
            be->upload_f32(values, v.data(), v.size());
            be->fp8_quantize(values, rows, cols, m2, 0, h, true, &want, nullptr, nullptr, nullptr);
            amax_out = {download(*be, m2)[k_fp8_history]};
            return download(*be, want);
        };
        std::vector<float> amax;
        std::vector<float> want = expected(scale, amax);
        std::vector<float> got = download(*be, w8);
        for (std::size_t i = 0; i < got.size(); ++i) QVERIFY2(same(got[i], want[i]), "w8");
        QCOMPARE(download(*be, low), low_before); // not stored
        const std::vector<float> lw = copy_values();
        QVERIFY(lw[7] < -20.0f);         // the big gradient moved it past E4M3's 448 / 32
        QCOMPARE(got[7], -448.0f);       // saturated
        QCOMPARE(got[0 * 16 + 8], 0.0f); // padding left as it was
        std::vector<float> m = download(*be, meta);
        QCOMPARE(m[w_block + k_fp8_history], amax[0]);
        QCOMPARE(m[w_block + k_fp8_history], std::fabs(lw[7]));
        QCOMPARE(m[k_fp8_history], 0.0f); // x's block untouched

        // A skipped step: inf in the gradient under dynamic loss scaling. The weights stay;
        // W's scale moved since (as the step's scale update would move it): w8 follows.
        const float inf = std::numeric_limits<float>::infinity();
        be->upload_f32(grad, &inf, 1, 3);
        const float new_scale = 0.5f, zero = 0.0f;
        be->upload_f32(meta, &new_scale, 1, w_block + k_fp8_scale);
        be->upload_f32(meta, &zero, 1, w_block + k_fp8_history);
        ScalerParams dynamic;
        dynamic.mode = LossScaleMode::Dynamic;
        be->optimizer_step(*table, opt, dynamic, scaler, record, 0);
        QCOMPARE(download(*be, record)[k_rec_overflow], 1.0f);
        QCOMPARE(copy_values(), lw); // not updated
        want = expected(new_scale, amax);
        got = download(*be, w8);
        for (std::size_t i = 0; i < got.size(); ++i) QVERIFY2(same(got[i], want[i]), "w8 skip");
        QCOMPARE(got[7], e4m3(lw[7] * 0.5f));
        QCOMPARE(download(*be, meta)[w_block + k_fp8_history], std::fabs(lw[7]));

        // The slot's copy is checked as prepare_params receives it.
        ParamSlot bad = slot;
        bad.fp8.cols = 6;
        bad.fp8.rows = 4;
        expect_error([&] { be->prepare_params({bad}); }, "cols must be a multiple of 4");
        bad = slot;
        bad.fp8.rows = 2;
        expect_error([&] { be->prepare_params({bad}); }, "fp8 weights of 2x8 for a tensor of 24");
        bad = slot;
        bad.low = nullptr;
        expect_error([&] { be->prepare_params({bad}); }, "16-bit `low` copy");
        // Every message names the slot, the fp8 copy's own checks too.
        Buffer short_w8 = be->alloc(4, DType::F8E4M3);
        bad = slot;
        bad.fp8.w8 = &short_w8;
        expect_error([&] { be->prepare_params({bad}); }, "slot 0: w8 holds 4 elements, needs 48");
        bad = slot;
        bad.grad = &short_w8;
        expect_error([&] { be->prepare_params({bad}); }, "slot 0: grad must be a floating buffer");
    }

    // A network keeps each fp8 layer's w8 equal to its weights quantized with W's scale,
    // and W's current amax slot equal to their amax: from the start, and after the host
    // writes the weights (taken again, not folded with the replaced weights' amax).
    void networkKeepsQuantizedWeights()
    {
        auto be = make_backend(DeviceChoice::CPU);
        const Fp8Mlp m;
        Network net(m.graph, Policy::MixedFP8, OptimizerConfig{}, *be, 8, 1, 1, m.fp8);
        const std::size_t stride = fp8_block_floats(2);
        auto check = [&](const char* when) {
            const std::vector<float> m = download(*be, *net.fp8_meta());
            int quantized = 0;
            for (std::size_t i = 0; i < net.slot_count(); ++i) {
                const Fp8Weights& f = net.slot_fp8(i);
                if (!f.w8) continue;
                ++quantized;
                std::vector<float> w = net.read_slot(i);
                round_span(DType::BF16, w.data(), w.size()); // the copy the GEMMs read
                const std::vector<float> q = download(*be, *f.w8);
                const float s = m[f.block * stride + k_fp8_scale];
                float amax = 0.0f;
                for (int r = 0; r < f.rows; ++r)
                    for (int c = 0; c < f.cols; ++c) {
                        const float v = w[std::size_t(r * f.cols + c)];
                        amax = std::max(amax, std::fabs(v));
                        QVERIFY2(same(q[std::size_t(r * fp8_padded(f.cols) + c)], e4m3(v * s)),
                                 when);
                    }
                QVERIFY2(m[f.block * stride + k_fp8_history] == amax, when);
            }
            QCOMPARE(quantized, 2); // the two hidden layers; the 10-unit head stays bf16
        };
        check("after construction");
        // Layer 1's relu output is layer 2's fp8 input: its gate comes back as bits.
        const std::vector<std::string> lines = net.describe();
        QVERIFY2(
            QString::fromStdString(lines[0]).contains("relu's backward reads its gate as bits"),
            lines[0].c_str());
        QVERIFY(!QString::fromStdString(lines[1]).contains("as bits"));
        // Its 16 units need no padding for the GEMM's E4M3 output, and none is named.
        QVERIFY2(QString::fromStdString(lines[0]).contains(
                     "the GEMM writes the next layer's input in E4M3, its 16-bit output"),
                 lines[0].c_str());
        // A relu whose output no fp8 layer quantizes (the second one here feeds the bf16
        // head) keeps reading its 16-bit output, and its unclaimed mask holds no memory:
        // the network is as large as one without that relu.
        const Graph relu2 =
            build_graph(mlp({dense(16, Activation::Relu), dense(16, Activation::Relu), dense(10)}),
                        Shape{{4, 4, 1}}, 10);
        Network with(relu2, Policy::MixedFP8, OptimizerConfig{}, *be, 8, 1, 1, m.fp8);
        QCOMPARE(with.device_bytes(), net.device_bytes());
        QVERIFY(!QString::fromStdString(with.describe()[1]).contains("as bits"));
        // New weights, all smaller than the first ones: W's amax is theirs alone.
        std::vector<float> p = net.read_parameters();
        for (float& v : p) v *= 0.25f;
        net.write_parameters(p);
        check("after write_parameters");
        std::vector<float> w0 = net.read_slot(0);
        for (float& v : w0) v *= 3.0f;
        net.write_slot(0, w0);
        check("after write_slot");
    }

    // An fp8 first layer fed by the gather: the batch gathered straight into its operands
    // (Network::fp8_batch, gather_batch_fp8) gives the forward pass the same logits and
    // amax as the 16-bit batch quantized by the layer, and the layer does not read the
    // 16-bit input then (zeroed below). Evaluation asks for no transpose and no amax; a
    // first layer kept out of fp8, or another policy, offers none.
    void gatheredBatchFeedsTheFirstLayer()
    {
        auto be = make_backend(DeviceChoice::CPU);
        const Fp8Mlp m;
        const int batch = 8, n = 20;
        Network plain(m.graph, Policy::MixedFP8, OptimizerConfig{}, *be, batch, 1, 7, m.fp8);
        Network fused(m.graph, Policy::MixedFP8, OptimizerConfig{}, *be, batch, 1, 7, m.fp8);
        const std::optional<Fp8Batch> train = fused.fp8_batch(true), eval = fused.fp8_batch(false);
        QVERIFY(train && eval);
        QVERIFY(train->x8 && train->x8_t && train->record_amax && train->meta == fused.fp8_meta());
        QVERIFY(eval->x8 == train->x8 && !eval->x8_t && !eval->record_amax);
        const std::vector<std::string> lines = fused.describe();
        QVERIFY2(QString::fromStdString(lines[0]).contains("x quantized by the batch gather"),
                 lines[0].c_str());
        QVERIFY(!QString::fromStdString(lines[1]).contains("gather"));

        const std::size_t count = n;
        std::vector<std::uint8_t> pixels(count * 16), labels(count);
        for (std::size_t i = 0; i < pixels.size(); ++i) pixels[i] = std::uint8_t(i * 37 % 256);
        for (std::size_t i = 0; i < labels.size(); ++i) labels[i] = std::uint8_t(i % 10);
        std::vector<std::int32_t> order(count);
        for (int i = 0; i < n; ++i) order[std::size_t(i)] = (i * 7) % n;
        Buffer images = be->alloc(pixels.size(), DType::U8),
               label_buf = be->alloc(labels.size(), DType::U8);
        Buffer order_buf = be->alloc(order.size(), DType::I32);
        be->upload_raw(images, pixels.data(), pixels.size());
        be->upload_raw(label_buf, labels.data(), labels.size());
        be->upload_raw(order_buf, order.data(), order.size() * sizeof(std::int32_t));
        Normalization norm;
        norm.mean[0] = 0.3f;
        norm.inv_std[0] = 3.0f;
        const ImageShape image{4, 4, 1};
        for (bool training : {true, false}) {
            be->gather_batch(images, label_buf, order_buf, 4, batch, image, norm, Augmentation{},
                             StepCounter{}, plain.input(), plain.labels());
            plain.forward(batch, training, 0);
            const std::optional<Fp8Batch> q = fused.fp8_batch(training);
            be->gather_batch_fp8(images, label_buf, order_buf, 4, batch, image, norm,
                                 Augmentation{}, StepCounter{}, *q, fused.input(), fused.labels());
            be->fill(fused.input(), 0.0f); // not read: the layer takes x8 as the gather left it
            fused.forward(batch, training, 0, true);
            const std::vector<float> a = download(*be, plain.logits()),
                                     b = download(*be, fused.logits());
            for (std::size_t i = 0; i < a.size(); ++i) QVERIFY2(same(a[i], b[i]), "logits");
            const std::vector<float> ma = download(*be, *plain.fp8_meta()),
                                     mb = download(*be, *fused.fp8_meta());
            for (std::size_t i = 0; i < ma.size(); ++i) QVERIFY2(same(ma[i], mb[i]), "meta");
            QCOMPARE(download(*be, plain.labels()), download(*be, fused.labels()));
        }
        // The first layer's input as the layer would quantize it: without the flag the
        // zeroed input is read (the logits move), so the flag is what skipped the pass.
        fused.forward(batch, true, 0);
        const std::vector<float> a = download(*be, plain.logits()),
                                 b = download(*be, fused.logits());
        QVERIFY(a != b);

        ModelSpec kept = m.spec;
        kept.layers[1].no_fp8 = true; // "dtype": "bfloat16"
        Network wide(build_graph(kept, Shape{{4, 4, 1}}, 10), Policy::MixedFP8, OptimizerConfig{},
                     *be, batch, 1, 7, m.fp8);
        QVERIFY(!wide.fp8_batch(true));
        Network bf16(m.graph, Policy::MixedBF16, OptimizerConfig{}, *be, batch, 1, 7);
        QVERIFY(!bf16.fp8_batch(true));
    }

    // Layer 1 (24 relu units) feeds fp8 layer 2 alone: its GEMM writes layer 2's E4M3
    // input (node.h's Fp8Output), its units run padded to 32 with zero weights and a zero
    // bias past 24, and layer 2's x pass is gone; MIXLAB_FP8_QUANTIZE_PASS=1 keeps the
    // pass. The parameters stay the model's own (24 biases). The GEMM rounds its fp32
    // result once where the pass rounds the bf16 output again: x's amax agrees within a
    // bf16 rounding (anything past the 24 units would show in it), evaluation moves no
    // amax, a numerics-sampled pass also writes the 16-bit output (and changes nothing
    // else), and both ways train alike, their scales too (the optimizer keeps the padding
    // zero). A residual's shortcut reading the output too withdraws the offer.
    void gemmWritesTheNextLayersInput()
    {
        auto be = make_backend(DeviceChoice::CPU);
        const ModelSpec spec = mlp({dense(24, Activation::Relu), dense(16), dense(10)});
        const Graph graph = build_graph(spec, Shape{{4, 4, 1}}, 10);
        Fp8Config fp8;
        fp8.amax_history = 2;
        const int batch = 8;
        Network fused(graph, Policy::MixedFP8, OptimizerConfig{}, *be, batch, 1, 7, fp8);
        qputenv("MIXLAB_FP8_QUANTIZE_PASS", "1");
        Network pass(graph, Policy::MixedFP8, OptimizerConfig{}, *be, batch, 1, 7, fp8);
        qunsetenv("MIXLAB_FP8_QUANTIZE_PASS");
        const std::vector<std::string> lines = fused.describe(), plain = pass.describe();
        QVERIFY2(QString::fromStdString(lines[0]).contains(
                     "the GEMM writes the next layer's input in E4M3 (units run padded to 32)"),
                 lines[0].c_str());
        QVERIFY2(QString::fromStdString(lines[0]).contains("reads its gate as bits"),
                 lines[0].c_str());
        QVERIFY2(QString::fromStdString(lines[1]).contains("x written in E4M3 by the layer "
                                                           "before's GEMM"),
                 lines[1].c_str());
        // Layer 2's output feeds the bf16 head: offered, not taken.
        QVERIFY(!QString::fromStdString(lines[1]).contains("writes the next layer's input"));
        QVERIFY(!QString::fromStdString(plain[0]).contains("writes the next layer's input"));
        QVERIFY(!QString::fromStdString(plain[1]).contains("x written"));
        QCOMPARE(fused.read_parameters().size(),
                 std::size_t(16 * 24 + 24 + 24 * 16 + 16 + 16 * 10 + 10));
        QCOMPARE(fused.read_parameters(), pass.read_parameters());

        std::vector<float> x(std::size_t(batch) * 16);
        for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::sin(float(i) * 0.7f) * 3.0f;
        const std::size_t stride = fp8_block_floats(fp8.amax_history);
        const auto names = fused.fp8_names();
        const std::size_t x2 = std::size_t(
            std::find(names.begin(), names.end(), std::string("layer 2 x")) - names.begin());
        QVERIFY(x2 < names.size());
        for (Network* n : {&fused, &pass}) {
            be->upload_f32(n->input(), x.data(), x.size());
            n->forward(batch, true, 0);
        }
        const std::vector<float> mf = download(*be, *fused.fp8_meta()),
                                 mp = download(*be, *pass.fp8_meta());
        const float af = mf[x2 * stride + k_fp8_history], ap = mp[x2 * stride + k_fp8_history];
        QVERIFY2(ap > 0.0f && std::fabs(af - ap) <= ap * 0x1p-8f,
                 qPrintable(QString("amax %1 against %2").arg(af).arg(ap)));
        const std::vector<float> lf = download(*be, fused.logits()),
                                 lp = download(*be, pass.logits());
        float worst = 0.0f, largest = 0.0f;
        for (std::size_t i = 0; i < lp.size(); ++i) {
            worst = std::max(worst, std::fabs(lf[i] - lp[i]));
            largest = std::max(largest, std::fabs(lp[i]));
        }
        QVERIFY2(worst <= 0.1f * largest,
                 qPrintable(QString("logits %1 of %2").arg(worst).arg(largest)));
        fused.forward(batch, false, 0);
        QCOMPARE(download(*be, *fused.fp8_meta()), mf); // evaluation records no amax
        // A numerics-sampled pass also writes layer 1's 16-bit output (what the pass
        // network's layer 1 writes: the same GEMM), and changes no number of the step.
        fused.forward(batch, true, 0, false, true);
        const std::vector<float> sampled_logits = download(*be, fused.logits()),
                                 sampled_meta = download(*be, *fused.fp8_meta());
        QCOMPARE(fused.numerics_layers()[0].path, std::string("layer 1")); // (flatten: none)
        QCOMPARE(download(*be, *fused.numerics_layers()[0].activation),
                 download(*be, *pass.numerics_layers()[0].activation));
        fused.forward(batch, true, 0);
        QCOMPARE(download(*be, fused.logits()), sampled_logits);
        QCOMPARE(download(*be, *fused.fp8_meta()), sampled_meta);

        const Dataset data = make_synthetic(256, 64, 6);
        DeviceDataset dev(data, *be);
        const ModelSpec wide = mlp({dense(40, Activation::Relu), dense(24), dense(10)});
        const Graph wide_graph = build_graph(wide, Shape{{32, 32, 3}}, data.classes);
        RecordingSink sinks[2];
        for (int i = 0; i < 2; ++i) {
            if (i == 1) qputenv("MIXLAB_FP8_QUANTIZE_PASS", "1");
            RunConfig cfg = cpu_config(Policy::MixedFP8, 32);
            cfg.steps = 24;
            TrainingRun run(wide_graph, cfg, dev, *be);
            train(run, sinks[i]);
            qunsetenv("MIXLAB_FP8_QUANTIZE_PASS");
            QVERIFY(QString::fromStdString(run.describe()[0]).contains("padded to 48") == (i == 0));
        }
        // Two roundings apart, the runs drift a little step by step (6% at worst seen
        // late, where the losses are small); over the last 8 steps within 1.1%.
        QCOMPARE(sinks[0].steps.size(), sinks[1].steps.size());
        double tail[2] = {0, 0};
        const std::size_t steps = sinks[0].steps.size();
        for (std::size_t k = 0; k < steps; ++k) {
            const float a = sinks[0].steps[k].loss, b = sinks[1].steps[k].loss;
            QVERIFY2(std::fabs(a - b) <= 0.1f * b,
                     qPrintable(QString("step %1: loss %2 against %3").arg(k).arg(a).arg(b)));
            for (int i = 0; i < 2; ++i)
                if (k + 8 >= steps) tail[i] += sinks[std::size_t(i)].steps[k].loss / 8.0;
        }
        QVERIFY2(std::fabs(tail[0] - tail[1]) <= 0.03 * tail[1],
                 qPrintable(QString("last 8 steps' loss %1 against %2").arg(tail[0]).arg(tail[1])));
        const StepMetrics &a = sinks[0].steps.back(), &b = sinks[1].steps.back();
        QVERIFY(a.fp8_log2_scale_min && b.fp8_log2_scale_min);
        QVERIFY2(std::fabs(*a.fp8_log2_scale_min - *b.fp8_log2_scale_min) <= 0.1f &&
                     std::fabs(*a.fp8_log2_scale_max - *b.fp8_log2_scale_max) <= 0.1f,
                 qPrintable(QString("log2 scales %1..%2 against %3..%4")
                                .arg(*a.fp8_log2_scale_min)
                                .arg(*a.fp8_log2_scale_max)
                                .arg(*b.fp8_log2_scale_min)
                                .arg(*b.fp8_log2_scale_max)));

        // The relu output read by the body's first layer and by the block's shortcut.
        LayerSpec block;
        block.type = LayerType::Residual;
        block.body = {dense(24, Activation::Relu), dense(24)};
        ModelSpec res = mlp({dense(24, Activation::Relu), dense(10)});
        res.layers.insert(res.layers.begin() + 2, block);
        Network shared(build_graph(res, Shape{{4, 4, 1}}, 10), Policy::MixedFP8, OptimizerConfig{},
                       *be, batch, 1, 7, fp8);
        // Inside the body the second layer alone reads the first's output: that one stands.
        int checked = 0;
        for (const std::string& line : shared.describe()) {
            const QString l = QString::fromStdString(line);
            const bool written = l.contains("x written in E4M3");
            if (l.startsWith("layer 1 ") || l.startsWith("layer 2 > body 0 ")) {
                QVERIFY2(!written, line.c_str());
                QVERIFY2(l.startsWith("layer 2") || !l.contains("next layer's input"),
                         line.c_str());
                ++checked;
            }
            if (l.startsWith("layer 2 > body 1 ")) {
                QVERIFY2(written, line.c_str());
                ++checked;
            }
        }
        QCOMPARE(checked, 3);
    }

    // dZ's pass also gives the bias gradient: x's column sums, unscaled and unrounded by
    // the fp8 format, in the sums' own dtype.
    void quantizeSumsColumns()
    {
        auto be = make_backend(DeviceChoice::CPU);
        const int h = 1;
        Buffer meta = fresh_meta(*be, 1, h);
        const std::vector<float> x = {1.0f, -2.5f, 0.125f, 3.0f, 0.5f, -0.375f};
        Buffer bx = be->alloc(6, DType::F32);
        be->upload_f32(bx, x.data(), x.size());
        Buffer y = be->alloc(32, DType::F8E5M2);
        Buffer sums = be->alloc(3, DType::F32), sums16 = be->alloc(3, DType::BF16);
        be->fp8_quantize(bx, 2, 3, meta, 0, h, true, &y, nullptr, &sums, nullptr);
        const std::vector<float> s = download(*be, sums);
        QCOMPARE(s[0], 4.0f);
        QCOMPARE(s[1], -2.0f);
        QCOMPARE(s[2], -0.25f);
        // A bf16 bias gradient: the fp32 sum rounded once (1.00390625 + 2 -> 3.00390625 -> 3).
        const std::vector<float> x2 = {1.00390625f, 1.0f, 1.0f, 2.0f, 1.0f, 1.0f};
        be->upload_f32(bx, x2.data(), x2.size());
        be->fp8_quantize(bx, 2, 3, meta, 0, h, true, &y, nullptr, &sums16, nullptr);
        QCOMPARE(download(*be, sums16)[0], 3.0f);
    }

    // Under relu the pass reads dY gated by the layer's output (dZ = dY where Y > 0):
    // quantized values, sums and amax all see the gated x, as relu's backward would give.
    void quantizeGatesByRelu()
    {
        auto be = make_backend(DeviceChoice::CPU);
        const int h = 1;
        Buffer meta = fresh_meta(*be, 1, h);
        const std::vector<float> dy = {1.0f, -2.5f, 300.0f, 3.0f, 0.5f, -0.375f};
        const std::vector<float> y = {0.5f, 0.0f, -0.0f, 2.0f, 1e-30f, 0.0f};
        Buffer bdy = be->alloc(6, DType::F32), by = be->alloc(6, DType::F32);
        be->upload_f32(bdy, dy.data(), dy.size());
        be->upload_f32(by, y.data(), y.size());
        Buffer q = be->alloc(32, DType::F8E5M2), qt = be->alloc(48, DType::F8E5M2);
        Buffer sums = be->alloc(3, DType::F32);
        be->fp8_quantize(bdy, 2, 3, meta, 0, h, true, &q, &qt, &sums, &by);
        const std::vector<float> v = download(*be, q);
        QCOMPARE(v[0], 1.0f);
        QCOMPARE(v[1], 0.0f);
        QCOMPARE(v[2], 0.0f); // 300 gated by -0: never seen, not even by the amax
        QCOMPARE(v[16], 3.0f);
        QCOMPARE(v[17], 0.5f); // a tiny positive output still passes the gradient
        QCOMPARE(v[18], 0.0f);
        const std::vector<float> s = download(*be, sums);
        QCOMPARE(s[0], 4.0f);
        QCOMPARE(s[1], 0.5f);
        QCOMPARE(s[2], 0.0f);
        QCOMPARE(download(*be, meta)[k_fp8_history], 3.0f);
        // A gate of another dtype is refused.
        Buffer wrong = be->alloc(6, DType::BF16);
        bool refused = false;
        try {
            be->fp8_quantize(bdy, 2, 3, meta, 0, h, true, &q, nullptr, nullptr, &wrong);
        } catch (const Error& e) {
            refused = QString::fromStdString(e.what()).contains("relu_gate must share x's dtype");
        }
        QVERIFY(refused);
    }

    void updateScalesRollsTheHistory()
    {
        auto be = make_backend(DeviceChoice::CPU);
        const int h = 4;
        const std::size_t s = fp8_block_floats(h);
        Buffer meta = fresh_meta(*be, 3, h);
        std::vector<float> m = download(*be, meta);
        // Block 0: history (newest first) 2, 8, 1, 4 -> amax 8.
        const float h0[] = {2, 8, 1, 4};
        std::copy(h0, h0 + 4, m.begin() + k_fp8_history);
        // Block 1: nothing seen (all zero) with scale 3: kept.
        m[s + k_fp8_scale] = 3.0f;
        m[s + k_fp8_scale_inv] = 1.0f / 3.0f;
        // Block 2: E5M2, an infinite amax: the scale stays.
        m[2 * s + k_fp8_max_finite] = 57344.0f;
        m[2 * s + k_fp8_scale] = 5.0f;
        m[2 * s + k_fp8_history + 2] = std::numeric_limits<float>::infinity();
        be->upload_f32(meta, m.data(), m.size());
        be->fp8_update_scales(meta, 3, h, 1);
        m = download(*be, meta);
        QCOMPARE(m[k_fp8_scale], 28.0f); // 448 / 8 / 2^1
        QCOMPARE(m[k_fp8_scale_inv], 1.0f / 28.0f);
        QCOMPARE(m[k_fp8_last_amax], 8.0f);
        QCOMPARE(m[k_fp8_max_finite], 448.0f);
        const float rolled[] = {0, 2, 8, 1}; // 4, the oldest, dropped
        for (int j = 0; j < 4; ++j) QCOMPARE(m[k_fp8_history + j], rolled[j]);
        QCOMPARE(m[s + k_fp8_scale], 3.0f);
        QCOMPARE(m[s + k_fp8_scale_inv], 1.0f / 3.0f);
        QCOMPARE(m[s + k_fp8_last_amax], 0.0f);
        QCOMPARE(m[2 * s + k_fp8_scale], 5.0f);
        QVERIFY(std::isinf(m[2 * s + k_fp8_last_amax]));
        QVERIFY(std::isinf(m[2 * s + k_fp8_history + 3]));
        // A negative margin gives headroom the other way; the next update sees 8 again.
        be->fp8_update_scales(meta, 1, h, -2);
        m = download(*be, meta);
        QCOMPARE(m[k_fp8_scale], 224.0f); // 448 / 8 * 4
        QCOMPARE(m[k_fp8_history + 3], 8.0f);
        // 8 leaves the history after two more updates: then amax 2, then nothing at all.
        be->fp8_update_scales(meta, 1, h, 0); // history 0 0 2 8: amax 8
        QCOMPARE(download(*be, meta)[k_fp8_scale], 56.0f);
        be->fp8_update_scales(meta, 1, h, 0); // 0 0 0 2: amax 2
        m = download(*be, meta);
        QCOMPARE(m[k_fp8_scale], 224.0f);
        QCOMPARE(m[k_fp8_last_amax], 2.0f);
        be->fp8_update_scales(meta, 1, h, 0); // all zero: the scale stays
        m = download(*be, meta);
        QCOMPARE(m[k_fp8_scale], 224.0f);
        QCOMPARE(m[k_fp8_last_amax], 0.0f);
    }

    void fp8GemmMatchesHandComputed()
    {
        auto be = make_backend(DeviceChoice::CPU);
        const int m = 2, n = 8, k = 16; // n: c's rows on 16 bytes in bf16 too
        std::vector<float> a(m * k), b(n * k);
        for (int i = 0; i < m * k; ++i) a[std::size_t(i)] = float((i % 5) - 2); // -2..2
        for (int i = 0; i < n * k; ++i) b[std::size_t(i)] = float((i % 7) - 3) * 0.5f;
        Buffer ba = be->alloc(a.size(), DType::F8E4M3), bb = be->alloc(b.size(), DType::F8E5M2);
        be->upload_f32(ba, a.data(), a.size());
        be->upload_f32(bb, b.data(), b.size());
        Buffer meta = fresh_meta(*be, 2, 1);
        const float sa = 0.5f, sb = 0.25f; // scale_inv of each
        be->upload_f32(meta, &sa, 1, fp8_scale_inv_index(0, 1));
        be->upload_f32(meta, &sb, 1, fp8_scale_inv_index(1, 1));
        // Exact sums in float32 C (no epilogue: cuBLASLt's fp8 epilogues write bf16).
        Buffer c = be->alloc(std::size_t(m * n), DType::F32);
        GemmCall g;
        g.m = m;
        g.n = n;
        g.k = k;
        g.a = &ba;
        g.b = &bb;
        g.c = &c;
        g.trans_b = true;
        g.math = MathMode::Reduced;
        g.fp8_meta = &meta;
        g.a_scale_inv = fp8_scale_inv_index(0, 1);
        g.b_scale_inv = fp8_scale_inv_index(1, 1);
        be->gemm(g);
        const std::vector<float> out = download(*be, c);
        auto dot = [&](int i, int j) {
            double d = 0;
            for (int p = 0; p < k; ++p)
                d += double(a[std::size_t(i * k + p)]) * double(b[std::size_t(j * k + p)]);
            return d;
        };
        for (int i = 0; i < m; ++i)
            for (int j = 0; j < n; ++j)
                QCOMPARE(out[std::size_t(i * n + j)], float(dot(i, j) * 0.125));
        // bf16 C with bias + relu: the descaled sum plus the bias, clamped, rounded once.
        const float bias_v[] = {1.0f, -100.0f, 0.5f, 2.0f, -1.0f, 0.0f, 3.0f, -0.25f};
        Buffer bias = be->alloc(8, DType::BF16);
        be->upload_f32(bias, bias_v, 8);
        Buffer c16 = be->alloc(std::size_t(m * n), DType::BF16);
        g.c = &c16;
        g.bias = &bias;
        g.epilogue = Epilogue::BiasRelu;
        be->gemm(g);
        const std::vector<float> o16 = download(*be, c16);
        for (int i = 0; i < m; ++i)
            for (int j = 0; j < n; ++j)
                QCOMPARE(
                    o16[std::size_t(i * n + j)],
                    round_to(DType::BF16, float(std::max(dot(i, j) * 0.125 + bias_v[j], 0.0))));
        QCOMPARE(o16[1], 0.0f); // the relu

        // The checks both backends share.
        GemmCall bad = g;
        bad.trans_b = false;
        expect_error([&] { be->gemm(bad); }, "TN form");
        bad = g;
        bad.k = 8;
        expect_error([&] { be->gemm(bad); }, "a multiple of 16");
        bad = g;
        bad.a = &bb;
        expect_error([&] { be->gemm(bad); }, "cannot both be float8_e5m2");
        bad = g;
        bad.fp8_meta = nullptr;
        expect_error([&] { be->gemm(bad); }, "need fp8_meta");
        bad = g;
        bad.b_scale_inv = 99;
        expect_error([&] { be->gemm(bad); }, "outside fp8_meta");
        bad = g;
        bad.epilogue = Epilogue::BiasGelu;
        expect_error([&] { be->gemm(bad); }, "epilogue");
        Buffer f16 = be->alloc(b.size(), DType::BF16);
        bad = g;
        bad.b = &f16;
        expect_error([&] { be->gemm(bad); }, "two fp8 operands");
        expect_error(
            [&] { be->fp8_quantize(f16, 3, 16, meta, 5, 1, true, &bb, nullptr, nullptr, nullptr); },
            "meta holds");
        expect_error(
            [&] {
                be->fp8_quantize(f16, 3, 16, meta, 0, 1, true, nullptr, nullptr, nullptr, nullptr);
            },
            "y or y_t must be given");
        expect_error([&] { be->fp8_update_scales(meta, 2, 1, 9); }, "margin must be between");
        // Longer than a run file allows (the CUDA kernel updates a shared-memory copy).
        expect_error([&] { be->fp8_update_scales(meta, 0, k_max_fp8_history + 1, 0); },
                     "history_len must be between 1 and 1024, got 1025");
    }

    // ---- the policy ----------------------------------------------------------------------
    void policyAndDeviceGate()
    {
        QVERIFY(parse_policy("mixed_fp8") == Policy::MixedFP8);
        QVERIFY(parse_policy("MIXED_FP8") == Policy::MixedFP8);
        QCOMPARE(policy_name(Policy::MixedFP8), std::string_view("mixed_fp8"));
        const PolicyTraits t = policy_traits(Policy::MixedFP8);
        QCOMPARE(int(t.compute), int(DType::BF16));
        QVERIFY(t.master_weights);
        QCOMPARE(t.min_cc, 89);
        QCOMPARE(int(t.math), int(MathMode::Reduced));
        QVERIFY(!t.default_loss_scaling);
        QVERIFY(k_all_policies[5] == Policy::MixedFP8);

        DeviceInfo gpu;
        gpu.backend = BackendKind::Cuda;
        gpu.name = "NVIDIA A100";
        gpu.cc_major = 8;
        gpu.cc_minor = 0;
        expect_error([&] { check_policy_supported(gpu, Policy::MixedFP8); },
                     "policy 'mixed_fp8' needs fp8 tensor cores (compute capability 8.9 or newer");
        expect_error([&] { check_policy_supported(gpu, Policy::MixedFP8); },
                     "NVIDIA A100 has compute capability 8.0");
        check_policy_supported(gpu, Policy::MixedBF16);
        gpu.cc_minor = 9;
        check_policy_supported(gpu, Policy::MixedFP8);
        gpu.cc_major = 9;
        gpu.cc_minor = 0;
        check_policy_supported(gpu, Policy::MixedFP8);
        check_policy_supported(DeviceInfo{}, Policy::MixedFP8); // the CPU emulates it
        // Split masters stay mixed_bf16's.
        RunConfig c;
        c.policy = Policy::MixedFP8;
        c.optimizer.master_weights = MasterWeights::Bf16Split;
        expect_error([&] { validate_run_config(c); }, "mixed_bf16 policy only");
        QVERIFY(with_policy(c, Policy::MixedFP8).optimizer.master_weights == MasterWeights::FP32);
    }

    // ---- the run file's "fp8" object -----------------------------------------------------
    void runConfigFp8()
    {
        const RunConfig d = parse_run_config(R"({"format": "mixlab-run/1"})");
        QCOMPARE(d.fp8.amax_history, 16);
        QCOMPARE(d.fp8.margin, 0);
        QVERIFY(!QString::fromStdString(run_config_to_json(d)).contains("fp8"));
        const RunConfig c = parse_run_config(
            R"({"format": "mixlab-run/1", "policy": "mixed_fp8", "fp8": {"amax_history": 32, "margin": -1, "fast_forward": false}})");
        QVERIFY(c.policy == Policy::MixedFP8);
        QCOMPARE(c.fp8.amax_history, 32);
        QCOMPARE(c.fp8.margin, -1);
        QVERIFY(!c.fp8.fast_forward);
        QVERIFY(d.fp8.fast_forward); // Transformer Engine's recipe by default
        const std::string text = run_config_to_json(c);
        const auto j = nlohmann::json::parse(text);
        QCOMPARE(j.at("fp8").at("amax_history").get<int>(), 32);
        QCOMPARE(j.at("fp8").at("margin").get<int>(), -1);
        QCOMPARE(j.at("fp8").at("fast_forward").get<bool>(), false);
        QVERIFY(parse_run_config(text).fp8 == c.fp8);
        // A mixed_fp8 run writes its defaults too: what it ran with.
        RunConfig plain;
        plain.policy = Policy::MixedFP8;
        QVERIFY(QString::fromStdString(run_config_to_json(plain)).contains("\"amax_history\": 16"));
    }

    void runConfigFp8BadInput_data()
    {
        QTest::addColumn<QString>("fp8");
        QTest::addColumn<QString>("message");
        QTest::addRow("history 0")
            << R"({"amax_history": 0})"
            << "\"fp8.amax_history\" must be between 1 and 1024 steps, got 0";
        QTest::addRow("history huge") << R"({"amax_history": 5000})"
                                      << "\"fp8.amax_history\" must be between 1 and 1024";
        QTest::addRow("history text") << R"({"amax_history": "16"})"
                                      << "\"fp8.amax_history\" must be an integer";
        QTest::addRow("fast_forward text") << R"({"fast_forward": "yes"})"
                                           << "\"fp8.fast_forward\" must be";
        QTest::addRow("margin 9") << R"({"margin": 9})"
                                  << "\"fp8.margin\" must be an integer between -8 and 8";
        QTest::addRow("margin fraction") << R"({"margin": 0.5})"
                                         << "\"fp8.margin\" must be an integer, got 0.5";
        QTest::addRow("unknown field") << R"({"history": 4})"
                                       << "unknown field \"history\" in \"fp8\"";
        QTest::addRow("not an object") << "16"
                                       << "\"fp8\" must be an object";
    }
    void runConfigFp8BadInput()
    {
        QFETCH(QString, fp8);
        QFETCH(QString, message);
        const std::string doc = R"({"format": "mixlab-run/1", "fp8": )" + fp8.toStdString() + "}";
        expect_error([&] { parse_run_config(doc); }, message);
    }

    // ---- which layers run in fp8 ---------------------------------------------------------
    void layersSayWhyTheyStayBf16()
    {
        const Dataset data = make_synthetic(256, 64, 5); // 32x32x3: 3072 inputs
        auto be = make_backend(DeviceChoice::CPU);
        DeviceDataset dev(data, *be);
        LayerSpec kept = dense(32, Activation::Relu);
        kept.no_fp8 = true;
        LayerSpec wide = dense(32, Activation::Relu);
        wide.force_fp32 = true;
        const ModelSpec spec = mlp({dense(64, Activation::Relu), kept, wide, dense(10)});
        const Graph graph = build_graph(spec, Shape{{32, 32, 3}}, data.classes);
        RunConfig cfg = cpu_config(Policy::MixedFP8, 32);
        cfg.steps = 3;
        TrainingRun run(graph, cfg, dev, *be);
        const std::vector<std::string> lines = run.describe();
        QCOMPARE(int(lines.size()), 4);
        QVERIFY2(QString::fromStdString(lines[0]).contains("fp8 GEMMs (E4M3 x and w, E5M2 dy; "
                                                           "delayed scaling over 16 steps, "
                                                           "emulated on the CPU)"),
                 lines[0].c_str());
        QVERIFY2(
            QString::fromStdString(lines[1]).contains("fp8: kept in bfloat16 by the layer's dtype"),
            lines[1].c_str());
        QVERIFY2(
            QString::fromStdString(lines[2]).contains("fp8: kept in float32 by the layer's dtype"),
            lines[2].c_str());
        QVERIFY2(QString::fromStdString(lines[3]).contains("fp8: out 10 is not a multiple of 8"),
                 lines[3].c_str());
        RecordingSink sink;
        train(run, sink);
        QCOMPARE(int(sink.steps.size()), 3);
        QVERIFY(sink.steps[0].fp8_log2_scale_min.has_value());
        // One fp8 layer, three tensors: a scale moved off 1 after the first update.
        QVERIFY(*sink.steps[0].fp8_log2_scale_max > 0.0f);
        // A batch that is not a multiple of 16 runs in fp8 too: the wgrad GEMM's k (the
        // batch) is padded in the transposed copies.
        RunConfig odd = cfg;
        odd.batch_size = 24;
        TrainingRun run24(graph, odd, dev, *be);
        QVERIFY(QString::fromStdString(run24.describe()[0]).contains("fp8 GEMMs"));
        RecordingSink sink24;
        train(run24, sink24);
        QVERIFY(sink24.steps[0].fp8_log2_scale_min.has_value());
        QVERIFY(std::isfinite(sink24.steps.back().loss));
        // "dtype": "bfloat16" is read and written back.
        const ModelSpec back = parse_model_spec(model_spec_to_json(spec));
        QVERIFY(back.layers[2].no_fp8);
        QVERIFY(back == spec);
    }

    void runLogSaysEmulated()
    {
        const Dataset data = make_synthetic(256, 64, 6);
        auto be = make_backend(DeviceChoice::CPU);
        DeviceDataset dev(data, *be);
        const ModelSpec spec = mlp({dense(32, Activation::Relu), dense(10)});
        const Graph graph = build_graph(spec, Shape{{32, 32, 3}}, data.classes);
        RunConfig cfg = cpu_config(Policy::MixedFP8, 32);
        cfg.steps = 4;
        cfg.fp8.amax_history = 4;
        cfg.fp8.margin = 1;
        RunLog log;
        log.set_model(spec, graph);
        log.set_environment(describe_environment(be->info()));
        const int index = log.add_run(cfg);
        TrainingRun run(graph, cfg, dev, *be, index);
        const RunSummary s = train(run, log);
        log.set_summary(index, s);
        const std::string text = log.to_json();
        const auto j = nlohmann::json::parse(text);
        QCOMPARE(j.at("config").at("fp8_execution").get<std::string>(), std::string("emulated"));
        QCOMPARE(j.at("config").at("fp8").at("amax_history").get<int>(), 4);
        QCOMPARE(j.at("config").at("fp8").at("margin").get<int>(), 1);
        QVERIFY(j.at("steps").at(0).contains("fp8_log2_scale_min"));
        QVERIFY(j.at("steps").at(0).contains("fp8_log2_scale_max"));
        QVERIFY(QString::fromStdString(j.at("events").at(0).at("message").get<std::string>())
                    .contains("fp8 emulated on 1 dense layers (amax history 4, margin 1)"));
        // Read back, the log writes the same document.
        QCOMPARE(RunLog::parse(text).to_json(), text);
        // An fp32 run's steps carry no fp8 fields.
        RunLog plain;
        plain.set_environment(describe_environment(be->info()));
        const RunConfig fp32 = cpu_config(Policy::FP32, 32);
        plain.add_run(fp32);
        StepMetrics m;
        plain.on_step(0, m);
        const auto pj = nlohmann::json::parse(plain.to_json());
        QVERIFY(!pj.at("steps").at(0).contains("fp8_log2_scale_min"));
        QVERIFY(!pj.at("config").contains("fp8_execution"));
    }

    // The scales read back with a step's record: their log2 range, and a warning when a
    // tensor's amax leaps past its history.
    void amaxJumpWarns()
    {
        auto be = make_backend(DeviceChoice::CPU);
        const ModelSpec spec = mlp({dense(16, Activation::Relu), dense(10)});
        const Graph graph = build_graph(spec, Shape{{4, 4, 1}}, 10);
        OptimizerConfig opt;
        Fp8Config fp8;
        fp8.amax_history = 3;
        Network net(graph, Policy::MixedFP8, opt, *be, 16, 1, 1, fp8);
        QCOMPARE(net.fp8_tensors(), 3);
        QCOMPARE(net.fp8_names()[2], std::string("layer 1 dy"));
        const std::size_t s = fp8_block_floats(3);
        std::vector<float> m = download(*be, *net.fp8_meta());
        QCOMPARE(m[2 * s + k_fp8_max_finite], 57344.0f); // dy: E5M2
        QCOMPARE(m[k_fp8_max_finite], 448.0f);
        Fp8ScaleWatch watch(*be, net, 2);
        auto step = [&](int slot, float x_amax, float w_scale) {
            // What a step's update leaves: this step's amax one slot older, the current zero.
            m[k_fp8_history + 2] = m[k_fp8_history + 1];
            m[k_fp8_history + 1] = x_amax;
            m[s + k_fp8_scale] = w_scale;
            be->upload_f32(*net.fp8_meta(), m.data(), m.size());
            watch.copy_out(slot);
        };
        std::vector<RunEvent> events;
        StepMetrics sm;
        step(0, 2.0f, 4.0f);
        watch.read(0, sm, events);
        QCOMPARE(*sm.fp8_log2_scale_min, 0.0f); // x and dy still at 1
        QCOMPARE(*sm.fp8_log2_scale_max, 2.0f);
        QVERIFY(events.empty()); // the first step has no history to leap past
        step(1, 30.0f, 0.25f);   // 15x the history's 2: not yet a jump
        watch.read(1, sm, events);
        QCOMPARE(*sm.fp8_log2_scale_min, -2.0f);
        QVERIFY(events.empty());
        sm.step = 3;
        step(0, 500.0f, 1.0f); // 16.7x the history's 30
        watch.read(0, sm, events);
        QCOMPARE(int(events.size()), 1);
        QCOMPARE(events[0].kind, RunEvent::Kind::Warning);
        QCOMPARE(events[0].step, std::int64_t(3));
        const QString msg = QString::fromStdString(events[0].message);
        QVERIFY2(msg.startsWith("fp8 amax jump: layer 1 x reached |x| 500"), qPrintable(msg));
        // The same facts as data, which explain reads instead of the words.
        QVERIFY(events[0].fp8_amax_jump.has_value());
        const Fp8AmaxJump& jump = *events[0].fp8_amax_jump;
        QVERIFY(!jump.reports_stopped);
        QCOMPARE(jump.layer, std::string("layer 1"));
        QCOMPARE(jump.operand, Fp8Operand::X);
        QCOMPARE(jump.amax, 500.0f);
        QCOMPARE(jump.history_max, 30.0f);
        QCOMPARE(jump.more_tensors, 0);
        QCOMPARE(events[0].message, std::string(k_fp8_amax_jump_prefix) + fp8_amax_jump_text(jump));
        // Every step a jump (17x the last): k_fp8_max_jump_events reports, then one that
        // says no more follow, then silence.
        float amax = 500.0f;
        for (int i = 0; i < k_fp8_max_jump_events + 1; ++i) {
            amax *= 17.0f;
            sm.step = 4 + i;
            step((i + 1) % 2, amax, 1.0f);
            watch.read((i + 1) % 2, sm, events);
        }
        QCOMPARE(int(events.size()), k_fp8_max_jump_events + 1);
        QVERIFY(!events[std::size_t(k_fp8_max_jump_events) - 1].fp8_amax_jump->reports_stopped);
        const RunEvent& last = events.back();
        QVERIFY(last.fp8_amax_jump && last.fp8_amax_jump->reports_stopped);
        QCOMPARE(last.message, std::string("fp8 amax jump: 20 jumps reported; later ones are not"));
        step(1, amax * 17.0f, 1.0f);
        watch.read(1, sm, events);
        QCOMPARE(int(events.size()), k_fp8_max_jump_events + 1);
    }

    // ---- issue 18's CPU criterion: within 1 point of fp32 after one epoch ----------------
    void fashionMnistWithinOnePointOfFp32()
    {
        if (!std::filesystem::exists(std::string(k_debian_fashion_mnist_dir)))
            QSKIP("Debian's dataset-fashion-mnist is not installed");
        DatasetOptions opts;
        opts.name = "fashion-mnist";
        const Dataset data = load_dataset(opts, 1);
        auto be = make_backend(DeviceChoice::CPU);
        DeviceDataset dev(data, *be);
        const ModelSpec spec =
            load_model_spec(std::string(MIXLAB_SOURCE_DIR) + "/resources/models/mnist-mlp.json");
        const Graph graph =
            build_graph(spec, Shape{{data.height, data.width, data.channels}}, data.classes);
        float accuracy[2] = {0, 0};
        const Policy policies[2] = {Policy::FP32, Policy::MixedFP8};
        for (int i = 0; i < 2; ++i) {
            RunConfig cfg = cpu_config(policies[i], 128);
            cfg.epochs = 1;
            const auto t0 = std::chrono::steady_clock::now();
            TrainingRun run(graph, cfg, dev, *be);
            RecordingSink sink;
            const RunSummary s = train(run, sink);
            QVERIFY(s.final_test_accuracy.has_value());
            accuracy[i] = *s.final_test_accuracy;
            qInfo("%s: test accuracy %.4f after one epoch in %.1f s",
                  std::string(policy_name(policies[i])).c_str(), double(accuracy[i]),
                  std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
            if (policies[i] == Policy::MixedFP8) {
                // Two of the three dense layers run in fp8 (the last, 10 wide, cannot).
                int fp8_lines = 0;
                for (const auto& l : run.describe())
                    fp8_lines += QString::fromStdString(l).contains("fp8 GEMMs") ? 1 : 0;
                QCOMPARE(fp8_lines, 2);
            }
        }
        QVERIFY2(accuracy[0] >= 0.80f, qPrintable(QString("fp32 %1").arg(accuracy[0])));
        QVERIFY2(accuracy[1] >= accuracy[0] - 0.01f,
                 qPrintable(QString("mixed_fp8 %1 vs fp32 %2").arg(accuracy[1]).arg(accuracy[0])));
    }
};

QTEST_APPLESS_MAIN(TestFp8)
#include "tst_fp8.moc"
