// Argument checks of the sequence ops (embedding, LSTM) that every backend makes before
// computing anything: the shapes and dtypes mixlab/backend.h promises, one copy for the
// CPU reference and the CUDA backend. Messages as in backend_validate.h.
#pragma once
#include "mixlab/backend.h"

namespace mixlab::validate {

// table (vocab x dim) and y (rows x dim) floating in one dtype, ids int32 x rows.
void embedding_forward(const char* backend, const Buffer& table, const Buffer& ids_i32, int rows,
                       int dim, int vocab, const Buffer& y);
// dy (rows x dim) floating, ids int32 x rows, dtable float32 (vocab x dim).
void embedding_backward(const char* backend, const Buffer& dy, const Buffer& ids_i32, int rows,
                        int dim, int vocab, const Buffer& dtable);

// Every size of the shape positive; dtype floating (float32, float16 or bfloat16).
void lstm_shape(const char* backend, const char* op, const LstmShape& s, DType dtype);
// Each buffer floating in the layer's dtype with at least the elements the shape needs;
// null pointers are skipped (the optional state buffers).
void lstm_forward(const char* backend, const LstmShape& s, DType dtype, const Buffer& x,
                  const Buffer& h0, const Buffer& c0, const Buffer& w, const Buffer& y,
                  const Buffer& hT, const Buffer& cT);
void lstm_backward_data(const char* backend, const LstmShape& s, DType dtype, const Buffer& y,
                        const Buffer& dy, const Buffer* dhT, const Buffer* dcT, const Buffer& w,
                        const Buffer& h0, const Buffer& c0, const Buffer& dx, const Buffer* dh0,
                        const Buffer* dc0);
void lstm_backward_weights(const char* backend, const LstmShape& s, DType dtype, const Buffer& x,
                           const Buffer& h0, const Buffer& y, const Buffer& dw);

} // namespace mixlab::validate
