// LmSettingsBox: widgets <-> RunConfig's bptt and lr_schedule, and the sampling options.
#include "runs/lmsettingsbox.h"

#include "common/enginetext.h"

#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QSignalBlocker>
#include <QSpinBox>

#include <cmath>

namespace {

// run_config.cpp's limit on "bptt".
constexpr int k_maxBptt = 4096;
constexpr int k_maxSampleWords = 100000;

} // namespace

LmSettingsBox::LmSettingsBox(QWidget *parent) : QGroupBox(tr("Language model"), parent)
{
    setObjectName(QStringLiteral("lmSettings"));
    auto *form = new QFormLayout(this);
    form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);

    m_bptt = new QSpinBox(this);
    m_bptt->setObjectName(QStringLiteral("bpttSpin"));
    m_bptt->setRange(1, k_maxBptt);
    m_bptt->setSuffix(tr(" words"));
    m_bptt->setToolTip(tr("Truncated backpropagation through time: each step trains on windows "
                          "of this many words per column (batch x bptt tokens a step), carrying "
                          "the LSTM's state on from the window before. The example uses 35."));
    form->addRow(tr("&BPTT window"), m_bptt);

    m_schedule = new QComboBox(this);
    m_schedule->setObjectName(QStringLiteral("lrScheduleCombo"));
    for (auto t : {mixlab::LrSchedule::Constant, mixlab::LrSchedule::Plateau})
        m_schedule->addItem(fromView(mixlab::lr_schedule_name(t)), int(t));
    m_schedule->setToolTip(tr("plateau: after an epoch whose validation loss is no better than "
                              "the best so far, the learning rate is multiplied by the factor "
                              "(the example divides it by 4); constant: never changes"));
    m_factor = new QDoubleSpinBox(this);
    m_factor->setObjectName(QStringLiteral("lrFactorSpin"));
    m_factor->setRange(0.01, 0.99);
    m_factor->setDecimals(2);
    m_factor->setSingleStep(0.05);
    m_factor->setPrefix(QStringLiteral("\u00d7"));
    m_factor->setToolTip(m_schedule->toolTip());
    auto *scheduleRow = new QHBoxLayout;
    scheduleRow->addWidget(m_schedule, 1);
    scheduleRow->addWidget(m_factor);
    form->addRow(tr("LR &schedule"), scheduleRow);

    m_words = new QSpinBox(this);
    m_words->setObjectName(QStringLiteral("sampleWordsSpin"));
    m_words->setRange(0, k_maxSampleWords);
    m_words->setSpecialValueText(tr("none"));
    m_words->setSuffix(tr(" words"));
    m_words->setToolTip(tr("When training ends (or is stopped), each run writes this much text "
                           "from its model, one word at a time as the example's generate.py "
                           "does: Run > Sample text shows it"));
    m_temperature = new QDoubleSpinBox(this);
    m_temperature->setObjectName(QStringLiteral("temperatureSpin"));
    m_temperature->setRange(0.05, 10.0);
    m_temperature->setDecimals(2);
    m_temperature->setSingleStep(0.1);
    m_temperature->setPrefix(tr("temperature "));
    m_temperature->setToolTip(tr("Words are drawn from softmax(logits / temperature): lower "
                                 "is safer and more repetitive, 1.0 is the model as trained"));
    auto *sampleRow = new QHBoxLayout;
    sampleRow->addWidget(m_words, 1);
    sampleRow->addWidget(m_temperature, 1);
    form->addRow(tr("Sample &text"), sampleRow);

    setSampling(TextSampling{});
    showConfig(mixlab::RunConfig{});

    connect(m_bptt, &QSpinBox::valueChanged, this, [this] { emit edited(RunField::Bptt); });
    connect(m_schedule, &QComboBox::currentIndexChanged, this, [this] {
        updateFactor();
        emit edited(RunField::LrSchedule);
    });
    connect(m_factor, &QDoubleSpinBox::valueChanged, this,
            [this] { emit edited(RunField::LrSchedule); });
    connect(m_words, &QSpinBox::valueChanged, this, [this] {
        m_temperature->setEnabled(m_words->value() > 0);
        emit samplingEdited();
    });
    connect(m_temperature, &QDoubleSpinBox::valueChanged, this, &LmSettingsBox::samplingEdited);
}

void LmSettingsBox::showConfig(const mixlab::RunConfig &c)
{
    const QSignalBlocker b1(m_bptt), b2(m_schedule), b3(m_factor);
    m_bptt->setValue(c.bptt);
    m_schedule->setCurrentIndex(m_schedule->findData(int(c.lr_schedule.type)));
    m_factor->setValue(double(c.lr_schedule.factor));
    updateFactor();
}

void LmSettingsBox::readInto(mixlab::RunConfig &c) const
{
    c.bptt = m_bptt->value();
    c.lr_schedule.type = mixlab::LrSchedule(m_schedule->currentData().toInt());
    // The spin box rounds to its decimals: a factor it shows unchanged is kept exact.
    if (std::abs(m_factor->value() - double(c.lr_schedule.factor)) > 0.005)
        c.lr_schedule.factor = float(m_factor->value());
}

TextSampling LmSettingsBox::sampling() const
{
    TextSampling s;
    s.words = m_words->value();
    s.temperature = float(m_temperature->value());
    return s;
}

void LmSettingsBox::setSampling(const TextSampling &s)
{
    const QSignalBlocker b1(m_words), b2(m_temperature);
    m_words->setValue(s.words);
    m_temperature->setValue(double(s.temperature));
    m_temperature->setEnabled(s.words > 0);
}

void LmSettingsBox::updateFactor()
{
    m_factor->setEnabled(mixlab::LrSchedule(m_schedule->currentData().toInt()) ==
                         mixlab::LrSchedule::Plateau);
}
