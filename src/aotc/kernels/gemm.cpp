// Batched SGEMM with a fused bias (see aotc_kernels.h for the contract).
//
// Structure (BLIS-style):
//   for each NC-wide column block of C            (B block stays in L3)
//     for each KC-deep slice of K                 pack B[KC x NC] into NR-wide panels
//       for each MC-tall row block                pack A[MC x KC] into MR-tall panels (L2)
//         for each NR column panel, MR row panel  micro-kernel: MR x NR tile in registers
// Packed panels are zero padded, so the micro-kernel never branches on edges;
// partial tiles are computed into a local tile and copied out element-wise.
// For small M, all of A is packed once and B is packed in narrow chunks instead.
// Threads split the batch, or split C of each matrix into a tm x tn grid.

#include "aotc_kernels.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#ifdef _OPENMP
#include <omp.h>
#endif

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define AOTC_GEMM_AVX2 1
#else
#define AOTC_GEMM_AVX2 0
#endif

namespace {

// 6x16 uses 12 of the 16 ymm registers for accumulators, leaving room for
// two B vectors and one broadcast A value.
constexpr int64_t MR = 6;
constexpr int64_t NR = 16;
// KC*NR*4 = 16 KiB: one B micro-panel sits in L1 while it is swept over the A block.
constexpr int64_t KC = 256;
// MC*KC*4 = 144 KiB: the packed A block lives in L2.
constexpr int64_t MC = 144;
// KC*NC*4 = 2 MiB: the packed B block lives in L3.
constexpr int64_t NC = 2048;
// Small-M mode (see gemm_range): up to 1 MiB of A packed once, B packed in
// KC x 256 chunks (256 KiB) that are consumed while still in L2.
constexpr int64_t A_RESIDENT_MAX = 256 * 1024;  // floats
constexpr int64_t NC_SMALL_M = 256;
// Below this much work per thread, forking costs more than it saves.
constexpr double kMinFlopsPerThread = 4.0e5;

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
inline int64_t round_up(int64_t a, int64_t b) { return ceil_div(a, b) * b; }

struct Problem {
    int64_t batch, M, N, K;
    const float *A; int64_t sa_batch, sa_m, sa_k;
    const float *B; int64_t sb_batch, sb_k, sb_n;
    float *C; int64_t sc_batch, ldc;
    const float *bias; int64_t sbias_batch, sbias_m, sbias_n;
    float alpha, beta;
};

// What to do with a finished tile: C = alpha*acc + beta*bias on the first K
// slice (bias may be null), C += alpha*acc on the following ones.
struct Epilogue {
    float alpha, beta;
    bool accumulate;
    const float *bias;  // at the tile origin
    int64_t sbm, sbn;
};

// Element-wise store of an MR x NR tile (row stride NR); handles partial tiles
// and any bias strides.
void store_tile(const float *tile, int64_t mr, int64_t nr, float *c, int64_t ldc,
                const Epilogue &e) {
    for (int64_t i = 0; i < mr; ++i) {
        float *ci = c + i * ldc;
        for (int64_t j = 0; j < nr; ++j) {
            float v = e.alpha * tile[i * NR + j];
            if (e.accumulate) v += ci[j];
            else if (e.bias) v += e.beta * e.bias[i * e.sbm + j * e.sbn];
            ci[j] = v;
        }
    }
}

#if AOTC_GEMM_AVX2

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
void compute_tile(int64_t kc, const float *a, const float *b, float *tile) {
    __m256 acc[MR][2];
    accumulate_6x16(kc, a, b, acc);
    for (int i = 0; i < MR; ++i) {
        _mm256_storeu_ps(tile + i * NR, acc[i][0]);
        _mm256_storeu_ps(tile + i * NR + 8, acc[i][1]);
    }
}

// Full tile straight into C with the epilogue fused; bias needs sbn of 0 or 1.
void kernel_full(int64_t kc, const float *a, const float *b, float *c, int64_t ldc,
                 const Epilogue &e) {
    for (int i = 0; i < MR; ++i) _mm_prefetch(reinterpret_cast<const char *>(c + i * ldc), _MM_HINT_T0);
    __m256 acc[MR][2];
    accumulate_6x16(kc, a, b, acc);
    const __m256 va = _mm256_set1_ps(e.alpha), vb = _mm256_set1_ps(e.beta);
    for (int i = 0; i < MR; ++i) {
        float *ci = c + i * ldc;
        __m256 r0 = _mm256_mul_ps(va, acc[i][0]);
        __m256 r1 = _mm256_mul_ps(va, acc[i][1]);
        if (e.accumulate) {
            r0 = _mm256_add_ps(r0, _mm256_loadu_ps(ci));
            r1 = _mm256_add_ps(r1, _mm256_loadu_ps(ci + 8));
        } else if (e.bias) {
            const float *bi = e.bias + i * e.sbm;
            if (e.sbn == 0) {
                const __m256 v = _mm256_set1_ps(e.beta * bi[0]);
                r0 = _mm256_add_ps(r0, v);
                r1 = _mm256_add_ps(r1, v);
            } else {
                r0 = _mm256_fmadd_ps(vb, _mm256_loadu_ps(bi), r0);
                r1 = _mm256_fmadd_ps(vb, _mm256_loadu_ps(bi + 8), r1);
            }
        }
        _mm256_storeu_ps(ci, r0);
        _mm256_storeu_ps(ci + 8, r1);
    }
}

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

#else  // portable fallback: plain loops the compiler can vectorise for any target

void compute_tile(int64_t kc, const float *a, const float *b, float *tile) {
    float acc[MR][NR] = {};
    for (int64_t k = 0; k < kc; ++k, a += MR, b += NR)
        for (int64_t i = 0; i < MR; ++i)
            for (int64_t j = 0; j < NR; ++j) acc[i][j] += a[i] * b[j];
    std::memcpy(tile, acc, sizeof(acc));
}

#endif

// Pack rows [0, mc) x cols [0, kc) of A (already offset to the block origin)
// into MR-row panels laid out k-major: dst[p*MR*kc + k*MR + i].
void pack_a(const float *A, int64_t sa_m, int64_t sa_k, int64_t mc, int64_t kc, float *dst) {
    for (int64_t i0 = 0; i0 < mc; i0 += MR, dst += MR * kc) {
        const int64_t mr = std::min(MR, mc - i0);
        const float *src = A + i0 * sa_m;
        if (mr < MR) std::memset(dst, 0, sizeof(float) * MR * kc);
        if (mr == MR && sa_m == 1) {
            for (int64_t k = 0; k < kc; ++k)
                for (int64_t i = 0; i < MR; ++i) dst[k * MR + i] = src[k * sa_k + i];
        } else {  // walk each row along k: the usual row-major case streams
            for (int64_t i = 0; i < mr; ++i)
                for (int64_t k = 0; k < kc; ++k) dst[k * MR + i] = src[i * sa_m + k * sa_k];
        }
    }
}

// Pack rows [0, kc) x cols [0, nc) of B into NR-column panels laid out
// k-major: dst[q*NR*kc + k*NR + j].
void pack_b(const float *B, int64_t sb_k, int64_t sb_n, int64_t kc, int64_t nc, float *dst) {
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
        int64_t k0 = 0;
#if AOTC_GEMM_AVX2
        if (nr == NR && sb_k == 1) {  // transposed weight [N, K]: 8x8 register transposes
            for (; k0 + 8 <= kc; k0 += 8) {
                for (int h = 0; h < 2; ++h) {
                    __m256 r[8];
                    for (int j = 0; j < 8; ++j) r[j] = _mm256_loadu_ps(src + (h * 8 + j) * sb_n + k0);
                    transpose8(r);
                    for (int k = 0; k < 8; ++k) _mm256_store_ps(dst + (k0 + k) * NR + h * 8, r[k]);
                }
            }
        }
#endif
        if (nr < NR) std::memset(dst, 0, sizeof(float) * NR * kc);
        if (std::abs(sb_k) < std::abs(sb_n)) {  // columns are the contiguous direction
            for (int64_t j = 0; j < nr; ++j)
                for (int64_t k = k0; k < kc; ++k) dst[k * NR + j] = src[j * sb_n + k * sb_k];
        } else {
            for (int64_t k = k0; k < kc; ++k)
                for (int64_t j = 0; j < nr; ++j) dst[k * NR + j] = src[k * sb_k + j * sb_n];
        }
    }
}

// Multiply packed A (mc x kc) by packed B (kc x nc) into C at the block origin.
void macro_kernel(int64_t mc, int64_t nc, int64_t kc, const float *Ap, const float *Bp,
                  float *C, int64_t ldc, const Epilogue &block) {
    const bool fast_bias = !block.bias || block.sbn == 0 || block.sbn == 1;
    alignas(64) float tile[MR * NR];
    for (int64_t jr = 0; jr < nc; jr += NR) {
        const int64_t nr = std::min(NR, nc - jr);
        for (int64_t ir = 0; ir < mc; ir += MR) {
            const int64_t mr = std::min(MR, mc - ir);
            Epilogue e = block;
            if (e.bias) e.bias += ir * e.sbm + jr * e.sbn;
            const float *a = Ap + ir * kc, *b = Bp + jr * kc;
            float *c = C + ir * ldc + jr;
#if AOTC_GEMM_AVX2
            if (mr == MR && nr == NR && fast_bias) {
                kernel_full(kc, a, b, c, ldc, e);
                continue;
            }
#else
            (void)fast_bias;
#endif
            compute_tile(kc, a, b, tile);
            store_tile(tile, mr, nr, c, ldc, e);
        }
    }
}

// Per-thread packing buffer, kept across calls so steady-state calls do not
// touch the allocator; freed when the thread exits.
struct Scratch {
    float *p = nullptr;
    size_t cap = 0;  // in floats
    ~Scratch() { std::free(p); }
    float *get(size_t n) {
        if (n <= cap) return p;
        std::free(p);
        cap = round_up(static_cast<int64_t>(n), 16);
        p = static_cast<float *>(std::aligned_alloc(64, cap * sizeof(float)));
        if (!p) cap = 0;
        return p;
    }
};
thread_local Scratch tls_scratch;

// Slow but allocation-free path, only used if the scratch cannot be allocated.
void naive_range(const Problem &p, int64_t b, int64_t m0, int64_t m1, int64_t n0, int64_t n1) {
    const float *A = p.A + b * p.sa_batch, *B = p.B + b * p.sb_batch;
    for (int64_t m = m0; m < m1; ++m)
        for (int64_t n = n0; n < n1; ++n) {
            double s = 0.0;
            for (int64_t k = 0; k < p.K; ++k) s += double(A[m * p.sa_m + k * p.sa_k]) * B[k * p.sb_k + n * p.sb_n];
            float v = p.alpha * float(s);
            if (p.bias) v += p.beta * p.bias[b * p.sbias_batch + m * p.sbias_m + n * p.sbias_n];
            p.C[b * p.sc_batch + m * p.ldc + n] = v;
        }
}

// One thread's share: C_b[m0:m1, n0:n1], all of K (K > 0).
void gemm_range(const Problem &p, int64_t b, int64_t m0, int64_t m1, int64_t n0, int64_t n1) {
    if (m0 >= m1 || n0 >= n1) return;
    // Split K and M into near-equal blocks so no block is a sliver.
    const int64_t kcb = ceil_div(p.K, ceil_div(p.K, KC));
    const int64_t mcb = round_up(ceil_div(m1 - m0, ceil_div(m1 - m0, MC)), MR);
    // When this thread's rows fit one M block and all of their packed A fits
    // in L2, pack A once and walk N in narrow chunks, so each packed B chunk is
    // consumed from L2 instead of round-tripping through L3/memory (small M).
    const bool a_resident = m1 - m0 <= mcb && mcb * p.K <= A_RESIDENT_MAX;
    const int64_t ncb = std::min(a_resident ? NC_SMALL_M : NC, round_up(n1 - n0, NR));
    const int64_t a_size = round_up(mcb * (a_resident ? p.K : kcb), 16);
    float *buf = tls_scratch.get(static_cast<size_t>(a_size + ncb * kcb));
    if (!buf) return naive_range(p, b, m0, m1, n0, n1);
    float *Ap = buf, *Bp = buf + a_size;

    const float *A = p.A + b * p.sa_batch, *B = p.B + b * p.sb_batch;
    const float *bias = p.bias ? p.bias + b * p.sbias_batch : nullptr;
    float *C = p.C + b * p.sc_batch;
    if (a_resident)  // K slice pc lands at Ap + pc*mcb
        for (int64_t pc = 0; pc < p.K; pc += kcb)
            pack_a(A + m0 * p.sa_m + pc * p.sa_k, p.sa_m, p.sa_k, m1 - m0, std::min(kcb, p.K - pc), Ap + pc * mcb);
    for (int64_t jc = n0; jc < n1; jc += ncb) {
        const int64_t nc = std::min(ncb, n1 - jc);
        for (int64_t pc = 0; pc < p.K; pc += kcb) {
            const int64_t kc = std::min(kcb, p.K - pc);
            pack_b(B + pc * p.sb_k + jc * p.sb_n, p.sb_k, p.sb_n, kc, nc, Bp);
            for (int64_t ic = m0; ic < m1; ic += mcb) {
                const int64_t mc = std::min(mcb, m1 - ic);
                if (!a_resident) pack_a(A + ic * p.sa_m + pc * p.sa_k, p.sa_m, p.sa_k, mc, kc, Ap);
                Epilogue e{p.alpha, p.beta, pc > 0, nullptr, p.sbias_m, p.sbias_n};
                if (pc == 0 && bias) e.bias = bias + ic * p.sbias_m + jc * p.sbias_n;
                macro_kernel(mc, nc, kc, a_resident ? Ap + pc * mcb : Ap, Bp, C + ic * p.ldc + jc, p.ldc, e);
            }
        }
    }
}

// Choose a tm x tn thread grid (tm*tn == nt) over MR x NR blocks of C that
// minimises the slowest thread's cost: its multiply-adds plus its packing
// (each thread packs its own A rows and B columns).
void choose_grid(const Problem &p, int nt, int64_t &tm, int64_t &tn) {
    const int64_t mb = ceil_div(p.M, MR), nb = ceil_div(p.N, NR);
    double best = -1.0;
    for (int64_t m = 1; m <= nt; ++m) {
        if (nt % m) continue;
        const int64_t n = nt / m;
        const double rows = double(ceil_div(mb, m) * MR), cols = double(ceil_div(nb, n) * NR);
        const double packs = rows * ceil_div(int64_t(cols), NC) + cols;  // A is repacked per NC block
        const double cost = rows * cols / 8.0 + packs;  // packing an element ~ 8 multiply-adds
        if (best < 0 || cost < best) { best = cost; tm = m; tn = n; }
    }
}

void run_thread(const Problem &p, int tid, int nt) {
    // Split the batch when it divides well (or is large): no packing is
    // shared, each thread runs whole matrices. Otherwise split every matrix.
    if (nt == 1 || (p.batch >= nt && (p.batch % nt == 0 || p.batch >= 4 * nt))) {
        for (int64_t b = tid; b < p.batch; b += nt) gemm_range(p, b, 0, p.M, 0, p.N);
        return;
    }
    int64_t tm = 1, tn = nt;
    choose_grid(p, nt, tm, tn);
    const int64_t ti = tid / tn, tj = tid % tn;
    const int64_t mb = ceil_div(p.M, MR), nb = ceil_div(p.N, NR);
    const int64_t m0 = std::min(p.M, mb * ti / tm * MR), m1 = std::min(p.M, mb * (ti + 1) / tm * MR);
    const int64_t n0 = std::min(p.N, nb * tj / tn * NR), n1 = std::min(p.N, nb * (tj + 1) / tn * NR);
    for (int64_t b = 0; b < p.batch; ++b) gemm_range(p, b, m0, m1, n0, n1);
}

}  // namespace

extern "C" void aotc_sgemm_batched(int64_t batch, int64_t M, int64_t N, int64_t K,
                                   const float *A, int64_t sa_batch, int64_t sa_m, int64_t sa_k,
                                   const float *B, int64_t sb_batch, int64_t sb_k, int64_t sb_n,
                                   float *C, int64_t sc_batch, int64_t ldc,
                                   const float *bias, int64_t sbias_batch, int64_t sbias_m,
                                   int64_t sbias_n, float alpha, float beta) {
    if (batch <= 0 || M <= 0 || N <= 0) return;
    if (K <= 0) {  // empty sum: only the bias term remains
        for (int64_t b = 0; b < batch; ++b)
            for (int64_t m = 0; m < M; ++m)
                for (int64_t n = 0; n < N; ++n)
                    C[b * sc_batch + m * ldc + n] =
                        bias ? beta * bias[b * sbias_batch + m * sbias_m + n * sbias_n] : 0.0f;
        return;
    }
    const Problem p{batch, M, N, K, A, sa_batch, sa_m, sa_k, B, sb_batch, sb_k, sb_n,
                    C, sc_batch, ldc, bias, sbias_batch, sbias_m, sbias_n, alpha, beta};
#ifdef _OPENMP
    const double flops = 2.0 * double(batch) * double(M) * double(N) * double(K);
    const int want = int(std::min<double>(omp_get_max_threads(), std::max(1.0, flops / kMinFlopsPerThread)));
    if (want > 1) {
        // The team may be smaller than requested (nesting, dynamic threads):
        // every thread derives the same split from the actual team size.
#pragma omp parallel num_threads(want)
        run_thread(p, omp_get_thread_num(), omp_get_num_threads());
        return;
    }
#endif
    run_thread(p, 0, 1);
}

extern "C" void aotc_sgemm(int64_t M, int64_t N, int64_t K, const float *A, int64_t sa_m,
                           int64_t sa_k, const float *B, int64_t sb_k, int64_t sb_n, float *C,
                           int64_t ldc, const float *bias, int64_t sbias_m, int64_t sbias_n,
                           float alpha, float beta) {
    aotc_sgemm_batched(1, M, N, K, A, 0, sa_m, sa_k, B, 0, sb_k, sb_n, C, 0, ldc, bias, 0,
                       sbias_m, sbias_n, alpha, beta);
}
