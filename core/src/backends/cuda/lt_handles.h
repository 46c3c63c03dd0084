// Move-only owners for cuBLASLt's handle and descriptors: each destroys its object once,
// and a failure in a destructor is logged, never thrown.
#pragma once
#include "backends/cuda/cuda_check.h"

#include <cstdio>
#include <utility>

namespace mixlab::cuda {

template <class H, cublasStatus_t (*Destroy)(H)>
class LtObject {
public:
    LtObject() = default;
    explicit LtObject(H h) : m_h(h) {}
    LtObject(LtObject&& o) noexcept : m_h(std::exchange(o.m_h, nullptr)) {}
    LtObject& operator=(LtObject&& o) noexcept
    {
        if (this != &o) {
            reset();
            m_h = std::exchange(o.m_h, nullptr);
        }
        return *this;
    }
    LtObject(const LtObject&) = delete;
    LtObject& operator=(const LtObject&) = delete;
    ~LtObject() { reset(); }

    H get() const { return m_h; }
    void reset() noexcept
    {
        if (m_h) {
            const cublasStatus_t st = Destroy(m_h);
            if (st != CUBLAS_STATUS_SUCCESS)
                std::fprintf(stderr, "mixlab: cuBLASLt destroy failed: %s (ignored)\n",
                             cublasLtGetStatusName(st));
            m_h = nullptr;
        }
    }

private:
    H m_h = nullptr;
};

using LtHandle = LtObject<cublasLtHandle_t, cublasLtDestroy>;
using LtMatmulDesc = LtObject<cublasLtMatmulDesc_t, cublasLtMatmulDescDestroy>;
using LtLayout = LtObject<cublasLtMatrixLayout_t, cublasLtMatrixLayoutDestroy>;
using LtPreference = LtObject<cublasLtMatmulPreference_t, cublasLtMatmulPreferenceDestroy>;

} // namespace mixlab::cuda
