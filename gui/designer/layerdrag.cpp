// Layer drags: the path as LayerPath::toString writes it, the entry name as UTF-8.
#include "designer/layerdrag.h"

#include <QMimeData>

namespace layerdrag {

QStringList mimeTypes()
{
    return {QString::fromLatin1(k_layerMime), QString::fromLatin1(k_paletteMime)};
}

QMimeData *forLayer(const LayerPath &path)
{
    auto *data = new QMimeData;
    data->setData(QString::fromLatin1(k_layerMime), path.toString().toUtf8());
    return data;
}

QMimeData *forPaletteEntry(const QString &name)
{
    auto *data = new QMimeData;
    data->setData(QString::fromLatin1(k_paletteMime), name.toUtf8());
    return data;
}

std::optional<LayerPath> layerOf(const QMimeData &data)
{
    if (!data.hasFormat(QString::fromLatin1(k_layerMime))) return std::nullopt;
    return LayerPath::fromString(QString::fromUtf8(data.data(QString::fromLatin1(k_layerMime))));
}

std::optional<QString> paletteEntryOf(const QMimeData &data)
{
    if (!data.hasFormat(QString::fromLatin1(k_paletteMime))) return std::nullopt;
    return QString::fromUtf8(data.data(QString::fromLatin1(k_paletteMime)));
}

} // namespace layerdrag
