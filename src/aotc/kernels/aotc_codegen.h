// Helpers the generated model code calls: element-wise semantics that match PyTorch
// (NaN-propagating max/min, Python-style integer division and remainder), error
// reporting, and the arena. Header-only and small, so a model compiles in well under a second.
#ifndef AOTC_CODEGEN_H
#define AOTC_CODEGEN_H

#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <type_traits>

#include "aotc_abi.h"

namespace aotc {

inline thread_local char g_error[1024];

inline int fail(int status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(g_error, sizeof g_error, fmt, ap);
  va_end(ap);
  return status;
}

inline const char *dtype_name(int32_t d) {
  static const char *names[] = {"float32", "float64", "float16", "bfloat16", "int8",
                                "int16", "int32", "int64", "uint8", "bool"};
  return (d >= 0 && d < 10) ? names[d] : "unknown";
}

inline int64_t numel(const aotc_tensor &t) {
  int64_t n = 1;
  for (int32_t d = 0; d < t.ndim; ++d) n *= t.sizes[d];
  return n;
}

inline bool is_contiguous(const aotc_tensor &t) {
  // an empty tensor has no element to misplace: torch calls any stride of it contiguous
  for (int32_t d = 0; d < t.ndim; ++d)
    if (t.sizes[d] == 0) return true;
  int64_t expected = 1;
  for (int32_t d = t.ndim - 1; d >= 0; --d) {
    if (t.sizes[d] != 1 && t.strides[d] != expected) return false;
    expected *= t.sizes[d];
  }
  return true;
}

inline int64_t align64(int64_t bytes) { return (bytes + 63) / 64 * 64; }

template <typename T> inline T maximum(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(a) || std::isnan(b)) return a + b;
  }
  return a > b ? a : b;
}

template <typename T> inline T minimum(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(a) || std::isnan(b)) return a + b;
  }
  return a < b ? a : b;
}

template <typename T> inline T floordiv(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    // torch's (and Python's) floor of the exact quotient: floor(a / b) would round first,
    // so 1.0 // 0.1 gave 10 instead of 9. Same steps as c10's div_floor_floating.
    if (b == 0) return a / b;
    const T mod = std::fmod(a, b);
    T div = (a - mod) / b;
    if (mod != 0 && ((b < 0) != (mod < 0))) div -= T(1);
    if (div == 0) return std::copysign(T(0), a / b);
    const T fl = std::floor(div);
    return div - fl > T(0.5) ? fl + T(1) : fl;
  } else {
    if (b == 0) return 0;  // integer division by zero: defined here instead of UB
    T q = a / b;
    return (q * b != a && ((a < 0) != (b < 0))) ? q - 1 : q;
  }
}

template <typename T> inline T truncdiv(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    return std::trunc(a / b);
  } else {
    return b == 0 ? T(0) : T(a / b);
  }
}

template <typename T> inline T remainder(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    T r = std::fmod(a, b);
    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
  } else {
    if (b == 0) return 0;
    T r = a % b;
    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
  }
}

template <typename T> inline T fmod(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    return std::fmod(a, b);
  } else {
    return b == 0 ? T(0) : T(a % b);
  }
}

template <typename T> inline T sigmoid(T x) { return T(1) / (T(1) + std::exp(-x)); }

template <typename T> inline T sign(T x) { return T((T(0) < x) - (x < T(0))); }

template <typename T> inline T round_half_even(T x) { return std::nearbyint(x); }

template <typename T> inline T ipow(T base, T exp) {
  if constexpr (std::is_floating_point_v<T>) {
    return std::pow(base, exp);
  } else {
    T result = 1;
    if (exp < 0) return base == 1 ? 1 : (base == -1 ? ((exp & 1) ? -1 : 1) : 0);
    while (exp) {
      if (exp & 1) result *= base;
      base *= base;
      exp >>= 1;
    }
    return result;
  }
}

}  // namespace aotc

#endif
