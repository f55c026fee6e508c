// Blocked direct convolution for conv.cpp (AVX-512, AVX2 and aarch64 NEON builds only): 1-D
// and 2-D, forward, any kernel, stride, padding, dilation and groups (the depthwise kernels
// over the same phased input are in conv_depthwise.h).
//
// The input of one (image, group) is copied once into a zero-padded buffer whose rows and
// columns are split into their stride phases (padded element (r, c) of a channel at phase
// (r % sh, c % sw), position (r / sh, c / sw) of an Hs x Ws plane). Output position
// (oh, ow), numbered q = oh * Ws + ow, then reads tap (kh, kw) at q plus a constant offset,
// so a run of consecutive q is one unit-stride load for every tap; the positions with
// ow >= Wo are computed and dropped. A register tile of OCB output channels x NV vectors
// of positions accumulates over every input channel and tap (weights broadcast from a
// per-block copy laid out [ci][tap][OCB]), then bias and the activation are applied on the
// finished tile and its valid positions are stored. Each output is summed by one thread in
// a fixed order: results do not depend on the thread count.
#ifndef AOTC_CONV_DIRECT_H
#define AOTC_CONV_DIRECT_H

#include "conv_activation.h"

#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__)) || \
    (defined(__aarch64__) && defined(__ARM_NEON))
#define AOTC_CONV_DIRECT 1
#if defined(__aarch64__)
#include <arm_neon.h>

#include <cstring>
#else
#include <immintrin.h>
#endif

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

namespace aotc_conv_direct {

#if defined(__AVX512F__)
using V = __m512;
constexpr int L = 16;
inline V vzero() { return _mm512_setzero_ps(); }
inline V vset(float a) { return _mm512_set1_ps(a); }
inline V vload(const float *p) { return _mm512_loadu_ps(p); }
inline void vstore(float *p, V v) { _mm512_storeu_ps(p, v); }
inline V vfma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
inline V vadd(V a, V b) { return _mm512_add_ps(a, b); }
inline V vsub(V a, V b) { return _mm512_sub_ps(a, b); }
inline V vmul(V a, V b) { return _mm512_mul_ps(a, b); }
// the even and the odd elements of p[0, 2L)
inline void vdeinterleave(const float *p, V &even, V &odd) {
    const V a = _mm512_loadu_ps(p), b = _mm512_loadu_ps(p + L);
    const __m512i ie = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    even = _mm512_permutex2var_ps(a, ie, b);
    odd = _mm512_permutex2var_ps(a, _mm512_add_epi32(ie, _mm512_set1_epi32(1)), b);
}
// the masked forms: g++ 12 warns that the unmasked ones read an uninitialized register
inline V vmax(V a, V b) { return _mm512_mask_max_ps(a, 0xFFFF, a, b); }
inline V vmin(V a, V b) { return _mm512_mask_min_ps(a, 0xFFFF, a, b); }
// the first n (< L) lanes (zeros after them), and their store
inline V vload_n(const float *p, int64_t n) {
    return _mm512_maskz_loadu_ps(static_cast<__mmask16>((1u << n) - 1), p);
}
inline void vstore_n(float *p, V v, int64_t n) {
    _mm512_mask_storeu_ps(p, static_cast<__mmask16>((1u << n) - 1), v);
}
#elif defined(__aarch64__)
using V = float32x4_t;
constexpr int L = 4;
inline V vzero() { return vdupq_n_f32(0.0f); }
inline V vset(float a) { return vdupq_n_f32(a); }
inline V vload(const float *p) { return vld1q_f32(p); }
inline void vstore(float *p, V v) { vst1q_f32(p, v); }
inline V vfma(V a, V b, V c) { return vfmaq_f32(c, a, b); }
inline V vadd(V a, V b) { return vaddq_f32(a, b); }
inline V vsub(V a, V b) { return vsubq_f32(a, b); }
inline V vmul(V a, V b) { return vmulq_f32(a, b); }
inline void vdeinterleave(const float *p, V &even, V &odd) {
    const V a = vld1q_f32(p), b = vld1q_f32(p + L);
    even = vuzp1q_f32(a, b);
    odd = vuzp2q_f32(a, b);
}
// fmax and fmin return a NaN operand, as the x86 forms do with the NaN second
inline V vmax(V a, V b) { return vmaxq_f32(a, b); }
inline V vmin(V a, V b) { return vminq_f32(a, b); }
// the first n (< L) lanes (zeros after them), and their store, through a bounce buffer
inline V vload_n(const float *p, int64_t n) {
    float t[L] = {};
    std::memcpy(t, p, sizeof(float) * size_t(n));
    return vld1q_f32(t);
}
inline void vstore_n(float *p, V v, int64_t n) {
    float t[L];
    vst1q_f32(t, v);
    std::memcpy(p, t, sizeof(float) * size_t(n));
}
#else
using V = __m256;
constexpr int L = 8;
inline V vzero() { return _mm256_setzero_ps(); }
inline V vset(float a) { return _mm256_set1_ps(a); }
inline V vload(const float *p) { return _mm256_loadu_ps(p); }
inline void vstore(float *p, V v) { _mm256_storeu_ps(p, v); }
inline V vfma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
inline V vadd(V a, V b) { return _mm256_add_ps(a, b); }
inline V vsub(V a, V b) { return _mm256_sub_ps(a, b); }
inline V vmul(V a, V b) { return _mm256_mul_ps(a, b); }
inline void vdeinterleave(const float *p, V &even, V &odd) {
    const V a = _mm256_loadu_ps(p), b = _mm256_loadu_ps(p + L);
    // [a0 a2 b0 b2 | a4 a6 b4 b6], then the middle 64-bit pairs swapped
    even = _mm256_castpd_ps(_mm256_permute4x64_pd(
        _mm256_castps_pd(_mm256_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0))), _MM_SHUFFLE(3, 1, 2, 0)));
    odd = _mm256_castpd_ps(_mm256_permute4x64_pd(
        _mm256_castps_pd(_mm256_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1))), _MM_SHUFFLE(3, 1, 2, 0)));
}
inline V vmax(V a, V b) { return _mm256_max_ps(a, b); }
inline V vmin(V a, V b) { return _mm256_min_ps(a, b); }
inline __m256i first_lanes(int64_t n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)),
                              _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
inline V vload_n(const float *p, int64_t n) { return _mm256_maskload_ps(p, first_lanes(n)); }
inline void vstore_n(float *p, V v, int64_t n) { _mm256_maskstore_ps(p, first_lanes(n), v); }
#endif
constexpr int MAX_T = L * 3;  // the most positions of a tile (see run)

// The fused activation (conv_activation.h) on a vector; vlo and vhi are the clamp's.
inline V activate(V v, int act, V vlo, V vhi) {
    if (act == aotc_conv_act::HARDSWISH)
        return vmul(vmul(v, vmin(vset(6.0f), vmax(vzero(), vadd(v, vset(3.0f))))),
                    vset(1.0f / 6.0f));
    return act == aotc_conv_act::CLAMP ? vmin(vhi, vmax(vlo, v)) : v;  // a NaN stays
}

struct Plan {
    int64_t cig, cog, taps, kh, kw;
    int64_t h, w, ph, pw, sh, sw, dh, dw;  // input size, padding, stride, dilation
    int64_t ho, wo;                        // output size
    int64_t hs, ws;                        // one phase plane
    int64_t chan;                          // floats per channel of the phased buffer
    int64_t q;                             // positions computed: ho * ws
};

inline Plan plan(int64_t cig, int64_t cog, const int64_t in[2], const int64_t out[2],
                 const int64_t k[2], const int64_t s[2], const int64_t p[2],
                 const int64_t d[2]) {
    Plan pl{};
    pl.cig = cig;
    pl.cog = cog;
    pl.kh = k[0];
    pl.kw = k[1];
    pl.taps = k[0] * k[1];
    pl.h = in[0];
    pl.w = in[1];
    pl.ph = p[0];
    pl.pw = p[1];
    pl.sh = s[0];
    pl.sw = s[1];
    pl.dh = d[0];
    pl.dw = d[1];
    pl.ho = out[0];
    pl.wo = out[1];
    pl.hs = (in[0] + 2 * p[0] + s[0] - 1) / s[0];
    pl.ws = (in[1] + 2 * p[1] + s[1] - 1) / s[1];
    // Unit stride along rows: a row's right padding is the next row's left padding (the
    // first p columns of every row are zeros), so rows are w + p apart rather than w + 2p
    // and fewer dropped positions are computed (56 x 56: 57 per row instead of 58; 28 x 28:
    // 29 instead of 30). An output row reads up to column w + 2p - 1, that is, column
    // p - 1 of the next row (or of the zero slack after the last one). Only when every
    // output column still lies in a row: wo <= w + p.
    if (s[1] == 1 && out[1] <= in[1] + p[1]) pl.ws = in[1] + p[1];
    pl.chan = s[0] * s[1] * pl.hs * pl.ws;
    pl.q = pl.ho * pl.ws;
    return pl;
}

// Floats of the phased input: every channel, then slack that the last tile of the last
// channel may read (those lanes are dropped).
inline int64_t buffer_size(const Plan &pl) {
    return pl.cig * pl.chan + MAX_T + pl.ws + pl.chan;
}

// dst[0, n) = src[0, n): a loop rather than memmove, whose call costs more than the copy
// of the short rows of small planes; on AVX-512 the tail is one masked move (AVX2's
// masked store is slow on some cores: its tail stays scalar).
inline void copy_run(const float *src, float *dst, int64_t n) {
    int64_t i = 0;
    for (; i + L <= n; i += L) vstore(dst + i, vload(src + i));
#if defined(__AVX512F__)
    if (i < n) vstore_n(dst + i, vload_n(src + i, n - i), n - i);
#else
    for (; i < n; ++i) dst[i] = src[i];
#endif
}

// dst[0, n) = 0, likewise without a call to memset.
inline void zero_run(float *dst, int64_t n) {
    int64_t i = 0;
    for (; i + L <= n; i += L) vstore(dst + i, vzero());
#if defined(__AVX512F__)
    if (i < n) vstore_n(dst + i, vzero(), n - i);
#else
    for (; i < n; ++i) dst[i] = 0.0f;
#endif
}

#if defined(__AVX512F__)
// ev[m] = src[2m], od[m] = src[2m + 1] for the n floats of src: 32 at a time, two
// permutes (the constant-stride loop of the generic fill stays scalar-ish on short rows).
inline void deinterleave2(const float *src, int64_t n, float *ev, float *od) {
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26,
                                           28, 30);
    const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
    for (int64_t i = 0; i < n; i += 2 * L) {
        const int64_t left = n - i;
        const V a = left >= L ? vload(src + i) : vload_n(src + i, left);
        const V b = left >= 2 * L ? vload(src + i + L) : left > L ? vload_n(src + i + L, left - L)
                                                                    : vzero();
        const V e = _mm512_permutex2var_ps(a, even, b), o = _mm512_permutex2var_ps(a, odd, b);
        const int64_t ne = std::min<int64_t>(L, (left + 1) / 2), no = std::min<int64_t>(L, left / 2);
        float *de = ev + i / 2, *dd = od + i / 2;
        if (ne == L) vstore(de, e); else vstore_n(de, e, ne);
        if (no == L) vstore(dd, o); else if (no > 0) vstore_n(dd, o, no);
    }
}
#endif

// The phased, zero-padded copy of one channel x[h, w] into dst (pl.chan floats). Every
// channel writes the same elements, so a buffer that held another channel's copy (or was
// zeroed) keeps its padding: `padded` skips zeroing it again.
inline void fill_channel(const Plan &pl, const float *src, float *dst, bool padded = false) {
    const int64_t plane = pl.hs * pl.ws;
    if (!padded) std::fill(dst, dst + pl.chan, 0.0f);
    for (int64_t ih = 0; ih < pl.h; ++ih) {
        const int64_t r = ih + pl.ph;
        float *row = dst + (r % pl.sh) * pl.sw * plane + (r / pl.sh) * pl.ws;
        const float *sr = src + ih * pl.w;
        if (pl.sw == 1) {
            copy_run(sr, row + pl.pw, pl.w);
            continue;
        }
#if defined(__AVX512F__)
        if (pl.sw == 2) {  // input column c at padded column c + pw: phase, then position
            deinterleave2(sr, pl.w, row + (pl.pw % 2) * plane + pl.pw / 2,
                          row + ((pl.pw + 1) % 2) * plane + (pl.pw + 1) / 2);
            continue;
        }
#endif
        for (int64_t a = 0; a < pl.sw; ++a) {  // padded columns c = a + j*sw
            float *pr = row + a * plane;
            const int64_t first = a - pl.pw;   // the input column of j = 0
            const int64_t j0 = first >= 0 ? 0 : (-first + pl.sw - 1) / pl.sw;
            const int64_t j1 = (pl.w - first + pl.sw - 1) / pl.sw;
            const float *sa = sr + first;
            if (pl.sw == 2) {
                for (int64_t j = j0; j < j1; ++j) pr[j] = sa[2 * j];
            } else {
                for (int64_t j = j0; j < j1; ++j) pr[j] = sa[j * pl.sw];
            }
        }
    }
}

// The phased, zero-padded copy of x[cig, h, w] into buf.
inline void fill(const Plan &pl, const float *x, float *buf, bool threaded) {
#pragma omp parallel for if (threaded)
    for (int64_t ci = 0; ci < pl.cig; ++ci)
        fill_channel(pl, x + ci * pl.h * pl.w, buf + ci * pl.chan);
    std::fill(buf + pl.cig * pl.chan, buf + buffer_size(pl), 0.0f);
}

// dst[0, n) = src (+ res, then the activation act) for the positions of a tile whose
// activation was left to here because of the residual.
inline void store_run(const float *src, const float *res, int act, float lo, float hi,
                      float *dst, int64_t n) {
    if (!res) {
        copy_run(src, dst, n);
        return;
    }
    for (int64_t i = 0; i < n; ++i) {
        const float v = src[i] + res[i];
        dst[i] = aotc_conv_act::activate(v, act, lo, hi);
    }
}

// out[o][j*L + lane] for positions q0 + j*L + lane: the sum over every input channel and
// tap in registers, plus bias[o] (OCB values), then the activation `act` (conv_activation.h).
// The accumulators never leave this function, so they stay in registers
// whether or not the compiler inlines it.
template <int OCB, int NV>
inline void tile(const Plan &pl, const float *buf, const int64_t *offset, const float *wb,
                 int64_t q0, const float *bias, int act, float lo, float hi,
                 float (&out)[OCB][L * NV]) {
    V acc[OCB][NV];
    for (int o = 0; o < OCB; ++o)
        for (int j = 0; j < NV; ++j) acc[o][j] = vzero();
    for (int64_t ci = 0; ci < pl.cig; ++ci) {
        const float *base = buf + ci * pl.chan + q0;
        const float *wc = wb + ci * pl.taps * OCB;
        for (int64_t t = 0; t < pl.taps; ++t) {
            V xv[NV];
            for (int j = 0; j < NV; ++j) xv[j] = vload(base + offset[t] + j * L);
            const float *wt = wc + t * OCB;
            for (int o = 0; o < OCB; ++o) {
                const V wv = vset(wt[o]);
                for (int j = 0; j < NV; ++j) acc[o][j] = vfma(wv, xv[j], acc[o][j]);
            }
        }
    }
    for (int o = 0; o < OCB; ++o) {
        const V b = vset(bias[o]);
        for (int j = 0; j < NV; ++j) {
            V v = vadd(acc[o][j], b);
            v = activate(v, act, vset(lo), vset(hi));
            vstore(&out[o][j * L], v);
        }
    }
}

// run with a register tile of OCB channels x NV vectors of positions.
template <int OCB, int NV>
inline void run_tiles(const Plan &pl, const float *buf, const float *w, const float *bias,
                      const float *res, int act, float lo, float hi, float *y, bool threaded) {
    constexpr int T = L * NV;
    std::vector<int64_t> offset(pl.taps);
    const int64_t plane = pl.hs * pl.ws;
    for (int64_t a = 0; a < pl.kh; ++a)
        for (int64_t b = 0; b < pl.kw; ++b) {
            const int64_t r = a * pl.dh, c = b * pl.dw;
            offset[a * pl.kw + b] =
                ((r % pl.sh) * pl.sw + c % pl.sw) * plane + (r / pl.sh) * pl.ws + c / pl.sw;
        }
    const int64_t blocks = (pl.cog + OCB - 1) / OCB;
    const int64_t tiles = (pl.q + T - 1) / T;
    const int64_t block_size = pl.cig * pl.taps * OCB;
    // wb[ob][ci][t][o] = w[ob*OCB + o][ci][t], zero for channels past cog
    std::vector<float> wb(blocks * block_size);
#pragma omp parallel for if (threaded)
    for (int64_t ob = 0; ob < blocks; ++ob) {
        const int64_t oc0 = ob * OCB, n_oc = std::min<int64_t>(OCB, pl.cog - oc0);
        for (int64_t ci = 0; ci < pl.cig; ++ci)
            for (int64_t t = 0; t < pl.taps; ++t) {
                float *dst = wb.data() + ob * block_size + (ci * pl.taps + t) * OCB;
                for (int64_t o = 0; o < OCB; ++o)
                    dst[o] = o < n_oc ? w[((oc0 + o) * pl.cig + ci) * pl.taps + t] : 0.0f;
            }
    }
    // position tiles outer, so that a tile's inputs stay in cache across the channel blocks
#pragma omp parallel for collapse(2) schedule(static) if (threaded)
    for (int64_t tq = 0; tq < tiles; ++tq)
        for (int64_t ob = 0; ob < blocks; ++ob) {
            const int64_t oc0 = ob * OCB, n_oc = std::min<int64_t>(OCB, pl.cog - oc0);
            const int64_t q0 = tq * T;
            alignas(64) float out[OCB][T];
            float bias_block[OCB];
            for (int o = 0; o < OCB; ++o) bias_block[o] = bias && o < n_oc ? bias[oc0 + o] : 0.0f;
            tile<OCB, NV>(pl, buf, offset.data(), wb.data() + ob * block_size, q0, bias_block,
                          res ? 0 : act, lo, hi, out);
            // the valid positions: row segments oh, ow in [0, wo)
            const int64_t q1 = std::min(q0 + T, pl.q);
            for (int64_t oh = q0 / pl.ws, row = oh * pl.ws; row < q1; ++oh, row += pl.ws) {
                const int64_t a = std::max(q0, row), n = std::min(q1, row + pl.wo) - a;
                for (int64_t o = 0; o < n_oc && n > 0; ++o) {
                    const int64_t at = (oc0 + o) * pl.ho * pl.wo + oh * pl.wo + (a - row);
                    store_run(&out[o][a - q0], res ? res + at : nullptr, act, lo, hi, y + at, n);
                }
            }
        }
}

// y[cog, ho, wo] (one image and group) from the phased input; w[cog, cig, kh, kw];
// bias may be null; res (y's shape) is added when not null; act: the activation after it
// (conv_activation.h; lo and hi its clamp). The register tile: 12 channels x 2 vectors on
// AVX-512 (24 accumulators), or 8 x 3 when the channels are a multiple of 8 but not of 12
// (64 channels in blocks of 12 would compute 72); 6 x 2 on AVX2; 8 x 3 on NEON (24 of the
// 32 q registers, 12 positions: MAX_T).
inline void run(const Plan &pl, const float *buf, const float *w, const float *bias,
                const float *res, int act, float lo, float hi, float *y, bool threaded) {
#if defined(__AVX512F__)
    if (pl.cog % 12 != 0 && pl.cog % 8 == 0)
        return run_tiles<8, 3>(pl, buf, w, bias, res, act, lo, hi, y, threaded);
    run_tiles<12, 2>(pl, buf, w, bias, res, act, lo, hi, y, threaded);
#elif defined(__aarch64__)
    run_tiles<8, 3>(pl, buf, w, bias, res, act, lo, hi, y, threaded);
#else
    run_tiles<6, 2>(pl, buf, w, bias, res, act, lo, hi, y, threaded);
#endif
}

}  // namespace aotc_conv_direct

#endif
#endif
