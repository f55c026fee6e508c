// Dense linear algebra on batches of small contiguous row-major matrices (see
// aotc_kernels.h): LU with partial pivoting and the solves on it, Cholesky, triangular
// solves and the permutation matrix of a pivot sequence. Every matrix of a batch is done
// by one thread front to back, so a result never depends on the thread count. The
// algorithms are the unblocked ones LAPACK's getf2 / getrs / potf2 / trsm describe (the
// pivot is the first row of largest magnitude; a zero pivot sets info and the elimination
// goes on without it), in the element type throughout.

#include "aotc_kernels.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace {

constexpr int64_t kParallelMin = 4096;  // elements of work below which one thread runs

template <typename F>
void for_batch(int64_t batch, int64_t work, F f) {
#pragma omp parallel for if (batch > 1 && batch * work >= kParallelMin)
    for (int64_t b = 0; b < batch; ++b) f(b);
}

// One m x n matrix `a` factored into `out` (layout in aotc_kernels.h).
template <typename T>
void lu_factor_one(int64_t m, int64_t n, const T *a, T *out) {
    const int64_t k = std::min(m, n);
    T *lu = out;
    T *piv = out + m * n;
    T *extra = piv + k;
    std::memcpy(lu, a, sizeof(T) * m * n);
    int64_t info = 0, swaps = 0;
    T det = T(1), sign = T(1), logabs = T(0);
    for (int64_t j = 0; j < k; ++j) {
        int64_t p = j;
        T best = std::fabs(lu[j * n + j]);
        for (int64_t i = j + 1; i < m; ++i) {
            const T v = std::fabs(lu[i * n + j]);
            if (v > best || (std::isnan(v) && !std::isnan(best))) {
                best = v;
                p = i;
            }
        }
        piv[j] = T(p + 1);
        if (p != j) {
            ++swaps;
            for (int64_t c = 0; c < n; ++c) std::swap(lu[j * n + c], lu[p * n + c]);
        }
        const T pivot = lu[j * n + j];
        if (pivot == T(0)) {
            if (info == 0) info = j + 1;
            continue;
        }
        const T inv = T(1) / pivot;
        const T *row_j = lu + j * n;
        for (int64_t i = j + 1; i < m; ++i) {
            T *row_i = lu + i * n;
            const T l = row_i[j] * inv;
            row_i[j] = l;
            for (int64_t c = j + 1; c < n; ++c) row_i[c] -= l * row_j[c];
        }
    }
    if (m == n) {
        for (int64_t j = 0; j < n; ++j) {
            const T u = lu[j * n + j];
            det *= u;
            sign *= u > T(0) ? T(1) : (u < T(0) ? T(-1) : (u == T(0) ? T(0) : u));
            logabs += std::log(std::fabs(u));
        }
        if (swaps % 2) {
            det = -det;
            sign = -sign;
        }
    }
    extra[0] = T(info);
    extra[1] = det;
    extra[2] = sign;
    extra[3] = logabs;
}

// Row swaps of the pivot sequence applied to the rows of b [n, k], forward or backward.
template <typename T>
void permute_rows(int64_t n, int64_t k, const int32_t *piv, T *b, bool backward) {
    for (int64_t s = 0; s < n; ++s) {
        const int64_t i = backward ? n - 1 - s : s;
        const int64_t p = int64_t(piv[i]) - 1;
        if (p != i && p >= 0 && p < n)
            for (int64_t c = 0; c < k; ++c) std::swap(b[i * k + c], b[p * k + c]);
    }
}

// x [n, k] <- the solution of T x = x for the triangle of a [n, n] (row-major): `lower`
// or upper, read transposed with `trans`, its diagonal taken as 1 with `unit`.
template <typename T>
void triangular_solve(int64_t n, int64_t k, const T *a, bool lower, bool trans, bool unit,
                      T *x) {
    // element (i, j) of the triangle as it is solved
    auto at = [&](int64_t i, int64_t j) { return trans ? a[j * n + i] : a[i * n + j]; };
    const bool forward = lower != trans;  // the solved matrix is lower triangular
    for (int64_t s = 0; s < n; ++s) {
        const int64_t i = forward ? s : n - 1 - s;
        T *xi = x + i * k;
        // the solved rows this one depends on: those before it (forward) or after it
        const int64_t lo = forward ? 0 : i + 1, hi = forward ? i : n;
        for (int64_t j = lo; j < hi; ++j) {
            const T aij = at(i, j);
            const T *xj = x + j * k;
            for (int64_t c = 0; c < k; ++c) xi[c] -= aij * xj[c];
        }
        if (!unit) {
            const T d = at(i, i);
            for (int64_t c = 0; c < k; ++c) xi[c] /= d;
        }
    }
}

template <typename T>
void lu_solve(int64_t batch, int64_t n, int64_t k, int32_t adjoint, const T *lu,
              const int32_t *piv, const T *b, T *x) {
    for_batch(batch, n * n * k, [&](int64_t e) {
        const T *a = lu + e * n * n;
        const int32_t *p = piv + e * n;
        T *xe = x + e * n * k;
        std::memcpy(xe, b + e * n * k, sizeof(T) * n * k);
        if (!adjoint) {  // A = P L U: x = U^-1 L^-1 P^T b
            permute_rows(n, k, p, xe, false);
            triangular_solve(n, k, a, true, false, true, xe);
            triangular_solve(n, k, a, false, false, false, xe);
        } else {  // A^T = U^T L^T P^T: x = P L^-T U^-T b
            triangular_solve(n, k, a, false, true, false, xe);
            triangular_solve(n, k, a, true, true, true, xe);
            permute_rows(n, k, p, xe, true);
        }
    });
}

// The lower Cholesky factor of one n x n matrix from its lower triangle (layout in
// aotc_kernels.h); a non-positive or NaN pivot at column j stops it with info = j + 1.
template <typename T>
void cholesky_one(int64_t n, const T *a, T *out) {
    T *l = out;
    std::memset(l, 0, sizeof(T) * n * n);
    int64_t info = 0;
    for (int64_t j = 0; j < n && info == 0; ++j) {
        const T *lj = l + j * n;
        T d = a[j * n + j];
        for (int64_t c = 0; c < j; ++c) d -= lj[c] * lj[c];
        if (!(d > T(0))) {
            info = j + 1;
            l[j * n + j] = d;
            break;
        }
        const T root = std::sqrt(d);
        l[j * n + j] = root;
        for (int64_t i = j + 1; i < n; ++i) {
            const T *li = l + i * n;
            T s = a[i * n + j];
            for (int64_t c = 0; c < j; ++c) s -= li[c] * lj[c];
            l[i * n + j] = s / root;
        }
    }
    out[n * n] = T(info);
}

template <typename T>
void permutation(int64_t batch, int64_t m, int64_t k, const int32_t *piv, T *p) {
    for_batch(batch, m * m, [&](int64_t e) {
        const int32_t *pe = piv + e * k;
        T *out = p + e * m * m;
        // P = S_0 S_1 ... S_{k-1} (S_i swaps i and pivot i): the identity's columns swapped
        std::memset(out, 0, sizeof(T) * m * m);
        for (int64_t r = 0; r < m; ++r) out[r * m + r] = T(1);
        for (int64_t i = 0; i < k; ++i) {
            const int64_t q = int64_t(pe[i]) - 1;
            if (q != i && q >= 0 && q < m)
                for (int64_t r = 0; r < m; ++r) std::swap(out[r * m + i], out[r * m + q]);
        }
    });
}

}  // namespace

#define AOTC_LINALG_DEFINE(suffix, T)                                                        \
    void aotc_lu_factor_##suffix(int64_t batch, int64_t m, int64_t n, const T *a, T *out) { \
        const int64_t each = m * n + std::min(m, n) + AOTC_LU_EXTRA;                        \
        for_batch(batch, m * n * std::min(m, n),                                            \
                  [&](int64_t e) { lu_factor_one(m, n, a + e * m * n, out + e * each); });   \
    }                                                                                        \
    void aotc_lu_solve_##suffix(int64_t batch, int64_t n, int64_t k, int32_t adjoint,       \
                                const T *lu, const int32_t *pivots, const T *b, T *x) {     \
        lu_solve(batch, n, k, adjoint, lu, pivots, b, x);                                   \
    }                                                                                        \
    void aotc_cholesky_##suffix(int64_t batch, int64_t n, const T *a, T *out) {             \
        for_batch(batch, n * n * n,                                                         \
                  [&](int64_t e) { cholesky_one(n, a + e * n * n, out + e * (n * n + 1)); }); \
    }                                                                                        \
    void aotc_triangular_solve_##suffix(int64_t batch, int64_t n, int64_t k, int32_t lower, \
                                        int32_t trans, int32_t unit, const T *a, const T *b, \
                                        T *x) {                                              \
        for_batch(batch, n * n * k, [&](int64_t e) {                                        \
            T *xe = x + e * n * k;                                                          \
            std::memcpy(xe, b + e * n * k, sizeof(T) * n * k);                             \
            triangular_solve(n, k, a + e * n * n, lower != 0, trans != 0, unit != 0, xe);   \
        });                                                                                  \
    }                                                                                        \
    void aotc_lu_permutation_##suffix(int64_t batch, int64_t m, int64_t k,                  \
                                      const int32_t *pivots, T *p) {                        \
        permutation(batch, m, k, pivots, p);                                                \
    }

extern "C" {
AOTC_LINALG_DEFINE(f32, float)
AOTC_LINALG_DEFINE(f64, double)
}
