// The matrix exponential of batches of small contiguous row-major square matrices (see
// aotc_kernels.h), by scaling and squaring in double: A / 2^s with s the least power that
// brings the 1-norm to 1/2 or below, its Taylor polynomial to degree 18 (the remainder under
// 1e-22 of the result there) by Horner's rule, squared s times. A matrix with a NaN or an
// infinity gives NaN everywhere. complex64 / complex128 matrices (interleaved pairs) are
// computed in complex<double>. Every matrix of a batch is done by one thread front to back,
// so a result never depends on the thread count.

#include "aotc_kernels.h"
#include "aotc_linalg_complex.h"

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <limits>
#include <vector>

namespace {

using aotc_linalg::cx;

constexpr int64_t kParallelMin = 4096;  // elements of work below which one thread runs
constexpr int kDegree = 18;
constexpr int kMaxSquarings = 1100;  // beyond double's exponent range

// the type a matrix is computed in: double, or complex<double>
template <typename T>
struct Wide {
    using type = double;
};
template <typename R>
struct Wide<std::complex<R>> {
    using type = std::complex<double>;
};

// c = a b for n x n row-major matrices (c distinct from a and b)
template <typename W>
void matmul(int64_t n, const W *a, const W *b, W *c) {
    std::fill(c, c + n * n, W(0));
    for (int64_t i = 0; i < n; ++i)
        for (int64_t k = 0; k < n; ++k) {
            const W aik = a[i * n + k];
            const W *bk = b + k * n;
            W *ci = c + i * n;
            for (int64_t j = 0; j < n; ++j) ci[j] += aik * bk[j];
        }
}

template <typename T>
void expm_one(int64_t n, const T *a, T *out) {
    using W = typename Wide<T>::type;
    std::vector<W> x(size_t(n * n)), p(size_t(n * n)), t(size_t(n * n));
    double norm = 0;  // the 1-norm: the largest column sum of magnitudes
    for (int64_t j = 0; j < n; ++j) {
        double col = 0;
        for (int64_t i = 0; i < n; ++i) col += std::abs(W(a[i * n + j]));
        norm = std::max(norm, col);
    }
    if (!std::isfinite(norm)) {
        const double nan = std::numeric_limits<double>::quiet_NaN();
        std::fill(out, out + n * n, T(W(nan) + W(0) * nan));
        return;
    }
    int squarings = 0;
    while (norm > 0.5 && squarings < kMaxSquarings) {
        norm *= 0.5;
        ++squarings;
    }
    const double scale = std::ldexp(1.0, -squarings);
    for (int64_t i = 0; i < n * n; ++i) x[size_t(i)] = W(a[i]) * scale;
    // p = I + x/1 (I + x/2 (... (I + x/kDegree)))
    for (int64_t i = 0; i < n * n; ++i) p[size_t(i)] = i % (n + 1) == 0 ? 1.0 : 0.0;
    for (int k = kDegree; k >= 1; --k) {
        matmul(n, x.data(), p.data(), t.data());
        for (int64_t i = 0; i < n * n; ++i)
            p[size_t(i)] = t[size_t(i)] / double(k) + (i % (n + 1) == 0 ? 1.0 : 0.0);
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
// complex64 / complex128: interleaved (real, imag) pairs
void aotc_matrix_exp_c64(int64_t batch, int64_t n, const float *a, float *out) {
    expm(batch, n, cx(a), cx(out));
}
void aotc_matrix_exp_c128(int64_t batch, int64_t n, const double *a, double *out) {
    expm(batch, n, cx(a), cx(out));
}
}
