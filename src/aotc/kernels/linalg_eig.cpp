// Eigen decomposition of batches of small contiguous row-major general (non-symmetric) real
// matrices (see aotc_kernels.h), in double, by the classical dense route:
//   1. scale the matrix by a power of two so its largest entry is near 1 (exact), then
//      balance it (a permutation isolating eigenvalues, then a diagonal similarity by
//      powers of two equalizing row and column norms, as LAPACK's dgebal);
//   2. reduce it to upper Hessenberg form H = Q^T A Q with Householder reflections;
//   3. Francis double-shift QR iterations on H down to the real Schur form T = Z^T A Z
//      (quasi upper triangular: 1x1 blocks for real eigenvalues, standardized 2x2 blocks
//      with equal diagonal entries for complex-conjugate pairs), deflating on negligible
//      subdiagonal entries, with exceptional shifts every 10 iterations without one;
//   4. eigenvalues from the diagonal blocks, in the order they stand on T's diagonal, the
//      one with the positive imaginary part first in a pair (as LAPACK's dgeev);
//   5. eigenvectors by back substitution on T, multiplied by Z and the balancing scales,
//      each normalized to unit Euclidean norm with its largest component real and positive.
// With values only, the QR iterations update just the active window (no Z): the values are
// bit for bit those of the full decomposition. A matrix with a NaN or an infinity, or one
// whose iterations do not converge within the cap, gives NaN everywhere. Every matrix of a
// batch is done by one thread front to back, so a result never depends on the thread count.
// Complex matrices (aotc_eig_c64 / _c128, at the end) take the complex route of LAPACK's
// zgeev instead: complex Householder Hessenberg reduction and single-shift QR to the complex
// (triangular) Schur form, its diagonal the eigenvalues.

#include "aotc_kernels.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <complex>
#include <cstdint>
#include <limits>
#include <vector>

namespace {

constexpr int64_t kParallelMin = 4096;  // elements of work below which one thread runs
constexpr double kUlp = DBL_EPSILON;
constexpr double kGrowth = 1e100;  // back substitution rescales before a value passes this

using Z = std::complex<double>;

// The n x n row-major matrix m's element (i, j), of real (Mat) or complex (MatZ) values.
template <typename T>
struct MatT {
    T *m;
    int64_t n;
    T &operator()(int64_t i, int64_t j) const { return m[i * n + j]; }
};
using Mat = MatT<double>;
using MatZ = MatT<Z>;

// |x| and |x|^2 of a real or a complex value.
double magnitude(double x) { return std::fabs(x); }
double magnitude(Z x) { return std::abs(x); }
double squared(double x) { return x * x; }
double squared(Z x) { return std::norm(x); }

// ---- balancing ---------------------------------------------------------------------------
// The 2-norm of x[0], x[stride], ... (n of them), scaled against overflow.
template <typename T>
double norm2(int64_t n, const T *x, int64_t stride) {
    double big = 0, sum = 0;
    for (int64_t i = 0; i < n; ++i) big = std::max(big, magnitude(x[i * stride]));
    if (big == 0 || !std::isfinite(big)) return big;
    for (int64_t i = 0; i < n; ++i) sum += squared(x[i * stride] / big);
    return big * std::sqrt(sum);
}

// P^T A P, P the permutation swapping indices i and j.
template <typename T>
void swap_index(int64_t n, MatT<T> a, int64_t i, int64_t j) {
    if (i == j) return;
    for (int64_t k = 0; k < n; ++k) std::swap(a(i, k), a(j, k));
    for (int64_t k = 0; k < n; ++k) std::swap(a(k, i), a(k, j));
}

// Balancing, as LAPACK's dgebal does it (job 'B'), into B = D^{-1} P^T A P D:
// - the permutation P isolates eigenvalues: a row with no off-diagonal entry in the active
//   columns goes to the bottom (its diagonal entry an eigenvalue), then a column with none
//   in the active rows to the left, until the active block [lo, hi] has neither; `swaps`
//   records the pairs swapped, in order;
// - the diagonal D (d[i], powers of two, exact) brings the 2-norms of each active row and
//   column (within the block) together, which makes the eigenvalues of a badly scaled
//   matrix more accurate.
// Then an eigenvector y of B gives the eigenvector P D y of A. Already triangular parts
// cost the QR iterations nothing (their subdiagonal entries are zero). The same for a
// complex matrix (zgebal: the norms those of the complex entries).
template <typename T>
void balance(int64_t n, MatT<T> a, double *d, std::vector<int64_t> &swaps) {
    for (int64_t i = 0; i < n; ++i) d[i] = 1.0;
    auto isolate = [&](int64_t i, int64_t to) {
        swaps.push_back(i);
        swaps.push_back(to);
        swap_index(n, a, i, to);
    };
    int64_t lo = 0, hi = n - 1;
    for (bool found = true; found && hi > 0;) {  // rows to the bottom
        found = false;
        for (int64_t i = hi; i >= 0 && !found; --i) {
            bool alone = true;
            for (int64_t j = 0; j <= hi && alone; ++j) alone = j == i || a(i, j) == 0.0;
            if (!alone) continue;
            isolate(i, hi--);
            found = true;
        }
    }
    for (bool found = true; found && lo < hi;) {  // columns to the left
        found = false;
        for (int64_t j = lo; j <= hi && !found; ++j) {
            bool alone = true;
            for (int64_t i = lo; i <= hi && alone; ++i) alone = i == j || a(i, j) == 0.0;
            if (!alone) continue;
            isolate(j, lo++);
            found = true;
        }
    }
    const int64_t m = hi - lo + 1;
    for (int sweep = 0; sweep < 100 && m > 1; ++sweep) {  // each change cuts a norm by 5%
        bool changed = false;
        for (int64_t i = lo; i <= hi; ++i) {
            const double c = norm2(m, &a(lo, i), n), r = norm2(m, &a(i, lo), 1);
            if (c == 0 || r == 0) continue;
            // f = 2^e near sqrt(r / c): column i times f and row i over f balance
            const int e = int(std::lround((std::log2(r) - std::log2(c)) / 2));
            if (e == 0) continue;
            const double f = std::ldexp(1.0, std::clamp(e, -400, 400));
            if (!(c * f + r / f < 0.95 * (c + r))) continue;
            changed = true;
            d[i] *= f;
            for (int64_t j = 0; j < n; ++j) a(j, i) *= f;  // zero outside the block's rows
            for (int64_t j = 0; j < n; ++j) a(i, j) /= f;
        }
        if (!changed) break;
    }
}

// ---- Hessenberg reduction ----------------------------------------------------------------
// H = Q^T A Q upper Hessenberg, in place; with z (set to the identity first), z = Q.
// Reflection k, P = I - tau v v^T, zeroes column k below its subdiagonal.
void hessenberg(int64_t n, Mat h, double *z) {
    std::vector<double> v(static_cast<size_t>(n)), w(static_cast<size_t>(n));
    for (int64_t k = 0; k + 2 < n; ++k) {
        const int64_t m = n - k - 1;  // x = h[k+1 .. n-1][k]
        double big = 0;
        for (int64_t i = 0; i < m; ++i) big = std::max(big, std::fabs(h(k + 1 + i, k)));
        if (big == 0) continue;
        double tail = 0;  // |x[1:]|^2, scaled by 1 / big against overflow
        for (int64_t i = 0; i < m; ++i) {
            v[size_t(i)] = h(k + 1 + i, k) / big;
            if (i > 0) tail += v[size_t(i)] * v[size_t(i)];
        }
        if (tail == 0) continue;  // already zero below the subdiagonal
        const double norm = std::sqrt(v[0] * v[0] + tail);
        const double alpha = v[0] >= 0 ? -norm : norm;  // P x = alpha e1 (scaled)
        v[0] -= alpha;
        const double tau = -1.0 / (alpha * v[0]);  // 2 / (v^T v)
        // from the left on rows k+1 .. n-1, columns k+1 .. n-1 (column k set below)
        std::fill(w.begin(), w.end(), 0.0);
        for (int64_t i = 0; i < m; ++i)
            for (int64_t j = k + 1; j < n; ++j) w[size_t(j)] += v[size_t(i)] * h(k + 1 + i, j);
        for (int64_t i = 0; i < m; ++i)
            for (int64_t j = k + 1; j < n; ++j) h(k + 1 + i, j) -= tau * v[size_t(i)] * w[size_t(j)];
        h(k + 1, k) = alpha * big;
        for (int64_t i = 1; i < m; ++i) h(k + 1 + i, k) = 0;
        // from the right on columns k+1 .. n-1, every row (and the same on z)
        for (double *target : {h.m, z}) {
            if (target == nullptr) continue;
            for (int64_t i = 0; i < n; ++i) {
                double *row = target + i * n + k + 1;
                double s = 0;
                for (int64_t t = 0; t < m; ++t) s += row[t] * v[size_t(t)];
                s *= tau;
                for (int64_t t = 0; t < m; ++t) row[t] -= s * v[size_t(t)];
            }
        }
    }
}

// ---- Schur form --------------------------------------------------------------------------
// The rotation (cs, sn), G = [[cs, -sn], [sn, cs]], that brings the 2x2 block [[a, b], [c, d]]
// to its standard form G^T [[a, b], [c, d]] G, written back: upper triangular (c = 0) when
// its eigenvalues are real (a and d the eigenvalues then), else with a == d and b, c of
// opposite signs (eigenvalues a +- i sqrt(|b|) sqrt(|c|)).
void standardize(double &a, double &b, double &c, double &d, double &cs, double &sn) {
    cs = 1;
    sn = 0;
    if (c == 0) return;
    if (b == 0) {  // lower triangular: swap rows and columns
        cs = 0;
        sn = 1;
        std::swap(a, d);
        b = -c;
        c = 0;
        return;
    }
    if (a - d == 0 && (b > 0) != (c > 0)) return;  // already standard complex
    const double p = 0.5 * (a - d);
    const double bcmax = std::max(std::fabs(b), std::fabs(c));
    const double bcmis = std::min(std::fabs(b), std::fabs(c)) * (b > 0 ? 1 : -1) * (c > 0 ? 1 : -1);
    const double scale = std::max(std::fabs(p), bcmax);
    const double disc = p / scale * p + bcmax / scale * bcmis;  // (p^2 + b c) / scale
    if (disc >= 4 * kUlp) {
        // clearly real eigenvalues: rotate (lambda1 - d, c), an eigenvector, onto e1
        const double z = p + std::copysign(std::sqrt(scale) * std::sqrt(disc), p);
        a = d + z;  // lambda1, the larger in magnitude from d
        d = d - bcmax / z * bcmis;  // lambda2 = d - b c / z
        const double r = std::hypot(c, z);
        cs = z / r;
        sn = c / r;
        b -= c;  // b - c is the same for every rotation
        c = 0;
        return;
    }
    // complex or nearly equal eigenvalues: the rotation that makes the diagonal equal
    // (tan 2 theta = -(a - d) / (b + c))
    const double sigma = b + c;
    const double r = std::hypot(sigma, 2 * p);
    cs = std::sqrt(0.5 * (1 + std::fabs(sigma) / r));
    sn = -(p / (r * cs)) * (sigma >= 0 ? 1 : -1);
    const double aa = a * cs + b * sn, bb = -a * sn + b * cs;  // [[a, b], [c, d]] G
    const double cc = c * cs + d * sn, dd = -c * sn + d * cs;
    a = aa * cs + cc * sn;  // G^T (...)
    b = bb * cs + dd * sn;
    c = -aa * sn + cc * cs;
    d = -bb * sn + dd * cs;
    const double mid = 0.5 * (a + d);
    a = d = mid;
    auto turn = [&](double c1, double s1) {  // G := G [[c1, -s1], [s1, c1]]
        const double t = cs * c1 - sn * s1;
        sn = sn * c1 + cs * s1;
        cs = t;
    };
    if (c == 0) return;
    if (b == 0) {  // real and equal, lower triangular: swap
        turn(0, 1);
        b = -c;
        c = 0;
        return;
    }
    if ((b > 0) != (c > 0)) return;  // complex: standard now
    // real after all (b c > 0): eigenvalues mid +- sqrt(b c), triangularize
    const double sab = std::sqrt(std::fabs(b)), sac = std::sqrt(std::fabs(c));
    const double root = std::copysign(sab * sac, c);
    const double t = 1 / std::sqrt(std::fabs(b + c));
    a = mid + root;
    d = mid - root;
    b -= c;
    c = 0;
    turn(sab * t, sac * t);
}

// Whether h(k, k-1) is negligible (k - 1 >= 0, k <= hi): small against its neighbours, with
// the refined test of Ahues and Tisseur that keeps small eigenvalues accurate.
bool negligible(Mat h, int64_t k, int64_t hi, double smlnum) {
    const double s = std::fabs(h(k, k - 1));
    if (s <= smlnum) return true;
    double tst = std::fabs(h(k - 1, k - 1)) + std::fabs(h(k, k));
    if (tst == 0) {
        if (k >= 2) tst += std::fabs(h(k - 1, k - 2));
        if (k + 1 <= hi) tst += std::fabs(h(k + 1, k));
    }
    if (!(s <= kUlp * tst)) return false;  // also NaN
    const double ab = std::max(s, std::fabs(h(k - 1, k))), ba = std::min(s, std::fabs(h(k - 1, k)));
    const double diff = std::fabs(h(k - 1, k - 1) - h(k, k));
    const double aa = std::max(std::fabs(h(k, k)), diff), bb = std::min(std::fabs(h(k, k)), diff);
    const double sum = aa + ab;
    return ba * (ab / sum) <= std::max(smlnum, kUlp * (bb * (aa / sum)));
}

// The first column of (H - s1)(H - s2) at rows m .. m+2, s1, s2 the shifts (r1r + i r1i,
// r2r + i r2i: a conjugate pair or two reals), scaled to a 1-norm of 1.
void shift_column(Mat h, int64_t m, double r1r, double r1i, double r2r, double r2i, double *v) {
    const double h21 = h(m + 1, m);
    const double s = std::fabs(h(m, m) - r2r) + std::fabs(r2i) + std::fabs(h21);
    const double h21s = h21 / s;
    v[0] = h21s * h(m, m + 1) + (h(m, m) - r1r) * ((h(m, m) - r2r) / s) - r1i * (r2i / s);
    v[1] = h21s * (h(m, m) + h(m + 1, m + 1) - r1r - r2r);
    v[2] = h21s * h(m + 2, m + 1);
    const double norm = std::fabs(v[0]) + std::fabs(v[1]) + std::fabs(v[2]);
    for (int t = 0; t < 3; ++t) v[t] /= norm;
}

// Applies the rotation G (see standardize) to rows / columns l, l+1 of the whole of h
// outside its 2x2 block, and to columns l, l+1 of z.
void rotate_outside(int64_t n, Mat h, double *z, int64_t l, double cs, double sn) {
    for (int64_t j = l + 2; j < n; ++j) {  // rows: G^T
        const double x = h(l, j), y = h(l + 1, j);
        h(l, j) = cs * x + sn * y;
        h(l + 1, j) = -sn * x + cs * y;
    }
    for (int64_t i = 0; i < l; ++i) {  // columns: G
        const double x = h(i, l), y = h(i, l + 1);
        h(i, l) = cs * x + sn * y;
        h(i, l + 1) = -sn * x + cs * y;
    }
    for (int64_t i = 0; i < n; ++i) {
        double *zi = z + i * n;
        const double x = zi[l], y = zi[l + 1];
        zi[l] = cs * x + sn * y;
        zi[l + 1] = -sn * x + cs * y;
    }
}

// Francis double-shift QR iterations on the Hessenberg h down to its real Schur form, the
// eigenvalues into (wr, wi). With z: the whole of h is updated (T) and z accumulates the
// transformations (z = Q Z); without, only the active window [l, hi]. False when a block
// does not converge within the iteration cap (or a NaN keeps it from converging).
bool schur(int64_t n, Mat h, double *z, double *wr, double *wi) {
    const bool full = z != nullptr;
    const double smlnum = DBL_MIN * (double(n) / kUlp);
    const int64_t itmax = 30 * std::max<int64_t>(10, n);  // per deflation, as LAPACK's
    int64_t hi = n - 1, its = 0;
    while (hi >= 0) {
        int64_t l = hi;  // the active window's top: below a negligible subdiagonal entry
        while (l > 0 && !negligible(h, l, hi, smlnum)) --l;
        if (l > 0) h(l, l - 1) = 0;
        if (l == hi) {  // a 1x1 block: a real eigenvalue
            wr[hi] = h(hi, hi);
            wi[hi] = 0;
            hi -= 1;
            its = 0;
            continue;
        }
        if (l == hi - 1) {  // a 2x2 block: a real pair, or a complex-conjugate one
            double a = h(l, l), b = h(l, l + 1), c = h(l + 1, l), d = h(l + 1, l + 1), cs, sn;
            standardize(a, b, c, d, cs, sn);
            h(l, l) = a;
            h(l, l + 1) = b;
            h(l + 1, l) = c;
            h(l + 1, l + 1) = d;
            if (full) rotate_outside(n, h, z, l, cs, sn);
            const double im = c == 0 ? 0.0 : std::sqrt(std::fabs(b)) * std::sqrt(std::fabs(c));
            wr[l] = a;
            wr[l + 1] = d;
            wi[l] = im;  // the positive imaginary part first
            wi[l + 1] = -im;
            hi -= 2;
            its = 0;
            continue;
        }
        if (++its > itmax) return false;
        // the shifts: the eigenvalues of the trailing 2x2 block, or exceptional ones every
        // 10 iterations without a deflation (from the window's top, then its bottom)
        double h11, h12, h21, h22;
        if (its % 20 == 10) {
            const double s = std::fabs(h(l + 1, l)) + std::fabs(h(l + 2, l + 1));
            h11 = 0.75 * s + h(l, l);
            h12 = -0.4375 * s;
            h21 = s;
            h22 = h11;
        } else if (its % 20 == 0) {
            const double s = std::fabs(h(hi, hi - 1)) + std::fabs(h(hi - 1, hi - 2));
            h11 = 0.75 * s + h(hi, hi);
            h12 = -0.4375 * s;
            h21 = s;
            h22 = h11;
        } else {
            h11 = h(hi - 1, hi - 1);
            h12 = h(hi - 1, hi);
            h21 = h(hi, hi - 1);
            h22 = h(hi, hi);
        }
        double r1r = 0, r1i = 0, r2r = 0, r2i = 0;
        const double s = std::fabs(h11) + std::fabs(h12) + std::fabs(h21) + std::fabs(h22);
        if (s != 0) {
            h11 /= s;
            h12 /= s;
            h21 /= s;
            h22 /= s;
            const double tr = 0.5 * (h11 + h22);
            const double det = (h11 - tr) * (h22 - tr) - h12 * h21;
            const double root = std::sqrt(std::fabs(det));
            if (det >= 0) {  // a complex-conjugate pair
                r1r = r2r = tr * s;
                r1i = root * s;
                r2i = -r1i;
            } else {  // real: both the one nearer h22 (as LAPACK's dlahqr)
                r1r = tr + root;
                r2r = tr - root;
                r1r = r2r = (std::fabs(r1r - h22) <= std::fabs(r2r - h22) ? r1r : r2r) * s;
            }
        }
        // start the bulge lower where two consecutive subdiagonal entries are small
        double v[3];
        int64_t m = hi - 2;
        for (;; --m) {
            shift_column(h, m, r1r, r1i, r2r, r2i, v);
            if (m == l) break;
            const double below = std::fabs(h(m, m - 1)) * (std::fabs(v[1]) + std::fabs(v[2]));
            const double near = std::fabs(v[0]) * (std::fabs(h(m - 1, m - 1)) +
                                                   std::fabs(h(m, m)) + std::fabs(h(m + 1, m + 1)));
            if (below <= kUlp * near) break;
        }
        // chase the bulge from m down to hi with 3x3 (lastly 2x2) reflections
        const int64_t col_end = full ? n - 1 : hi, row_begin = full ? 0 : l;
        for (int64_t k = m; k < hi; ++k) {
            const int nr = int(std::min<int64_t>(3, hi - k + 1));
            if (k > m) {
                v[0] = h(k, k - 1);
                v[1] = h(k + 1, k - 1);
                v[2] = nr == 3 ? h(k + 2, k - 1) : 0.0;
            }
            // P = I - tau u u^T, u = (1, v1, v2), P v = (beta, 0, 0)
            const double xnorm = nr == 3 ? std::hypot(v[1], v[2]) : std::fabs(v[1]);
            double tau = 0, beta = v[0];
            if (xnorm != 0) {
                beta = -std::copysign(std::hypot(v[0], xnorm), v[0]);
                tau = (beta - v[0]) / beta;
                const double inv = 1 / (v[0] - beta);
                v[1] *= inv;
                v[2] *= inv;
            }
            if (k > m) {
                h(k, k - 1) = beta;
                h(k + 1, k - 1) = 0;
                if (nr == 3) h(k + 2, k - 1) = 0;
            } else if (m > l) {
                h(k, k - 1) *= 1 - tau;  // P's effect on the one nonzero entry of column k-1
            }
            if (tau == 0) continue;
            const double u1 = v[1], u2 = nr == 3 ? v[2] : 0.0;
            for (int64_t j = k; j <= col_end; ++j) {  // from the left: rows k .. k+nr-1
                double sum = h(k, j) + u1 * h(k + 1, j);
                if (nr == 3) sum += u2 * h(k + 2, j);
                sum *= tau;
                h(k, j) -= sum;
                h(k + 1, j) -= sum * u1;
                if (nr == 3) h(k + 2, j) -= sum * u2;
            }
            const int64_t row_end = std::min(k + 3, hi);
            auto right = [&](double *row) {  // columns k .. k+nr-1 of one row
                double sum = row[k] + u1 * row[k + 1];
                if (nr == 3) sum += u2 * row[k + 2];
                sum *= tau;
                row[k] -= sum;
                row[k + 1] -= sum * u1;
                if (nr == 3) row[k + 2] -= sum * u2;
            };
            for (int64_t i = row_begin; i <= row_end; ++i) right(h.m + i * n);
            if (full)
                for (int64_t i = 0; i < n; ++i) right(z + i * n);
        }
    }
    return true;
}

// ---- eigenvectors ------------------------------------------------------------------------
struct Cx {
    double re, im;
};
Cx operator-(Cx a, Cx b) { return {a.re - b.re, a.im - b.im}; }
Cx operator-(Cx a) { return {-a.re, -a.im}; }
Cx operator*(Cx a, Cx b) { return {a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re}; }
Cx operator*(double s, Cx a) { return {s * a.re, s * a.im}; }
double mag(Cx a) { return std::max(std::fabs(a.re), std::fabs(a.im)); }  // within sqrt(2)
Cx div(Cx a, Cx b) {  // Smith's algorithm, b != 0
    if (std::fabs(b.re) >= std::fabs(b.im)) {
        const double r = b.im / b.re, den = b.re + b.im * r;
        return {(a.re + a.im * r) / den, (a.im - a.re * r) / den};
    }
    const double r = b.re / b.im, den = b.re * r + b.im;
    return {(a.re * r + a.im) / den, (a.im * r - a.re) / den};
}

// x (length n) the eigenvector of the quasi-triangular t for its eigenvalue lam, whose
// block starts at row k (the first of a complex pair's two rows, lam the positive one):
// zero below the block, by back substitution above it. A pivot smaller than smin (an
// eigenvalue of t repeated above it, a defective matrix) is taken as smin, a perturbation
// of t by at most smin; x is rescaled whenever a value would pass kGrowth. Returns the last
// nonzero row.
int64_t back_substitute(int64_t n, Mat t, int64_t k, Cx lam, double smin, Cx *x) {
    for (int64_t i = 0; i < n; ++i) x[i] = {0, 0};
    int64_t last = k;
    if (lam.im == 0) {
        x[k] = {1, 0};
    } else {  // the 2x2 block's own eigenvector, from its row with the larger off-diagonal
        last = k + 1;
        if (std::fabs(t(k, k + 1)) >= std::fabs(t(k + 1, k))) {
            x[k] = {t(k, k + 1), 0};
            x[k + 1] = {lam.re - t(k, k), lam.im};
        } else {
            x[k] = {lam.re - t(k + 1, k + 1), lam.im};
            x[k + 1] = {t(k + 1, k), 0};
        }
    }
    auto rescale = [&](int64_t from, double s) {
        for (int64_t j = from; j <= last; ++j) x[j] = s * x[j];
    };
    auto residual = [&](int64_t i) {  // sum_j>i t(i, j) x_j
        Cx r{0, 0};
        for (int64_t j = i + 1; j <= last; ++j) {
            r.re += t(i, j) * x[j].re;
            r.im += t(i, j) * x[j].im;
        }
        return r;
    };
    // num / den, den taken as smin where smaller; x from row `from` on (and *pending) scaled
    // down first where the quotient would pass kGrowth
    auto quotient = [&](int64_t from, Cx num, Cx den, Cx *pending) {
        if (mag(den) < smin) den = {smin, 0};
        if (mag(num) > kGrowth * mag(den)) {
            const double s = 0.5 * kGrowth * mag(den) / mag(num);
            rescale(from, s);
            if (pending != nullptr) *pending = s * *pending;
            num = s * num;
        }
        return div(num, den);
    };
    for (int64_t i = k - 1; i >= 0; --i) {
        if (i > 0 && t(i, i - 1) != 0) {
            // a 2x2 block, rows i-1 and i: M y = b by elimination with complete pivoting
            // (u the factors of M with its largest entry m[p][q] the first pivot)
            const Cx m[2][2] = {{Cx{t(i - 1, i - 1), 0} - lam, Cx{t(i - 1, i), 0}},
                                {Cx{t(i, i - 1), 0}, Cx{t(i, i), 0} - lam}};
            const Cx b[2] = {-residual(i - 1), -residual(i)};
            int p = 0, q = 0;
            for (int r = 0; r < 2; ++r)
                for (int c = 0; c < 2; ++c)
                    if (mag(m[r][c]) > mag(m[p][q])) {
                        p = r;
                        q = c;
                    }
            const Cx u11 = mag(m[p][q]) < smin ? Cx{smin, 0} : m[p][q];
            const Cx l = div(m[1 - p][q], u11), u12 = m[p][1 - q];
            const Cx u22 = m[1 - p][1 - q] - l * u12;
            Cx c1 = b[p];
            const Cx c2 = b[1 - p] - l * c1;
            Cx y2 = quotient(i + 1, c2, u22, &c1);  // y[1 - q]
            const Cx y1 = quotient(i + 1, c1 - u12 * y2, u11, &y2);  // y[q]
            x[i - 1 + q] = y1;
            x[i - q] = y2;
            --i;
        } else {
            x[i] = quotient(i + 1, -residual(i), Cx{t(i, i), 0} - lam, nullptr);
        }
    }
    return last;
}

// ---- one matrix --------------------------------------------------------------------------
// One n x n matrix `a` into `out` (layout in aotc_kernels.h): n eigenvalues as (re, im), then
// with `vectors` the n x n matrix of eigenvectors (column j: vector j) as (re, im) pairs.
template <typename T>
void eig_one(int64_t n, bool vectors, const T *a, T *out) {
    const int64_t each = 2 * n + (vectors ? 2 * n * n : 0);
    std::vector<double> hbuf(size_t(n * n)), zbuf(vectors ? size_t(n * n) : 0),
        d(static_cast<size_t>(n)), wr(static_cast<size_t>(n)), wi(static_cast<size_t>(n));
    Mat h{hbuf.data(), n};
    auto fail = [&] {
        for (int64_t t = 0; t < each; ++t) out[t] = std::numeric_limits<T>::quiet_NaN();
    };
    double big = 0;
    for (int64_t t = 0; t < n * n; ++t) {
        hbuf[size_t(t)] = double(a[t]);
        if (!std::isfinite(hbuf[size_t(t)])) return fail();
        big = std::max(big, std::fabs(hbuf[size_t(t)]));
    }
    // A / 2^e with its largest entry in [1, 2): the eigenvalues are 2^e times those
    const int e = big > 0 ? std::ilogb(big) : 0;
    if (e != 0)
        for (double &x : hbuf) x = std::ldexp(x, -e);
    std::vector<int64_t> swaps;
    balance(n, h, d.data(), swaps);
    double *z = vectors ? zbuf.data() : nullptr;
    if (z != nullptr)
        for (int64_t t = 0; t < n * n; ++t) z[t] = t % (n + 1) == 0 ? 1.0 : 0.0;
    hessenberg(n, h, z);
    if (!schur(n, h, z, wr.data(), wi.data())) return fail();
    for (int64_t j = 0; j < n; ++j) {
        out[2 * j] = T(std::ldexp(wr[size_t(j)], e));
        out[2 * j + 1] = T(std::ldexp(wi[size_t(j)], e));
    }
    if (!vectors) return;
    // eigenvector j of A: P D Z x, x that of T (the balanced, scaled matrix's Schur form)
    const double smlnum = DBL_MIN * (double(n) / kUlp);
    std::vector<Cx> x(static_cast<size_t>(n)), v(static_cast<size_t>(n));
    T *vo = out + 2 * n;
    for (int64_t j = 0; j < n; ++j) {
        if (wi[size_t(j)] < 0) {  // the conjugate of the previous one's
            for (int64_t i = 0; i < n; ++i) {
                vo[2 * (i * n + j)] = vo[2 * (i * n + j - 1)];
                vo[2 * (i * n + j) + 1] = -vo[2 * (i * n + j - 1) + 1];
            }
            continue;
        }
        const Cx lam{wr[size_t(j)], wi[size_t(j)]};
        const double smin = std::max(kUlp * (std::fabs(lam.re) + std::fabs(lam.im)), smlnum);
        const int64_t last = back_substitute(n, h, j, lam, smin, x.data());
        double top = 0;
        for (int64_t i = 0; i < n; ++i) {
            Cx s{0, 0};
            const double *zi = z + i * n;
            for (int64_t t = 0; t <= last; ++t) {
                s.re += zi[t] * x[size_t(t)].re;
                s.im += zi[t] * x[size_t(t)].im;
            }
            v[size_t(i)] = d[size_t(i)] * s;
            top = std::max(top, mag(v[size_t(i)]));
        }
        for (size_t t = swaps.size(); t > 0; t -= 2)  // P: the swaps undone, the last first
            std::swap(v[size_t(swaps[t - 2])], v[size_t(swaps[t - 1])]);
        // unit Euclidean norm, the largest component (the first of equal ones) real > 0
        int64_t best = 0;
        double norm2 = 0, best2 = -1;
        for (int64_t i = 0; i < n; ++i) {
            const Cx c = (1 / top) * v[size_t(i)];
            const double m2 = c.re * c.re + c.im * c.im;
            norm2 += m2;
            if (m2 > best2) {
                best2 = m2;
                best = i;
            }
        }
        const Cx pivot = (1 / top) * v[size_t(best)];
        const double pm = std::sqrt(best2), scale = 1 / (top * std::sqrt(norm2));
        const Cx phase{pivot.re / pm, -pivot.im / pm};  // conj(pivot) / |pivot|
        for (int64_t i = 0; i < n; ++i) {
            Cx c = scale * (v[size_t(i)] * phase);
            if (i == best) c = {pm / std::sqrt(norm2), 0};
            vo[2 * (i * n + j)] = T(c.re);
            vo[2 * (i * n + j) + 1] = T(c.im);
        }
    }
}

template <typename T>
void eig(int64_t batch, int64_t n, int32_t vectors, const T *a, T *out) {
    const int64_t each = 2 * n + (vectors ? 2 * n * n : 0);
#pragma omp parallel for if (batch > 1 && batch * n * n * n >= kParallelMin)
    for (int64_t b = 0; b < batch; ++b) eig_one(n, vectors != 0, a + b * n * n, out + b * each);
}


// ==== complex matrices ====================================================================
// The complex variant (aotc_eig_c64 / _c128), in complex<double>, by the same route as the
// real one but on complex arithmetic throughout, as LAPACK's zgeev:
//   1. scale by a power of two and balance (the templates above);
//   2. reduce to upper Hessenberg form H = Q^H A Q with complex Householder reflections;
//   3. single-shift QR iterations (Wilkinson shifts, implicit, chased with complex Givens
//      rotations) down to the complex Schur form T = Z^H A Z, upper triangular;
//   4. the eigenvalues are T's diagonal, in the order they stand on it;
//   5. eigenvectors by back substitution on T, multiplied by Z, the balancing scales and
//      permutation, each of unit norm with its largest-magnitude component real positive.

// |re| + |im|: the cheap magnitude LAPACK's complex routines compare (within sqrt(2) of |z|).
double cabs1(Z z) { return std::fabs(z.real()) + std::fabs(z.imag()); }

// ---- Hessenberg reduction ----------------------------------------------------------------
// H = Q^H A Q upper Hessenberg, in place; with z (set to the identity first), z = Q.
// Reflection k, P = I - tau u u^H (Hermitian and unitary, tau real), maps the column below
// the diagonal x = h[k+1 .. n-1][k] onto alpha e1, alpha = -phase(x0) |x| (the sign that
// keeps u = x - alpha e1 free of cancellation): then u^H u = 2 |x| (|x| + |x0|).
void hessenberg_complex(int64_t n, MatZ h, Z *z) {
    std::vector<Z> u(static_cast<size_t>(n)), w(static_cast<size_t>(n));
    for (int64_t k = 0; k + 2 < n; ++k) {
        const int64_t m = n - k - 1;  // rows k+1 .. n-1
        double big = 0;
        for (int64_t i = 0; i < m; ++i) big = std::max(big, cabs1(h(k + 1 + i, k)));
        if (big == 0) continue;
        double tail = 0;  // |x[1:]|^2, x scaled by 1 / big against overflow
        for (int64_t i = 0; i < m; ++i) {
            u[size_t(i)] = h(k + 1 + i, k) / big;
            if (i > 0) tail += std::norm(u[size_t(i)]);
        }
        if (tail == 0) continue;  // already zero below the subdiagonal
        const double x0 = std::abs(u[0]);
        const double norm = std::sqrt(x0 * x0 + tail);
        const Z phase = x0 == 0 ? Z(1) : u[0] / x0;
        const Z alpha = -phase * norm;
        u[0] -= alpha;  // = phase (|x0| + |x|)
        const double tau = 1.0 / (norm * (norm + x0));  // 2 / (u^H u)
        // from the left, P H, on rows k+1 .. n-1 and columns k+1 .. n-1: w = u^H H
        std::fill(w.begin(), w.end(), Z(0));
        for (int64_t i = 0; i < m; ++i) {
            const Z ui = std::conj(u[size_t(i)]);
            for (int64_t j = k + 1; j < n; ++j) w[size_t(j)] += ui * h(k + 1 + i, j);
        }
        for (int64_t i = 0; i < m; ++i) {
            const Z ui = tau * u[size_t(i)];
            for (int64_t j = k + 1; j < n; ++j) h(k + 1 + i, j) -= ui * w[size_t(j)];
        }
        h(k + 1, k) = alpha * big;  // column k: alpha e1 (unscaled)
        for (int64_t i = 1; i < m; ++i) h(k + 1 + i, k) = 0;
        // from the right, H P, on columns k+1 .. n-1 of every row (and the same on z)
        for (Z *target : {h.m, z}) {
            if (target == nullptr) continue;
            for (int64_t i = 0; i < n; ++i) {
                Z *row = target + i * n + k + 1;
                Z s = 0;
                for (int64_t t = 0; t < m; ++t) s += row[t] * u[size_t(t)];
                s *= tau;
                for (int64_t t = 0; t < m; ++t) row[t] -= s * std::conj(u[size_t(t)]);
            }
        }
    }
}

// ---- Schur form --------------------------------------------------------------------------
// Whether h(k, k-1) is negligible (k - 1 >= 0, k <= hi): the real kernel's test (with the
// refinement of Ahues and Tisseur) on cabs1 magnitudes, as LAPACK's zlahqr.
bool negligible_complex(MatZ h, int64_t k, int64_t hi, double smlnum) {
    const double s = cabs1(h(k, k - 1));
    if (s <= smlnum) return true;
    double tst = cabs1(h(k - 1, k - 1)) + cabs1(h(k, k));
    if (tst == 0) {
        if (k >= 2) tst += cabs1(h(k - 1, k - 2));
        if (k + 1 <= hi) tst += cabs1(h(k + 1, k));
    }
    if (!(s <= kUlp * tst)) return false;  // also NaN
    const double above = cabs1(h(k - 1, k));
    const double ab = std::max(s, above), ba = std::min(s, above);
    const double diff = cabs1(h(k - 1, k - 1) - h(k, k));
    const double aa = std::max(cabs1(h(k, k)), diff), bb = std::min(cabs1(h(k, k)), diff);
    const double sum = aa + ab;
    return ba * (ab / sum) <= std::max(smlnum, kUlp * (bb * (aa / sum)));
}

// The plane rotation G = [[c, s], [-conj(s), c]] (c real >= 0, G unitary) with
// G (f, g)^T = (r, 0)^T.
void givens(Z f, Z g, double &c, Z &s, Z &r) {
    if (g == 0.0) {
        c = 1;
        s = 0;
        r = f;
        return;
    }
    const double af = std::abs(f), ag = std::abs(g);
    if (af == 0) {
        c = 0;
        s = std::conj(g) / ag;
        r = ag;
        return;
    }
    const double norm = std::hypot(af, ag);
    const Z phase = f / af;
    c = af / norm;
    s = phase * std::conj(g) / norm;
    r = phase * norm;
}

// The Wilkinson shift: the eigenvalue of the trailing 2x2 block [[a, b], [c, d]] of the
// window nearer d. With t = (a - d) / 2 the eigenvalues are d + t -+ sqrt(t^2 + b c); the
// nearer one, written d - b c / (t + root) with the root's sign making t + root the larger
// (no cancellation).
Z wilkinson_shift(Z a, Z b, Z c, Z d) {
    const double scale = cabs1(a) + cabs1(b) + cabs1(c) + cabs1(d);
    if (scale == 0) return 0;
    a /= scale;
    b /= scale;
    c /= scale;
    d /= scale;
    const Z t = 0.5 * (a - d);
    Z root = std::sqrt(t * t + b * c);
    if ((std::conj(t) * root).real() < 0) root = -root;
    const Z den = t + root;
    return scale * (den == 0.0 ? d : d - b * (c / den));
}

// Single-shift QR iterations on the Hessenberg h down to its complex Schur form, the
// eigenvalues (the diagonal) into w. With z: the whole of h is updated (T) and z accumulates
// the rotations (z = Q Z); without, only the active window [l, hi] (the window's values,
// and so the eigenvalues, are the same bit for bit). False when the window does not deflate
// within the iteration cap (or a NaN keeps it from converging).
bool schur_complex(int64_t n, MatZ h, Z *z, Z *w) {
    const bool full = z != nullptr;
    const double smlnum = DBL_MIN * (double(n) / kUlp);
    const int64_t itmax = 30 * std::max<int64_t>(10, n);  // per deflation, as LAPACK's
    int64_t hi = n - 1, its = 0;
    while (hi >= 0) {
        int64_t l = hi;  // the active window's top: below a negligible subdiagonal entry
        while (l > 0 && !negligible_complex(h, l, hi, smlnum)) --l;
        if (l > 0) h(l, l - 1) = 0;
        if (l == hi) {  // deflated: h(hi, hi) is an eigenvalue
            w[hi] = h(hi, hi);
            hi -= 1;
            its = 0;
            continue;
        }
        if (++its > itmax) return false;
        // the shift: Wilkinson's, or an exceptional one after 10 iterations without a
        // deflation (from the window's top), and after 20 (from its bottom)
        Z mu;
        if (its % 20 == 10) {
            mu = h(l, l) + 0.75 * cabs1(h(l + 1, l));
        } else if (its % 20 == 0) {
            mu = h(hi, hi) + 0.75 * cabs1(h(hi, hi - 1));
        } else {
            mu = wilkinson_shift(h(hi - 1, hi - 1), h(hi - 1, hi), h(hi, hi - 1), h(hi, hi));
        }
        // one implicit QR step on the window: the rotation from the first column of
        // H - mu I, then the bulge it makes at (k+1, k-1) chased down to the bottom
        const int64_t col_end = full ? n - 1 : hi, row_begin = full ? 0 : l;
        for (int64_t k = l; k < hi; ++k) {
            const Z f = k == l ? h(l, l) - mu : h(k, k - 1);
            const Z g = k == l ? h(l + 1, l) : h(k + 1, k - 1);
            double c;
            Z s, r;
            givens(f, g, c, s, r);
            if (k > l) {
                h(k, k - 1) = r;
                h(k + 1, k - 1) = 0;
            }
            for (int64_t j = k; j <= col_end; ++j) {  // rows k, k+1: G
                const Z x = h(k, j), y = h(k + 1, j);
                h(k, j) = c * x + s * y;
                h(k + 1, j) = c * y - std::conj(s) * x;
            }
            const Z sc = std::conj(s);
            auto right = [&](Z *row) {  // columns k, k+1 of one row: G^H
                const Z x = row[k], y = row[k + 1];
                row[k] = c * x + sc * y;
                row[k + 1] = c * y - s * x;
            };
            const int64_t row_end = std::min(k + 2, hi);
            for (int64_t i = row_begin; i <= row_end; ++i) right(h.m + i * n);
            if (full)
                for (int64_t i = 0; i < n; ++i) right(z + i * n);
        }
    }
    return true;
}

// ---- eigenvectors ------------------------------------------------------------------------
// x (length n) the eigenvector of the upper triangular t for its eigenvalue t(k, k): x[k] = 1,
// zero below, by back substitution above. A pivot t(i, i) - t(k, k) smaller than smin (an
// eigenvalue repeated above it) is taken as smin, a perturbation of t by at most smin; x is
// rescaled whenever a value would pass kGrowth (as the real kernel's back_substitute).
void back_substitute_complex(int64_t n, MatZ t, int64_t k, double smin, Z *x) {
    for (int64_t i = 0; i < n; ++i) x[i] = 0;
    x[k] = 1;
    const Z lam = t(k, k);
    for (int64_t i = k - 1; i >= 0; --i) {
        Z num = 0;  // -sum_{j > i} t(i, j) x_j
        for (int64_t j = i + 1; j <= k; ++j) num -= t(i, j) * x[j];
        Z den = t(i, i) - lam;
        if (cabs1(den) < smin) den = smin;
        if (cabs1(num) > kGrowth * cabs1(den)) {
            const double s = 0.5 * kGrowth * cabs1(den) / cabs1(num);
            for (int64_t j = i + 1; j <= k; ++j) x[j] *= s;
            num *= s;
        }
        x[i] = num / den;
    }
}

// ---- one matrix --------------------------------------------------------------------------
// One n x n complex matrix `a` (interleaved pairs of R) into `out`, the real kernel's layout.
template <typename R>
void eig_one_complex(int64_t n, bool vectors, const R *a, R *out) {
    const int64_t each = 2 * n + (vectors ? 2 * n * n : 0);
    std::vector<Z> hbuf(size_t(n * n)), zbuf(vectors ? size_t(n * n) : 0),
        w(static_cast<size_t>(n));
    std::vector<double> d(static_cast<size_t>(n));
    MatZ h{hbuf.data(), n};
    auto fail = [&] {
        for (int64_t t = 0; t < each; ++t) out[t] = std::numeric_limits<R>::quiet_NaN();
    };
    double big = 0;
    for (int64_t t = 0; t < n * n; ++t) {
        const double re = double(a[2 * t]), im = double(a[2 * t + 1]);
        if (!std::isfinite(re) || !std::isfinite(im)) return fail();
        hbuf[size_t(t)] = Z(re, im);
        big = std::max(big, std::max(std::fabs(re), std::fabs(im)));
    }
    // A / 2^e with its largest part in [1, 2): the eigenvalues are 2^e times those
    const int e = big > 0 ? std::ilogb(big) : 0;
    if (e != 0)
        for (Z &x : hbuf) x = Z(std::ldexp(x.real(), -e), std::ldexp(x.imag(), -e));
    std::vector<int64_t> swaps;
    balance(n, h, d.data(), swaps);
    Z *z = vectors ? zbuf.data() : nullptr;
    if (z != nullptr)
        for (int64_t t = 0; t < n * n; ++t) z[t] = t % (n + 1) == 0 ? 1.0 : 0.0;
    hessenberg_complex(n, h, z);
    if (!schur_complex(n, h, z, w.data())) return fail();
    for (int64_t j = 0; j < n; ++j) {
        out[2 * j] = R(std::ldexp(w[size_t(j)].real(), e));
        out[2 * j + 1] = R(std::ldexp(w[size_t(j)].imag(), e));
    }
    if (!vectors) return;
    // eigenvector j of A: P D Z x, x that of T (the balanced, scaled matrix's Schur form)
    const double smlnum = DBL_MIN * (double(n) / kUlp);
    std::vector<Z> x(static_cast<size_t>(n)), v(static_cast<size_t>(n));
    R *vo = out + 2 * n;
    for (int64_t j = 0; j < n; ++j) {
        const double smin = std::max(kUlp * cabs1(h(j, j)), smlnum);
        back_substitute_complex(n, h, j, smin, x.data());
        double top = 0;
        for (int64_t i = 0; i < n; ++i) {
            Z s = 0;
            const Z *zi = z + i * n;
            for (int64_t t = 0; t <= j; ++t) s += zi[t] * x[size_t(t)];
            v[size_t(i)] = d[size_t(i)] * s;
            top = std::max(top, cabs1(v[size_t(i)]));
        }
        for (size_t t = swaps.size(); t > 0; t -= 2)  // P: the swaps undone, the last first
            std::swap(v[size_t(swaps[t - 2])], v[size_t(swaps[t - 1])]);
        // unit Euclidean norm, the largest component (the first of equal ones) real > 0;
        // v / top first, so that the squares neither overflow nor underflow
        int64_t best = 0;
        double sum2 = 0, best2 = -1;
        for (int64_t i = 0; i < n; ++i) {
            const double m2 = std::norm(v[size_t(i)] / top);
            sum2 += m2;
            if (m2 > best2) {
                best2 = m2;
                best = i;
            }
        }
        const Z pivot = v[size_t(best)] / top;
        const double pm = std::sqrt(best2), scale = 1 / (top * std::sqrt(sum2));
        const Z phase = std::conj(pivot) / pm;
        for (int64_t i = 0; i < n; ++i) {
            Z c = scale * (v[size_t(i)] * phase);
            if (i == best) c = pm / std::sqrt(sum2);
            vo[2 * (i * n + j)] = R(c.real());
            vo[2 * (i * n + j) + 1] = R(c.imag());
        }
    }
}

template <typename R>
void eig_complex(int64_t batch, int64_t n, int32_t vectors, const R *a, R *out) {
    const int64_t each = 2 * n + (vectors ? 2 * n * n : 0);
// complex arithmetic is ~4 real flops each: threads from a quarter of the real kernel's size
#pragma omp parallel for if (batch > 1 && batch * n * n * n >= kParallelMin / 4)
    for (int64_t b = 0; b < batch; ++b)
        eig_one_complex(n, vectors != 0, a + b * 2 * n * n, out + b * each);
}
}  // namespace

extern "C" {
void aotc_eig_f32(int64_t batch, int64_t n, int32_t vectors, const float *a, float *out) {
    eig(batch, n, vectors, a, out);
}
void aotc_eig_f64(int64_t batch, int64_t n, int32_t vectors, const double *a, double *out) {
    eig(batch, n, vectors, a, out);
}
// complex64 / complex128: a and out interleaved (real, imag) pairs
void aotc_eig_c64(int64_t batch, int64_t n, int32_t vectors, const float *a, float *out) {
    eig_complex(batch, n, vectors, a, out);
}
void aotc_eig_c128(int64_t batch, int64_t n, int32_t vectors, const double *a, double *out) {
    eig_complex(batch, n, vectors, a, out);
}
}
