// What a drag into the designer's layer tree carries: a row of the tree (the layer's path)
// or a palette entry (its name), each under a MIME type of its own.
#pragma once
#include "designer/layerpath.h"

#include <QString>
#include <QStringList>

#include <optional>

class QMimeData;

namespace layerdrag {

inline constexpr char k_layerMime[] = "application/x-mixlab-layer-path";
inline constexpr char k_paletteMime[] = "application/x-mixlab-palette-entry";

QStringList mimeTypes();
// New data for a drag (the drag owns it).
QMimeData *forLayer(const LayerPath &path);
QMimeData *forPaletteEntry(const QString &name);
// What the data carries; nullopt when it carries no such thing.
std::optional<LayerPath> layerOf(const QMimeData &data);
std::optional<QString> paletteEntryOf(const QMimeData &data);

} // namespace layerdrag
