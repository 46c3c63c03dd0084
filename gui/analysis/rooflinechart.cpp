// RooflineChart: every GEMM layer is its own scatter series, so its point can carry the
// layer's name as a label (Qt 6.4 has no per-point label text); the roof lines are line
// series over the same log axes, and only they appear in the legend.
#include "analysis/rooflinechart.h"

#include "analysis/layertablemodel.h"
#include "common/enginetext.h"

#include <QChart>
#include <QLegendMarker>
#include <QLineSeries>
#include <QLogValueAxis>
#include <QScatterSeries>

#include <algorithm>
#include <cmath>

namespace {

// 10^floor(log10 v) and 10^ceil(log10 v): log axes read best on whole decades.
double decadeBelow(double v) { return std::pow(10.0, std::floor(std::log10(v))); }
double decadeAbove(double v) { return std::pow(10.0, std::ceil(std::log10(v))); }

QString shortName(const std::string &path)
{
    QString s = QString::fromStdString(path);
    s.replace(QStringLiteral("layer "), QStringLiteral("L"));
    return s;
}

} // namespace

RooflineChart::RooflineChart(QWidget *parent) : QChartView(parent)
{
    // The view's own chart: setChart() would release the view's default chart without
    // deleting it (a leak LeakSanitizer found, one per panel).
    QChart *chart = this->chart();
    chart->setTitle(tr("Roofline: GEMM layers against the device's ceilings"));
    chart->legend()->setAlignment(Qt::AlignBottom);
    chart->setMargins(QMargins(4, 4, 4, 4));
    setRenderHint(QPainter::Antialiasing);
    setMinimumHeight(240);
}

void RooflineChart::clear()
{
    QChart *c = chart();
    c->removeAllSeries();
    for (QAbstractAxis *axis : c->axes()) {
        c->removeAxis(axis);
        delete axis;
    }
    m_points.clear();
    m_roofs = 0;
}

void RooflineChart::setRun(const mixlab::StepProfile &profile, mixlab::Policy policy,
                           const std::optional<mixlab::Ceilings> &ceilings)
{
    clear();
    QChart *c = chart();
    for (const mixlab::LayerTime &l : profile.layers) {
        const double ms = l.forward_ms + l.backward_ms;
        if (!l.is_gemm || !(l.flops > 0) || !(l.bytes > 0) || ms < LayerTableModel::k_minTimedMs)
            continue;
        m_points.push_back(
            Point{QString::fromStdString(l.path), l.flops / l.bytes, l.flops / (ms * 1e9)});
    }

    // Roofs: TFLOP/s = GB/s * FLOP/byte / 1000 under the memory roof.
    const double gbs = ceilings ? ceilings->copy_gbs : 0;
    const double computeRoof = ceilings ? mixlab::policy_tflops(*ceilings, policy) : 0;
    const double fp32Roof = ceilings ? ceilings->fp32_tflops : 0;

    double xMin = 1, xMax = 100, yMin = 0.01, yMax = 1;
    bool any = false;
    auto widen = [&](double x, double y) {
        if (!(x > 0) || !(y > 0)) return;
        if (!any) {
            xMin = xMax = x;
            yMin = yMax = y;
            any = true;
        }
        xMin = std::min(xMin, x), xMax = std::max(xMax, x);
        yMin = std::min(yMin, y), yMax = std::max(yMax, y);
    };
    for (const Point &p : m_points) widen(p.intensity, p.tflops);
    for (double roof : {computeRoof, fp32Roof})
        if (roof > 0 && gbs > 0)
            widen(roof * 1000 / gbs, roof); // the ridge point
        else if (roof > 0)
            widen(any ? xMin : 1, roof);
    xMin = decadeBelow(xMin / 2), xMax = decadeAbove(xMax * 2);
    yMin = decadeBelow(yMin / 2), yMax = decadeAbove(yMax * 2);

    auto *xAxis = new QLogValueAxis;
    xAxis->setBase(10);
    xAxis->setLabelFormat(QStringLiteral("%g"));
    xAxis->setTitleText(tr("arithmetic intensity (FLOP per byte, estimated)"));
    xAxis->setRange(xMin, xMax);
    auto *yAxis = new QLogValueAxis;
    yAxis->setBase(10);
    yAxis->setLabelFormat(QStringLiteral("%g"));
    yAxis->setTitleText(tr("achieved TFLOP/s"));
    yAxis->setRange(yMin, yMax);
    c->addAxis(xAxis, Qt::AlignBottom);
    c->addAxis(yAxis, Qt::AlignLeft);

    auto addRoof = [&](QLineSeries *s, const QColor &color, Qt::PenStyle style) {
        QPen pen(color);
        pen.setWidthF(2);
        pen.setStyle(style);
        s->setPen(pen);
        c->addSeries(s);
        s->attachAxis(xAxis);
        s->attachAxis(yAxis);
        ++m_roofs;
    };
    const QString policyName = policyText(policy);
    // A compute roof starts where the memory roof meets it (or at the left edge).
    auto computeLine = [&](double roof, const QString &name, const QColor &color,
                           Qt::PenStyle style) {
        auto *s = new QLineSeries;
        s->setName(name);
        s->append(gbs > 0 ? std::max(xMin, roof * 1000 / gbs) : xMin, roof);
        s->append(xMax, roof);
        addRoof(s, color, style);
    };
    if (computeRoof > 0)
        computeLine(computeRoof,
                    tr("%1 GEMM roof %2 TFLOP/s").arg(policyName).arg(computeRoof, 0, 'g', 3),
                    QColor(0xc0, 0x39, 0x2b), Qt::SolidLine);
    if (fp32Roof > 0 && std::abs(fp32Roof - computeRoof) > 1e-9 * fp32Roof)
        computeLine(fp32Roof, tr("fp32 GEMM roof %1 TFLOP/s").arg(fp32Roof, 0, 'g', 3),
                    QColor(0x7f, 0x8c, 0x8d), Qt::DashLine);
    if (gbs > 0) {
        auto *s = new QLineSeries;
        s->setName(tr("memory roof %1 GB/s").arg(gbs, 0, 'g', 3));
        const double top =
            std::max(computeRoof, fp32Roof) > 0 ? std::max(computeRoof, fp32Roof) : yMax;
        const double xTop = std::min(xMax, top * 1000 / gbs);
        const double xStart = std::max(xMin, yMin * 1000 / gbs); // where it enters the plot
        s->append(xStart, gbs * xStart / 1000);
        s->append(xTop, gbs * xTop / 1000);
        addRoof(s, QColor(0x2c, 0x3e, 0x50), Qt::SolidLine);
    }

    for (const Point &p : m_points) {
        auto *s = new QScatterSeries;
        s->setName(p.layer);
        s->setMarkerSize(10);
        s->setColor(QColor(0x4e, 0x79, 0xa7));
        s->setBorderColor(QColor(0x2b, 0x4a, 0x6f));
        s->append(p.intensity, p.tflops);
        // A literal label format prints as is: the point's layer, short.
        s->setPointLabelsFormat(shortName(p.layer.toStdString()));
        s->setPointLabelsVisible(true);
        s->setPointLabelsClipping(false);
        c->addSeries(s);
        s->attachAxis(xAxis);
        s->attachAxis(yAxis);
        for (QLegendMarker *m : c->legend()->markers(s)) m->setVisible(false);
    }
}
