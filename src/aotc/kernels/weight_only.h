// What the weight-only GEMMs share (gemm_wo.cpp: a byte a weight; gemm_w4.cpp: two int4
// weights a byte): float vectors of the widest ISA built for (AVX-512: 16 lanes, AVX2 + FMA:
// 8), weight bytes widened to floats (exact), and the prefill's product by dequantized
// panels. Inline, in namespace aotc_wo: nothing here is exported.
#pragma once

#include <algorithm>
#include <cstdint>
#include <new>
#include <vector>

#include "aotc_kernels.h"

#if defined(__AVX2__) || defined(__AVX512F__)
#include <immintrin.h>
#endif

// 1 where the vector forms below exist
#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))
#define AOTC_WO_VECTOR 1
#else
#define AOTC_WO_VECTOR 0
#endif

namespace aotc_wo {

#if defined(__AVX2__) || defined(__AVX512F__)
inline float sum8(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}
#endif

// The AVX-512 forms with a zeroed (maskz) source: the plain ones start from an undefined
// register, which GCC 12's -Wmaybe-uninitialized reports once inlined.
#if defined(__AVX512F__)
constexpr int64_t VL = 16;
using Vec = __m512;
inline Vec vzero() { return _mm512_setzero_ps(); }
inline Vec vload(const float *p) { return _mm512_loadu_ps(p); }
inline Vec vfma(Vec a, Vec b, Vec c) { return _mm512_fmadd_ps(a, b, c); }
inline Vec vmul(Vec a, Vec b) { return _mm512_mul_ps(a, b); }
inline float vsum(Vec v) {
    alignas(64) float lanes[16];
    _mm512_store_ps(lanes, v);
    return sum8(_mm256_add_ps(_mm256_load_ps(lanes), _mm256_load_ps(lanes + 8)));
}
// 16 weight bytes (signed) as floats
inline Vec widen(const int8_t *q) {
    const __m512i w = _mm512_maskz_cvtepi8_epi32(
        __mmask16(0xFFFF), _mm_loadu_si128(reinterpret_cast<const __m128i *>(q)));
    return _mm512_maskz_cvtepi32_ps(__mmask16(0xFFFF), w);
}
inline Vec vset(float s) { return _mm512_set1_ps(s); }
#elif defined(__AVX2__) && defined(__FMA__)
constexpr int64_t VL = 8;
using Vec = __m256;
inline Vec vzero() { return _mm256_setzero_ps(); }
inline Vec vload(const float *p) { return _mm256_loadu_ps(p); }
inline Vec vfma(Vec a, Vec b, Vec c) { return _mm256_fmadd_ps(a, b, c); }
inline Vec vmul(Vec a, Vec b) { return _mm256_mul_ps(a, b); }
inline float vsum(Vec v) { return sum8(v); }
// 8 weight bytes (signed) as floats
inline Vec widen(const int8_t *q) {
    return _mm256_cvtepi32_ps(
        _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i *>(q))));
}
inline Vec vset(float s) { return _mm256_set1_ps(s); }
#endif

// out = x w^T + bias through float32 panels of at most `panel_floats` (and at least 16 rows)
// of the weight, `dequantize(n0, rows, dst)` writing its rows [n0, n0 + rows) as floats,
// each panel multiplied by the float32 GEMM; false when the scratch could not be had.
template <class Dequantize>
bool by_panels(int64_t M, int64_t N, int64_t K, const float *x, int64_t ldx, const float *bias,
               float *out, int64_t ldo, int64_t panel_floats, Dequantize dequantize) {
    const int64_t rows = std::min(N, std::max<int64_t>(16, panel_floats / std::max<int64_t>(K, 1)));
    std::vector<float> panel;
    try {
        panel.resize(size_t(rows * K));
    } catch (const std::bad_alloc &) {
        return false;
    }
    for (int64_t n0 = 0; n0 < N; n0 += rows) {
        const int64_t cols = std::min(rows, N - n0);
        dequantize(n0, cols, panel.data());
        aotc_sgemm(M, cols, K, x, ldx, 1, panel.data(), 1, K, out + n0, ldo,
                   bias ? bias + n0 : nullptr, 0, 1, 1.0f, 1.0f);  // + 1 * bias
    }
    return true;
}

}  // namespace aotc_wo
