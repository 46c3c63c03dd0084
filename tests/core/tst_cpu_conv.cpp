// The CPU reference convolution (NHWC x, KRSC w): forward against a direct loop in
// double, both backward passes against central differences of sum(y * r) and against
// direct adjoint loops, batch chunking, TF32 operand rounding, 16-bit storage, the
// packed GEMM underneath, the plan report and the argument checks.
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/cpu_sgemm.h"

#include "mixlab/backend.h"
#include "mixlab/error.h"
#include "test_util.h"

#include <QtTest/QtTest>

#include <cmath>
#include <memory>
#include <vector>

using namespace mixlab;
using namespace mixlab::test;

Q_DECLARE_METATYPE(mixlab::ConvGeometry)
Q_DECLARE_METATYPE(mixlab::DType)

namespace {

// Calls f(x index, w index, y index) for every product term of the convolution: the
// definition, written once and used by the forward and both adjoint references.
template <class F>
void for_each_term(const ConvGeometry& g, F f)
{
    for (int n = 0; n < g.batch; ++n)
        for (int p = 0; p < g.out_h; ++p)
            for (int q = 0; q < g.out_w; ++q)
                for (int k = 0; k < g.out_c; ++k)
                    for (int r = 0; r < g.kernel_h; ++r)
                        for (int s = 0; s < g.kernel_w; ++s) {
                            const int h = p * g.stride_h - g.pad_h + r;
                            const int w = q * g.stride_w - g.pad_w + s;
                            if (h < 0 || h >= g.in_h || w < 0 || w >= g.in_w)
                                continue; // zero padding contributes nothing
                            for (int c = 0; c < g.in_c; ++c)
                                f(((std::size_t(n) * g.in_h + h) * g.in_w + w) * g.in_c + c,
                                  ((std::size_t(k) * g.kernel_h + r) * g.kernel_w + s) * g.in_c + c,
                                  ((std::size_t(n) * g.out_h + p) * g.out_w + q) * g.out_c + k);
                        }
}

DVec direct_forward(const ConvGeometry& g, const Vec& x, const Vec& w)
{
    DVec y(g.y_count(), 0.0);
    for_each_term(g, [&](std::size_t xi, std::size_t wi, std::size_t yi) {
        y[yi] += double(x[xi]) * double(w[wi]);
    });
    return y;
}

DVec direct_backward_data(const ConvGeometry& g, const Vec& dy, const Vec& w)
{
    DVec dx(g.x_count(), 0.0);
    for_each_term(g, [&](std::size_t xi, std::size_t wi, std::size_t yi) {
        dx[xi] += double(dy[yi]) * double(w[wi]);
    });
    return dx;
}

DVec direct_backward_filter(const ConvGeometry& g, const Vec& x, const Vec& dy)
{
    DVec dw(g.w_count(), 0.0);
    for_each_term(g, [&](std::size_t xi, std::size_t wi, std::size_t yi) {
        dw[wi] += double(dy[yi]) * double(x[xi]);
    });
    return dw;
}

Vec rounded(const Vec& v, DType t)
{
    Vec out(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) out[i] = round_to(t, v[i]);
    return out;
}

Vec tf32(const Vec& v)
{
    Vec out(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) out[i] = round_to_tf32(v[i]);
    return out;
}

// The geometries every test runs: odd sizes, strides, "same" padding of odd kernels,
// 1x1 (the direct GEMM path and the strided shortcut), non-square kernels and strides,
// channel counts that are not multiples of 8, batch > 1.
void add_geometries()
{
    QTest::addColumn<ConvGeometry>("g");
    QTest::newRow("7x5_3x3_same") << conv_geometry_of(2, 7, 5, 3, 4, 3, 3, 1, 1, 1, 1);
    QTest::newRow("7x5_3x3_stride2_pad1") << conv_geometry_of(2, 7, 5, 3, 5, 3, 3, 2, 2, 1, 1);
    QTest::newRow("7x5_3x3_valid") << conv_geometry_of(2, 7, 5, 2, 3, 3, 3, 1, 1, 0, 0);
    QTest::newRow("6x7_5x5_same") << conv_geometry_of(2, 6, 7, 5, 3, 5, 5, 1, 1, 2, 2);
    QTest::newRow("1x1") << conv_geometry_of(3, 5, 4, 6, 10, 1, 1, 1, 1, 0, 0);
    QTest::newRow("1x1_stride2") << conv_geometry_of(2, 7, 5, 6, 9, 1, 1, 2, 2, 0, 0);
    QTest::newRow("1x3_stride1x2_pad0x1") << conv_geometry_of(2, 5, 7, 3, 4, 1, 3, 1, 2, 0, 1);
    QTest::newRow("7x7_stride2_pad3") << conv_geometry_of(2, 9, 8, 3, 4, 7, 7, 2, 2, 3, 3);
    QTest::newRow("3x3_stride2_even_input") << conv_geometry_of(2, 8, 6, 7, 11, 3, 3, 2, 2, 1, 1);
}

} // namespace

class TestCpuConv : public QObject {
    Q_OBJECT

private:
    std::unique_ptr<cpu::CpuBackend> m_be = std::make_unique<cpu::CpuBackend>();

    // sum(y * r) in double for the backend's fp32 forward of (x, w).
    double loss(const ConvGeometry& g, const Vec& x, const Vec& w, const Vec& r)
    {
        Buffer bx = upload(*m_be, x), bw = upload(*m_be, w), by = poisoned(*m_be, g.y_count());
        m_be->conv2d_forward(g, bx, bw, MathMode::Pedantic, by);
        const Vec y = download(*m_be, by);
        double s = 0;
        for (std::size_t i = 0; i < y.size(); ++i) s += double(y[i]) * double(r[i]);
        return s;
    }

private slots:
    void forward_matches_direct_data() { add_geometries(); }
    void forward_matches_direct();
    void backward_matches_finite_differences_data() { add_geometries(); }
    void backward_matches_finite_differences();
    void chunked_batches_match_direct_data();
    void chunked_batches_match_direct();
    void tf32_rounds_both_operands();
    void sixteen_bit_storage_data();
    void sixteen_bit_storage();
    void prepare_reports_the_plan();
    void sgemm_matches_reference_data();
    void sgemm_matches_reference();
    void rejects_bad_arguments();
};

void TestCpuConv::forward_matches_direct()
{
    QFETCH(ConvGeometry, g);
    Backend& be = *m_be;
    const Vec x = random_vec(g.x_count(), 1), w = random_vec(g.w_count(), 2);
    Buffer bx = upload(be, x), bw = upload(be, w), by = poisoned(be, g.y_count());
    be.conv2d_prepare(g, DType::F32, MathMode::Pedantic);
    be.conv2d_forward(g, bx, bw, MathMode::Pedantic, by);
    // fp32 sums of at most 7*7*3 = 147 products of values in [-1, 1]: the accumulated
    // rounding stays below 147 * 2^-24 * (sum of |terms| <= 147) ~ 1.3e-3 in the worst
    // case and ~1e-6 in practice; 2e-5 absolute catches any wrong or missing term.
    expect_close(download(be, by), direct_forward(g, x, w), 2e-5, 1e-5, "y");
}

void TestCpuConv::backward_matches_finite_differences()
{
    QFETCH(ConvGeometry, g);
    Backend& be = *m_be;
    const Vec x = random_vec(g.x_count(), 11), w = random_vec(g.w_count(), 12);
    const Vec r = random_vec(g.y_count(), 13);
    Buffer bx = upload(be, x), bw = upload(be, w), br = upload(be, r);
    Buffer dx = poisoned(be, x.size()), dw = poisoned(be, w.size());
    be.conv2d_backward_data(g, br, bw, MathMode::Pedantic, dx);
    be.conv2d_backward_filter(g, bx, br, MathMode::Pedantic, dw);
    const Vec got_dx = download(be, dx), got_dw = download(be, dw);

    // L = sum(y * r) is linear in x and in w, so a central difference has no truncation
    // error at any eps; what is left is the fp32 rounding of the few outputs a change
    // touches (unchanged outputs recompute to the same bits and cancel): <= ~100 outputs
    // of ~1e-6 each, divided by 2*eps = 0.1, so ~1e-4 at worst: atol 5e-4.
    const double eps = 0.05;
    DVec num_dx(x.size()), num_dw(w.size());
    Vec xp = x;
    for (std::size_t i = 0; i < x.size(); ++i) {
        xp[i] = x[i] + float(eps);
        const double up = loss(g, xp, w, r), hi = xp[i];
        xp[i] = x[i] - float(eps);
        const double down = loss(g, xp, w, r), lo = xp[i];
        xp[i] = x[i];
        num_dx[i] = (up - down) / (hi - lo); // the step fp32 really took
    }
    Vec wp = w;
    for (std::size_t i = 0; i < w.size(); ++i) {
        wp[i] = w[i] + float(eps);
        const double up = loss(g, x, wp, r), hi = wp[i];
        wp[i] = w[i] - float(eps);
        const double down = loss(g, x, wp, r), lo = wp[i];
        wp[i] = w[i];
        num_dw[i] = (up - down) / (hi - lo); // the step fp32 really took
    }
    expect_close(got_dx, num_dx, 5e-4, 1e-4, "dx vs finite differences");
    expect_close(got_dw, num_dw, 5e-4, 1e-4, "dw vs finite differences");
    // And against the adjoint loops in double: the same fp32 sums as the forward test.
    expect_close(got_dx, direct_backward_data(g, r, w), 2e-5, 1e-5, "dx");
    expect_close(got_dw, direct_backward_filter(g, x, r), 5e-5, 1e-5, "dw");
}

void TestCpuConv::chunked_batches_match_direct_data()
{
    QTest::addColumn<ConvGeometry>("g");
    QTest::addColumn<bool>("one_image_per_chunk");
    // Large enough to cross the GEMM's row, column and depth blocks (96 rows, 96 columns,
    // 256 deep): 405 rows, 180-wide patches, out_c 30.
    const ConvGeometry big = conv_geometry_of(5, 9, 9, 20, 30, 3, 3, 1, 1, 1, 1);
    QTest::newRow("one_chunk") << big << false;
    QTest::newRow("one_image_per_chunk") << big << true;
    const ConvGeometry pointwise = conv_geometry_of(4, 6, 5, 19, 13, 1, 1, 1, 1, 0, 0);
    QTest::newRow("1x1_one_chunk") << pointwise << false;
    QTest::newRow("1x1_one_image_per_chunk") << pointwise << true;
}

void TestCpuConv::chunked_batches_match_direct()
{
    QFETCH(ConvGeometry, g);
    QFETCH(bool, one_image_per_chunk);
    cpu::CpuBackend be;
    if (one_image_per_chunk) be.set_conv_chunk_limit(1);
    const Vec x = random_vec(g.x_count(), 21), w = random_vec(g.w_count(), 22);
    const Vec dy = random_vec(g.y_count(), 23);
    Buffer bx = upload(be, x), bw = upload(be, w), bdy = upload(be, dy);
    Buffer y = poisoned(be, g.y_count()), dx = poisoned(be, x.size()), dw = poisoned(be, w.size());
    // dx and dw start poisoned: the chunks must overwrite, then accumulate, never read.
    be.conv2d_forward(g, bx, bw, MathMode::Pedantic, y);
    be.conv2d_backward_data(g, bdy, bw, MathMode::Pedantic, dx);
    be.conv2d_backward_filter(g, bx, bdy, MathMode::Pedantic, dw);
    // Sums of up to 180 (forward, dx: 270) products in fp32: 5e-5 absolute; dw sums 405
    // products per element: 1e-4.
    expect_close(download(be, y), direct_forward(g, x, w), 5e-5, 1e-5, "y");
    expect_close(download(be, dx), direct_backward_data(g, dy, w), 5e-5, 1e-5, "dx");
    expect_close(download(be, dw), direct_backward_filter(g, x, dy), 1e-4, 1e-5, "dw");
}

void TestCpuConv::tf32_rounds_both_operands()
{
    Backend& be = *m_be;
    const ConvGeometry g = conv_geometry_of(2, 7, 5, 6, 5, 3, 3, 1, 1, 1, 1);
    const Vec x = random_vec(g.x_count(), 31), w = random_vec(g.w_count(), 32);
    const Vec dy = random_vec(g.y_count(), 33);
    Buffer bx = upload(be, x), bw = upload(be, w), bdy = upload(be, dy);
    Buffer y = poisoned(be, g.y_count()), dx = poisoned(be, x.size()), dw = poisoned(be, w.size());
    be.conv2d_prepare(g, DType::F32, MathMode::TF32);
    be.conv2d_forward(g, bx, bw, MathMode::TF32, y);
    be.conv2d_backward_data(g, bdy, bw, MathMode::TF32, dx);
    be.conv2d_backward_filter(g, bx, bdy, MathMode::TF32, dw);
    // With both operands rounded to TF32 first, what remains is fp32 accumulation (sums
    // of <= 54 products): 1e-5 absolute.
    const Vec yv = download(be, y);
    expect_close(yv, direct_forward(g, tf32(x), tf32(w)), 1e-5, 1e-5, "y");
    expect_close(download(be, dx), direct_backward_data(g, tf32(dy), tf32(w)), 1e-5, 1e-5, "dx");
    expect_close(download(be, dw), direct_backward_filter(g, tf32(x), tf32(dy)), 1e-5, 1e-5, "dw");
    // Random operands are not TF32 values: the unrounded result must be measurably away
    // (TF32 keeps 10 mantissa bits: ~5e-4 relative per operand).
    const DVec exact = direct_forward(g, x, w);
    double max_diff = 0;
    for (std::size_t i = 0; i < yv.size(); ++i)
        max_diff = std::max(max_diff, std::abs(yv[i] - exact[i]));
    QVERIFY2(max_diff > 1e-4, "TF32 math did not round the operands");
}

void TestCpuConv::sixteen_bit_storage_data()
{
    QTest::addColumn<DType>("dtype");
    QTest::newRow("float16") << DType::F16;
    QTest::newRow("bfloat16") << DType::BF16;
}

void TestCpuConv::sixteen_bit_storage()
{
    QFETCH(DType, dtype);
    Backend& be = *m_be;
    const ConvGeometry g = conv_geometry_of(2, 7, 5, 3, 4, 3, 3, 2, 2, 1, 1);
    // The operands as a 16-bit layer holds them.
    const Vec x = rounded(random_vec(g.x_count(), 41), dtype);
    const Vec w = rounded(random_vec(g.w_count(), 42), dtype);
    const Vec dy = rounded(random_vec(g.y_count(), 43), dtype);
    Buffer bx = upload(be, x, dtype), bw = upload(be, w, dtype), bdy = upload(be, dy, dtype);
    Buffer y = poisoned(be, g.y_count(), dtype), dx = poisoned(be, x.size(), dtype);
    Buffer dw = poisoned(be, w.size(), dtype);
    be.conv2d_forward(g, bx, bw, MathMode::Reduced, y);
    be.conv2d_backward_data(g, bdy, bw, MathMode::Reduced, dx);
    be.conv2d_backward_filter(g, bx, bdy, MathMode::Reduced, dw);
    // fp32 accumulation, then one rounding to the storage type: half an ulp of the
    // value (2^-11 relative for fp16, 2^-8 for bf16) on top of the fp32 sum's 2e-5.
    const double half_ulp = dtype == DType::F16 ? std::ldexp(1.0, -11) : std::ldexp(1.0, -8);
    const struct {
        const char* name;
        Vec got;
        DVec ref;
    } outs[] = {{"y", download(be, y), direct_forward(g, x, w)},
                {"dx", download(be, dx), direct_backward_data(g, dy, w)},
                {"dw", download(be, dw), direct_backward_filter(g, x, dy)}};
    for (const auto& o : outs) {
        for (float v : o.got)
            EXPECT_EXACT(round_to(dtype, v), v); // stored values are representable
        expect_close(o.got, o.ref, 2e-5, half_ulp, o.name);
    }
}

void TestCpuConv::prepare_reports_the_plan()
{
    const ConvPlanInfo info = m_be->conv2d_prepare(
        conv_geometry_of(4, 28, 28, 1, 32, 3, 3, 1, 1, 1, 1), DType::F32, MathMode::Pedantic);
    QVERIFY2(QString::fromStdString(info.forward_algo).startsWith("im2col + "),
             info.forward_algo.c_str());
    QVERIFY(QString::fromStdString(info.backward_data_algo).endsWith("col2im"));
    QVERIFY(!info.backward_filter_algo.empty());
    QVERIFY(!info.tensor_cores);
    // Whole im2col matrices of one or more images (one chunk per worker thread).
    const std::int64_t image_col = 784 * 9 * sizeof(float);
    QVERIFY(info.workspace_bytes >= image_col && info.workspace_bytes % image_col == 0);
    const ConvPlanInfo pointwise = m_be->conv2d_prepare(
        conv_geometry_of(2, 5, 5, 8, 8, 1, 1, 1, 1, 0, 0), DType::F16, MathMode::Reduced);
    QVERIFY2(QString::fromStdString(pointwise.forward_algo).startsWith("1x1"),
             pointwise.forward_algo.c_str());
}

void TestCpuConv::sgemm_matches_reference_data()
{
    QTest::addColumn<int>("m");
    QTest::addColumn<int>("n");
    QTest::addColumn<int>("k");
    QTest::addColumn<bool>("trans_a");
    QTest::addColumn<bool>("trans_b");
    QTest::addColumn<bool>("accumulate");
    QTest::addColumn<bool>("portable");
    // Tiny, odd, and past every block edge (96 rows, 96 columns, 256 deep, 6x16 tiles),
    // on the AVX2 kernel (where the CPU has it) and on the portable Eigen path.
    const int shapes[][3] = {{1, 1, 1}, {7, 5, 9}, {97, 17, 257}, {200, 130, 600}, {6, 16, 8}};
    for (bool portable : {false, true})
        for (const auto& s : shapes)
            for (bool ta : {false, true})
                for (bool tb : {false, true})
                    for (bool acc : {false, true})
                        QTest::addRow("%s%dx%dx%d_%s%s%s", portable ? "eigen_" : "", s[0], s[1],
                                      s[2], ta ? "T" : "N", tb ? "T" : "N", acc ? "_acc" : "")
                            << s[0] << s[1] << s[2] << ta << tb << acc << portable;
}

void TestCpuConv::sgemm_matches_reference()
{
    QFETCH(int, m);
    QFETCH(int, n);
    QFETCH(int, k);
    QFETCH(bool, trans_a);
    QFETCH(bool, trans_b);
    QFETCH(bool, accumulate);
    QFETCH(bool, portable);
    const Vec a = random_vec(std::size_t(m) * k, 51), b = random_vec(std::size_t(k) * n, 52);
    // C has 3 extra columns per row (ldc > n) that must stay untouched.
    const int ldc = n + 3;
    Vec c = random_vec(std::size_t(m) * ldc, 53);
    const Vec c0 = c;
    // A (m x k) stored row-major, or stored as its transpose (k x m); likewise B.
    const cpu::MatrixView va =
        trans_a ? cpu::MatrixView{a.data(), 1, m} : cpu::MatrixView{a.data(), k, 1};
    const cpu::MatrixView vb =
        trans_b ? cpu::MatrixView{b.data(), 1, k} : cpu::MatrixView{b.data(), n, 1};
    cpu::SgemmScratch scratch;
    cpu::sgemm_force_portable(portable);
    cpu::sgemm(m, n, k, va, vb, c.data(), ldc, accumulate, scratch);
    cpu::sgemm_force_portable(false);
    DVec ref(std::size_t(m) * ldc);
    Vec got(ref.size());
    for (int i = 0; i < m; ++i)
        for (int j = 0; j < ldc; ++j) {
            const std::size_t at = std::size_t(i) * ldc + j;
            got[at] = c[at];
            if (j >= n) {
                ref[at] = c0[at];
                continue;
            }
            double s = accumulate ? double(c0[at]) : 0.0;
            for (int p = 0; p < k; ++p)
                s += double(va.data[i * va.row_stride + p * va.col_stride]) *
                     double(vb.data[p * vb.row_stride + j * vb.col_stride]);
            ref[at] = s;
        }
    // fp32 sums of up to 600 products of values in [-1, 1] (random signs, |sum| ~ 8):
    // a few 1e-6 in practice; 1e-4 absolute still catches a single lost term (~0.3).
    expect_close(got, ref, 1e-4, 1e-5, "C");
}

void TestCpuConv::rejects_bad_arguments()
{
    Backend& be = *m_be;
    const ConvGeometry g = conv_geometry_of(2, 7, 5, 3, 4, 3, 3, 1, 1, 1, 1);
    Buffer x = upload(be, random_vec(g.x_count(), 61)), w = upload(be, random_vec(g.w_count(), 62));
    Buffer y = poisoned(be, g.y_count());
    ConvGeometry wrong_out = g;
    wrong_out.out_h += 1;
    expect_cpu_error([&] { be.conv2d_forward(wrong_out, x, w, MathMode::Pedantic, y); },
                     "conv2d_forward", "(in + 2*pad - kernel)/stride + 1");
    ConvGeometry zero_stride = g;
    zero_stride.stride_w = 0;
    expect_cpu_error([&] { be.conv2d_prepare(zero_stride, DType::F32, MathMode::Pedantic); },
                     "conv2d_prepare", "stride");
    Buffer short_w = poisoned(be, g.w_count() - 1);
    expect_cpu_error([&] { be.conv2d_backward_data(g, y, short_w, MathMode::Pedantic, x); },
                     "conv2d_backward_data", "w holds");
    Buffer y16 = poisoned(be, g.y_count(), DType::F16);
    expect_cpu_error([&] { be.conv2d_backward_filter(g, x, y16, MathMode::Pedantic, w); },
                     "conv2d_backward_filter", "one dtype");
    ConvGeometry too_small = conv_geometry_of(1, 2, 2, 1, 1, 1, 1, 1, 1, 0, 0);
    too_small.kernel_h = 5;
    expect_cpu_error([&] { be.conv2d_prepare(too_small, DType::F32, MathMode::Pedantic); },
                     "conv2d_prepare", "larger than the padded input");
}

QTEST_APPLESS_MAIN(TestCpuConv)
#include "tst_cpu_conv.moc"
