// Register-blocked SGEMM micro-kernels, one set per compile target (AVX-512, AVX2+FMA, NEON,
// portable), on the tile shapes of gemm_panels.h. Private to gemm.cpp.
//
// Panel width NR and slice depth KC (the packed-B layout a prepacked weight must match):
// AVX-512 32 x 512; AVX2, NEON (aarch64, every level) and portable 16 x 512.
//
// A micro-kernel multiplies a packed MR-row panel of A (k-major: a[k*MR + i])
// by a packed NR-column panel of B (k-major: b[k*NR + j]), keeping the whole
// MR x NR tile of C in vector registers, and then applies the epilogue. The
// AVX-512 and AVX2 sets also have kernels that read A and B unpacked: register
// strips of a row-major B (axpy_rows) and dot products of rows and a few columns
// (dot_narrow), for few rows of A or few columns of C.
#ifndef AOTC_GEMM_MICROKERNELS_H
#define AOTC_GEMM_MICROKERNELS_H

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "conv_activation.h"

#include "gemm_panels.h"

#if AOTC_GEMM_AVX2
#include <immintrin.h>
#endif

namespace aotc_gemm {

// What to do with a finished tile: C = alpha*acc + beta*bias on the first K
// slice (bias may be null), C += alpha*acc on the following ones.
// On the last K slice, `res` (laid out as C, at the tile origin) is added and the activation
// `act` (conv_activation.h: none, the clamp to [lo, hi], hardswish) applied before the store.
struct Epilogue {
    float alpha, beta;
    bool accumulate;
    const float *bias;  // at the tile origin
    int64_t sbm, sbn;
    int act = aotc_conv_act::NONE;
    float lo = 0.0f, hi = 0.0f;
    const float *res = nullptr;
};

#if AOTC_GEMM_AVX2
// Every cache line of the first mr rows of a tile of C, VW floats wide (a row of C need
// not start on a line: numpy and other callers align to 16 bytes), so that the sums are
// stored without waiting.
template <int VW>
__attribute__((always_inline)) inline void prefetch_tile(const float *c, int64_t ldc, int64_t mr) {
    for (int64_t i = 0; i < mr; ++i) {
        const char *row = reinterpret_cast<const char *>(c + i * ldc);
#pragma GCC unroll 4
        for (int j = 0; j < VW; j += 16) _mm_prefetch(row + 4 * j, _MM_HINT_T1);
        _mm_prefetch(row + 4 * VW - 4, _MM_HINT_T1);
    }
}
#endif

#if AOTC_GEMM_AVX512

constexpr int NV = int(NR / 16);  // zmm vectors per tile row

// Lanes of columns [16v, 16v + 16) that lie inside the first n columns.
inline __mmask16 lane_mask(int64_t n, int v) {
    const int64_t lanes = std::min<int64_t>(std::max<int64_t>(n - 16 * v, 0), 16);
    return static_cast<__mmask16>((1u << lanes) - 1u);
}

// acc[i][v] = sum over k of a[k*MR + i] * b[k*NR + 16v : +16], for the first
// ROWS rows and W vectors of a panel pair. Edge tiles use fewer rows or
// vectors so that they skip the zero padding rather than multiply it.
// Always inlined so the accumulators stay in registers.
template <int ROWS, int W>
__attribute__((always_inline)) inline void
accumulate_zmm(int64_t kc, const float *__restrict a, const float *__restrict b,
               __m512 (&acc)[ROWS][W], const char *pf = nullptr, int64_t pf_lines = 0) {
#pragma GCC unroll 16
    for (int i = 0; i < ROWS; ++i)
#pragma GCC unroll 4
        for (int v = 0; v < W; ++v) acc[i][v] = _mm512_setzero_ps();
#pragma GCC unroll 2
    for (int64_t k = 0; k < kc; ++k) {
        __m512 bv[W];
#pragma GCC unroll 4
        for (int v = 0; v < W; ++v) bv[v] = _mm512_load_ps(b + 16 * v);
        if (k < pf_lines) _mm_prefetch(pf + 64 * k, _MM_HINT_T1);
#pragma GCC unroll 16
        for (int i = 0; i < ROWS; ++i) {
            const __m512 ai = _mm512_set1_ps(a[i]);
#pragma GCC unroll 4
            for (int v = 0; v < W; ++v) acc[i][v] = _mm512_fmadd_ps(ai, bv[v], acc[i][v]);
        }
        a += MR;
        b += NR;
    }
}

// Applies the epilogue to an mr x nr tile (mr <= ROWS, nr <= 16*W) and stores
// it into C; masked loads and stores leave the columns past nr untouched, so
// edge tiles need no bounce buffer. The bias needs sbn of 0 or 1.
// The activation of conv_activation.h on a vector (the masked forms with every lane: g++ 12
// flags the plain ones' undefined operand); a NaN stays NaN.
inline __m512 activate_zmm(__m512 r, int act, __m512 vlo, __m512 vhi) {
    constexpr __mmask16 all = 0xFFFF;
    if (act == aotc_conv_act::HARDSWISH) {
        const __m512 six = _mm512_set1_ps(6.0f), z = _mm512_setzero_ps();
        const __m512 t = _mm512_add_ps(r, _mm512_set1_ps(3.0f));
        const __m512 u = _mm512_mask_min_ps(six, all, six, _mm512_mask_max_ps(z, all, z, t));
        return _mm512_mul_ps(_mm512_mul_ps(r, u), _mm512_set1_ps(1.0f / 6.0f));
    }
    if (act == aotc_conv_act::CLAMP)
        return _mm512_mask_min_ps(vhi, all, vhi, _mm512_mask_max_ps(vlo, all, vlo, r));
    return r;
}

template <int ROWS, int W>
__attribute__((always_inline)) inline void
store_zmm(__m512 (&acc)[ROWS][W], float *c, int64_t ldc, int64_t mr, int64_t nr, const Epilogue &e) {
    __mmask16 mask[W];
    for (int v = 0; v < W; ++v) mask[v] = lane_mask(nr, v);
    const __m512 va = _mm512_set1_ps(e.alpha), vb = _mm512_set1_ps(e.beta);
    const int act = e.act;
    const float *res = e.res;
    const __m512 vlo = _mm512_set1_ps(e.lo), vhi = _mm512_set1_ps(e.hi);
#pragma GCC unroll 16
    for (int i = 0; i < ROWS; ++i) {
        if (i >= mr) break;
        float *ci = c + i * ldc;
        const float *bi = e.bias ? e.bias + i * e.sbm : nullptr;
#pragma GCC unroll 4
        for (int v = 0; v < W; ++v) {
            __m512 r = _mm512_mul_ps(va, acc[i][v]);
            if (e.accumulate) r = _mm512_add_ps(r, _mm512_maskz_loadu_ps(mask[v], ci + 16 * v));
            else if (bi && e.sbn == 0) r = _mm512_add_ps(r, _mm512_set1_ps(e.beta * bi[0]));
            else if (bi) r = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(mask[v], bi + 16 * v), r);
            if (res) r = _mm512_add_ps(r, _mm512_maskz_loadu_ps(mask[v], res + i * ldc + 16 * v));
            if (act) r = activate_zmm(r, act, vlo, vhi);
            _mm512_mask_storeu_ps(ci + 16 * v, mask[v], r);
        }
    }
}

// An mr x nr tile of packed panels straight into C with the epilogue fused.
template <int ROWS, int W>
void kernel_zmm(int64_t kc, const float *a, const float *b, float *c, int64_t ldc,
                int64_t mr, int64_t nr, const Epilogue &e, const char *pf, int64_t pf_lines) {
    prefetch_tile<16 * W>(c, ldc, mr);
    __m512 acc[ROWS][W];
    accumulate_zmm<ROWS, W>(kc, a, b, acc, pf, pf_lines);
    store_zmm<ROWS, W>(acc, c, ldc, mr, nr, e);
}

// Any tile with a fast bias: the smallest instantiation that covers mr x nr.
template <int W>
void kernel_rows(int64_t kc, const float *a, const float *b, float *c, int64_t ldc,
                 int64_t mr, int64_t nr, const Epilogue &e, const char *pf, int64_t pf_lines) {
    if (mr > 8) kernel_zmm<MR, W>(kc, a, b, c, ldc, mr, nr, e, pf, pf_lines);
    else if (mr > 4) kernel_zmm<8, W>(kc, a, b, c, ldc, mr, nr, e, pf, pf_lines);
    else if (mr > 2) kernel_zmm<4, W>(kc, a, b, c, ldc, mr, nr, e, pf, pf_lines);
    else if (mr > 1) kernel_zmm<2, W>(kc, a, b, c, ldc, mr, nr, e, pf, pf_lines);
    else kernel_zmm<1, W>(kc, a, b, c, ldc, mr, nr, e, pf, pf_lines);
}
static_assert(MR > 8 && NV == 2, "kernel_rows and kernel_tile assume 12x32-like tiles");

inline void kernel_tile(int64_t kc, const float *a, const float *b, float *c, int64_t ldc,
                        int64_t mr, int64_t nr, const Epilogue &e, const char *pf = nullptr,
                        int64_t pf_lines = 0) {
    if (nr > 16) kernel_rows<2>(kc, a, b, c, ldc, mr, nr, e, pf, pf_lines);
    else kernel_rows<1>(kc, a, b, c, ldc, mr, nr, e, pf, pf_lines);
}

// Raw product into a local MR x NR tile (bias with other strides).
inline void compute_tile(int64_t kc, const float *a, const float *b, float *tile) {
    __m512 acc[MR][NV];
    accumulate_zmm<MR, NV>(kc, a, b, acc);
    for (int i = 0; i < MR; ++i)
        for (int v = 0; v < NV; ++v) _mm512_storeu_ps(tile + i * NR + 16 * v, acc[i][v]);
}

// R rows of A (any strides) times nr <= 16*W columns of a row-major B read in
// place (ldb apart along k), epilogue fused: for M so small that packing B
// would cost more than the products.
template <int R, int W>
void axpy_rows(int64_t K, const float *a, int64_t sa_m, int64_t sa_k, const float *b, int64_t ldb,
               float *c, int64_t ldc, int64_t nr, const Epilogue &e) {
    __m512 acc[R][W];
    __mmask16 mask[W];
#pragma GCC unroll 16
    for (int v = 0; v < W; ++v) {
        mask[v] = lane_mask(nr, v);
#pragma GCC unroll 12
        for (int r = 0; r < R; ++r) acc[r][v] = _mm512_setzero_ps();
    }
    for (int64_t k = 0; k < K; ++k, a += sa_k, b += ldb) {
#pragma GCC unroll 12
        for (int r = 0; r < R; ++r) {
            const __m512 ar = _mm512_set1_ps(a[r * sa_m]);
#pragma GCC unroll 16
            for (int v = 0; v < W; ++v)
                acc[r][v] = _mm512_fmadd_ps(ar, _mm512_maskz_loadu_ps(mask[v], b + 16 * v), acc[r][v]);
        }
    }
    store_zmm<R, W>(acc, c, ldc, R, nr, e);
}

// As axpy_rows<R, 1> for nr <= 8 columns, in 8-lane vectors: a 16-lane FMA costs two
// 8-lane ones where the FMA units are 256 bits wide, so half-empty vectors would halve the
// rate (256x4x10 ran 1.6x faster so).
// The store of axpy_rows8's R rows of nr <= 8 columns (mask: their lanes).
template <int R>
__attribute__((always_inline)) inline void
store_rows8(const __m256 (&acc)[R], __mmask8 mask, float *c, int64_t ldc, const Epilogue &e) {
    const __m256 va = _mm256_set1_ps(e.alpha), vb = _mm256_set1_ps(e.beta);
#pragma GCC unroll 12
    for (int r = 0; r < R; ++r) {
        float *cr = c + r * ldc;
        const float *br = e.bias ? e.bias + r * e.sbm : nullptr;
        __m256 v = _mm256_mul_ps(va, acc[r]);
        if (e.accumulate) v = _mm256_add_ps(v, _mm256_maskz_loadu_ps(mask, cr));
        else if (br && e.sbn == 0) v = _mm256_add_ps(v, _mm256_set1_ps(e.beta * br[0]));
        else if (br) v = _mm256_fmadd_ps(vb, _mm256_maskz_loadu_ps(mask, br), v);
        _mm256_mask_storeu_ps(cr, mask, v);
    }
}

template <int R>
void axpy_rows8(int64_t K, const float *a, int64_t sa_m, int64_t sa_k, const float *b, int64_t ldb,
                float *c, int64_t ldc, int64_t nr, const Epilogue &e) {
    const __mmask8 mask = static_cast<__mmask8>((1u << std::min<int64_t>(nr, 8)) - 1u);
    __m256 acc[R];
#pragma GCC unroll 12
    for (int r = 0; r < R; ++r) acc[r] = _mm256_setzero_ps();
    for (int64_t k = 0; k < K; ++k, a += sa_k, b += ldb) {
        const __m256 bv = _mm256_maskz_loadu_ps(mask, b);
#pragma GCC unroll 12
        for (int r = 0; r < R; ++r) acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(a[r * sa_m]), bv, acc[r]);
    }
    store_rows8<R>(acc, mask, c, ldc, e);
}

// As axpy_rows<R, 2> for 16 < nr <= 24 columns: the last 8 in an 8-lane vector, a quarter
// fewer multiply-adds where the FMA units are 256 bits wide (a 1x1 convolution's 24
// channels last: 144 -> 24 on 56x56 ran 290 -> 219 us so).
template <int R>
void axpy_rows24(int64_t K, const float *a, int64_t sa_m, int64_t sa_k, const float *b,
                 int64_t ldb, float *c, int64_t ldc, int64_t nr, const Epilogue &e) {
    const __mmask8 mask = static_cast<__mmask8>((1u << std::min<int64_t>(nr - 16, 8)) - 1u);
    __m512 lo[R][1];
    __m256 hi[R];
#pragma GCC unroll 12
    for (int r = 0; r < R; ++r) lo[r][0] = _mm512_setzero_ps(), hi[r] = _mm256_setzero_ps();
    for (int64_t k = 0; k < K; ++k, a += sa_k, b += ldb) {
        const __m512 bl = _mm512_loadu_ps(b);
        const __m256 bh = _mm256_maskz_loadu_ps(mask, b + 16);
#pragma GCC unroll 12
        for (int r = 0; r < R; ++r) {
            const float ar = a[r * sa_m];
            lo[r][0] = _mm512_fmadd_ps(_mm512_set1_ps(ar), bl, lo[r][0]);
            hi[r] = _mm256_fmadd_ps(_mm256_set1_ps(ar), bh, hi[r]);
        }
    }
    store_zmm<R, 1>(lo, c, ldc, R, 16, e);
    Epilogue e8 = e;
    if (e8.bias) e8.bias += 16 * e8.sbn;
    store_rows8<R>(hi, mask, c + 16, ldc, e8);
}

// Lanes 0..3 = sums of the lanes of x0..x3. Each step adds the two halves of
// every group while packing the groups together; vpermt2ps is used because
// GCC 12 flags the shuffles that take an undefined pass-through operand.
inline __m512 hsum4(__m512 x0, __m512 x1, __m512 x2, __m512 x3) {
    const auto fold = [](__m512 u, __m512 v, __m512i lo, __m512i hi) {
        return _mm512_add_ps(_mm512_permutex2var_ps(u, lo, v), _mm512_permutex2var_ps(u, hi, v));
    };
    // x0 x1 halves -> 8 partial sums each; then 4 each for x0..x3; then 2; then 1.
    const __m512i lo8 = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23);
    const __m512i hi8 = _mm512_setr_epi32(8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31);
    const __m512i lo4 = _mm512_setr_epi32(0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27);
    const __m512i hi4 = _mm512_setr_epi32(4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23, 28, 29, 30, 31);
    const __m512i lo2 = _mm512_setr_epi32(0, 1, 4, 5, 8, 9, 12, 13, 0, 0, 0, 0, 0, 0, 0, 0);
    const __m512i hi2 = _mm512_setr_epi32(2, 3, 6, 7, 10, 11, 14, 15, 0, 0, 0, 0, 0, 0, 0, 0);
    const __m512i lo1 = _mm512_setr_epi32(0, 2, 4, 6, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
    const __m512i hi1 = _mm512_setr_epi32(1, 3, 5, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
    const __m512 t = fold(fold(x0, x1, lo8, hi8), fold(x2, x3, lo8, hi8), lo4, hi4);
    const __m512 u = fold(t, t, lo2, hi2);
    return fold(u, u, lo1, hi1);
}

// Unpacked dot products for a few rows against a transposed weight (both
// operands unit stride along k): out[r][j] = sum_k a[r*lda + k] * b[j][k] for
// R rows and 4 columns. Used when M is so small that packing B would cost
// more than the product.
template <int R>
void dot_rows4(int64_t K, const float *a, int64_t lda, const float *const b[4], float out[R][4]) {
    __m512 acc[R][4];
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
        for (int j = 0; j < 4; ++j) acc[r][j] = _mm512_setzero_ps();
    // 16 values of k per step; the last step masks off the lanes past K.
    const auto step = [&](int64_t k, __mmask16 m) __attribute__((always_inline)) {
        __m512 bv[4];
#pragma GCC unroll 4
        for (int j = 0; j < 4; ++j) bv[j] = _mm512_maskz_loadu_ps(m, b[j] + k);
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r) {
            const __m512 av = _mm512_maskz_loadu_ps(m, a + r * lda + k);
#pragma GCC unroll 4
            for (int j = 0; j < 4; ++j) acc[r][j] = _mm512_fmadd_ps(av, bv[j], acc[r][j]);
        }
    };
    int64_t k = 0;
    for (; k + 16 <= K; k += 16) step(k, 0xFFFF);
    if (k < K) step(k, lane_mask(K - k, 0));
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r)
        _mm512_mask_storeu_ps(out[r], 0xF, hsum4(acc[r][0], acc[r][1], acc[r][2], acc[r][3]));
}

// Lane t = the sum of the lanes of x[t]: four rounds of folding pairs of vectors together
// (256-bit halves, 128-bit quarters, pairs, single lanes), 15 folds for 16 sums. The folds
// use immediate shuffles only (no index vectors to hold in registers beside 16 sums); they
// leave the sums transposed as a 4x4 grid, so the inputs go in transposed.
inline __m512 hsum16(const __m512 (&x)[16]) {
    // The masked form with every lane set: GCC 12 flags the plain one's undefined operand.
    const auto shuffle128 = [](__m512 u, __m512 v, auto imm) __attribute__((always_inline)) {
        return _mm512_mask_shuffle_f32x4(u, 0xFFFF, u, v, decltype(imm)::value);
    };
    using lo256 = std::integral_constant<int, 0x44>;
    using hi256 = std::integral_constant<int, 0xEE>;
    using even128 = std::integral_constant<int, 0x88>;
    using odd128 = std::integral_constant<int, 0xDD>;
    __m512 y[8], z[4], w[2];
#pragma GCC unroll 8
    for (int i = 0; i < 8; ++i) {
        const __m512 u = x[(2 * i) % 4 * 4 + 2 * i / 4], v = x[(2 * i + 1) % 4 * 4 + (2 * i + 1) / 4];
        y[i] = _mm512_add_ps(shuffle128(u, v, lo256{}), shuffle128(u, v, hi256{}));
    }
#pragma GCC unroll 4
    for (int i = 0; i < 4; ++i)
        z[i] = _mm512_add_ps(shuffle128(y[2 * i], y[2 * i + 1], even128{}),
                             shuffle128(y[2 * i], y[2 * i + 1], odd128{}));
#pragma GCC unroll 2
    for (int i = 0; i < 2; ++i)
        w[i] = _mm512_add_ps(_mm512_shuffle_ps(z[2 * i], z[2 * i + 1], 0x44),
                             _mm512_shuffle_ps(z[2 * i], z[2 * i + 1], 0xEE));
    return _mm512_add_ps(_mm512_shuffle_ps(w[0], w[1], 0x88), _mm512_shuffle_ps(w[0], w[1], 0xDD));
}

// Dot products of R rows of A (lda apart) and NC columns of B, both unit stride along k
// (B a transposed weight, or its columns copied out): out[r*NC + j] = sum_k a[r*lda + k] *
// b[j][k]. R*NC <= 16 accumulators, summed together by one hsum16, so a narrow C
// (N = 1..4) fills every lane rather than padding its columns to a 32-wide panel.
template <int R, int NC>
void dot_narrow(int64_t K, const float *a, int64_t lda, const float *const (&b)[NC], float out[16]) {
    static_assert(R * NC <= 16, "one vector of sums");
    __m512 acc[16];
#pragma GCC unroll 16
    for (int t = 0; t < 16; ++t) acc[t] = _mm512_setzero_ps();
    const auto step = [&](int64_t k, __mmask16 m) __attribute__((always_inline)) {
        __m512 bv[NC];
#pragma GCC unroll 4
        for (int j = 0; j < NC; ++j) bv[j] = _mm512_maskz_loadu_ps(m, b[j] + k);
#pragma GCC unroll 16
        for (int r = 0; r < R; ++r) {
            const __m512 av = _mm512_maskz_loadu_ps(m, a + r * lda + k);
#pragma GCC unroll 4
            for (int j = 0; j < NC; ++j) acc[r * NC + j] = _mm512_fmadd_ps(av, bv[j], acc[r * NC + j]);
        }
    };
    int64_t k = 0;
    for (; k + 16 <= K; k += 16) step(k, 0xFFFF);
    if (k < K) step(k, lane_mask(K - k, 0));
    _mm512_storeu_ps(out, hsum16(acc));
}

constexpr int DOT_LANES = 16;  // sums one dot_narrow call returns

#elif AOTC_GEMM_AVX2

// The hot loop: acc[i] += a[k*MR + i] * b[k*NR : k*NR + 16] for every k.
// Always inlined so the accumulators stay in registers.
__attribute__((always_inline)) inline void
accumulate_6x16(int64_t kc, const float *__restrict a, const float *__restrict b,
                __m256 acc[MR][2]) {
#pragma GCC unroll 6
    for (int i = 0; i < MR; ++i) acc[i][0] = acc[i][1] = _mm256_setzero_ps();
#pragma GCC unroll 4
    for (int64_t k = 0; k < kc; ++k) {
        const __m256 b0 = _mm256_load_ps(b);
        const __m256 b1 = _mm256_load_ps(b + 8);
#pragma GCC unroll 6
        for (int i = 0; i < MR; ++i) {
            const __m256 ai = _mm256_broadcast_ss(a + i);
            acc[i][0] = _mm256_fmadd_ps(ai, b0, acc[i][0]);
            acc[i][1] = _mm256_fmadd_ps(ai, b1, acc[i][1]);
        }
        a += MR;
        b += NR;
    }
}

// Raw product into a local tile (edge tiles and unusual bias strides).
inline void compute_tile(int64_t kc, const float *a, const float *b, float *tile) {
    __m256 acc[MR][2];
    accumulate_6x16(kc, a, b, acc);
    for (int i = 0; i < MR; ++i) {
        _mm256_storeu_ps(tile + i * NR, acc[i][0]);
        _mm256_storeu_ps(tile + i * NR + 8, acc[i][1]);
    }
}

// Lanes of columns [8v, 8v + 8) that lie inside the first n columns, as a maskload mask.
inline __m256i lane_mask8(int64_t n, int v) {
    const int lanes = int(std::min<int64_t>(std::max<int64_t>(n - 8 * v, 0), 8));
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(lanes), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// acc[i][v] for the first ROWS rows and W vectors of a panel pair: edge tiles (few rows
// of A, as in a GEMV, or the last columns) skip the zero padding rather than multiply it.
template <int ROWS, int W>
__attribute__((always_inline)) inline void
accumulate_ymm(int64_t kc, const float *__restrict a, const float *__restrict b,
               __m256 (&acc)[ROWS][W], const char *pf = nullptr, int64_t pf_lines = 0) {
#pragma GCC unroll 6
    for (int i = 0; i < ROWS; ++i)
#pragma GCC unroll 2
        for (int v = 0; v < W; ++v) acc[i][v] = _mm256_setzero_ps();
#pragma GCC unroll 4
    for (int64_t k = 0; k < kc; ++k) {
        __m256 bv[W];
#pragma GCC unroll 2
        for (int v = 0; v < W; ++v) bv[v] = _mm256_load_ps(b + 8 * v);
        if (k < pf_lines) _mm_prefetch(pf + 64 * k, _MM_HINT_T1);
#pragma GCC unroll 6
        for (int i = 0; i < ROWS; ++i) {
            const __m256 ai = _mm256_broadcast_ss(a + i);
#pragma GCC unroll 2
            for (int v = 0; v < W; ++v) acc[i][v] = _mm256_fmadd_ps(ai, bv[v], acc[i][v]);
        }
        a += MR;
        b += NR;
    }
}

// Applies the epilogue to an mr x nr tile (mr <= ROWS, nr <= 8*W) and stores it into C;
// masked loads and stores leave the columns past nr untouched. The bias needs sbn of 0 or 1.
// The activation of conv_activation.h on a vector; a NaN stays NaN.
inline __m256 activate_ymm(__m256 r, int act, __m256 vlo, __m256 vhi) {
    if (act == aotc_conv_act::HARDSWISH) {
        const __m256 six = _mm256_set1_ps(6.0f), z = _mm256_setzero_ps();
        const __m256 u = _mm256_min_ps(six, _mm256_max_ps(z, _mm256_add_ps(r, _mm256_set1_ps(3.0f))));
        return _mm256_mul_ps(_mm256_mul_ps(r, u), _mm256_set1_ps(1.0f / 6.0f));
    }
    return act == aotc_conv_act::CLAMP ? _mm256_min_ps(vhi, _mm256_max_ps(vlo, r)) : r;
}

template <int ROWS, int W>
__attribute__((always_inline)) inline void
store_ymm(__m256 (&acc)[ROWS][W], float *c, int64_t ldc, int64_t mr, int64_t nr, const Epilogue &e) {
    __m256i mask[W];
    for (int v = 0; v < W; ++v) mask[v] = lane_mask8(nr, v);
    const __m256 va = _mm256_set1_ps(e.alpha), vb = _mm256_set1_ps(e.beta);
    const int act = e.act;
    const float *res = e.res;
    const __m256 vlo = _mm256_set1_ps(e.lo), vhi = _mm256_set1_ps(e.hi);
#pragma GCC unroll 12
    for (int i = 0; i < ROWS; ++i) {
        if (i >= mr) break;
        float *ci = c + i * ldc;
        const float *bi = e.bias ? e.bias + i * e.sbm : nullptr;
#pragma GCC unroll 2
        for (int v = 0; v < W; ++v) {
            __m256 r = _mm256_mul_ps(va, acc[i][v]);
            if (e.accumulate) r = _mm256_add_ps(r, _mm256_maskload_ps(ci + 8 * v, mask[v]));
            else if (bi && e.sbn == 0) r = _mm256_add_ps(r, _mm256_set1_ps(e.beta * bi[0]));
            else if (bi) r = _mm256_fmadd_ps(vb, _mm256_maskload_ps(bi + 8 * v, mask[v]), r);
            if (res) r = _mm256_add_ps(r, _mm256_maskload_ps(res + i * ldc + 8 * v, mask[v]));
            if (act) r = activate_ymm(r, act, vlo, vhi);
            _mm256_maskstore_ps(ci + 8 * v, mask[v], r);
        }
    }
}

// An mr x nr tile (mr <= ROWS, nr <= 8*W) of packed panels straight into C with the
// epilogue fused; masked loads and stores leave the columns past nr untouched. The bias
// needs sbn of 0 or 1.
template <int ROWS, int W>
void kernel_ymm(int64_t kc, const float *a, const float *b, float *c, int64_t ldc, int64_t mr,
                int64_t nr, const Epilogue &e, const char *pf, int64_t pf_lines) {
    prefetch_tile<8 * W>(c, ldc, mr);
    __m256 acc[ROWS][W];
    accumulate_ymm<ROWS, W>(kc, a, b, acc, pf, pf_lines);
    store_ymm<ROWS, W>(acc, c, ldc, mr, nr, e);
}

// R rows of A (any strides) times nr <= 8*W columns of a row-major B read in place (ldb
// apart along k), epilogue fused (bias sbn 0 or 1): a narrow C, no packing.
template <int R, int W>
void axpy_rows(int64_t K, const float *a, int64_t sa_m, int64_t sa_k, const float *b, int64_t ldb,
               float *c, int64_t ldc, int64_t nr, const Epilogue &e) {
    __m256 acc[R][W];
    __m256i mask[W];
#pragma GCC unroll 4
    for (int v = 0; v < W; ++v) {
        mask[v] = lane_mask8(nr, v);
#pragma GCC unroll 12
        for (int r = 0; r < R; ++r) acc[r][v] = _mm256_setzero_ps();
    }
    for (int64_t k = 0; k < K; ++k, a += sa_k, b += ldb) {
        __m256 bv[W];
#pragma GCC unroll 4
        for (int v = 0; v < W; ++v) bv[v] = _mm256_maskload_ps(b + 8 * v, mask[v]);
#pragma GCC unroll 12
        for (int r = 0; r < R; ++r) {
            const __m256 ar = _mm256_broadcast_ss(a + r * sa_m);
#pragma GCC unroll 4
            for (int v = 0; v < W; ++v) acc[r][v] = _mm256_fmadd_ps(ar, bv[v], acc[r][v]);
        }
    }
    store_ymm<R, W>(acc, c, ldc, R, nr, e);
}

// Lane t = the sum of the lanes of x[t].
inline __m256 hsum8(const __m256 (&x)[8]) {
    const __m256 t0 = _mm256_hadd_ps(x[0], x[1]), t1 = _mm256_hadd_ps(x[2], x[3]);
    const __m256 t2 = _mm256_hadd_ps(x[4], x[5]), t3 = _mm256_hadd_ps(x[6], x[7]);
    // u0: x0..x3 over the low 128-bit half, then over the high half; u1 likewise x4..x7
    const __m256 u0 = _mm256_hadd_ps(t0, t1), u1 = _mm256_hadd_ps(t2, t3);
    return _mm256_add_ps(_mm256_permute2f128_ps(u0, u1, 0x20), _mm256_permute2f128_ps(u0, u1, 0x31));
}

// As the AVX-512 dot_narrow: R*NC <= 8 dot products of unit-stride rows and columns.
template <int R, int NC>
void dot_narrow(int64_t K, const float *a, int64_t lda, const float *const (&b)[NC], float out[8]) {
    static_assert(R * NC <= 8, "one vector of sums");
    __m256 acc[8];
#pragma GCC unroll 8
    for (int t = 0; t < 8; ++t) acc[t] = _mm256_setzero_ps();
    const auto step = [&](int64_t k, __m256i m, bool masked) __attribute__((always_inline)) {
        __m256 bv[NC];
#pragma GCC unroll 4
        for (int j = 0; j < NC; ++j) bv[j] = masked ? _mm256_maskload_ps(b[j] + k, m) : _mm256_loadu_ps(b[j] + k);
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
            const __m256 av = masked ? _mm256_maskload_ps(a + r * lda + k, m) : _mm256_loadu_ps(a + r * lda + k);
#pragma GCC unroll 4
            for (int j = 0; j < NC; ++j) acc[r * NC + j] = _mm256_fmadd_ps(av, bv[j], acc[r * NC + j]);
        }
    };
    int64_t k = 0;
    for (; k + 8 <= K; k += 8) step(k, _mm256_setzero_si256(), false);
    if (k < K) step(k, lane_mask8(K - k, 0), true);
    _mm256_storeu_ps(out, hsum8(acc));
}

constexpr int DOT_LANES = 8;  // sums one dot_narrow call returns

template <int W>
void kernel_rows(int64_t kc, const float *a, const float *b, float *c, int64_t ldc, int64_t mr,
                 int64_t nr, const Epilogue &e, const char *pf, int64_t pf_lines) {
    switch (mr) {
        case 1: return kernel_ymm<1, W>(kc, a, b, c, ldc, mr, nr, e, pf, pf_lines);
        case 2: return kernel_ymm<2, W>(kc, a, b, c, ldc, mr, nr, e, pf, pf_lines);
        case 3: return kernel_ymm<3, W>(kc, a, b, c, ldc, mr, nr, e, pf, pf_lines);
        case 4: return kernel_ymm<4, W>(kc, a, b, c, ldc, mr, nr, e, pf, pf_lines);
        default: return kernel_ymm<MR, W>(kc, a, b, c, ldc, mr, nr, e, pf, pf_lines);
    }
}
static_assert(MR == 6 && NR == 16, "kernel_rows and kernel_tile assume 6x16 tiles");

// Any tile with a fast bias: the smallest instantiation that covers mr x nr.
inline void kernel_tile(int64_t kc, const float *a, const float *b, float *c, int64_t ldc,
                        int64_t mr, int64_t nr, const Epilogue &e, const char *pf = nullptr,
                        int64_t pf_lines = 0) {
    if (nr > 8) kernel_rows<2>(kc, a, b, c, ldc, mr, nr, e, pf, pf_lines);
    else kernel_rows<1>(kc, a, b, c, ldc, mr, nr, e, pf, pf_lines);
}

#elif !AOTC_GEMM_NEON  // portable fallback: plain loops the compiler can vectorise for any target

inline void compute_tile(int64_t kc, const float *a, const float *b, float *tile) {
    float acc[MR][NR] = {};
    for (int64_t k = 0; k < kc; ++k, a += MR, b += NR)
        for (int64_t i = 0; i < MR; ++i)
            for (int64_t j = 0; j < NR; ++j) acc[i][j] += a[i] * b[j];
    std::memcpy(tile, acc, sizeof(acc));
}

#endif

#if AOTC_GEMM_AVX2
// In-register transpose of an 8x8 block.
inline void transpose8(__m256 r[8]) {
    __m256 t[8], u[8];
    for (int i = 0; i < 4; ++i) {
        t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    for (int h = 0; h < 8; h += 4) {
        u[h + 0] = _mm256_shuffle_ps(t[h], t[h + 2], 0x44);
        u[h + 1] = _mm256_shuffle_ps(t[h], t[h + 2], 0xEE);
        u[h + 2] = _mm256_shuffle_ps(t[h + 1], t[h + 3], 0x44);
        u[h + 3] = _mm256_shuffle_ps(t[h + 1], t[h + 3], 0xEE);
    }
    for (int i = 0; i < 4; ++i) {
        r[i] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x20);
        r[i + 4] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x31);
    }
}
#endif

}  // namespace aotc_gemm

#if AOTC_GEMM_NEON
#include "gemm_microkernels_neon.h"
#endif

#endif  // AOTC_GEMM_MICROKERNELS_H
