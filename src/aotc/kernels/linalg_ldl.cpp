// LDL^T factorization of batches of small symmetric row-major matrices with Bunch-Kaufman
// diagonal pivoting, and the solves on it (see aotc_kernels.h): the unblocked algorithms
// LAPACK's sytf2 and sytrs describe for the lower triangle, so that the factors and pivots
// are the ones eager's ldl_factor returns. A pivot is a 1x1 block when the diagonal element
// is large enough against its column (alpha = (1 + sqrt(17)) / 8), else a 2x2 block;
// pivots are 1-based, a 2x2 block's two entries both -p. A zero column sets info and the
// elimination goes on. complex64 / complex128 matrices (std::complex, interleaved pairs)
// are complex symmetric (A = L D L^T: zsytf2 / zsytrs, sizes compared as |re| + |im|) or,
// with `hermitian`, Hermitian (A = L D L^H: zhetf2 / zhetrs, the diagonal's imaginary parts
// not read and D's diagonal real, a 2x2 block Hermitian). Every matrix of a batch is done
// by one thread front to back, so a result never depends on the thread count.

#include "aotc_kernels.h"
#include "aotc_linalg_complex.h"

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <utility>

namespace {

using aotc_linalg::cx;

constexpr int64_t kParallelMin = 4096;  // elements of work below which one thread runs

// The element type's scalar operations; `herm` (complex only) asks for the Hermitian ones.
template <typename T>
struct Scalar {  // float, double: symmetric, whatever `herm` says
    using Real = T;
    static constexpr bool kComplex = false;
    static Real size(T x) { return std::fabs(x); }  // LAPACK's cabs1 / abs
    static T conj(T x, bool) { return x; }
    static Real real(T x) { return x; }
};
template <typename R>
struct Scalar<std::complex<R>> {
    using T = std::complex<R>;
    using Real = R;
    static constexpr bool kComplex = true;
    static Real size(T x) { return std::fabs(x.real()) + std::fabs(x.imag()); }
    static T conj(T x, bool herm) { return herm ? std::conj(x) : x; }
    static Real real(T x) { return x.real(); }
};

// One n x n matrix from its lower triangle into out: LD (n*n, zero above the diagonal),
// n pivots as values, then info. `herm`: the Hermitian factorization of a complex matrix.
template <typename T>
void ldl_factor_one(int64_t n, bool herm, const T *a, T *out) {
    using S = Scalar<T>;
    using R = typename S::Real;
    herm = herm && S::kComplex;
    T *ld = out, *piv = out + n * n, *info_out = piv + n;
    for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < n; ++j) ld[i * n + j] = j <= i ? a[i * n + j] : T(0);
    auto at = [&](int64_t i, int64_t j) -> T & { return ld[i * n + j]; };  // i >= j
    auto re = [](T x) { return T(S::real(x)); };  // x with its imaginary part dropped
    auto hc = [](T x) { return S::conj(x, true); };  // conj (the Hermitian branches')
    // the size a diagonal element is pivoted on: |re| of a Hermitian one
    auto diag_size = [&](T x) { return herm ? std::fabs(S::real(x)) : S::size(x); };
    const R alpha = R((1.0 + std::sqrt(17.0)) / 8.0);
    int64_t info = 0;
    for (int64_t k = 0; k < n;) {
        int64_t step = 1, kp = k;
        const R absakk = diag_size(at(k, k));
        int64_t imax = k;
        R colmax = R(0);
        for (int64_t i = k + 1; i < n; ++i)
            if (S::size(at(i, k)) > colmax) {
                colmax = S::size(at(i, k));
                imax = i;
            }
        if (std::max(absakk, colmax) == R(0) || std::isnan(absakk)) {
            if (info == 0) info = k + 1;
            if (herm) at(k, k) = re(at(k, k));
        } else {
            if (!(absakk >= alpha * colmax)) {
                R rowmax = R(0);  // the largest off-diagonal of row/column imax
                for (int64_t j = k; j < imax; ++j) rowmax = std::max(rowmax, S::size(at(imax, j)));
                for (int64_t i = imax + 1; i < n; ++i)
                    rowmax = std::max(rowmax, S::size(at(i, imax)));
                if (absakk >= alpha * colmax * (colmax / rowmax)) {
                    kp = k;
                } else if (diag_size(at(imax, imax)) >= alpha * rowmax) {
                    kp = imax;
                } else {
                    kp = imax;
                    step = 2;
                }
            }
            const int64_t kk = k + step - 1;
            if (kp != kk) {  // rows and columns kk and kp of the trailing matrix swapped
                for (int64_t i = kp + 1; i < n; ++i) std::swap(at(i, kk), at(i, kp));
                // (j, kk) and (kp, j) mirror each other across the swap: conjugated if Hermitian
                for (int64_t j = kk + 1; j < kp; ++j) {
                    const T t = S::conj(at(j, kk), herm);
                    at(j, kk) = S::conj(at(kp, j), herm);
                    at(kp, j) = t;
                }
                if (herm) {
                    at(kp, kk) = hc(at(kp, kk));
                    const T r1 = re(at(kk, kk));
                    at(kk, kk) = re(at(kp, kp));
                    at(kp, kp) = r1;
                    if (step == 2) at(k, k) = re(at(k, k));
                } else {
                    std::swap(at(kk, kk), at(kp, kp));
                }
                if (step == 2) std::swap(at(k + 1, k), at(kp, k));
            } else if (herm) {
                at(k, k) = re(at(k, k));
                if (step == 2) at(k + 1, k + 1) = re(at(k + 1, k + 1));
            }
            if (step == 1 && herm) {
                // A := A - x (1/d) x^H of the trailing matrix (zher), x = column k, d real
                const R r1 = R(1) / S::real(at(k, k));
                for (int64_t j = k + 1; j < n; ++j) {
                    const T xj = at(j, k);
                    if (xj == T(0)) {
                        at(j, j) = re(at(j, j));
                        continue;
                    }
                    const T temp = -r1 * hc(xj);
                    at(j, j) = T(S::real(at(j, j)) + S::real(xj * temp));
                    for (int64_t i = j + 1; i < n; ++i) at(i, j) += at(i, k) * temp;
                }
                for (int64_t i = k + 1; i < n; ++i) at(i, k) *= r1;
            } else if (step == 1) {
                const T d11 = T(1) / at(k, k);
                for (int64_t j = k + 1; j < n; ++j) {
                    const T xj = at(j, k);
                    for (int64_t i = j; i < n; ++i) at(i, j) -= at(i, k) * (d11 * xj);
                }
                for (int64_t i = k + 1; i < n; ++i) at(i, k) *= d11;
            } else if (k < n - 2 && herm) {
                // the 2x2 block [[d_kk, conj(d21)], [d21, d_k1k1]] (zhetf2), scaled by |d21|
                R d = std::abs(at(k + 1, k));
                const R d11 = S::real(at(k + 1, k + 1)) / d, d22 = S::real(at(k, k)) / d;
                const R tt = R(1) / (d11 * d22 - R(1));
                const T d21 = at(k + 1, k) / d;
                d = tt / d;
                for (int64_t j = k + 2; j < n; ++j) {
                    const T wk = d * (d11 * at(j, k) - d21 * at(j, k + 1));
                    const T wkp1 = d * (d22 * at(j, k + 1) - hc(d21) * at(j, k));
                    for (int64_t i = j; i < n; ++i)
                        at(i, j) = at(i, j) - at(i, k) * hc(wk) -
                                   at(i, k + 1) * hc(wkp1);
                    at(j, k) = wk;
                    at(j, k + 1) = wkp1;
                    at(j, j) = re(at(j, j));
                }
            } else if (k < n - 2) {
                T d21 = at(k + 1, k);
                const T d11 = at(k + 1, k + 1) / d21, d22 = at(k, k) / d21;
                const T t = T(1) / (d11 * d22 - T(1));
                d21 = t / d21;
                for (int64_t j = k + 2; j < n; ++j) {
                    const T wk = d21 * (d11 * at(j, k) - at(j, k + 1));
                    const T wkp1 = d21 * (d22 * at(j, k + 1) - at(j, k));
                    for (int64_t i = j; i < n; ++i)
                        at(i, j) = at(i, j) - at(i, k) * wk - at(i, k + 1) * wkp1;
                    at(j, k) = wk;
                    at(j, k + 1) = wkp1;
                }
            }
        }
        if (step == 1) {
            piv[k] = T(R(kp + 1));
        } else {
            piv[k] = piv[k + 1] = T(R(-(kp + 1)));
        }
        k += step;
    }
    *info_out = T(R(info));
}

template <typename T>
void swap_rows(int64_t k, T *b, int64_t r1, int64_t r2) {
    if (r1 != r2)
        for (int64_t c = 0; c < k; ++c) std::swap(b[r1 * k + c], b[r2 * k + c]);
}

// b [n, k] overwritten with x solving A x = b from A's LD and 1-based int32 pivots;
// `herm`: A = L D L^H of a complex matrix (zhetrs), else L D L^T.
template <typename T>
void ldl_solve_one(int64_t n, int64_t k, bool herm, const T *ld, const int32_t *piv, T *b) {
    using S = Scalar<T>;
    herm = herm && S::kComplex;
    auto at = [&](int64_t i, int64_t j) { return ld[i * n + j]; };
    auto cj = [&](T x) { return S::conj(x, herm); };
    for (int64_t r = 0; r < n;) {  // L D y = b
        if (piv[r] > 0) {
            swap_rows(k, b, r, int64_t(piv[r]) - 1);
            for (int64_t i = r + 1; i < n; ++i)
                for (int64_t c = 0; c < k; ++c) b[i * k + c] -= at(i, r) * b[r * k + c];
            // a Hermitian D's diagonal is real
            const T d = herm ? T(S::real(at(r, r))) : at(r, r);
            for (int64_t c = 0; c < k; ++c) b[r * k + c] /= d;
            r += 1;
        } else {
            swap_rows(k, b, r + 1, int64_t(-piv[r]) - 1);
            for (int64_t i = r + 2; i < n; ++i)
                for (int64_t c = 0; c < k; ++c)
                    b[i * k + c] -= at(i, r) * b[r * k + c] + at(i, r + 1) * b[(r + 1) * k + c];
            // the block [[d1, conj(off)], [off, d2]] when Hermitian, [[d1, off], [off, d2]]
            const T off = at(r + 1, r);
            const T d1 = at(r, r) / cj(off), d2 = at(r + 1, r + 1) / off;
            const T denom = d1 * d2 - T(1);
            for (int64_t c = 0; c < k; ++c) {
                const T b1 = b[r * k + c] / cj(off), b2 = b[(r + 1) * k + c] / off;
                b[r * k + c] = (d2 * b1 - b2) / denom;
                b[(r + 1) * k + c] = (d1 * b2 - b1) / denom;
            }
            r += 2;
        }
    }
    for (int64_t r = n - 1; r >= 0;) {  // L^T x = y (L^H when Hermitian)
        const int64_t width = piv[r] > 0 ? 1 : 2;
        for (int64_t w = 0; w < width; ++w) {
            const int64_t row = r - w;
            for (int64_t i = r + 1; i < n; ++i)
                for (int64_t c = 0; c < k; ++c) b[row * k + c] -= cj(at(i, row)) * b[i * k + c];
        }
        swap_rows(k, b, r, int64_t(piv[r] > 0 ? piv[r] : -piv[r]) - 1);
        r -= width;
    }
}

template <typename T>
void ldl_factor(int64_t batch, int64_t n, bool herm, const T *a, T *out) {
#pragma omp parallel for if (batch > 1 && batch * n * n * n >= kParallelMin)
    for (int64_t e = 0; e < batch; ++e)
        ldl_factor_one(n, herm, a + e * n * n, out + e * (n * n + n + 1));
}

template <typename T>
void ldl_solve(int64_t batch, int64_t n, int64_t k, bool herm, const T *ld,
               const int32_t *pivots, const T *b, T *x) {
#pragma omp parallel for if (batch > 1 && batch * n * n * k >= kParallelMin)
    for (int64_t e = 0; e < batch; ++e) {
        T *xe = x + e * n * k;
        std::copy(b + e * n * k, b + (e + 1) * n * k, xe);
        ldl_solve_one(n, k, herm, ld + e * n * n, pivots + e * n, xe);
    }
}


}  // namespace

#define AOTC_LDL_DEFINE(suffix, T)                                                            \
    void aotc_ldl_factor_##suffix(int64_t batch, int64_t n, const T *a, T *out) {            \
        ldl_factor(batch, n, false, a, out);                                                 \
    }                                                                                         \
    void aotc_ldl_solve_##suffix(int64_t batch, int64_t n, int64_t k, const T *ld,           \
                                 const int32_t *pivots, const T *b, T *x) {                  \
        ldl_solve(batch, n, k, false, ld, pivots, b, x);                                     \
    }

// complex64 / complex128: interleaved (real, imag) pairs of R
#define AOTC_LDL_COMPLEX_DEFINE(suffix, R)                                                    \
    void aotc_ldl_factor_##suffix(int64_t batch, int64_t n, int32_t hermitian, const R *a,  \
                                  R *out) {                                                  \
        ldl_factor(batch, n, hermitian != 0, cx(a), cx(out));                                \
    }                                                                                         \
    void aotc_ldl_solve_##suffix(int64_t batch, int64_t n, int64_t k, int32_t hermitian,    \
                                 const R *ld, const int32_t *pivots, const R *b, R *x) {     \
        ldl_solve(batch, n, k, hermitian != 0, cx(ld), pivots, cx(b), cx(x));                \
    }

extern "C" {
AOTC_LDL_DEFINE(f32, float)
AOTC_LDL_DEFINE(f64, double)
AOTC_LDL_COMPLEX_DEFINE(c64, float)
AOTC_LDL_COMPLEX_DEFINE(c128, double)
}
