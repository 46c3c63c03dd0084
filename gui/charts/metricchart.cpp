// One chart of the ChartPanel: series per run, decimation, axes fitting, legend, marks
// and crosshair.
#include "charts/metricchart.h"

#include "charts/chartlegend.h"
#include "charts/seriesdecimator.h"

#include <QCategoryAxis>
#include <QChart>
#include <QFontMetricsF>
#include <QGraphicsLayout>
#include <QGraphicsScene>
#include <QLegend>
#include <QLineSeries>
#include <QLogValueAxis>
#include <QMouseEvent>
#include <QPainter>
#include <QScatterSeries>
#include <QValueAxis>

#include <algorithm>
#include <cmath>
#include <limits>

namespace {

constexpr double k_inf = std::numeric_limits<double>::infinity();
// The chart's margins around plot and axes; the legend goes under the bottom one.
const QMargins k_margins(4, 2, 8, 2);
constexpr int k_legendGap = 4;
// Height a y label needs, gaps included, on an axis whose labels we choose.
constexpr double k_labelPitch = 18.0;
// Room left of the first and right of the last x value: half a marker.
constexpr double k_edgePixels = 6.0;

// 1, 2 or 5 times a power of ten near range/ticks, so tick labels read as round numbers.
double niceStep(double range, int ticks)
{
    if (!(range > 0) || !std::isfinite(range)) return 1.0;
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

// The x tick interval: five round steps, fewer when the labels would not fit side by
// side (Qt Charts cuts each label to its share of the width: "30..." for 3000).
double xTickStep(double lo, double hi, double plotWidth, const QFontMetricsF &fm)
{
    constexpr double k_labelGap = 16; // Qt's label padding on both sides, and air
    double step = niceStep(hi - lo, 5);
    if (!(plotWidth > 0)) return step;
    for (int ticks = 5; ticks >= 1; --ticks) {
        step = niceStep(hi - lo, ticks);
        const double labels = std::floor((hi - lo) / step + 1e-9) + 1;
        const QString format = labelFormat(step);
        double widest = 0;
        for (double v : {lo, hi, std::floor(hi / step) * step})
            widest =
                std::max(widest, fm.horizontalAdvance(QString::asprintf(qPrintable(format), v)));
        if (labels * (widest + k_labelGap) <= plotWidth) break;
    }
    return step;
}

// A log axis has no place for zero or negative values.
QList<QPointF> positiveOnly(const QList<QPointF> &points)
{
    QList<QPointF> out;
    out.reserve(points.size());
    for (const QPointF &p : points)
        if (p.y() > 0) out.append(p);
    return out;
}

// An exponent axis's labels: as a loss scale is written (32768, 0.25) while every tick
// lies in 2^-4 .. 2^16, else all as 2^e (fp8 scales reach 2^25 and beyond: "2^25" beside
// "1048576" and "65536" made one axis read two ways).
bool powersAsNumbers(const std::vector<int> &ticks)
{
    return std::all_of(ticks.begin(), ticks.end(), [](int e) { return e >= -4 && e <= 16; });
}
QString powerOfTwoLabel(int e, bool asNumber)
{
    if (asNumber) return QString::number(std::ldexp(1.0, e), 'g', 10);
    return QStringLiteral("2^%1").arg(e);
}

// A value in a note: three significant digits, whole numbers in full.
QString noteValue(double v)
{
    return std::abs(v) >= 100 ? QString::number(std::llround(v)) : QString::number(v, 'g', 3);
}

} // namespace

MetricChart::MetricChart(const QString &name, const QString &title, const QString &yTitle,
                         const QString &key, QWidget *parent)
    : QChartView(parent), m_name(name), m_title(title), m_yTitle(yTitle), m_xTitle(tr("step")),
      m_key(key)
{
    setObjectName(QStringLiteral("chart_") + name);
    setRenderHint(QPainter::Antialiasing);
    setMinimumSize(300, 230);
    viewport()->setMouseTracking(true); // the crosshair follows the cursor, no button held

    QChart *c = chart(); // owned by the view
    c->setTitle(title.toHtmlEscaped());
    QFont titleFont = c->titleFont();
    titleFont.setBold(true);
    titleFont.setPointSizeF(titleFont.pointSizeF() * 1.1);
    c->setTitleFont(titleFont);
    c->setAnimationOptions(QChart::NoAnimation); // live data: animations would lag behind
    c->setBackgroundRoundness(0);
    c->setMargins(k_margins);
    // Qt's legend elides names to one row; ours wraps them (and the key) into rows.
    c->legend()->hide();
    m_legend = new ChartLegend(c);
    m_legend->setZValue(100);
    QFont legendFont = c->legend()->font();
    legendFont.setPointSizeF(legendFont.pointSizeF() * 0.9);
    m_legend->setFont(legendFont);
    m_legend->setKey(m_key);
    m_overlay = new PlotOverlay(c);
    connect(c, &QChart::plotAreaChanged, this, [this] { m_overlay->update(); });

    auto *x = new QValueAxis(c);
    x->setTitleText(m_xTitle);
    c->addAxis(x, Qt::AlignBottom);
    m_xAxis = x;
    auto *y = new QValueAxis(c);
    y->setTitleText(m_yTitle);
    c->addAxis(y, Qt::AlignLeft);
    m_yAxis = y;
    layOutLegend(c->size());
    fitAxes();
}

void MetricChart::setLabels(const QString &title, const QString &yTitle, const QString &key)
{
    m_title = title;
    chart()->setTitle(title.toHtmlEscaped());
    m_yTitle = yTitle;
    m_yAxis->setTitleText(yTitle);
    m_key = key;
    m_legend->setKey(keyText());
    layOutLegend(chart()->size());
}

void MetricChart::setXTitle(const QString &title)
{
    m_xTitle = title;
    m_xAxis->setTitleText(title);
}

void MetricChart::setLogY(bool log, bool powersOfTwo)
{
    if (log == m_logY && powersOfTwo == m_powersOfTwo) return;
    m_logY = log;
    m_powersOfTwo = powersOfTwo;
    QAbstractAxis *axis = nullptr;
    if (log && powersOfTwo) {
        auto *a = new QCategoryAxis(chart());
        a->setLabelsPosition(QCategoryAxis::AxisLabelsPositionOnValue);
        axis = a;
    } else if (log) {
        auto *a = new QLogValueAxis(chart());
        a->setLabelFormat(QStringLiteral("%g"));
        axis = a;
    } else {
        axis = new QValueAxis(chart());
    }
    axis->setTitleText(m_yTitle);
    m_yTicks.clear();
    replaceYAxis(axis);
    // Points drawn so far no longer fit the axis: the next setRun brings new ones.
    if (log) {
        const auto all = chart()->series();
        for (QAbstractSeries *as : all) {
            auto *xy = static_cast<QXYSeries *>(as);
            if (m_pending.find(xy) == m_pending.end()) m_pending[xy] = positiveOnly(xy->points());
        }
    }
    fitAxes();
}

void MetricChart::replaceYAxis(QAbstractAxis *axis)
{
    QChart *c = chart();
    const auto all = c->series();
    for (QAbstractSeries *s : all) s->detachAxis(m_yAxis);
    c->removeAxis(m_yAxis);
    delete m_yAxis;
    m_yAxis = axis;
    c->addAxis(axis, Qt::AlignLeft);
    for (QAbstractSeries *s : all) s->attachAxis(axis);
}

double MetricChart::toAxisY(double value) const
{
    return isPowersOfTwo() ? std::log2(value) : value;
}

QList<QPointF> MetricChart::forAxis(const QList<QPointF> &points) const
{
    if (!m_logY) return points;
    QList<QPointF> out = positiveOnly(points);
    if (m_powersOfTwo)
        for (QPointF &p : out) p.setY(std::log2(p.y()));
    return out;
}

void MetricChart::styleSeries(QXYSeries *series, Style style, const QColor &color) const
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
    case Style::Solid: pen.setWidthF(2.0); break;
    case Style::DashedMarkers:
    case Style::DottedMarkers:
    case Style::DashDotMarkers:
        pen.setColor(color.darker(130));
        pen.setWidthF(1.6);
        pen.setStyle(style == Style::DashedMarkers   ? Qt::DashLine
                     : style == Style::DottedMarkers ? Qt::DotLine
                                                     : Qt::DashDotLine);
        series->setPointsVisible(true);
        series->setMarkerSize(style == Style::DottedMarkers ? 4.0 : 5.0);
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
    if (style != Style::Scatter) series->setPen(pen);
}

QXYSeries *MetricChart::makeSeries(const RunEntry &entry, std::size_t curve)
{
    QXYSeries *s = nullptr;
    if (entry.styles[curve] == Style::Scatter)
        s = new QScatterSeries(chart());
    else
        s = new QLineSeries(chart());
    s->setName(entry.label);
    chart()->addSeries(s); // the chart takes ownership
    s->attachAxis(m_xAxis);
    s->attachAxis(m_yAxis);
    styleSeries(s, entry.styles[curve], entry.color);
    return s;
}

void MetricChart::setRun(int runId, const QString &label, const QString &toolTip,
                         const QColor &color, const std::vector<Curve> &curves)
{
    RunEntry &entry = m_runs[runId];
    bool sameShape = entry.series.size() == qsizetype(curves.size());
    for (std::size_t i = 0; sameShape && i < curves.size(); ++i)
        sameShape = entry.styles[i] == curves[i].style && entry.inLegend[i] == curves[i].inLegend;
    if (!sameShape) {
        for (QXYSeries *s : std::as_const(entry.series)) {
            m_pending.erase(s);
            m_offScale.erase(s);
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
    const bool restyle = sameShape && (entry.label != label || entry.color != color);
    const bool relabel = entry.label != label || entry.toolTip != toolTip || entry.color != color;
    entry.label = label;
    entry.toolTip = toolTip;
    entry.color = color;
    entry.steady.clear();
    for (const Curve &c : curves) entry.steady.push_back(c.steady);
    if (!sameShape)
        for (std::size_t i = 0; i < curves.size(); ++i) entry.series.append(makeSeries(entry, i));

    const int buckets = pixelBuckets();
    for (std::size_t i = 0; i < curves.size(); ++i) {
        const Curve &c = curves[i];
        QXYSeries *s = entry.series[qsizetype(i)];
        if (restyle) {
            s->setName(label);
            styleSeries(s, c.style, color);
        }
        m_pending[s] = mixlab::decimateMinMax(forAxis(c.points), buckets);
        m_offScale.erase(s);
        if (!c.steady || c.style != Style::Faint || c.steady->empty()) continue;
        // What lies outside the steady range, from the full data: decimation keeps
        // extremes but not their count.
        OffScale o;
        o.warmup = c.steady->warmup;
        auto farther = [&](double &extreme, double y) {
            const double d = y > c.steady->hi ? y - c.steady->hi : c.steady->lo - y;
            const double e = std::isnan(extreme)      ? -k_inf
                             : extreme > c.steady->hi ? extreme - c.steady->hi
                                                      : c.steady->lo - extreme;
            if (d > e) extreme = y;
        };
        for (qsizetype k = 0; k < c.points.size(); ++k) {
            const QPointF &p = c.points[k];
            if (!std::isfinite(p.y())) continue;
            if (k < o.warmup) {
                o.warmupX = p.x();
                farther(o.warmupExtreme, p.y());
                o.points.append(p);
            } else if (!c.steady->contains(p.y())) {
                ++o.spikes;
                farther(o.spikeExtreme, p.y());
                o.points.append(p);
            }
        }
        o.points = mixlab::decimateMinMax(o.points, buckets);
        if (o.warmup > 0 || o.spikes > 0) m_offScale[s] = std::move(o);
    }
    if (!sameShape || relabel) updateLegendEntries();
}

void MetricChart::removeRun(int runId)
{
    auto it = m_runs.find(runId);
    if (it == m_runs.end()) return;
    for (QXYSeries *s : std::as_const(it->second.series)) {
        m_pending.erase(s);
        m_offScale.erase(s);
        chart()->removeSeries(s);
        delete s;
    }
    m_runs.erase(it);
    updateLegendEntries();
}

std::vector<int> MetricChart::runIds() const
{
    std::vector<int> ids;
    for (const auto &[id, entry] : m_runs) ids.push_back(id);
    return ids;
}

QList<QXYSeries *> MetricChart::runSeries(int runId) const
{
    auto it = m_runs.find(runId);
    return it == m_runs.end() ? QList<QXYSeries *>{} : it->second.series;
}

void MetricChart::updateLegendEntries()
{
    std::vector<ChartLegend::Entry> entries;
    for (const auto &[id, entry] : m_runs)
        if (std::find(entry.inLegend.begin(), entry.inLegend.end(), true) != entry.inLegend.end())
            entries.push_back({entry.label, entry.toolTip, entry.color});
    m_legend->setEntries(std::move(entries));
    layOutLegend(chart()->size());
}

QString MetricChart::keyText() const
{
    if (m_note.isEmpty()) return m_key;
    return m_key.isEmpty() ? m_note : m_key + QStringLiteral("; ") + m_note;
}

// The legend fills the bottom margin; the plot and axes take what is left.
void MetricChart::layOutLegend(const QSizeF &chartSize)
{
    const qreal width = chartSize.width() - k_margins.left() - k_margins.right();
    const qreal height = m_legend->layOut(width);
    m_legend->setPos(k_margins.left(), chartSize.height() - k_margins.bottom() - height);
    const int bottom = k_margins.bottom() + (height > 0 ? int(std::ceil(height)) + k_legendGap : 0);
    if (chart()->margins().bottom() != bottom) {
        QMargins m = k_margins;
        m.setBottom(bottom);
        chart()->setMargins(m);
    }
}

void MetricChart::fitAxes()
{
    // What every series will show: its pending points, else those it has.
    const auto all = chart()->series();
    std::map<const QXYSeries *, const mixlab::SteadyRange *> steadyOf;
    for (const auto &[id, entry] : m_runs)
        for (qsizetype i = 0; i < entry.series.size(); ++i)
            if (const auto &st = entry.steady[std::size_t(i)]; st && !st->empty())
                steadyOf[entry.series[i]] = &*st;
    std::vector<QList<QPointF>> next;
    next.reserve(std::size_t(all.size()));
    double xmin = k_inf, xmax = -k_inf, ymin = k_inf, ymax = -k_inf;
    for (QAbstractSeries *as : all) {
        auto *s = static_cast<QXYSeries *>(as);
        auto it = m_pending.find(s);
        next.push_back(it != m_pending.end() ? it->second : s->points());
        for (const QPointF &p : next.back()) {
            xmin = std::min(xmin, p.x());
            xmax = std::max(xmax, p.x());
        }
        // A steady-scaled curve asks for its steady span, not for its warm-up.
        if (auto st = steadyOf.find(s); st != steadyOf.end()) {
            const double lo = m_logY && st->second->lo <= 0 ? k_inf : st->second->lo;
            ymin = std::min(ymin, lo);
            ymax = std::max(ymax, st->second->hi);
            continue;
        }
        for (const QPointF &p : next.back()) {
            ymin = std::min(ymin, p.y());
            ymax = std::max(ymax, p.y());
        }
    }
    const bool any = xmin <= xmax && ymin <= ymax;

    // x: from 0 (or the data's minimum when below) to the last point, round ticks.
    double xlo = xmin <= xmax ? std::min(0.0, xmin) : 0.0;
    double xhi = xmin <= xmax ? xmax : 1.0;
    if (!(xhi > xlo)) xhi = xlo + 1.0;
    auto *x = static_cast<QValueAxis *>(m_xAxis);
    const double plotWidth = chart()->plotArea().width();
    const double xstep = xTickStep(xlo, xhi, plotWidth, QFontMetricsF(x->labelsFont()));
    // A few pixels beyond the first and last step, so a marker there (step 1 skipped,
    // the last evaluation) shows whole instead of half under the axis.
    if (plotWidth > 2 * k_edgePixels) {
        const double pad = (xhi - xlo) * k_edgePixels / (plotWidth - 2 * k_edgePixels);
        xlo -= pad;
        xhi += pad;
    }
    const double plotHeight = chart()->plotArea().height();

    double ylo = 0, yhi = 1, ystep = 1; // ystep: the tick interval, or the log base
    std::vector<int> yTicks;
    if (m_logY && m_powersOfTwo) {
        // Exponents of 2, half a power of padding so no curve lies on the plot's edge.
        int elo = any ? int(std::floor(ymin + 1e-9)) : 0;
        int ehi = any ? int(std::ceil(ymax - 1e-9)) : 16;
        if (ehi - elo < 2) {
            --elo;
            ++ehi;
        }
        ylo = elo - 0.5;
        yhi = ehi + 0.5;
        std::vector<int> wanted;
        for (const auto &[id, entry] : m_runs)
            for (qsizetype i = 0; i < entry.series.size(); ++i)
                if (entry.styles[std::size_t(i)] == Style::Solid) {
                    const QList<QPointF> &pts = next[std::size_t(all.indexOf(entry.series[i]))];
                    if (!pts.isEmpty()) wanted.push_back(int(std::lround(pts.back().y())));
                }
        if (any) {
            wanted.push_back(int(std::lround(ymax)));
            wanted.push_back(int(std::lround(ymin)));
        }
        const int maxLabels = plotHeight > 0 ? int(plotHeight / k_labelPitch) : 5;
        yTicks = mixlab::powerOfTwoTicks(elo, ehi, maxLabels, wanted);
    } else if (m_logY) {
        const double lo = any ? ymin : 1.0, hi = any ? ymax : 10.0;
        double elo = std::floor(std::log10(lo) + 1e-9);
        double ehi = std::ceil(std::log10(hi) - 1e-9);
        if (ehi <= elo) ehi = elo + 1;
        // A label per power of ten until they would not fit (Qt Charts then elides every
        // label to "..."): a perplexity from 10^5 down to 5 on a short chart gets a label
        // every second or third decade, the range widened to whole steps of that base.
        const int maxLabels = plotHeight > 0 ? std::max(2, int(plotHeight / k_labelPitch)) : 5;
        const int decadesPerLabel =
            std::max(1, int(std::ceil((ehi - elo) / double(maxLabels - 1) - 1e-9)));
        elo = std::floor(elo / decadesPerLabel) * decadesPerLabel;
        ehi = std::ceil(ehi / decadesPerLabel) * decadesPerLabel;
        ystep = std::pow(10.0, decadesPerLabel);
        // Just outside the powers, so rounding in the axis cannot drop their labels.
        ylo = std::pow(10.0, elo) * (1 - 1e-9);
        yhi = std::pow(10.0, ehi) * (1 + 1e-9);
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
            if (nonNegative) lo = std::max(lo, 0.0);
        }
        // Qt Charts elides every y label once they would overlap, so a short chart
        // gets fewer ticks: one per ~32 px of plot height, 2 to 5.
        const int ticks = plotHeight > 0 ? std::clamp(int(plotHeight / 32.0), 2, 5) : 5;
        ystep = niceStep(hi - lo, ticks);
        ylo = std::floor(lo / ystep + 1e-9) * ystep;
        yhi = std::ceil(hi / ystep - 1e-9) * ystep;
        if (yhi > m_yCeiling && ymax <= m_yCeiling) yhi = m_yCeiling;
    }

    bool same = x->min() == xlo && x->max() == xhi && x->tickInterval() == xstep;
    if (m_logY && m_powersOfTwo) {
        const auto *y = static_cast<QCategoryAxis *>(m_yAxis);
        same = same && y->min() == ylo && y->max() == yhi && yTicks == m_yTicks;
    } else if (m_logY) {
        const auto *y = static_cast<QLogValueAxis *>(m_yAxis);
        same = same && y->min() == ylo && y->max() == yhi && y->base() == ystep;
    } else {
        const auto *y = static_cast<QValueAxis *>(m_yAxis);
        same = same && y->min() == ylo && y->max() == yhi && y->tickInterval() == ystep;
    }
    updateMarksAndNote(ylo, yhi);
    if (same) {
        for (auto &[s, points] : m_pending) s->replace(points);
        m_pending.clear();
        return;
    }

    // Every series lays itself out again (a costly path stroke) on each axis change and
    // on each replace. Emptied first, they do it once, on the replace, instead of three
    // times per redraw.
    for (QAbstractSeries *as : all) {
        auto *s = static_cast<QXYSeries *>(as);
        if (s->count() > 0) s->clear();
    }
    setLinearTicks(x, xlo, xhi, xstep);
    if (m_logY && m_powersOfTwo) {
        auto *y = static_cast<QCategoryAxis *>(m_yAxis);
        for (const QString &label : y->categoriesLabels()) y->remove(label);
        y->setStartValue(ylo);
        const bool asNumbers = powersAsNumbers(yTicks);
        for (int e : yTicks) y->append(powerOfTwoLabel(e, asNumbers), e);
        y->setRange(ylo, yhi);
        m_yTicks = yTicks;
    } else if (m_logY) {
        auto *y = static_cast<QLogValueAxis *>(m_yAxis);
        y->setBase(ystep);
        y->setMinorTickCount(8);
        y->setRange(ylo, yhi);
    } else {
        setLinearTicks(static_cast<QValueAxis *>(m_yAxis), ylo, yhi, ystep);
    }
    for (qsizetype i = 0; i < all.size(); ++i)
        static_cast<QXYSeries *>(all[i])->replace(next[std::size_t(i)]);
    m_pending.clear();
}

// Marks on the raw points of steady-scaled curves that are warm-up or off the axis, and
// the key's note on them.
void MetricChart::updateMarksAndNote(double ylo, double yhi)
{
    std::vector<PlotOverlay::Mark> marks;
    qsizetype warmup = 0, spikes = 0;
    double warmMax = -k_inf, warmMin = k_inf, spikeMax = -k_inf, spikeMin = k_inf;
    for (const auto &[id, entry] : m_runs)
        for (QXYSeries *s : entry.series) {
            auto o = m_offScale.find(s);
            if (o == m_offScale.end()) continue;
            const OffScale &off = o->second;
            for (const QPointF &pt : off.points)
                if (pt.x() <= off.warmupX || pt.y() < ylo || pt.y() > yhi)
                    marks.push_back({pt, entry.color});
            warmup = std::max(warmup, off.warmup);
            spikes += off.spikes;
            if (!std::isnan(off.warmupExtreme)) {
                warmMax = std::max(warmMax, off.warmupExtreme);
                warmMin = std::min(warmMin, off.warmupExtreme);
            }
            if (!std::isnan(off.spikeExtreme)) {
                spikeMax = std::max(spikeMax, off.spikeExtreme);
                spikeMin = std::min(spikeMin, off.spikeExtreme);
            }
        }
    m_overlay->setMarks(std::move(marks));

    QStringList notes;
    const QString unit = m_yTitle == QLatin1String("%") ? m_yTitle : QStringLiteral(" ") + m_yTitle;
    if (warmup > 0) {
        const bool above = warmMax > yhi, below = warmMin < ylo;
        const double shown = above ? warmMax : below ? warmMin : warmMax;
        const QString steps = warmup == 1 ? tr("first step") : tr("first %1 steps").arg(warmup);
        const QString what = tr("warm-up (%1): %2%3").arg(steps, noteValue(shown), unit);
        notes << (above   ? QStringLiteral("▲ ") + tr("%1, off scale").arg(what)
                  : below ? QStringLiteral("▼ ") + tr("%1, off scale").arg(what)
                          : QStringLiteral("○ ") + tr("%1, not smoothed").arg(what));
    }
    if (spikes > 0) {
        const bool above = spikeMax > yhi;
        notes << QStringLiteral("%1 ").arg(above ? QStringLiteral("▲") : QStringLiteral("▼")) +
                     (spikes == 1 ? tr("1 later step off scale (%1%2)")
                                  : tr("%1 later steps off scale (%2%3)").arg(spikes))
                         .arg(noteValue(above ? spikeMax : spikeMin), unit);
    }
    const QString note = notes.join(QStringLiteral("; "));
    if (note != m_note) {
        m_note = note;
        m_legend->setKey(keyText());
        layOutLegend(chart()->size());
    }
}

int MetricChart::pixelBuckets() const
{
    const double plot = chart()->plotArea().width();
    // Before the first layout the plot area is empty; the view's width bounds it.
    const int w = plot >= 16 && plot <= width() ? int(plot) : width();
    return std::max(w, 16);
}

void MetricChart::renderInto(QPainter *painter, const QRectF &target)
{
    QChart *c = chart();
    const QRectF old = c->geometry();
    const std::optional<double> crosshair = m_overlay->crosshairX();
    const PlotOverlay::Readout readout = m_overlay->readout();
    m_overlay->clearCrosshair();
    // Laid out at the target size, legend and axis ticks too, the file shows what the
    // window would at that size, with crisp text and lines; the view's own layout is
    // restored before anything repaints.
    auto layOutAt = [this, c](const QRectF &rect) {
        layOutLegend(rect.size());
        c->setGeometry(rect);
        m_overlay->chartResized();
        fitAxes();
        // Axis changes lay the chart out at the next event-loop turn (until then the
        // labels are those of the tick mode set in passing); the file is drawn now.
        if (QGraphicsLayout *layout = c->layout()) {
            layout->invalidate();
            layout->activate();
        }
    };
    layOutAt(QRectF(old.topLeft(), target.size()));
    scene()->render(painter, target, QRectF(old.topLeft(), target.size()), Qt::IgnoreAspectRatio);
    layOutAt(old);
    if (crosshair) m_overlay->setCrosshair(*crosshair, readout);
}

void MetricChart::resizeEvent(QResizeEvent *event)
{
    // Margins first: the chart lays out once, at the new size, with the legend's room.
    layOutLegend(QSizeF(event->size()));
    QChartView::resizeEvent(event);
    layOutLegend(chart()->size());
    m_overlay->chartResized();
    if (event->oldSize().height() != event->size().height())
        fitAxes(); // the y tick count follows the plot's height
    const int buckets = pixelBuckets();
    // Small changes do not change what decimation keeps enough to be worth a redraw.
    if (std::abs(buckets - m_lastBuckets) * 10 > std::max(m_lastBuckets, 1)) {
        m_lastBuckets = buckets;
        emit bucketsChanged();
    }
}

void MetricChart::mouseMoveEvent(QMouseEvent *event)
{
    QChartView::mouseMoveEvent(event);
    const QPointF at = chart()->mapFromScene(mapToScene(event->position().toPoint()));
    const auto all = chart()->series();
    if (!m_readoutSource || all.isEmpty() || !chart()->plotArea().contains(at)) {
        m_overlay->clearCrosshair();
        return;
    }
    const double x = chart()->mapToValue(at, all.front()).x();
    m_overlay->setCrosshair(x, m_readoutSource(x));
}

void MetricChart::leaveEvent(QEvent *event)
{
    m_overlay->clearCrosshair();
    QChartView::leaveEvent(event);
}
