// One chart of the ChartPanel: series per run, decimation, axes fitting, hover text.
#include "metricchart.h"

#include "seriesdecimator.h"

#include <QChart>
#include <QCursor>
#include <QGraphicsScene>
#include <QLegend>
#include <QLegendMarker>
#include <QLineSeries>
#include <QLogValueAxis>
#include <QPainter>
#include <QScatterSeries>
#include <QToolTip>
#include <QValueAxis>

#include <algorithm>
#include <cmath>
#include <limits>

namespace {

// 1, 2 or 5 times a power of ten near range/ticks, so tick labels read as round numbers.
double niceStep(double range, int ticks)
{
    if (!(range > 0) || !std::isfinite(range))
        return 1.0;
    const double raw = range / ticks;
    const double mag = std::pow(10.0, std::floor(std::log10(raw)));
    const double norm = raw / mag;
    const double unit = norm < 1.5 ? 1.0 : norm < 3.0 ? 2.0 : norm < 7.0 ? 5.0 : 10.0;
    return unit * mag;
}

// Enough decimals to tell ticks `step` apart, no more.
QString labelFormat(double step)
{
    const int decimals = step >= 1.0 ? 0 : int(std::ceil(-std::log10(step) - 1e-9));
    return QStringLiteral("%.%1f").arg(std::clamp(decimals, 0, 9));
}

// Round-number ticks every `step` from 0. Range and interval change together under
// fixed ticks: a new range laid out with the old interval (or the other way round)
// could ask the axis for hundreds of thousands of labels.
void setLinearTicks(QValueAxis *axis, double lo, double hi, double step)
{
    axis->setTickType(QValueAxis::TicksFixed);
    axis->setRange(lo, hi);
    axis->setTickAnchor(0.0);
    axis->setTickInterval(step);
    axis->setLabelFormat(labelFormat(step));
    axis->setTickType(QValueAxis::TicksDynamic);
}

// A log axis has no place for zero or negative values.
QList<QPointF> positiveOnly(const QList<QPointF> &points)
{
    QList<QPointF> out;
    out.reserve(points.size());
    for (const QPointF &p : points)
        if (p.y() > 0)
            out.append(p);
    return out;
}

QString formatValue(double v)
{
    if (v == std::floor(v) && std::abs(v) < 1e12)
        return QString::number(qint64(v));
    return QString::number(v, 'g', 6);
}

} // namespace

MetricChart::MetricChart(const QString &name, const QString &title, const QString &yTitle,
                         const QString &key, QWidget *parent)
    : QChartView(parent), m_name(name), m_yTitle(yTitle), m_xTitle(tr("step"))
{
    setObjectName(QStringLiteral("chart_") + name);
    setRenderHint(QPainter::Antialiasing);
    setMinimumSize(300, 230);

    QChart *c = chart(); // owned by the view
    // The title item renders rich text: the key goes on a smaller grey second line.
    c->setTitle(key.isEmpty() ? title.toHtmlEscaped()
                              : QStringLiteral("<div align=\"center\">%1<br><span style=\""
                                               "font-weight:normal; font-size:small; "
                                               "color:#555\">%2</span></div>")
                                    .arg(title.toHtmlEscaped(), key.toHtmlEscaped()));
    QFont titleFont = c->titleFont();
    titleFont.setBold(true);
    titleFont.setPointSizeF(titleFont.pointSizeF() * 1.1);
    c->setTitleFont(titleFont);
    c->setAnimationOptions(QChart::NoAnimation); // live data: animations would lag behind
    c->setBackgroundRoundness(0);
    c->setMargins(QMargins(4, 2, 8, 2));
    c->legend()->setAlignment(Qt::AlignBottom); // outside the plot, never over the data
    QFont legendFont = c->legend()->font();
    legendFont.setPointSizeF(legendFont.pointSizeF() * 0.9);
    c->legend()->setFont(legendFont);

    auto *x = new QValueAxis(c);
    x->setTitleText(m_xTitle);
    c->addAxis(x, Qt::AlignBottom);
    m_xAxis = x;
    auto *y = new QValueAxis(c);
    y->setTitleText(m_yTitle);
    c->addAxis(y, Qt::AlignLeft);
    m_yAxis = y;
    fitAxes();
}

void MetricChart::setXTitle(const QString &title)
{
    m_xTitle = title;
    m_xAxis->setTitleText(title);
}

void MetricChart::setLogY(bool log, bool powersOfTwo)
{
    if (log == m_logY && powersOfTwo == m_powersOfTwo)
        return;
    m_logY = log;
    m_powersOfTwo = powersOfTwo;
    QAbstractAxis *axis = nullptr;
    if (log) {
        auto *a = new QLogValueAxis(chart());
        a->setLabelFormat(QStringLiteral("%g"));
        axis = a;
    } else {
        axis = new QValueAxis(chart());
    }
    axis->setTitleText(m_yTitle);
    replaceYAxis(axis);
    if (log) {
        const auto all = chart()->series();
        for (QAbstractSeries *as : all) {
            auto *xy = static_cast<QXYSeries *>(as);
            if (m_pending.find(xy) == m_pending.end())
                m_pending[xy] = positiveOnly(xy->points());
        }
    }
    fitAxes();
}

void MetricChart::replaceYAxis(QAbstractAxis *axis)
{
    QChart *c = chart();
    const auto all = c->series();
    for (QAbstractSeries *s : all)
        s->detachAxis(m_yAxis);
    c->removeAxis(m_yAxis);
    delete m_yAxis;
    m_yAxis = axis;
    c->addAxis(axis, Qt::AlignLeft);
    for (QAbstractSeries *s : all)
        s->attachAxis(axis);
}

void MetricChart::styleSeries(QXYSeries *series, Style style, const QColor &color,
                              bool inLegend) const
{
    QPen pen(color);
    pen.setCosmetic(true);
    switch (style) {
    case Style::Faint: {
        QColor faint = color;
        faint.setAlpha(70);
        pen.setColor(faint);
        pen.setWidthF(1.0);
        break;
    }
    case Style::Solid:
        pen.setWidthF(2.0);
        break;
    case Style::DashedMarkers:
    case Style::DottedMarkers:
        pen.setColor(color.darker(130));
        pen.setWidthF(1.6);
        pen.setStyle(style == Style::DashedMarkers ? Qt::DashLine : Qt::DotLine);
        series->setPointsVisible(true);
        series->setMarkerSize(style == Style::DashedMarkers ? 5.0 : 4.0);
        break;
    case Style::Scatter: {
        auto *scatter = static_cast<QScatterSeries *>(series);
        scatter->setMarkerShape(QScatterSeries::MarkerShapeTriangle);
        scatter->setMarkerSize(9.0);
        scatter->setColor(color.darker(150));
        scatter->setBorderColor(Qt::white);
        break;
    }
    }
    if (style != Style::Scatter)
        series->setPen(pen);
    const auto markers = chart()->legend()->markers(series);
    for (QLegendMarker *m : markers)
        m->setVisible(inLegend);
}

QXYSeries *MetricChart::makeSeries(const RunEntry &entry, std::size_t curve)
{
    QXYSeries *s = nullptr;
    if (entry.styles[curve] == Style::Scatter)
        s = new QScatterSeries(chart());
    else
        s = new QLineSeries(chart());
    s->setName(entry.name);
    chart()->addSeries(s); // the chart takes ownership
    s->attachAxis(m_xAxis);
    s->attachAxis(m_yAxis);
    styleSeries(s, entry.styles[curve], entry.color, entry.inLegend[curve]);
    connect(s, &QXYSeries::hovered, this, [this, s](const QPointF &point, bool state) {
        if (state)
            QToolTip::showText(QCursor::pos(), hoverText(s, point), this);
        else
            QToolTip::hideText();
    });
    return s;
}

void MetricChart::setRun(int runId, const QString &runName, const QColor &color,
                         const std::vector<Curve> &curves)
{
    RunEntry &entry = m_runs[runId];
    bool sameShape = entry.series.size() == qsizetype(curves.size());
    for (std::size_t i = 0; sameShape && i < curves.size(); ++i)
        sameShape = entry.styles[i] == curves[i].style && entry.inLegend[i] == curves[i].inLegend;
    if (!sameShape) {
        for (QXYSeries *s : std::as_const(entry.series)) {
            m_pending.erase(s);
            chart()->removeSeries(s);
            delete s;
        }
        entry.series.clear();
        entry.styles.clear();
        entry.inLegend.clear();
        for (const Curve &c : curves) {
            entry.styles.push_back(c.style);
            entry.inLegend.push_back(c.inLegend);
        }
    }
    const bool restyle = sameShape && (entry.name != runName || entry.color != color);
    entry.name = runName;
    entry.color = color;
    entry.roles.clear();
    for (const Curve &c : curves)
        entry.roles.push_back(c.role);
    if (!sameShape)
        for (std::size_t i = 0; i < curves.size(); ++i)
            entry.series.append(makeSeries(entry, i));

    const int buckets = pixelBuckets();
    for (std::size_t i = 0; i < curves.size(); ++i) {
        QXYSeries *s = entry.series[qsizetype(i)];
        if (restyle) {
            s->setName(runName);
            styleSeries(s, curves[i].style, color, curves[i].inLegend);
        }
        m_pending[s] = mixlab::decimateMinMax(m_logY ? positiveOnly(curves[i].points)
                                                     : curves[i].points,
                                              buckets);
    }
}

void MetricChart::removeRun(int runId)
{
    auto it = m_runs.find(runId);
    if (it == m_runs.end())
        return;
    for (QXYSeries *s : std::as_const(it->second.series)) {
        m_pending.erase(s);
        chart()->removeSeries(s);
        delete s;
    }
    m_runs.erase(it);
}

std::vector<int> MetricChart::runIds() const
{
    std::vector<int> ids;
    for (const auto &[id, entry] : m_runs)
        ids.push_back(id);
    return ids;
}

QList<QXYSeries *> MetricChart::runSeries(int runId) const
{
    auto it = m_runs.find(runId);
    return it == m_runs.end() ? QList<QXYSeries *>{} : it->second.series;
}

void MetricChart::fitAxes()
{
    // What every series will show: its pending points, else those it has.
    const auto all = chart()->series();
    std::vector<QList<QPointF>> next;
    next.reserve(std::size_t(all.size()));
    constexpr double inf = std::numeric_limits<double>::infinity();
    double xmin = inf, xmax = -inf, ymin = inf, ymax = -inf;
    for (QAbstractSeries *as : all) {
        auto *s = static_cast<QXYSeries *>(as);
        auto it = m_pending.find(s);
        next.push_back(it != m_pending.end() ? it->second : s->points());
        for (const QPointF &p : next.back()) {
            xmin = std::min(xmin, p.x());
            xmax = std::max(xmax, p.x());
            ymin = std::min(ymin, p.y());
            ymax = std::max(ymax, p.y());
        }
    }
    const bool any = xmin <= xmax;

    // x: from 0 (or the data's minimum when below) to the last point, round ticks.
    double xlo = any ? std::min(0.0, xmin) : 0.0;
    double xhi = any ? xmax : 1.0;
    if (!(xhi > xlo))
        xhi = xlo + 1.0;
    const double xstep = niceStep(xhi - xlo, 5);

    double ylo = 0, yhi = 1, ystep = 1; // ystep: the tick interval, or the log base
    if (m_logY) {
        const double lo = any ? ymin : 1.0, hi = any ? ymax : 10.0;
        ystep = 10.0;
        if (m_powersOfTwo) {
            // Loss scales are powers of two; label every 2^k with k chosen so that no
            // more than ~7 labels crowd a small chart.
            const double span = std::log2(hi / lo);
            ystep = std::pow(2.0, std::max(1.0, std::ceil(span / 6.0)));
        }
        const double lb = std::log(ystep);
        const double elo = std::floor(std::log(lo) / lb + 1e-9);
        double ehi = std::ceil(std::log(hi) / lb - 1e-9);
        if (ehi <= elo)
            ehi = elo + 1;
        // Just outside the powers, so rounding in the axis cannot drop their labels.
        ylo = std::pow(ystep, elo) * (1 - 1e-9);
        yhi = std::pow(ystep, ehi) * (1 + 1e-9);
    } else {
        double lo = any ? ymin : 0.0, hi = any ? ymax : 1.0;
        if (m_includeZero) {
            lo = std::min(lo, 0.0);
            hi = std::max(hi, 0.0);
        }
        if (hi - lo <= 1e-12 * std::max(1.0, std::abs(hi))) {
            // A flat line (memory, a constant loss scale): show it against zero.
            if (lo >= 0) {
                lo = 0;
                hi = hi > 0 ? hi * 1.25 : 1.0;
            } else {
                lo -= std::abs(lo) * 0.25;
                hi += std::abs(hi) * 0.25 + 1e-12;
            }
        } else {
            const double pad = 0.04 * (hi - lo);
            const bool nonNegative = lo >= 0;
            lo -= pad;
            hi += pad;
            if (nonNegative)
                lo = std::max(lo, 0.0);
        }
        // Qt Charts elides every y label once they would overlap, so a short chart
        // gets fewer ticks: one per ~32 px of plot height, 2 to 5.
        const double plotHeight = chart()->plotArea().height();
        const int yTicks = plotHeight > 0 ? std::clamp(int(plotHeight / 32.0), 2, 5) : 5;
        ystep = niceStep(hi - lo, yTicks);
        ylo = std::floor(lo / ystep + 1e-9) * ystep;
        yhi = std::ceil(hi / ystep - 1e-9) * ystep;
        if (yhi > m_yCeiling && ymax <= m_yCeiling)
            yhi = m_yCeiling;
    }

    auto *x = static_cast<QValueAxis *>(m_xAxis);
    bool same = x->min() == xlo && x->max() == xhi && x->tickInterval() == xstep;
    if (m_logY) {
        const auto *y = static_cast<QLogValueAxis *>(m_yAxis);
        same = same && y->min() == ylo && y->max() == yhi && y->base() == ystep;
    } else {
        const auto *y = static_cast<QValueAxis *>(m_yAxis);
        same = same && y->min() == ylo && y->max() == yhi && y->tickInterval() == ystep;
    }
    if (same) {
        for (auto &[s, points] : m_pending)
            s->replace(points);
        m_pending.clear();
        return;
    }

    // Every series lays itself out again (a costly path stroke) on each axis change and
    // on each replace. Emptied first, they do it once, on the replace, instead of three
    // times per redraw.
    for (QAbstractSeries *as : all) {
        auto *s = static_cast<QXYSeries *>(as);
        if (s->count() > 0)
            s->clear();
    }
    setLinearTicks(x, xlo, xhi, xstep);
    if (m_logY) {
        auto *y = static_cast<QLogValueAxis *>(m_yAxis);
        y->setBase(ystep);
        y->setMinorTickCount(ystep == 10.0 ? 8 : 0);
        y->setRange(ylo, yhi);
    } else {
        setLinearTicks(static_cast<QValueAxis *>(m_yAxis), ylo, yhi, ystep);
    }
    for (qsizetype i = 0; i < all.size(); ++i)
        static_cast<QXYSeries *>(all[i])->replace(next[std::size_t(i)]);
    m_pending.clear();
}

int MetricChart::pixelBuckets() const
{
    const double plot = chart()->plotArea().width();
    // Before the first layout the plot area is empty; the view's width bounds it.
    const int w = plot >= 16 && plot <= width() ? int(plot) : width();
    return std::max(w, 16);
}

void MetricChart::renderInto(QPainter *painter, const QRectF &target) const
{
    QChart *c = chart();
    const QRectF old = c->geometry();
    // Laying the chart out at the target size keeps text and lines crisp at any export
    // size; the view's geometry is restored before anything repaints.
    c->setGeometry(QRectF(old.topLeft(), target.size()));
    scene()->render(painter, target, QRectF(old.topLeft(), target.size()),
                    Qt::IgnoreAspectRatio);
    c->setGeometry(old);
}

const MetricChart::RunEntry *MetricChart::entryOf(const QXYSeries *series) const
{
    for (const auto &[id, entry] : m_runs)
        if (entry.series.contains(const_cast<QXYSeries *>(series)))
            return &entry;
    return nullptr;
}

QString MetricChart::hoverText(const QXYSeries *series, const QPointF &at) const
{
    const RunEntry *entry = entryOf(series);
    if (!entry)
        return {};
    const QList<QPointF> pts = series->points();
    if (pts.isEmpty())
        return {};
    // Points are sorted by x: the nearest in x is next to the lower bound.
    auto it = std::lower_bound(pts.begin(), pts.end(), at.x(),
                               [](const QPointF &p, double x) { return p.x() < x; });
    if (it == pts.end())
        --it;
    else if (it != pts.begin() && at.x() - (it - 1)->x() < it->x() - at.x())
        --it;
    const qsizetype curve = entry->series.indexOf(const_cast<QXYSeries *>(series));
    const QString role = curve >= 0 ? entry->roles[std::size_t(curve)] : QString();
    return QStringLiteral("%1%2\n%3: %4\n%5: %6")
        .arg(entry->name, role.isEmpty() ? QString() : QStringLiteral(" (%1)").arg(role),
             m_xTitle, formatValue(it->x()), m_yTitle, formatValue(it->y()));
}

void MetricChart::resizeEvent(QResizeEvent *event)
{
    QChartView::resizeEvent(event);
    if (event->oldSize().height() != event->size().height())
        fitAxes(); // the y tick count follows the plot's height
    const int buckets = pixelBuckets();
    // Small changes do not change what decimation keeps enough to be worth a redraw.
    if (std::abs(buckets - m_lastBuckets) * 10 > std::max(m_lastBuckets, 1)) {
        m_lastBuckets = buckets;
        emit bucketsChanged();
    }
}
