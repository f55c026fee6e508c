// Batched SGEMM with a fused bias and an optional fused epilogue, B packed per call
// or prepacked once (see aotc_kernels.h for the contract).
//
// Structure (BLIS-style):
//   for each NC-wide column block of C            (B block stays in L3)
//     for each KC-deep slice of K                 pack B[KC x NC] into NR-wide panels
//       for each MC-tall row block                pack A[MC x KC] into MR-tall panels (L2)
//         for each NR column panel, MR row panel  micro-kernel: MR x NR tile in registers
// Packed panels are zero padded, so the micro-kernel never branches on its
// inner loop. Packing lives in gemm_packing.h, the tile shapes and micro-kernels
// in gemm_microkernels.h:
// 12x32 for AVX-512 and 6x16 for AVX2 and NEON, all with edge tiles of as few rows
// as they need; the portable build's tiles go through a local tile instead.
// For small M, all of A is packed once and B is packed in narrow chunks; with
// AVX-512, up to 32 rows skip packing altogether (dot products against a
// transposed weight, register strips of a row-major B).
// A prepacked B skips its packing (and, with few rows, is read front to back); on AVX-512,
// with 25-160 columns or K up to 16, it takes row tiles over A read in place instead.
// A narrow C (up to one NR-wide panel, any rows; AVX2 and AVX-512) skips the tiles: dot
// products per row for 1-4 columns, register strips of rows of A read in place against
// B's rows otherwise (a prepacked panel is a row-major block). These paths that skip
// packing are in gemm_unpacked.h.
// Threads split the batch, or split C of each matrix into a tm x tn grid; a team
// that splits the rows packs B once, shared, and then takes blocks of rows one at a
// time (a thread the scheduler holds back takes fewer). A small C with a long K splits K
// instead (split_k: partial sums per K slice, reduced in a fixed order, then the bias and
// the epilogue). The epilogue runs on each finished tile (on the last K slice), while the
// tile is in L1.

#include "aotc_kernels.h"
#include "gemm_microkernels.h"
#include "gemm_packing.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <type_traits>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace {

using namespace aotc_gemm;

// KC*NC*4 = 2 MiB: the packed B block lives in L3.
constexpr int64_t NC = 2048;
// Small-M mode (see gemm_range): up to 1 MiB of A packed once, B packed in
// KC x 256 chunks (256 KiB) that are consumed while still in L2.
constexpr int64_t A_RESIDENT_MAX = 256 * 1024;  // floats
constexpr int64_t NC_SMALL_M = 256;
constexpr int64_t C_RESIDENT_MAX = 64 * 1024;  // floats of C kept in L2 across K slices
// Below this much work per thread, forking costs more than it saves.
constexpr double kMinFlopsPerThread = 4.0e5;
// A product of few rows (a squeeze-and-excitation block's 1x1 convolutions on one position, a
// decode step's matrix-vector products) costs its read of B more than its multiply-adds: each
// thread of the team brings its own share of B in from L3 or memory, so such a product takes
// one thread per this many bytes of B even where its multiply-adds would not.
constexpr double kMinBBytesPerThread = 64.0 * 1024;

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
inline int64_t round_up(int64_t a, int64_t b) { return ceil_div(a, b) * b; }

struct Problem {
    int64_t batch, M, N, K;
    const float *A; int64_t sa_batch, sa_m, sa_k;
    const float *B; int64_t sb_batch, sb_k, sb_n;
    float *C; int64_t sc_batch, ldc;
    const float *bias; int64_t sbias_batch, sbias_m, sbias_n;
    float alpha, beta;
    const float *packed_b = nullptr;  // B already in the packed layout (shared by the batch)
    const aotc_gemm_epilogue *post = nullptr;  // applied to each finished block of C
    int64_t row_base = 0;  // output row of matrix 0's first row (a batch run one at a time)
    // aotc_sgemm_act's activation of the finished sums, after the residual (laid out as C)
    int act = aotc_conv_act::NONE;
    float lo = 0.0f, hi = 0.0f;
    const float *residual = nullptr;
};

// The residual and activation over a finished block (the paths whose stores do not apply
// them: everything but the packed tiles of macro_kernel).
void activate_block(const Problem &p, int64_t b, int64_t m0, int64_t n0, int64_t rows,
                    int64_t cols) {
    const int act = p.act;
    const float lo = p.lo, hi = p.hi;
    for (int64_t i = 0; i < rows; ++i) {
        const int64_t at = b * p.sc_batch + (m0 + i) * p.ldc + n0;
        float *__restrict c = p.C + at;
        if (p.residual) {
            const float *r = p.residual + at;
            for (int64_t j = 0; j < cols; ++j) c[j] = aotc_conv_act::activate(c[j] + r[j], act, lo, hi);
        } else {
            for (int64_t j = 0; j < cols; ++j) c[j] = aotc_conv_act::activate(c[j], act, lo, hi);
        }
    }
}

// The fused epilogue over rows [m0, m0 + rows) x cols [n0, n0 + cols) of C_b, once they
// hold their whole sum and bias.
inline void finish(const Problem &p, int64_t b, int64_t m0, int64_t n0, int64_t rows, int64_t cols) {
    if ((p.act || p.residual) && rows > 0 && cols > 0) activate_block(p, b, m0, n0, rows, cols);
    if (p.post && rows > 0 && cols > 0)
        p.post->fn(p.post->ctx, p.C + b * p.sc_batch + m0 * p.ldc + n0, p.ldc,
                   p.row_base + b * p.M + m0, n0, rows, cols);
}

// The K slices of the packed layout: near-equal, at most KC deep, so no slice is a sliver.
inline int64_t k_slice(int64_t K) { return ceil_div(K, ceil_div(K, KC)); }

// Where the packed panels of B's K slice starting at pc, columns from j0 (a multiple of
// NR), begin in the layout of aotc_sgemm_pack_b: slice after slice, each slice's NR-wide
// panels side by side, each panel k-major.
inline const float *packed_panels(const float *packed, int64_t K, int64_t N, int64_t pc,
                                  int64_t j0) {
    return packed + pc * round_up(N, NR) + j0 * std::min(k_slice(K), K - pc);
}

// Element (k, n) of a packed B.
inline float packed_at(const float *packed, int64_t K, int64_t N, int64_t k, int64_t n) {
    const int64_t kcb = k_slice(K), pc = k / kcb * kcb;
    return packed_panels(packed, K, N, pc, n / NR * NR)[(k - pc) * NR + n % NR];
}

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
            if (e.res) v += e.res[i * ldc + j];
            ci[j] = aotc_conv_act::activate(v, e.act, e.lo, e.hi);
        }
    }
}

// Multiply packed A (mc x kc) by packed B (kc x nc) into C at the block origin; with
// `post` (the last K slice), apply it to each tile while the tile is still in L1: the
// block's origin is output row `row0`, column `col0`.
void macro_kernel(int64_t mc, int64_t nc, int64_t kc, const float *Ap, const float *Bp,
                  float *C, int64_t ldc, const Epilogue &block,
                  const aotc_gemm_epilogue *post = nullptr, int64_t row0 = 0, int64_t col0 = 0) {
    const bool fast_bias = !block.bias || block.sbn == 0 || block.sbn == 1;
    alignas(64) float tile[MR * NR];
    // While the tiles of one B panel are computed, the first few of them pull the next
    // panel (contiguous after it) into L2, a cache line per k step: spread over 4 tiles
    // (or all, if fewer), it measured 3-5% ahead of spreading it over every tile of the
    // block and 10-20% ahead of none (1024^3, 64x4096x4096 prepacked).
    const int64_t tiles = ceil_div(mc, MR), lines = ceil_div(NR * kc, 16);
    const int64_t lines_per_tile = std::min(kc, ceil_div(lines, std::min<int64_t>(tiles, 4)));
    for (int64_t jr = 0; jr < nc; jr += NR) {
        const int64_t nr = std::min(NR, nc - jr);
        const char *next_b = jr + NR < nc ? reinterpret_cast<const char *>(Bp + (jr + NR) * kc) : nullptr;
        for (int64_t ir = 0; ir < mc; ir += MR) {
            const int64_t mr = std::min(MR, mc - ir);
            Epilogue e = block;
            if (e.bias) e.bias += ir * e.sbm + jr * e.sbn;
            if (e.res) e.res += ir * ldc + jr;
            const float *a = Ap + ir * kc, *b = Bp + jr * kc;
            float *c = C + ir * ldc + jr;
            const int64_t first = ir / MR * lines_per_tile;
            const char *pf = next_b ? next_b + 64 * first : nullptr;
            const int64_t pf_lines = next_b ? std::max<int64_t>(0, std::min(lines_per_tile, lines - first)) : 0;
#if AOTC_GEMM_AVX2 || AOTC_GEMM_NEON
            if (fast_bias) kernel_tile(kc, a, b, c, ldc, mr, nr, e, pf, pf_lines);
            else {
                compute_tile(kc, a, b, tile);
                store_tile(tile, mr, nr, c, ldc, e);
            }
#else
            (void)fast_bias, (void)pf, (void)pf_lines;
            compute_tile(kc, a, b, tile);
            store_tile(tile, mr, nr, c, ldc, e);
#endif
            if (post) post->fn(post->ctx, c, ldc, row0 + ir, col0 + jr, mr, nr);
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
            for (int64_t k = 0; k < p.K; ++k)
                s += double(A[m * p.sa_m + k * p.sa_k]) *
                     (p.packed_b ? packed_at(p.packed_b, p.K, p.N, k, n) : B[k * p.sb_k + n * p.sb_n]);
            float v = p.alpha * float(s);
            if (p.bias) v += p.beta * p.bias[b * p.sbias_batch + m * p.sbias_m + n * p.sbias_n];
            p.C[b * p.sc_batch + m * p.ldc + n] = v;
        }
    finish(p, b, m0, n0, m1 - m0, n1 - n0);
}

}  // namespace

#include "gemm_unpacked.h"

namespace {

// One thread's share: C_b[m0:m1, n0:n1], all of K (K > 0).
void gemm_range(const Problem &p, int64_t b, int64_t m0, int64_t m1, int64_t n0, int64_t n1) {
    if (m0 >= m1 || n0 >= n1) return;
#if AOTC_GEMM_AVX2
    if (use_dot_narrow(p, n1 - n0)) return narrow_dot_range(p, b, m0, m1, n0, n1);
#endif
#if AOTC_GEMM_AVX512
    const int64_t rows = m1 - m0;
    if (use_row_tiles(p)) return row_tiles_range(p, b, m0, m1, n0, n1);
    if (p.packed_b) {  // the in-place paths below read B unpacked
    } else if (rows <= FEW_ROWS && p.sa_k == 1 && p.sb_k == 1 && p.K >= DOT_MIN_K_PER_ROW * rows) {
        dot_rows_range(p, b, m0, m1, n0, n1);
        return finish(p, b, m0, n0, m1 - m0, n1 - n0);
    } else if (rows <= FEW_ROWS && p.sb_n == 1 && (!p.bias || p.sbias_n == 0 || p.sbias_n == 1)) {
        axpy_range(p, b, m0, m1, n0, n1);
        return finish(p, b, m0, n0, m1 - m0, n1 - n0);
    }
#endif
#if AOTC_GEMM_AVX2
    if (n1 - n0 <= STRIP_COLS && n0 % NR == 0 && (!p.bias || p.sbias_n == 0 || p.sbias_n == 1))
        return strip_range(p, b, m0, m1, n0, n1);
#endif
    // Split K and M into near-equal blocks so no block is a sliver.
    const int64_t kcb = k_slice(p.K);
    const int64_t mcb = round_up(ceil_div(m1 - m0, ceil_div(m1 - m0, MC)), MR);
    // When this thread's rows fit one M block and all of their packed A fits
    // in L2, pack A once and walk N in narrow chunks, so each packed B chunk is
    // consumed from L2 instead of round-tripping through L3/memory (small M).
    const bool a_resident = m1 - m0 <= mcb && mcb * p.K <= A_RESIDENT_MAX;
    // A prepacked B is already laid out K slice by K slice: with few rows, walking all of
    // this thread's columns per slice reads it front to back (a GEMV streams the weight
    // once) while the rows of C being summed stay in L2.
    const bool stream_b = p.packed_b && a_resident && (m1 - m0) * (n1 - n0) <= C_RESIDENT_MAX;
    const int64_t ncb = stream_b ? round_up(n1 - n0, NR)
        : std::min(round_up(a_resident ? NC_SMALL_M : NC, NR), round_up(n1 - n0, NR));
    const int64_t a_size = round_up(mcb * (a_resident ? p.K : kcb), 16);
    float *buf = tls_scratch.get(static_cast<size_t>(a_size + (p.packed_b ? 0 : ncb * kcb)));
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
            const float *panels = Bp;
            if (p.packed_b) panels = packed_panels(p.packed_b, p.K, p.N, pc, jc);
            else pack_b(B + pc * p.sb_k + jc * p.sb_n, p.sb_k, p.sb_n, kc, nc, Bp);
            for (int64_t ic = m0; ic < m1; ic += mcb) {
                const int64_t mc = std::min(mcb, m1 - ic);
                if (!a_resident) pack_a(A + ic * p.sa_m + pc * p.sa_k, p.sa_m, p.sa_k, mc, kc, Ap);
                Epilogue e{p.alpha, p.beta, pc > 0, nullptr, p.sbias_m, p.sbias_n};
                if (pc == 0 && bias) e.bias = bias + ic * p.sbias_m + jc * p.sbias_n;
                const bool last = pc + kc >= p.K;
                if (last) {  // the residual and activation in the tiles' stores
                    e.act = p.act, e.lo = p.lo, e.hi = p.hi;
                    if (p.residual) e.res = p.residual + b * p.sc_batch + ic * p.ldc + jc;
                }
                macro_kernel(mc, nc, kc, a_resident ? Ap + pc * mcb : Ap, panels, C + ic * p.ldc + jc,
                             p.ldc, e, last ? p.post : nullptr, p.row_base + b * p.M + ic, jc);
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
        const double packs = rows * ceil_div(int64_t(cols), NC) + (p.packed_b ? 0.0 : cols);  // A is repacked per NC block
        const double cost = rows * cols / 8.0 + packs;  // packing an element ~ 8 multiply-adds
        if (best < 0 || cost < best) { best = cost; tm = m; tn = n; }
    }
}

bool whole_matrices_per_thread(const Problem &p, int nt) {
    return nt == 1 || (p.batch >= nt && (p.batch % nt == 0 || p.batch >= 4 * nt));
}

void run_thread(const Problem &p, int tid, int nt) {
    // Split the batch when it divides well (or is large): no packing is
    // shared, each thread runs whole matrices. Otherwise split every matrix.
    if (whole_matrices_per_thread(p, nt)) {
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

// Threads that would split the rows of C share one packed copy of B rather than each
// packing its own (the copies cost as much as the products at 2 threads on 1024^3), as
// long as the copy stays this small.
constexpr int64_t kSharedBMaxFloats = int64_t(4) << 20;  // 16 MiB
#ifdef _OPENMP
thread_local Scratch tls_shared_b;  // the calling thread's, kept across calls

// Panels [q0, q1) of every K slice of B_b, in the layout of aotc_sgemm_pack_b.
void pack_panels(const Problem &p, int64_t b, int64_t q0, int64_t q1, float *packed) {
    const float *B = p.B + b * p.sb_batch;
    const int64_t kcb = k_slice(p.K), npad = round_up(p.N, NR);
    for (int64_t pc = 0; pc < p.K; pc += kcb) {
        const int64_t kc = std::min(kcb, p.K - pc);
        for (int64_t q = q0; q < q1; ++q)
            pack_b(B + pc * p.sb_k + q * NR * p.sb_n, p.sb_k, p.sb_n, kc,
                   std::min(NR, p.N - q * NR), packed + pc * npad + q * NR * kc);
    }
}

// Work that a team hands out one piece at a time: a thread that the scheduler holds back
// (other work on a shared machine) takes fewer pieces instead of holding up the rest.
struct TeamQueue {
    std::atomic<int64_t> next_pack{0}, packed{0}, next_rows{0};
};

// A team sharing one B (one matrix, or a batch reading the same B): the threads pack
// its panels a few at a time, wait until all are packed, then take blocks of rows of C
// (of every matrix of the batch) until none are left.
void run_shared_one_b(const Problem &p, float *packed, TeamQueue &queue) {
    const int64_t panels = ceil_div(p.N, NR);
    const int64_t per_chunk = std::max<int64_t>(1, ceil_div(panels, 16));
    const int64_t chunks = ceil_div(panels, per_chunk);
    for (int64_t c; (c = queue.next_pack.fetch_add(1)) < chunks;) {
        pack_panels(p, 0, c * per_chunk, std::min(panels, (c + 1) * per_chunk), packed);
        queue.packed.fetch_add(1, std::memory_order_release);
    }
    for (int spins = 0; queue.packed.load(std::memory_order_acquire) < chunks; ++spins)
        if (spins > 64) std::this_thread::yield();
    Problem q = p;
    q.packed_b = packed;
    // Blocks at most as tall as one thread's M block (see gemm_range): no more passes
    // over B than a single thread makes. With one matrix, as many blocks as a multiple
    // of the team, so that no thread takes one more block than another (384 rows: 4
    // blocks of 96 on 2 threads rather than 3 of 132, one thread computing two).
    const int64_t nt = omp_get_num_threads();
    const int64_t min_blocks = ceil_div(p.M, MC);
    const int64_t blocks = p.batch == 1 ? round_up(min_blocks, nt) : min_blocks;
    const int64_t rows = round_up(ceil_div(p.M, blocks), MR);
    const int64_t per_matrix = ceil_div(p.M, rows);
    for (int64_t u; (u = queue.next_rows.fetch_add(1)) < p.batch * per_matrix;) {
        const int64_t b = u / per_matrix, m0 = u % per_matrix * rows;
        gemm_range(q, b, m0, std::min(p.M, m0 + rows), 0, p.N);
    }
}

// The team packs each matrix's B once, side by side, then multiplies it packed.
void run_shared_b(const Problem &p, float *packed, int tid, int nt) {
    const int64_t panels = ceil_div(p.N, NR);
    for (int64_t b = 0; b < p.batch; ++b) {
        pack_panels(p, b, panels * tid / nt, panels * (tid + 1) / nt, packed);
#pragma omp barrier
        Problem q = p;  // this matrix alone
        q.packed_b = packed;
        q.batch = 1;
        q.row_base = b * p.M;
        q.A += b * p.sa_batch;
        q.C += b * p.sc_batch;
        if (q.residual) q.residual += b * p.sc_batch;  // laid out as C
        if (q.bias) q.bias += b * p.sbias_batch;
        run_thread(q, tid, nt);
#pragma omp barrier  // every thread is done with this B before the next is packed
    }
}

// Whether a team of nt would pack B more than once, and sharing one copy pays.
bool share_b(const Problem &p, int nt) {
    if (p.packed_b || whole_matrices_per_thread(p, nt)) return false;
    int64_t tm = 1, tn = nt;
    choose_grid(p, nt, tm, tn);
    return tm > 1 && p.K * round_up(p.N, NR) <= kSharedBMaxFloats;
}
#endif

// Split-K: when C is too small for the grid to give every thread a fair share but K is
// long, the team splits K instead. The units of work are (matrix, K slice) pairs, the K
// slices those of the packed layout (k_slice: a prepacked B's slice is a whole packed
// block, so a unit is an ordinary one-slice problem); threads take units one at a time
// and each unit's product alone (alpha 1, no bias, no epilogue) goes to its own block of
// the calling thread's scratch. After a barrier, the threads split the rows of C and
// reduce: each element is alpha * (((P0 + P1) + P2) + ...) over its matrix's slices in
// order, then beta*bias, then the epilogue once. Which thread computed which unit, and
// how many threads there are, do not change a bit of the result.
#ifdef _OPENMP
constexpr int64_t kSplitKMaxFloats = int64_t(2) << 20;  // partial sums kept: 8 MiB
thread_local Scratch tls_partials;  // the calling thread's, kept across calls

// Slowest thread's cost, in multiply-add-like units, of the tm x tn grid (a row tile costs
// about its rows plus 2 for loading B; columns in 8-lane steps) against split-K.
bool split_k(const Problem &p, int nt) {
    if (nt < 2 || whole_matrices_per_thread(p, nt) || p.K < 2 * KC) return false;
    const int64_t kcb = k_slice(p.K), slices = ceil_div(p.K, kcb), units = p.batch * slices;
    if (units < nt || units * p.M * p.N > kSplitKMaxFloats) return false;
    int64_t tm = 1, tn = nt;
    choose_grid(p, nt, tm, tn);
    const int64_t mb = ceil_div(p.M, MR), nb = ceil_div(p.N, NR);
    const int64_t rows = std::min(p.M, ceil_div(mb, tm) * MR), cols = std::min(p.N, ceil_div(nb, tn) * NR);
    const double grid = double(p.batch) * double(rows + 2 * ceil_div(rows, MR)) * double(round_up(cols, 8)) * double(p.K);
    const double split = double(ceil_div(units, nt)) * double(p.M + 2 * mb) * double(round_up(p.N, 8)) * double(kcb)
        + 8.0 * double(units) * double(p.M * p.N) / nt + 1.0e5;  // the reduction, the barrier
    return split < 0.9 * grid;
}

// One thread of the split-K team (see above): units from the queue, then its
// share of the rows of C (matrices one after another).
void run_split_k(const Problem &p, float *partials, std::atomic<int64_t> &next, int tid, int nt) {
    const int64_t kcb = k_slice(p.K), slices = ceil_div(p.K, kcb), mn = p.M * p.N;
    const int64_t npad = round_up(p.N, NR);
    for (int64_t u; (u = next.fetch_add(1)) < p.batch * slices;) {
        const int64_t b = u / slices, pc = u % slices * kcb;
        Problem q = p;
        q.batch = 1;
        q.K = std::min(kcb, p.K - pc);
        q.A = p.A + b * p.sa_batch + pc * p.sa_k;
        if (p.packed_b) q.packed_b = p.packed_b + pc * npad;  // one whole slice of the layout
        else q.B = p.B + b * p.sb_batch + pc * p.sb_k;
        q.C = partials + u * mn;
        q.ldc = p.N;
        q.bias = nullptr;
        q.alpha = 1.0f;
        q.beta = 0.0f;
        q.post = nullptr;
        q.act = aotc_conv_act::NONE;  // partial sums: the reduction finishes them
        q.residual = nullptr;
        gemm_range(q, 0, 0, p.M, 0, p.N);
    }
#pragma omp barrier
    const int64_t total = p.batch * p.M, r0 = total * tid / nt, r1 = total * (tid + 1) / nt;
    for (int64_t r = r0; r < r1;) {
        const int64_t b = r / p.M, m0 = r % p.M, m1 = std::min(p.M, m0 + (r1 - r));
        for (int64_t m = m0; m < m1; ++m) {
            // summed into the first slice's row (this thread's alone): C is written once
            float *part = partials + b * slices * mn + m * p.N;
            float *c = p.C + b * p.sc_batch + m * p.ldc;
            for (int64_t s = 1; s < slices; ++s)
                for (int64_t n = 0; n < p.N; ++n) part[n] += part[s * mn + n];
            const float *bias = p.bias ? p.bias + b * p.sbias_batch + m * p.sbias_m : nullptr;
            for (int64_t n = 0; n < p.N; ++n)
                c[n] = bias ? p.alpha * part[n] + p.beta * bias[n * p.sbias_n] : p.alpha * part[n];
        }
        finish(p, b, m0, 0, m1 - m0, p.N);
        r += m1 - m0;
    }
}
#endif

void run(const Problem &p) {
#ifdef _OPENMP
    const double flops = 2.0 * double(p.batch) * double(p.M) * double(p.N) * double(p.K);
    const double b_bytes = 4.0 * double(p.K) * double(p.N) *
                           double(p.packed_b || p.sb_batch == 0 ? 1 : p.batch);
    const double work = std::max(flops / kMinFlopsPerThread, b_bytes / kMinBBytesPerThread);
    const int want = int(std::min<double>(omp_get_max_threads(), std::max(1.0, work)));
    if (want > 1) {
        float *partials = split_k(p, want)
            ? tls_partials.get(static_cast<size_t>(p.batch * ceil_div(p.K, k_slice(p.K)) * p.M * p.N)) : nullptr;
        if (partials) {
            std::atomic<int64_t> next{0};
#pragma omp parallel num_threads(want)
            run_split_k(p, partials, next, omp_get_thread_num(), omp_get_num_threads());
            return;
        }
        // The team may be smaller than requested (nesting, dynamic threads):
        // every thread derives the same split from the actual team size.
        float *shared = share_b(p, want)
            ? tls_shared_b.get(static_cast<size_t>(p.K * round_up(p.N, NR))) : nullptr;
        if (shared && (p.sb_batch == 0 || p.batch == 1)) {
            TeamQueue queue;
#pragma omp parallel num_threads(want)
            run_shared_one_b(p, shared, queue);
            return;
        }
        if (shared) {
#pragma omp parallel num_threads(want)
            run_shared_b(p, shared, omp_get_thread_num(), omp_get_num_threads());
            return;
        }
#pragma omp parallel num_threads(want)
        run_thread(p, omp_get_thread_num(), omp_get_num_threads());
        return;
    }
#endif
    run_thread(p, 0, 1);
}

void with_activation(Problem &p, const aotc_gemm_activation *act) {
    if (!act) return;
    p.act = act->kind, p.lo = act->lo, p.hi = act->hi;
    p.residual = act->residual;
}

// C = beta*bias (or 0): the empty sum of K == 0.
void bias_only(const Problem &p) {
    for (int64_t b = 0; b < p.batch; ++b)
        for (int64_t m = 0; m < p.M; ++m)
            for (int64_t n = 0; n < p.N; ++n)
                p.C[b * p.sc_batch + m * p.ldc + n] =
                    p.bias ? p.beta * p.bias[b * p.sbias_batch + m * p.sbias_m + n * p.sbias_n] : 0.0f;
    for (int64_t b = 0; b < p.batch; ++b) finish(p, b, 0, 0, p.M, p.N);
}

// Every entry point's product: B as given or prepacked (packed_b), finished by the epilogue
// callback or the residual and activation (or neither).
void product(int64_t batch, int64_t M, int64_t N, int64_t K, const float *A, int64_t sa_batch,
             int64_t sa_m, int64_t sa_k, const float *B, int64_t sb_batch, int64_t sb_k,
             int64_t sb_n, const float *packed_b, float *C, int64_t sc_batch, int64_t ldc,
             const float *bias, int64_t sbias_batch, int64_t sbias_m, int64_t sbias_n,
             float alpha, float beta, const aotc_gemm_epilogue *epilogue,
             const aotc_gemm_activation *act) {
    if (batch <= 0 || M <= 0 || N <= 0) return;
    Problem p{batch, M, N, K, A, sa_batch, sa_m, sa_k, B, sb_batch, sb_k, sb_n,
              C, sc_batch, ldc, bias, sbias_batch, sbias_m, sbias_n, alpha, beta};
    p.packed_b = packed_b;
    p.post = epilogue && epilogue->fn ? epilogue : nullptr;
    with_activation(p, act);
    if (K <= 0) return bias_only(p);
    run(p);
}
}  // namespace

extern "C" void aotc_sgemm_batched(int64_t batch, int64_t M, int64_t N, int64_t K,
                                   const float *A, int64_t sa_batch, int64_t sa_m, int64_t sa_k,
                                   const float *B, int64_t sb_batch, int64_t sb_k, int64_t sb_n,
                                   float *C, int64_t sc_batch, int64_t ldc,
                                   const float *bias, int64_t sbias_batch, int64_t sbias_m,
                                   int64_t sbias_n, float alpha, float beta) {
    product(batch, M, N, K, A, sa_batch, sa_m, sa_k, B, sb_batch, sb_k, sb_n, nullptr, C,
            sc_batch, ldc, bias, sbias_batch, sbias_m, sbias_n, alpha, beta, nullptr, nullptr);
}

extern "C" void aotc_sgemm_fused(int64_t batch, int64_t M, int64_t N, int64_t K,
                                 const float *A, int64_t sa_batch, int64_t sa_m, int64_t sa_k,
                                 const float *B, int64_t sb_batch, int64_t sb_k, int64_t sb_n,
                                 float *C, int64_t sc_batch, int64_t ldc,
                                 const float *bias, int64_t sbias_batch, int64_t sbias_m,
                                 int64_t sbias_n, float alpha, float beta,
                                 const aotc_gemm_epilogue *epilogue) {
    product(batch, M, N, K, A, sa_batch, sa_m, sa_k, B, sb_batch, sb_k, sb_n, nullptr, C,
            sc_batch, ldc, bias, sbias_batch, sbias_m, sbias_n, alpha, beta, epilogue, nullptr);
}

extern "C" void aotc_sgemm_act(int64_t batch, int64_t M, int64_t N, int64_t K,
                               const float *A, int64_t sa_batch, int64_t sa_m, int64_t sa_k,
                               const float *B, int64_t sb_batch, int64_t sb_k, int64_t sb_n,
                               float *C, int64_t sc_batch, int64_t ldc,
                               const float *bias, int64_t sbias_batch, int64_t sbias_m,
                               int64_t sbias_n, float alpha, float beta,
                               const aotc_gemm_activation *act) {
    product(batch, M, N, K, A, sa_batch, sa_m, sa_k, B, sb_batch, sb_k, sb_n, nullptr, C,
            sc_batch, ldc, bias, sbias_batch, sbias_m, sbias_n, alpha, beta, nullptr, act);
}

extern "C" void aotc_sgemm(int64_t M, int64_t N, int64_t K, const float *A, int64_t sa_m,
                           int64_t sa_k, const float *B, int64_t sb_k, int64_t sb_n, float *C,
                           int64_t ldc, const float *bias, int64_t sbias_m, int64_t sbias_n,
                           float alpha, float beta) {
    aotc_sgemm_batched(1, M, N, K, A, 0, sa_m, sa_k, B, 0, sb_k, sb_n, C, 0, ldc, bias, 0,
                       sbias_m, sbias_n, alpha, beta);
}

extern "C" void aotc_sgemm_packed_layout(int64_t *nr, int64_t *kc) {
    if (nr) *nr = NR;
    if (kc) *kc = KC;
}

extern "C" int64_t aotc_sgemm_packed_floats(int64_t K, int64_t N) {
    return K > 0 && N > 0 ? K * round_up(N, NR) : 0;
}

extern "C" void aotc_sgemm_pack_b(int64_t K, int64_t N, const float *B, int64_t sb_k,
                                  int64_t sb_n, float *packed) {
    if (K <= 0 || N <= 0) return;
    const int64_t kcb = k_slice(K);
    for (int64_t pc = 0; pc < K; pc += kcb)
        pack_b(B + pc * sb_k, sb_k, sb_n, std::min(kcb, K - pc), N,
               packed + pc * round_up(N, NR));
}

extern "C" void aotc_sgemm_prepacked(int64_t batch, int64_t M, int64_t N, int64_t K,
                                     const float *A, int64_t sa_batch, int64_t sa_m,
                                     int64_t sa_k, const float *packed_b, float *C,
                                     int64_t sc_batch, int64_t ldc, const float *bias,
                                     int64_t sbias_batch, int64_t sbias_m, int64_t sbias_n,
                                     float alpha, float beta,
                                     const aotc_gemm_epilogue *epilogue) {
    product(batch, M, N, K, A, sa_batch, sa_m, sa_k, nullptr, 0, 0, 0, packed_b, C, sc_batch,
            ldc, bias, sbias_batch, sbias_m, sbias_n, alpha, beta, epilogue, nullptr);
}

extern "C" void aotc_sgemm_prepacked_act(int64_t batch, int64_t M, int64_t N, int64_t K,
                                         const float *A, int64_t sa_batch, int64_t sa_m,
                                         int64_t sa_k, const float *packed_b, float *C,
                                         int64_t sc_batch, int64_t ldc, const float *bias,
                                         int64_t sbias_batch, int64_t sbias_m, int64_t sbias_n,
                                         float alpha, float beta,
                                         const aotc_gemm_activation *act) {
    product(batch, M, N, K, A, sa_batch, sa_m, sa_k, nullptr, 0, 0, 0, packed_b, C, sc_batch,
            ldc, bias, sbias_batch, sbias_m, sbias_n, alpha, beta, nullptr, act);
}
