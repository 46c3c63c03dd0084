// The PNG / SVG / PDF writer behind every export (paintexport.h).
#include "charts/paintexport.h"

#include <QBuffer>
#include <QCoreApplication>
#include <QFileInfo>
#include <QImage>
#include <QPageSize>
#include <QPainter>
#include <QPdfWriter>
#include <QSaveFile>
#include <QSize>
#include <QSvgGenerator>

namespace {

QString tr(const char *text) { return QCoreApplication::translate("PaintExport", text); }

} // namespace

bool exportPainted(const QString &path, const QSize &size, const QString &title,
                   const PaintFunction &render, QString *error)
{
    auto fail = [error](const QString &message) {
        if (error) *error = message;
        return false;
    };
    const QString suffix = QFileInfo(path).suffix().toLower();
    if (suffix != QLatin1String("png") && suffix != QLatin1String("svg") &&
        suffix != QLatin1String("pdf"))
        return fail(tr("Cannot export to \"%1\": unknown file type \"%2\"; use .png, .svg "
                       "or .pdf.")
                        .arg(path, suffix.isEmpty() ? tr("(none)") : "." + suffix));
    if (size.width() < 16 || size.height() < 16 || size.width() > 20000 || size.height() > 20000)
        return fail(tr("Export size %1x%2 is out of range (16 to 20000 pixels a side).")
                        .arg(size.width())
                        .arg(size.height()));

    // Unbuffered: Qt 6.4's QSaveFile::commit() misses a failed flush of its buffer, so a
    // full disk would replace the old file with a truncated one and report success.
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly | QIODevice::Unbuffered))
        return fail(tr("Cannot write \"%1\": %2").arg(path, file.errorString()));

    const QRectF area(QPointF(0, 0), QSizeF(size));
    if (suffix == QLatin1String("png")) {
        QImage image(size, QImage::Format_ARGB32_Premultiplied);
        image.fill(Qt::white);
        QPainter painter(&image);
        painter.setRenderHint(QPainter::Antialiasing);
        painter.setRenderHint(QPainter::TextAntialiasing);
        render(&painter, size);
        painter.end();
        // Encoded in memory, then written: a write error then comes back from the file
        // with the system's reason, and libpng never fails mid-write (Qt leaks its copy
        // of the image when it does).
        QByteArray png;
        QBuffer buffer(&png);
        buffer.open(QIODevice::WriteOnly);
        if (!image.save(&buffer, "PNG"))
            return fail(tr("Cannot write \"%1\": PNG encoding failed").arg(path));
        if (file.write(png) != png.size())
            return fail(tr("Cannot write \"%1\": %2").arg(path, file.errorString()));
    } else if (suffix == QLatin1String("svg")) {
        QSvgGenerator svg;
        svg.setOutputDevice(&file);
        svg.setSize(size);
        svg.setViewBox(area);
        svg.setTitle(title);
        QPainter painter;
        if (!painter.begin(&svg))
            return fail(tr("Cannot write \"%1\": the SVG writer did not start").arg(path));
        painter.fillRect(area, Qt::white);
        render(&painter, size);
        painter.end();
    } else {
        QPdfWriter pdf(&file);
        pdf.setCreator(QStringLiteral("MixLab"));
        pdf.setTitle(title);
        pdf.setResolution(96); // size pixels map to the page at screen scale
        pdf.setPageMargins(QMarginsF(0, 0, 0, 0));
        pdf.setPageSize(QPageSize(QSizeF(size) * 72.0 / 96.0, QPageSize::Point, QString(),
                                  QPageSize::ExactMatch));
        QPainter painter;
        if (!painter.begin(&pdf))
            return fail(tr("Cannot write \"%1\": the PDF writer did not start").arg(path));
        // The page's pixel size can differ from size by rounding; scale onto it.
        painter.scale(pdf.width() / area.width(), pdf.height() / area.height());
        render(&painter, size);
        painter.end();
    }
    if (!file.commit()) return fail(tr("Cannot write \"%1\": %2").arg(path, file.errorString()));
    return true;
}
