// The CPU reference backend's layer ops against double-precision references and
// central finite differences: GEMM (every transpose, epilogue, beta), activations,
// the residual add, bias grad, dropout, cross-entropy, 16-bit rounding, TF32 mode,
// batch gather with its crop/flip augmentation, and the backend factory.
#include "backends/cpu/cpu_backend.h"

#include "base/hd_math.h"
#include "mixlab/backend.h"
#include "mixlab/error.h"
#include "mixlab/graph.h"
#include "env_scope.h"
#include "test_util.h"

#include <QtTest/QtTest>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <numeric>
#include <random>
#include <vector>

using namespace mixlab;
using namespace mixlab::test;

Q_DECLARE_METATYPE(mixlab::Epilogue)
Q_DECLARE_METATYPE(mixlab::Activation)
Q_DECLARE_METATYPE(mixlab::OutputHead)
Q_DECLARE_METATYPE(mixlab::DType)

namespace {

// Central difference of f at x along every coordinate, in double.
DVec numeric_grad(const std::function<double(const DVec&)>& f, DVec x, double eps)
{
    DVec g(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) {
        const double saved = x[i];
        x[i] = saved + eps;
        const double up = f(x);
        x[i] = saved - eps;
        const double down = f(x);
        x[i] = saved;
        g[i] = (up - down) / (2.0 * eps);
    }
    return g;
}

DVec to_double(const Vec& v) { return DVec(v.begin(), v.end()); }

double gelu_d(double x)
{
    const double k = std::sqrt(2.0 / M_PI);
    return 0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x)));
}

// act applied to a row-major (rows x cols) matrix, in double.
DVec activation_d(Activation act, const DVec& x, int cols)
{
    DVec y(x.size());
    const std::size_t rows = x.size() / cols;
    for (std::size_t r = 0; r < rows; ++r) {
        const double* in = x.data() + r * cols;
        double* out = y.data() + r * cols;
        if (act == Activation::Softmax) {
            const double mx = *std::max_element(in, in + cols);
            double s = 0;
            for (int j = 0; j < cols; ++j) s += std::exp(in[j] - mx);
            for (int j = 0; j < cols; ++j) out[j] = std::exp(in[j] - mx) / s;
            continue;
        }
        for (int j = 0; j < cols; ++j) {
            const double v = in[j];
            switch (act) {
            case Activation::None: out[j] = v; break;
            case Activation::Relu: out[j] = v > 0 ? v : 0; break;
            case Activation::Sigmoid: out[j] = 1.0 / (1.0 + std::exp(-v)); break;
            case Activation::Tanh: out[j] = std::tanh(v); break;
            case Activation::Gelu: out[j] = gelu_d(v); break;
            case Activation::Softmax: break;
            }
        }
    }
    return y;
}

// op(X) element (i, j) for a row-major X stored (rows x cols) before the transpose.
double op_at(const Vec& x, bool trans, int i, int j, int rows_op, int cols_op)
{
    return trans ? x[std::size_t(j) * rows_op + i] : x[std::size_t(i) * cols_op + j];
}

// Mean cross-entropy of one head in double (the loss the gradient is checked against).
double ce_loss_d(OutputHead head, const DVec& z, const std::vector<std::int32_t>& labels,
                 int classes)
{
    const int batch = int(labels.size());
    double total = 0;
    for (int r = 0; r < batch; ++r) {
        const double* row = z.data() + std::size_t(r) * classes;
        const int t = labels[r];
        if (head == OutputHead::SigmoidKeras) {
            double s = 0;
            for (int j = 0; j < classes; ++j) s += 1.0 / (1.0 + std::exp(-row[j]));
            const double p = (1.0 / (1.0 + std::exp(-row[t]))) / s;
            const double eps = double(hd::k_keras_epsilon);
            total += -std::log(std::clamp(p, eps, 1.0 - eps));
        } else {
            const double mx = *std::max_element(row, row + classes);
            double s = 0;
            for (int j = 0; j < classes; ++j) s += std::exp(row[j] - mx);
            total += mx + std::log(s) - row[t];
        }
    }
    return total / batch;
}

// A uint8 image set uploaded to a backend, with labels and the identity order. Pixels
// are 1..255, so a zero-padded pixel (raw 0) differs from every real one.
struct ImageSet {
    ImageShape shape;
    std::vector<std::uint8_t> pixels, labels;
    Buffer images_u8, labels_u8, order_i32;
};

ImageSet make_images(Backend& be, int n, ImageShape shape, unsigned seed)
{
    ImageSet set;
    set.shape = shape;
    std::mt19937 rng(seed);
    set.pixels.resize(std::size_t(n) * shape.size());
    set.labels.resize(n);
    for (auto& p : set.pixels) p = std::uint8_t(1 + rng() % 255);
    for (auto& l : set.labels) l = std::uint8_t(rng() % 10);
    std::vector<std::int32_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    set.images_u8 = be.alloc(set.pixels.size(), DType::U8);
    set.labels_u8 = be.alloc(set.labels.size(), DType::U8);
    be.upload_raw(set.images_u8, set.pixels.data(), set.pixels.size());
    be.upload_raw(set.labels_u8, set.labels.data(), set.labels.size());
    set.order_i32 = upload_i32(be, order);
    return set;
}

Normalization three_channel_norm()
{
    Normalization norm;
    norm.channels = 3;
    const float mean[3] = {0.5f, 0.4f, 0.3f}, inv_std[3] = {4.0f, 3.0f, 2.0f};
    for (int c = 0; c < 3; ++c) {
        norm.mean[c] = mean[c];
        norm.inv_std[c] = inv_std[c];
    }
    return norm;
}

// The first `batch` images of the set, gathered (and augmented) as float32.
Vec gather(Backend& be, const ImageSet& set, int batch, const Augmentation& aug,
           Vec* labels = nullptr, std::int64_t offset = 0, const StepCounter& counter = {})
{
    Buffer out = poisoned(be, std::size_t(batch) * set.shape.size());
    Buffer out_labels = be.alloc(batch, DType::I32);
    be.fill(out_labels, -1.0f);
    be.gather_batch(set.images_u8, set.labels_u8, set.order_i32, offset, batch, set.shape,
                    three_channel_norm(), aug, counter, out, out_labels);
    if (labels) *labels = download(be, out_labels);
    return download(be, out);
}

} // namespace

class TestCpuLayers : public QObject {
    Q_OBJECT

private:
    std::unique_ptr<Backend> m_be = cpu::make_cpu_backend();

private slots:
    // ---- memory and factory ----------------------------------------------------------
    void upload_download_with_offsets();
    void alloc_reports_out_of_memory();
    void buffers_outlive_their_backend();
    void events_measure_host_time();
    void factory_and_policy_checks();

    // ---- gemm ----------------------------------------------------------------------
    void gemm_matches_reference_data();
    void gemm_matches_reference();
    void dense_layer_gradients_match_finite_differences();
    void tf32_changes_results_only_at_tf32_precision();
    void sixteen_bit_outputs_are_rounded_data();
    void sixteen_bit_outputs_are_rounded();

    // ---- activations -----------------------------------------------------------------
    void activation_forward_and_backward_data();
    void activation_forward_and_backward();
    void relu_backward_in_place_on_output();
    void bias_grad_sums_columns();
    void add_activation_forward_and_backward_data();
    void add_activation_forward_and_backward();
    void add_activation_in_place_and_checks();

    // ---- dropout ---------------------------------------------------------------------
    void dropout_mask_scaling_and_rate_data();
    void dropout_mask_scaling_and_rate();

    // ---- loss ------------------------------------------------------------------------
    void cross_entropy_gradient_data();
    void cross_entropy_gradient();
    void cross_entropy_accuracy_and_evaluation_accumulate();
    void bad_label_and_sample_index_are_named();

    // ---- data ------------------------------------------------------------------------
    void gather_batch_normalises_and_gathers_labels_data();
    void gather_batch_normalises_and_gathers_labels();
    void step_counter_replaces_host_step();
    void augmentation_without_crop_or_flip_changes_nothing();
    void augmentation_flip_mirrors_rows();
    void augmentation_crop_shifts_and_zero_fills_data();
    void augmentation_crop_shifts_and_zero_fills();
    void augmentation_is_deterministic_per_seed_and_step();
};

void TestCpuLayers::upload_download_with_offsets()
{
    Backend& be = *m_be;
    Buffer b = poisoned(be, 6, DType::F16);
    const Vec part = {1.0f, 0.1f, 70000.0f};
    be.upload_f32(b, part.data(), 3, 2);
    Vec back(3);
    be.download_f32(b, back.data(), 3, 2);
    EXPECT_EXACT(back[0], 1.0f);
    EXPECT_EXACT(back[1], round_to(DType::F16, 0.1f)); // stored rounded
    QVERIFY(std::isinf(back[2]));                      // beyond fp16's 65504
    Vec head(2);
    be.download_f32(b, head.data(), 2, 0);
    QVERIFY(std::isnan(head[0]) && std::isnan(head[1])); // untouched by the offset upload

    Buffer bytes = be.alloc(4, DType::U8);
    const std::uint8_t raw[4] = {0, 7, 128, 255};
    be.upload_raw(bytes, raw, 4);
    Vec as_float = download(be, bytes);
    QCOMPARE(as_float, (Vec{0.0f, 7.0f, 128.0f, 255.0f}));

    // Moving a buffer hands ownership over; the moved-from one is empty.
    Buffer moved = std::move(b);
    QVERIFY(b.empty());
    QCOMPARE(moved.count(), std::size_t(6));
    QVERIFY_THROWS_EXCEPTION(Error, be.upload_f32(moved, part.data(), 3, 4));
}

void TestCpuLayers::alloc_reports_out_of_memory()
{
#if defined(__SANITIZE_ADDRESS__)
    // AddressSanitizer's operator new ends the process on an impossible size instead of
    // throwing std::bad_alloc, whatever its options (tools/sanitize.sh builds).
    QSKIP("AddressSanitizer aborts on an exabyte allocation rather than throwing");
#endif
    try {
        Buffer huge = m_be->alloc(std::size_t(1) << 60, DType::F32);
        QFAIL("an exabyte allocation succeeded");
    } catch (const OutOfMemoryError& e) {
        QVERIFY2(QString(e.what()).contains("bytes"), e.what());
    }
}

// A Buffer keeps what frees it (BufferReleaser) alive, so destroying the backend first is
// safe: the memory stays the buffer's until the buffer goes, and freeing it then (by its
// destructor or a move over it) reaches no destroyed backend (AddressSanitizer builds,
// tools/sanitize.sh, would flag it). With the fault hook counting, as in tst_faults.
void TestCpuLayers::buffers_outlive_their_backend()
{
    std::unique_ptr<Backend> a, b;
    {
        const test::EnvScope env("MIXLAB_FAULT_OOM_AFTER_BYTES", 1000000);
        a = cpu::make_cpu_backend();
        b = cpu::make_cpu_backend();
    }
    Buffer kept = a->alloc(64, DType::F32);
    Buffer replaced = a->alloc(16, DType::F32);
    std::vector<float> values(64);
    std::iota(values.begin(), values.end(), 1.0f);
    a->upload_f32(kept, values.data(), values.size());
    a.reset();
    QCOMPARE(std::vector<float>(kept.as<float>(), kept.as<float>() + 64), values);
    replaced = b->alloc(8, DType::F32); // frees a's buffer after a is gone
    QCOMPARE(replaced.count(), std::size_t(8));
    b.reset();
    Buffer moved = std::move(kept);
    QVERIFY(kept.empty());
    QCOMPARE(moved.as<float>()[63], 64.0f);
}

void TestCpuLayers::events_measure_host_time()
{
    auto start = m_be->create_event();
    auto stop = m_be->create_event();
    start->record();
    volatile double sink = 0;
    for (int i = 0; i < 200000; ++i) sink = sink + std::sqrt(double(i));
    stop->record();
    QVERIFY(stop->query());
    stop->synchronize();
    QVERIFY(stop->elapsed_ms_since(*start) > 0.0f);
}

void TestCpuLayers::factory_and_policy_checks()
{
    auto cpu = make_backend(DeviceChoice::CPU);
    QCOMPARE(cpu->info().backend, BackendKind::Cpu);
    if (!cuda_backend_available()) {
        try {
            make_backend(DeviceChoice::CUDA);
            QFAIL("asking for CUDA without one must throw");
        } catch (const DeviceError& e) {
            QVERIFY2(QString(e.what()).contains("--device cpu"), e.what());
        }
        QCOMPARE(make_backend(DeviceChoice::Auto)->info().backend, BackendKind::Cpu);
    }
    // Every policy runs (emulated) on the CPU.
    for (Policy p : k_all_policies) check_policy_supported(cpu->info(), p);
    DeviceInfo turing;
    turing.backend = BackendKind::Cuda;
    turing.name = "NVIDIA GeForce RTX 2060";
    turing.cc_major = 7;
    turing.cc_minor = 5;
    for (Policy p : {Policy::TF32, Policy::MixedBF16}) {
        try {
            check_policy_supported(turing, p);
            QFAIL("tf32/bf16 on compute capability 7.5 must throw");
        } catch (const DeviceError& e) {
            QVERIFY2(QString(e.what()).contains("RTX 2060") && QString(e.what()).contains("7.5") &&
                         QString(e.what()).contains("8.0"),
                     e.what());
        }
    }
    check_policy_supported(turing, Policy::MixedFP16);
    check_policy_supported(turing, Policy::FP32);
    DeviceInfo ampere = turing;
    ampere.cc_major = 8;
    ampere.cc_minor = 6;
    check_policy_supported(ampere, Policy::MixedBF16);
}

void TestCpuLayers::gemm_matches_reference_data()
{
    QTest::addColumn<bool>("trans_a");
    QTest::addColumn<bool>("trans_b");
    QTest::addColumn<Epilogue>("epilogue");
    QTest::addColumn<float>("beta");
    const std::pair<Epilogue, const char*> epis[] = {{Epilogue::None, "none"},
                                                     {Epilogue::Bias, "bias"},
                                                     {Epilogue::BiasRelu, "bias_relu"},
                                                     {Epilogue::BiasGelu, "bias_gelu"},
                                                     {Epilogue::BiasGradA, "bias_grad_a"}};
    for (bool ta : {false, true})
        for (bool tb : {false, true})
            for (auto [e, name] : epis)
                for (float beta : {0.0f, 0.5f, 1.0f})
                    QTest::addRow("%s%s_%s_beta%g", ta ? "T" : "N", tb ? "T" : "N", name,
                                  double(beta))
                        << ta << tb << e << beta;
}

void TestCpuLayers::gemm_matches_reference()
{
    QFETCH(bool, trans_a);
    QFETCH(bool, trans_b);
    QFETCH(Epilogue, epilogue);
    QFETCH(float, beta);
    Backend& be = *m_be;
    const int m = 7, n = 5, k = 9; // odd sizes: no accidental fit to vector widths
    const float alpha = 0.75f;
    const Vec a = random_vec(std::size_t(m) * k, 1), b = random_vec(std::size_t(k) * n, 2);
    const Vec c0 = random_vec(std::size_t(m) * n, 3), bias = random_vec(n, 4);
    Buffer ba = upload(be, a), bb = upload(be, b), bbias = upload(be, bias);
    // beta == 0 must ignore C entirely, so it starts as NaN; otherwise C is scaled and added.
    Buffer bc = beta == 0.0f ? poisoned(be, c0.size()) : upload(be, c0);
    Buffer bgrad = poisoned(be, m);

    GemmCall g;
    g.trans_a = trans_a;
    g.trans_b = trans_b;
    g.m = m, g.n = n, g.k = k;
    g.a = &ba, g.b = &bb, g.c = &bc;
    g.alpha = alpha, g.beta = beta;
    g.epilogue = epilogue;
    g.bias = &bbias;
    g.bias_grad = epilogue == Epilogue::BiasGradA ? &bgrad : nullptr;
    be.gemm(g);

    DVec ref(std::size_t(m) * n), ref_grad(m, 0.0);
    for (int i = 0; i < m; ++i) {
        for (int p = 0; p < k; ++p) ref_grad[i] += op_at(a, trans_a, i, p, m, k);
        for (int j = 0; j < n; ++j) {
            double s = 0;
            for (int p = 0; p < k; ++p)
                s += op_at(a, trans_a, i, p, m, k) * op_at(b, trans_b, p, j, k, n);
            double v = alpha * s + beta * c0[std::size_t(i) * n + j];
            if (epilogue == Epilogue::Bias || epilogue == Epilogue::BiasRelu ||
                epilogue == Epilogue::BiasGelu)
                v += bias[j];
            if (epilogue == Epilogue::BiasRelu) v = std::max(v, 0.0);
            if (epilogue == Epilogue::BiasGelu) v = gelu_d(v);
            ref[std::size_t(i) * n + j] = v;
        }
    }
    // fp32 accumulation of k = 9 products of values in [-1, 1]: a few ulp of the sum of
    // magnitudes (<= 9), so 1e-5 absolute covers it with margin; gelu adds fp32 tanh.
    expect_close(download(be, bc), ref, 1e-5, 1e-5, "C");
    if (epilogue == Epilogue::BiasGradA)
        expect_close(download(be, bgrad), ref_grad, 1e-5, 1e-5, "bias_grad");
}

void TestCpuLayers::dense_layer_gradients_match_finite_differences()
{
    // A dense layer as the trainer runs it: z = x . W^T + b (trans_b), y = gelu(z);
    // dz from the activation, dW = dz^T . x with the bias grad as an epilogue (trans_a),
    // dx = dz . W (no transposes), checked against central differences of the loss
    // L = sum(r * y) computed in double.
    Backend& be = *m_be;
    const int batch = 4, in = 6, out = 5;
    const Vec x = random_vec(std::size_t(batch) * in, 11),
              w = random_vec(std::size_t(out) * in, 12);
    const Vec bias = random_vec(out, 13), r = random_vec(std::size_t(batch) * out, 14);
    Buffer bx = upload(be, x), bw = upload(be, w), bbias = upload(be, bias), br = upload(be, r);
    Buffer z = poisoned(be, std::size_t(batch) * out), y = poisoned(be, z.count());
    Buffer dz = poisoned(be, z.count()), dw = poisoned(be, w.size()), db = poisoned(be, out);
    Buffer dx = poisoned(be, x.size());

    GemmCall fwd;
    fwd.trans_b = true;
    fwd.m = batch, fwd.n = out, fwd.k = in;
    fwd.a = &bx, fwd.b = &bw, fwd.c = &z;
    fwd.epilogue = Epilogue::Bias;
    fwd.bias = &bbias;
    be.gemm(fwd);
    be.bias_activation(Activation::Gelu, z, nullptr, out, y);
    be.activation_backward(Activation::Gelu, z, y, br, out, dz);
    GemmCall gw;
    gw.trans_a = true;
    gw.m = out, gw.n = in, gw.k = batch;
    gw.a = &dz, gw.b = &bx, gw.c = &dw;
    gw.epilogue = Epilogue::BiasGradA;
    gw.bias_grad = &db;
    be.gemm(gw);
    GemmCall gx;
    gx.m = batch, gx.n = in, gx.k = out;
    gx.a = &dz, gx.b = &bw, gx.c = &dx;
    be.gemm(gx);

    // params packed as [x | W | b] so one numeric gradient covers all three.
    auto loss = [&](const DVec& p) {
        const double* px = p.data();
        const double* pw = px + x.size();
        const double* pb = pw + w.size();
        double total = 0;
        for (int i = 0; i < batch; ++i)
            for (int o = 0; o < out; ++o) {
                double s = pb[o];
                for (int c = 0; c < in; ++c) s += px[i * in + c] * pw[o * in + c];
                total += r[std::size_t(i) * out + o] * gelu_d(s);
            }
        return total;
    };
    DVec p = to_double(x);
    p.insert(p.end(), w.begin(), w.end());
    p.insert(p.end(), bias.begin(), bias.end());
    // eps 1e-4 in double: truncation error ~eps^2 * |f'''| ~ 1e-8, cancellation ~1e-12.
    const DVec num = numeric_grad(loss, p, 1e-4);
    const DVec num_x(num.begin(), num.begin() + x.size());
    const DVec num_w(num.begin() + x.size(), num.begin() + x.size() + w.size());
    const DVec num_b(num.begin() + x.size() + w.size(), num.end());
    // The backend runs in fp32 (gelu_grad's tanh, sums of <= 6 terms): 1e-5 absolute.
    expect_close(download(be, dx), num_x, 1e-5, 1e-4, "dx");
    expect_close(download(be, dw), num_w, 1e-5, 1e-4, "dW");
    expect_close(download(be, db), num_b, 1e-5, 1e-4, "db");
}

void TestCpuLayers::tf32_changes_results_only_at_tf32_precision()
{
    Backend& be = *m_be;
    const int m = 16, n = 12, k = 64;
    const Vec a = random_vec(std::size_t(m) * k, 21), b = random_vec(std::size_t(k) * n, 22);
    Buffer ba = upload(be, a), bb = upload(be, b);
    Buffer c32 = poisoned(be, std::size_t(m) * n), ctf = poisoned(be, std::size_t(m) * n);
    GemmCall g;
    g.m = m, g.n = n, g.k = k;
    g.a = &ba, g.b = &bb, g.c = &c32;
    be.gemm(g);
    g.c = &ctf;
    g.math = MathMode::TF32;
    be.gemm(g);
    const Vec r32 = download(be, c32), rtf = download(be, ctf);

    // Reference from TF32-rounded operands in double: the TF32 result is that product.
    DVec ref_tf(r32.size()), bound(r32.size(), 0.0);
    for (int i = 0; i < m; ++i)
        for (int j = 0; j < n; ++j) {
            double s = 0;
            for (int p = 0; p < k; ++p) {
                const double av = a[i * k + p], bv = b[p * n + j];
                s += double(round_to_tf32(float(av))) * double(round_to_tf32(float(bv)));
                // Each operand moves by at most half a TF32 ulp (2^-11 relative).
                bound[i * n + j] += 2.0 * std::ldexp(1.0, -11) * std::abs(av * bv);
            }
            ref_tf[i * n + j] = s;
        }
    // fp32 accumulation of 64 products: 1e-5 absolute.
    expect_close(rtf, ref_tf, 1e-5, 1e-5, "tf32 C");
    double max_diff = 0;
    for (std::size_t i = 0; i < r32.size(); ++i) {
        const double d = std::abs(double(rtf[i]) - double(r32[i]));
        QVERIFY2(d <= bound[i] + 1e-5, "TF32 moved a result by more than its operand rounding");
        max_diff = std::max(max_diff, d);
    }
    // Random operands are not TF32-representable, so the modes must differ well above
    // fp32 rounding (~1e-7 of sums of order 1).
    QVERIFY2(max_diff > 1e-5, "TF32 mode did not change the product");
}

void TestCpuLayers::sixteen_bit_outputs_are_rounded_data()
{
    QTest::addColumn<DType>("dtype");
    QTest::addColumn<bool>("overflows"); // 1e5 is beyond fp16's 65504, not bf16's range
    QTest::newRow("float16") << DType::F16 << true;
    QTest::newRow("bfloat16") << DType::BF16 << false;
}

void TestCpuLayers::sixteen_bit_outputs_are_rounded()
{
    QFETCH(DType, dtype);
    QFETCH(bool, overflows);
    Backend& be = *m_be;
    const int m = 6, n = 4, k = 8;
    Vec a = random_vec(std::size_t(m) * k, 31), b = random_vec(std::size_t(k) * n, 32);
    for (float& v : a) v = round_to(dtype, v); // operands as a 16-bit layer holds them
    for (float& v : b) v = round_to(dtype, v);
    a[0] = 300.0f; // row 0 of A meets column 0 of B: make C[0, 0] huge
    b[0] = 400.0f;
    Buffer ba = upload(be, a, dtype), bb = upload(be, b, dtype),
           bc = poisoned(be, std::size_t(m) * n, dtype);
    GemmCall g;
    g.m = m, g.n = n, g.k = k;
    g.a = &ba, g.b = &bb, g.c = &bc;
    g.math = MathMode::Reduced;
    be.gemm(g);
    const Vec c = download(be, bc);
    for (std::size_t i = 1; i < c.size(); ++i) {
        QVERIFY(std::isfinite(c[i]));
        EXPECT_EXACT(round_to(dtype, c[i]), c[i]); // representable: rounding is idempotent
        double s = 0;
        for (int p = 0; p < k; ++p) s += double(a[(i / n) * k + p]) * double(b[p * n + i % n]);
        // One rounding to 8 (fp16: 11) significant bits: half an ulp of the value.
        const double half_ulp =
            std::abs(s) * (dtype == DType::F16 ? std::ldexp(1.0, -11) : std::ldexp(1.0, -8));
        QVERIFY2(std::abs(c[i] - s) <= half_ulp + 1e-6, "16-bit C is not the rounded fp32 result");
    }
    QCOMPARE(std::isinf(c[0]), overflows);
    if (!overflows) QVERIFY(c[0] > 1e5f);

    // Element-wise ops round too; cast and fill follow the same rule.
    Buffer y = poisoned(be, 3, dtype);
    Buffer x = upload(be, {0.1f, 1e5f, -3.14159f});
    be.bias_activation(Activation::None, x, nullptr, 3, y);
    const Vec yv = download(be, y);
    EXPECT_EXACT(yv[0], round_to(dtype, 0.1f));
    QCOMPARE(std::isinf(yv[1]), overflows);
    EXPECT_EXACT(yv[2], round_to(dtype, -3.14159f));
    Buffer cast_out = poisoned(be, 3, dtype);
    be.cast(x, cast_out);
    const Vec cv = download(be, cast_out);
    EXPECT_EXACT(cv[0], yv[0]);
    EXPECT_EXACT(cv[2], yv[2]);
    be.fill(cast_out, 0.3f);
    EXPECT_EXACT(download(be, cast_out)[1], round_to(dtype, 0.3f));
}

void TestCpuLayers::activation_forward_and_backward_data()
{
    QTest::addColumn<Activation>("act");
    QTest::newRow("linear") << Activation::None;
    QTest::newRow("relu") << Activation::Relu;
    QTest::newRow("sigmoid") << Activation::Sigmoid;
    QTest::newRow("tanh") << Activation::Tanh;
    QTest::newRow("gelu") << Activation::Gelu;
    QTest::newRow("softmax") << Activation::Softmax;
}

void TestCpuLayers::activation_forward_and_backward()
{
    QFETCH(Activation, act);
    Backend& be = *m_be;
    const int rows = 3, cols = 5;
    Vec x = random_vec(std::size_t(rows) * cols, 41, -3.0f, 3.0f);
    const Vec bias = random_vec(cols, 42, -0.5f, 0.5f);
    // Keep relu's inputs away from its kink, where a central difference straddles it.
    for (std::size_t i = 0; i < x.size(); ++i)
        if (std::abs(x[i] + bias[i % cols]) < 0.05f) x[i] += 0.2f;
    const Vec dy = random_vec(x.size(), 43);
    Buffer bx = upload(be, x), bb = upload(be, bias), bdy = upload(be, dy);
    Buffer by = poisoned(be, x.size()), bdx = poisoned(be, x.size());
    be.bias_activation(act, bx, &bb, cols, by);

    // The layer's input is x + bias; the backward sees that pre-activation and y.
    DVec pre(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) pre[i] = double(x[i]) + double(bias[i % cols]);
    // fp32 exp/tanh: a few ulp of values of order 1.
    expect_close(download(be, by), activation_d(act, pre, cols), 1e-6, 1e-5, "y");

    Vec pre_f(pre.begin(), pre.end());
    Buffer bpre = upload(be, pre_f);
    be.activation_backward(act, bpre, by, bdy, cols, bdx);
    auto loss = [&](const DVec& p) {
        const DVec y = activation_d(act, p, cols);
        double s = 0;
        for (std::size_t i = 0; i < y.size(); ++i) s += dy[i] * y[i];
        return s;
    };
    // Central differences in double with eps 1e-4: error ~1e-8. The backend derives the
    // gradient from fp32 y (e.g. y*(1-y)), a few 1e-7 off: 1e-5 absolute.
    expect_close(download(be, bdx), numeric_grad(loss, pre, 1e-4), 1e-5, 1e-4, "dx");
}

void TestCpuLayers::relu_backward_in_place_on_output()
{
    // The trainer keeps only relu's output; x and y are then the same buffer.
    Backend& be = *m_be;
    const Vec x = random_vec(40, 51);
    const Vec dy = random_vec(40, 52);
    Buffer y = upload(be, x);
    be.bias_activation(Activation::Relu, y, nullptr, 8, y);
    Buffer bdy = upload(be, dy), dx = poisoned(be, 40);
    be.activation_backward(Activation::Relu, y, y, bdy, 8, dx);
    const Vec got = download(be, dx);
    for (std::size_t i = 0; i < x.size(); ++i) EXPECT_EXACT(got[i], x[i] > 0 ? dy[i] : 0.0f);
}

void TestCpuLayers::bias_grad_sums_columns()
{
    Backend& be = *m_be;
    const int rows = 37, cols = 11;
    const Vec dy = random_vec(std::size_t(rows) * cols, 61);
    Buffer bdy = upload(be, dy), out = poisoned(be, cols), out16 = poisoned(be, cols, DType::F16);
    be.bias_grad(bdy, rows, cols, out);
    be.bias_grad(bdy, rows, cols, out16);
    DVec ref(cols, 0.0);
    for (int i = 0; i < rows; ++i)
        for (int j = 0; j < cols; ++j) ref[j] += dy[std::size_t(i) * cols + j];
    // 37 fp32 additions of values in [-1, 1]: well under 1e-5.
    expect_close(download(be, out), ref, 1e-5, 1e-6, "bias_grad");
    // fp16 output: half an fp16 ulp (2^-11 relative) on top.
    expect_close(download(be, out16), ref, 1e-5, std::ldexp(1.0, -11), "bias_grad f16");
    const Vec o16 = download(be, out16);
    for (float v : o16) EXPECT_EXACT(round_to(DType::F16, v), v);
}

void TestCpuLayers::add_activation_forward_and_backward_data()
{
    QTest::addColumn<Activation>("act");
    QTest::addColumn<DType>("dtype");
    QTest::newRow("linear_f32") << Activation::None << DType::F32;
    QTest::newRow("relu_f32") << Activation::Relu << DType::F32;
    QTest::newRow("relu_f16") << Activation::Relu << DType::F16;
    QTest::newRow("linear_bf16") << Activation::None << DType::BF16;
}

void TestCpuLayers::add_activation_forward_and_backward()
{
    QFETCH(Activation, act);
    QFETCH(DType, dtype);
    Backend& be = *m_be;
    const std::size_t n = 77;
    Vec a = random_vec(n, 101, -2.0f, 2.0f), b = random_vec(n, 102, -2.0f, 2.0f);
    // Keep a + b away from relu's kink by more than the finite-difference step.
    for (std::size_t i = 0; i < n; ++i)
        if (std::abs(a[i] + b[i]) < 0.05f) a[i] += 0.2f;
    for (float& v : a) v = round_to(dtype, v);
    for (float& v : b) v = round_to(dtype, v);
    Buffer ba = upload(be, a, dtype), bb = upload(be, b, dtype), y = poisoned(be, n, dtype);
    be.add_activation(act, ba, bb, y);
    const Vec yv = download(be, y);
    DVec ref(n);
    for (std::size_t i = 0; i < n; ++i) {
        const double s = double(a[i]) + double(b[i]);
        ref[i] = act == Activation::Relu ? std::max(s, 0.0) : s;
    }
    // One fp32 addition, then the storage rounding: half an ulp of the dtype.
    const double half_ulp = dtype == DType::F32   ? std::ldexp(1.0, -24)
                            : dtype == DType::F16 ? std::ldexp(1.0, -11)
                                                  : std::ldexp(1.0, -8);
    expect_close(yv, ref, 0.0, half_ulp, "y");
    if (dtype != DType::F32) return;

    // The backward of the residual sum is relu's backward on y, passed to both inputs:
    // checked against central differences of L = sum(y * r) through the forward itself.
    // L is piecewise linear and a step of 1e-2 never crosses the kink (|a + b| >= 0.05),
    // so only fp32 rounding of one output remains: 1e-7 / 2e-2, under 1e-5.
    const Vec r = random_vec(n, 103);
    Buffer br = upload(be, r), dsum = poisoned(be, n);
    be.activation_backward(act, y, y, br, int(n), dsum);
    auto loss = [&](const Vec& pa) {
        Buffer bpa = upload(be, pa), out = poisoned(be, n);
        be.add_activation(act, bpa, bb, out);
        const Vec o = download(be, out);
        double total = 0;
        for (std::size_t i = 0; i < n; ++i) total += double(o[i]) * double(r[i]);
        return total;
    };
    DVec num(n);
    Vec ap = a;
    for (std::size_t i = 0; i < n; ++i) {
        ap[i] = a[i] + 1e-2f;
        const double up = loss(ap), hi = ap[i];
        ap[i] = a[i] - 1e-2f;
        const double down = loss(ap), lo = ap[i];
        ap[i] = a[i];
        num[i] = (up - down) / (hi - lo);
    }
    expect_close(download(be, dsum), num, 1e-5, 1e-5, "d(a + b)");
}

void TestCpuLayers::add_activation_in_place_and_checks()
{
    // The residual block writes the sum over one of its inputs.
    Backend& be = *m_be;
    const Vec a = random_vec(40, 111), b = random_vec(40, 112);
    Buffer ya = upload(be, a), bb = upload(be, b);
    be.add_activation(Activation::Relu, ya, bb, ya);
    Buffer ba = upload(be, a), yb = upload(be, b);
    be.add_activation(Activation::None, ba, yb, yb);
    const Vec got_a = download(be, ya), got_b = download(be, yb);
    for (std::size_t i = 0; i < a.size(); ++i) {
        EXPECT_EXACT(got_a[i], std::max(a[i] + b[i], 0.0f));
        EXPECT_EXACT(got_b[i], a[i] + b[i]);
    }
    Buffer y = poisoned(be, 40), short_b = upload(be, Vec(39, 1.0f));
    QVERIFY_THROWS_EXCEPTION(Error, be.add_activation(Activation::Sigmoid, ba, bb, y));
    try {
        be.add_activation(Activation::None, ba, short_b, y);
        QFAIL("unequal counts must throw");
    } catch (const Error& e) {
        QVERIFY2(QString(e.what()).startsWith("cpu backend: add_activation: "), e.what());
    }
}

void TestCpuLayers::dropout_mask_scaling_and_rate_data()
{
    QTest::addColumn<float>("rate");
    QTest::newRow("0.1") << 0.1f;
    QTest::newRow("0.5") << 0.5f;
    QTest::newRow("0.9") << 0.9f;
}

void TestCpuLayers::dropout_mask_scaling_and_rate()
{
    QFETCH(float, rate);
    Backend& be = *m_be;
    const std::size_t n = 100000;
    const Vec x = random_vec(n, 71, 0.5f, 2.0f); // never zero: a zero output means dropped
    const Vec dy = random_vec(n, 72, 0.5f, 2.0f);
    Buffer bx = upload(be, x), bdy = upload(be, dy);
    Buffer y = poisoned(be, n), dx = poisoned(be, n), y_next = poisoned(be, n);
    be.dropout_forward(bx, rate, 1234, 7, StepCounter{}, y);
    be.dropout_backward(bdy, rate, 1234, 7, StepCounter{}, dx);
    be.dropout_forward(bx, rate, 1234, 8, StepCounter{}, y_next);
    const Vec yv = download(be, y), dxv = download(be, dx), yn = download(be, y_next);
    std::size_t dropped = 0, differ = 0;
    for (std::size_t i = 0; i < n; ++i) {
        const bool kept = yv[i] != 0.0f;
        QVERIFY2(kept == (dxv[i] != 0.0f), "backward used another mask");
        QCOMPARE(kept, hd::dropout_keep(1234, 7, i, rate));
        if (kept) {
            EXPECT_EXACT(yv[i], x[i] / (1.0f - rate));
            EXPECT_EXACT(dxv[i], dy[i] / (1.0f - rate));
        }
        dropped += kept ? 0 : 1;
        differ += kept != (yn[i] != 0.0f) ? 1 : 0;
    }
    // Binomial(n, rate): 5 standard deviations, a false failure about once in 3.5 million.
    const double sigma = std::sqrt(rate * (1.0 - rate) / double(n));
    QVERIFY2(
        std::abs(double(dropped) / n - rate) < 5 * sigma,
        qPrintable(QString("dropped fraction %1 for rate %2").arg(double(dropped) / n).arg(rate)));
    QVERIFY2(differ > n / 100, "the next step drew the same mask");
}

void TestCpuLayers::cross_entropy_gradient_data()
{
    QTest::addColumn<OutputHead>("head");
    QTest::addColumn<bool>("clipped"); // add Keras rows where p_t hits both clip bounds
    QTest::newRow("logits") << OutputHead::Logits << false;
    QTest::newRow("softmax_folded") << OutputHead::SoftmaxFolded << false;
    QTest::newRow("sigmoid_keras") << OutputHead::SigmoidKeras << false;
    QTest::newRow("sigmoid_keras_clipped") << OutputHead::SigmoidKeras << true;
}

void TestCpuLayers::cross_entropy_gradient()
{
    QFETCH(OutputHead, head);
    QFETCH(bool, clipped);
    Backend& be = *m_be;
    const int batch = 5, classes = 6;
    Vec z = random_vec(std::size_t(batch) * classes, 81, -3.0f, 3.0f);
    std::vector<std::int32_t> labels = {0, 3, 5, 2, 1};
    if (clipped) {
        // Row 0: target far below the rest: p_t ~ 1e-13 clips up to eps.
        for (int j = 0; j < classes; ++j) z[j] = j == labels[0] ? -30.0f : 2.0f;
        // Row 1: target saturates while the others vanish: p_t > 1 - eps clips down.
        for (int j = 0; j < classes; ++j) z[classes + j] = j == labels[1] ? 20.0f : -25.0f;
    }
    const float scale = 8.0f;
    Buffer logits = upload(be, z), lab = upload_i32(be, labels);
    Buffer scaler = upload(be, {scale, 0.0f, 0.0f, 0.0f});
    Buffer dz = poisoned(be, z.size()), record = poisoned(be, k_record_fields);
    be.cross_entropy(head, logits, lab, batch, classes, &scaler, &dz, record, 0);

    auto loss = [&](const DVec& p) { return ce_loss_d(head, p, labels, classes); };
    const DVec zd = to_double(z);
    DVec num = numeric_grad(loss, zd, 1e-4); // double central differences: error ~1e-9
    for (double& v : num) v *= scale;
    // fp32 softmax/sigmoid of logits in [-3, 3] (and the scale of 8): 1e-6 absolute.
    const Vec got = download(be, dz);
    expect_close(got, num, 1e-6, 1e-4, "dlogits");
    if (clipped)
        for (int j = 0; j < 2 * classes; ++j)
            EXPECT_EXACT(got[j], 0.0f); // tf.clip_by_value passes no gradient outside the range

    const Vec rec = download(be, record);
    // Loss sum of 5 rows of order 1 (up to 16 for a clipped row), fp32 logs: 1e-5 relative.
    const double ref_sum = loss(zd) * batch;
    QVERIFY2(std::abs(rec[k_rec_loss_sum] - ref_sum) <= 1e-5 + 1e-5 * ref_sum,
             qPrintable(QString("loss sum %1, expected %2").arg(rec[k_rec_loss_sum]).arg(ref_sum)));
    if (clipped)
        QVERIFY(std::abs(rec[k_rec_loss_sum] - ref_sum) < 1e-3 && ref_sum > 16.0); // -log(1e-7)
    int correct = 0;
    for (int r = 0; r < batch; ++r) {
        const float* row = z.data() + r * classes;
        correct += int(std::max_element(row, row + classes) - row) == labels[r] ? 1 : 0;
    }
    EXPECT_EXACT(rec[k_rec_correct], float(correct));
}

void TestCpuLayers::cross_entropy_accuracy_and_evaluation_accumulate()
{
    Backend& be = *m_be;
    // Ties: the first maximum wins, so row 0 (max at 1 and 2, label 2) is wrong and
    // row 1 (same logits, label 1) is right.
    const Vec z = {2.0f, 5.0f, 5.0f, 1.0f, 2.0f, 5.0f, 5.0f, 1.0f, 9.0f, 0.0f, 0.0f, 0.0f};
    Buffer logits = upload(be, z), lab = upload_i32(be, {2, 1, 0});
    // Two records, the second at offset k_record_fields.
    const std::size_t off = k_record_fields;
    Vec init(2 * k_record_fields, 0.0f);
    init[0] = 0.5f;
    init[1] = 1.0f;
    init[off + k_rec_loss_sum] = 7.0f;
    init[off + k_rec_correct] = 7.0f;
    Buffer record = upload(be, init);
    // Evaluation (no dlogits) adds into the record at the offset; a second batch adds again.
    be.cross_entropy(OutputHead::Logits, logits, lab, 3, 4, nullptr, nullptr, record, off);
    be.cross_entropy(OutputHead::Logits, logits, lab, 3, 4, nullptr, nullptr, record, off);
    const Vec rec = download(be, record);
    const double row01 = 5.0 + std::log(std::exp(-3.0) + 2.0 + std::exp(-4.0)) - 5.0;
    const double row2 = 9.0 + std::log(1.0 + 3.0 * std::exp(-9.0)) - 9.0;
    const double batch_sum = 2 * row01 + row2;
    EXPECT_EXACT(rec[0], 0.5f); // fields before the offset untouched
    EXPECT_EXACT(rec[1], 1.0f);
    QVERIFY(std::abs(rec[off + k_rec_loss_sum] - (7.0 + 2 * batch_sum)) < 1e-5);
    EXPECT_EXACT(rec[off + k_rec_correct], 7.0f + 2 * 2.0f);

    // Training (dlogits set) overwrites instead.
    Buffer dz = poisoned(be, z.size());
    be.cross_entropy(OutputHead::Logits, logits, lab, 3, 4, nullptr, &dz, record, off);
    const Vec rec2 = download(be, record);
    QVERIFY(std::abs(rec2[off + k_rec_loss_sum] - batch_sum) < 1e-5);
    EXPECT_EXACT(rec2[off + k_rec_correct], 2.0f);
}

// The two checks the CPU makes per element every step (a label, a sample index) build
// their message only when they fail (backend_validate.h's require): the text still names
// the bad value and the bound.
void TestCpuLayers::bad_label_and_sample_index_are_named()
{
    Backend& be = *m_be;
    Buffer logits = upload(be, Vec(8, 0.5f)), lab = upload_i32(be, {1, 7});
    Buffer record = poisoned(be, k_record_fields);
    QCOMPARE(thrown_message<Error>([&] {
                 be.cross_entropy(OutputHead::Logits, logits, lab, 2, 4, nullptr, nullptr, record,
                                  0);
             }),
             std::string("cpu backend: cross_entropy: label 7 is outside the 4 classes"));

    ImageSet set = make_images(be, 3, ImageShape{2, 2, 3}, 5);
    set.order_i32 = upload_i32(be, {0, 2, 12});
    Buffer out = poisoned(be, 3 * set.shape.size());
    Buffer out_labels = be.alloc(3, DType::I32);
    QCOMPARE(thrown_message<Error>([&] {
                 be.gather_batch(set.images_u8, set.labels_u8, set.order_i32, 0, 3, set.shape,
                                 three_channel_norm(), Augmentation{}, StepCounter{}, out,
                                 out_labels);
             }),
             std::string("cpu backend: gather_batch: sample index 12 is out of range"));
}

void TestCpuLayers::gather_batch_normalises_and_gathers_labels_data()
{
    QTest::addColumn<DType>("dtype");
    QTest::newRow("float32") << DType::F32;
    QTest::newRow("float16") << DType::F16;
    QTest::newRow("bfloat16") << DType::BF16;
}

void TestCpuLayers::gather_batch_normalises_and_gathers_labels()
{
    QFETCH(DType, dtype);
    Backend& be = *m_be;
    const int n_samples = 10, sample = 2 * 2 * 3, batch = 4;
    const std::int64_t offset = 3;
    std::mt19937 rng(91);
    std::vector<std::uint8_t> images(std::size_t(n_samples) * sample), labels(n_samples);
    for (auto& p : images) p = std::uint8_t(rng() % 256);
    for (auto& l : labels) l = std::uint8_t(rng() % 10);
    std::vector<std::int32_t> order(n_samples);
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng);
    Normalization norm;
    norm.channels = 3;
    const float mean[3] = {0.49f, 0.48f, 0.45f}, std_[3] = {0.25f, 0.24f, 0.26f};
    for (int c = 0; c < 3; ++c) {
        norm.mean[c] = mean[c];
        norm.inv_std[c] = 1.0f / std_[c];
    }
    Buffer bi = be.alloc(images.size(), DType::U8), bl = be.alloc(labels.size(), DType::U8);
    be.upload_raw(bi, images.data(), images.size());
    be.upload_raw(bl, labels.data(), labels.size());
    Buffer bo = upload_i32(be, order);
    Buffer out = poisoned(be, std::size_t(batch) * sample, dtype);
    Buffer out_lab = be.alloc(batch, DType::I32);
    be.fill(out_lab, -1.0f);
    be.gather_batch(bi, bl, bo, offset, batch, ImageShape{2, 2, 3}, norm, Augmentation{},
                    StepCounter{}, out, out_lab);

    const Vec got = download(be, out), got_lab = download(be, out_lab);
    for (int b = 0; b < batch; ++b) {
        const int idx = order[offset + b];
        EXPECT_EXACT(got_lab[b], float(labels[idx]));
        for (int i = 0; i < sample; ++i) {
            const int c = i % 3;
            const double ref = (images[std::size_t(idx) * sample + i] / 255.0 - mean[c]) / std_[c];
            const float v = got[std::size_t(b) * sample + i];
            EXPECT_EXACT(round_to(dtype, v), v);
            // fp32 normalisation (~1e-6 for values of a few units) plus the storage
            // rounding: half an ulp of the dtype.
            const double rel = dtype == DType::F32   ? 1e-6
                               : dtype == DType::F16 ? std::ldexp(1.0, -11)
                                                     : std::ldexp(1.0, -8);
            QVERIFY2(
                std::abs(v - ref) <= 2e-6 + rel * std::abs(ref),
                qPrintable(QString("out[%1,%2] = %3, expected %4").arg(b).arg(i).arg(v).arg(ref)));
        }
    }
}

void TestCpuLayers::augmentation_without_crop_or_flip_changes_nothing()
{
    Backend& be = *m_be;
    const ImageSet set = make_images(be, 12, ImageShape{5, 4, 3}, 121);
    const Vec plain = gather(be, set, 12, Augmentation{});
    // A crop of padding 0 draws no offset; and with both off, the seed and step are unused.
    Augmentation crop0;
    crop0.random_crop = true;
    crop0.crop_padding = 0;
    crop0.seed = 7, crop0.step = 3;
    QCOMPARE(gather(be, set, 12, crop0), plain);
    Augmentation off;
    off.seed = 9, off.step = 4;
    QVERIFY(!off.enabled());
    QCOMPARE(gather(be, set, 12, off), plain);
}

void TestCpuLayers::augmentation_flip_mirrors_rows()
{
    Backend& be = *m_be;
    const ImageShape s{3, 5, 3};
    const int batch = 16;
    const ImageSet set = make_images(be, batch, s, 131);
    const Vec plain = gather(be, set, batch, Augmentation{});
    Augmentation flip;
    flip.horizontal_flip = true;
    flip.seed = 1234, flip.step = 5;
    Vec labels;
    const Vec got = gather(be, set, batch, flip, &labels);
    int flipped = 0;
    for (int b = 0; b < batch; ++b) {
        EXPECT_EXACT(labels[b], float(set.labels[b])); // labels never move
        const hd::AugmentDraw d =
            hd::augment_draw(flip.seed, flip.step, b, flip.crop_padding, false, true);
        QCOMPARE(d.dy, 0);
        QCOMPARE(d.dx, 0);
        flipped += d.flip ? 1 : 0;
        for (int r = 0; r < s.height; ++r)
            for (int c = 0; c < s.width; ++c)
                for (int ch = 0; ch < s.channels; ++ch) {
                    const int src_c = d.flip ? s.width - 1 - c : c;
                    const std::size_t base = std::size_t(b) * s.size();
                    EXPECT_EXACT(
                        got[base + (std::size_t(r) * s.width + c) * s.channels + ch],
                        plain[base + (std::size_t(r) * s.width + src_c) * s.channels + ch]);
                }
    }
    // Both outcomes occur in this batch (fixed seed), so both paths were checked.
    QVERIFY2(flipped > 0 && flipped < batch, qPrintable(QString("%1 of 16 flipped").arg(flipped)));
}

void TestCpuLayers::augmentation_crop_shifts_and_zero_fills_data()
{
    QTest::addColumn<bool>("flip");
    QTest::newRow("crop") << false;
    QTest::newRow("crop_and_flip") << true;
}

void TestCpuLayers::augmentation_crop_shifts_and_zero_fills()
{
    QFETCH(bool, flip);
    Backend& be = *m_be;
    const ImageShape s{5, 6, 3};
    const int batch = 16;
    const ImageSet set = make_images(be, batch, s, 141);
    const Vec plain = gather(be, set, batch, Augmentation{});
    Augmentation aug;
    aug.random_crop = true;
    aug.crop_padding = 2;
    aug.horizontal_flip = flip;
    aug.seed = 99, aug.step = 17;
    const Vec got = gather(be, set, batch, aug);
    const Normalization norm = three_channel_norm();
    int shifted = 0, filled = 0;
    for (int b = 0; b < batch; ++b) {
        const hd::AugmentDraw d = hd::augment_draw(aug.seed, aug.step, b, 2, true, flip);
        QVERIFY(std::abs(d.dy) <= 2 && std::abs(d.dx) <= 2);
        shifted += d.dy != 0 || d.dx != 0 ? 1 : 0;
        const std::size_t base = std::size_t(b) * s.size();
        for (int r = 0; r < s.height; ++r)
            for (int c = 0; c < s.width; ++c) {
                // torchvision order: crop the zero-padded image at (pad + dy, pad + dx),
                // then mirror the crop: output column c reads cropped column W-1-c.
                const int cc = flip && d.flip ? s.width - 1 - c : c;
                const int sr = r + d.dy, sc = cc + d.dx;
                const bool inside = sr >= 0 && sr < s.height && sc >= 0 && sc < s.width;
                filled += inside ? 0 : 1;
                for (int ch = 0; ch < s.channels; ++ch) {
                    const float v = got[base + (std::size_t(r) * s.width + c) * s.channels + ch];
                    if (inside)
                        EXPECT_EXACT(
                            v, plain[base + (std::size_t(sr) * s.width + sc) * s.channels + ch]);
                    else // a raw 0 pixel, normalised
                        EXPECT_EXACT(v, (0.0f / 255.0f - norm.mean[ch]) * norm.inv_std[ch]);
                }
            }
    }
    QVERIFY2(shifted > batch / 2, "almost no sample was shifted");
    QVERIFY(filled > 0);
}

void TestCpuLayers::augmentation_is_deterministic_per_seed_and_step()
{
    Backend& be = *m_be;
    const ImageSet set = make_images(be, 8, ImageShape{6, 6, 3}, 151);
    Augmentation aug;
    aug.random_crop = true;
    aug.horizontal_flip = true;
    aug.seed = 5, aug.step = 11;
    const Vec first = gather(be, set, 8, aug);
    QCOMPARE(gather(be, set, 8, aug), first);
    Augmentation next_step = aug, other_seed = aug;
    next_step.step = 12;
    other_seed.seed = 6;
    QVERIFY(gather(be, set, 8, next_step) != first);
    QVERIFY(gather(be, set, 8, other_seed) != first);
}

// A replayed step reads its step from a device counter: the batch's position in the
// epoch, its augmentation draw and dropout's mask must then be exactly those of the
// same step given as host numbers, and advance_step must move to the next step.
void TestCpuLayers::step_counter_replaces_host_step()
{
    Backend& be = *m_be;
    const int batch = 4, per_epoch = 3;
    const ImageSet set = make_images(be, batch * per_epoch, ImageShape{6, 5, 3}, 161);
    Augmentation aug;
    aug.random_crop = true;
    aug.crop_padding = 2;
    aug.horizontal_flip = true;
    aug.seed = 21;
    Buffer counter = be.alloc(2, DType::I32);
    const std::int32_t start[2] = {7, 0}; // step 7: position 7 % 3 = 1 in its epoch
    be.upload_raw(counter, start, sizeof start);
    const StepCounter c{&counter, per_epoch};
    for (std::uint64_t step : {7u, 8u, 9u}) {
        Augmentation host = aug;
        host.step = step;
        Vec host_labels, counted_labels;
        const Vec want =
            gather(be, set, batch, host, &host_labels, std::int64_t(step % per_epoch) * batch);
        Augmentation ignored = aug;
        ignored.step = 12345; // the counter's value wins
        const Vec got = gather(be, set, batch, ignored, &counted_labels, 0, c);
        QCOMPARE(got, want);
        QCOMPARE(counted_labels, host_labels);

        const std::size_t n = 999;
        Buffer x = upload(be, random_vec(n, 163, 0.5f, 2.0f));
        Buffer from_host = poisoned(be, n), from_counter = poisoned(be, n);
        be.dropout_forward(x, 0.3f, 77, step, StepCounter{}, from_host);
        be.dropout_forward(x, 0.3f, 77, 0, c, from_counter);
        QCOMPARE(download(be, from_counter), download(be, from_host));
        be.advance_step(counter);
    }
    std::int32_t words[2] = {0, 0};
    std::memcpy(words, counter.data(), sizeof words);
    QCOMPARE(words[0], 10);
    QCOMPARE(words[1], 0);
}

QTEST_APPLESS_MAIN(TestCpuLayers)
#include "tst_cpu_layers.moc"
