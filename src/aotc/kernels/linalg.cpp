// Dense linear algebra on batches of small contiguous row-major matrices (see
// aotc_kernels.h): LU with partial pivoting and the solves on it, Cholesky, triangular
// solves, the permutation matrix of a pivot sequence, and Householder QR. Every matrix of a
// batch is done by one thread front to back, so a result never depends on the thread
// count. The algorithms are the unblocked ones LAPACK's getf2 / getrs / potf2 / trsm /
// geqr2 / org2r / orm2r describe (the pivot is the first row of largest magnitude; a zero
// pivot sets info and the elimination goes on without it; a reflector's beta has the
// opposite sign of its alpha), in the element type throughout. LU, its solves, Cholesky,
// the triangular solves, the permutation matrix, QR and eigh also take complex64 and
// complex128 matrices (std::complex, interleaved pairs): the pivot is then the element of
// largest |re| + |im| (LAPACK's izamax), Cholesky factors a Hermitian matrix (A = L L^H, the
// diagonal's imaginary parts not read), a solve may take A^H, QR follows zgeqr2 / zung2r /
// zunm2r (a complex tau, a real beta), and eigh diagonalizes a Hermitian matrix (complex
// Jacobi in complex<double>, real eigenvalues).

#include "aotc_kernels.h"
#include "aotc_linalg_complex.h"

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

namespace {

using aotc_linalg::cx;

// ---- the element type's scalar operations, real or complex ---------------------------
template <typename T>
struct Scalar {  // float, double
    using Real = T;
    static T conj(T x) { return x; }
    static Real pivot_size(T x) { return std::fabs(x); }
    static Real real(T x) { return x; }
    static Real imag(T) { return T(0); }
    static Real abs2(T x) { return x * x; }  // |x|^2
    static T make(Real re, Real) { return re; }  // re + i im (im dropped)
    // x / |x|: 1, -1, 0 (NaN stays NaN)
    static T unit(T x) { return x > T(0) ? T(1) : (x < T(0) ? T(-1) : (x == T(0) ? T(0) : x)); }
};
template <typename R>
struct Scalar<std::complex<R>> {
    using T = std::complex<R>;
    using Real = R;
    static T conj(T x) { return std::conj(x); }
    static Real pivot_size(T x) { return std::fabs(x.real()) + std::fabs(x.imag()); }
    static Real real(T x) { return x.real(); }
    static Real imag(T x) { return x.imag(); }
    static Real abs2(T x) { return std::norm(x); }
    static T make(Real re, Real im) { return T(re, im); }
    static T unit(T x) {
        const R a = std::abs(x);
        return a == R(0) ? T(0) : (std::isnan(a) ? T(a, a) : x / a);
    }
};

// how a solve reads its matrix: as it is, transposed, or conjugate-transposed (A^H; A^T
// for a real matrix)
enum Trans : int32_t { kNone = 0, kTranspose = 1, kAdjoint = 2 };

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
    using S = Scalar<T>;
    using R = typename S::Real;
    int64_t info = 0, swaps = 0;
    T det = T(1), sign = T(1);
    R logabs = R(0);
    for (int64_t j = 0; j < k; ++j) {
        int64_t p = j;
        R best = S::pivot_size(lu[j * n + j]);
        for (int64_t i = j + 1; i < m; ++i) {
            const R v = S::pivot_size(lu[i * n + j]);
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
            sign *= S::unit(u);
            logabs += std::log(std::abs(u));
        }
        if (swaps % 2) {
            det = -det;
            sign = -sign;
        }
    }
    extra[0] = T(info);
    extra[1] = det;
    extra[2] = sign;
    extra[3] = T(logabs);
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
// or upper, read as `trans` says, its diagonal taken as 1 with `unit`.
template <typename T>
void triangular_solve(int64_t n, int64_t k, const T *a, bool lower, int32_t trans, bool unit,
                      T *x) {
    // element (i, j) of the triangle as it is solved
    auto at = [&](int64_t i, int64_t j) {
        return trans == kNone ? a[i * n + j]
                              : (trans == kAdjoint ? Scalar<T>::conj(a[j * n + i]) : a[j * n + i]);
    };
    const bool forward = lower != (trans != kNone);  // the solved matrix is lower triangular
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
void lu_solve(int64_t batch, int64_t n, int64_t k, int32_t trans, const T *lu,
              const int32_t *piv, const T *b, T *x) {
    for_batch(batch, n * n * k, [&](int64_t e) {
        const T *a = lu + e * n * n;
        const int32_t *p = piv + e * n;
        T *xe = x + e * n * k;
        std::memcpy(xe, b + e * n * k, sizeof(T) * n * k);
        if (trans == kNone) {  // A = P L U: x = U^-1 L^-1 P^T b
            permute_rows(n, k, p, xe, false);
            triangular_solve(n, k, a, true, kNone, true, xe);
            triangular_solve(n, k, a, false, kNone, false, xe);
        } else {  // A^T = U^T L^T P^T: x = P L^-T U^-T b (A^H likewise)
            triangular_solve(n, k, a, false, trans, false, xe);
            triangular_solve(n, k, a, true, trans, true, xe);
            permute_rows(n, k, p, xe, true);
        }
    });
}

// The lower Cholesky factor of one n x n matrix from its lower triangle (layout in
// aotc_kernels.h); a non-positive or NaN pivot at column j stops it with info = j + 1.
template <typename T>
void cholesky_one(int64_t n, const T *a, T *out) {
    using S = Scalar<T>;
    using R = typename S::Real;
    T *l = out;
    std::fill(l, l + n * n, T(0));
    int64_t info = 0;
    for (int64_t j = 0; j < n && info == 0; ++j) {
        const T *lj = l + j * n;
        R d = S::real(a[j * n + j]);
        for (int64_t c = 0; c < j; ++c) d -= S::real(lj[c] * S::conj(lj[c]));
        if (!(d > R(0))) {
            info = j + 1;
            l[j * n + j] = T(d);
            break;
        }
        const R root = std::sqrt(d);
        l[j * n + j] = T(root);
        for (int64_t i = j + 1; i < n; ++i) {
            const T *li = l + i * n;
            T s = a[i * n + j];
            for (int64_t c = 0; c < j; ++c) s -= li[c] * S::conj(lj[c]);
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
        std::fill(out, out + m * m, T(0));
        for (int64_t r = 0; r < m; ++r) out[r * m + r] = T(1);
        for (int64_t i = 0; i < k; ++i) {
            const int64_t q = int64_t(pe[i]) - 1;
            if (q != i && q >= 0 && q < m)
                for (int64_t r = 0; r < m; ++r) std::swap(out[r * m + i], out[r * m + q]);
        }
    });
}


// ---- Householder QR (LAPACK's geqr2 / ung2r / unm2r conventions) ----------------------
// Reflector j of a factored [m, ldv] matrix: H_j = I - tau_j v v^H, v = (0.., 1, v[j+1..m-1, j])
// (v^T for a real matrix). H_j is unitary but, for a complex tau, not Hermitian: H_j^H is
// the reflector with conj(tau_j), which the callers pass where they apply H_j^H.

// c [rows of the reflector, cols] <- (I - tau v v^H) c, over the columns [c0, cols) of a
// row-major c with row stride ldc; w: cols scratch values
template <typename T>
void reflect_left(int64_t m, int64_t j, const T *v, int64_t ldv, T tau, T *c, int64_t ldc,
                  int64_t c0, int64_t cols, T *w) {
    using S = Scalar<T>;
    if (tau == T(0)) return;
    for (int64_t q = c0; q < cols; ++q) w[q] = c[j * ldc + q];  // w = v^H c (v_j = 1)
    for (int64_t i = j + 1; i < m; ++i) {
        const T vi = S::conj(v[i * ldv + j]);
        const T *ci = c + i * ldc;
        for (int64_t q = c0; q < cols; ++q) w[q] += vi * ci[q];
    }
    for (int64_t q = c0; q < cols; ++q) c[j * ldc + q] -= tau * w[q];  // c -= tau v w
    for (int64_t i = j + 1; i < m; ++i) {
        const T tv = tau * v[i * ldv + j];
        T *ci = c + i * ldc;
        for (int64_t q = c0; q < cols; ++q) ci[q] -= tv * w[q];
    }
}

// c [rows, n] <- c (I - tau v v^H) (acting on c's columns j..n-1)
template <typename T>
void reflect_right(int64_t n, int64_t j, const T *v, int64_t ldv, T tau, T *c, int64_t rows) {
    using S = Scalar<T>;
    if (tau == T(0)) return;
    for (int64_t r = 0; r < rows; ++r) {
        T *cr = c + r * n;
        T s = cr[j];  // s = c_r v
        for (int64_t i = j + 1; i < n; ++i) s += cr[i] * v[i * ldv + j];
        cr[j] -= tau * s;  // c_r -= tau s v^H
        for (int64_t i = j + 1; i < n; ++i) cr[i] -= tau * s * S::conj(v[i * ldv + j]);
    }
}

// One m x n matrix `a` -> out: R and the reflectors (m*n), then the min(m, n) taus. Each
// reflector as LAPACK's larfg makes it: for the column's alpha = x[0] and the norm of the
// rest, H^H x = (beta, 0, ..) with a real beta of the sign opposite to re(alpha); H = I when
// the rest is zero and alpha is real (tau = 0). The trailing columns get H^H.
template <typename T>
void geqrf_one(int64_t m, int64_t n, const T *a, T *out, T *w) {
    using S = Scalar<T>;
    using R = typename S::Real;
    const int64_t k = std::min(m, n);
    T *r = out;
    T *tau = out + m * n;
    std::copy(a, a + m * n, r);
    for (int64_t j = 0; j < k; ++j) {
        const T alpha = r[j * n + j];
        R xnorm = R(0);
        for (int64_t i = j + 1; i < m; ++i) xnorm += S::abs2(r[i * n + j]);
        xnorm = std::sqrt(xnorm);
        if (xnorm == R(0) && S::imag(alpha) == R(0)) {  // H_j = I
            tau[j] = T(0);
            continue;
        }
        const R re = S::real(alpha);
        const R beta = -std::copysign(std::hypot(std::abs(alpha), xnorm), re);
        // tau = (beta - alpha) / beta: (beta - re) / beta, -im / beta
        tau[j] = S::make(beta - re, -S::imag(alpha)) / beta;
        const T scale = T(1) / (alpha - beta);
        for (int64_t i = j + 1; i < m; ++i) r[i * n + j] *= scale;
        r[j * n + j] = T(1);
        reflect_left(m, j, r, n, S::conj(tau[j]), r, n, j + 1, n, w);  // H_j^H
        r[j * n + j] = T(beta);
    }
}

// q [m, cols] = the first cols columns of H_0 H_1 ... H_{k-1}
template <typename T>
void householder_product_one(int64_t m, int64_t cols, int64_t k, int64_t ldv, const T *v,
                             const T *tau, T *q, T *w) {
    std::fill(q, q + m * cols, T(0));
    for (int64_t i = 0; i < std::min(m, cols); ++i) q[i * cols + i] = T(1);
    for (int64_t j = k - 1; j >= 0; --j) reflect_left(m, j, v, ldv, tau[j], q, cols, 0, cols, w);
}

// c [m, n] <- Q c, Q^H c, c Q or c Q^H (`trans` not kNone: Q^T for a real Q) for
// Q = H_0 ... H_{k-1} of v [left ? m : n, k]
template <typename T>
void ormqr_one(int64_t m, int64_t n, int64_t k, int32_t left, int32_t trans, const T *v,
               const T *tau, T *c, T *w) {
    // Q c and c Q^H apply H_{k-1} first; Q^H c and c Q apply H_0 first; Q^H = H_{k-1}^H ..
    // H_0^H, each H_j^H the reflector with conj(tau_j)
    const bool backward = (left != 0) != (trans != kNone);
    for (int64_t s = 0; s < k; ++s) {
        const int64_t j = backward ? k - 1 - s : s;
        const T t = trans != kNone ? Scalar<T>::conj(tau[j]) : tau[j];
        if (left)
            reflect_left(m, j, v, k, t, c, n, 0, n, w);
        else
            reflect_right(n, j, v, k, t, c, m);
    }
}

// ---- symmetric / Hermitian eigen decomposition: cyclic Jacobi in double ----------------
// T: double (symmetric) or std::complex<double> (Hermitian). One n x n matrix from its lower
// triangle (the diagonal's imaginary parts not read) -> n real eigenvalues ascending, and
// the n x n matrix whose column j is eigenvector j (unit length), its largest component
// (the first of equal ones) real and positive. work: 2 n^2 + n values.
//
// Each step zeroes a_pq with the unitary G = P R acting on rows and columns p and q: P =
// diag(1 at p, conj(e) at q), e = a_pq / |a_pq| the phase of a_pq, makes the 2x2 block
// [[a_pp, a_pq], [conj(a_pq), a_qq]] real symmetric ([[a_pp, |a_pq|], [|a_pq|, a_qq]]),
// and the real rotation R = [[c, s], [-s, c]] diagonalizes it: A <- G^H A G, V <- V G.
// A real matrix keeps e = 1 and its signed a_pq.
template <typename T>
void eigh_one(int64_t n, const T *a_lower, double *values, T *vectors, T *work) {
    using S = Scalar<T>;
    T *a = work, *v = work + n * n, *d = work + 2 * n * n;
    for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < n; ++j) {  // the whole Hermitian matrix
            const T lower = i > j ? a_lower[i * n + j] : S::conj(a_lower[j * n + i]);
            a[i * n + j] = i == j ? T(S::real(lower)) : lower;
            v[i * n + j] = i == j ? T(1) : T(0);
        }
    double total = 0;
    for (int64_t t = 0; t < n * n; ++t) total += S::abs2(a[t]);
    for (int sweep = 0; sweep < 60; ++sweep) {
        double off = 0;
        for (int64_t p = 0; p < n; ++p)
            for (int64_t q = p + 1; q < n; ++q) off += S::abs2(a[p * n + q]);
        if (!(off > 1e-32 * total)) break;  // also stops on NaN
        for (int64_t p = 0; p < n; ++p)
            for (int64_t q = p + 1; q < n; ++q) {
                const T apq = a[p * n + q];
                if (apq == T(0)) continue;
                // e and the block's off-diagonal conj(e) a_pq: |a_pq| (a_pq when real)
                const T e = std::is_same<T, double>::value ? T(1) : apq / T(std::abs(apq));
                const T ec = S::conj(e);
                const double g = std::is_same<T, double>::value ? S::real(apq) : std::abs(apq);
                const double theta = (S::real(a[q * n + q]) - S::real(a[p * n + p])) / (2.0 * g);
                const double t = (theta >= 0 ? 1.0 : -1.0) /
                                 (std::fabs(theta) + std::sqrt(theta * theta + 1.0));
                const double c = 1.0 / std::sqrt(t * t + 1.0), s = t * c;
                for (int64_t k = 0; k < n; ++k) {  // columns p and q: A G
                    const T akp = a[k * n + p], akq = ec * a[k * n + q];
                    a[k * n + p] = c * akp - s * akq;
                    a[k * n + q] = s * akp + c * akq;
                }
                for (int64_t k = 0; k < n; ++k) {  // rows p and q: G^H A
                    const T apk = a[p * n + k], aqk = e * a[q * n + k];
                    a[p * n + k] = c * apk - s * aqk;
                    a[q * n + k] = s * apk + c * aqk;
                }
                for (int64_t k = 0; k < n; ++k) {  // V G
                    const T vkp = v[k * n + p], vkq = ec * v[k * n + q];
                    v[k * n + p] = c * vkp - s * vkq;
                    v[k * n + q] = s * vkp + c * vkq;
                }
            }
    }
    for (int64_t i = 0; i < n; ++i) d[i] = T(S::real(a[i * n + i]));
    auto value = [&](int64_t i) { return S::real(d[i]); };
    std::vector<int64_t> order(size_t(n), 0);
    for (int64_t i = 0; i < n; ++i) order[size_t(i)] = i;
    std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) {
        return value(x) < value(y) || (!std::isnan(value(x)) && std::isnan(value(y)));
    });
    for (int64_t j = 0; j < n; ++j) {  // ascending, NaN last
        const int64_t best = order[size_t(j)];
        values[j] = value(best);
        int64_t big = 0;
        for (int64_t k = 1; k < n; ++k)
            if (std::abs(v[k * n + best]) > std::abs(v[big * n + best])) big = k;
        // the unit phase making the largest component real positive (a sign when real)
        const double size = std::abs(v[big * n + best]);
        const T phase = size > 0 ? S::conj(v[big * n + best]) / T(size) : T(1);
        for (int64_t k = 0; k < n; ++k) vectors[k * n + j] = phase * v[k * n + best];
    }
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
            triangular_solve(n, k, a + e * n * n, lower != 0, trans, unit != 0, xe);        \
        });                                                                                  \
    }                                                                                        \
    void aotc_geqrf_##suffix(int64_t batch, int64_t m, int64_t n, const T *a, T *out) {      \
        const int64_t each = m * n + std::min(m, n);                                        \
        for_batch(batch, m * n * n, [&](int64_t e) {                                        \
            std::vector<T> w(size_t(n) + 1);                                                \
            geqrf_one(m, n, a + e * m * n, out + e * each, w.data());                       \
        });                                                                                  \
    }                                                                                        \
    void aotc_householder_product_##suffix(int64_t batch, int64_t m, int64_t cols,          \
                                           int64_t k, int64_t ldv, const T *v, const T *tau, \
                                           T *q) {                                           \
        for_batch(batch, m * cols * k, [&](int64_t e) {                                     \
            std::vector<T> w(size_t(cols) + 1);                                             \
            householder_product_one(m, cols, k, ldv, v + e * m * ldv, tau + e * k,          \
                                    q + e * m * cols, w.data());                            \
        });                                                                                  \
    }                                                                                        \
    void aotc_ormqr_##suffix(int64_t batch, int64_t m, int64_t n, int64_t k, int32_t left,  \
                             int32_t trans, const T *v, const T *tau, const T *c, T *out) { \
        const int64_t rows = left ? m : n;                                                  \
        for_batch(batch, m * n * k, [&](int64_t e) {                                        \
            std::vector<T> w(size_t(n) + 1);                                                \
            T *oe = out + e * m * n;                                                        \
            std::memcpy(oe, c + e * m * n, sizeof(T) * m * n);                             \
            ormqr_one(m, n, k, left, trans, v + e * rows * k, tau + e * k, oe, w.data());   \
        });                                                                                  \
    }                                                                                        \
    void aotc_eigh_##suffix(int64_t batch, int64_t n, const T *a, T *out) {                 \
        for_batch(batch, n * n * n, [&](int64_t e) {                                        \
            std::vector<double> buf(size_t(4 * n * n + 2 * n));                             \
            double *in = buf.data(), *vals = in + n * n, *vecs = vals + n;                  \
            for (int64_t t = 0; t < n * n; ++t) in[t] = double(a[e * n * n + t]);            \
            eigh_one(n, in, vals, vecs, vecs + n * n);                                      \
            T *oe = out + e * (n + n * n);                                                  \
            for (int64_t t = 0; t < n + n * n; ++t) oe[t] = T(vals[t]);                      \
        });                                                                                  \
    }                                                                                        \
    void aotc_lu_permutation_##suffix(int64_t batch, int64_t m, int64_t k,                  \
                                      const int32_t *pivots, T *p) {                        \
        permutation(batch, m, k, pivots, p);                                                \
    }

// complex64 / complex128: pointers to interleaved (real, imag) pairs of R
#define AOTC_LINALG_COMPLEX_DEFINE(suffix, R)                                                \
    void aotc_lu_factor_##suffix(int64_t batch, int64_t m, int64_t n, const R *a, R *out) { \
        const int64_t each = m * n + std::min(m, n) + AOTC_LU_EXTRA;                        \
        for_batch(batch, m * n * std::min(m, n), [&](int64_t e) {                           \
            lu_factor_one(m, n, cx(a) + e * m * n, cx(out) + e * each);                     \
        });                                                                                  \
    }                                                                                        \
    void aotc_lu_solve_##suffix(int64_t batch, int64_t n, int64_t k, int32_t trans,         \
                                const R *lu, const int32_t *pivots, const R *b, R *x) {     \
        lu_solve(batch, n, k, trans, cx(lu), pivots, cx(b), cx(x));                         \
    }                                                                                        \
    void aotc_cholesky_##suffix(int64_t batch, int64_t n, const R *a, R *out) {             \
        for_batch(batch, n * n * n, [&](int64_t e) {                                        \
            cholesky_one(n, cx(a) + e * n * n, cx(out) + e * (n * n + 1));                  \
        });                                                                                  \
    }                                                                                        \
    void aotc_triangular_solve_##suffix(int64_t batch, int64_t n, int64_t k, int32_t lower, \
                                        int32_t trans, int32_t unit, const R *a, const R *b, \
                                        R *x) {                                              \
        using T = std::complex<R>;                                                           \
        for_batch(batch, n * n * k, [&](int64_t e) {                                        \
            T *xe = cx(x) + e * n * k;                                                      \
            std::copy(cx(b) + e * n * k, cx(b) + (e + 1) * n * k, xe);                      \
            triangular_solve(n, k, cx(a) + e * n * n, lower != 0, trans, unit != 0, xe);    \
        });                                                                                  \
    }                                                                                        \
    void aotc_lu_permutation_##suffix(int64_t batch, int64_t m, int64_t k,                  \
                                      const int32_t *pivots, R *p) {                        \
        permutation(batch, m, k, pivots, cx(p));                                            \
    }                                                                                        \
    void aotc_geqrf_##suffix(int64_t batch, int64_t m, int64_t n, const R *a, R *out) {      \
        const int64_t each = m * n + std::min(m, n);                                        \
        for_batch(batch, m * n * n, [&](int64_t e) {                                        \
            std::vector<std::complex<R>> w(size_t(n) + 1);                                  \
            geqrf_one(m, n, cx(a) + e * m * n, cx(out) + e * each, w.data());               \
        });                                                                                  \
    }                                                                                        \
    void aotc_householder_product_##suffix(int64_t batch, int64_t m, int64_t cols,          \
                                           int64_t k, int64_t ldv, const R *v, const R *tau, \
                                           R *q) {                                           \
        for_batch(batch, m * cols * k, [&](int64_t e) {                                     \
            std::vector<std::complex<R>> w(size_t(cols) + 1);                               \
            householder_product_one(m, cols, k, ldv, cx(v) + e * m * ldv, cx(tau) + e * k,  \
                                    cx(q) + e * m * cols, w.data());                        \
        });                                                                                  \
    }                                                                                        \
    void aotc_ormqr_##suffix(int64_t batch, int64_t m, int64_t n, int64_t k, int32_t left,  \
                             int32_t trans, const R *v, const R *tau, const R *c, R *out) { \
        const int64_t rows = left ? m : n;                                                  \
        for_batch(batch, m * n * k, [&](int64_t e) {                                        \
            std::vector<std::complex<R>> w(size_t(n) + 1);                                  \
            std::complex<R> *oe = cx(out) + e * m * n;                                      \
            std::copy(cx(c) + e * m * n, cx(c) + (e + 1) * m * n, oe);                      \
            ormqr_one(m, n, k, left, trans, cx(v) + e * rows * k, cx(tau) + e * k, oe,      \
                      w.data());                                                            \
        });                                                                                  \
    }                                                                                        \
    /* in complex<double>; the eigenvalues are written as complex values (v, 0) */           \
    void aotc_eigh_##suffix(int64_t batch, int64_t n, const R *a, R *out) {                 \
        using Z = std::complex<double>;                                                      \
        for_batch(batch, n * n * n, [&](int64_t e) {                                        \
            std::vector<Z> buf(size_t(4 * n * n + n));                                      \
            std::vector<double> vals(static_cast<size_t>(n));                               \
            Z *in = buf.data(), *vecs = in + n * n;                                         \
            for (int64_t t = 0; t < n * n; ++t) in[t] = Z(cx(a)[e * n * n + t]);             \
            eigh_one(n, in, vals.data(), vecs, vecs + n * n);                               \
            std::complex<R> *oe = cx(out) + e * (n + n * n);                                \
            for (int64_t t = 0; t < n; ++t) oe[t] = std::complex<R>(R(vals[size_t(t)]));    \
            for (int64_t t = 0; t < n * n; ++t) oe[n + t] = std::complex<R>(vecs[t]);       \
        });                                                                                  \
    }


extern "C" {
AOTC_LINALG_DEFINE(f32, float)
AOTC_LINALG_DEFINE(f64, double)
AOTC_LINALG_COMPLEX_DEFINE(c64, float)
AOTC_LINALG_COMPLEX_DEFINE(c128, double)
}
