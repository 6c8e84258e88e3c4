// Numbers and shapes in the ops' error messages, formatted with std::to_string.
//
// Why: on an H100 machine (torch 2.11.0+cu130, built with gcc-toolset 13; the extension built
// there with the system g++ 13.3) every failing check whose message streamed an integer crashed
// the process (SIGSEGV) instead of raising, even a bare `std::ostringstream() << int` without
// any exception, while messages made of strings raised cleanly: libtorch carries its own copies
// of the iostream/locale symbols, and the extension's numeric output through them broke. So the
// messages given to TORCH_CHECK hold strings only; the Python wrappers (ewe/ops/extension.py,
// ewe/ops/quantized_linear.py) check every argument first, and these checks are the second line.
#pragma once

#include <c10/util/ArrayRef.h>

#include <cstdint>
#include <string>

namespace ewe_ext {

inline std::string text(int64_t v) { return std::to_string(v); }

inline std::string text(double v) { return std::to_string(v); }

// "[2, 3, 64]": a tensor's sizes or strides.
inline std::string text(c10::IntArrayRef values) {
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i) out += ", ";
    out += std::to_string(values[i]);
  }
  return out + "]";
}

}  // namespace ewe_ext
