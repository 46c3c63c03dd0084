// Report export: the core builds the HTML; the PDF splits it at its chart figures, lays
// out the text parts with QTextDocument and paints the charts with QSvgRenderer, page by
// page, in one QPainter on a QPdfWriter.
#include "reportexport.h"

#include "runfacts_from_store.h"
#include "runstore.h"

#include "mixlab/ceilings.h"
#include "mixlab/explain.h"

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
#include <vector>

namespace {

void setError(QString *error, const QString &text)
{
    if (error)
        *error = text;
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
    if (!m.hasMatch())
        return;
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

// Document heights where a page may end: below every line of running text, and above
// every table row and below every table, so a break never cuts a line or a row.
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

// Paints parts onto the writer's pages, top to bottom, in layout units (96 per inch).
class PdfPager {
public:
    PdfPager(QPdfWriter &writer, QPainter &painter)
        : m_writer(writer), m_painter(painter), m_scale(writer.resolution() / 96.0)
    {
        m_painter.scale(m_scale, m_scale);
        m_width = writer.width() / m_scale;
        m_height = writer.height() / m_scale;
        // Text lays out at 96 dpi whatever the screen says, so pages match on every host.
        m_dpiDevice = QImage(1, 1, QImage::Format_RGB32);
        m_dpiDevice.setDotsPerMeterX(qRound(96 / 0.0254));
        m_dpiDevice.setDotsPerMeterY(qRound(96 / 0.0254));
    }

    void addHtml(const QString &head, const QString &body)
    {
        QTextDocument doc;
        layOut(doc, head, body);
        const qreal total = doc.size().height();
        if (doc.toPlainText().trimmed().isEmpty())
            return;
        const std::vector<qreal> cuts = pageCuts(doc);
        qreal offset = 0;
        while (total - offset > 0.5) {
            const qreal room = m_height - m_y;
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
            m_painter.translate(0, m_y - offset);
            doc.drawContents(&m_painter, QRectF(0, offset, m_width, end - offset));
            m_painter.restore();
            m_y += end - offset;
            offset = end;
            if (total - offset > 0.5)
                newPage();
        }
    }

    // The chart, and its heading when it has one, together on one page.
    bool addChart(const QString &head, const QString &heading, const QString &svg)
    {
        QSvgRenderer renderer(svg.toUtf8());
        if (!renderer.isValid())
            return false;
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
        if (m_y + headingHeight + h > m_height && m_y > 0)
            newPage();
        if (!heading.isEmpty())
            addHtml(head, heading);
        renderer.render(&m_painter, QRectF(0, m_y + gap / 2, w, h));
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
        m_writer.newPage();
        m_y = 0;
    }

    QPdfWriter &m_writer;
    QPainter &m_painter;
    qreal m_scale = 1, m_width = 0, m_height = 0, m_y = 0;
    QImage m_dpiDevice;
};

} // namespace

bool reportInputFromStore(const RunStore &store, int group, mixlab::ReportInput *input,
                          QString *error)
{
    QString why;
    std::vector<mixlab::RunFacts> facts = runFactsFromStore(store, group, &why);
    if (facts.empty()) {
        setError(error, why.isEmpty() ? QObject::tr("Group %1 has no finished runs to report on.").arg(group) : why);
        return false;
    }
    mixlab::ReportInput in;
    const std::vector<int> ids = store.groupRuns(group);
    for (int id : ids) {
        const RunRecord &run = *store.run(id);
        in.run_names.push_back(run.name.toStdString());
        in.configs.push_back(run.config);
        if (run.context && in.environment.backend.empty()) {
            in.environment = run.context->environment;
            in.dataset = run.context->datasetName.toStdString();
        }
    }
    in.explanations = mixlab::explain(facts, mixlab::Reader::App);
    in.model_name = facts.front().graph.name;
    if (!facts.front().device.backend.empty())
        in.ceilings = mixlab::cached_ceilings(facts.front().device, mixlab::default_ceilings_cache_path());
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
    QString head;
    const std::vector<Part> parts = splitAtCharts(QString::fromStdString(html), &head);
    {
        QPdfWriter writer(&file);
        writer.setTitle(QStringLiteral("MixLab report"));
        writer.setCreator(QStringLiteral("MixLab"));
        writer.setPageLayout(QPageLayout(QPageSize(QPageSize::A4), QPageLayout::Portrait,
                                         QMarginsF(15, 15, 15, 15), QPageLayout::Millimeter));
        QPainter painter;
        if (!painter.begin(&writer)) {
            file.cancelWriting();
            setError(error, QObject::tr("Cannot start a PDF in %1").arg(path));
            return false;
        }
        PdfPager pager(writer, painter);
        for (const Part &part : parts) {
            if (!part.chart) {
                pager.addHtml(head, part.text);
            } else if (!pager.addChart(head, part.heading, part.text)) {
                painter.end();
                file.cancelWriting();
                setError(error, QObject::tr("A chart of the report could not be drawn (invalid SVG)."));
                return false;
            }
        }
        painter.end();
    }
    if (!file.commit()) {
        setError(error, QObject::tr("Cannot write %1: %2").arg(path, file.errorString()));
        return false;
    }
    return true;
}

bool exportReport(const RunStore &store, int group, const QString &path, QString *error)
{
    const QString suffix = QFileInfo(path).suffix().toLower();
    const bool pdf = suffix == QLatin1String("pdf");
    if (!pdf && suffix != QLatin1String("html") && suffix != QLatin1String("htm")) {
        setError(error, QObject::tr("%1: a report is written as .html or .pdf; name the file with one of them.").arg(path));
        return false;
    }
    mixlab::ReportInput input;
    if (!reportInputFromStore(store, group, &input, error))
        return false;
    const std::string html = mixlab::explain_report_html(input);
    return pdf ? writeReportPdf(html, path, error) : writeReportHtml(html, path, error);
}
