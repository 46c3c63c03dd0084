// CUDA backend LSTM layer through cuDNN's v8 RNN API: one plan per call site (descriptors,
// the device sequence lengths, workspace and reserve space, all made in lstm_prepare), and
// forward, backward data and backward weights on the backend's stream with no host sync
// and no allocation, so that a recorded step (CUDA graph) holds them like any other op.
// The weight buffer is used as cuDNN's weight space directly: lstm_prepare proves that
// cuDNN lays this descriptor's weight space out in PyTorch's flat order (LstmShape).
#include "backends/cuda/cuda_backend.h"

#include "backends/backend_validate.h"
#include "backends/backend_validate_sequence.h"
#include "backends/cuda/conv_cudnn.h"
#include "backends/cuda/cuda_check.h"
#include "backends/cuda/cudnn_handles.h"
#include "backends/op_names.h"
#include "mixlab/error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mixlab::cuda {

namespace {

// Exact fp32 (Pedantic, and Reduced as for GEMMs) stays on FMA kernels: DEFAULT_MATH would
// let cuDNN use TF32 on Ampere and later. TF32: DEFAULT_MATH, as PyTorch does for fp32 RNNs
// with TF32 allowed (TENSOR_OP_MATH_ALLOW_CONVERSION would round fp32 operands to fp16, not
// TF32). 16-bit data: tensor cores; the compute precision (mathPrec) is float throughout.
cudnnMathType_t rnn_math(DType t, MathMode m)
{
    if (t != DType::F32) return CUDNN_TENSOR_OP_MATH;
    return m == MathMode::TF32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH;
}

class CudnnLstmPlan final : public LstmPlan {
public:
    const LstmShape& shape() const override { return s; }
    std::int64_t device_bytes() const override
    {
        return std::int64_t(reserve.bytes() + workspace.bytes() + seq_lengths.bytes());
    }

    const CudaBackend* owner = nullptr; // plans run only on the backend that made them
    LstmShape s;
    DType dtype = DType::F32;
    MathMode math = MathMode::Pedantic;
    DropoutDesc dropout;
    RnnDesc rnn;
    RnnDataDesc x_desc, y_desc;
    TensorDesc state_desc; // h and c: (layers = 1, batch, hidden)
    std::size_t weight_bytes = 0;
    DeviceMemory seq_lengths; // int32 x batch, every one = steps (cuDNN reads it on the device)
    DeviceMemory workspace, reserve;
    bool trained = false;  // a training forward has filled the reserve space
    bool backward = false; // backward data has run since (and overwrote the reserve space)
};

// One linear layer's matrix or bias as cuDNN places it in the weight space.
struct Part {
    std::size_t offset_bytes = 0;
    std::vector<int> dims, strides;
};

Part read_part(cudnnTensorDescriptor_t d, const void* base, const void* addr)
{
    Part p;
    cudnnDataType_t dt{};
    int n = 0;
    int dims[8] = {}, strides[8] = {};
    MIXLAB_CUDNN_CHECK(cudnnGetTensorNdDescriptor(d, 8, &dt, &n, dims, strides));
    p.dims.assign(dims, dims + n);
    p.strides.assign(strides, strides + n);
    p.offset_bytes = std::size_t(static_cast<const unsigned char*>(addr) -
                                 static_cast<const unsigned char*>(base));
    return p;
}

std::string dims_text(const std::vector<int>& v)
{
    // Appended piece by piece: `(t.empty() ? "" : "x") + std::to_string(x)` draws GCC 12's
    // false -Wrestrict on std::string's operator+.
    std::string t;
    for (int x : v) {
        if (!t.empty()) t += 'x';
        t += std::to_string(x);
    }
    return t;
}

// A matrix (rows x cols) or vector (cols = 1) stored densely, row-major, at `offset`
// elements: what the interface's flat buffer promises for this part.
bool part_matches(const Part& p, std::size_t offset, int rows, int cols, std::size_t elem)
{
    if (p.offset_bytes != offset * elem || p.dims.empty()) return false;
    std::int64_t count = 1;
    for (int d : p.dims) count *= d;
    if (count != std::int64_t(rows) * cols) return false;
    // Row-major: the innermost dimension (stride 1) runs along a row of `cols`.
    return cols == 1 || (p.dims.back() == cols && p.strides.back() == 1);
}

// Proves that cuDNN's weight space for this descriptor is the interface's flat layout:
// W_ih (gates i, f, g, o = linear layers 0-3), W_hh (4-7), b_ih, b_hh. Needs a weight
// space to point into: a temporary one, freed before the first step.
void verify_weight_layout(cudnnHandle_t h, const CudnnLstmPlan& p)
{
    const LstmShape& s = p.s;
    const std::size_t elem = dtype_size(p.dtype);
    const DeviceMemory space(p.weight_bytes, "the LSTM weight-layout check");
    TensorDesc m = TensorDesc::create(), b = TensorDesc::create();
    for (int layer = 0; layer < 8; ++layer) {
        void* m_addr = nullptr;
        void* b_addr = nullptr;
        MIXLAB_CUDNN_CHECK(cudnnGetRNNWeightParams(h, p.rnn.get(), 0, p.weight_bytes, space.get(),
                                                   layer, m.get(), &m_addr, b.get(), &b_addr));
        const bool recurrent = layer >= 4;
        const int gate = layer % 4;
        const int cols = recurrent ? s.hidden : s.input;
        const std::size_t m_off =
            (recurrent ? s.w_hh_offset() : 0) + std::size_t(gate) * s.hidden * cols;
        const std::size_t b_off =
            (recurrent ? s.b_hh_offset() : s.b_ih_offset()) + std::size_t(gate) * s.hidden;
        const Part mp = read_part(m.get(), space.get(), m_addr);
        const Part bp = read_part(b.get(), space.get(), b_addr);
        if (!part_matches(mp, m_off, s.hidden, cols, elem) ||
            !part_matches(bp, b_off, s.hidden, 1, elem))
            throw DeviceError(validate::joined(
                "cuDNN ", cudnn_runtime_version(),
                " lays out the LSTM weights differently from PyTorch's flat order (", s, ", ",
                p.dtype, "): linear layer ", layer, " has its matrix ", dims_text(mp.dims),
                " at byte ", mp.offset_bytes, " and its bias ", dims_text(bp.dims), " at byte ",
                bp.offset_bytes, ", expected ", s.hidden, "x", cols, " at byte ", m_off * elem,
                " and ", s.hidden, " at byte ", b_off * elem,
                "; MixLab's LSTM cannot run on this cuDNN"));
    }
}

void build_descriptors(cudnnHandle_t h, CudnnLstmPlan& p)
{
    const LstmShape& s = p.s;
    const cudnnDataType_t dt = cudnn_data_type(p.dtype, "lstm_prepare");
    // No dropout inside one layer; cuDNN still wants a descriptor, and with a rate of
    // 0 it needs no random states (PyTorch's set_no_dropout does the same).
    p.dropout = DropoutDesc::create();
    MIXLAB_CUDNN_CHECK(cudnnSetDropoutDescriptor(p.dropout.get(), h, 0.0f, nullptr, 0, 0));
    p.rnn = RnnDesc::create();
    MIXLAB_CUDNN_CHECK(cudnnSetRNNDescriptor_v8(
        p.rnn.get(), CUDNN_RNN_ALGO_STANDARD, CUDNN_LSTM, CUDNN_RNN_DOUBLE_BIAS,
        CUDNN_UNIDIRECTIONAL, CUDNN_LINEAR_INPUT, dt, CUDNN_DATA_FLOAT, rnn_math(p.dtype, p.math),
        s.input, s.hidden, s.hidden, 1, p.dropout.get(), CUDNN_RNN_PADDED_IO_ENABLED));

    // Time-major (steps, batch, features) with every sequence the full length.
    const std::vector<int> lengths(std::size_t(s.batch), s.steps);
    p.x_desc = RnnDataDesc::create();
    MIXLAB_CUDNN_CHECK(cudnnSetRNNDataDescriptor(p.x_desc.get(), dt,
                                                 CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_UNPACKED, s.steps,
                                                 s.batch, s.input, lengths.data(), nullptr));
    p.y_desc = RnnDataDesc::create();
    MIXLAB_CUDNN_CHECK(cudnnSetRNNDataDescriptor(p.y_desc.get(), dt,
                                                 CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_UNPACKED, s.steps,
                                                 s.batch, s.hidden, lengths.data(), nullptr));
    const int dims[3] = {1, s.batch, s.hidden};
    const int strides[3] = {s.batch * s.hidden, s.hidden, 1};
    p.state_desc = TensorDesc::create();
    MIXLAB_CUDNN_CHECK(cudnnSetTensorNdDescriptor(p.state_desc.get(), dt, 3, dims, strides));

    MIXLAB_CUDNN_CHECK(cudnnGetRNNWeightSpaceSize(h, p.rnn.get(), &p.weight_bytes));
    const std::size_t want = s.weight_count() * dtype_size(p.dtype);
    if (p.weight_bytes != want)
        throw DeviceError(validate::joined("cuDNN ", cudnn_runtime_version(), " asks for ",
                                           p.weight_bytes, " bytes of LSTM weights (", s, ", ",
                                           p.dtype, "), PyTorch's flat layout has ", want,
                                           "; MixLab's LSTM cannot run on this cuDNN"));
    verify_weight_layout(h, p);

    std::size_t ws_train = 0, reserve = 0, ws_infer = 0, unused = 0;
    MIXLAB_CUDNN_CHECK(cudnnGetRNNTempSpaceSizes(h, p.rnn.get(), CUDNN_FWD_MODE_TRAINING,
                                                 p.x_desc.get(), &ws_train, &reserve));
    MIXLAB_CUDNN_CHECK(cudnnGetRNNTempSpaceSizes(h, p.rnn.get(), CUDNN_FWD_MODE_INFERENCE,
                                                 p.x_desc.get(), &ws_infer, &unused));
    const std::size_t ws = ws_train > ws_infer ? ws_train : ws_infer;
    if (ws) p.workspace = DeviceMemory(ws, "the LSTM workspace");
    if (reserve) p.reserve = DeviceMemory(reserve, "the LSTM reserve space");
}

CudnnLstmPlan& own_plan(const CudaBackend* backend, LstmPlan& plan, const char* op)
{
    auto* p = dynamic_cast<CudnnLstmPlan*>(&plan);
    require(p && p->owner == backend, op, "the LSTM plan was made by another backend");
    return *p;
}

} // namespace

std::unique_ptr<LstmPlan> CudaBackend::lstm_prepare(const LstmShape& s, DType dtype, MathMode math)
{
    validate::lstm_shape(k_name, "lstm_prepare", s, dtype);
    if (dtype == DType::BF16 && !m_info.bf16)
        throw DeviceError("bfloat16 LSTMs need compute capability 8.0 or newer; " + m_info.name +
                          " is " + std::to_string(m_info.cc_major) + "." +
                          std::to_string(m_info.cc_minor));
    // cuDNN describes the sequences with int32 sizes.
    require(s.x_count() < std::size_t(INT32_MAX) && s.y_count() < std::size_t(INT32_MAX),
            "lstm_prepare", "a sequence tensor of 2^31 elements or more (", s, ")");

    auto p = std::make_unique<CudnnLstmPlan>();
    p->owner = this;
    p->s = s;
    p->dtype = dtype;
    p->math = math;
    const cudnnHandle_t h = m_conv->handle();
    try {
        build_descriptors(h, *p);
    } catch (const OutOfMemoryError&) {
        throw;
    } catch (const CudaError& e) {
        // bf16 RNNs exist only in some cuDNN builds and GPUs: say so rather than quote
        // the failing call alone.
        if (dtype == DType::BF16)
            throw DeviceError(validate::joined("cuDNN ", cudnn_runtime_version(),
                                               " has no bfloat16 LSTM for ", s, " on ", m_info.name,
                                               " (", e.what(), "); use mixed_fp16 or fp32"));
        throw;
    }
    p->seq_lengths =
        DeviceMemory(std::size_t(s.batch) * sizeof(std::int32_t), "the LSTM sequence lengths");
    const std::vector<std::int32_t> lengths(std::size_t(s.batch), s.steps);
    MIXLAB_CUDA_CHECK(cudaMemcpyAsync(p->seq_lengths.get(), lengths.data(),
                                      lengths.size() * sizeof(std::int32_t), cudaMemcpyHostToDevice,
                                      stream()));
    // The host vector must outlive the copy: preparing is setup, not a step.
    MIXLAB_CUDA_CHECK(cudaStreamSynchronize(stream()));
    return p;
}

void CudaBackend::lstm_forward(LstmPlan& plan, const Buffer& x, const Buffer& h0, const Buffer& c0,
                               const Buffer& w, bool training, Buffer& y, Buffer& hT, Buffer& cT)
{
    const char* op = "lstm_forward";
    CudnnLstmPlan& p = own_plan(this, plan, op);
    const LstmShape& s = p.s;
    validate::lstm_forward(k_name, s, p.dtype, x, h0, c0, w, y, hT, cT);
    MIXLAB_CUDNN_CHECK(cudnnRNNForward(
        m_conv->handle(), p.rnn.get(),
        training ? CUDNN_FWD_MODE_TRAINING : CUDNN_FWD_MODE_INFERENCE,
        p.seq_lengths.as<std::int32_t>(), p.x_desc.get(), x.data(), p.y_desc.get(), y.data(),
        p.state_desc.get(), h0.data(), hT.data(), p.state_desc.get(), c0.data(), cT.data(),
        p.weight_bytes, w.data(), p.workspace.bytes(), p.workspace.get(),
        training ? p.reserve.bytes() : 0, training ? p.reserve.get() : nullptr));
    if (training) {
        p.trained = true;
        p.backward = false;
    }
}

void CudaBackend::lstm_backward_data(LstmPlan& plan, const Buffer& y, const Buffer& dy,
                                     const Buffer* dhT, const Buffer* dcT, const Buffer& w,
                                     const Buffer& h0, const Buffer& c0, Buffer& dx, Buffer* dh0,
                                     Buffer* dc0)
{
    const char* op = "lstm_backward_data";
    CudnnLstmPlan& p = own_plan(this, plan, op);
    const LstmShape& s = p.s;
    validate::lstm_backward_data(k_name, s, p.dtype, y, dy, dhT, dcT, w, h0, c0, dx, dh0, dc0);
    require(p.trained, op, "no training forward pass has filled the plan");
    // cuDNN's backward data overwrites the reserve space the forward filled: a second
    // one of the same forward reads its own leftovers (measured: nonsense gradients).
    require(!p.backward, op,
            "backward data already ran for this forward (run a training forward again)");
    p.backward = true;
    // cuDNN reads a null dhy/dcy as zero and skips a null dhx/dcx: the contract's nulls.
    MIXLAB_CUDNN_CHECK(cudnnRNNBackwardData_v8(
        m_conv->handle(), p.rnn.get(), p.seq_lengths.as<std::int32_t>(), p.y_desc.get(), y.data(),
        dy.data(), p.x_desc.get(), dx.data(), p.state_desc.get(), h0.data(),
        dhT ? dhT->data() : nullptr, dh0 ? dh0->data() : nullptr, p.state_desc.get(), c0.data(),
        dcT ? dcT->data() : nullptr, dc0 ? dc0->data() : nullptr, p.weight_bytes, w.data(),
        p.workspace.bytes(), p.workspace.get(), p.reserve.bytes(), p.reserve.get()));
}

void CudaBackend::lstm_backward_weights(LstmPlan& plan, const Buffer& x, const Buffer& h0,
                                        const Buffer& y, Buffer& dw)
{
    const char* op = "lstm_backward_weights";
    CudnnLstmPlan& p = own_plan(this, plan, op);
    const LstmShape& s = p.s;
    validate::lstm_backward_weights(k_name, s, p.dtype, x, h0, y, dw);
    require(p.trained && p.backward, op,
            "lstm_backward_data has not run for the latest training forward pass");
    MIXLAB_CUDNN_CHECK(cudnnRNNBackwardWeights_v8(
        m_conv->handle(), p.rnn.get(), CUDNN_WGRAD_MODE_ADD, p.seq_lengths.as<std::int32_t>(),
        p.x_desc.get(), x.data(), p.state_desc.get(), h0.data(), p.y_desc.get(), y.data(),
        p.weight_bytes, dw.data(), p.workspace.bytes(), p.workspace.get(), p.reserve.bytes(),
        p.reserve.get()));
}

} // namespace mixlab::cuda
