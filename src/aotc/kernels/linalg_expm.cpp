// The matrix exponential of batches of small contiguous row-major square matrices (see
// aotc_kernels.h), by scaling and squaring in double: A / 2^s with s the least power that
// brings the 1-norm to 1/2 or below, its Taylor polynomial to degree 18 (the remainder under
// 1e-22 of the result there) by Horner's rule, squared s times. A matrix with a NaN or an
// infinity gives NaN everywhere. Every matrix of a batch is done by one thread front to
// back, so a result never depends on the thread count.

#include "aotc_kernels.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace {

constexpr int64_t kParallelMin = 4096;  // elements of work below which one thread runs
constexpr int kDegree = 18;
constexpr int kMaxSquarings = 1100;  // beyond double's exponent range

// c = a b for n x n row-major matrices (c distinct from a and b)
void matmul(int64_t n, const double *a, const double *b, double *c) {
    std::fill(c, c + n * n, 0.0);
    for (int64_t i = 0; i < n; ++i)
        for (int64_t k = 0; k < n; ++k) {
            const double aik = a[i * n + k];
            const double *bk = b + k * n;
            double *ci = c + i * n;
            for (int64_t j = 0; j < n; ++j) ci[j] += aik * bk[j];
        }
}

template <typename T>
void expm_one(int64_t n, const T *a, T *out) {
    std::vector<double> x(size_t(n * n)), p(size_t(n * n)), t(size_t(n * n));
    double norm = 0;  // the 1-norm: the largest column sum of magnitudes
    for (int64_t j = 0; j < n; ++j) {
        double col = 0;
        for (int64_t i = 0; i < n; ++i) col += std::fabs(double(a[i * n + j]));
        norm = std::max(norm, col);
    }
    if (!std::isfinite(norm)) {
        std::fill(out, out + n * n, std::numeric_limits<T>::quiet_NaN());
        return;
    }
    int squarings = 0;
    while (norm > 0.5 && squarings < kMaxSquarings) {
        norm *= 0.5;
        ++squarings;
    }
    const double scale = std::ldexp(1.0, -squarings);
    for (int64_t i = 0; i < n * n; ++i) x[size_t(i)] = double(a[i]) * scale;
    // p = I + x/1 (I + x/2 (... (I + x/kDegree)))
    for (int64_t i = 0; i < n * n; ++i) p[size_t(i)] = i % (n + 1) == 0 ? 1.0 : 0.0;
    for (int k = kDegree; k >= 1; --k) {
        matmul(n, x.data(), p.data(), t.data());
        for (int64_t i = 0; i < n * n; ++i)
            p[size_t(i)] = t[size_t(i)] / k + (i % (n + 1) == 0 ? 1.0 : 0.0);
    }
    for (int s = 0; s < squarings; ++s) {
        matmul(n, p.data(), p.data(), t.data());
        p.swap(t);
    }
    for (int64_t i = 0; i < n * n; ++i) out[i] = T(p[size_t(i)]);
}

template <typename T>
void expm(int64_t batch, int64_t n, const T *a, T *out) {
#pragma omp parallel for if (batch > 1 && batch * n * n * n >= kParallelMin)
    for (int64_t b = 0; b < batch; ++b) expm_one(n, a + b * n * n, out + b * n * n);
}

}  // namespace

extern "C" {
void aotc_matrix_exp_f32(int64_t batch, int64_t n, const float *a, float *out) {
    expm(batch, n, a, out);
}
void aotc_matrix_exp_f64(int64_t batch, int64_t n, const double *a, double *out) {
    expm(batch, n, a, out);
}
}
