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
#include <cstring>
#include <limits>
#include <type_traits>

#include "aotc_abi.h"
#include "aotc_profile.h"
#include "aotc_special.h"

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__)
// the 512-bit intrinsics of integer products' epilogues (codegen/cpp/templates/epilogue_simd.py)
#include <immintrin.h>
#endif

#if defined(__aarch64__) && !defined(__clang__) && __GNUC__ < 13
// g++ 12 has _Float16 in C but not in C++ on aarch64, where __fp16 is the same IEEE binary16:
// a storage type whose arithmetic is float's, as the generated code uses float16
typedef __fp16 _Float16;
#endif

namespace aotc {

inline thread_local char g_error[1024];
// set by generated code that could not allocate scratch memory (pack_constant widening a
// half weight), so that the exported function reports AOTC_ERR_MEMORY
inline thread_local bool g_no_memory = false;
// set by generated code packing an int4 weight (pack_constant): how many of its values lay
// outside -8..7, which the two-a-byte layout cannot hold (AOTC_ERR_INPUT)
inline thread_local int64_t g_outside_int4 = 0;

inline int fail(int status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(g_error, sizeof g_error, fmt, ap);
  va_end(ap);
  return status;
}

inline const char *dtype_name(int32_t d) {
  static const char *names[] = {"float32", "float64", "float16", "bfloat16", "int8",
                                "int16", "int32", "int64", "uint8", "bool", "uint64",
                                "complex64", "complex128"};
  return (d >= 0 && d < 13) ? names[d] : "unknown";
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

// ---- half precision storage -----------------------------------------------------------------
// float16 is the compiler's _Float16; bfloat16 is this struct. Both are storage types only:
// values convert to float on load, are computed in float, and round to nearest even on
// store, as PyTorch computes half types on CPU.

inline float bf16_bits_to_float(uint16_t b) {
  const uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  __builtin_memcpy(&f, &u, sizeof f);
  return f;
}

inline uint16_t float_to_bf16_bits(float f) {
  uint32_t u;
  __builtin_memcpy(&u, &f, sizeof u);
  const uint32_t rounded = u + 0x7fffu + ((u >> 16) & 1u);  // to nearest, ties to even
  return f != f ? static_cast<uint16_t>((u >> 16) | 0x40u) : static_cast<uint16_t>(rounded >> 16);
}

struct bf16 {
  uint16_t bits;
  bf16() = default;
  bf16(float f) : bits(float_to_bf16_bits(f)) {}
  operator float() const { return bf16_bits_to_float(bits); }
};
static_assert(sizeof(bf16) == 2, "bf16 is stored in two bytes");

// a float rounded to the precision of a half type (an explicit cast to it)
inline float round_to_f16(float x) { return static_cast<float>(static_cast<_Float16>(x)); }
inline float round_to_bf16(float x) { return bf16_bits_to_float(float_to_bf16_bits(x)); }

// Index clamps, by value (std::min's references keep a loop with a clamped gather scalar).
inline int64_t imin(int64_t a, int64_t b) { return a < b ? a : b; }
inline int64_t imax(int64_t a, int64_t b) { return a > b ? a : b; }

// Sizes and indices divided by a symbol whose range includes 0: 0 for a zero divisor instead
// of a trap (SIGFPE). Such a quotient is only read where the divisor is not 0 (a loop over
// no elements runs nothing; the checks of the sizes fail the run first).
inline int64_t idiv(int64_t a, int64_t b) { return b != 0 ? a / b : 0; }
inline int64_t imod(int64_t a, int64_t b) { return b != 0 ? a % b : 0; }

// Python's // and % in a condition export recorded (a guard on the inputs, a torch._check),
// whose operands may be negative (an int input): a zero divisor sets `zero` (eager raises
// ZeroDivisionError, the run fails with an input error) and gives 0; never a trap.
inline int64_t guard_idiv(int64_t a, int64_t b, bool &zero) {
  if (b == 0) {
    zero = true;
    return 0;
  }
  if (b == -1) return static_cast<int64_t>(0 - static_cast<uint64_t>(a));  // INT64_MIN / -1 traps
  const int64_t q = a / b;
  return (q * b != a && ((a < 0) != (b < 0))) ? q - 1 : q;
}

inline int64_t guard_imod(int64_t a, int64_t b, bool &zero) {
  if (b == 0) {
    zero = true;
    return 0;
  }
  if (b == -1) return 0;
  const int64_t r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}

// NaN-propagating, as selects rather than branches: a loop of them vectorizes, and a ReLU
// on data of either sign does not mispredict.
template <typename T> inline T maximum(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    return a != a ? a : (a > b ? a : b);
  }
  return a > b ? a : b;
}

template <typename T> inline T minimum(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    return a != a ? a : (a < b ? a : b);
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

// PyTorch's shifts: a shift count outside [0, bits) gives 0 (left) or the sign (right)
template <typename T> inline T lshift(T a, T b) {
  constexpr int64_t bits = sizeof(T) * 8;
  if (static_cast<int64_t>(b) < 0 || static_cast<int64_t>(b) >= bits) return T(0);
  return static_cast<T>(static_cast<std::make_unsigned_t<T>>(a) << b);
}

template <typename T> inline T rshift(T a, T b) {
  constexpr int64_t bits = sizeof(T) * 8;
  if (static_cast<int64_t>(b) < 0 || static_cast<int64_t>(b) >= bits)
    return static_cast<T>(a >> (bits - 1));
  return static_cast<T>(a >> b);
}

template <typename T> inline T fmod(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    return std::fmod(a, b);
  } else {
    return b == 0 ? T(0) : T(a % b);
  }
}

// ---- float math that the compiler can vectorize -------------------------------------------
// libm's expf/erff/tanhf are scalar calls (their vector forms need -ffast-math), which makes
// a GELU or softmax loop run one element at a time. These are branch-free and inline, so the
// loops around them vectorize; each stays within about 2 ulp of libm (tests/kernels checks
// them against torch over the whole float range). Doubles keep libm.

inline float bits_to_float(int32_t i) {
  float f;
  __builtin_memcpy(&f, &i, sizeof f);
  return f;
}

inline int32_t float_to_bits(float f) {
  int32_t i;
  __builtin_memcpy(&i, &f, sizeof i);
  return i;
}

// exp(r) for r = x - n ln 2 (n = round(x / ln 2), so |r| <= ln(2) / 2), that is exp(x) / 2^n:
// the reduction with ln 2 split in two so that n * hi is exact, then a minimax polynomial
inline float exp_reduced(float x, float n) {
  float r = x - n * 0.693359375f;
  r = r + n * 2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  return p * r * r + r + 1.0f;
}

// n = round(x / ln 2) by adding and removing 1.5 * 2^23 (no rounding instruction needed, so
// the loops vectorize on plain x86-64 too; exact for |x / ln 2| < 2^22). The sum's unit is 1,
// so its bits less the shifter's are n as an integer.
constexpr float kExpShifter = 12582912.0f;

inline float exp(float x) {
  // exp(x) = 2^n * exp(r), |r| <= ln(2) / 2
  const float xc = x < -104.0f ? -104.0f : (x > 89.0f ? 89.0f : x);
  const float n = (xc * 1.44269504088896341f + kExpShifter) - kExpShifter;
  const float y = exp_reduced(xc, n);
  // 2^n in two factors: n ranges over [-150, 128], beyond one exponent field's reach
  const int32_t ni = static_cast<int32_t>(n);
  const int32_t n1 = ni / 2;
  const float scaled = y * bits_to_float((n1 + 127) << 23) * bits_to_float((ni - n1 + 127) << 23);
  return x != x ? x : (x < -103.97f ? 0.0f : scaled);
}
inline double exp(double x) { return std::exp(x); }

// exp(z) for z <= 0 (or NaN, which stays NaN): exp's reduction and polynomial, but half of its
// range, so 2^n (n in [-150, 0]) needs no two variable factors: 2^(n + 64), a normal float,
// straight into an exponent field (n read off the rounding sum's low bits), then 2^-64, which
// rounds a subnormal result once. sigmoid and tanh take exp(-|x|) through it: about a third
// fewer instructions than exp, and no overflow to guard.
inline float exp_nonpositive(float z) {
  const float zc = z < -104.0f ? -104.0f : z;
  const float t = zc * 1.44269504088896341f + kExpShifter;
  const float y = exp_reduced(zc, t - kExpShifter);
  const int32_t biased = float_to_bits(t) - float_to_bits(kExpShifter) + 64 + 127;
  return y * bits_to_float(biased << 23) * 0x1p-64f;
}

inline float erf(float x) {
  // Two polynomials, no division and no exp (GELU calls erf once per element): erf(x) / x
  // in x^2 below |x| = 1, erf(|x|) in |x| - 2.46 up to 3.92, where erf rounds to 1 in
  // float. Least-squares Chebyshev fits in float64; within 2 ulp over the float range.
  const float ax = std::fabs(x);
  const float x2 = x * x;
  float p = 7.878967153e-05f;
  p = p * x2 - 8.014541818e-04f;
  p = p * x2 + 5.188377574e-03f;
  p = p * x2 - 2.685353532e-02f;
  p = p * x2 + 1.128356755e-01f;
  p = p * x2 - 3.761262298e-01f;
  p = p * x2 + 1.128379107e+00f;
  const float small = x * p;
  const float t = ax - 2.46f;
  float q = -9.468522876e-06f;
  q = q * t + 2.535034764e-05f;
  q = q * t + 5.369992505e-05f;
  q = q * t - 3.012955131e-04f;
  q = q * t + 3.866627230e-04f;
  q = q * t + 4.614255449e-04f;
  q = q * t - 2.959033241e-03f;
  q = q * t + 6.798279937e-03f;
  q = q * t - 9.906824678e-03f;
  q = q * t + 9.832783602e-03f;
  q = q * t - 6.535443477e-03f;
  q = q * t + 2.656213241e-03f;
  q = q * t + 9.994966388e-01f;
  const float large = ax > 3.92f ? 1.0f : (q > 1.0f ? 1.0f : q);  // a NaN stays NaN
  return ax < 1.0f ? small : std::copysign(large, x);
}
inline double erf(double x) { return std::erf(x); }

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__)
// erf above on 16 lanes, step for step (each p * x + c one fused multiply-add, as g++
// contracts the scalar form), for the epilogues of codegen/cpp/templates/epilogue_simd.py.
inline __m512 erf16(__m512 x) {
  const __m512 ax = _mm512_abs_ps(x), x2 = _mm512_mul_ps(x, x);
  const auto step = [](__m512 acc, __m512 v, float c) {
    return _mm512_fmadd_ps(acc, v, _mm512_set1_ps(c));
  };
  __m512 p = _mm512_set1_ps(7.878967153e-05f);
  p = step(p, x2, -8.014541818e-04f);
  p = step(p, x2, 5.188377574e-03f);
  p = step(p, x2, -2.685353532e-02f);
  p = step(p, x2, 1.128356755e-01f);
  p = step(p, x2, -3.761262298e-01f);
  p = step(p, x2, 1.128379107e+00f);
  const __m512 small = _mm512_mul_ps(x, p);
  const __m512 t = _mm512_sub_ps(ax, _mm512_set1_ps(2.46f));
  __m512 q = _mm512_set1_ps(-9.468522876e-06f);
  q = step(q, t, 2.535034764e-05f);
  q = step(q, t, 5.369992505e-05f);
  q = step(q, t, -3.012955131e-04f);
  q = step(q, t, 3.866627230e-04f);
  q = step(q, t, 4.614255449e-04f);
  q = step(q, t, -2.959033241e-03f);
  q = step(q, t, 6.798279937e-03f);
  q = step(q, t, -9.906824678e-03f);
  q = step(q, t, 9.832783602e-03f);
  q = step(q, t, -6.535443477e-03f);
  q = step(q, t, 2.656213241e-03f);
  q = step(q, t, 9.994966388e-01f);
  const __m512 one = _mm512_set1_ps(1.0f);
  // ax > 3.92 ? 1 : (q > 1 ? 1 : q), a NaN staying NaN; then copysign(large, x)
  __m512 large = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(ax, _mm512_set1_ps(3.92f), _CMP_GT_OQ),
                                      _mm512_min_ps(one, q), one);
  const __m512i sign = _mm512_set1_epi32(int32_t(0x80000000u));
  large = _mm512_castsi512_ps(_mm512_ternarylogic_epi32(
      _mm512_castps_si512(large), _mm512_castps_si512(x), sign, 0xd8));  // sign ? x : large
  return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(ax, one, _CMP_LT_OQ), large, small);
}

// The low bytes of the 64 int32 lanes of a, b, c and d, in that order: an epilogue's four
// vectors of 8-bit results narrowed to one 64-byte store (vpmovdb, a vector at a time, takes
// four cycles on Zen 4). The packs saturate, so each lane is cut to its low byte first,
// unless `in_range`: every lane 0..255, or negative with low byte 0 (INT_MIN, a NaN's
// conversion), which packs to 0.
template <bool in_range>
inline __m512i bytes64(__m512i a, __m512i b, __m512i c, __m512i d) {
  if (!in_range) {
    const __m512i low = _mm512_set1_epi32(0xFF);
    a = _mm512_and_si512(a, low);
    b = _mm512_and_si512(b, low);
    c = _mm512_and_si512(c, low);
    d = _mm512_and_si512(d, low);
  }
  // the packs keep to 128-bit lanes: dword 4 L + k of `packed` holds lanes 4 L .. 4 L + 3 of
  // the k-th vector, which go to dword 4 k + L
  const __m512i packed =
      _mm512_packus_epi16(_mm512_packus_epi32(a, b), _mm512_packus_epi32(c, d));
  return _mm512_permutexvar_epi32(
      _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15), packed);
}
#endif

inline float tanh(float x) {
  const float ax = std::fabs(x);
  const float x2 = x * x;
  // |x| < 0.25: the Taylor series to x^11; otherwise from exp(-2|x|)
  const float small =
      x * (1.0f + x2 * (-0.333333333333333333f +
                        x2 * (0.133333333333333333f +
                              x2 * (-0.0539682539682539683f +
                                    x2 * (0.0218694885361552028f +
                                          x2 * -0.00886323552990219656f)))));
  // (1 - e) / (1 + e), e = exp(-2|x|) in (0, 1]: 1 - e is exact where e >= 1/2
  const float e = exp_nonpositive(-2.0f * ax);
  const float large = (1.0f - e) / (1.0f + e);
  return ax < 0.25f ? small : std::copysign(large, x);
}
inline double tanh(double x) { return std::tanh(x); }

template <typename T> inline T sigmoid(T x) { return T(1) / (T(1) + aotc::exp(-x)); }
// 1 / (1 + e) for x >= 0, e / (1 + e) below, e = exp(-|x|): no overflow, a NaN stays NaN
inline float sigmoid(float x) {
  const float e = exp_nonpositive(-std::fabs(x));
  return (x >= 0.0f ? 1.0f : e) / (1.0f + e);
}

template <typename T> inline T sign(T x) { return T((T(0) < x) - (x < T(0))); }

// The sign bit of x (set for -0.0 and -NaN). Spelled with copysign: g++ 12 fails with an
// internal error on vectorized std::signbit after a bfloat16 widening.
template <typename T> inline bool signbit(T x) { return std::copysign(T(1), x) < T(0); }

// The bits of x widened to 64 bits (a float to double, an integer or bool to int64), as
// hash_tensor reads each element before xor-ing them.
template <typename T> inline uint64_t bits64(T x) {
  if constexpr (std::is_integral_v<T>) {
    return uint64_t(int64_t(x));
  } else {
    const double d = double(x);
    uint64_t u;
    std::memcpy(&u, &d, sizeof u);
    return u;
  }
}

// Euclid's algorithm on magnitudes, as PyTorch's gcd: never negative, gcd(0, 0) = 0.
template <typename T> inline T gcd(T a, T b) {
  a = a < 0 ? T(-a) : a;
  b = b < 0 ? T(-b) : b;
  while (a != 0) {
    T c = a;
    a = T(b % a);
    b = c;
  }
  return b;
}

template <typename T> inline T hypot(T a, T b) { return std::hypot(a, b); }

// The neighbour of a toward b in T itself: the standard one for float and double, a step
// of the 16-bit pattern for _Float16 and bf16 (whose steps float's nextafter cannot take).
template <typename T> inline T nextafter(T a, T b) {
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    return std::nextafter(a, b);
  } else {
    const float fa = float(a), fb = float(b);
    if (fa != fa || fb != fb) return T(fa + fb);  // NaN
    if (fa == fb) return b;
    uint16_t bits;
    std::memcpy(&bits, &a, sizeof bits);
    if (fa == 0.0f) bits = fb > 0.0f ? 0x0001 : 0x8001;  // the smallest subnormal toward b
    else if ((fa < fb) == (fa > 0.0f)) ++bits;           // away from zero
    else --bits;
    T out;
    std::memcpy(&out, &bits, sizeof out);
    return out;
  }
}

template <typename T> inline T round_half_even(T x) { return std::nearbyint(x); }

// the two parts of std::frexp, one per output of torch.frexp
template <typename T> inline T frexp_mantissa(T x) {
  int e;
  return std::frexp(x, &e);
}
template <typename T> inline int32_t frexp_exponent(T x) {
  int e = 0;
  std::frexp(x, &e);
  return std::isfinite(x) ? e : 0;
}

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
