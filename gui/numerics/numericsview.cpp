// The Numerics dock (numericsview.h): store signals -> coalesced rebuild -> per-run grids
// -> one heatmap and shares chart per layer and run.
#include "numerics/numericsview.h"

#include "charts/paintexport.h"
#include "common/filedialogs.h"
#include "common/usermessages.h"
#include "numerics/bandoverlay.h"
#include "numerics/colormap.h"
#include "numerics/numericsheatmap.h"
#include "numerics/shareschart.h"
#include "runs/runstore.h"

#include <QComboBox>
#include <QFileInfo>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QPainter>
#include <QPixmap>
#include <QPushButton>
#include <QRegularExpression>
#include <QScrollArea>
#include <QScrollBar>
#include <QSignalBlocker>
#include <QStackedWidget>
#include <QTimer>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

namespace {

// Samples come every numerics_every steps: a quarter second's delay costs nothing and
// merges a compare's runs, which report the same step one after the other.
constexpr int k_refreshMs = 250;
// Heights of one layer's plots, on screen and in the export.
constexpr int k_heatmapHeight = 170, k_chartHeight = 64, k_titleHeight = 20;
constexpr int k_exportColumnWidth = 440;

QString powerText(int e) { return QStringLiteral("2^%1").arg(e); }

// The colour scale as a bar, for the controls' row: what a cell's colour means.
QPixmap colourBar(int width, int height)
{
    QImage image(width, 1, QImage::Format_RGB32);
    for (int x = 0; x < width; ++x)
        image.setPixel(x, 0, viridis(double(x) / double(width - 1)).rgb());
    return QPixmap::fromImage(image.scaled(width, height));
}

} // namespace

NumericsView::NumericsView(RunStore *store, QWidget *parent) : QWidget(parent), m_store(store)
{
    m_kindCombo = new QComboBox(this);
    m_kindCombo->setObjectName("numericsKindCombo");
    for (auto k : {mixlab::TensorKind::Weights, mixlab::TensorKind::Activations,
                   mixlab::TensorKind::Gradients, mixlab::TensorKind::Updates})
        m_kindCombo->addItem(tensorKindText(k), int(k));
    m_kindCombo->setCurrentIndex(m_kindCombo->findData(int(m_kind)));
    m_kindCombo->setToolTip(tr("Weights as the forward pass read them; activations (each "
                               "layer's output) as stored; gradients as applied (unscaled); "
                               "updates against the weight they went into"));
    m_formatCombo = new QComboBox(this);
    m_formatCombo->setObjectName("numericsFormatCombo");
    for (mixlab::NumberFormat f : mixlab::k_number_formats)
        m_formatCombo->addItem(numberFormatText(f), int(f));
    m_formatCombo->setToolTip(tr("The format whose range is drawn over the values, and whose "
                                 "overflow and flush shares the charts show"));
    m_export = new QPushButton(tr("Export..."), this);
    m_export->setObjectName("numericsExportButton");
    m_export->setToolTip(tr("Save what the dock shows as PNG, SVG or PDF"));

    auto *bar = new QHBoxLayout;
    auto *showLabel = new QLabel(tr("&Show"), this);
    showLabel->setBuddy(m_kindCombo);
    auto *formatLabel = new QLabel(tr("&Format"), this);
    formatLabel->setBuddy(m_formatCombo);
    bar->addWidget(showLabel);
    bar->addWidget(m_kindCombo);
    bar->addWidget(formatLabel);
    bar->addWidget(m_formatCombo);
    bar->addStretch(1);
    bar->addWidget(m_export);
    // The colour key on a row of its own: beside the controls it made the dock wider than
    // a 1280-pixel window leaves it next to the charts.
    auto *key = new QHBoxLayout;
    auto *scale = new QLabel(this);
    scale->setPixmap(colourBar(110, 12));
    scale->setToolTip(tr("Colour: the share of a layer's values in a binade, log scale"));
    key->addWidget(new QLabel(tr("Share of a layer's values:"), this));
    key->addWidget(new QLabel(QStringLiteral("%1%").arg(k_shareColorFloor * 100), this));
    key->addWidget(scale);
    key->addWidget(new QLabel(QStringLiteral("100%"), this));
    key->addStretch(1);

    m_legend = new QLabel(this);
    m_legend->setObjectName("numericsLegend");
    m_legend->setWordWrap(true);
    m_legend->setTextFormat(Qt::RichText);

    m_empty = new QLabel(this);
    m_empty->setObjectName("numericsEmpty");
    m_empty->setWordWrap(true);
    m_empty->setAlignment(Qt::AlignCenter);
    m_empty->setMargin(24);
    m_empty->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_scroll = new QScrollArea(this);
    m_scroll->setObjectName("numericsScroll");
    m_scroll->setWidgetResizable(true);
    m_scroll->setFrameShape(QFrame::NoFrame);
    m_stack = new QStackedWidget(this);
    m_stack->addWidget(m_empty);
    m_stack->addWidget(m_scroll);

    auto *layout = new QVBoxLayout(this);
    layout->addLayout(bar);
    layout->addLayout(key);
    layout->addWidget(m_legend);
    layout->addWidget(m_stack, 1);

    m_refresh = new QTimer(this);
    m_refresh->setSingleShot(true);
    m_refresh->setInterval(k_refreshMs);
    connect(m_refresh, &QTimer::timeout, this, [this] {
        if (isVisible())
            rebuild();
        else
            m_stale = true;
    });
    connect(m_kindCombo, &QComboBox::currentIndexChanged, this,
            [this] { setKind(mixlab::TensorKind(m_kindCombo->currentData().toInt())); });
    connect(m_formatCombo, &QComboBox::currentIndexChanged, this,
            [this] { setFormat(mixlab::NumberFormat(m_formatCombo->currentData().toInt())); });
    connect(m_export, &QPushButton::clicked, this, &NumericsView::exportDialog);

    const auto ifShown = [this](int id) {
        if (std::find(m_shown.begin(), m_shown.end(), id) != m_shown.end()) scheduleRefresh();
    };
    connect(m_store, &RunStore::numericsAppended, this, ifShown);
    connect(m_store, &RunStore::runChanged, this, ifShown);
    // A new run of the shown group joins the columns.
    connect(m_store, &RunStore::runAdded, this, [this](int id) {
        const RunRecord *r = m_store->run(id);
        const RunRecord *shown = m_store->run(m_run);
        if (r && shown && r->group == shown->group) scheduleRefresh();
    });
    connect(m_store, &RunStore::runRemoved, this, [this](int id) {
        if (id == m_run) m_run = 0;
        scheduleRefresh();
    });
    updateLegend();
    rebuild();
}

void NumericsView::setRun(int id)
{
    if (id == m_run) return;
    m_run = id;
    followPolicy();
    rebuild();
}

void NumericsView::setKind(mixlab::TensorKind kind)
{
    {
        const QSignalBlocker b(m_kindCombo);
        m_kindCombo->setCurrentIndex(m_kindCombo->findData(int(kind)));
    }
    if (kind == m_kind) return;
    m_kind = kind;
    followPolicy();
    updateLegend();
    rebuild();
}

void NumericsView::setFormat(mixlab::NumberFormat format)
{
    m_formatPicked = true;
    if (format == m_format) return;
    showFormat(format);
    rebuild();
}

void NumericsView::showFormat(mixlab::NumberFormat format)
{
    {
        const QSignalBlocker b(m_formatCombo);
        m_formatCombo->setCurrentIndex(m_formatCombo->findData(int(format)));
    }
    m_format = format;
    updateLegend();
}

void NumericsView::followPolicy()
{
    if (m_formatPicked) return;
    const RunRecord *selected = m_store->run(m_run);
    if (!selected) return;
    // The runs shown side by side share one format: the narrowest policy's among them
    // (fp32 beside mixed_fp8 reads against E4M3 / E5M2, beside mixed_bf16 against bf16).
    const auto rank = [](mixlab::Policy p) {
        switch (p) {
        case mixlab::Policy::MixedFP8: return 3;
        case mixlab::Policy::MixedFP16:
        case mixlab::Policy::FP16: return 2;
        case mixlab::Policy::MixedBF16: return 1;
        case mixlab::Policy::FP32:
        case mixlab::Policy::TF32: break;
        }
        return 0;
    };
    mixlab::Policy narrowest = selected->config.policy;
    for (int id : m_store->groupRuns(selected->group))
        if (const RunRecord *r = m_store->run(id); r && rank(r->config.policy) > rank(narrowest))
            narrowest = r->config.policy;
    showFormat(policyFormat(narrowest, m_kind));
}

QString NumericsView::emptyText() const
{
    return m_stack->currentWidget() == m_empty ? m_empty->text() : QString();
}

void NumericsView::refreshNow()
{
    m_refresh->stop();
    rebuild();
}

void NumericsView::showEvent(QShowEvent *event)
{
    QWidget::showEvent(event);
    if (m_stale) rebuild();
}

void NumericsView::scheduleRefresh()
{
    if (!m_refresh->isActive()) m_refresh->start();
}

QString NumericsView::missingReason(const RunRecord &run)
{
    if (!run.numerics.empty()) return QString();
    const int every = run.config.numerics_every;
    if (every <= 0)
        return tr("Numerics were off for %1. Set \"Numerics every\" in the run settings to a "
                  "number of steps and start the run again: every that many steps the run "
                  "records where each layer's values sit on the number line.")
            .arg(run.name);
    switch (run.status) {
    case RunRecord::Status::Queued:
    case RunRecord::Status::Running:
        return tr("%1 samples its numerics every %2 steps: the first sample comes after step %2.")
            .arg(run.name)
            .arg(every);
    case RunRecord::Status::Failed:
        return tr("%1 failed before its first numerics sample (every %2 steps).")
            .arg(run.name)
            .arg(every);
    case RunRecord::Status::Finished:
    case RunRecord::Status::Stopped: break;
    }
    return tr("%1 ended at step %2, before its first numerics sample at step %3. Set "
              "\"Numerics every\" lower, or train longer.")
        .arg(run.name)
        .arg(run.steps.empty() ? 0 : run.steps.back().step)
        .arg(every);
}

void NumericsView::updateLegend()
{
    const mixlab::FormatLimits &l = mixlab::format_limits(m_format);
    const FormatBand b = formatBand(m_format);
    const QString f = numberFormatText(m_format);
    const auto colour = [](const QColor &c, const QString &text) {
        return QStringLiteral("<span style=\"color:%1\"><b>&#9473;</b></span> %2")
            .arg(c.name(), text);
    };
    QString text;
    if (m_kind == mixlab::TensorKind::Updates) {
        text = tr("y: how many binades each update sits below (negative) or above its weight. "
                  "%1 %2 weights (%3 fraction bits) lose the updates below the line: d &le; %4.")
                   .arg(colour(k_lostColor, tr("lost:")), f)
                   .arg(l.mantissa_bits)
                   .arg(lostUpdateTop(m_format));
    } else if (isFp8(m_format)) {
        // fp8 is only used scaled: its lines are told from the top of the band, which sits
        // at each sample's largest value (numericsgrid's tensorShift).
        text = tr("y: binade (values in 2^e .. 2^(e+1)). %1 is used with a scale per tensor, "
                  "so its band is drawn as scaling by the tensor's amax puts it: %2 above "
                  "each sample's largest value, normal %3 binades below it, subnormal "
                  "(shaded) %4 below, %5 %6 and more below (mixed_fp8 scales by the largest "
                  "of the last steps' amaxes, so its band can sit a little higher).")
                   .arg(f, colour(k_overflowColor, tr("overflow")))
                   .arg(b.overflowAbove - b.normalFrom)
                   .arg(b.overflowAbove - b.subnormalFrom)
                   .arg(colour(k_flushColor, tr("flush to zero")))
                   .arg(b.overflowAbove - b.flushAtOrBelow);
    } else {
        text =
            tr("y: binade (values in 2^e .. 2^(e+1)). %1 above %2, normal from %3, "
               "subnormal (shaded) from %4, %5 at and below %6.")
                .arg(colour(k_overflowColor, tr("%1 overflows").arg(f)), powerText(b.overflowAbove),
                     powerText(b.normalFrom), powerText(b.subnormalFrom),
                     colour(k_flushColor, tr("flush to zero")), powerText(b.flushAtOrBelow));
    }
    if (m_kind == mixlab::TensorKind::Gradients)
        text += QLatin1Char(' ') +
                tr("Gradients as applied (unscaled): where a run scales its loss, the band "
                   "sits log2(scale) binades lower at each step, where the scaled values "
                   "the format held were.");
    text +=
        QLatin1Char(' ') + tr("Colour: share of the layer's values, log scale from %1% to 100%.")
                               .arg(k_shareColorFloor * 100);
    m_legend->setText(text);
}

std::vector<QString> NumericsView::layerOrder() const
{
    std::vector<QString> order;
    for (const Column &c : m_columns)
        for (const NumericsGrid &g : c.grids)
            if (std::find(order.begin(), order.end(), g.path) == order.end())
                order.push_back(g.path);
    return order;
}

const NumericsGrid *NumericsView::gridOf(const Column &c, const QString &path) const
{
    for (const NumericsGrid &g : c.grids)
        if (g.path == path) return &g;
    return nullptr;
}

void NumericsView::rebuild()
{
    m_refresh->stop();
    m_stale = false;
    m_columns.clear();
    m_shown.clear();
    const RunRecord *selected = m_store->run(m_run);
    if (selected) m_shown = m_store->groupRuns(selected->group);
    for (int id : m_shown) {
        const RunRecord *r = m_store->run(id);
        if (!r) continue;
        Column c;
        c.runId = id;
        c.name = r->name;
        c.color = r->color;
        c.missing = missingReason(*r);
        c.grids = buildNumericsGrids(r->numerics, m_kind, m_format);
        if (c.missing.isEmpty() && c.grids.empty())
            c.missing = tr("%1's samples hold no %2 (no layer has them).")
                            .arg(r->name, tensorKindText(m_kind));
        m_columns.push_back(std::move(c));
    }

    const bool any = std::any_of(m_columns.begin(), m_columns.end(),
                                 [](const Column &c) { return !c.grids.empty(); });
    m_export->setEnabled(any);
    if (!any) {
        QStringList why;
        for (const Column &c : m_columns) why << c.missing;
        m_empty->setText(m_columns.empty()
                             ? tr("No run chosen. Start a run (numerics are sampled every "
                                  "\"Numerics every\" steps, set in the run settings) or pick one "
                                  "in the runs table.")
                             : why.join(QStringLiteral("\n\n")));
        m_stack->setCurrentWidget(m_empty);
        return;
    }

    const int scrollY = m_scroll->verticalScrollBar()->value();
    auto *content = new QWidget;
    auto *grid = new QGridLayout(content);
    grid->setHorizontalSpacing(12);
    grid->setVerticalSpacing(2);
    int col = 0;
    for (const Column &c : m_columns) {
        auto *head = new QLabel(QStringLiteral("<b style=\"color:%1\">&#9632;</b> <b>%2</b>")
                                    .arg(c.color.name(), c.name.toHtmlEscaped()),
                                content);
        grid->addWidget(head, 0, col++);
    }
    int row = 1;
    for (const QString &path : layerOrder()) {
        std::vector<const NumericsGrid *> side;
        for (const Column &c : m_columns) side.push_back(gridOf(c, path));
        const auto rows = displayRows(side);
        const NumericsGrid *first =
            *std::find_if(side.begin(), side.end(), [](const NumericsGrid *g) { return g; });
        auto *title = new QLabel(QStringLiteral("<b>%1</b> (%2)").arg(path, first->type), content);
        title->setObjectName("numericsLayerTitle");
        grid->addWidget(title, row++, 0, 1, int(m_columns.size()));
        for (std::size_t i = 0; i < m_columns.size(); ++i) {
            const NumericsGrid *g = side[i];
            if (!g || !rows) {
                auto *note = new QLabel(g ? tr("no values")
                                        : m_columns[i].missing.isEmpty()
                                            ? tr("no %1 in this layer").arg(tensorKindText(m_kind))
                                            : m_columns[i].missing,
                                        content);
                note->setWordWrap(true);
                note->setAlignment(Qt::AlignCenter);
                grid->addWidget(note, row, int(i));
                continue;
            }
            auto *cell = new QWidget(content);
            auto *v = new QVBoxLayout(cell);
            v->setContentsMargins(0, 0, 0, 6);
            v->setSpacing(0);
            auto *heatmap = new NumericsHeatmap(cell);
            heatmap->setObjectName(
                QStringLiteral("heatmap:%1:%2").arg(m_columns[i].runId).arg(path));
            heatmap->setMinimumHeight(k_heatmapHeight);
            heatmap->setGrid(*g, *rows);
            auto *chart = new SharesChart(cell);
            chart->setObjectName(QStringLiteral("shares:%1:%2").arg(m_columns[i].runId).arg(path));
            chart->setFixedHeight(k_chartHeight);
            chart->setGrid(*g);
            v->addWidget(heatmap, 1);
            v->addWidget(chart);
            grid->addWidget(cell, row, int(i));
        }
        ++row;
    }
    grid->setRowStretch(row, 1);
    for (int i = 0; i < int(m_columns.size()); ++i) grid->setColumnStretch(i, 1);
    delete m_scroll->takeWidget();
    m_scroll->setWidget(content);
    m_scroll->verticalScrollBar()->setValue(scrollY);
    m_stack->setCurrentWidget(m_scroll);
}

// The legend in plain words, for the export's header.
QString NumericsView::legendPlainText() const
{
    QString legend = m_legend->text();
    legend.remove(QRegularExpression(QStringLiteral("<[^>]*>")));
    legend.replace(QStringLiteral("&#9473;"), QStringLiteral("-"))
        .replace(QStringLiteral("&le;"), QStringLiteral("<="));
    return legend;
}

// The title line and the legend wrapped to the picture's width, in the widget's font.
double NumericsView::headerHeight(double width) const
{
    const QFontMetricsF fm(font());
    const QRectF legend = fm.boundingRect(QRectF(0, 0, width - 16, 1e6),
                                          Qt::TextWordWrap | Qt::AlignLeft, legendPlainText());
    return 4 + fm.height() + legend.height() + 8;
}

QSize NumericsView::exportSize() const
{
    const int layers = int(layerOrder().size());
    const int columns = std::max<int>(1, int(m_columns.size()));
    const int width = std::max(640, columns * k_exportColumnWidth);
    return QSize(width, int(std::ceil(headerHeight(width))) + k_titleHeight +
                            layers * (k_titleHeight + k_heatmapHeight + k_chartHeight + 8));
}

void NumericsView::render(QPainter *painter, const QSize &size) const
{
    painter->save();
    painter->setFont(font());
    const QFontMetricsF fm(font());
    const double w = double(size.width());
    // The header: what is shown, and the legend in plain words.
    painter->setPen(Qt::black);
    QString head = tr("%1, %2's band").arg(tensorKindText(m_kind), numberFormatText(m_format));
    painter->drawText(QRectF(8, 4, w - 16, fm.height()), Qt::AlignLeft, head);
    const double header = headerHeight(w);
    painter->drawText(QRectF(8, 4 + fm.height(), w - 16, header - fm.height()),
                      Qt::TextWordWrap | Qt::AlignLeft, legendPlainText());
    const int n = std::max<int>(1, int(m_columns.size()));
    const double cw = w / n;
    double y = header;
    for (int i = 0; i < int(m_columns.size()); ++i) {
        painter->setPen(m_columns[std::size_t(i)].color);
        painter->drawText(QRectF(cw * i + 8, y, cw - 16, k_titleHeight), Qt::AlignLeft,
                          m_columns[std::size_t(i)].name);
    }
    y += k_titleHeight;
    for (const QString &path : layerOrder()) {
        std::vector<const NumericsGrid *> side;
        for (const Column &c : m_columns) side.push_back(gridOf(c, path));
        const auto rows = displayRows(side);
        const NumericsGrid *first =
            *std::find_if(side.begin(), side.end(), [](const NumericsGrid *g) { return g; });
        painter->setPen(Qt::black);
        painter->drawText(QRectF(8, y, w - 16, k_titleHeight), Qt::AlignLeft,
                          QStringLiteral("%1 (%2)").arg(path, first->type));
        y += k_titleHeight;
        for (int i = 0; i < int(side.size()); ++i) {
            const QRectF cell(cw * i, y, cw, k_heatmapHeight);
            if (side[std::size_t(i)] && rows) {
                paintHeatmap(painter, cell, *side[std::size_t(i)], *rows);
                paintSharesChart(painter, QRectF(cw * i, y + k_heatmapHeight, cw, k_chartHeight),
                                 *side[std::size_t(i)]);
            } else {
                painter->setPen(Qt::darkGray);
                painter->drawText(cell, Qt::AlignCenter | Qt::TextWordWrap,
                                  tr("no %1").arg(tensorKindText(m_kind)));
            }
        }
        y += k_heatmapHeight + k_chartHeight + 8;
    }
    painter->restore();
}

bool NumericsView::exportTo(const QString &path, QString *error) const
{
    if (layerOrder().empty()) {
        if (error) *error = tr("There are no numerics to export: %1").arg(m_empty->text());
        return false;
    }
    return exportPainted(
        path, exportSize(), tr("MixLab numerics"),
        [this](QPainter *painter, const QSize &size) { render(painter, size); }, error);
}

void NumericsView::exportDialog()
{
    QString filter;
    const QString stem = m_columns.empty()
                             ? QStringLiteral("numerics")
                             : fileStem(m_columns.front().name) + QStringLiteral("-numerics");
    QString path =
        askSaveFile(this, FileKind::Chart, tr("Export numerics"), stem + ".png",
                    tr("PNG image (*.png);;SVG drawing (*.svg);;PDF document (*.pdf)"), &filter);
    if (path.isEmpty()) return;
    if (QFileInfo(path).suffix().isEmpty())
        path += filter.contains(QLatin1String("svg"))   ? QStringLiteral(".svg")
                : filter.contains(QLatin1String("pdf")) ? QStringLiteral(".pdf")
                                                        : QStringLiteral(".png");
    QString error;
    if (!exportTo(path, &error)) {
        showUserError(this, tr("Export numerics"),
                      tr("Could not export to %1:\n%2").arg(path, error));
        return;
    }
    emit message(tr("Exported the numerics to %1").arg(path));
}
