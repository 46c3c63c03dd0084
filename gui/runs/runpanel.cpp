// RunPanel: form widgets <-> RunConfig, policy availability per device, and the buttons'
// enabled states (running, blocked by an invalid model, too few policies to compare).
#include "runs/runpanel.h"

#include "common/deviceprobe.h"
#include "common/enginetext.h"
#include "common/filedialogs.h"
#include "common/shortcuttext.h"
#include "common/usermessages.h"
#include "runs/lmsettingsbox.h"

#include "mixlab/dataset.h"
#include "mixlab/error.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFileInfo>
#include <QFormLayout>
#include <QGridLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QPushButton>
#include <QRegularExpressionValidator>
#include <QScrollArea>
#include <QSpinBox>
#include <QStandardItemModel>
#include <QVBoxLayout>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>

namespace {

constexpr const char *k_keyFashion = "fashion-mnist";
constexpr const char *k_keySynthetic = "synthetic";
constexpr const char *k_keySyntheticText = "synthetic-text";
// The "Folder..." entry carries no key; picking it opens a folder dialog.
const QString k_keyChooseFolder;
// What the steps field shows before a run file or the user sets it.
constexpr int k_defaultSteps = 1000;

// Shortest text that reads back to the same float, so a config survives the round trip.
QString floatText(float f)
{
    char buf[32];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, f);
    (void)ec;
    return QString::fromLatin1(buf, int(end - buf));
}

bool fashionInstalled()
{
    std::error_code ec;
    return std::filesystem::exists(mixlab::k_debian_fashion_mnist_dir, ec);
}

void setItemEnabled(QComboBox *combo, int index, bool enabled, const QString &tip)
{
    auto *model = qobject_cast<QStandardItemModel *>(combo->model());
    if (!model) return;
    if (QStandardItem *item = model->item(index)) {
        item->setEnabled(enabled);
        item->setToolTip(tip);
    }
}

bool itemEnabled(const QComboBox *combo, int index)
{
    auto *model = qobject_cast<QStandardItemModel *>(combo->model());
    QStandardItem *item = model ? model->item(index) : nullptr;
    return item && item->isEnabled();
}

} // namespace

RunPanel::RunPanel(QWidget *parent) : QWidget(parent)
{
    auto *form = new QFormLayout;
    form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);

    m_dataset = new QComboBox(this);
    m_dataset->setObjectName("datasetCombo");
    if (fashionInstalled())
        m_dataset->addItem(tr("Fashion-MNIST"), QString::fromLatin1(k_keyFashion));
    m_dataset->addItem(tr("Synthetic (32x32x3, 10 classes)"), QString::fromLatin1(k_keySynthetic));
    m_dataset->addItem(tr("Synthetic text (words, for language models)"),
                       QString::fromLatin1(k_keySyntheticText));
    m_dataset->addItem(tr("Folder..."), k_keyChooseFolder);
    m_dataset->setToolTip(tr("Fashion-MNIST when Debian's dataset-fashion-mnist is installed, "
                             "the built-in synthetic images or text, a MNIST/CIFAR folder, or a "
                             "word corpus folder (train.txt, valid.txt, test.txt: WikiText-2, "
                             "Penn Treebank) for language models"));
    form->addRow(tr("&Dataset"), m_dataset);

    m_policy = new QComboBox(this);
    m_policy->setObjectName("policyCombo");
    for (mixlab::Policy p : mixlab::k_all_policies) m_policy->addItem(policyText(p), int(p));
    form->addRow(tr("&Precision"), m_policy);

    m_batch = new QSpinBox(this);
    m_batch->setObjectName("batchSpin");
    m_batch->setRange(1, 1048576);
    form->addRow(tr("&Batch size"), m_batch);

    // "Train for N epochs" or "N steps" (RunConfig::steps > 0), one number shown at a time;
    // the other keeps its value for when the unit is switched back.
    m_epochs = new QSpinBox(this);
    m_epochs->setObjectName("epochsSpin");
    m_epochs->setRange(1, 100000);
    m_steps = new QSpinBox(this);
    m_steps->setObjectName("stepsSpin");
    m_steps->setRange(1, 1000000000);
    m_steps->setValue(k_defaultSteps);
    m_lengthUnit = new QComboBox(this);
    m_lengthUnit->setObjectName("lengthUnitCombo");
    m_lengthUnit->addItem(tr("epochs"), int(LengthUnit::Epochs));
    m_lengthUnit->addItem(tr("steps"), int(LengthUnit::Steps));
    m_lengthUnit->setToolTip(tr("Epochs: passes over the training set, each ending with a test. "
                                "Steps: stop after this many training steps (batches)."));
    auto *lengthRow = new QHBoxLayout;
    lengthRow->addWidget(m_epochs, 1);
    lengthRow->addWidget(m_steps, 1);
    lengthRow->addWidget(m_lengthUnit);
    form->addRow(tr("Train &for"), lengthRow);
    static_cast<QLabel *>(form->labelForField(lengthRow))->setBuddy(m_epochs);

    m_optimizer = new QComboBox(this);
    m_optimizer->setObjectName("optimizerCombo");
    for (auto t :
         {mixlab::OptimizerType::SGD, mixlab::OptimizerType::Adam, mixlab::OptimizerType::AdamW})
        m_optimizer->addItem(fromView(mixlab::optimizer_name(t)), int(t));
    form->addRow(tr("&Optimizer"), m_optimizer);

    m_lr = new QLineEdit(this);
    m_lr->setObjectName("lrEdit");
    m_lr->setValidator(new QRegularExpressionValidator(
        QRegularExpression(QStringLiteral(R"(\d*\.?\d*([eE][-+]?\d{0,3})?)")), m_lr));
    form->addRow(tr("&Learning rate"), m_lr);

    m_momentum = new QDoubleSpinBox(this);
    m_momentum->setObjectName("momentumSpin");
    m_momentum->setRange(0.0, 0.999);
    m_momentum->setDecimals(3);
    m_momentum->setSingleStep(0.05);
    form->addRow(tr("&Momentum"), m_momentum);

    m_clip = new QLineEdit(this);
    m_clip->setObjectName("clipEdit");
    m_clip->setValidator(new QRegularExpressionValidator(
        QRegularExpression(QStringLiteral(R"(\d*\.?\d*([eE][-+]?\d{0,3})?)")), m_clip));
    m_clip->setPlaceholderText(tr("off"));
    m_clip->setToolTip(tr("Gradient clipping: when the gradients' global L2 norm exceeds this, "
                          "they are scaled down to it (after unscaling, before the update). "
                          "Empty or 0: off. Any model; the language-model example uses 0.25."));
    form->addRow(tr("Gradient &clip"), m_clip);

    m_splitMasters = new QCheckBox(tr("Split bf16 master weights"), this);
    m_splitMasters->setObjectName("splitMastersCheck");
    form->addRow(tr("Master weights"), m_splitMasters);

    m_seed = new QLineEdit(this);
    m_seed->setObjectName("seedEdit");
    m_seed->setValidator(
        new QRegularExpressionValidator(QRegularExpression(QStringLiteral(R"(\d{1,20})")), m_seed));
    form->addRow(tr("&Seed"), m_seed);

    m_lossScale = new QComboBox(this);
    m_lossScale->setObjectName("lossScaleCombo");
    for (auto m : {mixlab::LossScaleMode::Default, mixlab::LossScaleMode::Dynamic,
                   mixlab::LossScaleMode::Static, mixlab::LossScaleMode::None})
        m_lossScale->addItem(fromView(mixlab::loss_scale_mode_name(m)), int(m));
    m_lossScale->setToolTip(tr("default: dynamic for mixed_fp16, none otherwise"));
    form->addRow(tr("Loss &scaling"), m_lossScale);

    m_device = new QComboBox(this);
    m_device->setObjectName("deviceCombo");
    for (auto d :
         {mixlab::DeviceChoice::Auto, mixlab::DeviceChoice::CPU, mixlab::DeviceChoice::CUDA})
        m_device->addItem(fromView(mixlab::device_choice_name(d)), int(d));
    form->addRow(tr("De&vice"), m_device);

    // Image augmentation, done on the device during training only.
    m_crop = new QCheckBox(tr("random crop, padding"), this);
    m_crop->setObjectName("cropCheck");
    m_crop->setToolTip(tr("Pad each training image with zeros and cut a random window of the "
                          "original size (CIFAR ResNets: 4 pixels). Evaluation never augments."));
    m_cropPadding = new QSpinBox(this);
    m_cropPadding->setObjectName("cropPaddingSpin");
    m_cropPadding->setRange(1, 64); // the run config's limit
    m_cropPadding->setSuffix(tr(" px"));
    m_cropPadding->setToolTip(m_crop->toolTip());
    m_flip = new QCheckBox(tr("horizontal flip"), this);
    m_flip->setObjectName("flipCheck");
    m_flip->setToolTip(tr("Mirror half of the training images left to right, at random"));
    auto *augmentRow = new QHBoxLayout;
    augmentRow->addWidget(m_crop);
    augmentRow->addWidget(m_cropPadding);
    augmentRow->addWidget(m_flip);
    augmentRow->addStretch(1);
    form->addRow(tr("&Augment"), augmentRow);
    static_cast<QLabel *>(form->labelForField(augmentRow))->setBuddy(m_crop);

    m_stopOnNan = new QCheckBox(tr("Stop at the first NaN/Inf loss"), this);
    m_stopOnNan->setObjectName("stopOnNanCheck");
    m_stopOnNan->setToolTip(tr("Checked: a non-finite training loss ends the run with an error "
                               "naming the step. Unchecked: a warning is logged and the run "
                               "goes on (loss scaling may recover from it)."));
    form->addRow(tr("&Faults"), m_stopOnNan);

    m_numericsEvery = new QSpinBox(this);
    m_numericsEvery->setObjectName("numericsEverySpin");
    m_numericsEvery->setRange(0, 1000000);
    m_numericsEvery->setSpecialValueText(tr("off"));
    m_numericsEvery->setPrefix(tr("every "));
    m_numericsEvery->setSuffix(tr(" steps"));
    m_numericsEvery->setToolTip(
        tr("Every this many steps each layer's weights, activations, gradients and updates are "
           "counted by binade (View > Numerics shows them against fp16, bf16 and fp8). The "
           "sampled steps cost a little more; 0: off."));
    form->addRow(tr("&Numerics"), m_numericsEvery);

    m_lmNote = new QLabel(this);
    m_lmNote->setObjectName("lmDefaultsNote");
    m_lmNote->setWordWrap(true);
    m_lmNote->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_lmNote->setStyleSheet(QStringLiteral("color: #1b5e20;"));
    m_lmNote->setToolTip(
        tr("When the model becomes a language model, the run settings switch once to those of "
           "PyTorch's word-language-model example (batch 20, bptt 35, SGD at lr 20 without "
           "momentum, gradient clipping at 0.25, lr divided by 4 on a plateau) and to "
           "synthetic-text when images were chosen. Settings you changed by hand since they "
           "were loaded keep your values. Back to an image model, the replaced values return."));
    m_lmNote->hide();

    m_lmBox = new LmSettingsBox(this);
    m_lmBox->hide();

    m_deviceLabel = new QLabel(tr("probing the device..."), this);
    m_deviceLabel->setObjectName("deviceLabel");
    m_deviceLabel->setWordWrap(true);
    form->addRow(QString(), m_deviceLabel);

    auto *compareBox = new QGroupBox(tr("Compare precisions"), this);
    auto *grid = new QGridLayout(compareBox);
    int n = 0;
    for (mixlab::Policy p : mixlab::k_all_policies) {
        auto *box = new QCheckBox(policyText(p), compareBox);
        box->setObjectName(QStringLiteral("compare_") + policyText(p));
        grid->addWidget(box, n / 3, n % 3);
        m_compare[p] = box;
        ++n;
        connect(box, &QCheckBox::clicked, this, [this] {
            m_compareTouched = true;
            updateButtons();
            updateMasterWeights();
            emit configChanged();
        });
    }

    m_start = new QPushButton(tr("Start"), this);
    m_start->setObjectName("startButton");
    m_compareButton = new QPushButton(tr("Compare precisions"), this);
    m_compareButton->setObjectName("compareButton");
    m_stop = new QPushButton(tr("Stop"), this);
    m_stop->setObjectName("stopButton");
    auto *buttons = new QHBoxLayout;
    buttons->addWidget(m_start);
    buttons->addWidget(m_compareButton);
    buttons->addWidget(m_stop);

    // Run > Start from weights: shown beside the buttons it changes, in view however the
    // settings scroll, with the way back.
    m_startWeightsRow = new QWidget(this);
    m_startWeightsRow->setObjectName("startWeightsRow");
    m_startWeightsLabel = new QLabel(m_startWeightsRow);
    m_startWeightsLabel->setObjectName("startWeightsLabel");
    m_startWeightsLabel->setWordWrap(true);
    m_startWeightsLabel->setTextInteractionFlags(Qt::TextSelectableByMouse);
    auto *clearWeights = new QPushButton(tr("Clear"), m_startWeightsRow);
    clearWeights->setObjectName("clearStartWeightsButton");
    clearWeights->setToolTip(tr("Start the next run from fresh random weights"));
    connect(clearWeights, &QPushButton::clicked, this, [this] { setStartWeights({}); });
    auto *weightsLayout = new QHBoxLayout(m_startWeightsRow);
    weightsLayout->setContentsMargins(0, 0, 0, 0);
    weightsLayout->addWidget(m_startWeightsLabel, 1);
    weightsLayout->addWidget(clearWeights);
    m_startWeightsRow->hide();

    m_blockLabel = new QLabel(this);
    m_blockLabel->setObjectName("blockLabel");
    m_blockLabel->setWordWrap(true);
    m_blockLabel->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_blockLabel->setStyleSheet(QStringLiteral("color: #c62828;"));
    m_blockLabel->hide();

    // The settings scroll on a small screen; the buttons and the reason Start is blocked
    // stay below them, always in view.
    auto *settings = new QWidget(this);
    auto *settingsLayout = new QVBoxLayout(settings);
    settingsLayout->addWidget(m_lmNote);
    settingsLayout->addLayout(form);
    settingsLayout->addWidget(m_lmBox);
    settingsLayout->addWidget(compareBox);
    settingsLayout->addStretch(1);
    m_scroll = new QScrollArea(this);
    m_scroll->setObjectName("runSettingsScroll");
    m_scroll->setWidget(settings);
    m_scroll->setWidgetResizable(true);
    m_scroll->setFrameShape(QFrame::NoFrame);
    m_scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);

    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_scroll, 1);
    auto *actions = new QVBoxLayout;
    actions->setContentsMargins(9, 0, 9, 6);
    actions->addWidget(m_startWeightsRow);
    actions->addLayout(buttons);
    actions->addWidget(m_blockLabel);
    layout->addLayout(actions);

    setConfig(mixlab::RunConfig{});
    m_compareTouched = false;
    updateDeviceDependent();

    connect(m_dataset, &QComboBox::activated, this, &RunPanel::onDatasetActivated);
    connect(m_policy, &QComboBox::currentIndexChanged, this, &RunPanel::updateMasterWeights);
    connect(m_policy, &QComboBox::currentIndexChanged, this, &RunPanel::configChanged);
    connect(m_splitMasters, &QCheckBox::toggled, this, &RunPanel::configChanged);
    // What the user changes by hand is theirs: the language-model defaults leave it.
    connect(m_batch, &QSpinBox::valueChanged, this, [this] { markEdited(RunField::Batch); });
    connect(m_optimizer, &QComboBox::currentIndexChanged, this,
            [this] { markEdited(RunField::Optimizer); });
    connect(m_lr, &QLineEdit::textEdited, this, [this] { markEdited(RunField::LearningRate); });
    connect(m_momentum, &QDoubleSpinBox::valueChanged, this,
            [this] { markEdited(RunField::Momentum); });
    connect(m_clip, &QLineEdit::textEdited, this, [this] { markEdited(RunField::Clip); });
    connect(m_clip, &QLineEdit::textEdited, this, &RunPanel::configChanged);
    connect(m_lmBox, &LmSettingsBox::edited, this, [this](RunField f) {
        markEdited(f);
        emit configChanged();
    });
    connect(m_lmBox, &LmSettingsBox::samplingEdited, this, &RunPanel::configChanged);
    connect(m_batch, &QSpinBox::valueChanged, this, &RunPanel::configChanged);
    connect(m_epochs, &QSpinBox::valueChanged, this, &RunPanel::configChanged);
    connect(m_steps, &QSpinBox::valueChanged, this, &RunPanel::configChanged);
    connect(m_lengthUnit, &QComboBox::currentIndexChanged, this, [this] {
        showLengthUnit();
        emit configChanged();
    });
    connect(m_optimizer, &QComboBox::currentIndexChanged, this, [this] {
        updateOptimizerFields();
        emit configChanged();
    });
    connect(m_lr, &QLineEdit::textEdited, this, &RunPanel::configChanged);
    connect(m_momentum, &QDoubleSpinBox::valueChanged, this, &RunPanel::configChanged);
    connect(m_seed, &QLineEdit::textEdited, this, &RunPanel::configChanged);
    connect(m_lossScale, &QComboBox::currentIndexChanged, this, &RunPanel::configChanged);
    connect(m_device, &QComboBox::currentIndexChanged, this, [this] {
        updateDeviceDependent();
        emit configChanged();
    });
    connect(m_crop, &QCheckBox::toggled, this, [this](bool on) {
        m_cropPadding->setEnabled(on);
        emit configChanged();
    });
    connect(m_cropPadding, &QSpinBox::valueChanged, this, &RunPanel::configChanged);
    connect(m_flip, &QCheckBox::toggled, this, &RunPanel::configChanged);
    connect(m_stopOnNan, &QCheckBox::toggled, this, &RunPanel::configChanged);
    connect(m_numericsEvery, &QSpinBox::valueChanged, this, &RunPanel::configChanged);
    connect(m_start, &QPushButton::clicked, this, &RunPanel::startRequested);
    connect(m_compareButton, &QPushButton::clicked, this, &RunPanel::compareRequested);
    connect(m_stop, &QPushButton::clicked, this, &RunPanel::stopRequested);
}

mixlab::RunConfig RunPanel::config() const
{
    mixlab::RunConfig c = m_base;
    c.dataset.name = m_dataset->currentData().toString().toStdString();
    c.policy = mixlab::Policy(m_policy->currentData().toInt());
    c.batch_size = m_batch->value();
    c.epochs = m_epochs->value();
    c.steps = lengthUnit() == LengthUnit::Steps ? m_steps->value() : 0;
    c.optimizer.type = mixlab::OptimizerType(m_optimizer->currentData().toInt());
    bool ok = false;
    const float lr = m_lr->text().toFloat(&ok);
    if (ok && std::isfinite(lr)) c.optimizer.lr = lr;
    c.optimizer.momentum = float(m_momentum->value());
    // Only where it applies to the panel's own policy: this config is also the single
    // run's and the experiment file's. A comparison adds it to its mixed_bf16 run through
    // splitMastersChosen() and mixlab::with_policy.
    c.optimizer.master_weights =
        splitMastersChosen() &&
                mixlab::master_weights_apply(mixlab::MasterWeights::Bf16Split, c.policy)
            ? mixlab::MasterWeights::Bf16Split
            : mixlab::MasterWeights::FP32;
    const QString clip = m_clip->text().trimmed();
    const float clipNorm = clip.toFloat(&ok);
    if (clip.isEmpty())
        c.optimizer.clip_norm = 0;
    else if (ok && std::isfinite(clipNorm))
        c.optimizer.clip_norm = clipNorm;
    m_lmBox->readInto(c);
    const qulonglong seed = m_seed->text().toULongLong(&ok);
    if (ok) c.seed = seed;
    c.loss_scale.mode = mixlab::LossScaleMode(m_lossScale->currentData().toInt());
    c.device = mixlab::DeviceChoice(m_device->currentData().toInt());
    c.dataset.crop_padding = m_crop->isChecked() ? m_cropPadding->value() : 0;
    c.dataset.horizontal_flip = m_flip->isChecked();
    c.stop_on_non_finite_loss = m_stopOnNan->isChecked();
    c.numerics_every = m_numericsEvery->value();
    return c;
}

void RunPanel::setConfig(const mixlab::RunConfig &c)
{
    m_base = c;
    {
        const QSignalBlocker b1(m_policy), b2(m_batch), b3(m_epochs), b4(m_optimizer),
            b5(m_momentum), b6(m_lossScale), b7(m_device), b12(m_steps), b13(m_lengthUnit);
        m_policy->setCurrentIndex(m_policy->findData(int(c.policy)));
        m_batch->setValue(c.batch_size);
        m_epochs->setValue(c.epochs);
        if (c.steps > 0)
            m_steps->setValue(int(std::min<std::int64_t>(c.steps, m_steps->maximum())));
        m_lengthUnit->setCurrentIndex(
            m_lengthUnit->findData(int(c.steps > 0 ? LengthUnit::Steps : LengthUnit::Epochs)));
        showLengthUnit();
        m_optimizer->setCurrentIndex(m_optimizer->findData(int(c.optimizer.type)));
        m_lr->setText(floatText(c.optimizer.lr));
        m_momentum->setValue(c.optimizer.momentum);
        m_clip->setText(c.optimizer.clip_norm > 0 ? floatText(c.optimizer.clip_norm) : QString());
        const QSignalBlocker b14(m_splitMasters);
        m_splitMasters->setChecked(c.optimizer.master_weights == mixlab::MasterWeights::Bf16Split);
        updateMasterWeights();
        m_lmBox->showConfig(c);
        m_seed->setText(QString::number(qulonglong(c.seed)));
        m_lossScale->setCurrentIndex(m_lossScale->findData(int(c.loss_scale.mode)));
        m_device->setCurrentIndex(m_device->findData(int(c.device)));
        const QSignalBlocker b8(m_crop), b9(m_cropPadding), b10(m_flip);
        // Without a crop the spin box keeps the usual 4 ready for when it is switched on.
        m_crop->setChecked(c.dataset.crop_padding > 0);
        m_cropPadding->setValue(c.dataset.crop_padding > 0 ? c.dataset.crop_padding : 4);
        m_cropPadding->setEnabled(c.dataset.crop_padding > 0);
        m_flip->setChecked(c.dataset.horizontal_flip);
        const QSignalBlocker b11(m_stopOnNan);
        m_stopOnNan->setChecked(c.stop_on_non_finite_loss);
        const QSignalBlocker b15(m_numericsEvery);
        m_numericsEvery->setValue(std::max(0, c.numerics_every));
    }
    updateOptimizerFields();
    selectDataset(c.dataset.name);
    updateDeviceDependent();
    // Loaded settings are the new starting point: nothing in them was edited by hand, and
    // what the language-model defaults replaced before is no longer there to restore.
    m_edited.clear();
    m_beforeLm.reset();
    m_lmApplied.clear();
    // A note about the defaults switching fields would now name values these settings
    // replaced (the app's --batch after a language-model preset).
    showLmDefaultsNote(QString());
    emit configChanged();
}

void RunPanel::markEdited(RunField field) { m_edited.insert(field); }

void RunPanel::setLanguageModel(bool languageModel)
{
    if (languageModel == m_languageModel) return;
    m_languageModel = languageModel;
    m_lmBox->setVisible(languageModel);
    const mixlab::RunConfig now = config();
    if (languageModel) {
        const LmDefaultsChange change = languageModelDefaults(now, m_edited, isTextDataset());
        m_beforeLm = now;
        m_lmApplied = change.applied;
        if (!change.applied.empty()) {
            // Through setConfig, keeping what it would clear: the user's edits, the undo.
            const std::set<RunField> edited = m_edited;
            const auto before = m_beforeLm;
            const auto applied = m_lmApplied;
            setConfig(change.config);
            m_edited = edited;
            m_beforeLm = before;
            m_lmApplied = applied;
        }
        QString note =
            change.applied.empty()
                ? tr("Language model: the run settings already match the word-language-model "
                     "example's.")
                : tr("Language model: switched to the word-language-model example's settings: "
                     "%1.")
                      .arg(runFieldsText(change.applied, change.config));
        if (!change.kept.empty())
            note += QLatin1Char(' ') +
                    tr("Kept as you set them: %1.").arg(runFieldsText(change.kept, now));
        showLmDefaultsNote(note);
    } else {
        if (m_beforeLm && !m_lmApplied.empty()) {
            const mixlab::RunConfig back =
                restoreBeforeLanguageModel(now, *m_beforeLm, m_lmApplied, m_edited);
            const std::set<RunField> edited = m_edited;
            setConfig(back);
            m_edited = edited;
            showLmDefaultsNote(tr("Image model: the settings the language-model defaults had "
                                  "replaced are back (%1).")
                                   .arg(runFieldsText(m_lmApplied, back)));
        } else {
            showLmDefaultsNote(QString());
        }
        m_beforeLm.reset();
        m_lmApplied.clear();
    }
    emit configChanged();
}

QString RunPanel::lmDefaultsNote() const { return m_lmNote->text(); }

void RunPanel::showLmDefaultsNote(const QString &text)
{
    m_lmNote->setText(text);
    m_lmNote->setVisible(!text.isEmpty());
}

TextSampling RunPanel::textSampling() const { return m_lmBox->sampling(); }

void RunPanel::setTextSampling(const TextSampling &s) { m_lmBox->setSampling(s); }

std::vector<mixlab::Policy> RunPanel::comparePolicies() const
{
    std::vector<mixlab::Policy> out;
    for (mixlab::Policy p : mixlab::k_all_policies) {
        const QCheckBox *box = m_compare.at(p);
        if (box->isEnabled() && box->isChecked()) out.push_back(p);
    }
    return out;
}

void RunPanel::setComparePolicies(const std::vector<mixlab::Policy> &policies)
{
    for (auto &[p, box] : m_compare)
        box->setChecked(std::find(policies.begin(), policies.end(), p) != policies.end() &&
                        box->isEnabled());
    m_compareTouched = true;
    updateButtons();
    updateMasterWeights();
    emit configChanged();
}

QString RunPanel::compareBlockReason() const
{
    if (!m_blockReason.isEmpty()) return m_blockReason;
    if (comparePolicies().size() >= 2) return {};
    // A policy this device cannot run has its box disabled and unchecked (the device can
    // arrive after --policies checked it): name those, their tooltips say why.
    QStringList unavailable;
    for (mixlab::Policy p : mixlab::k_all_policies)
        if (!policyBlockReason(p).isEmpty()) unavailable << policyText(p);
    if (unavailable.isEmpty()) return tr("Check at least two policies to compare");
    return tr("Check at least two policies to compare (%1 cannot run on this device)")
        .arg(unavailable.join(QStringLiteral(", ")));
}

bool RunPanel::splitMastersChosen() const
{
    return m_splitMasters->isChecked() && m_splitMasters->isEnabled();
}

void RunPanel::setDeviceInfo(const mixlab::DeviceInfo &info)
{
    m_info = info;
    m_infoKnown = true;
    updateDeviceDependent();
}

void RunPanel::setRunning(bool running)
{
    m_running = running;
    updateButtons();
}

void RunPanel::setStartWeights(const QString &path)
{
    m_startWeights = path;
    m_startWeightsRow->setVisible(!path.isEmpty());
    m_startWeightsLabel->setText(
        tr("Next run starts from <b>%1</b>").arg(QFileInfo(path).fileName().toHtmlEscaped()));
    m_startWeightsLabel->setToolTip(
        tr("%1\nLoaded into every run of the next Start or Compare (the file must hold this "
           "model's tensors), then cleared.")
            .arg(path));
    emit startWeightsChanged(path);
}

void RunPanel::setStartBlocked(const QString &reason)
{
    m_blockReason = reason;
    m_blockLabel->setText(reason);
    m_blockLabel->setVisible(!reason.isEmpty());
    updateButtons();
}

QString RunPanel::policyBlockReason(mixlab::Policy p) const
{
    try {
        mixlab::check_policy_supported(effectiveDevice(), p);
    } catch (const mixlab::Error &e) {
        return QString::fromStdString(e.what());
    }
    return {};
}

QString RunPanel::policyNote(mixlab::Policy p) const
{
    if (p != mixlab::Policy::MixedFP8) return {};
    if (effectiveDevice().backend == mixlab::BackendKind::Cpu)
        return tr("Emulated on the CPU: dense layers' GEMM operands rounded to E4M3 / E5M2 with "
                  "per-tensor delayed scaling, as the GPU does, so accuracy is what fp8 gives; "
                  "no fp8 speed. Layers whose inputs or units are not multiples of 8, and "
                  "layers set to bfloat16 or float32, stay out of fp8.");
    return tr("Dense layers' GEMMs in fp8 (E4M3 forward, E5M2 gradients) with per-tensor delayed "
              "scaling; everything else as mixed_bf16. Layers whose inputs or units are not "
              "multiples of 8, and layers set to bfloat16 or float32 (often the first and "
              "last), stay out of fp8.");
}

mixlab::DeviceInfo RunPanel::effectiveDevice() const
{
    if (mixlab::DeviceChoice(m_device->currentData().toInt()) == mixlab::DeviceChoice::CPU) {
        mixlab::DeviceInfo cpu;
        cpu.backend = mixlab::BackendKind::Cpu;
        cpu.name = "CPU";
        return cpu;
    }
    return m_info;
}

void RunPanel::updateDeviceDependent()
{
    const bool cuda = m_info.backend == mixlab::BackendKind::Cuda;
    const int cudaIndex = m_device->findData(int(mixlab::DeviceChoice::CUDA));
    setItemEnabled(m_device, cudaIndex, cuda || !m_infoKnown,
                   cuda || !m_infoKnown ? QString()
                                        : tr("No CUDA device was found on this machine"));
    if (m_infoKnown) m_deviceLabel->setText(tr("Detected: %1").arg(DeviceProbe::describe(m_info)));

    bool policyMoved = false;
    for (int i = 0; i < m_policy->count(); ++i) {
        const auto p = mixlab::Policy(m_policy->itemData(i).toInt());
        const QString why = policyBlockReason(p);
        setItemEnabled(m_policy, i, why.isEmpty(), why.isEmpty() ? policyNote(p) : why);
    }
    if (!itemEnabled(m_policy, m_policy->currentIndex())) {
        m_policy->setCurrentIndex(m_policy->findData(int(mixlab::Policy::FP32)));
        policyMoved = true;
    }

    const mixlab::DeviceInfo dev = effectiveDevice();
    for (auto &[p, box] : m_compare) {
        const QString why = policyBlockReason(p);
        box->setEnabled(why.isEmpty());
        QString tip = tr("Train %1 in lockstep with the other checked policies").arg(policyText(p));
        if (!policyNote(p).isEmpty()) tip += QStringLiteral("\n") + policyNote(p);
        box->setToolTip(why.isEmpty() ? tip : why);
        if (!why.isEmpty()) box->setChecked(false);
    }
    if (!m_compareTouched) {
        // fp32 against mixed_fp16 everywhere; bf16 too where the GPU has bf16 tensor cores.
        for (auto &[p, box] : m_compare) {
            bool on = p == mixlab::Policy::FP32 || p == mixlab::Policy::MixedFP16;
            if (p == mixlab::Policy::MixedBF16)
                on = dev.backend == mixlab::BackendKind::Cuda && dev.bf16;
            box->setChecked(on && box->isEnabled());
        }
    }
    updateButtons();
    updateMasterWeights();
    if (policyMoved) emit configChanged();
}

void RunPanel::setShortcuts(const QKeySequence &start, const QKeySequence &compare,
                            const QKeySequence &stop)
{
    m_startKey = start;
    m_compareKey = compare;
    m_stopKey = stop;
    updateButtons();
}

void RunPanel::updateButtons()
{
    const bool blocked = !m_blockReason.isEmpty();
    m_start->setEnabled(!m_running && !blocked);
    m_start->setToolTip(withShortcut(tr("Train one run with these settings"), m_startKey));
    const QString compareWhy = compareBlockReason();
    m_compareButton->setEnabled(!m_running && compareWhy.isEmpty());
    m_compareButton->setToolTip(
        withShortcut(compareWhy.isEmpty() ? tr("Train the checked policies in lockstep: same "
                                               "seed, weights and data order")
                                          : compareWhy,
                     m_compareKey));
    m_stop->setEnabled(m_running);
    m_stop->setToolTip(withShortcut(tr("Stop after the step in flight"), m_stopKey));
}

RunPanel::LengthUnit RunPanel::lengthUnit() const
{
    return LengthUnit(m_lengthUnit->currentData().toInt());
}

void RunPanel::showLengthUnit()
{
    const bool steps = lengthUnit() == LengthUnit::Steps;
    m_epochs->setVisible(!steps);
    m_steps->setVisible(steps);
}

void RunPanel::updateOptimizerFields()
{
    const bool sgd =
        mixlab::OptimizerType(m_optimizer->currentData().toInt()) == mixlab::OptimizerType::SGD;
    m_momentum->setEnabled(sgd);
    m_momentum->setToolTip(sgd ? QString() : tr("Momentum applies to sgd only"));
}

void RunPanel::updateMasterWeights()
{
    const auto policy = mixlab::Policy(m_policy->currentData().toInt());
    const bool own = mixlab::master_weights_apply(mixlab::MasterWeights::Bf16Split, policy);
    // A comparison with mixed_bf16 checked uses it for that run whatever the panel's own
    // policy is, so the box stays usable then.
    const QCheckBox *bf16 = m_compare.at(mixlab::Policy::MixedBF16);
    const bool compared = bf16->isEnabled() && bf16->isChecked();
    m_splitMasters->setEnabled(own || compared);
    const QString what =
        tr("Hold each fp32 master as the bf16 weight the GEMMs read plus a 16-bit "
           "remainder: together exactly the fp32 value, so training is the fp32-master "
           "update bit for bit, in 4 bytes a weight instead of 6 and with no copy to "
           "write each step.");
    if (own)
        m_splitMasters->setToolTip(what + tr(" In a comparison it applies to the mixed_bf16 run."));
    else if (compared)
        m_splitMasters->setToolTip(
            what + tr(" Applies to the comparison's mixed_bf16 run only: Start with %1 keeps "
                      "fp32 masters.")
                       .arg(policyText(policy)));
    else
        m_splitMasters->setToolTip(
            tr("Split masters apply to mixed_bf16 only: they split fp32 masters behind "
               "bfloat16 weights, which %1 does not have. Choose mixed_bf16 as the policy, "
               "or check it under Compare precisions.")
                .arg(policyText(policy)));
}

int RunPanel::addFolderItem(const QString &folder)
{
    int index = m_dataset->findData(folder);
    if (index < 0) {
        index = m_dataset->count() - 1; // just above "Folder..."
        m_dataset->insertItem(index, folder, folder);
        m_dataset->setItemData(index, folder, Qt::ToolTipRole);
    }
    return index;
}

bool RunPanel::selectDatasetFolder(const QString &folder, QString *error)
{
    auto known = m_folderShapes.find(folder);
    if (known == m_folderShapes.end()) {
        try {
            mixlab::DatasetOptions options;
            options.name = folder.toStdString();
            options.cifar100_coarse = m_base.dataset.cifar100_coarse;
            const mixlab::Dataset data = mixlab::load_dataset(options, m_base.seed);
            mixlab::Shape shape;
            if (data.is_text())
                shape = mixlab::Shape::tokens();
            else
                shape.dims = {data.height, data.width, data.channels};
            known = m_folderShapes.emplace(folder, std::make_pair(shape, data.classes)).first;
        } catch (const std::exception &e) {
            if (error) *error = QString::fromStdString(e.what());
            m_dataset->setCurrentIndex(m_lastDatasetIndex);
            return false;
        }
    }
    const int index = addFolderItem(folder);
    m_dataset->setCurrentIndex(index);
    m_lastDatasetIndex = index;
    m_shape = known->second.first;
    m_classes = known->second.second;
    emit datasetChanged(m_shape, m_classes);
    emit configChanged();
    return true;
}

void RunPanel::selectDataset(const std::string &requested)
{
    std::string name = requested.empty() ? mixlab::default_dataset_name() : requested;
    if (name == k_keyFashion && !fashionInstalled()) {
        emit message(
            tr("Fashion-MNIST is not installed here (apt-get install dataset-fashion-mnist); "
               "using the synthetic dataset instead"));
        name = k_keySynthetic;
    }
    if (name != k_keyFashion && name != k_keySynthetic && name != k_keySyntheticText) {
        QString error;
        if (!selectDatasetFolder(QString::fromStdString(name), &error)) {
            emit message(
                tr("Dataset folder %1 could not be loaded: %2; using the synthetic dataset instead")
                    .arg(QString::fromStdString(name), error));
            name = k_keySynthetic;
        } else {
            return;
        }
    }
    const int index = m_dataset->findData(QString::fromStdString(name));
    m_dataset->setCurrentIndex(index);
    m_lastDatasetIndex = index;
    if (name == k_keySyntheticText) {
        m_shape = mixlab::Shape::tokens();
        m_classes = m_base.dataset.synthetic_text_vocab;
    } else {
        m_shape = mixlab::Shape{name == k_keyFashion ? std::vector<int>{28, 28, 1}
                                                     : std::vector<int>{32, 32, 3}};
        m_classes = 10;
    }
    emit datasetChanged(m_shape, m_classes);
}

void RunPanel::onDatasetActivated(int index)
{
    const QString key = m_dataset->itemData(index).toString();
    if (key == k_keyChooseFolder) {
        chooseFolder();
        return;
    }
    if (index == m_lastDatasetIndex) return;
    if (key == QLatin1String(k_keyFashion) || key == QLatin1String(k_keySynthetic) ||
        key == QLatin1String(k_keySyntheticText)) {
        selectDataset(key.toStdString());
        emit configChanged();
        return;
    }
    QString error;
    if (!selectDatasetFolder(key, &error))
        showUserError(this, tr("Dataset"),
                      tr("The dataset in %1 could not be loaded:\n%2").arg(key, error));
}

void RunPanel::chooseFolder()
{
    const QString folder =
        askFolder(this, FileKind::DatasetFolder,
                  tr("Choose a MNIST, Fashion-MNIST, CIFAR or word-corpus folder"));
    if (folder.isEmpty()) {
        m_dataset->setCurrentIndex(m_lastDatasetIndex);
        return;
    }
    QString error;
    if (!selectDatasetFolder(folder, &error))
        showUserError(
            this, tr("Dataset"),
            tr("The folder %1 holds no dataset MixLab can read:\n%2\n\n"
               "Expected MNIST-style IDX files (train-images-idx3-ubyte[.gz] ...), "
               "CIFAR-10 binaries (data_batch_1.bin ...), CIFAR-100 (train.bin, test.bin) or, "
               "for language models, a word corpus (train.txt, valid.txt, test.txt).")
                .arg(folder, error));
}
