// cuDNN's graph (backend descriptor) API, as far as the convolutions use it: a move-only
// owner of one backend descriptor, and builders for tensors, a convolution, its three
// operations, an operation graph, the engine configurations the heuristics offer, their
// execution plans and a variant pack to run one with. Failures throw through
// throw_cudnn_error with the descriptor and attribute that failed; only the steps a
// search expects to fail (a plan cuDNN cannot finalize) report a status instead.
#pragma once
#include "backends/cuda/cudnn_check.h"
#include "mixlab/backend.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace mixlab::cuda::graph {

class Descriptor {
public:
    Descriptor() = default;
    // `what` names the descriptor in error messages ("the forward convolution
    // operation"); it must outlive the descriptor (a string literal).
    Descriptor(cudnnBackendDescriptorType_t type, const char* what);
    Descriptor(Descriptor&& o) noexcept : m_d(std::exchange(o.m_d, nullptr)), m_what(o.m_what) {}
    Descriptor& operator=(Descriptor&& o) noexcept;
    Descriptor(const Descriptor&) = delete;
    Descriptor& operator=(const Descriptor&) = delete;
    ~Descriptor() { reset(); }

    cudnnBackendDescriptor_t get() const { return m_d; }
    explicit operator bool() const { return m_d != nullptr; }
    void reset() noexcept;

    void set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, std::int64_t count,
             const void* values);
    void set_int64(cudnnBackendAttributeName_t name, std::int64_t v);
    void set_int64s(cudnnBackendAttributeName_t name, const std::vector<std::int64_t>& v);
    void set_descriptor(cudnnBackendAttributeName_t name, const Descriptor& d);
    void finalize();
    // For the steps a search expects to fail: the status, no exception.
    cudnnStatus_t try_finalize() noexcept;

    // Reads up to `capacity` values into `out`; returns how many there are.
    std::int64_t get(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
                     std::int64_t capacity, void* out) const;
    std::int64_t get_int64(cudnnBackendAttributeName_t name) const;

private:
    [[noreturn]] void fail(cudnnStatus_t st, const char* call, std::int64_t attribute) const;

    cudnnBackendDescriptor_t m_d = nullptr;
    const char* m_what = "";
};

// Unique ids of the three operands in every convolution graph: x (or dx), w (or dw), y
// (or dy).
inline constexpr std::int64_t k_uid_x = 'x', k_uid_w = 'w', k_uid_y = 'y';

// A 4-d tensor: dims in cuDNN's order (N, C, H, W), strides of the layout it is stored in.
Descriptor make_tensor(std::int64_t uid, cudnnDataType_t type,
                       const std::array<std::int64_t, 4>& dims,
                       const std::array<std::int64_t, 4>& strides, std::int64_t alignment,
                       bool is_virtual);
// g's cross-correlation with fp32 compute type: pads, strides, dilations 1.
Descriptor make_convolution(const ConvGeometry& g);

enum class ConvOp { Forward, BackwardData, BackwardFilter };
// One convolution operation computing alpha * op + beta * out: forward x, w -> y;
// backward data w, y (dy) -> x (dx); backward filter x, y (dy) -> w (dw).
Descriptor make_conv_operation(ConvOp op, const Descriptor& conv, const Descriptor& x,
                               const Descriptor& w, const Descriptor& y, float alpha, float beta);
// A graph of the single operation `op`, for the device `h` runs on.
Descriptor make_operation_graph(cudnnHandle_t h, const Descriptor& op);
// A graph of several operations joined by their tensors (fusion candidates).
Descriptor make_operation_graph(cudnnHandle_t h, const std::vector<const Descriptor*>& ops);

// Fusion's operations, fp32 math. A pointwise y = mode(x) or y = mode(x, b) (b a
// per-channel (1, C, 1, 1) tensor broadcast over the others: ADD, MUL); ReLU's backward
// dx = dy where x > 0; the per-channel sum and sum of squares of x that batch norm's
// statistics are made of (GenStats).
Descriptor make_pointwise_operation(cudnnPointwiseMode_t mode, const Descriptor& x,
                                    const Descriptor* b, const Descriptor& y);
Descriptor make_relu_backward_operation(const Descriptor& dy, const Descriptor& x,
                                        const Descriptor& dx);
Descriptor make_genstats_operation(const Descriptor& x, const Descriptor& sum,
                                   const Descriptor& sqsum);

// What an engine configuration is: the engine's global index, its knob settings and the
// numerical and behaviour notes that say how it computes.
struct EngineConfigInfo {
    std::int64_t engine = -1;
    std::vector<std::pair<cudnnBackendKnobType_t, std::int64_t>> knobs;
    std::vector<cudnnBackendNumericalNote_t> numerical_notes;
    std::vector<cudnnBackendBehaviorNote_t> behavior_notes;
    bool has(cudnnBackendNumericalNote_t n) const;
    bool has(cudnnBackendBehaviorNote_t n) const;
    // "engine 7 [tile_size=3 stages=4]"; "engine 2 (fft) [...]" for a transform engine.
    std::string text() const;
};
EngineConfigInfo describe_config(const Descriptor& config);

// The configurations cuDNN's heuristics offer for `op_graph`, best first: mode A's, then
// the fallback mode's that A did not already offer (the same engine and knobs).
std::vector<Descriptor> engine_configs(const Descriptor& op_graph);

// The execution plan of one configuration, or an empty descriptor where cuDNN cannot
// finalize it (some configurations are offered but do not support the problem).
Descriptor try_make_plan(cudnnHandle_t h, const Descriptor& config);
std::size_t workspace_bytes(const Descriptor& plan);

// The operands of one run, by uid (k_uid_*), and the workspace: built once per set of
// pointers and reused while they stay the same.
Descriptor make_variant_pack(const std::int64_t* uids, void* const* pointers, int n,
                             void* workspace);
// Runs `plan` on the handle's stream (capturable into a CUDA graph).
cudnnStatus_t try_execute(cudnnHandle_t h, const Descriptor& plan, const Descriptor& pack) noexcept;
void execute(cudnnHandle_t h, const Descriptor& plan, const Descriptor& pack);

} // namespace mixlab::cuda::graph
