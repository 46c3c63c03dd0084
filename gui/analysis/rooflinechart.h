// RooflineChart: a log-log chart of one run's GEMM layers, achieved TFLOP/s against
// arithmetic intensity (FLOPs per estimated byte moved), under the device's ceilings.
#pragma once
#include "mixlab/ceilings.h"
#include "mixlab/policy.h"
#include "mixlab/step_profile.h"

#include <QChartView>
#include <QPointF>
#include <QString>

#include <optional>
#include <vector>

class RooflineChart : public QChartView {
    Q_OBJECT
public:
    struct Point {
        QString layer;    // "layer 3"
        double intensity; // FLOP per byte
        double tflops;    // achieved
    };

    explicit RooflineChart(QWidget *parent = nullptr);

    // One point per GEMM layer of `profile` with measurable time, FLOPs and bytes. The
    // roofs come from `ceilings` (the policy's GEMM ceiling, fp32's when it differs, and
    // the copy bandwidth); without ceilings, or with a zero one, that roof is not drawn.
    void setRun(const mixlab::StepProfile &profile, mixlab::Policy policy,
                const std::optional<mixlab::Ceilings> &ceilings);
    void clear();

    const std::vector<Point> &points() const { return m_points; }
    int roofCount() const { return m_roofs; } // roof lines drawn

private:
    std::vector<Point> m_points;
    int m_roofs = 0;
};
