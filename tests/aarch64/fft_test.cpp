// The shipped Fourier transforms (fft.cpp) against a naive DFT in double: complex to complex
// both ways, real to complex and complex to real, on power-of-two, composite, prime and 1
// lengths (mixed radix and Bluestein), along inner and outer dims, float32 and float64, the
// same bits at 1 and 4 threads.
#include <omp.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "aotc_kernels.h"
#include "check.h"

namespace {

constexpr double kPi = 3.141592653589793238462643383279502884;

// y[o, k, i] = sum_j x[o, j, i] exp(sign 2 pi i jk / n), pairs interleaved
std::vector<double> dft(const std::vector<double> &x, int64_t outer, int64_t n, int64_t inner,
                        int sign) {
    std::vector<double> y(x.size()), c(static_cast<size_t>(n)), s(static_cast<size_t>(n));
    for (int64_t r = 0; r < n; ++r) {
        c[size_t(r)] = std::cos(2 * kPi * double(r) / double(n));
        s[size_t(r)] = sign * std::sin(2 * kPi * double(r) / double(n));
    }
    for (int64_t o = 0; o < outer; ++o)
        for (int64_t i = 0; i < inner; ++i)
            for (int64_t k = 0; k < n; ++k) {
                double re = 0, im = 0;
                for (int64_t j = 0; j < n; ++j) {
                    const size_t r = size_t((j * k) % n);
                    const double *e = &x[size_t(2 * ((o * n + j) * inner + i))];
                    re += e[0] * c[r] - e[1] * s[r];
                    im += e[0] * s[r] + e[1] * c[r];
                }
                y[size_t(2 * ((o * n + k) * inner + i))] = re;
                y[size_t(2 * ((o * n + k) * inner + i)) + 1] = im;
            }
    return y;
}

template <typename T>
std::vector<T> cast(const std::vector<double> &x) {
    return std::vector<T>(x.begin(), x.end());
}

template <typename T>
void compare(const std::string &what, const std::vector<T> &got, const std::vector<double> &want,
             double scale) {
    const std::vector<float> as_float(got.begin(), got.end());
    // float32 arithmetic; float64 results are compared after rounding to float
    check::close(what, as_float.data(), want.data(), (sizeof(T) == 4 ? 2e-5 : 1e-6) * scale,
                 got.size());
}

template <typename T>
void cases(int64_t outer, int64_t n, int64_t inner, const char *type) {
    const std::string dims = std::string(" ") + type + " " + std::to_string(outer) + "x" +
                             std::to_string(n) + "x" + std::to_string(inner);
    const auto v = check::values(size_t(2 * outer * n * inner), uint32_t(n));
    const std::vector<double> x(v.begin(), v.end());
    const double scale = std::sqrt(double(n)) + 1;
    const auto xt = cast<T>(x);
    for (int inverse = 0; inverse < 2; ++inverse) {
        std::vector<T> y(x.size());
        const int rc = aotc::fft_c2c(outer, n, inner, inverse, AOTC_FFT_NORM_NONE, 1, xt.data(),
                                     y.data());
        check::expect(rc == 0, "c2c returns 0" + dims);
        compare((inverse ? "c2c inverse" : "c2c forward") + dims, y, dft(x, outer, n, inner,
                inverse ? 1 : -1), scale);
    }
    // real input: the real parts of x; its transform's first n/2 + 1 values, scaled by 1/n
    std::vector<double> re(x.size(), 0.0);
    std::vector<T> real(size_t(outer * n * inner));
    for (size_t t = 0; t < real.size(); ++t) real[t] = T(re[2 * t] = x[2 * t]);
    const int64_t half = n / 2 + 1;
    const auto full = dft(re, outer, n, inner, -1);
    std::vector<T> spec(size_t(2 * outer * half * inner));
    aotc::fft_r2c(outer, n, inner, half, AOTC_FFT_NORM_BY_N, n, real.data(), spec.data());
    std::vector<double> want(spec.size());
    for (int64_t o = 0; o < outer; ++o)
        for (int64_t k = 0; k < half; ++k)
            for (int64_t i = 0; i < inner; ++i)
                for (int c = 0; c < 2; ++c)
                    want[size_t(2 * ((o * half + k) * inner + i) + c)] =
                        full[size_t(2 * ((o * n + k) * inner + i) + c)] / double(n);
    compare("r2c" + dims, spec, want, 1.0);
    // and back: c2r of that half spectrum (scaled 1/n) times n is the real input
    std::vector<T> back(real.size());
    aotc::fft_c2r(outer, half, inner, n, AOTC_FFT_NORM_NONE, 1, spec.data(), back.data());
    std::vector<double> orig(real.begin(), real.end());
    compare("c2r" + dims, back, orig, 1.0);
}

template <typename T>
bool same_bits_at_any_thread_count(int64_t outer, int64_t n, int64_t inner) {
    const auto v = check::values(size_t(2 * outer * n * inner), 7);
    const std::vector<T> x(v.begin(), v.end());
    std::vector<T> one(x.size()), four(x.size());
    omp_set_num_threads(1);
    aotc::fft_c2c(outer, n, inner, 0, AOTC_FFT_NORM_BY_SQRT_N, n, x.data(), one.data());
    omp_set_num_threads(4);
    aotc::fft_c2c(outer, n, inner, 0, AOTC_FFT_NORM_BY_SQRT_N, n, x.data(), four.data());
    return std::memcmp(one.data(), four.data(), sizeof(T) * one.size()) == 0;
}

}  // namespace

int main() {
    for (int64_t n : {1, 2, 7, 12, 17, 60, 97, 128, 257}) {
        cases<float>(2, n, 1, "f32");
        cases<double>(1, n, 3, "f64");
    }
    cases<float>(3, 1000, 2, "f32");
    check::expect(same_bits_at_any_thread_count<float>(64, 257, 1), "threads f32 64x257x1");
    check::expect(same_bits_at_any_thread_count<double>(5, 300, 40), "threads f64 5x300x40");
    return check::finish();
}
