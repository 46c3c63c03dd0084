// RunPanel: config round trip through the widgets, policies a device cannot run
// disabled with the reason, compare defaults per device, button states and datasets,
// epochs or steps, buttons in view while the settings scroll, the wheel left to the
// scroll area by unfocused fields.
#include "runs/runpanel.h"
#include "common/wheelguard.h"

#include "mixlab/dataset.h"
#include "mixlab/run_config.h"

#include "wheel_input.h"

#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QLabel>
#include <QPushButton>
#include <QScrollArea>
#include <QScrollBar>
#include <QSignalSpy>
#include <QSpinBox>
#include <QStandardItemModel>
#include <QTemporaryDir>
#include <QTest>

#include <filesystem>

Q_DECLARE_METATYPE(mixlab::DeviceInfo)
Q_DECLARE_METATYPE(mixlab::Shape)
Q_DECLARE_METATYPE(std::vector<mixlab::Policy>)

namespace {

mixlab::DeviceInfo fakeGpu(int major, int minor)
{
    mixlab::DeviceInfo info;
    info.backend = mixlab::BackendKind::Cuda;
    info.name = major >= 8 ? "NVIDIA A100-SXM4-40GB" : "NVIDIA GeForce RTX 2060";
    info.cc_major = major;
    info.cc_minor = minor;
    info.memory_bytes = std::int64_t(6) << 30;
    info.tensor_cores = major >= 7;
    info.bf16 = major >= 8;
    info.tf32 = major >= 8;
    return info;
}

mixlab::DeviceInfo cpuDevice()
{
    mixlab::DeviceInfo info;
    info.backend = mixlab::BackendKind::Cpu;
    info.name = "CPU (no CUDA device)";
    return info;
}

QStandardItem *policyItem(RunPanel &panel, mixlab::Policy p)
{
    auto *combo = panel.findChild<QComboBox *>("policyCombo");
    auto *model = qobject_cast<QStandardItemModel *>(combo->model());
    return model->item(combo->findData(int(p)));
}

QCheckBox *compareBox(RunPanel &panel, mixlab::Policy p)
{
    return panel.findChild<QCheckBox *>(QStringLiteral("compare_") +
                                        QString::fromUtf8(mixlab::policy_name(p).data()));
}

void writeBigEndian(QFile &f, quint32 v)
{
    const char bytes[4] = {char(v >> 24), char(v >> 16), char(v >> 8), char(v)};
    f.write(bytes, 4);
}

// A tiny MNIST-layout folder: n images of rows x cols, labels 0..9 in turn.
void writeIdx(const QString &dir, const QString &prefix, int n, int rows, int cols)
{
    QFile images(dir + "/" + prefix + "-images-idx3-ubyte");
    QVERIFY(images.open(QIODevice::WriteOnly));
    writeBigEndian(images, 0x00000803);
    writeBigEndian(images, quint32(n));
    writeBigEndian(images, quint32(rows));
    writeBigEndian(images, quint32(cols));
    QByteArray pixels(n * rows * cols, '\0');
    for (int i = 0; i < pixels.size(); ++i) pixels[i] = char((i * 37) % 251);
    images.write(pixels);
    QFile labels(dir + "/" + prefix + "-labels-idx1-ubyte");
    QVERIFY(labels.open(QIODevice::WriteOnly));
    writeBigEndian(labels, 0x00000801);
    writeBigEndian(labels, quint32(n));
    for (int i = 0; i < n; ++i) labels.putChar(char(i % 10));
}

} // namespace

class TestRunPanel : public QObject {
    Q_OBJECT
private slots:
    void configRoundTrip_data();
    void configRoundTrip();
    void disabledPoliciesOnTuring();
    void cpuChoiceEnablesEveryPolicy();
    void compareDefaults_data();
    void compareDefaults();
    void setComparePoliciesSticks();
    void startBlockedAndRunning();
    void buttonsEmit();
    void datasetShapes();
    void datasetFolder();
    void augmentation();
    void splitMasterWeights();
    void trainForEpochsOrSteps();
    void buttonsStayInView();
    void wheelNeedsFocus_data();
    void wheelNeedsFocus();
};

void TestRunPanel::configRoundTrip_data()
{
    QTest::addColumn<QString>("json");
    // Every control and the fields without one (steps, synthetic sizes, loss-scale
    // parameters, Adam betas, weight decay) must come back unchanged.
    QTest::newRow("defaults-synthetic") << QString::fromStdString(mixlab::run_config_to_json([] {
        mixlab::RunConfig c;
        c.dataset.name = "synthetic";
        return c;
    }()));
    QTest::newRow("adam-static-cpu") << QString::fromStdString(mixlab::run_config_to_json([] {
        mixlab::RunConfig c;
        c.dataset.name = "synthetic";
        c.dataset.synthetic_train = 512;
        c.dataset.synthetic_test = 128;
        c.policy = mixlab::Policy::MixedFP16;
        c.loss_scale.mode = mixlab::LossScaleMode::Static;
        c.loss_scale.init = 1024.0f;
        c.loss_scale.growth_interval = 77;
        c.batch_size = 96;
        c.epochs = 3;
        c.steps = 40;
        c.optimizer.type = mixlab::OptimizerType::Adam;
        c.optimizer.lr = 3e-4f;
        c.optimizer.beta2 = 0.98f;
        c.optimizer.weight_decay = 0.01f;
        c.optimizer.clip_norm = 0.25f; // no widget of its own: kept as loaded
        c.seed = (std::uint64_t(1) << 40) + 3;
        c.device = mixlab::DeviceChoice::CPU;
        return c;
    }()));
    QTest::newRow("adamw-none-fp16") << QString::fromStdString(mixlab::run_config_to_json([] {
        mixlab::RunConfig c;
        c.dataset.name = "synthetic";
        c.policy = mixlab::Policy::FP16;
        c.loss_scale.mode = mixlab::LossScaleMode::None;
        c.optimizer.type = mixlab::OptimizerType::AdamW;
        c.optimizer.lr = 0.00123f;
        c.batch_size = 1;
        c.seed = 0;
        return c;
    }()));
    QTest::newRow("sgd-momentum-bf16") << QString::fromStdString(mixlab::run_config_to_json([] {
        mixlab::RunConfig c;
        c.dataset.name = "synthetic";
        c.policy = mixlab::Policy::MixedBF16;
        c.loss_scale.mode = mixlab::LossScaleMode::Dynamic;
        c.optimizer.momentum = 0.5f;
        c.optimizer.nesterov = true;
        c.optimizer.lr = 0.1f;
        c.batch_size = 32;
        c.device = mixlab::DeviceChoice::Auto;
        return c;
    }()));
    QTest::newRow("augmented") << QString::fromStdString(mixlab::run_config_to_json([] {
        mixlab::RunConfig c;
        c.dataset.name = "synthetic";
        c.dataset.crop_padding = 4;
        c.dataset.horizontal_flip = true;
        return c;
    }()));
    QTest::newRow("flip-only") << QString::fromStdString(mixlab::run_config_to_json([] {
        mixlab::RunConfig c;
        c.dataset.name = "synthetic";
        c.dataset.horizontal_flip = true;
        return c;
    }()));
    if (std::filesystem::exists(mixlab::k_debian_fashion_mnist_dir))
        QTest::newRow("fashion-tf32") << QString::fromStdString(mixlab::run_config_to_json([] {
            mixlab::RunConfig c;
            c.dataset.name = "fashion-mnist";
            c.policy = mixlab::Policy::TF32;
            c.epochs = 5;
            return c;
        }()));
}

void TestRunPanel::configRoundTrip()
{
    QFETCH(QString, json);
    const mixlab::RunConfig in = mixlab::parse_run_config(json.toStdString());
    RunPanel panel;
    // Start from a different config so that a control that does not take the value shows.
    mixlab::RunConfig other;
    other.dataset.name = "synthetic";
    other.batch_size = 7;
    other.policy = mixlab::Policy::FP32;
    other.optimizer.lr = 0.5f;
    panel.setConfig(other);
    QSignalSpy changed(&panel, &RunPanel::configChanged);
    panel.setConfig(in);
    QVERIFY(changed.count() >= 1);
    QCOMPARE(QString::fromStdString(mixlab::run_config_to_json(panel.config())), json);
}

void TestRunPanel::disabledPoliciesOnTuring()
{
    RunPanel panel;
    mixlab::RunConfig c;
    c.dataset.name = "synthetic";
    c.policy = mixlab::Policy::MixedBF16; // chosen before the device is known
    panel.setConfig(c);
    QSignalSpy changed(&panel, &RunPanel::configChanged);
    panel.setDeviceInfo(fakeGpu(7, 5));

    for (mixlab::Policy p : {mixlab::Policy::TF32, mixlab::Policy::MixedBF16}) {
        QStandardItem *item = policyItem(panel, p);
        QVERIFY(item);
        QVERIFY2(!item->isEnabled(), mixlab::policy_name(p).data());
        QVERIFY2(item->toolTip().contains("compute capability 8.0"), qPrintable(item->toolTip()));
        QVERIFY(item->toolTip().contains("7.5"));
        QCheckBox *box = compareBox(panel, p);
        QVERIFY(!box->isEnabled());
        QVERIFY(!box->isChecked());
        QVERIFY(box->toolTip().contains("compute capability 8.0"));
        QVERIFY(!panel.policyBlockReason(p).isEmpty());
    }
    for (mixlab::Policy p :
         {mixlab::Policy::FP32, mixlab::Policy::MixedFP16, mixlab::Policy::FP16}) {
        QVERIFY(policyItem(panel, p)->isEnabled());
        QVERIFY(compareBox(panel, p)->isEnabled());
        QVERIFY(panel.policyBlockReason(p).isEmpty());
    }
    // The bf16 choice could not run here: it moved to fp32 and said so.
    QCOMPARE(panel.config().policy, mixlab::Policy::FP32);
    QVERIFY(changed.count() >= 1);
    QVERIFY(panel.findChild<QLabel *>("deviceLabel")->text().contains("RTX 2060"));
    // A device that has no CUDA cannot be asked for CUDA.
    RunPanel cpuPanel;
    cpuPanel.setDeviceInfo(cpuDevice());
    auto *device = cpuPanel.findChild<QComboBox *>("deviceCombo");
    auto *model = qobject_cast<QStandardItemModel *>(device->model());
    QVERIFY(!model->item(device->findData(int(mixlab::DeviceChoice::CUDA)))->isEnabled());
    QVERIFY(model->item(device->findData(int(mixlab::DeviceChoice::CPU)))->isEnabled());
}

void TestRunPanel::cpuChoiceEnablesEveryPolicy()
{
    RunPanel panel;
    panel.setDeviceInfo(fakeGpu(7, 5));
    QVERIFY(!policyItem(panel, mixlab::Policy::MixedBF16)->isEnabled());
    // The CPU backend emulates every format, so picking it lifts the restriction.
    auto *device = panel.findChild<QComboBox *>("deviceCombo");
    device->setCurrentIndex(device->findData(int(mixlab::DeviceChoice::CPU)));
    QVERIFY(policyItem(panel, mixlab::Policy::MixedBF16)->isEnabled());
    QVERIFY(policyItem(panel, mixlab::Policy::TF32)->isEnabled());
    QVERIFY(compareBox(panel, mixlab::Policy::MixedBF16)->isEnabled());
    device->setCurrentIndex(device->findData(int(mixlab::DeviceChoice::Auto)));
    QVERIFY(!policyItem(panel, mixlab::Policy::MixedBF16)->isEnabled());
}

void TestRunPanel::compareDefaults_data()
{
    QTest::addColumn<mixlab::DeviceInfo>("device");
    QTest::addColumn<std::vector<mixlab::Policy>>("expected");
    using P = mixlab::Policy;
    QTest::newRow("cpu") << cpuDevice() << std::vector<P>{P::FP32, P::MixedFP16};
    QTest::newRow("turing") << fakeGpu(7, 5) << std::vector<P>{P::FP32, P::MixedFP16};
    QTest::newRow("ampere") << fakeGpu(8, 0) << std::vector<P>{P::FP32, P::MixedFP16, P::MixedBF16};
}

void TestRunPanel::compareDefaults()
{
    QFETCH(mixlab::DeviceInfo, device);
    QFETCH(std::vector<mixlab::Policy>, expected);
    RunPanel panel;
    QCOMPARE(panel.comparePolicies(),
             (std::vector<mixlab::Policy>{mixlab::Policy::FP32, mixlab::Policy::MixedFP16}));
    panel.setDeviceInfo(device);
    QCOMPARE(panel.comparePolicies(), expected);
    QVERIFY(panel.findChild<QPushButton *>("compareButton")->isEnabled());
}

void TestRunPanel::setComparePoliciesSticks()
{
    RunPanel panel;
    using P = mixlab::Policy;
    panel.setComparePolicies({P::FP32, P::FP16});
    QCOMPARE(panel.comparePolicies(), (std::vector<P>{P::FP32, P::FP16}));
    // A device arriving later does not overwrite the user's choice with defaults.
    panel.setDeviceInfo(fakeGpu(8, 0));
    QCOMPARE(panel.comparePolicies(), (std::vector<P>{P::FP32, P::FP16}));
    QVERIFY(panel.compareBlockReason().isEmpty());
    // One policy is not a comparison, and the reason says so, naming what this Ampere GPU
    // cannot run (the app's --compare prints it; the button's tooltip shows it).
    panel.setComparePolicies({P::FP32});
    QVERIFY(!panel.findChild<QPushButton *>("compareButton")->isEnabled());
    QVERIFY(panel.findChild<QPushButton *>("startButton")->isEnabled());
    const QString ampere = QStringLiteral("Check at least two policies to compare (mixed_fp8 "
                                          "cannot run on this device)");
    QCOMPARE(panel.compareBlockReason(), ampere);
    QCOMPARE(panel.findChild<QPushButton *>("compareButton")->toolTip().left(ampere.size()),
             ampere);
    // On the CPU every policy runs (fp8 emulated): nothing to name.
    RunPanel cpu;
    cpu.setDeviceInfo(cpuDevice());
    cpu.setComparePolicies({P::FP32});
    QCOMPARE(cpu.compareBlockReason(), QStringLiteral("Check at least two policies to compare"));
    // A policy checked before the device arrives is unchecked when the device cannot run it.
    RunPanel late;
    late.setComparePolicies({P::FP32, P::MixedFP8});
    QVERIFY(late.compareBlockReason().isEmpty());
    late.setDeviceInfo(fakeGpu(8, 0));
    QCOMPARE(late.comparePolicies(), (std::vector<P>{P::FP32}));
    QCOMPARE(late.compareBlockReason(), ampere);
}

void TestRunPanel::startBlockedAndRunning()
{
    RunPanel panel;
    auto *start = panel.findChild<QPushButton *>("startButton");
    auto *compare = panel.findChild<QPushButton *>("compareButton");
    auto *stop = panel.findChild<QPushButton *>("stopButton");
    auto *label = panel.findChild<QLabel *>("blockLabel");
    QVERIFY(start->isEnabled() && compare->isEnabled() && !stop->isEnabled());
    QVERIFY(!label->isVisibleTo(&panel));

    const QString reason =
        QStringLiteral("layer 3 (dense): output has 7 units, the dataset has 10 classes");
    panel.setStartBlocked(reason);
    QVERIFY(!start->isEnabled());
    QVERIFY(!compare->isEnabled());
    QVERIFY(label->isVisibleTo(&panel));
    QCOMPARE(label->text(), reason);
    QVERIFY(panel.isStartBlocked());
    panel.setStartBlocked(QString());
    QVERIFY(start->isEnabled());
    QVERIFY(!label->isVisibleTo(&panel));

    panel.setRunning(true);
    QVERIFY(!start->isEnabled());
    QVERIFY(!compare->isEnabled());
    QVERIFY(stop->isEnabled());
    panel.setRunning(false);
    QVERIFY(start->isEnabled() && compare->isEnabled() && !stop->isEnabled());
}

void TestRunPanel::buttonsEmit()
{
    RunPanel panel;
    QSignalSpy start(&panel, &RunPanel::startRequested);
    QSignalSpy compare(&panel, &RunPanel::compareRequested);
    QSignalSpy stop(&panel, &RunPanel::stopRequested);
    QTest::mouseClick(panel.findChild<QPushButton *>("startButton"), Qt::LeftButton);
    QTest::mouseClick(panel.findChild<QPushButton *>("compareButton"), Qt::LeftButton);
    QTest::mouseClick(panel.findChild<QPushButton *>("stopButton"),
                      Qt::LeftButton); // disabled: nothing
    QCOMPARE(start.count(), 1);
    QCOMPARE(compare.count(), 1);
    QCOMPARE(stop.count(), 0);
    panel.setRunning(true);
    QTest::mouseClick(panel.findChild<QPushButton *>("stopButton"), Qt::LeftButton);
    QCOMPARE(stop.count(), 1);
}

void TestRunPanel::datasetShapes()
{
    RunPanel panel;
    QSignalSpy spy(&panel, &RunPanel::datasetChanged);
    mixlab::RunConfig c;
    c.dataset.name = "synthetic";
    panel.setConfig(c);
    QCOMPARE(spy.count(), 1);
    QCOMPARE(spy.last().at(0).value<mixlab::Shape>(), (mixlab::Shape{{32, 32, 3}}));
    QCOMPARE(spy.last().at(1).toInt(), 10);
    if (std::filesystem::exists(mixlab::k_debian_fashion_mnist_dir)) {
        c.dataset.name = "fashion-mnist";
        panel.setConfig(c);
        QCOMPARE(spy.count(), 2);
        QCOMPARE(panel.datasetShape(), (mixlab::Shape{{28, 28, 1}}));
        QCOMPARE(panel.datasetClasses(), 10);
        QCOMPARE(panel.config().dataset.name, std::string("fashion-mnist"));
    }
    // The first-start default is a dataset that exists here.
    c.dataset.name = "";
    panel.setConfig(c);
    QCOMPARE(panel.config().dataset.name, mixlab::default_dataset_name());
}

void TestRunPanel::datasetFolder()
{
    RunPanel panel;
    mixlab::RunConfig c;
    c.dataset.name = "synthetic";
    panel.setConfig(c);
    QSignalSpy spy(&panel, &RunPanel::datasetChanged);

    QTemporaryDir empty;
    QVERIFY(empty.isValid());
    QString error;
    QVERIFY(!panel.selectDatasetFolder(empty.path(), &error));
    QVERIFY2(error.contains(empty.path()) || error.contains("train-images"), qPrintable(error));
    QCOMPARE(spy.count(), 0);
    QCOMPARE(panel.config().dataset.name, std::string("synthetic"));

    QTemporaryDir dir;
    writeIdx(dir.path(), "train", 30, 12, 14);
    writeIdx(dir.path(), "t10k", 10, 12, 14);
    QVERIFY2(panel.selectDatasetFolder(dir.path(), &error), qPrintable(error));
    QCOMPARE(spy.count(), 1);
    QCOMPARE(panel.datasetShape(), (mixlab::Shape{{12, 14, 1}}));
    QCOMPARE(panel.datasetClasses(), 10);
    QCOMPARE(QString::fromStdString(panel.config().dataset.name), dir.path());
    auto *combo = panel.findChild<QComboBox *>("datasetCombo");
    QCOMPARE(combo->currentData().toString(), dir.path());

    // A config naming that folder selects it again; one that names a missing folder
    // falls back to a dataset that exists and says why.
    QSignalSpy message(&panel, &RunPanel::message);
    c.dataset.name = (dir.path() + "/missing").toStdString();
    panel.setConfig(c);
    QCOMPARE(message.count(), 1);
    QCOMPARE(panel.config().dataset.name, std::string("synthetic"));
}

// Random crop (with its padding) and horizontal flip map to DatasetOptions both ways;
// a crop switched off writes 0 and keeps the spin box's number for next time.
// The split-master checkbox: only mixed_bf16 can use it; another policy disables it and
// the config then holds fp32 masters, and coming back to mixed_bf16 restores the choice.
void TestRunPanel::splitMasterWeights()
{
    RunPanel panel;
    auto *split = panel.findChild<QCheckBox *>("splitMastersCheck");
    auto *policy = panel.findChild<QComboBox *>("policyCombo");
    QVERIFY(split && policy);
    mixlab::RunConfig c;
    c.dataset.name = "synthetic";
    c.policy = mixlab::Policy::MixedBF16;
    c.optimizer.master_weights = mixlab::MasterWeights::Bf16Split;
    panel.setConfig(c);
    QVERIFY(split->isEnabled());
    QVERIFY(split->isChecked());
    QVERIFY(split->toolTip().contains("bit for bit"));
    QCOMPARE(panel.config().optimizer.master_weights, mixlab::MasterWeights::Bf16Split);
    QCOMPARE(mixlab::run_config_to_json(panel.config()), mixlab::run_config_to_json(c));

    policy->setCurrentIndex(policy->findData(int(mixlab::Policy::MixedFP16)));
    QVERIFY(!split->isEnabled());
    QVERIFY(split->toolTip().contains("mixed_bf16 only"));
    QCOMPARE(panel.config().optimizer.master_weights, mixlab::MasterWeights::FP32);
    mixlab::validate_run_config(panel.config()); // no refusal: the panel never offers it

    // Checking mixed_bf16 under Compare precisions makes it usable for that run: the
    // panel's own config (Start, the experiment file) still holds fp32 masters.
    auto *compareBf16 = panel.findChild<QCheckBox *>("compare_mixed_bf16");
    QVERIFY(compareBf16 && compareBf16->isEnabled());
    if (compareBf16->isChecked()) compareBf16->click();
    QVERIFY(!split->isEnabled());
    compareBf16->click();
    QVERIFY(split->isEnabled());
    QVERIFY(panel.splitMastersChosen());
    QVERIFY(split->toolTip().contains("comparison's mixed_bf16 run only"));
    QCOMPARE(panel.config().optimizer.master_weights, mixlab::MasterWeights::FP32);
    mixlab::validate_run_config(panel.config());
    compareBf16->click();
    QVERIFY(!split->isEnabled());

    policy->setCurrentIndex(policy->findData(int(mixlab::Policy::MixedBF16)));
    QVERIFY(split->isEnabled());
    QCOMPARE(panel.config().optimizer.master_weights, mixlab::MasterWeights::Bf16Split);
}

void TestRunPanel::augmentation()
{
    RunPanel panel;
    auto *crop = panel.findChild<QCheckBox *>("cropCheck");
    auto *padding = panel.findChild<QSpinBox *>("cropPaddingSpin");
    auto *flip = panel.findChild<QCheckBox *>("flipCheck");
    QVERIFY(crop && padding && flip);

    mixlab::RunConfig c;
    c.dataset.name = "synthetic";
    panel.setConfig(c);
    QVERIFY(!crop->isChecked());
    QVERIFY(!padding->isEnabled());
    QVERIFY(!flip->isChecked());
    QCOMPARE(panel.config().dataset.crop_padding, 0);
    QCOMPARE(panel.config().dataset.horizontal_flip, false);

    c.dataset.crop_padding = 6;
    c.dataset.horizontal_flip = true;
    panel.setConfig(c);
    QVERIFY(crop->isChecked());
    QVERIFY(padding->isEnabled());
    QCOMPARE(padding->value(), 6);
    QVERIFY(flip->isChecked());
    QCOMPARE(panel.config().dataset.crop_padding, 6);
    QCOMPARE(panel.config().dataset.horizontal_flip, true);

    QSignalSpy changed(&panel, &RunPanel::configChanged);
    crop->setChecked(false);
    QCOMPARE(panel.config().dataset.crop_padding, 0);
    QVERIFY(!padding->isEnabled());
    crop->setChecked(true);
    padding->setValue(4);
    flip->setChecked(false);
    QCOMPARE(changed.count(), 4);
    const mixlab::RunConfig out = panel.config();
    QCOMPARE(out.dataset.crop_padding, 4);
    QCOMPARE(out.dataset.horizontal_flip, false);
    QCOMPARE(out.dataset.name, std::string("synthetic"));
}

// "Train for": N epochs, or N steps written to RunConfig::steps; each unit keeps its
// number while the other is shown.
void TestRunPanel::trainForEpochsOrSteps()
{
    RunPanel panel;
    auto *epochs = panel.findChild<QSpinBox *>("epochsSpin");
    auto *steps = panel.findChild<QSpinBox *>("stepsSpin");
    auto *unit = panel.findChild<QComboBox *>("lengthUnitCombo");
    QVERIFY(epochs && steps && unit);

    mixlab::RunConfig c;
    c.dataset.name = "synthetic";
    c.epochs = 3;
    panel.setConfig(c);
    QCOMPARE(unit->currentText(), QStringLiteral("epochs"));
    QVERIFY(epochs->isVisibleTo(&panel));
    QVERIFY(!steps->isVisibleTo(&panel));
    QCOMPARE(panel.config().steps, std::int64_t(0));

    QSignalSpy changed(&panel, &RunPanel::configChanged);
    unit->setCurrentIndex(unit->findText(QStringLiteral("steps")));
    QVERIFY(steps->isVisibleTo(&panel));
    QVERIFY(!epochs->isVisibleTo(&panel));
    steps->setValue(250);
    QCOMPARE(changed.count(), 2);
    mixlab::RunConfig out = panel.config();
    QCOMPARE(out.steps, std::int64_t(250));
    QCOMPARE(out.epochs, 3); // kept for when epochs are chosen again
    mixlab::validate_run_config(out);

    unit->setCurrentIndex(unit->findText(QStringLiteral("epochs")));
    QCOMPARE(panel.config().steps, std::int64_t(0));
    QCOMPARE(panel.config().epochs, 3);
    unit->setCurrentIndex(unit->findText(QStringLiteral("steps")));
    QCOMPARE(panel.config().steps, std::int64_t(250));

    // A run file with steps shows them.
    c.steps = 40;
    panel.setConfig(c);
    QCOMPARE(unit->currentText(), QStringLiteral("steps"));
    QCOMPARE(steps->value(), 40);
    QCOMPARE(panel.config().steps, std::int64_t(40));
}

// A panel shorter than its settings scrolls them; Start, Compare, Stop and the reason
// Start is blocked stay whole inside the panel.
void TestRunPanel::buttonsStayInView()
{
    RunPanel panel;
    panel.setShortcuts(QKeySequence(Qt::CTRL | Qt::Key_R),
                       QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_R),
                       QKeySequence(Qt::CTRL | Qt::Key_Period));
    panel.setStartBlocked(
        QStringLiteral("The model is not valid: layer 3 (dense): output has 7 units, "
                       "the dataset has 10 classes"));
    panel.resize(420, 260);
    panel.show();
    QVERIFY(QTest::qWaitForWindowExposed(&panel));
    auto *scroll = panel.findChild<QScrollArea *>("runSettingsScroll");
    QVERIFY(scroll);
    QVERIFY2(scroll->verticalScrollBar()->maximum() > 0, "the settings should need scrolling here");
    for (const char *name : {"startButton", "compareButton", "stopButton", "blockLabel"}) {
        auto *w = panel.findChild<QWidget *>(name);
        QVERIFY2(w && w->isVisible(), name);
        QVERIFY2(!scroll->isAncestorOf(w), name);
        const QRect inPanel(w->mapTo(&panel, QPoint(0, 0)), w->size());
        QVERIFY2(panel.rect().contains(inPanel), qPrintable(QStringLiteral("%1 at %2,%3 %4x%5")
                                                                .arg(name)
                                                                .arg(inPanel.x())
                                                                .arg(inPanel.y())
                                                                .arg(inPanel.width())
                                                                .arg(inPanel.height())));
    }
    auto *label = panel.findChild<QLabel *>("blockLabel");
    QVERIFY(label->height() >= label->heightForWidth(label->width()));
    // The buttons name their keys.
    QVERIFY2(panel.findChild<QPushButton *>("startButton")
                 ->toolTip()
                 .endsWith(QStringLiteral("(Ctrl+R)")),
             qPrintable(panel.findChild<QPushButton *>("startButton")->toolTip()));
    QVERIFY(panel.findChild<QPushButton *>("compareButton")
                ->toolTip()
                .endsWith(QStringLiteral("(Ctrl+Shift+R)")));
    QVERIFY(panel.findChild<QPushButton *>("stopButton")
                ->toolTip()
                .endsWith(QStringLiteral("(Ctrl+.)")));
}

void TestRunPanel::wheelNeedsFocus_data()
{
    QTest::addColumn<QString>("name");
    QTest::newRow("device") << "deviceCombo";
    QTest::newRow("batch") << "batchSpin";
    QTest::newRow("momentum") << "momentumSpin";
}

// Unfocused, a combo or spin box leaves the wheel to the scroll area (the settings
// scroll, the value stays); once clicked into, the wheel changes it.
void TestRunPanel::wheelNeedsFocus()
{
    QFETCH(QString, name);
    WheelGuard::install();
    RunPanel panel;
    panel.resize(420, 260);
    panel.show();
    QVERIFY(QTest::qWaitForWindowActive(&panel));
    auto *field = panel.findChild<QWidget *>(name);
    auto *scroll = panel.findChild<QScrollArea *>("runSettingsScroll");
    QVERIFY(field && scroll);
    QCOMPARE(field->focusPolicy(), Qt::StrongFocus);
    scroll->ensureWidgetVisible(field);
    scroll->verticalScrollBar()->setValue(0);
    scroll->ensureWidgetVisible(field);
    const int scrolledBefore = scroll->verticalScrollBar()->value();
    const QString before = shownValue(field);
    QVERIFY(!field->hasFocus());
    wheelDownOver(field);
    QCOMPARE(shownValue(field), before);
    QVERIFY2(scroll->verticalScrollBar()->value() > scrolledBefore,
             qPrintable(QStringLiteral("scrolled from %1 to %2")
                            .arg(scrolledBefore)
                            .arg(scroll->verticalScrollBar()->value())));

    scroll->ensureWidgetVisible(field);
    QTest::mouseClick(field, Qt::LeftButton, Qt::NoModifier, QPoint(4, field->height() / 2));
    if (auto *combo = qobject_cast<QComboBox *>(field))
        combo->hidePopup(); // a click opens the list; the wheel goes to the closed box
    QTRY_VERIFY(field->hasFocus());
    const QString focused = shownValue(field);
    wheelDownOver(field);
    QVERIFY2(shownValue(field) != focused, qPrintable(shownValue(field)));
}

QTEST_MAIN(TestRunPanel)
#include "tst_runpanel.moc"
