// A convolution run by cuDNN on copies of the engine's NHWC operands in another form:
// the operands are copied into scratch, cuDNN runs there, the result is copied back.
// Two routes exist: NCHW on transposed copies (conv_nchw.h: cuDNN's fp32 NHWC kernels
// are slow SIMT ones, its NCHW ones fast) and input channels zero-padded to a multiple of
// 8 (conv_channel_pad.h: a 3-channel stem gets tensor cores). The planner
// (conv_cudnn.cpp) takes a route per direction only where its time, copies included,
// beats the direct NHWC choice.
#pragma once
#include "backends/cuda/conv_search.h"
#include "backends/cuda/cudnn_handles.h"
#include "backends/cuda/device_memory.h"

#include <cuda_runtime.h>

#include <cstddef>
#include <functional>
#include <optional>

namespace mixlab::cuda {

// Where a route copies its operands: one set for every plan that takes a route (stream
// order keeps their uses apart), grown while planning like the workspace.
struct RouteScratch {
    DeviceMemory x, y, w; // the route's x-, y- and w-shaped copies
};

// One direction of a route as planned: cuDNN's choice there and what the copies around
// it cost, timed at plan time.
struct RouteDirection {
    conv_search::Choice choice; // direct: cuDNN offered nothing acceptable (route unusable)
    std::size_t workspace = 0;
    float copy_ms = 0;
    bool available() const { return !choice.direct; }
    float ms() const { return choice.ms + copy_ms; }
};

class ConvRoute {
public:
    ConvRoute(const ConvGeometry& g, DType t, MathMode m) : m_g(g), m_t(t), m_m(m) {}
    virtual ~ConvRoute() = default;
    ConvRoute(const ConvRoute&) = delete;
    ConvRoute& operator=(const ConvRoute&) = delete;

    // "in NCHW (transposed)": appended to the algorithm names in plans and logs.
    virtual const char* name() const = 0;
    // Times cuDNN's candidates for each direction on the route's form of the operands,
    // and the copies each direction needs. sx, sy, sw: the planner's scratch of x's, y's
    // and w's sizes (filled); ws: its workspace. A direction stays unavailable where
    // cuDNN has nothing acceptable or there is no room for the timing's scratch.
    virtual void plan(cudnnHandle_t h, const conv_search::Search& s, void* sx, void* sy, void* sw,
                      void* ws, std::size_t ws_bytes, cudaStream_t stream) = 0;
    // Bytes of the scratch the directions run through.
    virtual std::size_t x_bytes() const = 0;
    virtual std::size_t y_bytes() const = 0;
    virtual std::size_t w_bytes() const = 0;
    // Each runs one direction on the engine's NHWC / KRSC operands through `sc` (grown to
    // this route's sizes) and the shared workspace.
    virtual void forward(cudnnHandle_t h, const void* x, const void* w, void* y, RouteScratch& sc,
                         const DeviceMemory& ws, cudaStream_t stream) const = 0;
    virtual void backward_data(cudnnHandle_t h, const void* dy, const void* w, void* dx,
                               RouteScratch& sc, const DeviceMemory& ws,
                               cudaStream_t stream) const = 0;
    virtual void backward_filter(cudnnHandle_t h, const void* x, const void* dy, void* dw,
                                 RouteScratch& sc, const DeviceMemory& ws,
                                 cudaStream_t stream) const = 0;

    const RouteDirection& forward_plan() const { return m_fwd; }
    const RouteDirection& backward_data_plan() const { return m_data; }
    const RouteDirection& backward_filter_plan() const { return m_filter; }

protected:
    // Descriptors of the route's x, y and w (set by the derived constructor), then one
    // convolution descriptor per direction (each carries its algorithm's math type).
    void make_conv_descriptors(const ConvGeometry& g);
    // FindEx (or the heuristics) per direction on the route's descriptors, with x, y and
    // w pointing at scratch of the route's sizes; fills m_fwd, m_data and m_filter but
    // their copy costs.
    void search(cudnnHandle_t h, const conv_search::Search& s, void* x, void* y, void* w, void* ws,
                std::size_t ws_bytes);
    // cuDNN's three calls on the route's descriptors.
    void run_forward(cudnnHandle_t h, const void* x, const void* w, void* y,
                     const DeviceMemory& ws) const;
    void run_backward_data(cudnnHandle_t h, const void* w, const void* dy, void* dx,
                           const DeviceMemory& ws) const;
    void run_backward_filter(cudnnHandle_t h, const void* x, const void* dy, void* dw,
                             const DeviceMemory& ws) const;
    // Milliseconds per call of `work` (gated_timing.h): the median of three after one
    // warm-up call; empty where the stream could not be timed (being captured).
    static std::optional<float> time_ms(cudaStream_t stream, const std::function<void()>& work);

    ConvGeometry m_g;
    DType m_t;
    MathMode m_m;
    TensorDesc m_x, m_y;
    FilterDesc m_w;
    ConvDesc m_fwd_desc, m_data_desc, m_filter_desc;
    RouteDirection m_fwd, m_data, m_filter;
};

} // namespace mixlab::cuda
