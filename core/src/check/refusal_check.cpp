// Calls outside an op's contract: both backends refuse them before running anything, in
// the same words after each one's own name ("cpu backend: ", "cuda backend: "). The
// argument checks are one copy (backends/backend_validate*.h) that every backend calls; a
// backend that checked a call its own way would word the refusal its own way, and the
// same mistake would read differently on the GPU than in the CPU test that caught it.
// Covered: the ops whose CUDA checks were once the backend's own (embedding, the LSTM,
// conv2d_prepare, max pooling's backward), and the order of calls an LSTM plan allows.
#include "check/refusal_check.h"

#include "check/check_harness.h"
#include "mixlab/error.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace mixlab {

namespace {

using check_harness::Rng;
using check_harness::Tol;
using check_harness::Verdict;

// The words of the Error `call` throws, less the backend's name (up to the first ": ");
// nothing when it throws nothing.
Refusal refusal(const std::function<void()>& call)
{
    try {
        call();
    } catch (const Error& e) {
        const std::string message = e.what();
        const std::size_t colon = message.find(": ");
        return colon == std::string::npos ? message : message.substr(colon + 2);
    }
    return std::nullopt;
}

// One bad call, made on the backend given (its buffers allocated there).
struct BadCall {
    const char* name;
    std::function<void(Backend&)> call;
};

std::vector<BadCall> bad_calls()
{
    constexpr int rows = 6, dim = 3, vocab = 4;
    const LstmShape s{2, 3, 4, 5};
    const DType f32 = DType::F32;
    const auto lstm = [s](Backend& b) { return b.lstm_prepare(s, DType::F32, MathMode::Pedantic); };
    // A training forward on a fresh float32 plan, every buffer right but w's count and y's
    // dtype.
    const auto forward = [s, lstm](Backend& b, std::size_t w_count, DType y_dtype) {
        auto plan = lstm(b);
        Buffer x = b.alloc(s.x_count(), f32), h0 = b.alloc(s.state_count(), f32),
               c0 = b.alloc(s.state_count(), f32), w = b.alloc(w_count, f32),
               y = b.alloc(s.y_count(), y_dtype), hT = b.alloc(s.state_count(), f32),
               cT = b.alloc(s.state_count(), f32);
        b.lstm_forward(*plan, x, h0, c0, w, true, y, hT, cT);
    };
    return {
        {"embedding_forward/y_short",
         [=](Backend& b) {
             Buffer table = b.alloc(vocab * dim, f32), ids = b.alloc(rows, DType::I32);
             Buffer y = b.alloc(rows * dim - 1, f32);
             b.embedding_forward(table, ids, rows, dim, vocab, y);
         }},
        {"embedding_forward/y_dtype",
         [=](Backend& b) {
             Buffer table = b.alloc(vocab * dim, f32), ids = b.alloc(rows, DType::I32);
             Buffer y = b.alloc(rows * dim, DType::F16);
             b.embedding_forward(table, ids, rows, dim, vocab, y);
         }},
        {"embedding_forward/ids_float",
         [=](Backend& b) {
             Buffer table = b.alloc(vocab * dim, f32), ids = b.alloc(rows, f32);
             Buffer y = b.alloc(rows * dim, f32);
             b.embedding_forward(table, ids, rows, dim, vocab, y);
         }},
        {"embedding_backward/dtable_bf16",
         [=](Backend& b) {
             Buffer dy = b.alloc(rows * dim, f32), ids = b.alloc(rows, DType::I32);
             Buffer dtable = b.alloc(vocab * dim, DType::BF16);
             b.embedding_backward(dy, ids, rows, dim, vocab, false, dtable);
         }},
        {"lstm_prepare/hidden_0",
         [=](Backend& b) {
             (void)b.lstm_prepare({2, 3, 4, 0}, f32, MathMode::Pedantic);
         }},
        {"lstm_prepare/int32",
         [=](Backend& b) { (void)b.lstm_prepare(s, DType::I32, MathMode::Pedantic); }},
        {"lstm_forward/w_short", [=](Backend& b) { forward(b, s.weight_count() - 1, f32); }},
        {"lstm_forward/y_dtype", [=](Backend& b) { forward(b, s.weight_count(), DType::BF16); }},
        // Right buffers, wrong moment: nothing has filled the plan's saved state yet.
        {"lstm_backward_data/before_forward",
         [=](Backend& b) {
             auto plan = lstm(b);
             Buffer y = b.alloc(s.y_count(), f32), dy = b.alloc(s.y_count(), f32),
                    w = b.alloc(s.weight_count(), f32), h0 = b.alloc(s.state_count(), f32),
                    c0 = b.alloc(s.state_count(), f32), dx = b.alloc(s.x_count(), f32);
             b.lstm_backward_data(*plan, y, dy, nullptr, nullptr, w, h0, c0, dx, nullptr, nullptr);
         }},
        {"lstm_backward_weights/before_backward",
         [=](Backend& b) {
             auto plan = lstm(b);
             Buffer x = b.alloc(s.x_count(), f32), h0 = b.alloc(s.state_count(), f32),
                    y = b.alloc(s.y_count(), f32), dw = b.alloc(s.weight_count(), f32);
             b.lstm_backward_weights(*plan, x, h0, y, dw);
         }},
        {"pool_backward/x_dtype",
         [=](Backend& b) {
             const PoolGeometry g = pool_geometry_of(2, 4, 4, 3, 2, 2, 2, 2, 0, 0);
             Buffer x = b.alloc(g.x_count(), DType::BF16), y = b.alloc(g.y_count(), DType::BF16);
             Buffer dy = b.alloc(g.y_count(), f32), dx = b.alloc(g.x_count(), f32);
             b.pool_backward(PoolMode::Max, g, x, y, dy, dx);
         }},
        {"conv2d_prepare/int32",
         [=](Backend& b) {
             (void)b.conv2d_prepare(conv_geometry_of(2, 5, 5, 3, 4, 3, 3, 1, 1, 1, 1), DType::I32,
                                    MathMode::Pedantic);
         }},
        {"conv2d_prepare/out_size",
         [=](Backend& b) {
             ConvGeometry g = conv_geometry_of(2, 5, 5, 3, 4, 3, 3, 1, 1, 1, 1);
             g.out_h += 1;
             (void)b.conv2d_prepare(g, f32, MathMode::Pedantic);
         }},
    };
}

} // namespace

std::string refusal_disagreement(const Refusal& reference, const Refusal& candidate)
{
    if (!reference) return "the reference ran it";
    if (candidate == reference) return {};
    return "the reference refused it with \"" + *reference + "\", the candidate " +
           (candidate ? "with \"" + *candidate + "\"" : std::string("ran it"));
}

std::vector<CheckResult> run_refusal_checks(Backend& reference, Backend& candidate,
                                            std::uint64_t seed, const std::string& filter)
{
    std::vector<CheckResult> results;
    for (const BadCall& bad : bad_calls())
        check_harness::run_check(
            std::string("refuses/") + bad.name, filter, seed,
            [&](Verdict& v, Rng&) {
                const Refusal ref = refusal([&] { bad.call(reference); });
                const std::string why =
                    refusal_disagreement(ref, refusal([&] { bad.call(candidate); }));
                if (!why.empty())
                    v.fail(why);
                else
                    v.note("both: \"" + *ref + "\"");
                v.compare("refused", {1.0f}, {1.0f}, Tol{});
            },
            results);
    return results;
}

} // namespace mixlab
