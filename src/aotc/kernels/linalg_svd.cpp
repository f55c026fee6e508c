// Singular value decomposition of batches of small contiguous row-major matrices (see
// aotc_kernels.h): one-sided Jacobi (Hestenes) in double, which orthogonalizes the columns
// of the tall orientation of a matrix pairwise until every pair is orthogonal to working
// precision; the column norms are the singular values, the normalized columns the left
// singular vectors, the accumulated rotations the right ones. complex64 / complex128
// matrices (interleaved pairs) are done the same way in complex<double>: a pair of columns
// is rotated by the real Jacobi rotation of |<w_p, w_q>| combined with the phase of
// <w_p, w_q>, and the inner products conjugate their first argument. Singular vectors are
// defined up to a unit factor of each pair (a sign when real; eager's follow LAPACK's
// algorithm): aotc's left vector of the tall orientation has its largest-magnitude
// component real and positive, the right one multiplied by the same factor. Left vectors
// of zero singular values and the extra columns of full_matrices complete an orthonormal
// basis, from the unit vectors that stay longest after projecting out the others. Every
// matrix of a batch is done by one thread front to back, so a result never depends on the
// thread count.

#include "aotc_kernels.h"
#include "aotc_linalg_complex.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <complex>
#include <cstdint>
#include <vector>

namespace {

using aotc_linalg::cx;

constexpr int64_t kParallelMin = 4096;  // elements of work below which one thread runs
constexpr int kMaxSweeps = 60;

using C = std::complex<double>;

// the type a matrix is worked on in: double for real matrices, complex<double> for complex
template <typename T>
struct Work {
    using type = double;
};
template <typename R>
struct Work<std::complex<R>> {
    using type = C;
};

double conj(double x) { return x; }
C conj(C x) { return std::conj(x); }
double real(double x) { return x; }
double real(C x) { return x.real(); }

// <x, y> = sum conj(x_i) y_i
template <typename W>
W dot(int64_t n, const W *x, const W *y) {
    W s = W(0);
    for (int64_t i = 0; i < n; ++i) s += conj(x[i]) * y[i];
    return s;
}

// ||x||^2
template <typename W>
double norm2(int64_t n, const W *x) {
    return real(dot(n, x, x));
}

// gamma / |gamma| for gamma != 0: the sign of a real one (exactly +-1), the phase of a
// complex one
double phase(double gamma) { return gamma >= 0 ? 1.0 : -1.0; }
C phase(C gamma) { return gamma / std::abs(gamma); }

// w: c columns of length r (column j at w + j*r); v (or null): c columns of length c,
// set to the accumulated rotations. Sweeps until no pair is rotated.
template <typename W>
void jacobi_columns(int64_t r, int64_t c, W *w, W *v) {
    if (v != nullptr)
        for (int64_t i = 0; i < c * c; ++i) v[i] = i % (c + 1) == 0 ? W(1) : W(0);
    const double tol = double(std::max<int64_t>(r, 1)) * DBL_EPSILON;
    for (int sweep = 0; sweep < kMaxSweeps; ++sweep) {
        bool rotated = false;
        for (int64_t p = 0; p < c; ++p)
            for (int64_t q = p + 1; q < c; ++q) {
                W *wp = w + p * r, *wq = w + q * r;
                const double alpha = norm2(r, wp), beta = norm2(r, wq);
                const W gamma = dot(r, wp, wq);
                const double g = std::abs(gamma);
                if (!(g > tol * std::sqrt(alpha * beta))) continue;  // and NaN
                rotated = true;
                // With e the phase of gamma, (w_p, conj(e) w_q) has the real inner product
                // g = |gamma|: the real rotation (cs, sn) of g makes it orthogonal, and w_q
                // is multiplied back by e. For a real pair e = +-1: the real Jacobi rotation.
                const W e = phase(gamma);
                const double zeta = (beta - alpha) / (2.0 * g);
                const double t = (zeta >= 0 ? 1.0 : -1.0) /
                                 (std::fabs(zeta) + std::sqrt(1.0 + zeta * zeta));
                const double cs = 1.0 / std::sqrt(1.0 + t * t), sn = cs * t;
                const W sp = sn * conj(e), sq = sn * e;  // the off-diagonal entries
                for (int64_t i = 0; i < r; ++i) {
                    const W x = wp[i], y = wq[i];
                    wp[i] = cs * x - sp * y;
                    wq[i] = sq * x + cs * y;
                }
                if (v == nullptr) continue;
                W *vp = v + p * c, *vq = v + q * c;
                for (int64_t i = 0; i < c; ++i) {
                    const W x = vp[i], y = vq[i];
                    vp[i] = cs * x - sp * y;
                    vq[i] = sq * x + cs * y;
                }
            }
        if (!rotated) break;
    }
}

// Makes column j of u (columns of length r) orthogonal to columns 0..j-1 (twice, as
// classical Gram-Schmidt needs for working precision); its remaining length.
template <typename W>
double orthogonalize(int64_t r, int64_t j, W *u) {
    W *x = u + j * r;
    for (int pass = 0; pass < 2; ++pass)
        for (int64_t i = 0; i < j; ++i) {
            const W *y = u + i * r;
            const W s = dot(r, y, x);  // x -= <y, x> y
            for (int64_t t = 0; t < r; ++t) x[t] -= s * y[t];
        }
    return std::sqrt(norm2(r, x));
}

// Column j of u set to the unit vector that stays longest after projecting out columns
// 0..j-1, projected and normalized: an orthonormal completion.
template <typename W>
void complete(int64_t r, int64_t j, W *u) {
    W *x = u + j * r;
    int64_t best = 0;
    double best_len = -1;
    for (int64_t e = 0; e < r; ++e) {
        for (int64_t t = 0; t < r; ++t) x[t] = t == e ? W(1) : W(0);
        const double len = orthogonalize(r, j, u);
        if (len > best_len + 1e-12) {
            best_len = len;
            best = e;
        }
    }
    for (int64_t t = 0; t < r; ++t) x[t] = t == best ? W(1) : W(0);
    const double len = orthogonalize(r, j, u);
    for (int64_t t = 0; t < r; ++t) x[t] /= len;
}

// Multiplies column j of u (length r) and of v (length c) by one unit factor so that u's
// largest-magnitude component (the first of equal ones) is real and positive: a sign flip
// for real vectors, conj(u_big) / |u_big| for complex ones (u_j v_j^H is unchanged).
void fix_phase(int64_t r, int64_t c, double *u, double *v) {
    int64_t big = 0;
    for (int64_t t = 1; t < r; ++t)
        if (std::fabs(u[t]) > std::fabs(u[big])) big = t;
    if (!(u[big] < 0)) return;
    for (int64_t t = 0; t < r; ++t) u[t] = -u[t];
    if (v != nullptr)
        for (int64_t t = 0; t < c; ++t) v[t] = -v[t];
}
void fix_phase(int64_t r, int64_t c, C *u, C *v) {
    int64_t big = 0;
    for (int64_t t = 1; t < r; ++t)
        if (std::abs(u[t]) > std::abs(u[big])) big = t;
    const double size = std::abs(u[big]);
    if (!(size > 0) || !std::isfinite(size)) return;
    const C f = std::conj(u[big]) / size;
    for (int64_t t = 0; t < r; ++t) u[t] *= f;
    u[big] = C(u[big].real(), 0.0);  // exactly real
    if (v != nullptr)
        for (int64_t t = 0; t < c; ++t) v[t] *= f;
}

// One m x n matrix `a` (row-major) into `out` (layout in aotc_kernels.h; the singular
// values as T, with a zero imaginary part when complex). The work happens on its tall
// orientation: r = max(m, n) rows, c = min(m, n) columns, a^H when m < n (a = U S Vh with
// a^H = Vh^H S U^H).
template <typename T>
void svd_one(int64_t m, int64_t n, bool full, bool vectors, const T *a, T *out) {
    using W = typename Work<T>::type;
    const bool tall = m >= n;
    const int64_t r = tall ? m : n, c = tall ? n : m, k = c;
    const int64_t ucols = full ? r : c;  // orthonormal columns of length r kept
    std::vector<W> w(size_t(r * c)), v(vectors ? size_t(c * c) : 0),
        u(vectors ? size_t(r * ucols) : 0);
    std::vector<double> s(static_cast<size_t>(c));
    for (int64_t j = 0; j < c; ++j)  // column j of the tall orientation
        for (int64_t i = 0; i < r; ++i)
            w[size_t(j * r + i)] = tall ? W(a[i * n + j]) : conj(W(a[j * n + i]));
    jacobi_columns(r, c, w.data(), vectors ? v.data() : nullptr);
    for (int64_t j = 0; j < c; ++j) s[size_t(j)] = std::sqrt(norm2(r, &w[size_t(j * r)]));
    std::vector<int64_t> order(static_cast<size_t>(c));
    for (int64_t j = 0; j < c; ++j) order[size_t(j)] = j;
    std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) {
        return s[size_t(x)] > s[size_t(y)] ||
               (std::isnan(s[size_t(x)]) && !std::isnan(s[size_t(y)]));
    });
    for (int64_t j = 0; j < k; ++j) out[j] = T(s[size_t(order[size_t(j)])]);
    if (!vectors) return;
    std::vector<W> vs(size_t(c * c));  // the right vectors in singular value order
    std::vector<bool> missing(size_t(ucols), true);
    for (int64_t j = 0; j < c; ++j) {
        const int64_t o = order[size_t(j)];
        const double sigma = s[size_t(o)];
        W *uj = &u[size_t(j * r)];
        std::copy(&v[size_t(o * c)], &v[size_t(o * c)] + c, &vs[size_t(j * c)]);
        if (!(sigma > 0) || !std::isfinite(sigma)) continue;
        for (int64_t t = 0; t < r; ++t) uj[t] = w[size_t(o * r + t)] / sigma;
        const double len = orthogonalize(r, j, u.data());
        if (len > 0.5) {  // else: lost to rounding (sigma at the noise level), completed below
            for (int64_t t = 0; t < r; ++t) uj[t] /= len;
            missing[size_t(j)] = false;
        } else {
            std::fill(uj, uj + r, W(0));
        }
    }
    // the completion must stay orthogonal to every found column: found ones first
    std::vector<W> found(u);
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
    for (int64_t j = 0; j < k; ++j)
        fix_phase(r, c, &u[size_t(slot[size_t(j)] * r)], &vs[size_t(j * c)]);
    for (int64_t j = k; j < ucols; ++j)  // a completion column: no partner
        fix_phase(r, 0, &u[size_t(slot[size_t(j)] * r)], static_cast<W *>(nullptr));
    // tall: U = u [m, ucols], Vh = vs^H [c, c]; wide: U = vs [m, m], Vh = u^H [ucols, n]
    const int64_t mu = tall ? ucols : c, nv = tall ? c : ucols;
    T *uo = out + k, *vho = uo + m * mu;
    for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < mu; ++j)
            uo[i * mu + j] = T(tall ? u[size_t(slot[size_t(j)] * r + i)] : vs[size_t(j * c + i)]);
    for (int64_t i = 0; i < nv; ++i)
        for (int64_t j = 0; j < n; ++j)
            vho[i * n + j] =
                T(conj(tall ? vs[size_t(i * c + j)] : u[size_t(slot[size_t(i)] * r + j)]));
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
// complex64 / complex128: interleaved (real, imag) pairs; the singular values as pairs too
void aotc_svd_c64(int64_t batch, int64_t m, int64_t n, int32_t full, int32_t vectors,
                  const float *a, float *out) {
    svd(batch, m, n, full, vectors, cx(a), cx(out));
}
void aotc_svd_c128(int64_t batch, int64_t m, int64_t n, int32_t full, int32_t vectors,
                   const double *a, double *out) {
    svd(batch, m, n, full, vectors, cx(a), cx(out));
}
}
