// The shares chart's painting and hover (shareschart.h).
#include "numerics/shareschart.h"

#include "numerics/bandoverlay.h"
#include "numerics/hovertip.h"
#include "numerics/numericsheatmap.h"

#include "mixlab/numerics_summary.h"

#include <QFontMetricsF>
#include <QHelpEvent>
#include <QPainter>
#include <QPainterPath>
#include <QToolTip>

#include <algorithm>
#include <cmath>
#include <functional>
#include <utility>
#include <vector>

namespace {

bool isUpdates(const NumericsGrid &g) { return g.kind == mixlab::TensorKind::Updates; }

QString percent(double share) { return QString::fromStdString(mixlab::share_text(share)); }

} // namespace

double sharesChartTop(const NumericsGrid &grid)
{
    double top = 0;
    for (const NumericsColumn &c : grid.columns) {
        if (!c.present) continue;
        top = std::max({top, c.overflow, c.flush, c.lost.value_or(0)});
    }
    // 0.1%, 0.2%, 0.5%, 1%, ... 100%.
    for (double bound : {0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5})
        if (top <= bound) return bound;
    return 1.0;
}

void paintSharesChart(QPainter *painter, const QRectF &area, const NumericsGrid &grid)
{
    const QRectF plot = numericsPlotRect(area, false);
    const int n = int(grid.columns.size());
    if (n == 0 || plot.width() < 4 || plot.height() < 4) return;
    const double top = sharesChartTop(grid);
    const double colW = plot.width() / n;
    const auto y = [&](double share) { return plot.bottom() - share / top * plot.height(); };

    painter->save();
    painter->fillRect(plot, Qt::white);
    painter->setPen(QColor(0xbb, 0xbb, 0xbb));
    painter->drawRect(plot);
    QFont font = painter->font();
    font.setPointSizeF(std::max(6.5, font.pointSizeF() * 0.8));
    painter->setFont(font);
    const QFontMetricsF fm(font);
    painter->setPen(QColor(0x44, 0x44, 0x44));
    painter->drawText(QRectF(area.left(), plot.top() - 2,
                             numericsPlotRect(area, false).left() - area.left() - 4, fm.height()),
                      Qt::AlignRight | Qt::AlignTop, QStringLiteral("%1%").arg(top * 100));
    painter->drawText(QRectF(area.left(), plot.bottom() - fm.height() + 2,
                             plot.left() - area.left() - 4, fm.height()),
                      Qt::AlignRight | Qt::AlignBottom, QStringLiteral("0"));

    const auto line =
        [&](const QColor &colour,
            const std::function<std::optional<double>(const NumericsColumn &)> &valueOf) {
            QPainterPath path;
            bool open = false;
            for (int i = 0; i < n; ++i) {
                const NumericsColumn &c = grid.columns[std::size_t(i)];
                const std::optional<double> v = c.present ? valueOf(c) : std::nullopt;
                if (!v) {
                    open = false;
                    continue;
                }
                const QPointF p(plot.left() + (i + 0.5) * colW, y(std::min(*v, top)));
                if (open)
                    path.lineTo(p);
                else
                    path.moveTo(p);
                open = true;
                if (n == 1) path.addEllipse(p, 2, 2); // one sample: a dot, not an invisible line
            }
            painter->setPen(QPen(colour, 1.8));
            painter->setBrush(Qt::NoBrush);
            painter->drawPath(path);
        };
    painter->setRenderHint(QPainter::Antialiasing);
    // Which line is which, inside the plot's top right (the lines run along the bottom
    // while the shares are small).
    std::vector<std::pair<QColor, QString>> keys;
    if (isUpdates(grid)) {
        line(k_lostColor, [](const NumericsColumn &c) { return c.lost; });
        keys = {{k_lostColor, SharesChart::tr("lost updates")}};
    } else {
        line(k_overflowColor, [](const NumericsColumn &c) { return std::optional(c.overflow); });
        line(k_flushColor, [](const NumericsColumn &c) { return std::optional(c.flush); });
        keys = {{k_overflowColor, SharesChart::tr("overflow")},
                {k_flushColor, SharesChart::tr("flush")}};
    }
    double right = plot.right() - 4;
    for (auto it = keys.rbegin(); it != keys.rend(); ++it) {
        const double tw = fm.horizontalAdvance(it->second);
        painter->setPen(it->first);
        painter->drawText(QRectF(right - tw, plot.top() + 1, tw + 1, fm.height()),
                          Qt::AlignLeft | Qt::AlignTop, it->second);
        right -= tw + 8;
    }
    painter->restore();
}

SharesChart::SharesChart(QWidget *parent) : QWidget(parent)
{
    setMouseTracking(true);
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
}

void SharesChart::setGrid(const NumericsGrid &grid)
{
    m_grid = grid;
    update();
}

std::optional<int> SharesChart::columnAt(const QPointF &pos) const
{
    const QRectF plot = numericsPlotRect(QRectF(rect()), false);
    const int n = int(m_grid.columns.size());
    if (n == 0 || pos.x() < plot.left() || pos.x() >= plot.right()) return std::nullopt;
    return std::clamp(int((pos.x() - plot.left()) / plot.width() * n), 0, n - 1);
}

QString SharesChart::toolTipAt(const QPointF &pos) const
{
    const std::optional<int> i = columnAt(pos);
    if (!i) return QString();
    const NumericsColumn &c = m_grid.columns[std::size_t(*i)];
    const QString format = numberFormatText(m_grid.format);
    if (!c.present) return tr("step %1: no %2").arg(c.step).arg(tensorKindText(m_grid.kind));
    if (isUpdates(m_grid))
        return c.lost ? tr("step %1: %2 weights would lose %3 of the updates")
                            .arg(c.step)
                            .arg(format, percent(*c.lost))
                      : tr("step %1: no update ran").arg(c.step);
    return tr("step %1: %2 overflow %3, flush %4")
        .arg(c.step)
        .arg(format, percent(c.overflow), percent(c.flush));
}

void SharesChart::paintEvent(QPaintEvent *)
{
    QPainter painter(this);
    painter.fillRect(rect(), palette().window());
    paintSharesChart(&painter, QRectF(rect()), m_grid);
}

bool SharesChart::event(QEvent *event)
{
    if (answerHover(this, event, [this](QPoint at) { return toolTipAt(at); })) return true;
    return QWidget::event(event);
}
