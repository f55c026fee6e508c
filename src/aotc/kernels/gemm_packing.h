// Packing of GEMM operands into the micro-kernels' panel layouts (the layouts are
// described in gemm_microkernels.h and, for a prepacked B, in aotc_kernels.h). Private
// to gemm.cpp.
#ifndef AOTC_GEMM_PACKING_H
#define AOTC_GEMM_PACKING_H

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "gemm_microkernels.h"

namespace aotc_gemm {

#if AOTC_GEMM_AVX2
// The first `rows` rows of an MR-row panel of a row-major A: register
// transposes of 8x8 and 4x4 blocks rather than one strided store per element
// (that took an eighth of the time of 128x128x64 products).
inline void pack_a_rows(const float *src, int64_t sa_m, int64_t rows, int64_t kc, float *dst) {
    int64_t i = 0;
    for (; i + 8 <= rows; i += 8)
        for (int64_t k = 0; k + 8 <= kc; k += 8) {
            __m256 r[8];
            for (int j = 0; j < 8; ++j) r[j] = _mm256_loadu_ps(src + (i + j) * sa_m + k);
            transpose8(r);
            for (int j = 0; j < 8; ++j) _mm256_storeu_ps(dst + (k + j) * MR + i, r[j]);
        }
    for (; i + 4 <= rows; i += 4)
        for (int64_t k = 0; k + 4 <= kc; k += 4) {
            __m128 r0 = _mm_loadu_ps(src + i * sa_m + k), r1 = _mm_loadu_ps(src + (i + 1) * sa_m + k);
            __m128 r2 = _mm_loadu_ps(src + (i + 2) * sa_m + k), r3 = _mm_loadu_ps(src + (i + 3) * sa_m + k);
            _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
            _mm_storeu_ps(dst + k * MR + i, r0);
            _mm_storeu_ps(dst + (k + 1) * MR + i, r1);
            _mm_storeu_ps(dst + (k + 2) * MR + i, r2);
            _mm_storeu_ps(dst + (k + 3) * MR + i, r3);
        }
    for (; i + 2 <= rows; i += 2)  // pairs of rows (the last 2 of AVX2's 6): 8-byte stores
        for (int64_t k = 0; k + 4 <= kc; k += 4) {
            const __m128 r0 = _mm_loadu_ps(src + i * sa_m + k), r1 = _mm_loadu_ps(src + (i + 1) * sa_m + k);
            const __m128 lo = _mm_unpacklo_ps(r0, r1), hi = _mm_unpackhi_ps(r0, r1);
            _mm_storel_pi(reinterpret_cast<__m64 *>(dst + k * MR + i), lo);
            _mm_storeh_pi(reinterpret_cast<__m64 *>(dst + (k + 1) * MR + i), lo);
            _mm_storel_pi(reinterpret_cast<__m64 *>(dst + (k + 2) * MR + i), hi);
            _mm_storeh_pi(reinterpret_cast<__m64 *>(dst + (k + 3) * MR + i), hi);
        }
    // what the blocks left over: the k tails, and a last odd row
    for (int64_t r = 0; r < rows; ++r) {
        const int64_t done = r < rows / 8 * 8 ? kc / 8 * 8 : r < i ? kc / 4 * 4 : 0;
        for (int64_t k = done; k < kc; ++k) dst[k * MR + r] = src[r * sa_m + k];
    }
}
#endif

// Pack rows [0, mc) x cols [0, kc) of A (already offset to the block origin)
// into MR-row panels laid out k-major: dst[p*MR*kc + k*MR + i].
inline void pack_a(const float *A, int64_t sa_m, int64_t sa_k, int64_t mc, int64_t kc, float *dst) {
    for (int64_t i0 = 0; i0 < mc; i0 += MR, dst += MR * kc) {
        const int64_t mr = std::min(MR, mc - i0);
        const float *src = A + i0 * sa_m;
        if (mr < MR) std::memset(dst, 0, sizeof(float) * MR * kc);
        if (mr == MR && sa_m == 1) {
            for (int64_t k = 0; k < kc; ++k)
                for (int64_t i = 0; i < MR; ++i) dst[k * MR + i] = src[k * sa_k + i];
#if AOTC_GEMM_AVX2
        } else if (sa_k == 1) {
            pack_a_rows(src, sa_m, mr, kc, dst);
#endif
        } else {  // walk each row along k: the usual row-major case streams
            for (int64_t i = 0; i < mr; ++i)
                for (int64_t k = 0; k < kc; ++k) dst[k * MR + i] = src[i * sa_m + k * sa_k];
        }
    }
}

#if AOTC_GEMM_AVX2
// Columns [0, ncols) x k in [0, kc8) of an NR-column panel of a transposed
// weight (each column of B is a contiguous row of [N, K]), both multiples of
// 8: 8x8 register transposes. Rows a multiple of 2 KiB apart (K = 1024, 3072, ...)
// crowd into few L1 sets, so with NR = 32 taking 8 floats at a time from each
// of the panel's rows keeps missing (pack 3x slower at K = 1024); those rows
// are first copied 16 at a time, front to back, into a small staging block
// with padded rows. Other strides, and the 16 rows of an AVX2 panel, measured
// faster transposed straight from B.
inline void pack_b_transposed(const float *src, int64_t sb_n, int64_t ncols, int64_t kc8, float *dst) {
    const auto transpose_from = [&](const float *rows, int64_t ld, int64_t nrows, float *out) {
        for (int64_t k0 = 0; k0 < kc8; k0 += 8)
            for (int64_t h = 0; h < nrows; h += 8) {
                __m256 r[8];
                for (int j = 0; j < 8; ++j) r[j] = _mm256_loadu_ps(rows + (h + j) * ld + k0);
                transpose8(r);
                for (int k = 0; k < 8; ++k) _mm256_store_ps(out + (k0 + k) * NR + h, r[k]);
            }
    };
    if (NR < 32 || sb_n % 512 != 0) return transpose_from(src, sb_n, ncols, dst);
    constexpr int64_t G = 16, LS = KC + 16;  // padded rows spread over the L1 sets
    alignas(32) float stage[G * LS];
    for (int64_t g = 0; g < ncols; g += G) {
        const int64_t rows = std::min(G, ncols - g);
        for (int64_t j = 0; j < rows; ++j)
            std::memcpy(stage + j * LS, src + (g + j) * sb_n, sizeof(float) * kc8);
        transpose_from(stage, LS, rows, dst + g);
    }
}
#endif

// Pack rows [0, kc) x cols [0, nc) of B into NR-column panels laid out
// k-major: dst[q*NR*kc + k*NR + j].
inline void pack_b(const float *B, int64_t sb_k, int64_t sb_n, int64_t kc, int64_t nc, float *dst) {
    int64_t j0 = 0;
    if (sb_n == 1) {  // row-major B: read each row of the block once, front to back,
        j0 = nc / NR * NR;  // rather than hopping between rows for every panel
        for (int64_t k = 0; k < kc; ++k)
            for (int64_t j = 0; j < j0; j += NR)
                std::memcpy(dst + j * kc + k * NR, B + k * sb_k + j, sizeof(float) * NR);
    }
    for (dst += j0 * kc; j0 < nc; j0 += NR, dst += NR * kc) {
        const int64_t nr = std::min(NR, nc - j0);
        const float *src = B + j0 * sb_n;
        if (nr < NR) std::memset(dst, 0, sizeof(float) * NR * kc);
        int64_t k0 = 0, j8 = 0;  // [0, k0) x [0, j8) is packed already
#if AOTC_GEMM_AVX2
        if (sb_k == 1) {  // transposed weight [N, K]
            k0 = kc / 8 * 8;
            j8 = nr / 8 * 8;
            pack_b_transposed(src, sb_n, j8, k0, dst);
        }
#endif
        if (std::abs(sb_k) < std::abs(sb_n)) {  // columns are the contiguous direction
            for (int64_t j = 0; j < nr; ++j)
                for (int64_t k = j < j8 ? k0 : 0; k < kc; ++k) dst[k * NR + j] = src[j * sb_n + k * sb_k];
        } else {
            for (int64_t k = 0; k < kc; ++k)
                for (int64_t j = k < k0 ? j8 : 0; j < nr; ++j) dst[k * NR + j] = src[k * sb_k + j * sb_n];
        }
    }
}

}  // namespace aotc_gemm

#endif  // AOTC_GEMM_PACKING_H
