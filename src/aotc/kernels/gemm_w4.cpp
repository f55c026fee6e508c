// Weight-only linear on int4 weights stored two a byte (the layout aotc_wo_pack_int4 writes,
// contract in aotc_kernels.h): half the bytes of gemm_wo.cpp's one value a byte, and a
// decode step's linears are bound by the weight's bytes.
//
// Layout: each row of K values in runs of 32; byte j (0..15) of a run holds value j + 8 in
// its low nibble and value 16 + j + 8 in its high nibble. So 16 bytes widened to 32-bit lanes
// give, masked, the 16 values that multiply x[k .. k + 16) and, shifted, those of
// x[k + 16 .. k + 32): no shuffle across lanes, on AVX-512 (16 lanes) as on AVX2 (8).
//
// Decode (M = 1): a GEMV, the weight read once, 4 rows a block for independent accumulator
// chains; per group the products sum into a fresh vector that the group's scale multiplies
// into the row's total, and the stored offset and zero point come off once per group as
//     s * (zp + 8) * (sum of x over the group),
// a dot product over the groups after the loop. Three forms: bfloat16 dot products (below;
// AVX-512 builds on CPUs with avx512_bf16, K in whole 64s), float FMAs on the widened
// nibbles (other vector builds), and each weight dequantized and multiplied as eager does
// (the portable build, and any x with inf, NaN or values past 2^100, whose offset sums would
// not hold). A few rows (M <= 3) run the GEMV per row; more dequantize the weight by panels
// of at most 1 MB into float32 and multiply them with the float32 GEMM (gemm.cpp), as
// gemm_wo.cpp does from 16 rows. Every row of the output is one thread's, so results do not
// depend on the thread count.

#include "aotc_kernels.h"
#include "weight_only.h"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace {

using namespace aotc_wo;

constexpr int64_t RUN = 32;  // values a run of 16 bytes holds
constexpr int OFFSET = 8;  // a stored nibble is the value + 8
constexpr int64_t FEW_ROWS = 3;  // up to this many rows of x: the GEMV, once per row
constexpr int64_t PANEL_FLOATS = int64_t(1) << 18;  // a dequantized panel (1 MB), >= 16 rows

struct W4 {
    int64_t K, group, groups;
    const uint8_t *q;  // [N, K / 2]
    const float *scale;  // [N, groups]
    const int8_t *zero;  // [N, groups] or null
};

// The shift a group's sums carry: (zp + 8) for the value's zero point and the stored offset.
inline float shift_of(const W4 &p, int64_t n, int64_t g) {
    return float(OFFSET + (p.zero ? int(p.zero[n * p.groups + g]) : 0));
}

// f(k, w) for each weight of row n in order, w dequantized as eager does: (value - zp) * s
template <class F>
inline void each_weight(const W4 &p, int64_t n, F f) {
    const uint8_t *row = p.q + n * (p.K / 2);
    for (int64_t g = 0; g < p.groups; ++g) {
        const float s = p.scale[n * p.groups + g], z = shift_of(p, n, g);
        for (int64_t k = g * p.group; k < (g + 1) * p.group; k += RUN)
            for (int64_t j = 0; j < 16; ++j) {
                f(k + j, (float(row[k / 2 + j] & 15) - z) * s);
                f(k + 16 + j, (float(row[k / 2 + j] >> 4) - z) * s);
            }
    }
}

// out[0 .. N) of one row of x as eager computes it, each weight dequantized and multiplied:
// the portable build's form, and every build's for an x the sums below would not keep
// (inf, NaN, or a value so large that its products with the stored offsets could overflow).
void gemv_plain(const W4 &p, int64_t N, const float *x, const float *bias, float *out) {
#pragma omp parallel for schedule(static) if (N * p.K >= (int64_t(1) << 18))
    for (int64_t n = 0; n < N; ++n) {
        float total = 0.0f;
        each_weight(p, n, [&](int64_t k, float w) { total += x[k] * w; });
        out[n] = total + (bias ? bias[n] : 0.0f);
    }
}

// whether every |x| is at most 2^100 (so no NaN or inf either)
bool tame(const float *x, int64_t K) {
    bool ok = true;
    for (int64_t k = 0; k < K; ++k) ok &= __builtin_fabsf(x[k]) <= 0x1p100f;
    return ok;
}

#if AOTC_WO_VECTOR
// sum over groups g of scale[g] * shift[g] * xsum[g], for row n
float shift_total(const W4 &p, int64_t n, const float *xsum) {
    const float *scale = p.scale + n * p.groups;
    float total = 0.0f;
    int64_t g = 0;
    Vec shifts = vzero();
    const Vec offset = vset(float(OFFSET));
    for (; g + VL <= p.groups; g += VL) {
        const Vec shift = p.zero ? vfma(vset(1.0f), widen(p.zero + n * p.groups + g), offset)
                                 : offset;
        shifts = vfma(vmul(vload(scale + g), shift), vload(xsum + g), shifts);
    }
    total = vsum(shifts);
    for (; g < p.groups; ++g) total += scale[g] * shift_of(p, n, g) * xsum[g];
    return total;
}

#if defined(__AVX512F__)
using Ints = __m512i;
// VL bytes as unsigned 32-bit lanes
inline Ints lanes_of(const uint8_t *b) {
    return _mm512_maskz_cvtepu8_epi32(__mmask16(0xFFFF),
                                      _mm_loadu_si128(reinterpret_cast<const __m128i *>(b)));
}
inline Vec low(Ints w) {
    return _mm512_maskz_cvtepi32_ps(__mmask16(0xFFFF), _mm512_and_si512(w, _mm512_set1_epi32(15)));
}
inline Vec high(Ints w) {
    return _mm512_maskz_cvtepi32_ps(__mmask16(0xFFFF), _mm512_maskz_srli_epi32(__mmask16(0xFFFF), w, 4));
}
#else
using Ints = __m256i;
inline Ints lanes_of(const uint8_t *b) {
    return _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i *>(b)));
}
inline Vec low(Ints w) { return _mm256_cvtepi32_ps(_mm256_and_si256(w, _mm256_set1_epi32(15))); }
inline Vec high(Ints w) { return _mm256_cvtepi32_ps(_mm256_srli_epi32(w, 4)); }
#endif

// out[0 .. N) of one row of x by blocks of 4 weight rows, a block a thread: four(n0) fills
// out[n0 .. n0 + 4), one(n) a row of the last, short block; then the bias.
template <class Four, class One>
void by_blocks(int64_t N, int64_t K, const float *bias, float *out, Four four, One one) {
    const int64_t blocks = (N + 3) / 4;
#pragma omp parallel for schedule(static) if (N * K >= (int64_t(1) << 18))
    for (int64_t u = 0; u < blocks; ++u) {
        const int64_t n0 = u * 4, n1 = std::min(N, n0 + 4);
        if (n1 - n0 == 4) {
            four(n0);
        } else {
            for (int64_t n = n0; n < n1; ++n) one(n);
        }
        for (int64_t n = n0; bias != nullptr && n < n1; ++n) out[n] += bias[n];
    }
}

// Weight rows n0 .. n0 + C of a block: their bytes and scales. Rows are short: the hardware
// prefetcher never sees a stream long enough to follow, so the rows two blocks ahead (they
// lie one after another) are fetched while these are read, a part at a time from `ahead` by
// the loops, their scales and zero points here, up front.
template <int C>
struct Block {
    const uint8_t *q[C];
    const float *scale[C];
    const char *ahead;

    Block(const W4 &p, int64_t n0) {
        for (int c = 0; c < C; ++c) {
            q[c] = p.q + (n0 + c) * (p.K / 2);
            scale[c] = p.scale + (n0 + c) * p.groups;
        }
        ahead = reinterpret_cast<const char *>(q[0] + 2 * C * (p.K / 2));
        for (int64_t t = 0; t < C * p.groups * 4; t += 64)
            _mm_prefetch(reinterpret_cast<const char *>(scale[0] + 2 * C * p.groups) + t,
                         _MM_HINT_T0);
        for (int64_t t = 0; p.zero != nullptr && t < C * p.groups; t += 64)
            _mm_prefetch(reinterpret_cast<const char *>(p.zero + (n0 + 2 * C) * p.groups) + t,
                         _MM_HINT_T0);
    }
};

// One row of x: out[n0 .. n0 + C) of weight rows n0 .. n0 + C.
template <int C>
void gemv_block(const W4 &p, const float *x, const float *xsum, int64_t n0, float *out) {
    const Block<C> b(p, n0);
    const int64_t step = C * p.group / 2;
    Vec acc[C];
    for (int c = 0; c < C; ++c) acc[c] = vzero();
    for (int64_t g = 0, k0 = 0; g < p.groups; ++g, k0 += p.group) {
        for (int64_t t = 0; t < step; t += 64) _mm_prefetch(b.ahead + g * step + t, _MM_HINT_T0);
        Vec part[C];
        for (int c = 0; c < C; ++c) part[c] = vzero();
        for (int64_t k = k0; k < k0 + p.group; k += RUN) {
#pragma GCC unroll 2
            for (int64_t h = 0; h < 16; h += VL) {
                const Vec lo_x = vload(x + k + h), hi_x = vload(x + k + 16 + h);
                for (int c = 0; c < C; ++c) {
                    const Ints w = lanes_of(b.q[c] + k / 2 + h);
                    part[c] = vfma(lo_x, low(w), part[c]);
                    part[c] = vfma(hi_x, high(w), part[c]);
                }
            }
        }
        for (int c = 0; c < C; ++c) acc[c] = vfma(part[c], vset(b.scale[c][g]), acc[c]);
    }
    for (int c = 0; c < C; ++c) out[c] = vsum(acc[c]) - shift_total(p, n0 + c, xsum);
}
#endif

// AOTC_W4_NO_BF16: the float form only (the kernel test's way to reach it on bf16 CPUs)
#if defined(__AVX512F__) && !defined(AOTC_W4_NO_BF16)
#define AOTC_W4_BF16 1
#pragma GCC push_options
#pragma GCC target("avx512bf16")

// The bfloat16 form (AVX-512 builds, run where the CPU has avx512_bf16): vdpbf16ps multiplies
// pairs of bfloat16 into float32 sums, 32 products an instruction, and a nibble becomes a
// bfloat16 in one or two: bits 0x4300 | u are the bfloat16 128 + u (exact; 7 mantissa
// bits), and 0x4300 | (8 h), the high nibble shifted right by one and masked, 128 + 8 h.
// x is split into two bfloat16 parts (hi = x rounded, lo = x - hi rounded: 16 of x's 24
// bits), so the sums keep float32's accuracy to about 2^-17 of each x; the x that high
// nibbles multiply is divided by 8 (exact), so they count h, not 8 h. What the offsets
// add, 128 x (low) or 16 x (high) plus the stored + 8, comes off per group with the zero
// point's share, from the same split values.
struct SplitX {
    std::vector<uint16_t> words;  // per 64 values: hi and lo of the low nibbles' x, then the high's
    std::vector<float> shift;  // per group: the offsets' share of the group's sum
    std::vector<float> sum;  // per group: sum of x as split (hi + lo)
    std::vector<int64_t> group_of;  // per run of 32 values: its group
};

// 16 floats: their bfloat16 rounding (to nearest even) as floats, and its bits
inline __m512 rounded(__m512 v, __m256i *bits) {
    *bits = (__m256i)_mm512_cvtneps_pbh(v);
    return _mm512_castsi512_ps(_mm512_maskz_slli_epi32(
        __mmask16(0xFFFF), _mm512_maskz_cvtepu16_epi32(__mmask16(0xFFFF), *bits), 16));
}

// x split for the bfloat16 form (x tame: no product with 128 + 15 overflows)
void split_x(const W4 &p, const float *x, SplitX &s) {
    s.words.resize(size_t(2 * p.K));
    s.shift.assign(size_t(p.groups), 0.0f);
    s.sum.assign(size_t(p.groups), 0.0f);
    s.group_of.resize(size_t(p.K / RUN));
    const __m512 eighth = _mm512_set1_ps(0.125f);
    for (int64_t r = 0; r < p.K / RUN; ++r) {  // run r: words of chunk r / 2, lanes by r % 2
        const int64_t g = r * RUN / p.group;
        s.group_of[size_t(r)] = g;
        const __m512 xl = _mm512_loadu_ps(x + RUN * r), xh = _mm512_loadu_ps(x + RUN * r + 16);
        uint16_t *w = s.words.data() + 128 * (r / 2) + 16 * (r % 2);
        __m256i bits;
        __m512 seen[2];
        const __m512 halves[2] = {xl, _mm512_mul_ps(xh, eighth)};
        for (int half = 0; half < 2; ++half) {  // low nibbles' x, then the high's (over 8)
            const __m512 hi = rounded(halves[half], &bits);
            _mm256_storeu_si256(reinterpret_cast<__m256i *>(w + 64 * half), bits);
            const __m512 lo = rounded(_mm512_sub_ps(halves[half], hi), &bits);
            _mm256_storeu_si256(reinterpret_cast<__m256i *>(w + 64 * half + 32), bits);
            seen[half] = _mm512_add_ps(hi, lo);  // the value as the sums see it
        }
        // 128 x (low) + 128 x / 8 (high) for the bfloat16 offsets, + 8 x for the stored one
        const float sum = vsum(_mm512_fmadd_ps(seen[1], _mm512_set1_ps(8.0f), seen[0]));
        s.shift[size_t(g)] += 128.0f * vsum(_mm512_add_ps(seen[0], seen[1])) +
                              float(OFFSET) * sum;
        s.sum[size_t(g)] += sum;
    }
}

// scale[g] * (shift[g] + zp[g] * sum[g]) of row n, summed over groups into 16 lanes (the last
// groups under a mask: a row's groups are few, a scalar tail would cost like its products)
__m512 split_shift(const W4 &p, const SplitX &sx, int64_t n) {
    const float *scale = p.scale + n * p.groups;
    const int8_t *zp = p.zero ? p.zero + n * p.groups : nullptr;
    __m512 total = _mm512_setzero_ps();
    for (int64_t g = 0; g < p.groups; g += 16) {
        const __mmask16 m = p.groups - g >= 16 ? __mmask16(0xFFFF)
                                               : __mmask16((1u << (p.groups - g)) - 1);
        __m512 v = _mm512_maskz_loadu_ps(m, sx.shift.data() + g);
        if (zp) {
            const __m512 z = _mm512_maskz_cvtepi32_ps(
                m, _mm512_maskz_cvtepi8_epi32(m, _mm_maskz_loadu_epi8(m, zp + g)));
            v = _mm512_fmadd_ps(z, _mm512_maskz_loadu_ps(m, sx.sum.data() + g), v);
        }
        total = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, scale + g), v, total);
    }
    return total;
}

template <int C>
void gemv_bf16_block(const W4 &p, const SplitX &sx, int64_t n0, float *out) {
    const Block<C> b(p, n0);
    const __m512i low = _mm512_set1_epi16(0x000F), high = _mm512_set1_epi16(0x0078),
                  bias = _mm512_set1_epi16(0x4300);
    __m512 acc[C];
    for (int c = 0; c < C; ++c) acc[c] = _mm512_setzero_ps();
    for (int64_t u = 0; u < p.K / 64; ++u) {
        for (int64_t t = 0; t < 32 * C; t += 64) _mm_prefetch(b.ahead + u * 32 * C + t, _MM_HINT_T0);
        const uint16_t *xw = sx.words.data() + 128 * u;
        const __m512bh x_lo_hi = (__m512bh)_mm512_loadu_si512(xw),
                       x_lo_lo = (__m512bh)_mm512_loadu_si512(xw + 32),
                       x_hi_hi = (__m512bh)_mm512_loadu_si512(xw + 64),
                       x_hi_lo = (__m512bh)_mm512_loadu_si512(xw + 96);
        const int64_t g0 = sx.group_of[size_t(2 * u)], g1 = sx.group_of[size_t(2 * u + 1)];
        for (int c = 0; c < C; ++c) {
            const __m512i w = _mm512_cvtepu8_epi16(
                _mm256_loadu_si256(reinterpret_cast<const __m256i *>(b.q[c] + 32 * u)));
            const __m512bh wl = (__m512bh)_mm512_ternarylogic_epi32(w, low, bias, 0xEA),
                           wh = (__m512bh)_mm512_ternarylogic_epi32(
                               _mm512_maskz_srli_epi16(__mmask32(~0u), w, 1), high, bias, 0xEA);
            __m512 part = _mm512_dpbf16_ps(_mm512_setzero_ps(), x_lo_hi, wl);
            part = _mm512_dpbf16_ps(part, x_lo_lo, wl);
            part = _mm512_dpbf16_ps(part, x_hi_hi, wh);
            part = _mm512_dpbf16_ps(part, x_hi_lo, wh);
            const __m512 sv = _mm512_mask_broadcastss_ps(_mm512_set1_ps(b.scale[c][g0]), 0xFF00,
                                                         _mm_set_ss(b.scale[c][g1]));
            acc[c] = _mm512_fmadd_ps(part, sv, acc[c]);
        }
    }
    for (int c = 0; c < C; ++c) out[c] = vsum(_mm512_sub_ps(acc[c], split_shift(p, sx, n0 + c)));
}

void gemv_bf16(const W4 &p, int64_t N, const SplitX &sx, const float *bias, float *out) {
    by_blocks(N, p.K, bias, out, [&](int64_t n0) { gemv_bf16_block<4>(p, sx, n0, out + n0); },
              [&](int64_t n) { gemv_bf16_block<1>(p, sx, n, out + n); });
}

#pragma GCC pop_options

bool has_bf16() {
    static const bool yes = __builtin_cpu_supports("avx512bf16");
    return yes;
}
#endif

// out[0 .. N) = x w^T + bias for one row of x.
void gemv(const W4 &p, int64_t N, const float *x, const float *bias, float *out) {
    if (!AOTC_WO_VECTOR || !tame(x, p.K)) return gemv_plain(p, N, x, bias, out);
#if AOTC_W4_BF16
    if (p.K % 64 == 0 && has_bf16()) {
        SplitX sx;
        split_x(p, x, sx);
        return gemv_bf16(p, N, sx, bias, out);
    }
#endif
#if AOTC_WO_VECTOR
    std::vector<float> xsum(size_t(p.groups), 0.0f);
    for (int64_t g = 0; g < p.groups; ++g)
        for (int64_t k = g * p.group; k < (g + 1) * p.group; ++k) xsum[size_t(g)] += x[k];
    const float *sums = xsum.data();
    by_blocks(N, p.K, bias, out, [&](int64_t n0) { gemv_block<4>(p, x, sums, n0, out + n0); },
              [&](int64_t n) { gemv_block<1>(p, x, sums, n, out + n); });
#endif
}

// Weight rows [n0, n0 + rows) dequantized: dst[j * K + k] = (value - zp) * scale.
void dequantize_rows(const W4 &p, int64_t n0, int64_t rows, float *dst) {
#pragma omp parallel for schedule(static) if (rows * p.K >= (int64_t(1) << 16))
    for (int64_t j = 0; j < rows; ++j) {
        float *d = dst + j * p.K;
        each_weight(p, n0 + j, [d](int64_t k, float w) { d[k] = w; });
    }
}

}  // namespace

extern "C" {

int64_t aotc_wo_pack_int4(int64_t N, int64_t K, const int8_t *q, void *packed) {
    if (N < 0 || K < 0 || K % RUN) return -1;
    uint8_t *dst = static_cast<uint8_t *>(packed);
    int64_t outside = 0;
    for (int64_t i = 0; i < N * K; i += RUN)  // rows are whole runs: runs follow each other
        for (int64_t j = 0; j < 16; ++j) {
            const int lo = q[i + j], hi = q[i + 16 + j];
            outside += (lo < -OFFSET || lo >= OFFSET) + (hi < -OFFSET || hi >= OFFSET);
            dst[i / 2 + j] = uint8_t(((lo + OFFSET) & 15) | (((hi + OFFSET) & 15) << 4));
        }
    return outside;
}

void aotc_gemm_w4_f32(int64_t M, int64_t N, int64_t K, const float *x, int64_t ldx,
                      const void *packed, int64_t group, const float *scale, const int8_t *zero,
                      const float *bias, float *out, int64_t ldo) {
    if (M <= 0 || N <= 0) return;
    if (K == 0) {  // an empty sum: the bias alone
        for (int64_t m = 0; m < M; ++m)
            for (int64_t n = 0; n < N; ++n) out[m * ldo + n] = bias ? bias[n] : 0.0f;
        return;
    }
    if (group <= 0 || group > K) group = K;
    const W4 p{K, group, K / group, static_cast<const uint8_t *>(packed), scale, zero};
    if (M > FEW_ROWS &&
        by_panels(M, N, K, x, ldx, bias, out, ldo, PANEL_FLOATS,
                  [&](int64_t n0, int64_t rows, float *dst) { dequantize_rows(p, n0, rows, dst); }))
        return;
    for (int64_t m = 0; m < M; ++m) gemv(p, N, x + m * ldx, bias, out + m * ldo);
}

}  // extern "C"
