// Layer templates and summaries. Strides of 1 are left at 0 ("the type's default") so a
// block the designer builds writes the same JSON as one written by hand without them.
#include "designer/layertemplates.h"

#include "common/enginetext.h"

#include <QCoreApplication>
#include <QStringList>

using mixlab::Activation;
using mixlab::LayerSpec;
using mixlab::LayerType;
using mixlab::Padding;

namespace {

QString tr(const char *text) { return QCoreApplication::translate("LayerTemplates", text); }

LayerSpec conv(int filters, int kernel, int stride)
{
    LayerSpec l;
    l.type = LayerType::Conv2D;
    l.filters = filters;
    l.kernel_h = l.kernel_w = kernel;
    if (stride != 1) l.stride_h = l.stride_w = stride;
    l.padding = kernel > 1 ? Padding::Same : Padding::Valid;
    l.use_bias = false; // batch norm follows: its shift does the bias's work
    return l;
}

LayerSpec batchNorm()
{
    LayerSpec l;
    l.type = LayerType::BatchNorm;
    return l;
}

LayerSpec relu()
{
    LayerSpec l;
    l.type = LayerType::Activation;
    l.activation = Activation::Relu;
    return l;
}

QString window(int h, int w) { return QStringLiteral("%1x%2").arg(h).arg(w); }

// " /2" for a stride other than the default; empty otherwise.
QString strideText(const LayerSpec &l)
{
    if (l.stride_h == 0 && l.stride_w == 0) return {};
    return QStringLiteral(" /") + pairText(l.stride_h, l.stride_w);
}

QString paddingText(const LayerSpec &l)
{
    switch (l.padding) {
    case Padding::Valid: return {};
    case Padding::Same: return QStringLiteral(" same");
    case Padding::Explicit: return QStringLiteral(" pad ") + pairText(l.pad_h, l.pad_w);
    }
    return {};
}

// "3x3 64 /2 \u203a 3x3 64, projection": the body's convolutions in order, so a collapsed
// block still says what it does in a narrow column.
QString blockOutline(const LayerSpec &block)
{
    if (block.body.empty()) return tr("(empty body)");
    QStringList convs;
    bool others = false;
    for (const LayerSpec &l : block.body) {
        if (l.type == LayerType::Conv2D)
            convs << window(l.kernel_h, l.kernel_w) + QLatin1Char(' ') +
                         QString::number(l.filters) + strideText(l);
        else if (l.type != LayerType::BatchNorm && l.type != LayerType::Activation)
            others = true;
    }
    QString s = convs.isEmpty() ? tr("%1 layers").arg(block.body.size())
                                : convs.join(QStringLiteral(" \u203a ")) +
                                      (others ? QStringLiteral(" \u2026") : QString());
    if (!block.shortcut.empty()) s += tr(", projection");
    return s;
}

} // namespace

LayerSpec defaultLayer(LayerType type)
{
    LayerSpec l;
    l.type = type;
    switch (type) {
    case LayerType::Flatten: break;
    case LayerType::Dense:
        l.units = 128;
        l.activation = Activation::Relu;
        break;
    case LayerType::Activation: l.activation = Activation::Relu; break;
    case LayerType::Dropout: l.rate = 0.5f; break;
    case LayerType::Conv2D:
        l.filters = 32;
        l.kernel_h = l.kernel_w = 3;
        l.padding = Padding::Same;
        l.activation = Activation::Relu;
        break;
    case LayerType::BatchNorm: break;
    case LayerType::MaxPool2D:
    case LayerType::AvgPool2D: l.kernel_h = l.kernel_w = 2; break;
    case LayerType::GlobalAvgPool: break;
    case LayerType::Residual: l.activation = Activation::Relu; break;
    // The word-language-model example's small model: 200 wide, two LSTM layers.
    case LayerType::Embedding:
        l.vocab = mixlab::k_vocab_dataset;
        l.dim = 200;
        break;
    case LayerType::Lstm:
        l.hidden = 200;
        l.num_layers = 2;
        l.rate = 0.2f;
        break;
    }
    return l;
}

int blockOutputChannels(BlockKind kind, int filters)
{
    return kind == BlockKind::Bottleneck ? 4 * filters : filters;
}

LayerSpec residualBlock(BlockKind kind, int filters, int stride, int inChannels)
{
    LayerSpec block;
    block.type = LayerType::Residual;
    block.activation = Activation::Relu;
    const int out = blockOutputChannels(kind, filters);
    if (kind == BlockKind::Basic) {
        block.body = {conv(filters, 3, stride), batchNorm(), relu(), conv(filters, 3, 1),
                      batchNorm()};
    } else {
        block.body = {conv(filters, 1, 1), batchNorm(), relu(),          conv(filters, 3, stride),
                      batchNorm(),         relu(),      conv(out, 1, 1), batchNorm()};
    }
    if (stride != 1 || inChannels != out) block.shortcut = {conv(out, 1, stride), batchNorm()};
    return block;
}

QString pairText(int h, int w)
{
    return h == w ? QString::number(h) : QStringLiteral("%1,%2").arg(h).arg(w);
}

QString layerSummary(const LayerSpec &layer)
{
    QString s = fromView(mixlab::layer_type_name(layer.type));
    auto activation = [&] {
        if (layer.activation != Activation::None)
            s += QLatin1Char(' ') + fromView(mixlab::activation_name(layer.activation));
    };
    switch (layer.type) {
    case LayerType::Flatten:
    case LayerType::GlobalAvgPool: break;
    case LayerType::Dense:
        s += QLatin1Char(' ') + (layer.units == mixlab::k_units_classes ? tr("classes")
                                 : layer.units == mixlab::k_units_vocab
                                     ? tr("vocab")
                                     : QString::number(layer.units));
        activation();
        if (!layer.use_bias) s += tr(", no bias");
        if (layer.tie_weights) s += tr(", tied to the embedding");
        break;
    case LayerType::Embedding:
        s += QLatin1Char(' ') +
             (layer.vocab == mixlab::k_vocab_dataset ? tr("dataset")
                                                     : QString::number(layer.vocab)) +
             QStringLiteral(" x ") + QString::number(layer.dim);
        break;
    case LayerType::Lstm:
        s += QLatin1Char(' ') + QString::number(layer.hidden);
        if (layer.num_layers != 1) s += tr(" x%1 layers").arg(layer.num_layers);
        if (layer.rate != 0.0f) s += tr(", dropout %1").arg(double(layer.rate), 0, 'g', 6);
        break;
    case LayerType::Activation:
        s += QLatin1Char(' ') + fromView(mixlab::activation_name(layer.activation));
        break;
    case LayerType::Dropout:
        s += QLatin1Char(' ') + QString::number(double(layer.rate), 'g', 6);
        break;
    case LayerType::Conv2D:
        s += QLatin1Char(' ') + QString::number(layer.filters) + QLatin1Char(' ') +
             window(layer.kernel_h, layer.kernel_w) + strideText(layer) + paddingText(layer);
        activation();
        if (!layer.use_bias) s += tr(", no bias");
        break;
    case LayerType::MaxPool2D:
    case LayerType::AvgPool2D:
        s += QLatin1Char(' ') + window(layer.kernel_h, layer.kernel_w) + strideText(layer) +
             paddingText(layer);
        break;
    case LayerType::BatchNorm: {
        const LayerSpec defaults;
        if (layer.momentum != defaults.momentum)
            s += tr(" momentum %1").arg(double(layer.momentum), 0, 'g', 6);
        if (layer.epsilon != defaults.epsilon)
            s += tr(" epsilon %1").arg(double(layer.epsilon), 0, 'g', 6);
        break;
    }
    case LayerType::Residual:
        // relu after the sum is the rule; only its absence is worth the room.
        if (layer.activation == Activation::None) s += tr(" linear");
        s += QLatin1Char(' ') + blockOutline(layer);
        break;
    }
    if (layer.force_fp32)
        s += tr(" (float32)");
    else if (layer.no_fp8)
        s += tr(" (out of fp8)");
    return s;
}
