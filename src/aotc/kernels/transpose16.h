// A 16 x 16 block of 32-bit values transposed in AVX-512 registers (unpacks of 32 and 64
// bits, then two rounds of 128-bit lane shuffles): the int32 sums of gemm_int8.cpp turned
// channel-major, attention.cpp's keys turned dimension-major (floats, by their bits).
#pragma once

#include <cstdint>

#if defined(__AVX512F__)
#include <immintrin.h>

// g++ 12 reports its own AVX-512 headers' deliberately undefined passthrough operand of the
// unpacks and shuffles as uninitialized once they are inlined
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace aotc_transpose16 {

// A 16 x 16 block of int32: dst row i (stride ld) = src column i (rows `sld` apart).
inline void transpose16(const int32_t *src, int64_t sld, int32_t *dst, int64_t ld) {
    __m512i r[16], t[16];
    for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_si512(src + i * sld);
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);
    }
    for (int i = 0; i < 16; i += 4) {
        r[i] = _mm512_unpacklo_epi64(t[i], t[i + 2]);
        r[i + 1] = _mm512_unpackhi_epi64(t[i], t[i + 2]);
        r[i + 2] = _mm512_unpacklo_epi64(t[i + 1], t[i + 3]);
        r[i + 3] = _mm512_unpackhi_epi64(t[i + 1], t[i + 3]);
    }
    // r[4q + j] holds, in 128-bit lane l, column 4 l + (j's place) of rows 4q .. 4q + 3
    for (int i = 0; i < 4; ++i) {
        t[i] = _mm512_shuffle_i32x4(r[i], r[i + 4], 0x88);       // lanes 0, 2 | 0, 2
        t[i + 4] = _mm512_shuffle_i32x4(r[i], r[i + 4], 0xdd);   // lanes 1, 3 | 1, 3
        t[i + 8] = _mm512_shuffle_i32x4(r[i + 8], r[i + 12], 0x88);
        t[i + 12] = _mm512_shuffle_i32x4(r[i + 8], r[i + 12], 0xdd);
    }
    for (int i = 0; i < 4; ++i) {
        const __m512i c0 = _mm512_shuffle_i32x4(t[i], t[i + 8], 0x88);
        const __m512i c1 = _mm512_shuffle_i32x4(t[i + 4], t[i + 12], 0x88);
        const __m512i c2 = _mm512_shuffle_i32x4(t[i], t[i + 8], 0xdd);
        const __m512i c3 = _mm512_shuffle_i32x4(t[i + 4], t[i + 12], 0xdd);
        _mm512_storeu_si512(dst + (i)*ld, c0);
        _mm512_storeu_si512(dst + (i + 4) * ld, c1);
        _mm512_storeu_si512(dst + (i + 8) * ld, c2);
        _mm512_storeu_si512(dst + (i + 12) * ld, c3);
    }
}

// The same for floats.
inline void transpose16(const float *src, int64_t sld, float *dst, int64_t ld) {
    transpose16(reinterpret_cast<const int32_t *>(src), sld, reinterpret_cast<int32_t *>(dst), ld);
}

}  // namespace aotc_transpose16

#pragma GCC diagnostic pop
#endif
