// Checkpoints (mixlab/checkpoint.h) on the CPU reference: a run checkpointed at an epoch's
// end, or stopped mid-epoch, and resumed is bit for bit the run that never stopped (every
// step's loss and the final weights file, byte for byte) under SGD with momentum, Adam,
// fp32, mixed_fp16 with a dynamic loss scale that skips and grows, dropout, a conv + batch
// norm model with augmentation, mixed_fp8's delayed scaling, bf16_split masters and a
// language model (embedding + lstm) on a corpus the test writes; the file's tensors and
// metadata; and files that do not fit refused by name with nothing loaded.
#include "mixlab/checkpoint.h"
#include "mixlab/error.h"
#include "mixlab/run_group.h"
#include "mixlab/trainer.h"
#include "model/model_weights.h"
#include "model/safetensors.h"

#include "one_omp_thread_main.h"

#include <QTemporaryDir>
#include <QtTest>

#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <stop_token>

#include "test_models.h"

using namespace mixlab;

namespace {

std::string read_bytes(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

void write_bytes(const std::string& path, const std::string& bytes)
{
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << bytes;
}

bool contains(const std::string& text, const std::string& part)
{
    return text.find(part) != std::string::npos;
}

// Every step's loss by step number, the events, and a stop pressed after a given step.
struct Recorder : MetricsSink, RunGroupObserver {
    std::map<std::int64_t, float> losses;
    std::vector<RunEvent> events;
    std::int64_t stop_after = 0;
    std::stop_source stop;
    void on_step(int, const StepMetrics& m) override
    {
        losses[m.step] = m.loss;
        if (stop_after > 0 && m.step == stop_after) stop.request_stop();
    }
    void on_epoch(int, const EpochMetrics&) override {}
    void on_event(int, const RunEvent& e) override { events.push_back(e); }
};

struct Trained {
    std::map<std::int64_t, float> losses;
    std::vector<RunEvent> events;
    std::string weights; // the weights file's bytes
    RunSummary summary;
};

// One run of a group (as mixlab-cli train runs it), its weights saved at the end.
Trained train(const ModelSpec& spec, const RunConfig& config, RunGroupOptions options,
              const QString& weights_path, std::int64_t stop_after = 0)
{
    options.save_weights = weights_path.toStdString();
    RunGroup group(spec, {config}, options);
    Recorder rec;
    rec.stop_after = stop_after;
    const GroupOutcome out = group.run(rec, rec, rec.stop.get_token());
    Trained t;
    if (out.runs.front().status == RunOutcome::Status::Failed) {
        qWarning("run failed: %s", out.runs.front().failure.c_str());
        return t;
    }
    t.losses = rec.losses;
    t.events = rec.events;
    t.weights = read_bytes(options.save_weights);
    t.summary = out.runs.front().summary;
    return t;
}

// A group of one run that writes its checkpoint to `path`, as mixlab-cli train
// --save-checkpoint asks for it.
RunGroupOptions checkpoint_to(const std::string& path)
{
    RunGroupOptions o;
    o.run_outputs.resize(1);
    o.run_outputs.front().checkpoint_file = path;
    return o;
}

std::uint32_t bits(float f)
{
    std::uint32_t b;
    std::memcpy(&b, &f, sizeof b);
    return b;
}

// The resumed pieces together against the straight run: the same steps, each loss the
// same bits. A message naming the first step that differs.
QString compare_losses(const std::map<std::int64_t, float>& straight,
                       const std::map<std::int64_t, float>& first,
                       const std::map<std::int64_t, float>& resumed)
{
    std::map<std::int64_t, float> joined = first;
    for (const auto& [step, loss] : resumed) {
        if (joined.count(step)) return QString("step %1 reported twice").arg(step);
        joined[step] = loss;
    }
    if (joined.size() != straight.size())
        return QString("%1 steps, the straight run %2").arg(joined.size()).arg(straight.size());
    for (const auto& [step, loss] : straight)
        if (!joined.count(step) || bits(joined[step]) != bits(loss))
            return QString("step %1: loss %2 resumed, %3 straight")
                .arg(step)
                .arg(double(joined[step]), 0, 'g', 9)
                .arg(double(loss), 0, 'g', 9);
    return {};
}

RunConfig mlp_config(Policy policy, OptimizerType opt)
{
    RunConfig c;
    c.dataset.name = "synthetic";
    c.dataset.synthetic_train = 256;
    c.dataset.synthetic_test = 64;
    c.policy = policy;
    c.batch_size = 16; // 16 steps an epoch
    c.epochs = 2;
    c.device = DeviceChoice::CPU;
    c.seed = 7;
    c.optimizer.type = opt;
    c.optimizer.lr = opt == OptimizerType::SGD ? 0.05f : 0.002f;
    return c;
}

ModelSpec conv_bn()
{
    return parse_model_spec(R"({"format": "mixlab-model/1", "name": "conv-bn", "layers": [
        {"type": "conv2d", "filters": 4, "kernel": 3, "padding": "same"},
        {"type": "batchnorm"}, {"type": "activation", "activation": "relu"},
        {"type": "maxpool2d", "pool_size": 4}, {"type": "flatten"},
        {"type": "dense", "units": 10}]})");
}

// A decoder tied to the embedding holds no table of its own: its optimizer state is the
// embedding's, written under both names.
ModelSpec tiny_lm(bool tied)
{
    return parse_model_spec(std::string(R"({"format": "mixlab-model/1", "name": "tiny-lm",
        "layers": [{"type": "embedding", "vocab": "dataset", "dim": 16},
        {"type": "lstm", "hidden": 16, "layers": 2, "dropout": 0.2},
        {"type": "dense", "units": "vocab")") +
                            (tied ? R"(, "tie_weights": true)" : "") + "}]}");
}

// A word corpus of 40 words the test writes, so it needs no file of its own.
void write_corpus(const QString& folder)
{
    QDir().mkpath(folder);
    std::uint64_t x = 12345;
    auto next = [&x] {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        return std::uint32_t(x >> 33);
    };
    for (const auto& [name, words] :
         {std::pair{"train.txt", 2400}, {"valid.txt", 400}, {"test.txt", 400}}) {
        std::string text;
        int prev = 0;
        for (int i = 0; i < words; ++i) {
            // train.txt and test.txt follow one rule, valid.txt another with a random
            // step: the better the model learns the first, the worse its validation loss,
            // so the plateau schedule lowers the rate after epoch 2 (from the best loss,
            // epoch 1's, which the resumed run must know).
            const bool valid = std::string(name) == "valid.txt";
            prev = valid ? (prev * 3 + 1 + int(next() % 2)) % 40 : (prev * 7 + 1) % 40;
            text += "w" + std::to_string(prev);
            text += (i % 12 == 11) ? "\n" : " ";
        }
        write_bytes((folder + "/" + name).toStdString(), text);
    }
}

} // namespace

class TestCheckpoint : public QObject {
    Q_OBJECT
private:
    QTemporaryDir m_dir;
    QString path(const QString& name) const { return m_dir.filePath(name); }

private slots:
    void resumedRunIsBitIdentical_data();
    void resumedRunIsBitIdentical();
    void fileHoldsTheRunsState();
    void refusesFilesThatDoNotFit();
    void loadWeightsTakesACheckpointsWeights();
};

void TestCheckpoint::resumedRunIsBitIdentical_data()
{
    QTest::addColumn<QString>("model"); // "mlp", "dropout", "conv", "lm", "lm-tied"
    QTest::addColumn<int>("policy");
    QTest::addColumn<int>("optimizer");
    QTest::addColumn<bool>("scaler_busy"); // mixed_fp16: a loss scale that skips and grows
    QTest::addColumn<bool>("split_master");

    const auto row = [](const char* name, const char* model, Policy p, OptimizerType o,
                        bool busy = false, bool split = false) {
        QTest::newRow(name) << QString(model) << int(p) << int(o) << busy << split;
    };
    row("sgd momentum fp32", "mlp", Policy::FP32, OptimizerType::SGD);
    row("adam fp32", "mlp", Policy::FP32, OptimizerType::Adam);
    row("sgd mixed_fp16 dynamic scale", "mlp", Policy::MixedFP16, OptimizerType::SGD, true);
    row("adam mixed_fp16 dynamic scale", "mlp", Policy::MixedFP16, OptimizerType::Adam, true);
    row("adam dropout mixed_fp16", "dropout", Policy::MixedFP16, OptimizerType::Adam);
    row("sgd conv batchnorm augment", "conv", Policy::FP32, OptimizerType::SGD);
    row("adam mixed_fp8", "mlp", Policy::MixedFP8, OptimizerType::Adam);
    row("adamw mixed_bf16 bf16_split", "mlp", Policy::MixedBF16, OptimizerType::AdamW, false, true);
    row("sgd lstm language model fp32", "lm", Policy::FP32, OptimizerType::SGD);
    row("sgd lstm language model mixed_fp16", "lm", Policy::MixedFP16, OptimizerType::SGD);
    row("adam lstm language model tied decoder", "lm-tied", Policy::FP32, OptimizerType::Adam);
}

// Straight: 2 epochs. Then 1 epoch with a checkpoint, resumed to 2; and 2 epochs stopped
// in the middle of the second, its checkpoint resumed to the end. The pieces' losses,
// joined, and the final weights file must be the straight run's, bit for bit.
void TestCheckpoint::resumedRunIsBitIdentical()
{
    QFETCH(QString, model);
    QFETCH(int, policy);
    QFETCH(int, optimizer);
    QFETCH(bool, scaler_busy);
    QFETCH(bool, split_master);
    const QString tag = QString(QTest::currentDataTag()).replace(' ', '_');

    ModelSpec spec = test::tiny_mlp({.hidden = 24});
    RunConfig c = mlp_config(Policy(policy), OptimizerType(optimizer));
    if (model == "dropout") spec = test::tiny_mlp({.hidden = 24, .dropout = 0.3f});
    if (model == "conv") {
        spec = conv_bn();
        c.dataset.crop_padding = 4;
        c.dataset.horizontal_flip = true;
    }
    if (model.startsWith("lm")) {
        spec = tiny_lm(model == "lm-tied");
        const QString corpus = path("corpus");
        if (!QFileInfo::exists(corpus)) write_corpus(corpus);
        c = with_language_model_defaults(c);
        if (OptimizerType(optimizer) != OptimizerType::SGD) {
            c.optimizer.type = OptimizerType(optimizer);
            c.optimizer.lr = 0.003f;
        }
        c.dataset = DatasetOptions{};
        c.dataset.name = corpus.toStdString();
        c.batch_size = 4;
        c.bptt = 8;
        c.epochs = 3; // the plateau schedule's state carries through two resumes' worth
    }
    if (scaler_busy) {
        // Far above what fp16 gradients hold: the first steps overflow and back off, and
        // a short growth interval grows it again, so the scaler's whole state matters.
        c.loss_scale.mode = LossScaleMode::Dynamic;
        c.loss_scale.init = std::ldexp(1.0f, 30);
        c.loss_scale.growth_interval = 3;
    }
    if (split_master) c.optimizer.master_weights = MasterWeights::Bf16Split;

    const Trained straight = train(spec, c, {}, path(tag + "-straight.st"));
    QVERIFY(!straight.losses.empty());
    QVERIFY(!straight.weights.empty());
    if (scaler_busy) {
        bool down = false, up = false;
        for (const RunEvent& e : straight.events)
            if (e.kind == RunEvent::Kind::ScaleChange)
                (contains(e.message, "overflow") ? down : up) = true;
        QVERIFY2(down && up, "the loss scale should both back off and grow in this run");
    }

    if (model == "lm") {
        bool annealed = false;
        for (const RunEvent& e : straight.events)
            annealed = annealed || contains(e.message, "learning rate 20 -> 5");
        QVERIFY2(annealed, "the plateau schedule should lower the rate in this run");
    }
    const std::int64_t per_epoch = std::int64_t(straight.losses.size()) / c.epochs;
    // 1 epoch, checkpointed at its end; resumed as the CLI does it: the model and config
    // from the file, the epochs extended.
    const QString ck = path(tag + "-epoch.ckpt");
    RunConfig first = c;
    first.epochs = 1;
    const Trained one = train(spec, first, checkpoint_to(ck.toStdString()), path(tag + "-one.st"));
    QCOMPARE(std::int64_t(one.losses.size()), per_epoch);
    CheckpointHeader h = read_checkpoint_header(ck.toStdString());
    QCOMPARE(h.step, per_epoch);
    QCOMPARE(h.steps_per_epoch, per_epoch);
    RunConfig more = h.config;
    more.epochs = c.epochs;
    RunGroupOptions resume;
    resume.resume = ck.toStdString();
    const Trained rest = train(h.model, more, resume, path(tag + "-rest.st"));
    QString diff = compare_losses(straight.losses, one.losses, rest.losses);
    QVERIFY2(diff.isEmpty(), qPrintable("resumed at an epoch's end: " + diff));
    QVERIFY2(rest.weights == straight.weights, "the final weights differ after a resume");
    bool said = false;
    for (const RunEvent& e : rest.events)
        said = said || contains(e.message, "resumed from checkpoint '" + ck.toStdString() +
                                               "' at step " + std::to_string(per_epoch));
    QVERIFY2(said, "the resumed run's log should say where it resumed from");

    // Stopped in the middle of the last epoch (a checkpoint at the stop), then resumed.
    const QString mid = path(tag + "-mid.ckpt");
    const std::int64_t stop_at = (c.epochs - 1) * per_epoch + per_epoch / 2;
    const Trained stopped =
        train(spec, c, checkpoint_to(mid.toStdString()), path(tag + "-stopped.st"), stop_at);
    QVERIFY(stopped.summary.stopped);
    h = read_checkpoint_header(mid.toStdString());
    QVERIFY2(h.step % per_epoch != 0, "the stop should fall inside an epoch");
    QCOMPARE(h.step, std::int64_t(stopped.losses.size()));
    const Trained after = train(h.model, h.config, RunGroupOptions{.resume = mid.toStdString()},
                                path(tag + "-after.st"));
    diff = compare_losses(straight.losses, stopped.losses, after.losses);
    QVERIFY2(diff.isEmpty(), qPrintable("resumed mid-epoch: " + diff));
    QVERIFY2(after.weights == straight.weights, "the final weights differ after a mid-epoch stop");
}

// The tensors and metadata docs/WEIGHTS.md promises: the weights under their PyTorch
// names, Adam's moments, the scaler, the run config and the position.
void TestCheckpoint::fileHoldsTheRunsState()
{
    const ModelSpec spec = test::tiny_mlp({.hidden = 8});
    RunConfig c = mlp_config(Policy::MixedFP16, OptimizerType::Adam);
    c.epochs = 1;
    const QString ck = path("state.ckpt");
    train(spec, c, checkpoint_to(ck.toStdString()), path("state.st"));
    const std::string bytes = read_bytes(ck.toStdString());
    const SafetensorsFile f = decode_safetensors(bytes, "state.ckpt");
    QCOMPARE(f.metadata.at("format"), std::string(k_checkpoint_format));
    QCOMPARE(f.metadata.at("policy"), std::string("mixed_fp16"));
    QCOMPARE(f.metadata.at("step"), std::string("16"));
    QCOMPARE(f.metadata.at("step_in_epoch"), std::string("0"));
    QCOMPARE(parse_run_config(f.metadata.at("run")).seed, c.seed);
    QCOMPARE(parse_model_spec(f.metadata.at("model")).layers.size(), spec.layers.size());
    for (const char* name :
         {"1.weight", "1.bias", "2.weight", "2.bias", "optimizer.1.weight.exp_avg",
          "optimizer.1.weight.exp_avg_sq", "optimizer.2.bias.exp_avg_sq", "mixlab.loss_scaler"})
        QVERIFY2(f.find(name), name);
    QCOMPARE(f.find("optimizer.1.weight.exp_avg")->shape, (std::vector<std::int64_t>{8, 3072}));
    // The scaler: scale 65536 (no overflow in 16 steps at this rate) and 16 optimizer steps.
    float scaler[k_scaler_fields];
    std::memcpy(scaler, f.find("mixlab.loss_scaler")->data.data(), sizeof scaler);
    QCOMPARE(scaler[k_optimizer_steps], 16.0f);
    // The weights alone are what a weights file of the same run holds.
    const SafetensorsFile w = decode_safetensors(read_bytes(path("state.st").toStdString()), "w");
    for (const SafeTensor& t : w.tensors) {
        QVERIFY2(f.find(t.name), t.name.c_str());
        QVERIFY2(f.find(t.name)->data == t.data, t.name.c_str());
    }
}

void TestCheckpoint::refusesFilesThatDoNotFit()
{
    const ModelSpec spec = test::tiny_mlp({.hidden = 8});
    RunConfig c = mlp_config(Policy::FP32, OptimizerType::SGD);
    c.epochs = 1;
    const std::string ck = path("fit.ckpt").toStdString();
    train(spec, c, checkpoint_to(ck), path("fit.st"));
    const std::string bytes = read_bytes(ck);

    // Set up as a resume would be, then given a file: it must throw naming `fragment`,
    // and the run's weights must be its initial ones still.
    const auto refused = [&](const ModelSpec& model, const RunConfig& config,
                             const std::string& file, const std::string& fragment) {
        const Dataset data = load_dataset(config.dataset, config.seed);
        auto backend = make_backend(DeviceChoice::CPU);
        DeviceDataset dev(data, *backend);
        const Graph g =
            build_graph(model, Shape{{data.height, data.width, data.channels}}, data.classes);
        TrainingRun run(g, config, dev, *backend);
        const std::vector<float> before = run.read_parameters();
        try {
            run.resume(file);
            QFAIL(qPrintable(QString::fromStdString("accepted; expected: " + fragment)));
        } catch (const InputError& e) {
            QVERIFY2(contains(e.what(), fragment),
                     qPrintable(QString::fromStdString(std::string(e.what()) +
                                                       "\n  expected: " + fragment)));
        }
        QVERIFY2(run.read_parameters() == before, "a refused checkpoint changed the weights");
    };

    const std::string truncated = path("truncated.ckpt").toStdString();
    write_bytes(truncated, bytes.substr(0, bytes.size() - 6));
    refused(spec, c, truncated, "ends at byte offset");
    // Another optimizer: the weights fit, the state does not (and nothing is written).
    RunConfig adam = c;
    adam.optimizer.type = OptimizerType::Adam;
    refused(spec, adam, ck, "tensor \"optimizer.1.weight.exp_avg\" is missing");
    // Another model.
    refused(test::tiny_mlp({.hidden = 9}), c, ck,
            "tensor \"1.weight\": expected shape [9, 3072], found [8, 3072]");
    // Another policy, and another batch (steps per epoch).
    RunConfig fp16 = c;
    fp16.policy = Policy::MixedFP16;
    refused(spec, fp16, ck, "was written by a fp32 run; this run is mixed_fp16");
    RunConfig batch = c;
    batch.batch_size = 32;
    refused(spec, batch, ck, "its run had 16 steps per epoch, this one has 8");
    // A weights file.
    refused(spec, c, path("fit.st").toStdString(), "is a weights file (mixlab-weights/1)");
    // The metadata's position missing.
    SafetensorsFile f = decode_safetensors(bytes, "fit");
    f.metadata.erase("lr");
    const std::string no_lr = path("no-lr.ckpt").toStdString();
    write_bytes(no_lr, encode_safetensors(f.tensors, f.metadata));
    refused(spec, c, no_lr, "\"__metadata__\" has no \"lr\"");
    // The scaler's tensor of the wrong size.
    f = decode_safetensors(bytes, "fit");
    for (SafeTensor& t : f.tensors)
        if (t.name == "mixlab.loss_scaler") {
            t.shape = {2};
            t.data.resize(8);
        }
    const std::string short_scaler = path("short-scaler.ckpt").toStdString();
    write_bytes(short_scaler, encode_safetensors(f.tensors, f.metadata));
    refused(spec, c, short_scaler, "tensor \"mixlab.loss_scaler\" holds 2 values, expected 4");
    // The header reader refuses the same files before anything is set up.
    QVERIFY_THROWS_EXCEPTION(InputError, read_checkpoint_header(truncated));
    QVERIFY_THROWS_EXCEPTION(InputError, read_checkpoint_header(path("fit.st").toStdString()));
}

// --load-weights of a checkpoint: its weights, none of its state; the run starts at step 0.
void TestCheckpoint::loadWeightsTakesACheckpointsWeights()
{
    const ModelSpec spec = test::tiny_mlp({.hidden = 8});
    RunConfig c = mlp_config(Policy::FP32, OptimizerType::Adam);
    c.epochs = 1;
    const std::string ck = path("weights-of.ckpt").toStdString();
    train(spec, c, checkpoint_to(ck), path("weights-of.st"));
    RunConfig again = c;
    again.steps = 1;
    const Trained from_ckpt = train(spec, again, RunGroupOptions{.load_weights = ck}, path("a.st"));
    const Trained from_weights =
        train(spec, again, RunGroupOptions{.load_weights = path("weights-of.st").toStdString()},
              path("b.st"));
    QCOMPARE(from_ckpt.losses.size(), std::size_t(1));
    QCOMPARE(bits(from_ckpt.losses.at(1)), bits(from_weights.losses.at(1)));
    QVERIFY(from_ckpt.weights == from_weights.weights);
}

MIXLAB_TEST_MAIN_ONE_OMP_THREAD(TestCheckpoint, QCoreApplication)
#include "tst_checkpoint.moc"
