// PhaseBars: a QHorizontalStackedBarSeries with one bar set per phase, so a phase keeps
// its colour and legend entry across the runs it is compared over.
#include "analysis/phasebars.h"

#include "common/enginetext.h"

#include <QBarCategoryAxis>
#include <QBarSet>
#include <QChart>
#include <QHorizontalStackedBarSeries>
#include <QValueAxis>

#include <algorithm>

namespace {

// Labels on segments narrower than this share of the longest bar would overlap their
// neighbours; those phases keep their legend entry and the table under the chart.
constexpr double k_labelShare = 0.07;

} // namespace

PhaseBars::PhaseBars(QWidget *parent) : QChartView(parent)
{
    // The view's own chart: setChart() would release the view's default chart without
    // deleting it (a leak LeakSanitizer found, one per panel).
    QChart *chart = this->chart();
    chart->setTitle(tr("Device time per step, by phase"));
    chart->legend()->setAlignment(Qt::AlignBottom);
    chart->setMargins(QMargins(4, 4, 4, 4));
    setRenderHint(QPainter::Antialiasing);
    setMinimumHeight(150);
}

QColor PhaseBars::phaseColor(mixlab::StepPhase p)
{
    // Fixed, distinguishable colours (the Tableau 10 order), so "backward" is the same
    // orange in every run's bar and every screenshot.
    switch (p) {
    case mixlab::StepPhase::Input: return QColor(0x79, 0x70, 0x6e);
    case mixlab::StepPhase::Forward: return QColor(0x4e, 0x79, 0xa7);
    case mixlab::StepPhase::Loss: return QColor(0xed, 0xc9, 0x48);
    case mixlab::StepPhase::Backward: return QColor(0xf2, 0x8e, 0x2b);
    case mixlab::StepPhase::LossScaling: return QColor(0xe1, 0x57, 0x59);
    case mixlab::StepPhase::Optimizer: return QColor(0x59, 0xa1, 0x4f);
    case mixlab::StepPhase::Count: break;
    }
    return Qt::gray;
}

void PhaseBars::setBars(const std::vector<Bar> &bars)
{
    QChart *c = chart();
    c->removeAllSeries(); // deletes the old series and its sets
    m_series = nullptr;
    for (QAbstractAxis *axis : c->axes()) {
        c->removeAxis(axis);
        delete axis;
    }
    if (bars.empty()) return;

    m_series = new QHorizontalStackedBarSeries;
    double longest = 0;
    for (const Bar &b : bars) {
        double sum = 0;
        for (double v : b.profile.phase_ms) sum += v;
        longest = std::max(longest, sum);
    }
    for (int ph = 0; ph < mixlab::k_step_phases; ++ph) {
        const auto phase = mixlab::StepPhase(ph);
        auto *set = new QBarSet(fromView(mixlab::step_phase_name(phase)));
        set->setColor(phaseColor(phase));
        set->setBorderColor(phaseColor(phase).darker(130));
        double widest = 0;
        for (const Bar &b : bars) {
            const double v = b.profile.phase_ms[std::size_t(ph)];
            set->append(v);
            widest = std::max(widest, v);
        }
        // A set's labels are all shown or all hidden: hide them where even its widest
        // segment is too narrow to hold one.
        set->setLabelColor(widest >= k_labelShare * longest ? QColor(Qt::white)
                                                            : QColor(Qt::transparent));
        m_series->append(set);
    }
    m_series->setLabelsVisible(true);
    m_series->setLabelsFormat(QStringLiteral("@value"));
    m_series->setLabelsPrecision(3);
    m_series->setLabelsPosition(QAbstractBarSeries::LabelsCenter);
    m_series->setBarWidth(0.6);
    c->addSeries(m_series);

    // The first run on top, as the runs table lists them.
    auto *runsAxis = new QBarCategoryAxis;
    for (const Bar &b : bars) runsAxis->append(b.label);
    c->addAxis(runsAxis, Qt::AlignLeft);
    m_series->attachAxis(runsAxis);
    runsAxis->setReverse(true);

    auto *msAxis = new QValueAxis;
    msAxis->setTitleText(tr("ms per step (device)"));
    msAxis->setLabelFormat(QStringLiteral("%.3g"));
    msAxis->setRange(0, longest > 0 ? longest * 1.05 : 1.0);
    msAxis->applyNiceNumbers();
    c->addAxis(msAxis, Qt::AlignBottom);
    m_series->attachAxis(msAxis);
}
