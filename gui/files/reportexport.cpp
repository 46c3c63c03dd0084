// Report export: the core builds the HTML; the PDF splits it at its chart figures, lays
// out the text parts with QTextDocument and paints the charts with QSvgRenderer, page by
// page, in one QPainter on a QPdfWriter.
#include "files/reportexport.h"

#include "common/durationtext.h"
#include "analysis/runfacts_from_store.h"
#include "common/enginetext.h"
#include "runs/runstore.h"

#include "mixlab/ceilings.h"
#include "mixlab/explain.h"
#include "mixlab/model_spec.h"

#include <QAbstractTextDocumentLayout>
#include <QFileInfo>
#include <QImage>
#include <QPageLayout>
#include <QPageSize>
#include <QPainter>
#include <QPdfWriter>
#include <QRegularExpression>
#include <QSaveFile>
#include <QSvgRenderer>
#include <QTextBlock>
#include <QTextCursor>
#include <QTextDocument>
#include <QTextLayout>
#include <QTextTable>

#include <algorithm>
#include <functional>
#include <vector>

namespace {

void setError(QString *error, const QString &text)
{
    if (error) *error = text;
}

// A piece of the page in reading order: HTML text, or one chart's SVG with the heading
// that stood right before it (kept on the chart's page).
struct Part {
    bool chart = false;
    QString text;
    QString heading;
};

// Moves a heading that ends `text` into `heading`.
void takeTrailingHeading(QString &text, QString *heading)
{
    static const QRegularExpression trailing(QStringLiteral("<h[1-3]>[^<]*</h[1-3]>\\s*$"));
    const QRegularExpressionMatch m = trailing.match(text);
    if (!m.hasMatch()) return;
    *heading = m.captured(0);
    text.truncate(m.capturedStart());
}

// The page's <head> (for its <style>) and the body cut at every chart figure.
std::vector<Part> splitAtCharts(const QString &html, QString *head)
{
    static const QString open = QStringLiteral("<figure class=\"chart\">");
    static const QString close = QStringLiteral("</figure>");
    const qsizetype bodyAt = html.indexOf(QLatin1String("<body>"));
    *head = bodyAt >= 0 ? html.left(bodyAt) : QString();

    qsizetype pos = bodyAt >= 0 ? bodyAt + 6 : 0;
    std::vector<Part> parts;
    while (true) {
        const qsizetype start = html.indexOf(open, pos);
        if (start < 0) {
            parts.push_back({false, html.mid(pos), {}});
            break;
        }
        const qsizetype end = html.indexOf(close, start);
        if (end < 0) {
            parts.push_back({false, html.mid(pos), {}});
            break;
        }
        Part before{false, html.mid(pos, start - pos), {}};
        Part chart{true, html.mid(start + open.size(), end - start - open.size()).trimmed(), {}};
        takeTrailingHeading(before.text, &chart.heading);
        parts.push_back(before);
        parts.push_back(chart);
        pos = end + close.size();
    }
    return parts;
}

// Text parts cut before every <h2>: a section too wide for the page is fitted alone,
// the others keep their size.
std::vector<Part> splitAtSections(std::vector<Part> parts)
{
    static const QRegularExpression section(QStringLiteral("<h2[ >]"));
    std::vector<Part> out;
    for (Part &p : parts) {
        if (p.chart) {
            out.push_back(std::move(p));
            continue;
        }
        qsizetype from = 0;
        for (auto it = section.globalMatch(p.text); it.hasNext();) {
            const qsizetype at = it.next().capturedStart();
            if (at > from) out.push_back({false, p.text.mid(from, at - from), {}});
            from = at;
        }
        out.push_back({false, p.text.mid(from), {}});
    }
    return out;
}

// Document heights where a page may end: below every line of running text but a
// heading's, and above every table row and below every table, so a break never cuts a
// line or a row, nor parts a heading from what it heads.
std::vector<qreal> pageCuts(QTextDocument &doc)
{
    // Above a cell's text: its padding and the row's border (the report's cellpadding 3).
    constexpr qreal k_cellTop = 4;
    std::vector<qreal> cuts;
    QAbstractTextDocumentLayout *layout = doc.documentLayout();
    for (QTextBlock b = doc.begin(); b.isValid(); b = b.next()) {
        const QRectF box = layout->blockBoundingRect(b);
        const QTextCursor cursor(b);
        if (QTextTable *table = cursor.currentTable()) {
            const QTextTableCell cell = table->cellAt(cursor);
            if (cell.column() == 0 && cell.firstCursorPosition().block() == b) {
                cuts.push_back(box.top() - k_cellTop);
                cuts.push_back(layout->frameBoundingRect(table).bottom());
            }
            continue;
        }
        // Never right under a heading: it goes to the next page with its text.
        if (b.blockFormat().headingLevel() > 0) continue;
        const QTextLayout *lines = b.layout();
        if (!lines || lines->lineCount() == 0) {
            cuts.push_back(box.bottom());
            continue;
        }
        for (int i = 0; i < lines->lineCount(); ++i)
            cuts.push_back(box.top() + lines->lineAt(i).rect().bottom());
        cuts.push_back(box.bottom());
    }
    std::sort(cuts.begin(), cuts.end());
    return cuts;
}

// Paints parts onto pages, top to bottom, in layout units (96 per inch). The painter
// comes with the device's transform to layout units; nextPage() ends a page and readies
// the painter for the next, whose transform the pager sets again.
class PdfPager {
public:
    PdfPager(QPainter &painter, const QSizeF &page, std::function<void()> nextPage)
        : m_painter(painter), m_base(painter.transform()), m_nextPage(std::move(nextPage)),
          m_width(page.width()), m_height(page.height())
    {
        // Text lays out at 96 dpi whatever the screen says, so pages match on every host.
        m_dpiDevice = QImage(1, 1, QImage::Format_RGB32);
        m_dpiDevice.setDotsPerMeterX(qRound(96 / 0.0254));
        m_dpiDevice.setDotsPerMeterY(qRound(96 / 0.0254));
    }

    void addHtml(const QString &head, const QString &body)
    {
        QTextDocument doc;
        layOut(doc, head, body);
        if (doc.toPlainText().trimmed().isEmpty()) return;
        // Wider than the page (a table of long names, many columns): laid out at its own
        // width and drawn smaller, so nothing runs off the page's edge.
        qreal scale = 1;
        const qreal natural = doc.documentLayout()->documentSize().width();
        if (natural > m_width + 0.5) {
            scale = m_width / natural;
            doc.setTextWidth(natural);
        }
        // A document drops its first block's top margin; a section further down the page
        // keeps the space its heading asks for.
        if (m_y > 0) m_y = std::min(m_height, m_y + doc.begin().blockFormat().topMargin() * scale);
        const qreal total = doc.size().height();
        const std::vector<qreal> cuts = pageCuts(doc);
        qreal offset = 0; // in the document's units
        while (total - offset > 0.5) {
            const qreal room = (m_height - m_y) / scale;
            qreal end = total;
            if (total - offset > room) {
                // The last line bottom that still fits on this page.
                auto it = std::upper_bound(cuts.begin(), cuts.end(), offset + room);
                end = it == cuts.begin() ? offset : *std::prev(it);
                if (end <= offset + 0.5) {
                    if (m_y > 0) {
                        newPage();
                        continue;
                    }
                    end = offset + room; // a line taller than a page: cut it
                }
            }
            m_painter.save();
            m_painter.translate(0, m_y);
            m_painter.scale(scale, scale);
            m_painter.translate(0, -offset);
            doc.drawContents(
                &m_painter, QRectF(0, offset, natural > m_width ? natural : m_width, end - offset));
            m_painter.restore();
            m_y += (end - offset) * scale;
            offset = end;
            if (total - offset > 0.5) newPage();
        }
    }

    // The chart, and its heading when it has one, together on one page.
    bool addChart(const QString &head, const QString &heading, const QString &svg)
    {
        QSvgRenderer renderer(svg.toUtf8());
        if (!renderer.isValid()) return false;
        const QSizeF size = renderer.defaultSize();
        const qreal w = std::min<qreal>(m_width, size.width());
        const qreal h = size.width() > 0 ? w * size.height() / size.width() : 0;
        const qreal gap = 8;
        qreal headingHeight = 0;
        if (!heading.isEmpty()) {
            QTextDocument doc;
            layOut(doc, head, heading);
            headingHeight = doc.size().height();
        }
        if (m_y + headingHeight + h > m_height && m_y > 0) newPage();
        if (!heading.isEmpty()) addHtml(head, heading);
        // Clipped to its box as a browser clips inline SVG: a long run name in a legend
        // ends at the chart's edge, not in the page's margin.
        const QRectF box(0, m_y + gap / 2, w, h);
        m_painter.save();
        m_painter.setClipRect(box);
        renderer.render(&m_painter, box);
        m_painter.restore();
        m_y += h + gap;
        return true;
    }

private:
    void layOut(QTextDocument &doc, const QString &head, const QString &body)
    {
        doc.documentLayout()->setPaintDevice(&m_dpiDevice);
        doc.setDocumentMargin(0);
        doc.setUseDesignMetrics(true);
        doc.setHtml(head + QStringLiteral("<body>") + body + QStringLiteral("</body></html>"));
        doc.setTextWidth(m_width);
    }

    void newPage()
    {
        m_nextPage();
        m_painter.setTransform(m_base);
        m_y = 0;
    }

    QPainter &m_painter;
    QTransform m_base;
    std::function<void()> m_nextPage;
    qreal m_width = 0, m_height = 0, m_y = 0;
    QImage m_dpiDevice;
};

// A4 with 15 mm margins, as the PDF and its page images have it.
const QPageLayout k_reportPage(QPageSize(QPageSize::A4), QPageLayout::Portrait,
                               QMarginsF(15, 15, 15, 15), QPageLayout::Millimeter);

// The page's parts in order; false when a chart's SVG does not parse.
bool paintReport(const std::string &html, PdfPager &pager)
{
    QString head;
    const std::vector<Part> parts =
        splitAtSections(splitAtCharts(QString::fromStdString(html), &head));
    for (const Part &part : parts) {
        if (!part.chart)
            pager.addHtml(head, part.text);
        else if (!pager.addChart(head, part.heading, part.text))
            return false;
    }
    return true;
}

// The text area of a report page in layout units (96 per inch).
QSizeF reportTextArea() { return k_reportPage.paintRect(QPageLayout::Inch).size() * 96.0; }

} // namespace

std::vector<int> reportableGroups(const RunStore &store)
{
    std::vector<int> groups;
    for (int id : store.runIds())
        if (const RunRecord *run = store.run(id);
            run && std::find(groups.begin(), groups.end(), run->group) == groups.end() &&
            groupFinished(store, run->group))
            groups.push_back(run->group);
    std::sort(groups.rbegin(), groups.rend());
    return groups;
}

namespace {

// "fp32 vs mixed_fp16", "300 steps" (or "52-300 steps" when runs stopped apart).
struct GroupFacts {
    QString policies, steps, model;
    int batch = 0;
    double seconds = 0;
    QStringList endings; // "mixed_fp16 stopped at step 52"
};

// The name in the model the run trained; empty when it does not parse.
QString modelName(const RunRecord &run)
{
    try {
        return QString::fromStdString(mixlab::parse_model_spec(run.modelJson.toStdString()).name);
    } catch (const std::exception &) {
        return {};
    }
}

GroupFacts groupFacts(const RunStore &store, int group)
{
    GroupFacts g;
    QStringList policies;
    qint64 fewest = -1, most = 0;
    for (int id : store.groupRuns(group)) {
        const RunRecord &r = *store.run(id);
        const QString policy = policyText(r.config.policy);
        policies << policy;
        const qint64 steps = r.steps.empty() ? 0 : r.steps.back().step;
        fewest = fewest < 0 ? steps : std::min(fewest, steps);
        most = std::max(most, steps);
        if (!r.steps.empty()) g.seconds = std::max(g.seconds, r.steps.back().wall_ms / 1000.0);
        g.batch = r.config.batch_size;
        if (g.model.isEmpty()) g.model = modelName(r);
        if (r.status == RunRecord::Status::Stopped)
            g.endings << QObject::tr("%1 stopped at step %2").arg(policy).arg(steps);
        else if (r.status == RunRecord::Status::Failed)
            g.endings << QObject::tr("%1 failed at step %2").arg(policy).arg(steps);
    }
    g.policies = policies.join(QObject::tr(" vs "));
    g.steps = fewest == most ? QObject::tr("%1 steps").arg(most)
                             : QObject::tr("%1-%2 steps").arg(fewest).arg(most);
    return g;
}

} // namespace

QString groupDescription(const RunStore &store, int group)
{
    const GroupFacts g = groupFacts(store, group);
    QString text = QObject::tr("Group %1: %2 · batch %3 · %4 · %5")
                       .arg(group)
                       .arg(g.policies)
                       .arg(g.batch)
                       .arg(g.steps, durationText(g.seconds));
    if (!g.endings.isEmpty()) text += QStringLiteral(" · ") + g.endings.join(QStringLiteral(", "));
    return text;
}

QString reportTitle(const RunStore &store, int group)
{
    const GroupFacts g = groupFacts(store, group);
    if (g.model.isEmpty())
        return QObject::tr("MixLab report: group %1 (%2, %3)").arg(group).arg(g.policies, g.steps);
    return QObject::tr("MixLab report: %1, group %2 (%3, %4)")
        .arg(g.model)
        .arg(group)
        .arg(g.policies, g.steps);
}

QString reportBaseName(const RunStore &store, int group)
{
    QString model = groupFacts(store, group).model.toLower();
    model.replace(QRegularExpression(QStringLiteral("[^a-z0-9._-]+")), QStringLiteral("-"));
    model.remove(QRegularExpression(QStringLiteral("^-+|-+$")));
    return QStringLiteral("%1-group-%2-report")
        .arg(model.isEmpty() ? QStringLiteral("mixlab") : model)
        .arg(group);
}

bool reportInputFromStore(const RunStore &store, int group, mixlab::ReportInput *input,
                          QString *error)
{
    QString why;
    std::vector<mixlab::RunFacts> facts = runFactsFromStore(store, group, &why);
    if (facts.empty()) {
        setError(error, why.isEmpty()
                            ? QObject::tr("Group %1 has no finished runs to report on.").arg(group)
                            : why);
        return false;
    }
    mixlab::ReportInput in;
    const std::vector<int> ids = store.groupRuns(group);
    bool haveEnvironment = false; // the first run with a context says where the group ran
    for (int id : ids) {
        const RunRecord &run = *store.run(id);
        in.run_names.push_back(run.name.toStdString());
        in.configs.push_back(run.config);
        if (run.context && !haveEnvironment) {
            haveEnvironment = true;
            in.environment = run.context->environment;
            in.dataset = run.context->datasetName.toStdString();
        }
    }
    if (haveEnvironment)
        in.ceilings =
            mixlab::cached_ceilings(facts.front().device, mixlab::default_ceilings_cache_path());
    for (mixlab::RunFacts &f : facts) f.ceilings = in.ceilings; // the fp8 rule's
    in.explanations = mixlab::explain(facts, mixlab::Reader::App);
    in.model_name = facts.front().graph.name;
    in.title = reportTitle(store, group).toStdString();
    in.runs = std::move(facts);
    *input = std::move(in);
    return true;
}

bool writeReportHtml(const std::string &html, const QString &path, QString *error)
{
    QSaveFile file(path);
    // Unbuffered: Qt 6.4's QSaveFile misses a failed flush of its buffer at commit() (disk
    // full) and would rename an empty file over the old one.
    if (!file.open(QIODevice::WriteOnly | QIODevice::Unbuffered)) {
        setError(error, QObject::tr("Cannot write %1: %2").arg(path, file.errorString()));
        return false;
    }
    if (file.write(html.data(), qint64(html.size())) != qint64(html.size()) || !file.commit()) {
        setError(error, QObject::tr("Cannot write %1: %2").arg(path, file.errorString()));
        return false;
    }
    return true;
}

bool writeReportPdf(const std::string &html, const QString &path, QString *error)
{
    QSaveFile file(path);
    // Unbuffered: Qt 6.4's QSaveFile misses a failed flush of its buffer at commit() (disk
    // full) and would rename an empty file over the old one.
    if (!file.open(QIODevice::WriteOnly | QIODevice::Unbuffered)) {
        setError(error, QObject::tr("Cannot write %1: %2").arg(path, file.errorString()));
        return false;
    }
    {
        QPdfWriter writer(&file);
        writer.setTitle(QStringLiteral("MixLab report"));
        writer.setCreator(QStringLiteral("MixLab"));
        writer.setPageLayout(k_reportPage);
        QPainter painter;
        if (!painter.begin(&writer)) {
            file.cancelWriting();
            setError(error, QObject::tr("Cannot start a PDF in %1").arg(path));
            return false;
        }
        const qreal scale = writer.resolution() / 96.0;
        painter.scale(scale, scale);
        PdfPager pager(painter, QSizeF(writer.width(), writer.height()) / scale,
                       [&writer] { writer.newPage(); });
        if (!paintReport(html, pager)) {
            painter.end();
            file.cancelWriting();
            setError(error, QObject::tr("A chart of the report could not be drawn (invalid SVG)."));
            return false;
        }
        painter.end();
    }
    if (!file.commit()) {
        setError(error, QObject::tr("Cannot write %1: %2").arg(path, file.errorString()));
        return false;
    }
    return true;
}

std::vector<QImage> reportPageImages(const std::string &html, int dpi, QString *error)
{
    const QSizeF pageInches = k_reportPage.fullRect(QPageLayout::Inch).size();
    const QPointF marginInches = k_reportPage.paintRect(QPageLayout::Inch).topLeft();
    std::vector<QImage> pages;
    QPainter painter;
    auto begin = [&] {
        pages.emplace_back((pageInches * dpi).toSize(), QImage::Format_RGB32);
        pages.back().fill(Qt::white);
        painter.begin(&pages.back());
        painter.setRenderHint(QPainter::Antialiasing);
        painter.setRenderHint(QPainter::TextAntialiasing);
        painter.translate(marginInches * dpi);
        painter.scale(dpi / 96.0, dpi / 96.0);
    };
    begin();
    PdfPager pager(painter, reportTextArea(), [&] {
        painter.end();
        begin();
    });
    const bool painted = paintReport(html, pager);
    painter.end();
    if (!painted) {
        setError(error, QObject::tr("A chart of the report could not be drawn (invalid SVG)."));
        return {};
    }
    return pages;
}

bool exportReport(const RunStore &store, int group, const QString &path, QString *error)
{
    const QString suffix = QFileInfo(path).suffix().toLower();
    const bool pdf = suffix == QLatin1String("pdf");
    if (!pdf && suffix != QLatin1String("html") && suffix != QLatin1String("htm")) {
        setError(
            error,
            QObject::tr("%1: a report is written as .html or .pdf; name the file with one of them.")
                .arg(path));
        return false;
    }
    mixlab::ReportInput input;
    if (!reportInputFromStore(store, group, &input, error)) return false;
    const std::string html = mixlab::explain_report_html(input);
    return pdf ? writeReportPdf(html, path, error) : writeReportHtml(html, path, error);
}
