// mixed_fp8's delayed scaling as both backends compute it (base/hd_math.h): the history's
// amax, the scale taken from it (margin, zero, non-finite and tiny amax), one meta block's
// update with its history roll, the quantization of one element (every NaN the positive one),
// and the fp8 argument checks both backends share (backend_validate_fp8.h).
#include "backends/backend_validate_fp8.h"
#include "base/hd_math.h"
#include "mixlab/backend.h"
#include "mixlab/error.h"
#include "mixlab/run_config.h"
#include "test_util.h"

#include <QtTest>

#include <cmath>
#include <limits>
#include <vector>

using namespace mixlab;

namespace {

constexpr float k_nan = std::numeric_limits<float>::quiet_NaN();
constexpr float k_inf = std::numeric_limits<float>::infinity();

std::uint32_t bits(float f) { return hd::float_bits(f); }

} // namespace

class TestFp8Scaling : public QObject {
    Q_OBJECT
private slots:
    void historyAmax();
    void scaleFromAmax();
    void updateBlockRollsHistory();
    void updateBlockKeepsScaleOnBadAmax();
    void quantizeValueNanIsPositive();
    void quantizeChecks();
    void gemmChecks();
};

void TestFp8Scaling::historyAmax()
{
    const float h[] = {0.5f, 3.0f, 0.0f, 2.0f};
    QCOMPARE(hd::fp8_history_amax(h, 4), 3.0f);
    QCOMPARE(hd::fp8_history_amax(h, 1), 0.5f);
    const float zeros[] = {0.0f, 0.0f};
    QCOMPARE(hd::fp8_history_amax(zeros, 2), 0.0f);
    const float with_inf[] = {1.0f, k_inf, 2.0f};
    QVERIFY(std::isinf(hd::fp8_history_amax(with_inf, 3)));
    // NaN wins wherever it sits: a corrupt history is never read as a number.
    const float nan_last[] = {1.0f, 2.0f, k_nan};
    const float nan_first[] = {k_nan, 2.0f, 1.0f};
    QVERIFY(std::isnan(hd::fp8_history_amax(nan_last, 3)));
    QVERIFY(std::isnan(hd::fp8_history_amax(nan_first, 3)));
}

void TestFp8Scaling::scaleFromAmax()
{
    // max_finite / amax, then 2^-margin.
    QCOMPARE(hd::fp8_scale_from_amax(448.0f, 7.0f, 0, 1.0f), 64.0f);
    QCOMPARE(hd::fp8_scale_from_amax(448.0f, 7.0f, 2, 1.0f), 16.0f);
    QCOMPARE(hd::fp8_scale_from_amax(448.0f, 7.0f, -1, 1.0f), 128.0f);
    QCOMPARE(hd::fp8_scale_from_amax(57344.0f, 3.0f, 0, 1.0f), 57344.0f / 3.0f);
    // No usable amax: the old scale stays.
    QCOMPARE(hd::fp8_scale_from_amax(448.0f, 0.0f, 0, 5.0f), 5.0f);
    QCOMPARE(hd::fp8_scale_from_amax(448.0f, k_inf, 0, 5.0f), 5.0f);
    QCOMPARE(hd::fp8_scale_from_amax(448.0f, k_nan, 0, 5.0f), 5.0f);
    QCOMPARE(hd::fp8_scale_from_amax(448.0f, -1.0f, 0, 5.0f), 5.0f);
    // A quotient past float's range: the largest float, never inf.
    QCOMPARE(hd::fp8_scale_from_amax(57344.0f, 1e-39f, 0, 5.0f), std::numeric_limits<float>::max());
}

void TestFp8Scaling::updateBlockRollsHistory()
{
    // scale, scale_inv, max_finite, last_amax, history newest first.
    float b[] = {1.0f, 1.0f, 448.0f, 0.0f, 3.5f, 7.0f, 1.0f, 2.0f};
    hd::fp8_update_block(b, 4, 0);
    QCOMPARE(b[k_fp8_scale], 64.0f);
    QCOMPARE(b[k_fp8_scale_inv], 1.0f / 64.0f);
    QCOMPARE(b[k_fp8_max_finite], 448.0f);
    QCOMPARE(b[k_fp8_last_amax], 7.0f);
    const float rolled[] = {0.0f, 3.5f, 7.0f, 1.0f}; // the oldest (2.0) dropped
    for (int i = 0; i < 4; ++i) QCOMPARE(b[k_fp8_history + std::size_t(i)], rolled[i]);
    // 7 is the amax while the history holds it (it is dropped by the third update).
    hd::fp8_update_block(b, 4, 0);
    QCOMPARE(b[k_fp8_last_amax], 7.0f);
    hd::fp8_update_block(b, 4, 0);
    QCOMPARE(b[k_fp8_last_amax], 7.0f);
    hd::fp8_update_block(b, 4, 0);
    QCOMPARE(b[k_fp8_last_amax], 3.5f);
    QCOMPARE(b[k_fp8_scale], 128.0f);
    // History of one: the current slot is the whole history.
    float one[] = {1.0f, 1.0f, 57344.0f, 0.0f, 14336.0f}; // scale_inv, scale, max, last, history
    hd::fp8_update_block(one, 1, 1);
    QCOMPARE(one[k_fp8_scale], 2.0f);
    QCOMPARE(one[k_fp8_scale_inv], 0.5f);
    QCOMPARE(one[k_fp8_history], 0.0f);
}

void TestFp8Scaling::updateBlockKeepsScaleOnBadAmax()
{
    for (float amax : {0.0f, k_inf, k_nan}) {
        float b[] = {0.25f, 3.0f, 448.0f, 9.0f, amax, 0.0f}; // scale_inv, scale, ...
        hd::fp8_update_block(b, 2, 0);
        QCOMPARE(b[k_fp8_scale], 3.0f);
        QCOMPARE(b[k_fp8_scale_inv], 0.25f); // left as it was, even if not 1/scale
        QCOMPARE(bits(b[k_fp8_last_amax]), bits(amax));
        QCOMPARE(b[k_fp8_history], 0.0f);
        QCOMPARE(bits(b[k_fp8_history + 1]), bits(amax));
    }
}

void TestFp8Scaling::quantizeValueNanIsPositive()
{
    QCOMPARE(int(hd::fp8_quantize_value(-k_nan, 2.0f, hd::k_e4m3)), 0x7F); // sign dropped
    QCOMPARE(int(hd::fp8_quantize_value(k_nan, 2.0f, hd::k_e4m3)), 0x7F);
    QCOMPARE(int(hd::fp8_quantize_value(-k_nan, 0.5f, hd::k_e5m2)), 0x7F);
    // Scaled, then rounded and saturated: 300 * 2 is past E4M3's 448.
    QCOMPARE(int(hd::fp8_quantize_value(300.0f, 2.0f, hd::k_e4m3)), 0x7E);
    QCOMPARE(int(hd::fp8_quantize_value(-k_inf, 2.0f, hd::k_e5m2)), 0xFB);
    QCOMPARE(int(hd::fp8_quantize_value(0.5f, 2.0f, hd::k_e4m3)),
             int(hd::float_to_fp8(1.0f, hd::k_e4m3)));
}

void TestFp8Scaling::quantizeChecks()
{
    auto cpu = make_backend(DeviceChoice::CPU);
    Backend& b = *cpu;
    const int history = 4;
    const char* be = "cpu";
    // x is 2 x 3: y is stored 2 x 16 and y_t 3 x 16 (k padded, fp8_padded).
    Buffer x = b.alloc(6, DType::BF16);
    Buffer y = b.alloc(32, DType::F8E4M3);
    Buffer y_t = b.alloc(48, DType::F8E4M3);
    Buffer y5 = b.alloc(48, DType::F8E5M2);
    Buffer small = b.alloc(31, DType::F8E4M3);
    Buffer not_fp8 = b.alloc(32, DType::BF16);
    Buffer sums = b.alloc(3, DType::F32), few_sums = b.alloc(2, DType::F32);
    Buffer fp8_sums = b.alloc(3, DType::F8E4M3);
    Buffer meta = b.alloc(2 * fp8_block_floats(history), DType::F32);
    Buffer meta_bf16 = b.alloc(2 * fp8_block_floats(history), DType::BF16);
    validate::fp8_quantize(be, x, 2, 3, meta, 1, history, &y, &y_t, &sums, nullptr);
    validate::fp8_quantize(be, x, 2, 3, meta, 1, history, nullptr, &y5, nullptr, nullptr);
    QVERIFY_THROWS_EXCEPTION(
        Error, validate::fp8_quantize(be, x, 2, 3, meta, 1, history, &y, &y5, nullptr, nullptr));
    QVERIFY_THROWS_EXCEPTION(Error, validate::fp8_quantize(be, x, 2, 3, meta, 1, history, nullptr,
                                                           nullptr, nullptr, nullptr));
    // One byte short of the padded 2 x 16.
    QVERIFY_THROWS_EXCEPTION(Error, validate::fp8_quantize(be, x, 2, 3, meta, 1, history, &small,
                                                           nullptr, nullptr, nullptr));
    QVERIFY_THROWS_EXCEPTION(Error, validate::fp8_quantize(be, x, 2, 3, meta, 1, history, &not_fp8,
                                                           nullptr, nullptr, nullptr));
    QVERIFY_THROWS_EXCEPTION(Error, validate::fp8_quantize(be, x, 2, 4, meta, 1, history, &y,
                                                           nullptr, nullptr, nullptr));
    // The column sums: one per column, in a floating (not fp8) dtype.
    QVERIFY_THROWS_EXCEPTION(Error, validate::fp8_quantize(be, x, 2, 3, meta, 1, history, &y,
                                                           nullptr, &few_sums, nullptr));
    QVERIFY_THROWS_EXCEPTION(Error, validate::fp8_quantize(be, x, 2, 3, meta, 1, history, &y,
                                                           nullptr, &fp8_sums, nullptr));
    // Block 2 lies past a meta buffer of two blocks; history 0 is no history.
    QVERIFY_THROWS_EXCEPTION(Error, validate::fp8_quantize(be, x, 2, 3, meta, 2, history, &y,
                                                           nullptr, nullptr, nullptr));
    QVERIFY_THROWS_EXCEPTION(
        Error, validate::fp8_quantize(be, x, 2, 3, meta, 0, 0, &y, nullptr, nullptr, nullptr));
    QVERIFY_THROWS_EXCEPTION(Error, validate::fp8_quantize(be, x, 2, 3, meta_bf16, 0, history, &y,
                                                           nullptr, nullptr, nullptr));
    validate::fp8_update_scales(be, meta, 2, history, 0);
    QVERIFY_THROWS_EXCEPTION(Error, validate::fp8_update_scales(be, meta, 3, history, 0));
    QVERIFY_THROWS_EXCEPTION(Error, validate::fp8_update_scales(be, meta, 1, 0, 0));
}

void TestFp8Scaling::gemmChecks()
{
    auto cpu = make_backend(DeviceChoice::CPU);
    Backend& b = *cpu;
    const char* be = "cpu";
    const int m = 32, n = 48, k = 64;
    Buffer a = b.alloc(std::size_t(m) * k, DType::F8E4M3);
    Buffer a5 = b.alloc(std::size_t(m) * k, DType::F8E5M2);
    Buffer w = b.alloc(std::size_t(n) * k, DType::F8E4M3);
    Buffer w5 = b.alloc(std::size_t(n) * k, DType::F8E5M2);
    Buffer c = b.alloc(std::size_t(m) * n, DType::BF16);
    Buffer c32 = b.alloc(std::size_t(m) * n, DType::F32);
    Buffer c16 = b.alloc(std::size_t(m) * n, DType::F16);
    Buffer bias = b.alloc(std::size_t(n), DType::BF16);
    Buffer bias32 = b.alloc(std::size_t(n), DType::F32);
    Buffer meta = b.alloc(2 * fp8_block_floats(1), DType::F32);
    GemmCall g;
    g.trans_a = false;
    g.trans_b = true;
    g.m = m;
    g.n = n;
    g.k = k;
    g.a = &a;
    g.b = &w;
    g.c = &c;
    g.fp8_meta = &meta;
    g.a_scale_inv = fp8_scale_inv_index(0, 1);
    g.b_scale_inv = fp8_scale_inv_index(1, 1);
    QVERIFY(validate::is_fp8_gemm(g));
    validate::fp8_gemm(be, g);
    // Each refusal for its own reason: the change alone, and the words that name it.
    const auto refused = [&](auto change, const QString& part) {
        GemmCall bad = g;
        change(bad);
        test::expect_cpu_error([&] { validate::fp8_gemm(be, bad); }, "gemm", part);
    };
    refused([](GemmCall& x) { x.trans_b = false; }, "the TN form (trans_a false, trans_b true), "
                                                    "got trans_a false, trans_b false");
    refused([](GemmCall& x) { x.trans_a = true; }, "got trans_a true, trans_b true");
    refused(
        [&](GemmCall& x) {
            x.a = &a5;
            x.b = &w5;
        },
        "a and b cannot both be float8_e5m2");
    refused([](GemmCall& x) { x.k = 40; }, "k (the operands' leading dimension) a multiple of "
                                           "16, got 40");
    // c's rows on 16 bytes: n = 44 bfloat16 values is not, 44 float32 values are.
    refused([](GemmCall& x) { x.n = 44; }, "c rows (n = 44) must be a multiple of 8 bfloat16");
    GemmCall n44 = g;
    n44.n = 44;
    n44.c = &c32;
    validate::fp8_gemm(be, n44);
    refused(
        [&](GemmCall& x) {
            x.n = 42;
            x.c = &c32;
        },
        "c rows (n = 42) must be a multiple of 4 float32");
    refused([&](GemmCall& x) { x.c = &c16; }, "c must be bfloat16, float32 or fp8, got float16");
    refused([](GemmCall& x) { x.fp8_meta = nullptr; }, "fp8 operands need fp8_meta");
    refused([](GemmCall& x) { x.b_scale_inv = 1000; }, "lie outside fp8_meta's");
    refused([](GemmCall& x) { x.epilogue = Epilogue::BiasGradA; },
            "epilogue must be None, Bias or BiasRelu");
    refused([](GemmCall& x) { x.epilogue = Epilogue::Bias; }, "this epilogue needs a bias");
    refused(
        [&](GemmCall& x) {
            x.epilogue = Epilogue::Bias;
            x.bias = &bias32;
        },
        "bias must be bfloat16, got float32");
    refused(
        [&](GemmCall& x) {
            x.epilogue = Epilogue::BiasRelu;
            x.bias = &bias;
            x.c = &c32;
        },
        "with a bias writes bfloat16 or fp8 c");
    // The three shapes a dense layer uses.
    GemmCall fwd = g;
    fwd.epilogue = Epilogue::BiasRelu;
    fwd.bias = &bias;
    validate::fp8_gemm(be, fwd);
    GemmCall dgrad = g;
    dgrad.a = &a5;
    validate::fp8_gemm(be, dgrad);
    GemmCall wgrad = g;
    wgrad.a = &a5;
    wgrad.c = &c32;
    validate::fp8_gemm(be, wgrad);
    // 16-bit GEMMs are not fp8 ones.
    Buffer h = b.alloc(std::size_t(m) * k, DType::BF16);
    GemmCall plain;
    plain.a = &h;
    plain.b = &h;
    QVERIFY(!validate::is_fp8_gemm(plain));
}

QTEST_GUILESS_MAIN(TestFp8Scaling)
#include "tst_fp8_scaling.moc"
