// The layers the designer inserts: a sensible default of each type, the ResNet basic and
// bottleneck blocks, and the one-line summary the layer tree shows for a layer.
#pragma once
#include "mixlab/model_spec.h"

#include <QString>

// A new layer of a type with settings that make sense on their own. A residual comes
// with an empty body and the identity shortcut, to be filled from the palette.
mixlab::LayerSpec defaultLayer(mixlab::LayerType type);

enum class BlockKind {
    Basic,      // two 3x3 convolutions (ResNet-18/34)
    Bottleneck, // 1x1 down to `filters`, 3x3, 1x1 up to 4 x filters (ResNet-50/101/152)
};
// How many channels a block of this kind gives.
int blockOutputChannels(BlockKind kind, int filters);
// A residual block as the CIFAR ResNets build it: convolutions without bias, each
// followed by batch norm, relu between them and after the sum; the stride sits on the
// 3x3 convolution. The shortcut is the identity when the block keeps the shape, else a
// 1x1 convolution with the block's stride plus batch norm. inChannels 0 (unknown, e.g.
// while the model above does not validate) gets the projection, which fits any input.
mixlab::LayerSpec residualBlock(BlockKind kind, int filters, int stride, int inChannels);

// An (h, w) pair as the summaries and the undo history write it: "3" when both are 3,
// "3,1" otherwise.
QString pairText(int h, int w);

// "dense 3000 relu", "dense vocab, tied to the embedding", "embedding dataset x 200",
// "lstm 200 x2 layers, dropout 0.2", "conv2d 64 3x3 /2 same, no bias", "residual 3x3 128 /2 \u203a 3x3 128,
// projection" (relu after the sum unless it says "linear"), "activation softmax (float32)".
QString layerSummary(const mixlab::LayerSpec &layer);
