// Weight-only quantized linear: float32 activations times an int8 (or int4 held one per
// int8 byte) weight whose dequantization happens in registers, never in memory (the
// contract is in aotc_kernels.h):
//     out[m, n] = sum_k x[m, k] * ((q[n, k] - zp[n, k / G]) * scale[n, k / G]) + bias[n]
//
// Decode (M of 1 to 8) is a GEMV, so each weight byte is read once per block of up to MR rows
// of x and the work per weight is kept to the least: a vector of bytes of one weight row is
// widened to float (exact) and multiplied into every row of the block with an FMA. The
// scale and zero point of a group (per channel: the whole row) are applied once per group,
// not per weight:
//     sum over the group of x * (q - zp) * s  =  s * (sum x * q  -  zp * sum x)
// the sums of x over each group taken once per call (only where there are zero points), the
// zero points' share subtracted in scalar form. On this AVX2 CPU that beat dequantizing each
// vector with an FMA (q * s - zp * s) at M = 1 even for int4's groups of 32 (4 vectors).
// Accumulators run along K over all groups and are summed across lanes once per output.
// Paths: AVX-512 (16 lanes), AVX2 + FMA (8 lanes), and a portable loop; the K left over in a
// group past the last whole vector takes the scalar form. OpenMP splits N.
//
// Prefill (M of PANEL_M or more rows) is a GEMM, bound by arithmetic, not by the weight's
// bytes: a panel of weight rows at a time (never the whole weight) is dequantized into
// float32 scratch, as eager dequantizes, and multiplied by the float32 GEMM (gemm.cpp).

#include "aotc_kernels.h"
#include "weight_only.h"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace {

using namespace aotc_wo;

constexpr int64_t MR = 4;  // rows of x per block
constexpr int64_t NR = 2;  // weight rows per block (4 when the block has one row of x)
constexpr int64_t PANEL_M = 16;  // rows of x from which the weight is dequantized by panels
constexpr int64_t PANEL_FLOATS = int64_t(1) << 18;  // a panel's size (1 MB), at least 16 rows

struct Problem {
    int64_t K, group, groups;
    const float *x;
    int64_t ldx;
    const int8_t *q;
    const float *scale;
    const int8_t *zero;
    const float *xsum;  // with zero points: [M, groups], the sums of x over each group
};

// out rows [m0, m0 + R) x columns [n0, n0 + C) with R <= MR, C <= NR (fixed at compile
// time, so the accumulators stay in registers); `sums[r][c]` gets the products. With
// `Zero`, the group's zero points are taken off through the sums of x (p.xsum).
template <int R, int C, bool Zero>
void block(const Problem &p, int64_t m0, int64_t n0, float sums[MR][4]) {
    float tail[R][C] = {};
#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))
    Vec acc[R][C];
    for (int r = 0; r < R; ++r)
        for (int c = 0; c < C; ++c) acc[r][c] = vzero();
#endif
    for (int64_t g = 0; g < p.groups; ++g) {
        const int64_t k0 = g * p.group, k1 = std::min(k0 + p.group, p.K);
        float s[C];
        for (int c = 0; c < C; ++c) s[c] = p.scale[(n0 + c) * p.groups + g];
        if (Zero)  // the zero point's share of the whole group: s * zp * (sum of x)
            for (int r = 0; r < R; ++r)
                for (int c = 0; c < C; ++c)
                    tail[r][c] -= s[c] * float(p.zero[(n0 + c) * p.groups + g]) *
                                  p.xsum[(m0 + r) * p.groups + g];
        int64_t k = k0;
#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))
        if (k + VL <= k1) {
            Vec part[R][C];
            for (int r = 0; r < R; ++r)
                for (int c = 0; c < C; ++c) part[r][c] = vzero();
            for (; k + VL <= k1; k += VL) {
                Vec w[C];
                for (int c = 0; c < C; ++c) w[c] = widen(p.q + (n0 + c) * p.K + k);
                for (int r = 0; r < R; ++r) {
                    const Vec xv = vload(p.x + (m0 + r) * p.ldx + k);
                    for (int c = 0; c < C; ++c) part[r][c] = vfma(xv, w[c], part[r][c]);
                }
            }
            for (int c = 0; c < C; ++c) {
                const Vec sv = vset(s[c]);
                for (int r = 0; r < R; ++r) acc[r][c] = vfma(part[r][c], sv, acc[r][c]);
            }
        }
#endif
        if (k < k1) {
            float part[R][C] = {};
            for (; k < k1; ++k)
                for (int r = 0; r < R; ++r) {
                    const float xv = p.x[(m0 + r) * p.ldx + k];
                    for (int c = 0; c < C; ++c) part[r][c] += xv * float(p.q[(n0 + c) * p.K + k]);
                }
            for (int r = 0; r < R; ++r)
                for (int c = 0; c < C; ++c) tail[r][c] += s[c] * part[r][c];
        }
    }
    for (int r = 0; r < R; ++r)
        for (int c = 0; c < C; ++c) {
#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))
            sums[r][c] = vsum(acc[r][c]) + tail[r][c];
#else
            sums[r][c] = tail[r][c];
#endif
        }
}

template <int C, bool Zero>
void rows_block(const Problem &p, int64_t m0, int64_t rows, int64_t n0, float sums[MR][4]) {
    switch (rows) {
        case 1: return block<1, C, Zero>(p, m0, n0, sums);
        case 2: return block<2, C, Zero>(p, m0, n0, sums);
        case 3: return block<3, C, Zero>(p, m0, n0, sums);
        default: return block<4, C, Zero>(p, m0, n0, sums);
    }
}

// with zero points or without (then no sums of x are kept)
template <int C>
void rows_block(const Problem &p, int64_t m0, int64_t rows, int64_t n0, float sums[MR][4]) {
    if (p.zero != nullptr) return rows_block<C, true>(p, m0, rows, n0, sums);
    return rows_block<C, false>(p, m0, rows, n0, sums);
}

#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))
// One row of x (decode) and groups of whole vectors: out[n0 .. n0 + C) in vector form only.
// Each group's products go to a fresh sum that its scale multiplies into the row's total;
// the zero points' share, s * zp * (sum of x over the group), is one dot product over the
// groups per row, after the loop, so that nothing scalar runs per group.
template <int C, int64_t Vectors = 0>  // Vectors: the group's length in vectors, 0 if any
void gemv_block(const Problem &p, int64_t n0, float *out) {
    Vec acc[C];
    for (int c = 0; c < C; ++c) acc[c] = vzero();
    const int8_t *q[C];
    const float *scale[C];
    for (int c = 0; c < C; ++c) {
        q[c] = p.q + (n0 + c) * p.K;
        scale[c] = p.scale + (n0 + c) * p.groups;
    }
    // Rows are short (K of a few hundred bytes): the hardware prefetcher never sees a stream
    // long enough to follow, so the rows two blocks ahead are fetched while these are read,
    // as many bytes per group as a group reads (the block's rows lie one after another).
    const char *ahead = reinterpret_cast<const char *>(q[0] + 2 * C * p.K);
    const int64_t step = C * p.group;
    for (int64_t t = 0; t < C * p.groups * 4; t += 64)  // their scales and zero points
        _mm_prefetch(reinterpret_cast<const char *>(scale[0] + 2 * C * p.groups) + t,
                     _MM_HINT_T0);
    for (int64_t t = 0; p.zero != nullptr && t < C * p.groups; t += 64)
        _mm_prefetch(reinterpret_cast<const char *>(p.zero + (n0 + 2 * C) * p.groups) + t,
                     _MM_HINT_T0);
    for (int64_t g = 0, k0 = 0; g < p.groups; ++g, k0 += p.group) {
        for (int64_t t = 0; t < step; t += 64) _mm_prefetch(ahead + g * step + t, _MM_HINT_T0);
        Vec part[C];
        const Vec x0 = vload(p.x + k0);
        for (int c = 0; c < C; ++c) part[c] = vmul(x0, widen(q[c] + k0));
        const int64_t end = Vectors ? k0 + Vectors * VL : k0 + p.group;
#pragma GCC unroll 8
        for (int64_t k = k0 + VL; k < end; k += VL) {
            const Vec xv = vload(p.x + k);
            for (int c = 0; c < C; ++c) part[c] = vfma(xv, widen(q[c] + k), part[c]);
        }
        for (int c = 0; c < C; ++c) acc[c] = vfma(part[c], vset(scale[c][g]), acc[c]);
    }
    for (int c = 0; c < C; ++c) {
        float total = vsum(acc[c]);
        if (p.zero != nullptr) {
            const int8_t *zp = p.zero + (n0 + c) * p.groups;
            Vec shifts = vzero();
            int64_t g = 0;
            for (; g + VL <= p.groups; g += VL)
                shifts = vfma(vmul(vload(scale[c] + g), widen(zp + g)), vload(p.xsum + g), shifts);
            float shift = vsum(shifts);
            for (; g < p.groups; ++g) shift += scale[c][g] * float(zp[g]) * p.xsum[g];
            total -= shift;
        }
        out[c] = total;
    }
}
#endif

// Weight rows [n0, n0 + rows) dequantized: dst[j * K + k] = (q - zp) * scale of row n0 + j.
void dequantize_rows(const Problem &p, int64_t n0, int64_t rows, float *dst) {
#pragma omp parallel for schedule(static) if (rows * p.K >= (int64_t(1) << 16))
    for (int64_t j = 0; j < rows; ++j) {
        const int8_t *q = p.q + (n0 + j) * p.K;
        const float *scale = p.scale + (n0 + j) * p.groups;
        const int8_t *zero = p.zero ? p.zero + (n0 + j) * p.groups : nullptr;
        float *d = dst + j * p.K;
        for (int64_t g = 0; g < p.groups; ++g) {
            const float s = scale[g], z = zero ? float(zero[g]) : 0.0f;
            for (int64_t k = g * p.group; k < std::min(p.K, (g + 1) * p.group); ++k)
                d[k] = (float(q[k]) - z) * s;
        }
    }
}

}  // namespace

extern "C" {

void aotc_gemm_wo_f32(int64_t M, int64_t N, int64_t K, const float *x, int64_t ldx,
                      const int8_t *q, int64_t group, const float *scale, const int8_t *zero,
                      const float *bias, float *out, int64_t ldo) {
    if (M <= 0 || N <= 0) return;
    if (group <= 0 || group > K) group = K;
    const int64_t groups = K > 0 ? (K + group - 1) / group : 0;
    if (M >= PANEL_M && K > 0) {
        const Problem panels{K, group, groups, x, ldx, q, scale, zero, nullptr};
        if (by_panels(M, N, K, x, ldx, bias, out, ldo, PANEL_FLOATS,
                      [&](int64_t n0, int64_t rows, float *dst) {
                          dequantize_rows(panels, n0, rows, dst);
                      }))
            return;
    }
    std::vector<float> xsum(zero != nullptr ? size_t(M * groups) : 0);
    for (int64_t m = 0; zero != nullptr && m < M; ++m)
        for (int64_t g = 0; g < groups; ++g) {
            float sum = 0.0f;
            for (int64_t k = g * group; k < std::min(K, (g + 1) * group); ++k) sum += x[m * ldx + k];
            xsum[size_t(m * groups + g)] = sum;
        }
    const Problem p{K, group, groups, x, ldx, q, scale, zero, xsum.data()};
#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))
    if (M == 1 && groups > 0 && group % VL == 0 && K % group == 0) {
        const int64_t blocks = (N + 3) / 4;
#pragma omp parallel for schedule(static) if (N * K >= (int64_t(1) << 18))
        for (int64_t u = 0; u < blocks; ++u) {
            const int64_t n0 = u * 4;
            float sums[4];
            if (n0 + 4 <= N && group == 2 * VL) {
                gemv_block<4, 2>(p, n0, sums);  // int4's groups of 32 on AVX-512
            } else if (n0 + 4 <= N) {
                gemv_block<4>(p, n0, sums);
            } else {
                for (int64_t c = 0; c < N - n0; ++c) gemv_block<1>(p, n0 + c, sums + c);
            }
            for (int64_t c = 0; c < std::min<int64_t>(4, N - n0); ++c)
                out[n0 + c] = sums[c] + (bias ? bias[n0 + c] : 0.0f);
        }
        return;
    }
#endif
    // one row of x: four weight rows per block, for four independent accumulator chains
    const int64_t nr = M == 1 ? 4 : NR;
    const int64_t units = (N + nr - 1) / nr;
#pragma omp parallel for schedule(static) if (M * N * std::max<int64_t>(K, 1) >= (int64_t(1) << 18))
    for (int64_t u = 0; u < units; ++u) {
        const int64_t n0 = u * nr, cols = std::min(nr, N - n0);
        for (int64_t m0 = 0; m0 < M; m0 += MR) {
            const int64_t rows = std::min(MR, M - m0);
            float sums[MR][4];
            if (cols == 4)
                rows_block<4>(p, m0, rows, n0, sums);
            else if (cols >= 2)
                rows_block<2>(p, m0, rows, n0, sums);
            for (int64_t c = cols >= 2 ? (cols == 4 ? 4 : 2) : 0; c < cols; ++c) {
                float one[MR][4];
                rows_block<1>(p, m0, rows, n0 + c, one);
                for (int64_t r = 0; r < rows; ++r) sums[r][c] = one[r][0];
            }
            for (int64_t r = 0; r < rows; ++r)
                for (int64_t c = 0; c < cols; ++c)
                    out[(m0 + r) * ldo + n0 + c] = sums[r][c] + (bias ? bias[n0 + c] : 0.0f);
        }
    }
}

}  // extern "C"
