// How the final layers of a model turn into a loss: what build_graph decides from the
// model and what the backends' cross-entropy computes. Its own header because the
// backends take it and sit below the model in the engine's folders.
#pragma once

namespace mixlab {

enum class OutputHead {
    Logits,        // last layer gives logits: softmax cross-entropy
    SoftmaxFolded, // last layer is a softmax activation folded into the loss
    SigmoidKeras,  // last layer is a sigmoid: Keras categorical cross-entropy on
                   // sigmoid outputs divided by their sum, clipped to [1e-7, 1-1e-7]
};

} // namespace mixlab
