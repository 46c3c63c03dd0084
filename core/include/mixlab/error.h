// Errors the engine throws. Every message is meant for the user: it names what is
// wrong and, where it can, what to do about it.
#pragma once
#include <stdexcept>
#include <string>

namespace mixlab {

// Base of everything MixLab throws on purpose.
class Error : public std::runtime_error {
public:
    explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// Bad input from the user: model spec, run config, command-line options (CLI exit 2).
class InputError : public Error {
public:
    using Error::Error;
};

// A model spec that does not validate; the message names the layer index, type and field.
class SpecError : public InputError {
public:
    using InputError::InputError;
};

// A dataset file that is missing, truncated or malformed; names the file.
class DataError : public InputError {
public:
    using InputError::InputError;
};

// The device cannot do what was asked (no CUDA device, no bf16/TF32 support).
// A size past what a library can address (cuDNN's legacy convolutions take tensors of
// at most 2^31 - 1 elements): a smaller batch or input is the fix.
class LimitError : public InputError {
public:
    using InputError::InputError;
};

class DeviceError : public Error {
public:
    using Error::Error;
};

// A CUDA, cuBLAS or cuDNN call failed; the message carries the call text, file and line.
class CudaError : public Error {
public:
    using Error::Error;
};

// Device memory ran out; the run ends with this message, the program does not.
class OutOfMemoryError : public CudaError {
public:
    using CudaError::CudaError;
};

} // namespace mixlab
