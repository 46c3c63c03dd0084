// Convolutional networks end to end on the CPU reference: gradients of whole networks
// with residual blocks (identity and projection shortcuts) against finite differences
// of the loss, batch norm's train/eval modes, every policy running a small CNN, and the
// ResNet-18 preset learning on synthetic data.
#include "mixlab/backend.h"
#include "mixlab/dataset.h"
#include "mixlab/graph.h"
#include "mixlab/model_spec.h"
#include "mixlab/trainer.h"
#include "network.h"
#include "test_util.h"

#include <QtTest/QtTest>

#include <cmath>
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
    s.layers = {conv(4, 3, 1, Activation::Tanh, true),
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
                residual({conv(6, 3, 2), of_type(LayerType::BatchNorm), activation(Activation::Tanh),
                          conv(6, 3, 1, Activation::None, true)},
                         {conv(6, 1, 2), of_type(LayerType::BatchNorm)}),
                pool, of_type(LayerType::Flatten), dense(3)};
    return s;
}

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
// curvature error (~h^2) does too.
void check_gradients(const ModelSpec& spec, const Shape& input)
{
    Harness h(spec, input, 3, 4, Policy::FP32, 11);
    h.loss(true);
    const std::vector<float> grads = h.net->read_gradients();
    std::vector<float> params = h.net->read_parameters();
    QCOMPARE(grads.size(), params.size());
    QVERIFY(params.size() > 100);
    const float step = 1e-2f;
    int checked = 0;
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
        if (err > tol)
            QFAIL(qPrintable(QString("parameter %1: backward %2, finite difference %3")
                                 .arg(i).arg(analytic, 0, 'g', 7).arg(numeric, 0, 'g', 7)));
        ++checked;
    }
    h.net->write_parameters(params);
    QVERIFY(checked == int(params.size()));
    qInfo("%d parameters, worst error %.2f of the tolerance", checked, worst);
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
    s.layers = {conv(8, 3, 1, Activation::Relu, true), of_type(LayerType::BatchNorm), pool,
                residual({conv(8, 3, 1, Activation::Relu), conv(8, 3, 1)}, {}, Activation::Relu),
                of_type(LayerType::GlobalAvgPool), dense(10)};
    return s;
}

} // namespace

class TestNetworkConv : public QObject {
    Q_OBJECT
private slots:
    void identity_shortcut_gradients() { check_gradients(identity_block_model(), Shape{{5, 5, 2}}); }
    // Odd input (7x7), stride 2 with "same" padding, a 1x1 projection, average pooling.
    void projection_shortcut_gradients()
    {
        check_gradients(projection_block_model(), Shape{{7, 7, 3}});
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
    void every_policy_trains_a_cnn_data() { QTest::addColumn<int>("policy");
        for (Policy p : k_all_policies) QTest::newRow(std::string(policy_name(p)).c_str()) << int(p); }
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
        const Graph g = build_graph(small_cnn(), Shape{{data.height, data.width, data.channels}},
                                    data.classes);
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
        const Graph g = build_graph(spec, Shape{{data.height, data.width, data.channels}},
                                    data.classes);
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
