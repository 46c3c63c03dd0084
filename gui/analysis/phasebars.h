// PhaseBars: where a step's device time goes, one horizontal stacked bar per run of a
// compare group (one segment per phase of its profiling pass), side by side.
#pragma once
#include "mixlab/step_profile.h"

#include <QChartView>
#include <QString>

#include <vector>

class QHorizontalStackedBarSeries;

class PhaseBars : public QChartView {
    Q_OBJECT
public:
    struct Bar {
        QString label; // the run's policy, as the axis shows it
        mixlab::StepProfile profile;
    };

    explicit PhaseBars(QWidget *parent = nullptr);

    // Replaces the bars; an empty list leaves an empty chart.
    void setBars(const std::vector<Bar> &bars);
    QHorizontalStackedBarSeries *series() const { return m_series; }

    // The colour phase `p` has in every chart of the app.
    static QColor phaseColor(mixlab::StepPhase p);

private:
    QHorizontalStackedBarSeries *m_series = nullptr;
};
