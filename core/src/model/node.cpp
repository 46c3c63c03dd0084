// The parts every node shares: the guards around its passes, its path and kernel facts,
// and the passes of a sequence.
#include "model/node.h"

namespace mixlab {

void Node::run_forward(const PassContext& c, int batch, bool training, std::uint64_t step)
{
    if (passthrough || absorbed) return;
    forward(c, batch, training, step);
}

void Node::run_backward(const PassContext& c, int batch, std::uint64_t step)
{
    if (passthrough || absorbed || !out_grad) return;
    backward(c, batch, step);
}

std::string Node::path() const
{
    if (!layer) return "cast";
    return layer->path.empty() ? "layer " + std::to_string(layer->index) : layer->path;
}

LayerKernelInfo Node::kernel_facts() const
{
    LayerKernelInfo k;
    k.path = path();
    k.type = layer ? std::string(layer_type_name(layer->spec.type)) : "cast";
    k.dtype = dtype;
    k.math = math;
    return k;
}

void forward_nodes(NodeList& nodes, const PassContext& c, int batch, bool training,
                   std::uint64_t step)
{
    for (auto& n : nodes) n->run_forward(c, batch, training, step);
}

void backward_nodes(NodeList& nodes, const PassContext& c, int batch, std::uint64_t step)
{
    for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) (*it)->run_backward(c, batch, step);
}

} // namespace mixlab
