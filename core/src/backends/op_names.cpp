// The short enum names of op_names.h.
#include "backends/op_names.h"

namespace mixlab {

const char* dtype_short_name(DType t)
{
    switch (t) {
    case DType::F32: return "f32";
    case DType::F16: return "f16";
    case DType::BF16: return "bf16";
    case DType::I32: return "i32";
    case DType::U8: return "u8";
    case DType::I16: return "i16";
    case DType::F8E4M3: return "e4m3";
    case DType::F8E5M2: return "e5m2";
    }
    return "?";
}

const char* epilogue_name(Epilogue e)
{
    switch (e) {
    case Epilogue::None: return "none";
    case Epilogue::Bias: return "bias";
    case Epilogue::BiasRelu: return "bias_relu";
    case Epilogue::BiasGelu: return "bias_gelu";
    case Epilogue::BiasGradA: return "bias_grad_a";
    }
    return "?";
}

const char* math_mode_name(MathMode m)
{
    switch (m) {
    case MathMode::Pedantic: return "pedantic";
    case MathMode::TF32: return "tf32";
    case MathMode::Reduced: return "reduced";
    }
    return "?";
}

} // namespace mixlab
