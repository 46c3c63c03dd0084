// Move-only owners for the cuDNN handle and descriptors: each destroys its object once,
// and a failure in a destructor is logged, never thrown.
#pragma once
#include "backends/cuda/cudnn_check.h"

#include <cstdio>
#include <utility>

namespace mixlab::cuda {

template <class H, cudnnStatus_t (*Create)(H*), cudnnStatus_t (*Destroy)(H)>
class CudnnObject {
public:
    CudnnObject() = default;
    // Tagged so that a default-constructed member stays empty until it is needed.
    struct CreateNow {};
    explicit CudnnObject(CreateNow) { MIXLAB_CUDNN_CHECK(Create(&m_h)); }
    CudnnObject(CudnnObject&& o) noexcept : m_h(std::exchange(o.m_h, nullptr)) {}
    CudnnObject& operator=(CudnnObject&& o) noexcept
    {
        if (this != &o) {
            reset();
            m_h = std::exchange(o.m_h, nullptr);
        }
        return *this;
    }
    CudnnObject(const CudnnObject&) = delete;
    CudnnObject& operator=(const CudnnObject&) = delete;
    ~CudnnObject() { reset(); }

    static CudnnObject create() { return CudnnObject(CreateNow{}); }
    H get() const { return m_h; }
    explicit operator bool() const { return m_h != nullptr; }
    void reset() noexcept
    {
        if (m_h) {
            const cudnnStatus_t st = Destroy(m_h);
            if (st != CUDNN_STATUS_SUCCESS)
                std::fprintf(stderr, "mixlab: cuDNN destroy failed: %s (ignored)\n",
                             cudnnGetErrorString(st));
            m_h = nullptr;
        }
    }

private:
    H m_h = nullptr;
};

using CudnnHandle = CudnnObject<cudnnHandle_t, cudnnCreate, cudnnDestroy>;
using TensorDesc =
    CudnnObject<cudnnTensorDescriptor_t, cudnnCreateTensorDescriptor, cudnnDestroyTensorDescriptor>;
using FilterDesc =
    CudnnObject<cudnnFilterDescriptor_t, cudnnCreateFilterDescriptor, cudnnDestroyFilterDescriptor>;
using ConvDesc = CudnnObject<cudnnConvolutionDescriptor_t, cudnnCreateConvolutionDescriptor,
                             cudnnDestroyConvolutionDescriptor>;
using DropoutDesc = CudnnObject<cudnnDropoutDescriptor_t, cudnnCreateDropoutDescriptor,
                                cudnnDestroyDropoutDescriptor>;
using RnnDesc =
    CudnnObject<cudnnRNNDescriptor_t, cudnnCreateRNNDescriptor, cudnnDestroyRNNDescriptor>;
using RnnDataDesc = CudnnObject<cudnnRNNDataDescriptor_t, cudnnCreateRNNDataDescriptor,
                                cudnnDestroyRNNDataDescriptor>;

} // namespace mixlab::cuda
