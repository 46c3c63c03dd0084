// LayerPalette: the controls flow left to right at their natural widths and wrap, so the
// palette stays three rows high in the designer's narrow column.
#include "designer/layerpalette.h"

#include "common/enginetext.h"
#include "designer/layerdrag.h"

#include <QApplication>
#include <QDrag>
#include <QHBoxLayout>
#include <QMouseEvent>
#include <QResizeEvent>
#include <QSpinBox>
#include <QToolButton>
#include <QVBoxLayout>

#include <algorithm>

using mixlab::LayerType;

namespace {

QString typeName(LayerType t) { return fromView(mixlab::layer_type_name(t)); }

QString tipFor(LayerType t)
{
    switch (t) {
    case LayerType::Conv2D: return LayerPalette::tr("2-D convolution (3x3, same padding, relu)");
    case LayerType::BatchNorm: return LayerPalette::tr("Batch normalisation over the channels");
    case LayerType::Activation: return LayerPalette::tr("An element-wise function (relu)");
    case LayerType::MaxPool2D: return LayerPalette::tr("Maximum over 2x2 windows");
    case LayerType::AvgPool2D: return LayerPalette::tr("Average over 2x2 windows");
    case LayerType::GlobalAvgPool:
        return LayerPalette::tr("Average over the whole image: H x W x C to C");
    case LayerType::Flatten: return LayerPalette::tr("Images to vectors");
    case LayerType::Dense:
        return LayerPalette::tr("Fully connected (128 units, relu); in a language model it "
                                "applies to every time step, and \"one per word\" makes it "
                                "the decoder");
    case LayerType::Dropout: return LayerPalette::tr("Zeroes inputs at random in training");
    case LayerType::Residual:
        return LayerPalette::tr("An empty residual block, output = relu(body(x) + x): fill its "
                                "body from the palette");
    case LayerType::Embedding:
        return LayerPalette::tr(
            "Language models' first layer: a table of one vector (dim 200) per word of the "
            "corpus; its input is one word id per time step. A dim that is a multiple of 8 "
            "keeps the LSTM's and the tied decoder's fp16/bf16 GEMMs on tensor cores.");
    case LayerType::Lstm:
        return LayerPalette::tr(
            "Stacked LSTM layers over the sequence (200 hidden, 2 layers, dropout 0.2 between "
            "them), as PyTorch's nn.LSTM; cuDNN's RNN kernels on a GPU. Each step's four gates "
            "are GEMMs of 4 x hidden rows: hidden and input sizes that are multiples of 8 let "
            "fp16/bf16 run them on tensor cores.");
    }
    return {};
}

} // namespace

LayerPalette::LayerPalette(QWidget *parent) : QWidget(parent)
{
    for (LayerType t :
         {LayerType::Conv2D, LayerType::BatchNorm, LayerType::Activation, LayerType::MaxPool2D,
          LayerType::AvgPool2D, LayerType::GlobalAvgPool, LayerType::Flatten, LayerType::Dense,
          LayerType::Dropout, LayerType::Residual, LayerType::Embedding, LayerType::Lstm})
        m_entries.push_back({typeName(t), false, t, BlockKind::Basic, nullptr});
    m_entries.push_back({tr("basic block"), true, LayerType::Residual, BlockKind::Basic, nullptr});
    m_entries.push_back(
        {tr("bottleneck block"), true, LayerType::Residual, BlockKind::Bottleneck, nullptr});

    m_rows = new QVBoxLayout(this);
    m_rows->setContentsMargins(0, 0, 0, 0);
    m_rows->setSpacing(2);

    for (Entry &e : m_entries) {
        auto *b = new QToolButton(this);
        b->setText(e.name);
        b->setObjectName(QStringLiteral("palette_") +
                         QString(e.name).replace(QLatin1Char(' '), QLatin1Char('_')));
        b->setToolButtonStyle(Qt::ToolButtonTextOnly);
        if (e.block)
            b->setToolTip(e.kind == BlockKind::Basic
                              ? tr("Residual block of two 3x3 convolutions with batch norm "
                                   "(ResNet-18/34), with a 1x1 projection shortcut when the "
                                   "stride or the channels change")
                              : tr("Residual block 1x1, 3x3, 1x1 (x4 channels) with batch norm "
                                   "(ResNet-50/101/152), with a 1x1 projection shortcut when "
                                   "the stride or the channels change"));
        else
            b->setToolTip(tipFor(e.type));
        const Entry entry = e;
        connect(b, &QToolButton::clicked, this, [this, entry] { trigger(entry); });
        b->installEventFilter(this);
        e.button = b;
        m_chips.push_back(b);
    }

    m_filters = new QSpinBox(this);
    m_filters->setObjectName(QStringLiteral("blockFilters"));
    m_filters->setRange(0, 8192);
    m_filters->setSpecialValueText(tr("filters as input"));
    m_filters->setPrefix(tr("filters "));
    m_filters->setToolTip(tr("Filters of the next block (a bottleneck's inner width; it gives "
                             "four times as many channels). \"as input\" keeps the channels."));
    m_stride = new QSpinBox(this);
    m_stride->setObjectName(QStringLiteral("blockStride"));
    m_stride->setRange(1, 4);
    m_stride->setPrefix(tr("stride "));
    m_stride->setToolTip(tr("Stride of the next block: 2 halves the image, as the first block "
                            "of each ResNet stage does"));
    m_chips.push_back(m_filters);
    m_chips.push_back(m_stride);
    for (QWidget *chip : m_chips) chip->setSizePolicy(QSizePolicy::Fixed, QSizePolicy::Fixed);
    setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Fixed);

    reflow();
}

QStringList LayerPalette::entryNames() const
{
    QStringList names;
    for (const Entry &e : m_entries) names << e.name;
    return names;
}

bool LayerPalette::activate(const QString &name)
{
    for (const Entry &e : m_entries)
        if (e.name == name) {
            e.button->click();
            return true;
        }
    return false;
}

int LayerPalette::blockFilters() const { return m_filters->value(); }
void LayerPalette::setBlockFilters(int filters) { m_filters->setValue(filters); }
int LayerPalette::blockStride() const { return m_stride->value(); }
void LayerPalette::setBlockStride(int stride) { m_stride->setValue(stride); }

std::optional<LayerPalette::Request> LayerPalette::requestFor(const QString &name) const
{
    for (const Entry &e : m_entries)
        if (e.name == name)
            return Request{e.block, e.type, e.kind, m_filters->value(), m_stride->value()};
    return std::nullopt;
}

void LayerPalette::trigger(const Entry &entry)
{
    if (entry.block)
        emit blockRequested(entry.kind, m_filters->value(), m_stride->value());
    else
        emit layerRequested(entry.type);
}

bool LayerPalette::eventFilter(QObject *watched, QEvent *event)
{
    auto *button = qobject_cast<QToolButton *>(watched);
    if (!button) return false;
    if (event->type() == QEvent::MouseButtonPress) {
        m_pressAt = static_cast<QMouseEvent *>(event)->position().toPoint();
        return false;
    }
    if (event->type() != QEvent::MouseMove) return false;
    const auto *move = static_cast<QMouseEvent *>(event);
    if (!(move->buttons() & Qt::LeftButton) ||
        (move->position().toPoint() - m_pressAt).manhattanLength() <
            QApplication::startDragDistance())
        return false;
    auto *drag = new QDrag(this);
    drag->setMimeData(layerdrag::forPaletteEntry(button->text()));
    drag->setPixmap(button->grab());
    drag->setHotSpot(m_pressAt);
    drag->exec(Qt::CopyAction);
    button->setDown(false); // the release went to the drop, not to the button: no click
    return true;
}

void LayerPalette::resizeEvent(QResizeEvent *event)
{
    QWidget::resizeEvent(event);
    reflow();
}

QSize LayerPalette::minimumSizeHint() const
{
    // As narrow as the widest control: the rows rewrap to fit.
    int widest = 0;
    for (const QWidget *chip : m_chips) widest = std::max(widest, chip->sizeHint().width());
    return {widest, sizeHint().height()};
}

void LayerPalette::reflow()
{
    const int gap = m_rows->spacing();
    int width = std::max(this->width(), minimumSizeHint().width());
    if (!testAttribute(Qt::WA_Resized)) {
        // Not laid out yet (a child's width is a placeholder 100): plan the three rows the
        // designer's column usually gives, so the window's first minimum height is not
        // that of one entry per row.
        int total = 0;
        for (const QWidget *chip : m_chips) total += chip->sizeHint().width() + gap;
        width = std::max(width, total / 3);
    }
    std::vector<int> starts;
    int x = 0;
    for (std::size_t i = 0; i < m_chips.size(); ++i) {
        const int w = m_chips[i]->sizeHint().width();
        if (starts.empty() || x + gap + w > width) {
            starts.push_back(int(i));
            x = w;
        } else {
            x += gap + w;
        }
    }
    if (starts == m_rowStarts) return;
    m_rowStarts = starts;
    while (QLayoutItem *row = m_rows->takeAt(0)) delete row; // the widgets stay, unparented from it
    for (std::size_t r = 0; r < starts.size(); ++r) {
        auto *row = new QHBoxLayout;
        row->setSpacing(gap);
        const std::size_t end = r + 1 < starts.size() ? std::size_t(starts[r + 1]) : m_chips.size();
        for (std::size_t i = std::size_t(starts[r]); i < end; ++i) row->addWidget(m_chips[i]);
        row->addStretch(1);
        m_rows->addLayout(row);
    }
}
