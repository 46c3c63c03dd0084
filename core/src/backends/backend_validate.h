// Argument checks every backend makes before an op computes or enqueues anything: the
// shapes, dtypes and counts that mixlab/backend.h promises. One copy, so the CPU
// reference and the CUDA backend reject exactly the same calls. Plain C++ (no CUDA).
#pragma once
#include "mixlab/backend.h"

#include <cstddef>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

// A failed check is an engine bug (wrong sizes or dtypes), not a user error: each
// throws mixlab::Error("<backend> backend: <op>: <what>"), `backend` being "cpu" or "cuda".
namespace mixlab::validate {

[[noreturn, gnu::cold]] void fail(const char* backend, const char* op, const std::string& what);

// ---- a failed check's message, written only when it fails -----------------------------
// The checks run on every op call (the CPU backend's every step), so `what` comes in
// parts that require joins only on failure: a message built up front would cost a string
// (an allocation past 15 characters) and its number formatting on every call that passes.

inline void append_part(std::string& s, std::string_view text) { s += text; }
inline void append_part(std::string& s, DType t) { s += dtype_name(t); }
// A number as std::to_string writes it (a float too: "%f").
template <class T>
requires std::is_arithmetic_v<T>
void append_part(std::string& s, T n)
{
    // A char would print as its code here, where `std::string + c` appends the letter,
    // and a bool as 0 or 1: both are likelier mistakes than intent. Pass text, or int(c).
    static_assert(!std::is_same_v<T, bool>, "a bool message part: pass text");
    static_assert(!std::is_same_v<T, char> && !std::is_same_v<T, signed char> &&
                      !std::is_same_v<T, unsigned char> && !std::is_same_v<T, wchar_t> &&
                      !std::is_same_v<T, char8_t> && !std::is_same_v<T, char16_t> &&
                      !std::is_same_v<T, char32_t>,
                  "a character message part: pass a string, or int(c) for its code");
    s += std::to_string(n);
}
// The shapes, as the messages have always named them (backend_validate.cpp and
// backend_validate_sequence.cpp): declared before the templates below so that they find
// them (argument-dependent lookup looks in mixlab, not here).
void append_part(std::string& s, const ImageShape& shape); // "28x28x1"
void append_part(std::string& s, const ConvGeometry& g);   // "x 8x28x28x1, y ..., pad 1x1"
void append_part(std::string& s, const PoolGeometry& g);   // "x 8x28x28x16, y ..., pad 0x0"
void append_part(std::string& s, const LstmShape& shape);  // "steps 35, batch 20, ..."

template <class... Parts>
void append_parts(std::string& s, const Parts&... parts)
{
    (append_part(s, parts), ...);
}

// The parts joined, for messages thrown as other errors (DeviceError) that name the same
// shapes: one text per shape, whichever error carries it.
template <class... Parts>
std::string joined(const Parts&... parts)
{
    std::string s;
    append_parts(s, parts...);
    return s;
}

// Joins the parts and throws: out of line and cold, so that an inlined require's passing
// path is its one branch. require instantiates it for the decayed part types, so that
// string literals of different lengths share an instantiation.
template <class... Parts>
[[noreturn, gnu::cold, gnu::noinline]] void fail_parts(const char* backend, const char* op,
                                                       const Parts&... parts)
{
    fail(backend, op, joined(parts...));
}

// Throws when !ok, `what` being the parts joined: text (const char*, std::string,
// std::string_view), integers and floats (as std::to_string), DTypes (dtype_name) and
// the shapes above. Pass them apart, not concatenated: require(n <= cap, backend, op,
// "holds ", n, " elements, needs ", cap).
template <class... Parts>
void require(bool ok, const char* backend, const char* op, const Parts&... parts)
{
    if (!ok) [[unlikely]]
        fail_parts<std::decay_t<const Parts&>...>(backend, op, parts...);
}

// Which parameter slot of prepare_params a message is about: "slot 3: ". A message part,
// so that a slot's checks that pass write no text.
struct SlotName {
    std::size_t index = 0;
};
void append_part(std::string& s, SlotName slot);

// b is a floating buffer holding at least `need` elements (allocated when need > 0).
void floating(const char* backend, const char* op, const Buffer& b, std::size_t need,
              const char* name);
// The same for a slot's buffer: "slot 3: grad must be a floating buffer, ...".
void floating(const char* backend, const char* op, const Buffer& b, std::size_t need,
              const char* name, SlotName slot);

// count elements are whole rows of `cols`; returns the number of rows.
std::size_t whole_rows(const char* backend, const char* op, std::size_t count, int cols);

// [offset, offset + count) lies inside b; `writing` picks the message's verb.
void element_range(const char* backend, const char* op, const Buffer& b, std::size_t offset,
                   std::size_t count, bool writing);

// ---- per op: the checks of the Backend method of the same name ------------------------
void upload_raw(const char* backend, const Buffer& dst, std::size_t bytes);
void cast(const char* backend, const Buffer& x, const Buffer& y);
void gather_batch(const char* backend, const Buffer& images_u8, const Buffer& labels_u8,
                  const Buffer& order_i32, std::int64_t offset, int batch, const ImageShape& image,
                  const Normalization& norm, const Augmentation& aug, const StepCounter& counter,
                  const Buffer& out, const Buffer& out_labels);
// The stream holds batch columns of column_len tokens; ids and targets hold steps x batch;
// the window (row .. row + steps, and the targets one row on) lies inside a column.
void gather_tokens(const char* backend, const Buffer& stream_i32, std::int64_t column_len,
                   int batch, int steps, std::int64_t row, const StepCounter& counter,
                   const Buffer& ids_i32, const Buffer& targets_i32);
// A set counter is an int32 buffer of at least two words, with steps_per_epoch >= 1.
void step_counter(const char* backend, const char* op, const StepCounter& counter);
// a, b, y floating with equal counts, act None or Relu.
void add_activation(const char* backend, Activation act, const Buffer& a, const Buffer& b,
                    const Buffer& y);
// The geometry is consistent (positive sizes; out = (in + 2*pad - kernel)/stride + 1).
void conv_geometry(const char* backend, const char* op, const ConvGeometry& g);
// conv2d_prepare: a consistent geometry and a floating dtype to plan for.
void conv2d_prepare(const char* backend, const ConvGeometry& g, DType dtype);
void pool_geometry(const char* backend, const char* op, const PoolGeometry& g);
// op: "conv2d_forward", "conv2d_backward_data" or "conv2d_backward_filter". `in` is
// x-sized (x or dx), `w` weight-sized (w or dw), `out` y-sized (y or dy); one floating
// dtype for all three.
void conv2d(const char* backend, const char* op, const ConvGeometry& g, const Buffer& in,
            const Buffer& w, const Buffer& out);
// x and y: rows*channels in one floating dtype; every per-channel buffer float32 with
// at least `channels` elements.
void batchnorm(const char* backend, const char* op, const Buffer& x, int rows, int channels,
               const std::vector<const Buffer*>& per_channel, const Buffer& y);
// `in` x-sized, `out` y-sized, same floating dtype.
void pool(const char* backend, const char* op, const PoolGeometry& g, const Buffer& in,
          const Buffer& out);
// pool_backward: dx and dy as `pool` checks them; under max also x and y, in dx's dtype
// (the gradient goes to the window's maximum, found by reading x beside dx).
void pool_backward(const char* backend, PoolMode mode, const PoolGeometry& g, const Buffer& x,
                   const Buffer& y, const Buffer& dy, const Buffer& dx);
// An fp8 GEMM (either operand F8E4M3/F8E5M2) goes to backend_validate_fp8.h's fp8_gemm.
void gemm(const char* backend, const GemmCall& call);
// Both return the number of rows.
std::size_t bias_activation(const char* backend, const Buffer& x, const Buffer* bias, int cols,
                            const Buffer& y);
std::size_t activation_backward(const char* backend, Activation act, const Buffer& x,
                                const Buffer& y, const Buffer& dy, int cols, const Buffer& dx);
void bias_grad(const char* backend, const Buffer& dy, int rows, int cols, const Buffer& out);
// The numerics ops: floating operands of one count; counts I32 with room for `slots`
// counters at offset.
void value_histogram(const char* backend, const Buffer& x, const Buffer& counts,
                     std::size_t offset);
void update_histogram(const char* backend, const Buffer& before, const Buffer& after,
                      const Buffer& grad, const Buffer& counts, std::size_t offset);
// An I32/I16/U8 buffer holding at least `bytes`.
void copy_raw_to_host(const char* backend, const Buffer& src, std::size_t bytes);
// op: "dropout_forward" or "dropout_backward".
void dropout(const char* backend, const char* op, const Buffer& in, float rate, const Buffer& out);
void cross_entropy(const char* backend, const Buffer& logits, const Buffer& labels_i32, int batch,
                   int classes, const Buffer* scaler, const Buffer* dlogits, const Buffer& record,
                   std::size_t record_offset);

// Which buffers an activation's backward pass reads: only GELU needs its input; the
// others are functions of the output, except the identity, which needs neither. The
// unused buffer may be anything (relu computed in place passes its output twice).
inline bool activation_backward_reads_x(Activation act) { return act == Activation::Gelu; }
inline bool activation_backward_reads_y(Activation act)
{
    return act != Activation::Gelu && act != Activation::None;
}

// The epilogues that add a bias to C (and so need GemmCall::bias).
inline bool epilogue_adds_bias(Epilogue e)
{
    return e == Epilogue::Bias || e == Epilogue::BiasRelu || e == Epilogue::BiasGelu;
}

// What a parameter table must remember of its slots for optimizer_step's checks.
struct SlotStates {
    std::size_t slots = 0;
    bool all_state1 = true, all_state2 = true;
};

// Checks every slot as prepare_params receives it: master and grad set, every buffer
// floating with the master's count, optimizer state in the master's dtype.
SlotStates param_slots(const char* backend, const std::vector<ParamSlot>& slots);
void optimizer_step(const char* backend, const OptimizerConfig& opt, const ScalerParams& scaling,
                    const SlotStates& states, const Buffer& scaler, const Buffer& record,
                    std::size_t record_offset);

} // namespace mixlab::validate
