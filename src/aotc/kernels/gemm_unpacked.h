// The GEMM paths that skip packing for gemm.cpp: few rows of C on AVX-512, row tiles over a
// prepacked B on AVX-512, a narrow C on AVX2 and AVX-512 (B read in place, or one panel of
// it). Included by gemm.cpp after its Problem, finish and scratch, in the same unnamed
// namespace.
#ifndef AOTC_GEMM_UNPACKED_H
#define AOTC_GEMM_UNPACKED_H

#include <cstdint>
#include <type_traits>

namespace {

// Rows [m0, m1) in groups for fn(std::integral_constant<int, R>, m): RMAX rows at a time,
// then one group each of 8, 4, 2 and 1 rows (those below RMAX) for the rest.
template <int RMAX, typename F>
__attribute__((always_inline)) inline void row_groups(int64_t m0, int64_t m1, F &&fn) {
    int64_t m = m0;
    for (; m + RMAX <= m1; m += RMAX) fn(std::integral_constant<int, RMAX>{}, m);
    if constexpr (RMAX > 8)
        if (m + 8 <= m1) fn(std::integral_constant<int, 8>{}, m), m += 8;
    if constexpr (RMAX > 4)
        if (m + 4 <= m1) fn(std::integral_constant<int, 4>{}, m), m += 4;
    if constexpr (RMAX > 2)
        if (m + 2 <= m1) fn(std::integral_constant<int, 2>{}, m), m += 2;
    if constexpr (RMAX > 1)
        if (m < m1) fn(std::integral_constant<int, 1>{}, m);
}

#if AOTC_GEMM_AVX512
// With few rows (up to FEW_ROWS per thread), each element of B is used only
// that many times, and packing B can cost more than the products: 1x1024x1024
// ran 2.5x (row-major B) to 5x (transposed) slower packed, 16x3072x768 2x.
// Two paths read B in place instead:
// - a transposed weight (A and B unit stride along k): dot products along k,
//   which win once K amortises the horizontal sums of each 4x4 block of C
//   (measured from about K = 24 per row);
// - a row-major B (unit stride along n): rows of C accumulated in registers
//   over strips of B, whatever the strides of A.
// Near 32 rows the packed path catches up.
constexpr int64_t FEW_ROWS = 32;
constexpr int64_t DOT_MIN_K_PER_ROW = 24;
// Each group of 4 rows sweeps at most this many floats of B (512 KiB), so that
// the next group finds them in L2.
constexpr int64_t DOT_B_CHUNK = 128 * 1024;

// Rows [m0, m0 + R) of C_b[:, n0:n1] by dot_rows4; needs sa_k == sb_k == 1.
template <int R>
void dot_range(const Problem &p, int64_t b, int64_t m0, int64_t n0, int64_t n1) {
    const float *A = p.A + b * p.sa_batch + m0 * p.sa_m, *B = p.B + b * p.sb_batch;
    const float *bias = p.bias ? p.bias + b * p.sbias_batch + m0 * p.sbias_m : nullptr;
    float *C = p.C + b * p.sc_batch + m0 * p.ldc;
    for (int64_t n = n0; n < n1; n += 4) {
        const float *cols[4];  // past the edge, repeat the last column
        for (int j = 0; j < 4; ++j) cols[j] = B + std::min(n + j, n1 - 1) * p.sb_n;
        float out[R][4];
        dot_rows4<R>(p.K, A, p.sa_m, cols, out);
        for (int r = 0; r < R; ++r)
            for (int64_t j = 0; j < std::min<int64_t>(4, n1 - n); ++j) {
                float v = p.alpha * out[r][j];
                if (bias) v += p.beta * bias[r * p.sbias_m + (n + j) * p.sbias_n];
                C[r * p.ldc + n + j] = v;
            }
    }
}

// C_b[m0:m1, n0:n1] in groups of 4 rows, walking N in chunks of DOT_B_CHUNK.
void dot_rows_range(const Problem &p, int64_t b, int64_t m0, int64_t m1, int64_t n0, int64_t n1) {
    const int64_t ncb = std::max<int64_t>(4, DOT_B_CHUNK / p.K / 4 * 4);
    for (int64_t nc = n0; nc < n1; nc += ncb) {
        const int64_t nc1 = std::min(n1, nc + ncb);
        for (int64_t m = m0; m < m1; m += 4) {
            switch (std::min<int64_t>(4, m1 - m)) {
                case 1: dot_range<1>(p, b, m, nc, nc1); break;
                case 2: dot_range<2>(p, b, m, nc, nc1); break;
                case 3: dot_range<3>(p, b, m, nc, nc1); break;
                default: dot_range<4>(p, b, m, nc, nc1); break;
            }
        }
    }
}

// Rows [m, m + R) of C_b[:, n0:n1] against a row-major B read in place, 16*W
// columns at a time (bias strides as for kernel_tile).
template <int R, int W>
void axpy_cols(const Problem &p, int64_t b, int64_t m, int64_t n0, int64_t n1) {
    const float *a = p.A + b * p.sa_batch + m * p.sa_m;
    for (int64_t n = n0; n < n1; n += 16 * W) {
        Epilogue e{p.alpha, p.beta, false, nullptr, p.sbias_m, p.sbias_n};
        if (p.bias) e.bias = p.bias + b * p.sbias_batch + m * p.sbias_m + n * p.sbias_n;
        axpy_rows<R, W>(p.K, a, p.sa_m, p.sa_k, p.B + b * p.sb_batch + n, p.sb_k,
                        p.C + b * p.sc_batch + m * p.ldc + n, p.ldc, std::min<int64_t>(16 * W, n1 - n), e);
    }
}

// C_b[m0:m1, n0:n1] against a row-major B read in place. Up to 3 rows of a
// wide C take strips of B as wide as 16 accumulators allow (1x1024x1024: 35%
// faster than 64 columns); otherwise rows go 4 at a time over 64-column
// strips, which stay in L2 from one group of rows to the next.
void axpy_range(const Problem &p, int64_t b, int64_t m0, int64_t m1, int64_t n0, int64_t n1) {
    if (n1 - n0 > 128) {
        switch (m1 - m0) {
            case 1: return axpy_cols<1, 16>(p, b, m0, n0, n1);
            case 2: return axpy_cols<2, 8>(p, b, m0, n0, n1);
            case 3: return axpy_cols<3, 5>(p, b, m0, n0, n1);
        }
    }
    for (int64_t n = n0; n < n1; n += 64) {
        const int64_t n_end = std::min(n1, n + 64);
        for (int64_t m = m0; m < m1; m += 4) {
            switch (std::min<int64_t>(4, m1 - m)) {
                case 1: axpy_cols<1, 4>(p, b, m, n, n_end); break;
                case 2: axpy_cols<2, 4>(p, b, m, n, n_end); break;
                case 3: axpy_cols<3, 4>(p, b, m, n, n_end); break;
                default: axpy_cols<4, 4>(p, b, m, n, n_end); break;
            }
        }
    }
}
#endif

#if AOTC_GEMM_AVX512
// Row tiles for a prepacked B: R rows of C by W vectors of columns at a time, A read in place
// (each row's values broadcast from where they lie), B's vectors read from its packed panels,
// and a block of ROWT_BLOCK rows finished across all of this thread's columns before the next.
// The packed tiles (12x32 over packed A) pay for packing A and for their epilogue once per 32
// columns; with few columns (a 1x1 convolution's projection) or a short K (an expansion from
// 16 channels) those dominate, and C is written in short strided pieces. Here C is written a
// whole row block at a time. One thread, float32 on Zen 4, a C++ loop of a first version
// (sums started from the bias), caches emptied between calls: 112x112 16 -> 96 560 -> 376
// us, 14x14 384 -> 64 132 -> 99, 7x7 960 -> 160 169 -> 141, 56x56 64 -> 64 345 -> 294; this
// code in the models (the fastest tenth of 200 calls, four rounds): MobileNetV2's 16 -> 96
// at 112x112 554 -> 497 us, the whole call of MobileNetV3
// -3.5%, MobileNetV2 -2.5%, EfficientNet-B0 -2.2%; with the transposing store of a
// channels-first convolution, DenseNet-121's 1x1 convolutions on 14x14 planes (K 256 to
// 1024, 128 columns) 6-7% each, the whole call -1.9%. With 24 columns or fewer the strips
// (16 and 8 lanes) stay faster: 96 -> 24 at 56x56 138 us against 174.
constexpr int64_t ROWT_BLOCK = 24;

// R x W vectors of C from rows of A (sa_m apart, from this K slice's first column) and the
// slice's kc rows of B's packed panels, finished by store_zmm as the packed tiles are: the
// same sums in the same order, so a product gives the same bits on either path.
template <int R, int W>
__attribute__((always_inline)) inline void
row_tile(const Problem &p, const float *a, const float *const (&b)[W], int64_t kc,
         int64_t cols, const Epilogue &e, float *c) {
    __m512 acc[R][W];
#pragma GCC unroll 12
    for (int i = 0; i < R; ++i)
#pragma GCC unroll 8
        for (int v = 0; v < W; ++v) acc[i][v] = _mm512_setzero_ps();
    for (int64_t k = 0; k < kc; ++k, a += p.sa_k) {
        __m512 bv[W];
#pragma GCC unroll 8
        for (int v = 0; v < W; ++v) bv[v] = _mm512_load_ps(b[v] + k * NR);
#pragma GCC unroll 12
        for (int i = 0; i < R; ++i) {
            const __m512 ai = _mm512_set1_ps(a[i * p.sa_m]);
#pragma GCC unroll 8
            for (int v = 0; v < W; ++v) acc[i][v] = _mm512_fmadd_ps(ai, bv[v], acc[i][v]);
        }
    }
    const bool column_bias = !e.bias || (e.sbm == 0 && e.sbn == 1);
    if (e.accumulate || e.alpha != 1.0f || e.beta != 1.0f || !column_bias)
        return store_zmm<R, W>(acc, c, p.ldc, R, cols, e);
    // alpha and beta 1, a bias per column (or none): store_zmm's values (1 * sum is the sum,
    // fma(1, bias, sum) the sum plus the bias) with the bias read once for all R rows
    __mmask16 mask[W];
    __m512 bias[W];
#pragma GCC unroll 8
    for (int v = 0; v < W; ++v) {
        mask[v] = lane_mask(cols, v);
        bias[v] = e.bias ? _mm512_maskz_loadu_ps(mask[v], e.bias + 16 * v) : _mm512_setzero_ps();
    }
    const __m512 vlo = _mm512_set1_ps(e.lo), vhi = _mm512_set1_ps(e.hi);
#pragma GCC unroll 12
    for (int i = 0; i < R; ++i)
#pragma GCC unroll 8
        for (int v = 0; v < W; ++v) {
            __m512 r = e.bias ? _mm512_add_ps(acc[i][v], bias[v]) : acc[i][v];
            if (e.res)
                r = _mm512_add_ps(r, _mm512_maskz_loadu_ps(mask[v], e.res + i * p.ldc + 16 * v));
            if (e.act) r = activate_zmm(r, e.act, vlo, vhi);
            _mm512_mask_storeu_ps(c + i * p.ldc + 16 * v, mask[v], r);
        }
}

// Rows [m0, m1) of C_b for columns [n, n + cols) (cols <= 16 W) over the K slice
// [pc, pc + kc): R rows a tile, the rest in tiles of 8, 4, 2 and 1 rows. As in gemm_range,
// the first slice stores alpha*sum + beta*bias, the next ones add to C, and the last adds the
// residual and applies the activation.
template <int R, int W>
void row_tiles(const Problem &p, int64_t b, int64_t m0, int64_t m1, int64_t n, int64_t cols,
               int64_t pc, int64_t kc) {
    const float *A = p.A + b * p.sa_batch + pc * p.sa_k;
    float *C = p.C + b * p.sc_batch + n;
    const float *panel[W];
#pragma GCC unroll 8
    for (int v = 0; v < W; ++v) {
        const int64_t col = n + 16 * v;
        panel[v] = packed_panels(p.packed_b, p.K, p.N, pc, col / NR * NR) + col % NR;
    }
    Epilogue e{p.alpha, p.beta, pc > 0, nullptr, p.sbias_m, p.sbias_n};
    const float *bias = pc == 0 && p.bias ? p.bias + b * p.sbias_batch + n * p.sbias_n : nullptr;
    const bool last = pc + kc >= p.K;
    if (last) e.act = p.act, e.lo = p.lo, e.hi = p.hi;
    const float *res = last && p.residual ? p.residual + b * p.sc_batch + n : nullptr;
    const auto one = [&](auto rows_tag, int64_t m) __attribute__((always_inline)) {
        constexpr int RR = decltype(rows_tag)::value;
        e.bias = bias ? bias + m * p.sbias_m : nullptr;
        e.res = res ? res + m * p.ldc : nullptr;
        row_tile<RR, W>(p, A + m * p.sa_m, panel, kc, cols, e, C + m * p.ldc);
    };
    row_groups<R>(m0, m1, one);
}

// Whether the row tiles take this product (AVX-512, a prepacked B).
inline bool use_row_tiles(const Problem &p) {
    if (!p.packed_b || (p.bias && p.sbias_n != 0 && p.sbias_n != 1)) return false;
    return p.N > 24 && (p.K <= 16 || p.N <= 160);
}

// C_b[m0:m1, n0:n1] by row tiles: blocks of ROWT_BLOCK rows, each across every column chunk
// (6 vectors, R = 4; the last chunk 1-5 vectors with as many rows as 24 accumulators allow),
// then handed to the epilogue callback while in L1 (a channels-first convolution's
// transposing store).
void row_tiles_range(const Problem &p, int64_t b, int64_t m0, int64_t m1, int64_t n0, int64_t n1) {
    const int64_t kcb = k_slice(p.K);
    for (int64_t mb = m0; mb < m1; mb += ROWT_BLOCK) {
        const int64_t me = std::min(m1, mb + ROWT_BLOCK);
        for (int64_t pc = 0; pc < p.K; pc += kcb) {
            const int64_t kc = std::min(kcb, p.K - pc);
            int64_t n = n0;
            for (; n1 - n > 80; n += 96)
                row_tiles<4, 6>(p, b, mb, me, n, std::min<int64_t>(96, n1 - n), pc, kc);
            const int64_t rest = n1 - n;
            switch (ceil_div(rest, 16)) {
                case 5: row_tiles<4, 5>(p, b, mb, me, n, rest, pc, kc); break;
                case 4: row_tiles<6, 4>(p, b, mb, me, n, rest, pc, kc); break;
                case 3: row_tiles<8, 3>(p, b, mb, me, n, rest, pc, kc); break;
                case 2: row_tiles<12, 2>(p, b, mb, me, n, rest, pc, kc); break;
                case 1: row_tiles<12, 1>(p, b, mb, me, n, rest, pc, kc); break;
                default: break;
            }
        }
        if (p.post)
            p.post->fn(p.post->ctx, p.C + b * p.sc_batch + mb * p.ldc + n0, p.ldc,
                       p.row_base + b * p.M + mb, n0, me - mb, n1 - n0);
    }
}
#endif

#if AOTC_GEMM_AVX2
// Narrow C: padding a few columns to a whole NR-wide panel (and packing A for it) costs
// more than the products (256x1x16 ran 5x slower than the multiply-adds it needs).
// - 1 or 2 columns, or up to 4 with K from DOT_NARROW_MIN_K, with A unit stride along k:
//   dot products, R rows by NC columns of them summed together in one vector
//   (dot_narrow). B is read in place when it is a transposed weight, else its few columns
//   are first copied out along k. 256 rows x 1 column x K = 16 ran 4.3x (AVX-512) and 3.5x
//   (AVX2) faster than packed tiles; with 3 or 4 columns the sums of each group of rows
//   cost more than the strips below until K reaches about 64.
// - Up to one panel of columns (STRIP_COLS) otherwise: register strips of rows of A
//   against a row-major view of B (axpy_rows): a prepacked B's panel is a row-major
//   [kc x NR] block, a row-major B is read in place, any other B is packed into one panel
//   per K slice; A is read in place, whatever its strides. The work is that of the
//   micro-kernel's tiles without packing A: 256x16x10 prepacked ran 2x faster, and with
//   17-32 columns on AVX-512 (two vectors a row) 256x32x10 1.6x, 1024x32x1024 and
//   4096x32x512 1.2x.
constexpr int64_t DOT_NARROW_MIN_K = 64;
constexpr int64_t STRIP_COLS = NR;

inline bool use_dot_narrow(const Problem &p, int64_t cols) {
    return p.sa_k == 1 && (cols <= 2 || (cols <= 4 && p.K >= DOT_NARROW_MIN_K));
}

// R rows from row m of C_b[:, n0:n0 + cols] (cols <= NC): column j of B is Bt + j*ldbt.
template <int R, int NC>
void dot_group(const Problem &p, int64_t b, int64_t m, int64_t n0, int64_t cols,
               const float *Bt, int64_t ldbt) {
    const float *A = p.A + b * p.sa_batch + m * p.sa_m;
    const float *bc[NC];
    for (int j = 0; j < NC; ++j) bc[j] = Bt + std::min<int64_t>(j, cols - 1) * ldbt;  // repeat the last
    alignas(64) float out[DOT_LANES];
    dot_narrow<R, NC>(p.K, A, p.sa_m, bc, out);
    float *C = p.C + b * p.sc_batch + m * p.ldc + n0;
    const float *bias = p.bias ? p.bias + b * p.sbias_batch + m * p.sbias_m + n0 * p.sbias_n : nullptr;
    if (cols == NC && p.ldc == NC && (!bias || p.sbias_m == 0)) {  // the R rows are contiguous
        float add[NC];  // beta * bias of each column, the same for every row
        for (int j = 0; j < NC; ++j) add[j] = bias ? p.beta * bias[j * p.sbias_n] : 0.0f;
#pragma GCC unroll 16
        for (int t = 0; t < R * NC; ++t) C[t] = p.alpha * out[t] + add[t % NC];
    } else {
        for (int r = 0; r < R; ++r)
            for (int64_t j = 0; j < cols; ++j) {
                float v = p.alpha * out[r * NC + j];
                if (bias) v += p.beta * bias[r * p.sbias_m + j * p.sbias_n];
                C[r * p.ldc + j] = v;
            }
    }
    finish(p, b, m, n0, R, cols);
}

// Rows [m0, m1) of C_b[:, n0:n0 + cols]: groups of DOT_LANES / NC rows, then the last rows
// in groups of 8, 4, 2, 1.
template <int NC>
void dot_rows_narrow(const Problem &p, int64_t b, int64_t m0, int64_t m1, int64_t n0, int64_t cols,
                     const float *Bt, int64_t ldbt) {
    row_groups<DOT_LANES / NC>(m0, m1, [&](auto rows_tag, int64_t m) __attribute__((always_inline)) {
        dot_group<decltype(rows_tag)::value, NC>(p, b, m, n0, cols, Bt, ldbt);
    });
}

// C_b[m0:m1, n0:n1] for n1 - n0 <= 4 and sa_k == 1.
void narrow_dot_range(const Problem &p, int64_t b, int64_t m0, int64_t m1, int64_t n0, int64_t n1) {
    const int64_t cols = n1 - n0;
    const float *Bt = p.B + b * p.sb_batch + n0 * p.sb_n;
    int64_t ldbt = p.sb_n;
    if (p.packed_b || p.sb_k != 1) {  // copy the columns out, each contiguous along k
        float *buf = tls_scratch.get(static_cast<size_t>(cols * p.K));
        if (!buf) return naive_range(p, b, m0, m1, n0, n1);
        if (p.packed_b) {
            const int64_t kcb = k_slice(p.K);
            for (int64_t pc = 0; pc < p.K; pc += kcb) {
                const float *panel = packed_panels(p.packed_b, p.K, p.N, pc, n0 / NR * NR) + n0 % NR;
                for (int64_t k = pc; k < std::min(p.K, pc + kcb); ++k, panel += NR)
                    for (int64_t j = 0; j < cols; ++j) buf[j * p.K + k] = panel[j];
            }
        } else {
            for (int64_t k = 0; k < p.K; ++k)
                for (int64_t j = 0; j < cols; ++j) buf[j * p.K + k] = Bt[k * p.sb_k + j * p.sb_n];
        }
        Bt = buf;
        ldbt = p.K;
    }
    switch (cols) {
        case 1: return dot_rows_narrow<1>(p, b, m0, m1, n0, cols, Bt, ldbt);
        case 2: return dot_rows_narrow<2>(p, b, m0, m1, n0, cols, Bt, ldbt);
        default: return dot_rows_narrow<4>(p, b, m0, m1, n0, cols, Bt, ldbt);
    }
}

// Rows [m0, m1) of C_b[:, n0:n0 + cols] over the K slice [pc, pc + kc) (B's rows of it:
// panel, ldb apart), in groups of RMAX rows, then 8, 4, 2, 1; the first slice stores
// alpha*sum + beta*bias, the next ones add to C, the last one finishes each group.
// W = 0: the 8-lane strips of AVX-512 (axpy_rows8), for up to 8 columns; W = 3: 16 lanes
// and 8 (axpy_rows24), for 17 to 24.
template <int RMAX, int W>
void strip_rows(const Problem &p, int64_t b, int64_t m0, int64_t m1, int64_t n0, int64_t cols,
                int64_t pc, int64_t kc, const float *panel, int64_t ldb) {
    const float *A = p.A + b * p.sa_batch + pc * p.sa_k;
    float *C = p.C + b * p.sc_batch + n0;
    const float *bias = pc == 0 && p.bias ? p.bias + b * p.sbias_batch + n0 * p.sbias_n : nullptr;
    const bool last = pc + kc >= p.K;
    Epilogue e{p.alpha, p.beta, pc > 0, nullptr, p.sbias_m, p.sbias_n};
    const auto group = [&](auto rows_tag, int64_t m) __attribute__((always_inline)) {
        constexpr int R = decltype(rows_tag)::value;
        if (bias) e.bias = bias + m * p.sbias_m;
#if AOTC_GEMM_AVX512
        if constexpr (W == 0)
            axpy_rows8<R>(kc, A + m * p.sa_m, p.sa_m, p.sa_k, panel, ldb, C + m * p.ldc, p.ldc, cols, e);
        else if constexpr (W == 3)
            axpy_rows24<R>(kc, A + m * p.sa_m, p.sa_m, p.sa_k, panel, ldb, C + m * p.ldc, p.ldc, cols, e);
        else
#endif
            axpy_rows<R, W>(kc, A + m * p.sa_m, p.sa_m, p.sa_k, panel, ldb, C + m * p.ldc, p.ldc, cols, e);
        if (last) finish(p, b, m, n0, R, cols);
    };
    row_groups<RMAX>(m0, m1, group);
}

// C_b[m0:m1, n0:n1] for n1 - n0 <= STRIP_COLS (n0 on a panel edge), bias sbn 0 or 1.
void strip_range(const Problem &p, int64_t b, int64_t m0, int64_t m1, int64_t n0, int64_t n1) {
    const int64_t cols = n1 - n0, kcb = k_slice(p.K);
    const float *B = p.B + b * p.sb_batch;
    float *buf = nullptr;
    if (!p.packed_b && p.sb_n != 1) {
        buf = tls_scratch.get(static_cast<size_t>(kcb * NR));
        if (!buf) return naive_range(p, b, m0, m1, n0, n1);
    }
    for (int64_t pc = 0; pc < p.K; pc += kcb) {
        const int64_t kc = std::min(kcb, p.K - pc);
        const float *panel = buf;
        int64_t ldb = NR;
        if (p.packed_b) panel = packed_panels(p.packed_b, p.K, p.N, pc, n0);
        else if (p.sb_n == 1) panel = B + pc * p.sb_k + n0, ldb = p.sb_k;
        else pack_b(B + pc * p.sb_k + n0 * p.sb_n, p.sb_k, p.sb_n, kc, cols, buf);
#if AOTC_GEMM_AVX512
        if (cols <= 8) strip_rows<MR, 0>(p, b, m0, m1, n0, cols, pc, kc, panel, ldb);
        else if (cols <= 16) strip_rows<MR, 1>(p, b, m0, m1, n0, cols, pc, kc, panel, ldb);
        else if (cols <= 24) strip_rows<MR, 3>(p, b, m0, m1, n0, cols, pc, kc, panel, ldb);
        else strip_rows<MR, 2>(p, b, m0, m1, n0, cols, pc, kc, panel, ldb);
#else
        if (cols <= 8) strip_rows<2 * MR, 1>(p, b, m0, m1, n0, cols, pc, kc, panel, ldb);
        else strip_rows<MR, 2>(p, b, m0, m1, n0, cols, pc, kc, panel, ldb);
#endif
    }
}
#endif

}  // namespace

#endif
