// The sequence ops' shared argument checks (backend_validate_sequence.h): embedding and
// LSTM buffers against the sizes and dtypes of mixlab/backend.h.
#include "backends/backend_validate_sequence.h"

#include "backends/backend_validate.h"

#include <string>

namespace mixlab::validate {

namespace {

// b holds at least `need` elements of the layer's dtype.
void layer_buffer(const char* backend, const char* op, DType dtype, const Buffer& b,
                  std::size_t need, const char* name)
{
    floating(backend, op, b, need, name);
    require(b.dtype() == dtype, backend, op, name, " must be ", dtype, " (the layer's dtype), got ",
            b.dtype());
}

void optional_buffer(const char* backend, const char* op, DType dtype, const Buffer* b,
                     std::size_t need, const char* name)
{
    if (b) layer_buffer(backend, op, dtype, *b, need, name);
}

void ids_buffer(const char* backend, const char* op, const Buffer& ids, int rows)
{
    require(ids.dtype() == DType::I32, backend, op, "ids must be int32, got ", ids.dtype());
    require(ids.count() >= std::size_t(rows) && (rows == 0 || ids.data() != nullptr), backend, op,
            "ids hold ", ids.count(), " elements, needs ", rows);
}

void embedding_sizes(const char* backend, const char* op, int rows, int dim, int vocab)
{
    require(rows > 0 && dim > 0 && vocab > 0, backend, op,
            "rows, dim and vocab must be positive, got ", rows, ", ", dim, " and ", vocab);
}

} // namespace

void append_part(std::string& s, const LstmShape& shape)
{
    append_parts(s, "steps ", shape.steps, ", batch ", shape.batch, ", input ", shape.input,
                 ", hidden ", shape.hidden);
}

void embedding_forward(const char* backend, const Buffer& table, const Buffer& ids_i32, int rows,
                       int dim, int vocab, const Buffer& y)
{
    const char* op = "embedding_forward";
    embedding_sizes(backend, op, rows, dim, vocab);
    floating(backend, op, table, std::size_t(vocab) * std::size_t(dim), "table");
    ids_buffer(backend, op, ids_i32, rows);
    layer_buffer(backend, op, table.dtype(), y, std::size_t(rows) * std::size_t(dim), "y");
}

void embedding_backward(const char* backend, const Buffer& dy, const Buffer& ids_i32, int rows,
                        int dim, int vocab, const Buffer& dtable)
{
    const char* op = "embedding_backward";
    embedding_sizes(backend, op, rows, dim, vocab);
    floating(backend, op, dy, std::size_t(rows) * std::size_t(dim), "dy");
    ids_buffer(backend, op, ids_i32, rows);
    layer_buffer(backend, op, DType::F32, dtable, std::size_t(vocab) * std::size_t(dim), "dtable");
}

void lstm_shape(const char* backend, const char* op, const LstmShape& s, DType dtype)
{
    require(s.steps > 0 && s.batch > 0 && s.input > 0 && s.hidden > 0, backend, op,
            "every size must be positive, got ", s);
    require(dtype == DType::F32 || dtype == DType::F16 || dtype == DType::BF16, backend, op,
            "the layer's dtype must be float32, float16 or bfloat16, got ", dtype);
}

void lstm_forward(const char* backend, const LstmShape& s, DType dtype, const Buffer& x,
                  const Buffer& h0, const Buffer& c0, const Buffer& w, const Buffer& y,
                  const Buffer& hT, const Buffer& cT)
{
    const char* op = "lstm_forward";
    lstm_shape(backend, op, s, dtype);
    layer_buffer(backend, op, dtype, x, s.x_count(), "x");
    layer_buffer(backend, op, dtype, h0, s.state_count(), "h0");
    layer_buffer(backend, op, dtype, c0, s.state_count(), "c0");
    layer_buffer(backend, op, dtype, w, s.weight_count(), "w");
    layer_buffer(backend, op, dtype, y, s.y_count(), "y");
    layer_buffer(backend, op, dtype, hT, s.state_count(), "hT");
    layer_buffer(backend, op, dtype, cT, s.state_count(), "cT");
}

void lstm_backward_data(const char* backend, const LstmShape& s, DType dtype, const Buffer& y,
                        const Buffer& dy, const Buffer* dhT, const Buffer* dcT, const Buffer& w,
                        const Buffer& h0, const Buffer& c0, const Buffer& dx, const Buffer* dh0,
                        const Buffer* dc0)
{
    const char* op = "lstm_backward_data";
    lstm_shape(backend, op, s, dtype);
    layer_buffer(backend, op, dtype, y, s.y_count(), "y");
    layer_buffer(backend, op, dtype, dy, s.y_count(), "dy");
    optional_buffer(backend, op, dtype, dhT, s.state_count(), "dhT");
    optional_buffer(backend, op, dtype, dcT, s.state_count(), "dcT");
    layer_buffer(backend, op, dtype, w, s.weight_count(), "w");
    layer_buffer(backend, op, dtype, h0, s.state_count(), "h0");
    layer_buffer(backend, op, dtype, c0, s.state_count(), "c0");
    layer_buffer(backend, op, dtype, dx, s.x_count(), "dx");
    optional_buffer(backend, op, dtype, dh0, s.state_count(), "dh0");
    optional_buffer(backend, op, dtype, dc0, s.state_count(), "dc0");
}

void lstm_backward_weights(const char* backend, const LstmShape& s, DType dtype, const Buffer& x,
                           const Buffer& h0, const Buffer& y, const Buffer& dw)
{
    const char* op = "lstm_backward_weights";
    lstm_shape(backend, op, s, dtype);
    layer_buffer(backend, op, dtype, x, s.x_count(), "x");
    layer_buffer(backend, op, dtype, h0, s.state_count(), "h0");
    layer_buffer(backend, op, dtype, y, s.y_count(), "y");
    layer_buffer(backend, op, dtype, dw, s.weight_count(), "dw");
}

} // namespace mixlab::validate
