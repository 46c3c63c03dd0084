// Language models through Network on the CPU reference: every parameter's gradient of a
// tiny embedding -> 2-layer LSTM -> decoder model (untied, tied, with dropout) against
// central differences of the loss; the hidden state carried from pass to pass and
// reset_state; the fixed batch; mixed_fp16 against fp32; what describe() reports; the
// zero padding of 6 features to 8 changing no number over training steps.
#include "mixlab/backend.h"
#include "mixlab/device.h"
#include "mixlab/error.h"
#include "mixlab/graph.h"
#include "mixlab/model_spec.h"
#include "model/network.h"
#include "test_util.h"

#include <QtTest/QtTest>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

using namespace mixlab;
using namespace mixlab::test;

namespace {

constexpr int k_vocab = 11, k_dim = 6, k_steps = 4, k_batch = 3;
constexpr int k_rows = k_steps * k_batch;

// embedding(vocab, 6) [dropout] -> lstm(6, 2 layers [, dropout]) -> dense("vocab" [, tied]).
ModelSpec tiny_lm(bool tied, float dropout)
{
    std::string layers = R"([{"type": "embedding", "vocab": "dataset", "dim": 6},)";
    if (dropout > 0) layers += R"({"type": "dropout", "rate": )" + std::to_string(dropout) + "},";
    layers += R"({"type": "lstm", "hidden": 6, "layers": 2, "dropout": )" +
              std::to_string(dropout) + "},";
    layers += std::string(R"({"type": "dense", "units": "vocab", "tie_weights": )") +
              (tied ? "true" : "false") + "}]";
    return parse_model_spec(R"({"format": "mixlab-model/1", "name": "tiny-lm", "layers": )" +
                            layers + "}");
}

// Token ids and next-word labels, time-major, drawn from a fixed generator.
std::vector<std::int32_t> tokens(unsigned seed)
{
    const Vec r = random_vec(k_rows, seed, 0.0f, float(k_vocab));
    std::vector<std::int32_t> ids(k_rows);
    for (int i = 0; i < k_rows; ++i)
        ids[std::size_t(i)] = std::min(int(r[std::size_t(i)]), k_vocab - 1);
    return ids;
}

struct Lm {
    std::unique_ptr<Backend> backend;
    Graph graph;
    std::unique_ptr<Network> net;
    Buffer record;

    Lm(const ModelSpec& spec, Policy policy, DeviceChoice device = DeviceChoice::CPU)
        : backend(make_backend(device))
    {
        graph = build_graph(spec, Shape::tokens(), k_vocab);
        OptimizerConfig opt;
        net = std::make_unique<Network>(graph, policy, opt, *backend, k_batch, k_steps, 7);
        set_tokens(tokens(3), tokens(4));
        record = backend->alloc(k_record_fields, DType::F32);
    }

    void set_tokens(const std::vector<std::int32_t>& ids, const std::vector<std::int32_t>& labels)
    {
        backend->upload_raw(net->input(), ids.data(), ids.size() * 4);
        backend->upload_raw(net->labels(), labels.data(), labels.size() * 4);
    }

    // Mean cross-entropy over every token of the window (the loss the trainer takes, over
    // batch x steps rows), from a zero state; a training forward (dropout on, the same
    // masks every time for step 0).
    double loss(bool with_backward)
    {
        net->reset_state();
        net->forward(k_batch, true, 0);
        backend->cross_entropy(graph.head, net->logits(), net->labels(), k_rows, graph.classes,
                               nullptr, &net->dlogits(), record, 0);
        float rec[k_record_fields];
        backend->download_f32(record, rec, k_record_fields);
        if (with_backward) net->backward(k_batch, 0);
        return double(rec[k_rec_loss_sum]) / k_rows;
    }

    Vec logits() { return download(*backend, net->logits()); }

    // One training step: SGD with momentum and clipping (the optimizer's state and the
    // global norm must see the padding as the zeros it is); returns the step's loss.
    double sgd_step()
    {
        OptimizerConfig opt;
        opt.lr = 0.5f;
        opt.momentum = 0.9f;
        opt.clip_norm = 0.5f;
        Buffer scaler = backend->alloc(k_scaler_fields, DType::F32);
        const float none[k_scaler_fields] = {1.0f, 0.0f, 0.0f, 0.0f};
        backend->upload_f32(scaler, none, k_scaler_fields);
        const double l = loss(true);
        backend->optimizer_step(net->param_table(), opt, ScalerParams{}, scaler, record, 0);
        return l;
    }
};

double max_abs_diff(const Vec& a, const Vec& b)
{
    double d = 0;
    for (std::size_t i = 0; i < a.size(); ++i) d = std::max(d, double(std::abs(a[i] - b[i])));
    return d;
}

// The largest |a - b| / (atol + rtol |b|): at most 1 when every element is within.
double worst_of_tolerance(const Vec& a, const Vec& b, double atol, double rtol)
{
    double w = 0;
    for (std::size_t i = 0; i < a.size(); ++i)
        w = std::max(w, std::abs(double(a[i]) - double(b[i])) / (atol + rtol * std::abs(b[i])));
    return w;
}

} // namespace

class TestNetworkSequence : public QObject {
    Q_OBJECT

private slots:
    // The buffers a trainer fills and reads: int32 ids and labels time-major, logits of
    // one row per token.
    void buffers()
    {
        Lm lm(tiny_lm(false, 0.0f), Policy::FP32);
        QVERIFY(lm.net->is_sequence());
        QCOMPARE(lm.net->time_steps(), k_steps);
        QCOMPARE(lm.net->rows(k_batch), k_rows);
        QCOMPARE(lm.net->input().dtype(), DType::I32);
        QCOMPARE(lm.net->input().count(), std::size_t(k_rows));
        QCOMPARE(lm.net->labels().count(), std::size_t(k_rows));
        QCOMPARE(lm.net->logits().count(), std::size_t(k_rows * k_vocab));
        // Every parameter once, in graph order, as many as the graph counts.
        QCOMPARE(std::int64_t(lm.net->read_parameters().size()), lm.graph.total_params);
        Lm tied(tiny_lm(true, 0.0f), Policy::FP32);
        QCOMPARE(std::int64_t(tied.net->read_parameters().size()), tied.graph.total_params);
        QCOMPARE(lm.graph.total_params - tied.graph.total_params,
                 std::int64_t(k_vocab * k_dim)); // the decoder's own weights
    }

    // Central differences of the mean loss against read_gradients for every parameter
    // (embedding table, both LSTM layers' flat buffers, decoder). float32 forward passes:
    // the loss (~2.4) is rounded to ~2e-7, which over a 2h = 6e-3 step is ~4e-5 of slope;
    // the curvature term is ~h^2 = 1e-5: a tolerance of 2e-4 + 1e-2 |g| stands well clear
    // of both, while a missing term (a tied decoder's share of the table, a dropout mask
    // applied on one side only) shows as errors of the gradient's own size.
    void gradients_data()
    {
        QTest::addColumn<bool>("tied");
        QTest::addColumn<float>("dropout");
        QTest::addRow("untied") << false << 0.0f;
        QTest::addRow("tied") << true << 0.0f;
        QTest::addRow("tied with dropout") << true << 0.3f;
    }
    void gradients()
    {
        QFETCH(bool, tied);
        QFETCH(float, dropout);
        Lm lm(tiny_lm(tied, dropout), Policy::FP32);
        lm.loss(true);
        const Vec grads = lm.net->read_gradients();
        Vec params = lm.net->read_parameters();
        QCOMPARE(grads.size(), params.size());
        QCOMPARE(std::int64_t(params.size()), lm.graph.total_params);
        const float step = 3e-3f;
        double worst = 0, largest = 0;
        for (std::size_t i = 0; i < params.size(); ++i) {
            const float keep = params[i];
            params[i] = keep + step;
            lm.net->write_parameters(params);
            const double up = lm.loss(false);
            params[i] = keep - step;
            lm.net->write_parameters(params);
            const double down = lm.loss(false);
            params[i] = keep;
            const double numeric = (up - down) / (2.0 * double(step));
            const double analytic = grads[i];
            const double tol = 2e-4 + 1e-2 * std::abs(numeric);
            const double err = std::abs(numeric - analytic);
            worst = std::max(worst, err / tol);
            largest = std::max(largest, std::abs(numeric));
            if (err > tol)
                QFAIL(qPrintable(QString("parameter %1 of %2: backward %3, finite difference %4")
                                     .arg(i)
                                     .arg(params.size())
                                     .arg(analytic, 0, 'g', 7)
                                     .arg(numeric, 0, 'g', 7)));
        }
        // Gradients well above the tolerance's floor, so the check had something to check.
        QVERIFY2(largest > 1e-2, qPrintable(QString("largest gradient %1").arg(largest)));
        qInfo("%zu parameters, worst error %.2f of the tolerance, largest gradient %.3g",
              params.size(), worst, largest);
    }

    // Truncated BPTT's carried state: a second pass starts where the first ended, so it
    // differs from a pass from zero; reset_state brings back the zero start exactly.
    void hidden_state_carries()
    {
        Lm lm(tiny_lm(true, 0.0f), Policy::FP32);
        lm.net->forward(k_batch, false, 0);
        const Vec first = lm.logits();
        lm.net->forward(k_batch, false, 0);
        const Vec second = lm.logits();
        QVERIFY2(max_abs_diff(first, second) > 1e-4,
                 "an evaluation pass did not carry its final state into the next");
        lm.net->reset_state();
        lm.net->forward(k_batch, false, 0);
        QCOMPARE(max_abs_diff(first, lm.logits()), 0.0);

        // Training: the state carries after the backward pass.
        lm.net->reset_state();
        lm.net->forward(k_batch, true, 0);
        const Vec train_first = lm.logits();
        QCOMPARE(max_abs_diff(first, train_first), 0.0); // no dropout: train = eval
        lm.net->backward(k_batch, 0);
        lm.net->forward(k_batch, true, 1);
        QVERIFY(max_abs_diff(train_first, lm.logits()) > 1e-4);
        lm.net->backward(k_batch, 1);
        lm.net->reset_state();
        lm.net->forward(k_batch, true, 0);
        QCOMPARE(max_abs_diff(train_first, lm.logits()), 0.0);
    }

    // The LSTM's plans and states are sized for one batch: another is refused by name.
    void fixed_batch()
    {
        Lm lm(tiny_lm(false, 0.0f), Policy::FP32);
        try {
            lm.net->forward(k_batch - 1, false, 0);
            QFAIL("a smaller batch ran");
        } catch (const InputError& e) {
            const QString msg = QString::fromUtf8(e.what());
            QVERIFY2(msg.contains("layer 1 (lstm)") && msg.contains("batches of 3") &&
                         msg.contains("got 2"),
                     qPrintable(msg));
        }
    }

    // mixed_fp16 on the CPU (fp16 storage emulated, fp32 math and master weights): finite
    // gradients within a few percent of fp32's. fp16 rounds every stored activation and
    // weight copy to 2^-11 relative; through two LSTM layers and a 4-step window the
    // gradient vector moves by about 1e-3 of its norm, well under the 3e-2 asked here.
    void mixed_fp16_close_to_fp32()
    {
        Lm ref(tiny_lm(true, 0.0f), Policy::FP32);
        Lm mixed(tiny_lm(true, 0.0f), Policy::MixedFP16);
        const double loss32 = ref.loss(true);
        const double loss16 = mixed.loss(true);
        QVERIFY(std::abs(loss32 - loss16) < 1e-2);
        const Vec g32 = ref.net->read_gradients();
        const Vec g16 = mixed.net->read_gradients();
        QCOMPARE(g16.size(), g32.size());
        double diff = 0, norm = 0;
        for (std::size_t i = 0; i < g32.size(); ++i) {
            QVERIFY2(std::isfinite(g16[i]), qPrintable(QString("gradient %1 not finite").arg(i)));
            diff += double(g16[i] - g32[i]) * double(g16[i] - g32[i]);
            norm += double(g32[i]) * double(g32[i]);
        }
        QVERIFY(norm > 0);
        const double rel = std::sqrt(diff / norm);
        QVERIFY2(rel < 3e-2, qPrintable(QString("relative gradient difference %1").arg(rel)));
        QVERIFY(rel > 0); // fp16 storage did change something: the policy ran
    }

    // The same model on the GPU (cuDNN's RNN, cuBLASLt, the embedding kernels) against the
    // CPU reference: fp32 with exact FMA math agrees to float32 summation-order noise
    // (1e-4 + 1e-3 relative over a few hundred products); the carried state too. Then a
    // recorded evaluation pass (a CUDA graph) replayed twice carries its state exactly as
    // two eager passes do: the copies are device operations inside the recording.
    void cuda_matches_cpu_data()
    {
        QTest::addColumn<bool>("tied");
        QTest::addRow("untied") << false;
        QTest::addRow("tied") << true;
    }
    void cuda_matches_cpu()
    {
        if (!cuda_backend_available()) QSKIP("no CUDA device: the GPU path cannot be checked here");
        QFETCH(bool, tied);
        Lm cpu(tiny_lm(tied, 0.3f), Policy::FP32);
        Lm gpu(tiny_lm(tied, 0.3f), Policy::FP32, DeviceChoice::CUDA);
        QVERIFY(std::abs(cpu.loss(true) - gpu.loss(true)) < 1e-4);
        const double grads =
            worst_of_tolerance(gpu.net->read_gradients(), cpu.net->read_gradients(), 1e-4, 1e-3);
        QVERIFY2(grads <= 1.0, qPrintable(QString("gradients %1 of the tolerance").arg(grads)));
        for (Lm* lm : {&cpu, &gpu}) {
            lm->net->reset_state();
            lm->net->forward(k_batch, false, 0);
            lm->net->forward(k_batch, false, 0);
        }
        QVERIFY(worst_of_tolerance(gpu.logits(), cpu.logits(), 1e-4, 1e-3) <= 1.0);

        // Eager: two passes from zero.
        gpu.net->reset_state();
        gpu.net->forward(k_batch, false, 0);
        const Vec first = gpu.logits();
        gpu.net->forward(k_batch, false, 0);
        const Vec second = gpu.logits();
        // Recorded once, replayed twice from zero.
        gpu.net->reset_state();
        QVERIFY(gpu.backend->begin_capture());
        gpu.net->forward(k_batch, false, 0);
        std::string why;
        const auto graph = gpu.backend->end_capture(&why);
        QVERIFY2(graph, why.c_str());
        QVERIFY(graph->replay());
        QCOMPARE(max_abs_diff(gpu.logits(), first), 0.0);
        QVERIFY(graph->replay());
        QCOMPARE(max_abs_diff(gpu.logits(), second), 0.0);

        // mixed_fp16 on the GPU: finite gradients near the fp32 ones (as on the CPU).
        Lm mixed(tiny_lm(tied, 0.3f), Policy::MixedFP16, DeviceChoice::CUDA);
        mixed.loss(true);
        const Vec g16 = mixed.net->read_gradients();
        const Vec g32 = gpu.net->read_gradients();
        double diff = 0, norm = 0;
        for (std::size_t i = 0; i < g32.size(); ++i) {
            QVERIFY(std::isfinite(g16[i]));
            diff += double(g16[i] - g32[i]) * double(g16[i] - g32[i]);
            norm += double(g32[i]) * double(g32[i]);
        }
        QVERIFY2(std::sqrt(diff / norm) < 3e-2,
                 qPrintable(QString::number(std::sqrt(diff / norm))));
        const auto lines = mixed.net->describe();
        QVERIFY(std::any_of(lines.begin(), lines.end(), [](const std::string& l) {
            return l.find("cuDNN RNN, tensor-op math") != std::string::npos;
        }));
    }

    // What describe() says runs: the embedding's lookup, the LSTM on the CPU reference,
    // the tied decoder's GEMM.
    // Six features stored as eight (k_feature_alignment) against the same model stored at
    // six (MIXLAB_NO_FEATURE_PADDING): the same initial values, and the same losses,
    // logits and parameters over five training steps (tied; untied; dropout off, its
    // masks follow the stored layout).
    void padding_changes_no_number()
    {
        for (const bool tied : {false, true}) {
            qputenv("MIXLAB_NO_FEATURE_PADDING", "1");
            Lm plain(tiny_lm(tied, 0.0f), Policy::FP32);
            qunsetenv("MIXLAB_NO_FEATURE_PADDING");
            Lm padded(tiny_lm(tied, 0.0f), Policy::FP32);
            const auto described = padded.net->describe();
            QVERIFY(std::any_of(described.begin(), described.end(), [](const std::string& l) {
                return l.find("stored padded to 8") != std::string::npos;
            }));
            QCOMPARE(padded.net->read_parameters(), plain.net->read_parameters());
            for (int step = 0; step < 5; ++step) {
                const double a = plain.sgd_step(), b = padded.sgd_step();
                QVERIFY2(std::abs(a - b) <= 1e-6 * std::abs(a),
                         qPrintable(QStringLiteral("step %1: %2 vs %3").arg(step).arg(a).arg(b)));
            }
            QVERIFY(max_abs_diff(padded.logits(), plain.logits()) <= 1e-5);
            QVERIFY(max_abs_diff(padded.net->read_parameters(), plain.net->read_parameters()) <=
                    1e-5);
        }
    }

    void describe_lines()
    {
        Lm lm(tiny_lm(true, 0.0f), Policy::MixedFP16);
        const auto lines = lm.net->describe();
        auto has = [&](const char* a, const char* b) {
            return std::any_of(lines.begin(), lines.end(), [&](const std::string& l) {
                return l.find(a) != std::string::npos && l.find(b) != std::string::npos;
            });
        };
        QVERIFY(has("layer 0 embedding float16: 11x6 table", "shared with layer 2"));
        QVERIFY(has("layer 1 lstm float16 RNN", "6->6 x2 layers, 4 steps of 3"));
        QVERIFY(has("layer 1 lstm", "CPU reference LSTM"));
        QVERIFY(has("layer 2 dense float16 GEMM", "W tied to layer 0 (embedding)'s table"));
        const auto kernels = lm.net->kernels();
        QCOMPARE(kernels.size(), std::size_t(2)); // lstm and decoder
        QCOMPARE(kernels[0].type, std::string("lstm"));
    }
};

QTEST_APPLESS_MAIN(TestNetworkSequence)
#include "tst_network_sequence.moc"
