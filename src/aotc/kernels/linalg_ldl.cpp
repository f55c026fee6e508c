// LDL^T factorization of batches of small symmetric row-major matrices with Bunch-Kaufman
// diagonal pivoting, and the solves on it (see aotc_kernels.h): the unblocked algorithms
// LAPACK's sytf2 and sytrs describe for the lower triangle, so that the factors and pivots
// are the ones eager's ldl_factor returns. A pivot is a 1x1 block when the diagonal element
// is large enough against its column (alpha = (1 + sqrt(17)) / 8), else a 2x2 block;
// pivots are 1-based, a 2x2 block's two entries both -p. A zero column sets info and the
// elimination goes on. Every matrix of a batch is done by one thread front to back, so a
// result never depends on the thread count.

#include "aotc_kernels.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <utility>

namespace {

constexpr int64_t kParallelMin = 4096;  // elements of work below which one thread runs

// One n x n matrix from its lower triangle into out: LD (n*n, zero above the diagonal),
// n pivots as values, then info.
template <typename T>
void ldl_factor_one(int64_t n, const T *a, T *out) {
    T *ld = out, *piv = out + n * n, *info_out = piv + n;
    for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < n; ++j) ld[i * n + j] = j <= i ? a[i * n + j] : T(0);
    auto at = [&](int64_t i, int64_t j) -> T & { return ld[i * n + j]; };  // i >= j
    const T alpha = T((1.0 + std::sqrt(17.0)) / 8.0);
    int64_t info = 0;
    for (int64_t k = 0; k < n;) {
        int64_t step = 1, kp = k;
        const T absakk = std::fabs(at(k, k));
        int64_t imax = k;
        T colmax = T(0);
        for (int64_t i = k + 1; i < n; ++i)
            if (std::fabs(at(i, k)) > colmax) {
                colmax = std::fabs(at(i, k));
                imax = i;
            }
        if (std::max(absakk, colmax) == T(0) || std::isnan(absakk)) {
            if (info == 0) info = k + 1;
        } else {
            if (!(absakk >= alpha * colmax)) {
                T rowmax = T(0);  // the largest off-diagonal of row/column imax
                for (int64_t j = k; j < imax; ++j)
                    rowmax = std::max(rowmax, std::fabs(at(imax, j)));
                for (int64_t i = imax + 1; i < n; ++i)
                    rowmax = std::max(rowmax, std::fabs(at(i, imax)));
                if (absakk >= alpha * colmax * (colmax / rowmax)) {
                    kp = k;
                } else if (std::fabs(at(imax, imax)) >= alpha * rowmax) {
                    kp = imax;
                } else {
                    kp = imax;
                    step = 2;
                }
            }
            const int64_t kk = k + step - 1;
            if (kp != kk) {  // rows and columns kk and kp of the trailing matrix swapped
                for (int64_t i = kp + 1; i < n; ++i) std::swap(at(i, kk), at(i, kp));
                for (int64_t j = kk + 1; j < kp; ++j) std::swap(at(j, kk), at(kp, j));
                std::swap(at(kk, kk), at(kp, kp));
                if (step == 2) std::swap(at(k + 1, k), at(kp, k));
            }
            if (step == 1) {
                const T d11 = T(1) / at(k, k);
                for (int64_t j = k + 1; j < n; ++j) {
                    const T xj = at(j, k);
                    for (int64_t i = j; i < n; ++i) at(i, j) -= at(i, k) * (d11 * xj);
                }
                for (int64_t i = k + 1; i < n; ++i) at(i, k) *= d11;
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
            piv[k] = T(kp + 1);
        } else {
            piv[k] = piv[k + 1] = T(-(kp + 1));
        }
        k += step;
    }
    *info_out = T(info);
}

template <typename T>
void swap_rows(int64_t k, T *b, int64_t r1, int64_t r2) {
    if (r1 != r2)
        for (int64_t c = 0; c < k; ++c) std::swap(b[r1 * k + c], b[r2 * k + c]);
}

// b [n, k] overwritten with x solving A x = b from A's LD and 1-based int32 pivots.
template <typename T>
void ldl_solve_one(int64_t n, int64_t k, const T *ld, const int32_t *piv, T *b) {
    auto at = [&](int64_t i, int64_t j) { return ld[i * n + j]; };
    for (int64_t r = 0; r < n;) {  // L D y = b
        if (piv[r] > 0) {
            swap_rows(k, b, r, int64_t(piv[r]) - 1);
            for (int64_t i = r + 1; i < n; ++i)
                for (int64_t c = 0; c < k; ++c) b[i * k + c] -= at(i, r) * b[r * k + c];
            for (int64_t c = 0; c < k; ++c) b[r * k + c] /= at(r, r);
            r += 1;
        } else {
            swap_rows(k, b, r + 1, int64_t(-piv[r]) - 1);
            for (int64_t i = r + 2; i < n; ++i)
                for (int64_t c = 0; c < k; ++c)
                    b[i * k + c] -= at(i, r) * b[r * k + c] + at(i, r + 1) * b[(r + 1) * k + c];
            const T off = at(r + 1, r);
            const T d1 = at(r, r) / off, d2 = at(r + 1, r + 1) / off;
            const T denom = d1 * d2 - T(1);
            for (int64_t c = 0; c < k; ++c) {
                const T b1 = b[r * k + c] / off, b2 = b[(r + 1) * k + c] / off;
                b[r * k + c] = (d2 * b1 - b2) / denom;
                b[(r + 1) * k + c] = (d1 * b2 - b1) / denom;
            }
            r += 2;
        }
    }
    for (int64_t r = n - 1; r >= 0;) {  // L^T x = y
        const int64_t width = piv[r] > 0 ? 1 : 2;
        for (int64_t w = 0; w < width; ++w) {
            const int64_t row = r - w;
            for (int64_t i = r + 1; i < n; ++i)
                for (int64_t c = 0; c < k; ++c) b[row * k + c] -= at(i, row) * b[i * k + c];
        }
        swap_rows(k, b, r, int64_t(piv[r] > 0 ? piv[r] : -piv[r]) - 1);
        r -= width;
    }
}

}  // namespace

#define AOTC_LDL_DEFINE(suffix, T)                                                            \
    void aotc_ldl_factor_##suffix(int64_t batch, int64_t n, const T *a, T *out) {            \
        _Pragma("omp parallel for if (batch > 1 && batch * n * n * n >= kParallelMin)")        \
        for (int64_t e = 0; e < batch; ++e)                                                  \
            ldl_factor_one(n, a + e * n * n, out + e * (n * n + n + 1));                     \
    }                                                                                         \
    void aotc_ldl_solve_##suffix(int64_t batch, int64_t n, int64_t k, const T *ld,           \
                                 const int32_t *pivots, const T *b, T *x) {                  \
        _Pragma("omp parallel for if (batch > 1 && batch * n * n * k >= kParallelMin)")        \
        for (int64_t e = 0; e < batch; ++e) {                                                \
            T *xe = x + e * n * k;                                                           \
            std::memcpy(xe, b + e * n * k, sizeof(T) * n * k);                              \
            ldl_solve_one(n, k, ld + e * n * n, pivots + e * n, xe);                         \
        }                                                                                     \
    }

extern "C" {
AOTC_LDL_DEFINE(f32, float)
AOTC_LDL_DEFINE(f64, double)
}
