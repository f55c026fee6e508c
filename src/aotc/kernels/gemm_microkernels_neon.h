// The NEON (aarch64) SGEMM micro-kernels of gemm_microkernels.h, which defines their
// tile shape (MR x NR = 6 x 16, KC 512) and includes this file last. Private to gemm.cpp.
#ifndef AOTC_GEMM_MICROKERNELS_NEON_H
#define AOTC_GEMM_MICROKERNELS_NEON_H

#include <arm_neon.h>

#include <cstdint>
#include <cstring>
#include <utility>

#include "gemm_microkernels.h"  // MR, NR, Epilogue (when this file is included first)

namespace aotc_gemm {

// acc[v] += bv[v] * (lane I of the step's A values): one row of the tile.
template <int I, int W>
__attribute__((always_inline)) inline void fma_row(float32x4_t (&acc)[W], const float32x4_t (&bv)[W],
                                                   float32x4_t a03, float32x2_t a45) {
#pragma GCC unroll 4
    for (int v = 0; v < W; ++v) {
        if constexpr (I < 4) acc[v] = vfmaq_laneq_f32(acc[v], bv[v], a03, I);
        else acc[v] = vfmaq_lane_f32(acc[v], bv[v], a45, I - 4);
    }
}

// Every row of the tile (a pack expansion: the lane of each FMA must be a constant).
template <int ROWS, int W, size_t... I>
__attribute__((always_inline)) inline void fma_rows(float32x4_t (&acc)[ROWS][W], const float32x4_t (&bv)[W],
                                                    float32x4_t a03, float32x2_t a45,
                                                    std::index_sequence<I...>) {
    (fma_row<int(I), W>(acc[I], bv, a03, a45), ...);
}

// acc[i][v] = sum over k of a[k*MR + i] * b[k*NR + 4v : +4], for the first ROWS rows and
// W vectors of a panel pair: edge tiles skip the zero padding rather than multiply it.
// Each step loads the six A values as rows 0-3 and 4-5 (always inside the MR-wide panel).
template <int ROWS, int W>
__attribute__((always_inline)) inline void
accumulate_neon(int64_t kc, const float *__restrict a, const float *__restrict b,
                float32x4_t (&acc)[ROWS][W]) {
#pragma GCC unroll 6
    for (int i = 0; i < ROWS; ++i)
#pragma GCC unroll 4
        for (int v = 0; v < W; ++v) acc[i][v] = vdupq_n_f32(0.0f);
#pragma GCC unroll 4
    for (int64_t k = 0; k < kc; ++k) {
        float32x4_t bv[W];
#pragma GCC unroll 4
        for (int v = 0; v < W; ++v) bv[v] = vld1q_f32(b + 4 * v);
        const float32x4_t a03 = vld1q_f32(a);
        const float32x2_t a45 = ROWS > 4 ? vld1_f32(a + 4) : vdup_n_f32(0.0f);
        fma_rows<ROWS, W>(acc, bv, a03, a45, std::make_index_sequence<ROWS>{});
        a += MR;
        b += NR;
    }
}

// The first n (1..3) floats at p with zeros after them, and their store: the last columns
// of C and of the bias, neither read nor written past their end.
inline float32x4_t load_n(const float *p, int64_t n) {
    float t[4] = {};
    std::memcpy(t, p, sizeof(float) * size_t(n));
    return vld1q_f32(t);
}
inline void store_n(float *p, float32x4_t v, int64_t n) {
    float t[4];
    vst1q_f32(t, v);
    std::memcpy(p, t, sizeof(float) * size_t(n));
}

// The activation of conv_activation.h on a vector; a NaN stays NaN.
inline float32x4_t activate_neon(float32x4_t r, int act, float32x4_t vlo, float32x4_t vhi) {
    if (act == aotc_conv_act::HARDSWISH) {
        const float32x4_t u = vminq_f32(vdupq_n_f32(6.0f),
                                        vmaxq_f32(vdupq_n_f32(0.0f), vaddq_f32(r, vdupq_n_f32(3.0f))));
        return vmulq_n_f32(vmulq_f32(r, u), 1.0f / 6.0f);
    }
    return act == aotc_conv_act::CLAMP ? vminq_f32(vhi, vmaxq_f32(vlo, r)) : r;
}

// Applies the epilogue to an mr x nr tile (mr <= ROWS, nr <= 4*W) and stores it into C,
// leaving the columns past nr untouched. The bias needs sbn of 0 or 1; the residual and
// activation apply on the last K slice.
template <int ROWS, int W>
__attribute__((always_inline)) inline void
store_neon(float32x4_t (&acc)[ROWS][W], float *c, int64_t ldc, int64_t mr, int64_t nr, const Epilogue &e) {
    const float32x4_t vb = vdupq_n_f32(e.beta);
    const int act = e.act;
    const float *res = e.res;
    const float32x4_t vlo = vdupq_n_f32(e.lo), vhi = vdupq_n_f32(e.hi);
#pragma GCC unroll 6
    for (int i = 0; i < ROWS; ++i) {
        if (i >= mr) break;
        float *ci = c + i * ldc;
        const float *bi = e.bias ? e.bias + i * e.sbm : nullptr;
#pragma GCC unroll 4
        for (int v = 0; v < W; ++v) {
            const int64_t n = nr - 4 * v;
            if (n <= 0) break;
            const bool full = n >= 4;
            float32x4_t r = vmulq_n_f32(acc[i][v], e.alpha);
            if (e.accumulate) r = vaddq_f32(r, full ? vld1q_f32(ci + 4 * v) : load_n(ci + 4 * v, n));
            else if (bi && e.sbn == 0) r = vaddq_f32(r, vdupq_n_f32(e.beta * bi[0]));
            else if (bi) r = vfmaq_f32(r, vb, full ? vld1q_f32(bi + 4 * v) : load_n(bi + 4 * v, n));
            if (res) {
                const float *ri = res + i * ldc + 4 * v;
                r = vaddq_f32(r, full ? vld1q_f32(ri) : load_n(ri, n));
            }
            if (act) r = activate_neon(r, act, vlo, vhi);
            if (full) vst1q_f32(ci + 4 * v, r);
            else store_n(ci + 4 * v, r, n);
        }
    }
}

// An mr x nr tile of packed panels straight into C with the epilogue fused. The macro
// kernel's hints for the next B panel go unused: that panel follows this one in memory,
// where the cores' stream prefetchers find it, and a prefetch inside the k loop made g++
// spill accumulators to the stack.
template <int ROWS, int W>
void kernel_neon(int64_t kc, const float *a, const float *b, float *c, int64_t ldc, int64_t mr,
                 int64_t nr, const Epilogue &e) {
    float32x4_t acc[ROWS][W];
    accumulate_neon<ROWS, W>(kc, a, b, acc);
    store_neon<ROWS, W>(acc, c, ldc, mr, nr, e);
}

template <int W>
void kernel_rows(int64_t kc, const float *a, const float *b, float *c, int64_t ldc, int64_t mr,
                 int64_t nr, const Epilogue &e) {
    switch (mr) {
        case 1: return kernel_neon<1, W>(kc, a, b, c, ldc, mr, nr, e);
        case 2: return kernel_neon<2, W>(kc, a, b, c, ldc, mr, nr, e);
        case 3:
        case 4: return kernel_neon<4, W>(kc, a, b, c, ldc, mr, nr, e);
        default: return kernel_neon<MR, W>(kc, a, b, c, ldc, mr, nr, e);
    }
}
static_assert(MR == 6 && NR == 16, "kernel_rows and kernel_tile assume 6x16 tiles");

// Any tile with a fast bias: the smallest instantiation that covers mr x nr.
inline void kernel_tile(int64_t kc, const float *a, const float *b, float *c, int64_t ldc,
                        int64_t mr, int64_t nr, const Epilogue &e, const char * = nullptr,
                        int64_t = 0) {
    if (nr > 8) kernel_rows<4>(kc, a, b, c, ldc, mr, nr, e);
    else if (nr > 4) kernel_rows<2>(kc, a, b, c, ldc, mr, nr, e);
    else kernel_rows<1>(kc, a, b, c, ldc, mr, nr, e);
}

// Raw product into a local MR x NR tile (bias with other strides).
inline void compute_tile(int64_t kc, const float *a, const float *b, float *tile) {
    float32x4_t acc[MR][4];
    accumulate_neon<MR, 4>(kc, a, b, acc);
    for (int i = 0; i < MR; ++i)
        for (int v = 0; v < 4; ++v) vst1q_f32(tile + i * NR + 4 * v, acc[i][v]);
}

}  // namespace aotc_gemm

#endif  // AOTC_GEMM_MICROKERNELS_NEON_H
