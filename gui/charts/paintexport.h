// One writer for every picture the app exports (the charts, the numerics heatmaps): a
// render function paints into a rectangle of the requested size, and the file takes the
// form its suffix names: .png (a raster of that size), .svg or .pdf (vector, at screen
// scale). Written through QSaveFile: a failed write leaves the old file as it was.
#pragma once
#include <QString>

#include <functional>

class QPainter;
class QSize;

using PaintFunction = std::function<void(QPainter *painter, const QSize &size)>;

// False with a message in *error: an unknown suffix, a size out of range (16 to 20000
// pixels a side), or a write that failed. `title` is the SVG's and PDF's document title.
bool exportPainted(const QString &path, const QSize &size, const QString &title,
                   const PaintFunction &render, QString *error);
