// LayerPalette: a button per layer type, plus the ResNet basic and bottleneck blocks with
// their width and stride, for the designer to insert at the selection (a click) or where
// the entry is dropped in the layer tree (a drag). The controls flow into as many rows as
// the width needs.
#pragma once
#include "designer/layertemplates.h"
#include "mixlab/model_spec.h"

#include <QStringList>
#include <QPoint>
#include <QWidget>

#include <optional>
#include <vector>

class QSpinBox;
class QVBoxLayout;
class QToolButton;

class LayerPalette : public QWidget {
    Q_OBJECT
public:
    explicit LayerPalette(QWidget *parent = nullptr);

    // "conv2d", ..., "residual", "embedding", "lstm", "basic block", "bottleneck block", in
    // palette order.
    QStringList entryNames() const;
    // As a click on that entry; false for an unknown name.
    bool activate(const QString &name);

    // What an entry asks for, with the block settings as they are now.
    struct Request {
        bool block = false;
        mixlab::LayerType type = mixlab::LayerType::Dense; // a layer
        BlockKind kind = BlockKind::Basic;                 // a block, with:
        int filters = 0;
        int stride = 1;
    };
    std::optional<Request> requestFor(const QString &name) const;

    // Filters of the next block (for a bottleneck: its inner width, the output being four
    // times that); 0: keep the channels the block receives.
    int blockFilters() const;
    void setBlockFilters(int filters);
    int blockStride() const;
    void setBlockStride(int stride);

    QSize minimumSizeHint() const override;

signals:
    void layerRequested(mixlab::LayerType type);
    void blockRequested(BlockKind kind, int filters, int stride);

protected:
    void resizeEvent(QResizeEvent *event) override;
    // A press and a move past the drag distance on an entry's button starts its drag.
    bool eventFilter(QObject *watched, QEvent *event) override;

private:
    struct Entry {
        QString name;
        bool block = false;
        mixlab::LayerType type = mixlab::LayerType::Dense;
        BlockKind kind = BlockKind::Basic;
        QToolButton *button = nullptr;
    };
    void trigger(const Entry &entry);
    void reflow();

    std::vector<Entry> m_entries;
    std::vector<QWidget *> m_chips; // every control, in flow order
    QVBoxLayout *m_rows = nullptr;
    std::vector<int> m_rowStarts; // the chip each row starts with, as laid out now
    QSpinBox *m_filters = nullptr;
    QSpinBox *m_stride = nullptr;
    QPoint m_pressAt; // where the left button went down on an entry
};
