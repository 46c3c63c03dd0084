// Convolutional networks end to end on the CPU reference: gradients of whole networks
// with residual blocks (identity and projection shortcuts) against finite differences
// of the loss, batch norm's train/eval modes, every policy running a small CNN, a relu
// fused into the batch norm before it (gradients, and training bit for bit as unfused),
// and the ResNet-18 preset learning on synthetic data.
#include "mixlab/backend.h"
#include "mixlab/dataset.h"
#include "mixlab/graph.h"
#include "mixlab/model_spec.h"
#include "mixlab/trainer.h"
#include "model/network.h"
#include "test_util.h"

#include <QtTest/QtTest>

#include <cmath>
#include <cstring>
#include <random>

using namespace mixlab;
using namespace mixlab::test;

namespace {

LayerSpec conv(int filters, int kernel, int stride, Activation act = Activation::None,
               bool bias = false)
{
    LayerSpec l;
    l.type = LayerType::Conv2D;
    l.filters = filters;
    l.kernel_h = l.kernel_w = kernel;
    l.stride_h = l.stride_w = stride;
    l.padding = Padding::Same;
    l.activation = act;
    l.use_bias = bias;
    return l;
}

LayerSpec of_type(LayerType t)
{
    LayerSpec l;
    l.type = t;
    return l;
}

LayerSpec activation(Activation a)
{
    LayerSpec l = of_type(LayerType::Activation);
    l.activation = a;
    return l;
}

LayerSpec dense(int units)
{
    LayerSpec l;
    l.units = units;
    return l;
}

LayerSpec residual(std::vector<LayerSpec> body, std::vector<LayerSpec> shortcut,
                   Activation act = Activation::None)
{
    LayerSpec l = of_type(LayerType::Residual);
    l.body = std::move(body);
    l.shortcut = std::move(shortcut);
    l.activation = act;
    return l;
}

// Smooth activations (tanh) keep the finite differences away from ReLU's kink and
// max pooling's switch points, where a central difference means nothing.
ModelSpec identity_block_model()
{
    ModelSpec s;
    s.name = "identity-block";
    s.layers = {
        conv(4, 3, 1, Activation::Tanh, true),
        residual({conv(4, 3, 1), of_type(LayerType::BatchNorm), activation(Activation::Tanh),
                  conv(4, 3, 1), of_type(LayerType::BatchNorm)},
                 {}),
        of_type(LayerType::GlobalAvgPool), dense(3)};
    return s;
}

ModelSpec projection_block_model()
{
    LayerSpec pool = of_type(LayerType::AvgPool2D);
    pool.kernel_h = pool.kernel_w = 2;
    ModelSpec s;
    s.name = "projection-block";
    s.layers = {conv(4, 3, 1, Activation::Tanh, true),
                residual({conv(6, 3, 2), of_type(LayerType::BatchNorm),
                          activation(Activation::Tanh), conv(6, 3, 1, Activation::None, true)},
                         {conv(6, 1, 2), of_type(LayerType::BatchNorm)}),
                pool, of_type(LayerType::Flatten), dense(3)};
    return s;
}

// Batch norms followed by relus, which the network fuses: one in the middle of a residual
// body, one ending a body (its gradient buffer is the block's), one at the top level.
ModelSpec bn_relu_model()
{
    ModelSpec s;
    s.name = "bn-relu";
    s.layers = {
        conv(4, 3, 1, Activation::Tanh, true),
        residual({conv(4, 3, 1), of_type(LayerType::BatchNorm), activation(Activation::Relu),
                  conv(4, 3, 1), of_type(LayerType::BatchNorm), activation(Activation::Relu)},
                 {}),
        of_type(LayerType::BatchNorm),
        activation(Activation::Relu),
        of_type(LayerType::GlobalAvgPool),
        dense(3)};
    return s;
}

int fused_relu_lines(const std::vector<std::string>& describe)
{
    int n = 0;
    for (const auto& line : describe)
        n += line.find("relu fused into the batch norm before it") != std::string::npos;
    return n;
}

// Sets MIXLAB_NO_BN_RELU_FUSION for one scope.
struct FusionOff {
    explicit FusionOff(bool off)
    {
        if (off) qputenv("MIXLAB_NO_BN_RELU_FUSION", "1");
    }
    ~FusionOff() { qunsetenv("MIXLAB_NO_BN_RELU_FUSION"); }
};

struct Harness {
    std::unique_ptr<Backend> backend = make_backend(DeviceChoice::CPU);
    Graph graph;
    std::unique_ptr<Network> net;
    int batch = 0;
    Buffer record;

    Harness(const ModelSpec& spec, const Shape& input, int classes, int batch_, Policy policy,
            unsigned seed)
        : batch(batch_)
    {
        graph = build_graph(spec, input, classes);
        OptimizerConfig opt;
        net = std::make_unique<Network>(graph, policy, opt, *backend, batch, 7);
        const Vec x = random_vec(std::size_t(batch) * input.elements(), seed);
        backend->upload_f32(net->input(), x.data(), x.size());
        std::vector<std::int32_t> labels(static_cast<std::size_t>(batch));
        for (int i = 0; i < batch; ++i) labels[std::size_t(i)] = i % classes;
        backend->upload_raw(net->labels(), labels.data(), labels.size() * 4);
        record = backend->alloc(k_record_fields, DType::F32);
    }

    // Mean cross-entropy of the batch, forward in training mode (batch statistics).
    double loss(bool with_backward)
    {
        net->forward(batch, true, 0);
        backend->cross_entropy(graph.head, net->logits(), net->labels(), batch, graph.classes,
                               nullptr, &net->dlogits(), record, 0);
        float rec[k_record_fields];
        backend->download_f32(record, rec, k_record_fields);
        if (with_backward) net->backward(batch, 0);
        return double(rec[k_rec_loss_sum]) / batch;
    }
};

// Central differences of the mean loss against the backward pass, for every parameter
// of a small network (a few hundred). The step is large enough that float32 rounding
// of the loss (~1e-7 relative) stays well under the tolerance, small enough that the
// curvature error (~h^2) does too. `fused`: how many relus must run inside a batch norm;
// `kinks`: how many parameters may miss because a step crossed a relu's kink.
void check_gradients(const ModelSpec& spec, const Shape& input, float step = 1e-2f, int fused = 0,
                     int kinks = 0)
{
    Harness h(spec, input, 3, 4, Policy::FP32, 11);
    QCOMPARE(fused_relu_lines(h.net->describe()), fused);
    h.loss(true);
    const std::vector<float> grads = h.net->read_gradients();
    std::vector<float> params = h.net->read_parameters();
    QCOMPARE(grads.size(), params.size());
    QVERIFY(params.size() > 100);
    int checked = 0, missed = 0;
    double worst = 0;
    for (std::size_t i = 0; i < params.size(); ++i) {
        const float keep = params[i];
        params[i] = keep + step;
        h.net->write_parameters(params);
        const double up = h.loss(false);
        params[i] = keep - step;
        h.net->write_parameters(params);
        const double down = h.loss(false);
        params[i] = keep;
        const double numeric = (up - down) / (2.0 * double(step));
        const double analytic = grads[i];
        const double err = std::abs(numeric - analytic);
        const double tol = 2e-4 + 2e-2 * std::abs(numeric);
        worst = std::max(worst, err / tol);
        if (err > tol && ++missed > kinks)
            QFAIL(qPrintable(QString("parameter %1: backward %2, finite difference %3")
                                 .arg(i)
                                 .arg(analytic, 0, 'g', 7)
                                 .arg(numeric, 0, 'g', 7)));
        ++checked;
    }
    h.net->write_parameters(params);
    QVERIFY(checked == int(params.size()));
    qInfo("%d parameters, worst error %.2f of the tolerance, %d missed (%d allowed at kinks)",
          checked, worst, missed, kinks);
}

struct LossRecorder : MetricsSink {
    std::vector<float> losses;
    std::vector<EpochMetrics> epochs;
    std::vector<std::string> errors;
    void on_step(int, const StepMetrics& m) override { losses.push_back(m.loss); }
    void on_epoch(int, const EpochMetrics& e) override { epochs.push_back(e); }
    void on_event(int, const RunEvent& e) override
    {
        if (e.kind == RunEvent::Kind::Error) errors.push_back(e.message);
    }
};

ModelSpec small_cnn()
{
    LayerSpec pool = of_type(LayerType::MaxPool2D);
    pool.kernel_h = pool.kernel_w = 2;
    ModelSpec s;
    s.name = "small";
    s.layers = {conv(8, 3, 1, Activation::Relu, true),
                of_type(LayerType::BatchNorm),
                pool,
                residual({conv(8, 3, 1, Activation::Relu), conv(8, 3, 1)}, {}, Activation::Relu),
                of_type(LayerType::GlobalAvgPool),
                dense(10)};
    return s;
}

} // namespace

class TestNetworkConv : public QObject {
    Q_OBJECT
private slots:
    void identity_shortcut_gradients()
    {
        check_gradients(identity_block_model(), Shape{{5, 5, 2}});
    }
    // Odd input (7x7), stride 2 with "same" padding, a 1x1 projection, average pooling.
    void projection_shortcut_gradients()
    {
        check_gradients(projection_block_model(), Shape{{7, 7, 3}});
    }
    // relu(BN(x)) fused, three times. Where a step moves a relu input across 0 the central
    // difference means nothing (on 5x5 inputs a 1e-3 step does so for ~10% of the
    // parameters, the unfused network alike), so: 3x3 inputs (fewer relu inputs), a
    // 5e-4 step (the loss's fp32 rounding over 1e-3, ~1e-4, still under the 2e-4
    // floor), and up to 4 of the ~400 parameters (1%) may miss at a kink. A wrong mask
    // or a missing relu backward misses on most of them.
    void fused_bn_relu_gradients()
    {
        check_gradients(bn_relu_model(), Shape{{3, 3, 2}}, 5e-4f, 3, 4);
    }

    // The fusion is an optimisation only: with it off (the env var) the same training
    // run ends with the same parameters, bit for bit, in fp32 and with 16-bit storage.
    void bn_relu_fusion_trains_identically_data()
    {
        QTest::addColumn<int>("policy");
        QTest::newRow("fp32") << int(Policy::FP32);
        QTest::newRow("mixed_fp16") << int(Policy::MixedFP16);
        QTest::newRow("mixed_bf16") << int(Policy::MixedBF16);
    }
    void bn_relu_fusion_trains_identically()
    {
        QFETCH(int, policy);
        LayerSpec pool = of_type(LayerType::MaxPool2D);
        pool.kernel_h = pool.kernel_w = 2;
        ModelSpec spec;
        spec.name = "conv-bn-relu";
        spec.layers = {
            conv(8, 3, 1),
            of_type(LayerType::BatchNorm),
            activation(Activation::Relu),
            pool,
            residual({conv(8, 3, 1), of_type(LayerType::BatchNorm), activation(Activation::Relu),
                      conv(8, 3, 1), of_type(LayerType::BatchNorm)},
                     {}, Activation::Relu),
            of_type(LayerType::GlobalAvgPool),
            dense(10)};
        const Dataset data = make_synthetic(64, 16, 9);
        const Graph g =
            build_graph(spec, Shape{{data.height, data.width, data.channels}}, data.classes);
        std::vector<float> initial;
        auto train_once = [&](bool off, std::vector<std::string>* lines) {
            FusionOff env(off);
            auto backend = make_backend(DeviceChoice::CPU);
            DeviceDataset dd(data, *backend);
            RunConfig cfg;
            cfg.policy = Policy(policy);
            cfg.batch_size = 16;
            cfg.steps = 4;
            cfg.optimizer.lr = 0.05f;
            TrainingRun run(g, cfg, dd, *backend);
            *lines = run.describe();
            initial = run.read_parameters();
            LossRecorder rec;
            train(run, rec);
            return run.read_parameters();
        };
        std::vector<std::string> fused_lines, plain_lines;
        const std::vector<float> fused = train_once(false, &fused_lines);
        const std::vector<float> plain = train_once(true, &plain_lines);
        QCOMPARE(fused_relu_lines(fused_lines), 2);
        QCOMPARE(fused_relu_lines(plain_lines), 0);
        QCOMPARE(fused.size(), plain.size());
        for (std::size_t i = 0; i < fused.size(); ++i)
            if (std::memcmp(&fused[i], &plain[i], sizeof(float)) != 0)
                QFAIL(qPrintable(QString("parameter %1: fused %2, unfused %3")
                                     .arg(i)
                                     .arg(fused[i], 0, 'g', 9)
                                     .arg(plain[i], 0, 'g', 9)));
        // Training moved the parameters (else equality would prove nothing).
        QVERIFY(fused != initial);
    }

    // In evaluation a sample's output depends on nothing else in the batch (running
    // statistics); in training it does (batch statistics).
    void batchnorm_eval_uses_running_statistics()
    {
        Harness h(identity_block_model(), Shape{{5, 5, 2}}, 3, 4, Policy::FP32, 5);
        for (int i = 0; i < 5; ++i) h.loss(false); // moves the running statistics
        const std::size_t classes = 3;
        Vec full(4 * classes), alone(4 * classes), train(4 * classes);
        h.net->forward(4, false, 0);
        h.backend->download_f32(h.net->logits(), full.data(), full.size());
        h.net->forward(1, false, 0); // the first sample by itself
        h.backend->download_f32(h.net->logits(), alone.data(), alone.size());
        h.net->forward(4, true, 0); // (this also moves the running statistics: last)
        h.backend->download_f32(h.net->logits(), train.data(), train.size());
        double train_gap = 0;
        for (std::size_t c = 0; c < classes; ++c) {
            QVERIFY(std::abs(alone[c] - full[c]) <= 1e-5f + 1e-5f * std::abs(full[c]));
            train_gap = std::max(train_gap, double(std::abs(train[c] - full[c])));
        }
        QVERIFY2(train_gap > 1e-4, "training-mode output should use the batch's statistics");
    }

    // Every policy runs a CNN with batch norm and a residual block: finite losses, no
    // error, and under `fp16` the float32 batch-norm parameters share the optimizer
    // with float16 weights.
    void every_policy_trains_a_cnn_data()
    {
        QTest::addColumn<int>("policy");
        for (Policy p : k_all_policies)
            QTest::newRow(std::string(policy_name(p)).c_str()) << int(p);
    }
    void every_policy_trains_a_cnn()
    {
        QFETCH(int, policy);
        const Dataset data = make_synthetic(64, 16, 3);
        auto backend = make_backend(DeviceChoice::CPU);
        DeviceDataset dd(data, *backend);
        RunConfig cfg;
        cfg.policy = Policy(policy);
        cfg.batch_size = 16;
        cfg.epochs = 2;
        cfg.dataset.crop_padding = 4;
        cfg.dataset.horizontal_flip = true;
        const Graph g =
            build_graph(small_cnn(), Shape{{data.height, data.width, data.channels}}, data.classes);
        TrainingRun run(g, cfg, dd, *backend);
        LossRecorder rec;
        const RunSummary s = train(run, rec);
        QCOMPARE(s.steps, std::int64_t(8));
        QCOMPARE(int(rec.losses.size()), 8);
        for (float l : rec.losses) QVERIFY(std::isfinite(l));
        QCOMPARE(int(rec.epochs.size()), 2);
        QVERIFY(std::isfinite(rec.epochs.back().test_loss));
        QVERIFY(rec.errors.empty());
    }

    // The ResNet-18 preset on 32x32x3 synthetic data: the same 8 images every step, so
    // the loss has to fall if forward and backward agree.
    void resnet18_preset_learns()
    {
        const ModelSpec spec =
            load_model_spec(std::string(MIXLAB_SOURCE_DIR) + "/resources/models/resnet18.json");
        const Dataset data = make_synthetic(8, 8, 5);
        auto backend = make_backend(DeviceChoice::CPU);
        DeviceDataset dd(data, *backend);
        RunConfig cfg;
        cfg.batch_size = 8;
        cfg.steps = 6;
        cfg.optimizer.lr = 0.02f;
        const Graph g =
            build_graph(spec, Shape{{data.height, data.width, data.channels}}, data.classes);
        TrainingRun run(g, cfg, dd, *backend);
        LossRecorder rec;
        train(run, rec);
        QCOMPARE(int(rec.losses.size()), 6);
        qInfo("ResNet-18 losses: %g %g %g %g %g %g", rec.losses[0], rec.losses[1], rec.losses[2],
              rec.losses[3], rec.losses[4], rec.losses[5]);
        QVERIFY2(rec.losses.back() < 0.7f * rec.losses.front(), "the loss did not fall");
    }
};

QTEST_APPLESS_MAIN(TestNetworkConv)
#include "tst_network_conv.moc"
