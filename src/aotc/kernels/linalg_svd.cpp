// Singular value decomposition of batches of small contiguous row-major matrices (see
// aotc_kernels.h): one-sided Jacobi (Hestenes) in double, which orthogonalizes the columns
// of the tall orientation of a matrix pairwise until every pair is orthogonal to working
// precision; the column norms are the singular values, the normalized columns the left
// singular vectors, the accumulated rotations the right ones. Singular vectors are defined
// up to their sign (eager's follow LAPACK's algorithm): aotc's left vector has its largest
// component positive. Left vectors of zero singular values and the extra columns of
// full_matrices complete an orthonormal basis, from the unit vectors that stay longest
// after projecting out the others. Every matrix of a batch is done by one thread front to
// back, so a result never depends on the thread count.

#include "aotc_kernels.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <vector>

namespace {

constexpr int64_t kParallelMin = 4096;  // elements of work below which one thread runs
constexpr int kMaxSweeps = 60;

double dot(int64_t n, const double *x, const double *y) {
    double s = 0;
    for (int64_t i = 0; i < n; ++i) s += x[i] * y[i];
    return s;
}

// w: c columns of length r (column j at w + j*r); v (or null): c columns of length c,
// set to the accumulated rotations. Sweeps until no pair is rotated.
void jacobi_columns(int64_t r, int64_t c, double *w, double *v) {
    if (v != nullptr)
        for (int64_t i = 0; i < c * c; ++i) v[i] = i % (c + 1) == 0 ? 1.0 : 0.0;
    const double tol = double(std::max<int64_t>(r, 1)) * DBL_EPSILON;
    for (int sweep = 0; sweep < kMaxSweeps; ++sweep) {
        bool rotated = false;
        for (int64_t p = 0; p < c; ++p)
            for (int64_t q = p + 1; q < c; ++q) {
                double *wp = w + p * r, *wq = w + q * r;
                const double alpha = dot(r, wp, wp), beta = dot(r, wq, wq);
                const double gamma = dot(r, wp, wq);
                if (!(std::fabs(gamma) > tol * std::sqrt(alpha * beta))) continue;  // and NaN
                rotated = true;
                const double zeta = (beta - alpha) / (2.0 * gamma);
                const double t = (zeta >= 0 ? 1.0 : -1.0) /
                                 (std::fabs(zeta) + std::sqrt(1.0 + zeta * zeta));
                const double cs = 1.0 / std::sqrt(1.0 + t * t), sn = cs * t;
                for (int64_t i = 0; i < r; ++i) {
                    const double x = wp[i], y = wq[i];
                    wp[i] = cs * x - sn * y;
                    wq[i] = sn * x + cs * y;
                }
                if (v == nullptr) continue;
                double *vp = v + p * c, *vq = v + q * c;
                for (int64_t i = 0; i < c; ++i) {
                    const double x = vp[i], y = vq[i];
                    vp[i] = cs * x - sn * y;
                    vq[i] = sn * x + cs * y;
                }
            }
        if (!rotated) break;
    }
}

// Makes column j of u (columns of length r) orthogonal to columns 0..j-1 (twice, as
// classical Gram-Schmidt needs for working precision); its remaining length.
double orthogonalize(int64_t r, int64_t j, double *u) {
    double *x = u + j * r;
    for (int pass = 0; pass < 2; ++pass)
        for (int64_t i = 0; i < j; ++i) {
            const double *y = u + i * r;
            const double s = dot(r, x, y);
            for (int64_t t = 0; t < r; ++t) x[t] -= s * y[t];
        }
    return std::sqrt(dot(r, x, x));
}

// Column j of u set to the unit vector that stays longest after projecting out columns
// 0..j-1, projected and normalized: an orthonormal completion.
void complete(int64_t r, int64_t j, double *u) {
    double *x = u + j * r;
    int64_t best = 0;
    double best_len = -1;
    for (int64_t e = 0; e < r; ++e) {
        for (int64_t t = 0; t < r; ++t) x[t] = t == e ? 1.0 : 0.0;
        const double len = orthogonalize(r, j, u);
        if (len > best_len + 1e-12) {
            best_len = len;
            best = e;
        }
    }
    for (int64_t t = 0; t < r; ++t) x[t] = t == best ? 1.0 : 0.0;
    const double len = orthogonalize(r, j, u);
    for (int64_t t = 0; t < r; ++t) x[t] /= len;
}

// Flips column j of u (length r) and of v (length c) so that u's largest component is
// positive (the first of equal ones).
void fix_sign(int64_t r, int64_t c, double *u, double *v) {
    int64_t big = 0;
    for (int64_t t = 1; t < r; ++t)
        if (std::fabs(u[t]) > std::fabs(u[big])) big = t;
    if (!(u[big] < 0)) return;
    for (int64_t t = 0; t < r; ++t) u[t] = -u[t];
    if (v != nullptr)
        for (int64_t t = 0; t < c; ++t) v[t] = -v[t];
}

// One m x n matrix `a` (row-major) into `out` (layout in aotc_kernels.h). The work happens
// on its tall orientation: r = max(m, n) rows, c = min(m, n) columns, a^T when m < n.
template <typename T>
void svd_one(int64_t m, int64_t n, bool full, bool vectors, const T *a, T *out) {
    const bool tall = m >= n;
    const int64_t r = tall ? m : n, c = tall ? n : m, k = c;
    const int64_t ucols = full ? r : c;  // orthonormal columns of length r kept
    std::vector<double> w(size_t(r * c)), v(vectors ? size_t(c * c) : 0),
        u(vectors ? size_t(r * ucols) : 0), s(static_cast<size_t>(c));
    for (int64_t j = 0; j < c; ++j)  // column j of the tall orientation
        for (int64_t i = 0; i < r; ++i)
            w[size_t(j * r + i)] = double(tall ? a[i * n + j] : a[j * n + i]);
    jacobi_columns(r, c, w.data(), vectors ? v.data() : nullptr);
    for (int64_t j = 0; j < c; ++j) s[size_t(j)] = std::sqrt(dot(r, &w[size_t(j * r)], &w[size_t(j * r)]));
    std::vector<int64_t> order(static_cast<size_t>(c));
    for (int64_t j = 0; j < c; ++j) order[size_t(j)] = j;
    std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) {
        return s[size_t(x)] > s[size_t(y)] || (std::isnan(s[size_t(x)]) && !std::isnan(s[size_t(y)]));
    });
    for (int64_t j = 0; j < k; ++j) out[j] = T(s[size_t(order[size_t(j)])]);
    if (!vectors) return;
    std::vector<double> vs(size_t(c * c));  // the right vectors in singular value order
    std::vector<bool> missing(size_t(ucols), true);
    for (int64_t j = 0; j < c; ++j) {
        const int64_t o = order[size_t(j)];
        const double sigma = s[size_t(o)];
        double *uj = &u[size_t(j * r)];
        std::copy(&v[size_t(o * c)], &v[size_t(o * c)] + c, &vs[size_t(j * c)]);
        if (!(sigma > 0) || !std::isfinite(sigma)) continue;
        for (int64_t t = 0; t < r; ++t) uj[t] = w[size_t(o * r + t)] / sigma;
        const double len = orthogonalize(r, j, u.data());
        if (len > 0.5) {  // else: lost to rounding (sigma at the noise level), completed below
            for (int64_t t = 0; t < r; ++t) uj[t] /= len;
            missing[size_t(j)] = false;
        } else {
            std::fill(uj, uj + r, 0.0);
        }
    }
    // the completion must stay orthogonal to every found column: found ones first
    std::vector<double> found(u);
    int64_t next = 0;
    std::vector<int64_t> slot(static_cast<size_t>(ucols));
    for (int64_t j = 0; j < ucols; ++j)
        if (!missing[size_t(j)]) {
            std::copy(&found[size_t(j * r)], &found[size_t(j * r)] + r, &u[size_t(next * r)]);
            slot[size_t(j)] = next++;
        }
    for (int64_t j = 0; j < ucols; ++j)
        if (missing[size_t(j)]) {
            complete(r, next, u.data());
            slot[size_t(j)] = next++;
        }
    for (int64_t j = 0; j < k; ++j) fix_sign(r, c, &u[size_t(slot[size_t(j)] * r)], &vs[size_t(j * c)]);
    for (int64_t j = k; j < ucols; ++j) fix_sign(r, 0, &u[size_t(slot[size_t(j)] * r)], nullptr);
    // tall: U = u [m, ucols], Vh = vs^T [c, c]; wide: U = vs [m, m], Vh = u^T [ucols, n]
    const int64_t mu = tall ? ucols : c, nv = tall ? c : ucols;
    T *uo = out + k, *vho = uo + m * mu;
    for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < mu; ++j)
            uo[i * mu + j] = T(tall ? u[size_t(slot[size_t(j)] * r + i)] : vs[size_t(j * c + i)]);
    for (int64_t i = 0; i < nv; ++i)
        for (int64_t j = 0; j < n; ++j)
            vho[i * n + j] = T(tall ? vs[size_t(i * c + j)] : u[size_t(slot[size_t(i)] * r + j)]);
}

template <typename T>
void svd(int64_t batch, int64_t m, int64_t n, int32_t full, int32_t vectors, const T *a,
         T *out) {
    const int64_t k = std::min(m, n);
    const int64_t each = k + (vectors ? m * (full ? m : k) + (full ? n : k) * n : 0);
#pragma omp parallel for if (batch > 1 && batch * m * n * k >= kParallelMin)
    for (int64_t b = 0; b < batch; ++b)
        svd_one(m, n, full != 0, vectors != 0, a + b * m * n, out + b * each);
}

}  // namespace

extern "C" {
void aotc_svd_f32(int64_t batch, int64_t m, int64_t n, int32_t full, int32_t vectors,
                  const float *a, float *out) {
    svd(batch, m, n, full, vectors, a, out);
}
void aotc_svd_f64(int64_t batch, int64_t m, int64_t n, int32_t full, int32_t vectors,
                  const double *a, double *out) {
    svd(batch, m, n, full, vectors, a, out);
}
}
