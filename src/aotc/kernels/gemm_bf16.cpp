// bfloat16 GEMM against a prepacked weight (compile option precision="bf16"; the layout
// and the contract are in aotc_kernels.h). B is stored rounded to bfloat16 in NR-wide
// panels whose K rows come in interleaved pairs; each block of A is packed to the same
// pairs (rounded to nearest even) while it is packed; the micro-kernel multiplies them
// with vdpbf16ps (two products per lane, summed in float32) into a float32 tile, and the
// fused bias and epilogue run on that tile as in gemm.cpp. Loop nest: K slice, block of
// MC rows (packed A in L2), NR column panel, MR row tile.
//
// The vdpbf16ps kernel needs avx512_bf16: the AVX-512 build compiles it for that feature
// only (the package records it, the loader checks it). Builds without AVX-512 keep a
// portable loop of the same arithmetic (operands rounded to bfloat16, float32 sums) so
// that every build links; aotc refuses precision="bf16" for their targets.

#include "aotc_kernels.h"
#include "gemm_microkernels.h"
#include "gemm_packing.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace {

using aotc_gemm::Epilogue;
using aotc_gemm::KC;
using aotc_gemm::MC;
using aotc_gemm::MR;
using aotc_gemm::NR;

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
inline int64_t round_up(int64_t a, int64_t b) { return ceil_div(a, b) * b; }

// Depth of the K slices: those of the float32 layout, rounded up to whole pairs.
inline int64_t slice_bf16(int64_t K) { return round_up(ceil_div(K, ceil_div(K, KC)), 2); }

// float32 -> bfloat16, rounded to nearest even (a NaN stays a quiet NaN).
inline uint16_t to_bf16(float x) {
    uint32_t u;
    std::memcpy(&u, &x, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);
    return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

inline float from_bf16(uint16_t h) {
    const uint32_t u = uint32_t(h) << 16;
    float x;
    std::memcpy(&x, &u, 4);
    return x;
}

struct Problem {
    int64_t batch, M, N, K;
    const float *A; int64_t sa_batch, sa_m, sa_k;
    const uint16_t *B;
    float *C; int64_t sc_batch, ldc;
    const float *bias; int64_t sbias_batch, sbias_m, sbias_n;
    float alpha, beta;
    const aotc_gemm_epilogue *post;
};

// Per-thread scratch (packed A as float32, then as bfloat16 pairs), kept across calls.
struct Scratch {
    void *p = nullptr;
    size_t cap = 0;  // bytes
    ~Scratch() { std::free(p); }
    void *get(size_t n) {
        if (n <= cap) return p;
        std::free(p);
        cap = static_cast<size_t>(round_up(static_cast<int64_t>(n), 64));
        p = std::aligned_alloc(64, cap);
        if (!p) cap = 0;
        return p;
    }
};
thread_local Scratch tls_scratch;

// Rows [0, mc) x K pairs [0, kc2/2) of A (at the block origin) as MR-row panels of pairs:
// dst[panel*MR*kc2 + (k/2)*2*MR + 2*i + k%2] = bf16(A(i, k)), zero past mc and past kc.
// `tmp` holds MR*(kc + 1) floats: each panel is packed to float32 first.
void pack_a_bf16(const float *A, int64_t sa_m, int64_t sa_k, int64_t mc, int64_t kc,
                 float *tmp, uint16_t *dst) {
    const int64_t kc2 = round_up(kc, 2);
    for (int64_t i0 = 0; i0 < mc; i0 += MR, dst += MR * kc2) {
        aotc_gemm::pack_a(A + i0 * sa_m, sa_m, sa_k, std::min(MR, mc - i0), kc, tmp);
        std::memset(tmp + kc * MR, 0, sizeof(float) * MR);
#if AOTC_GEMM_AVX512
        // both rows of a pair rounded at once, then their lanes interleaved
        const __m512i order = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10,
                                               25, 9, 24, 8, 23, 7, 22, 6, 21, 5, 20, 4, 19, 3,
                                               18, 2, 17, 1, 16, 0);
        const __mmask16 rows = static_cast<__mmask16>((1u << MR) - 1u);
        const __mmask32 out = static_cast<__mmask32>((uint64_t(1) << (2 * MR)) - 1u);
        for (int64_t k = 0; k < kc2; k += 2) {
            const __m512 lo = _mm512_maskz_loadu_ps(rows, tmp + k * MR);
            const __m512 hi = _mm512_maskz_loadu_ps(rows, tmp + (k + 1) * MR);
            // round to nearest even in integer lanes (the VCVTNE2PS2BF16 rounding), so
            // that this part needs only AVX-512BW
            const auto round = [](__m512 x) {
                const __m512i u = _mm512_castps_si512(x);
                // (maskz shifts: GCC 12 flags the plain ones' undefined pass-through)
                const __m512i top = _mm512_maskz_srli_epi32(0xFFFF, u, 16);
                const __m512i odd = _mm512_and_si512(top, _mm512_set1_epi32(1));
                const __m512i r = _mm512_maskz_srli_epi32(
                    0xFFFF, _mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7fff)), odd), 16);
                const __mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
                return _mm512_mask_or_epi32(r, nan, top, _mm512_set1_epi32(0x40));
            };
            const __m512i both = _mm512_packus_epi32(round(lo), round(hi));  // per 128-bit lane
            // packus interleaves 4-element groups by lane: restore lo[0..15], hi[0..15]
            const __m512i linear = _mm512_maskz_permutexvar_epi64(0xFF, _mm512_set_epi64(7, 5, 3, 1, 6, 4, 2, 0), both);
            const __m512i pairs = _mm512_maskz_permutexvar_epi16(0xFFFFFFFFu, order, linear);
            _mm512_mask_storeu_epi16(dst + k * MR, out, pairs);
        }
#else
        for (int64_t k = 0; k < kc2; k += 2)
            for (int64_t i = 0; i < MR; ++i) {
                dst[k * MR + 2 * i] = to_bf16(tmp[k * MR + i]);
                dst[k * MR + 2 * i + 1] = to_bf16(tmp[(k + 1) * MR + i]);
            }
#endif
    }
}

// Element-wise store of a ROWS x NR float32 tile (any bias strides).
void store_tile(const float *tile, int64_t mr, int64_t nr, float *c, int64_t ldc, const Epilogue &e) {
    for (int64_t i = 0; i < mr; ++i)
        for (int64_t j = 0; j < nr; ++j) {
            float v = e.alpha * tile[i * NR + j];
            if (e.accumulate) v += c[i * ldc + j];
            else if (e.bias) v += e.beta * e.bias[i * e.sbm + j * e.sbn];
            c[i * ldc + j] = v;
        }
}

#if AOTC_GEMM_AVX512
#pragma GCC push_options
#pragma GCC target("avx512bf16")

constexpr int NV = int(NR / 16);

// acc[i][v] = sum over the kp K pairs of a's pair for row i times b's pairs for columns
// [16v, 16v + 16); fewer ROWS or W for edge tiles, so they skip the zero padding.
template <int ROWS, int W>
__attribute__((always_inline)) inline void
accumulate_bf16(int64_t kp, const uint16_t *__restrict a, const uint16_t *__restrict b,
                __m512 (&acc)[ROWS][W], const char *pf, int64_t pf_lines) {
#pragma GCC unroll 16
    for (int i = 0; i < ROWS; ++i)
#pragma GCC unroll 4
        for (int v = 0; v < W; ++v) acc[i][v] = _mm512_setzero_ps();
#pragma GCC unroll 2
    for (int64_t p = 0; p < kp; ++p) {
        __m512bh bv[W];
#pragma GCC unroll 4
        for (int v = 0; v < W; ++v) bv[v] = (__m512bh)_mm512_loadu_si512(b + 32 * v);
        if (p < pf_lines) _mm_prefetch(pf + 64 * p, _MM_HINT_T1);
#pragma GCC unroll 16
        for (int i = 0; i < ROWS; ++i) {
            uint32_t pair;
            std::memcpy(&pair, a + 2 * i, 4);
            const __m512bh ai = (__m512bh)_mm512_set1_epi32(static_cast<int>(pair));
#pragma GCC unroll 4
            for (int v = 0; v < W; ++v) acc[i][v] = _mm512_dpbf16_ps(acc[i][v], ai, bv[v]);
        }
        a += 2 * MR;
        b += 2 * NR;
    }
}

template <int ROWS, int W>
void kernel_bf16(int64_t kp, const uint16_t *a, const uint16_t *b, float *c, int64_t ldc,
                 int64_t mr, int64_t nr, const Epilogue &e, bool fast_bias,
                 const char *pf, int64_t pf_lines) {
    __m512 acc[ROWS][W];
    accumulate_bf16<ROWS, W>(kp, a, b, acc, pf, pf_lines);
    if (fast_bias) return aotc_gemm::store_zmm<ROWS, W>(acc, c, ldc, mr, nr, e);
    alignas(64) float tile[MR * NR];
    for (int i = 0; i < ROWS; ++i)
        for (int v = 0; v < W; ++v) _mm512_store_ps(tile + i * NR + 16 * v, acc[i][v]);
    store_tile(tile, mr, nr, c, ldc, e);
}

template <int W>
void kernel_rows(int64_t kp, const uint16_t *a, const uint16_t *b, float *c, int64_t ldc,
                 int64_t mr, int64_t nr, const Epilogue &e, bool fast_bias,
                 const char *pf, int64_t pf_lines) {
    if (mr > 8) kernel_bf16<MR, W>(kp, a, b, c, ldc, mr, nr, e, fast_bias, pf, pf_lines);
    else if (mr > 4) kernel_bf16<8, W>(kp, a, b, c, ldc, mr, nr, e, fast_bias, pf, pf_lines);
    else if (mr > 2) kernel_bf16<4, W>(kp, a, b, c, ldc, mr, nr, e, fast_bias, pf, pf_lines);
    else if (mr > 1) kernel_bf16<2, W>(kp, a, b, c, ldc, mr, nr, e, fast_bias, pf, pf_lines);
    else kernel_bf16<1, W>(kp, a, b, c, ldc, mr, nr, e, fast_bias, pf, pf_lines);
}
static_assert(MR > 8 && MR <= 16 && NV == 2, "kernel_rows assumes 12x32-like tiles");

void tile_bf16(int64_t kp, const uint16_t *a, const uint16_t *b, float *c, int64_t ldc,
               int64_t mr, int64_t nr, const Epilogue &e, bool fast_bias,
                 const char *pf, int64_t pf_lines) {
    if (nr > 16) kernel_rows<2>(kp, a, b, c, ldc, mr, nr, e, fast_bias, pf, pf_lines);
    else kernel_rows<1>(kp, a, b, c, ldc, mr, nr, e, fast_bias, pf, pf_lines);
}

#pragma GCC pop_options
#else

// The same products without vdpbf16ps: operands widened back to float32, summed in pairs.
void tile_bf16(int64_t kp, const uint16_t *a, const uint16_t *b, float *c, int64_t ldc,
               int64_t mr, int64_t nr, const Epilogue &e, bool, const char *, int64_t) {
    float tile[MR * NR] = {};
    for (int64_t p = 0; p < kp; ++p, a += 2 * MR, b += 2 * NR)
        for (int64_t i = 0; i < MR; ++i)
            for (int64_t j = 0; j < NR; ++j)
                tile[i * NR + j] += from_bf16(a[2 * i]) * from_bf16(b[2 * j]) +
                                    from_bf16(a[2 * i + 1]) * from_bf16(b[2 * j + 1]);
    store_tile(tile, mr, nr, c, ldc, e);
}

#endif

// C_b[m0:m1, n0:n1] (n0 a multiple of NR), all of K (K > 0).
void gemm_range(const Problem &p, int64_t b, int64_t m0, int64_t m1, int64_t n0, int64_t n1) {
    const int64_t kcb = slice_bf16(p.K), npad = round_up(p.N, NR);
    const int64_t mcb = std::min(round_up(m1 - m0, MR), MC);
    const size_t tmp_bytes = static_cast<size_t>(round_up(MR * (kcb + 1), 16)) * sizeof(float);
    char *buf = static_cast<char *>(tls_scratch.get(tmp_bytes + size_t(mcb * kcb) * 2));
    if (!buf) {  // no scratch: one product at a time, same rounding
        for (int64_t m = m0; m < m1; ++m)
            for (int64_t n = n0; n < n1; ++n) {
                float s = 0.0f;
                for (int64_t k = 0; k < p.K; ++k) {
                    const int64_t pc = k / kcb * kcb, kc2 = round_up(std::min(kcb, p.K - pc), 2);
                    const uint16_t w = p.B[pc * npad + n / NR * NR * kc2 + (k - pc) / 2 * 2 * NR +
                                           2 * (n % NR) + (k - pc) % 2];
                    s += from_bf16(to_bf16(p.A[b * p.sa_batch + m * p.sa_m + k * p.sa_k])) * from_bf16(w);
                }
                float v = p.alpha * s;
                if (p.bias) v += p.beta * p.bias[b * p.sbias_batch + m * p.sbias_m + n * p.sbias_n];
                p.C[b * p.sc_batch + m * p.ldc + n] = v;
            }
        if (p.post) p.post->fn(p.post->ctx, p.C + b * p.sc_batch + m0 * p.ldc + n0, p.ldc,
                               b * p.M + m0, n0, m1 - m0, n1 - n0);
        return;
    }
    float *tmp = reinterpret_cast<float *>(buf);
    uint16_t *Ap = reinterpret_cast<uint16_t *>(buf + tmp_bytes);
    const float *A = p.A + b * p.sa_batch;
    const float *bias = p.bias ? p.bias + b * p.sbias_batch : nullptr;
    float *C = p.C + b * p.sc_batch;
    const bool fast_bias = !bias || p.sbias_n == 0 || p.sbias_n == 1;
    for (int64_t pc = 0; pc < p.K; pc += kcb) {
        const int64_t kc = std::min(kcb, p.K - pc), kc2 = round_up(kc, 2);
        const bool last = pc + kc >= p.K;
        for (int64_t ic = m0; ic < m1; ic += mcb) {
            const int64_t mc = std::min(mcb, m1 - ic);
            pack_a_bf16(A + ic * p.sa_m + pc * p.sa_k, p.sa_m, p.sa_k, mc, kc, tmp, Ap);
            // while the tiles of one B panel run, the first few (up to 4) pull the next
            // panel into L2, a cache line per K pair (as gemm.cpp's macro kernel does)
            const int64_t tiles = ceil_div(mc, MR), lines = kc2 / 2 * 2 * NR * 2 / 64;
            const int64_t per_tile = std::min(kc2 / 2, ceil_div(lines, std::min<int64_t>(tiles, 4)));
            for (int64_t jr = n0; jr < n1; jr += NR) {
                const int64_t nr = std::min(NR, n1 - jr);
                const uint16_t *panel = p.B + pc * npad + jr * kc2;
                const char *next = jr + NR < n1 ? reinterpret_cast<const char *>(panel + NR * kc2) : nullptr;
                for (int64_t ir = 0; ir < mc; ir += MR) {
                    const int64_t mr = std::min(MR, mc - ir);
                    const int64_t first = ir / MR * per_tile;
                    const int64_t pf_lines = next ? std::max<int64_t>(0, std::min(per_tile, lines - first)) : 0;
                    Epilogue e{p.alpha, p.beta, pc > 0, nullptr, p.sbias_m, p.sbias_n};
                    if (pc == 0 && bias) e.bias = bias + (ic + ir) * p.sbias_m + jr * p.sbias_n;
                    float *c = C + (ic + ir) * p.ldc + jr;
                    tile_bf16(kc2 / 2, Ap + ir * kc2, panel, c, p.ldc, mr, nr, e, fast_bias,
                              next ? next + 64 * first : nullptr, pf_lines);
                    if (last && p.post) p.post->fn(p.post->ctx, c, p.ldc, b * p.M + ic + ir, jr, mr, nr);
                }
            }
        }
    }
}

// Below this much work per thread, forking costs more than it saves.
constexpr double kMinFlopsPerThread = 4.0e5;

void run(const Problem &p) {
    // Tasks: blocks of MC rows of each matrix, and when those are fewer than the threads,
    // column blocks (whole panels) as well; each task packs its own rows of A.
    const int64_t mblocks = ceil_div(p.M, MC), npanels = ceil_div(p.N, NR);
    int nt = 1;
#ifdef _OPENMP
    const double flops = 2.0 * double(p.batch) * double(p.M) * double(p.N) * double(p.K);
    nt = int(std::min<double>(omp_get_max_threads(), std::max(1.0, flops / kMinFlopsPerThread)));
#endif
    const int64_t tn = std::min(npanels, std::max<int64_t>(1, ceil_div(nt, p.batch * mblocks)));
    const int64_t tasks = p.batch * mblocks * tn;
    const auto task = [&](int64_t t) {
        const int64_t b = t / (mblocks * tn), mb = t / tn % mblocks, nb = t % tn;
        const int64_t m0 = p.M * mb / mblocks, m1 = p.M * (mb + 1) / mblocks;
        const int64_t n0 = std::min(p.N, npanels * nb / tn * NR);
        const int64_t n1 = std::min(p.N, npanels * (nb + 1) / tn * NR);
        if (m0 < m1 && n0 < n1) gemm_range(p, b, m0, m1, n0, n1);
    };
#ifdef _OPENMP
    if (nt > 1 && tasks > 1) {
#pragma omp parallel for num_threads(nt) schedule(dynamic, 1)
        for (int64_t t = 0; t < tasks; ++t) task(t);
        return;
    }
#endif
    for (int64_t t = 0; t < tasks; ++t) task(t);
}

}  // namespace

extern "C" int64_t aotc_sgemm_packed_bf16_elems(int64_t K, int64_t N) {
    return K > 0 && N > 0 ? round_up(K, 2) * round_up(N, NR) : 0;
}

extern "C" void aotc_sgemm_pack_b_bf16(int64_t K, int64_t N, const float *B, int64_t sb_k,
                                       int64_t sb_n, uint16_t *packed) {
    if (K <= 0 || N <= 0) return;
    const int64_t kcb = slice_bf16(K), npad = round_up(N, NR);
    for (int64_t pc = 0; pc < K; pc += kcb) {
        const int64_t kc = std::min(kcb, K - pc), kc2 = round_up(kc, 2);
        for (int64_t q = 0; q < npad; q += NR) {
            uint16_t *panel = packed + pc * npad + q * kc2;
            for (int64_t k = 0; k < kc2; ++k)
                for (int64_t j = 0; j < NR; ++j) {
                    const bool inside = k < kc && q + j < N;
                    panel[k / 2 * 2 * NR + 2 * j + k % 2] =
                        inside ? to_bf16(B[(pc + k) * sb_k + (q + j) * sb_n]) : uint16_t(0);
                }
        }
    }
}

extern "C" void aotc_sgemm_prepacked_bf16(int64_t batch, int64_t M, int64_t N, int64_t K,
                                          const float *A, int64_t sa_batch, int64_t sa_m,
                                          int64_t sa_k, const uint16_t *packed_b, float *C,
                                          int64_t sc_batch, int64_t ldc, const float *bias,
                                          int64_t sbias_batch, int64_t sbias_m, int64_t sbias_n,
                                          float alpha, float beta,
                                          const aotc_gemm_epilogue *epilogue) {
    if (batch <= 0 || M <= 0 || N <= 0) return;
    const Problem p{batch, M, N, K, A, sa_batch, sa_m, sa_k, packed_b, C, sc_batch, ldc,
                    bias, sbias_batch, sbias_m, sbias_n, alpha, beta,
                    epilogue && epilogue->fn ? epilogue : nullptr};
    if (K <= 0) {  // C = beta*bias (or 0): the empty sum
        for (int64_t b = 0; b < batch; ++b)
            for (int64_t m = 0; m < M; ++m)
                for (int64_t n = 0; n < N; ++n)
                    C[b * sc_batch + m * ldc + n] =
                        bias ? beta * bias[b * sbias_batch + m * sbias_m + n * sbias_n] : 0.0f;
        if (p.post)
            for (int64_t b = 0; b < batch; ++b) p.post->fn(p.post->ctx, C + b * sc_batch, ldc, b * M, 0, M, N);
        return;
    }
    run(p);
}
