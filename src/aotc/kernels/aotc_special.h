// Special functions of torch.special (and digamma, lgamma, polygamma, i0, erfc), written for
// aotc. Each is evaluated in double from its power series, its asymptotic expansion for large
// arguments, a recurrence or a reflection, and rounded once to the caller's type, so float
// results are correctly rounded up to a few units of the last place.

#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "aotc_incomplete_gamma.h"

namespace aotc {
namespace special_detail {

constexpr double kPi = 3.14159265358979323846;
constexpr double kEulerGamma = 0.57721566490153286061;
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kEps = 1e-17;
constexpr double kLarge = 25.0;  // above: asymptotic expansions of the Bessel functions

// sum_k s^k q^k / (k! (k + nu)!) * (x/2)^nu for nu in {0, 1}, s = +1 (I) or -1 (J)
inline double bessel_series(int nu, double x, double sign) {
    const double q = x * x / 4;
    double term = nu ? x / 2 : 1.0, sum = term;
    for (int k = 1; k < 500; ++k) {
        term *= sign * q / (double(k) * (k + nu));
        sum += term;
        if (std::fabs(term) < kEps * std::fabs(sum)) break;
    }
    return sum;
}

// the Y (sign -1) or K (sign +1) companion series: sum_k c_k s^k q^k / (k! (k + nu)!) with
// c_k = H_k (nu = 0) or psi(k + 1) + psi(k + 2) (nu = 1), times (x/2)^nu
inline double log_series(int nu, double x, double sign) {
    const double q = x * x / 4;
    double term = nu ? x / 2 : 1.0, harmonic = 0.0;
    double sum = nu ? term * (1.0 - 2 * kEulerGamma) : 0.0;  // k = 0: psi(1) + psi(2)
    for (int k = 1; k < 500; ++k) {
        term *= sign * q / (double(k) * (k + nu));
        harmonic += 1.0 / k;
        const double c = nu ? 2 * (harmonic - kEulerGamma) + 1.0 / (k + 1) : harmonic;
        sum += c * term;
        if (std::fabs(c * term) < kEps * std::fabs(sum) && k > 2) break;
    }
    return sum;
}

// Hankel's expansion: J_nu or Y_nu for large x
inline double bessel_hankel(int nu, double x, bool y) {
    const double mu = 4.0 * nu * nu;
    double p = 1.0, q = 0.0, term = 1.0, last = kInf;
    for (int k = 1; k < 200; ++k) {
        term *= (mu - (2.0 * k - 1) * (2.0 * k - 1)) / (k * 8.0 * x);
        if (std::fabs(term) >= last) break;
        last = std::fabs(term);
        // k odd: Q gets (-1)^((k-1)/2) a_k; k even: P gets (-1)^(k/2) a_k
        const double s = ((k / 2) % 2 == 0) ? 1.0 : -1.0;
        if (k % 2) q += s * term;
        else p += s * term;
        if (last < kEps) break;
    }
    const double chi = x - (nu / 2.0 + 0.25) * kPi;
    const double scale = std::sqrt(2.0 / (kPi * x));
    return y ? scale * (p * std::sin(chi) + q * std::cos(chi))
             : scale * (p * std::cos(chi) - q * std::sin(chi));
}

// e^{-x} I_nu(x) (sign -1) or e^{x} K_nu(x) sqrt(2x/pi) / ... for large x: the series in 1/x
inline double modified_asymptotic(int nu, double x, double sign) {
    const double mu = 4.0 * nu * nu;
    double term = 1.0, sum = 1.0, last = kInf;
    for (int k = 1; k < 200; ++k) {
        term *= sign * (mu - (2.0 * k - 1) * (2.0 * k - 1)) / (k * 8.0 * x);
        if (std::fabs(term) >= last) break;
        last = std::fabs(term);
        sum += term;
        if (last < kEps) break;
    }
    return sum;
}

inline double ie(int nu, double x) {  // e^{-|x|} I_nu(x)
    const double a = std::fabs(x);
    const double v = a <= kLarge ? std::exp(-a) * bessel_series(nu, a, 1.0)
                                 : modified_asymptotic(nu, a, -1.0) / std::sqrt(2 * kPi * a);
    return (nu && x < 0) ? -v : v;
}

inline double i(int nu, double x) {
    if (std::isinf(x)) return kNaN;  // as PyTorch's kernels give
    const double a = std::fabs(x);
    if (a <= kLarge) {
        const double v = bessel_series(nu, a, 1.0);
        return (nu && x < 0) ? -v : v;
    }
    if (a > 800) return (nu && x < 0) ? -kInf : kInf;
    return ie(nu, x) * std::exp(a);
}

inline double ke(int nu, double x) {  // e^{x} K_nu(x)
    if (std::isnan(x) || x < 0) return kNaN;
    if (x == 0) return kInf;
    if (x > 10) return modified_asymptotic(nu, x, 1.0) * std::sqrt(kPi / (2 * x));
    const double lg = std::log(x / 2);
    const double k = nu ? 1.0 / x + lg * bessel_series(1, x, 1.0) - log_series(1, x, 1.0) / 2
                        : -(lg + kEulerGamma) * bessel_series(0, x, 1.0) + log_series(0, x, 1.0);
    return k * std::exp(x);
}

inline double k(int nu, double x) {
    if (x > 10) return x > 800 ? 0.0 : ke(nu, x) * std::exp(-x);
    if (std::isnan(x) || x < 0) return kNaN;
    if (x == 0) return kInf;
    const double lg = std::log(x / 2);
    return nu ? 1.0 / x + lg * bessel_series(1, x, 1.0) - log_series(1, x, 1.0) / 2
              : -(lg + kEulerGamma) * bessel_series(0, x, 1.0) + log_series(0, x, 1.0);
}

inline double j(int nu, double x) {
    if (std::isinf(x)) return kNaN;  // as PyTorch's kernels give
    const double a = std::fabs(x);
    const double v = a <= kLarge ? bessel_series(nu, a, -1.0) : bessel_hankel(nu, a, false);
    return (nu && x < 0) ? -v : v;
}

inline double y(int nu, double x) {
    if (std::isnan(x) || x < 0) return kNaN;
    if (x == 0) return -kInf;
    if (std::isinf(x)) return kNaN;
    if (x > kLarge) return bessel_hankel(nu, x, true);
    const double lg = std::log(x / 2);
    if (nu == 0)
        return 2 / kPi * ((lg + kEulerGamma) * bessel_series(0, x, -1.0) - log_series(0, x, -1.0));
    return -2 / (kPi * x) + 2 / kPi * lg * bessel_series(1, x, -1.0) -
           log_series(1, x, -1.0) / kPi;
}

// Hurwitz zeta sum_k (k + q)^-s by Euler-Maclaurin: direct terms until q + n > 9, then the
// integral, the half term and Bernoulli corrections
inline double zeta(double s, double q) {
    if (std::isnan(s) || std::isnan(q)) return kNaN;
    if (s == 1) return kInf;
    if (s < 1) return kNaN;
    if (q <= 0) {
        if (q == std::floor(q)) return kInf;
        if (s != std::floor(s)) return kNaN;
    }
    static const double b2k[] = {1.0 / 6,           -1.0 / 30,          1.0 / 42,
                                 -1.0 / 30,         5.0 / 66,           -691.0 / 2730,
                                 7.0 / 6,           -3617.0 / 510,      43867.0 / 798,
                                 -174611.0 / 330,   854513.0 / 138,     -236364091.0 / 2730};
    double sum = 0.0, a = q;
    int n = 0;
    while (n < 9 || a <= 9) {
        const double t = std::pow(a, -s);
        sum += t;
        if (std::fabs(t) < kEps * std::fabs(sum)) return sum;
        a += 1;
        ++n;
    }
    sum += std::pow(a, 1 - s) / (s - 1) + std::pow(a, -s) / 2;
    double rising = s, fact = 2.0, power = std::pow(a, -s - 1);  // s (s+1).. / (2j)!, a^{-s-2j+1}
    for (int jj = 0; jj < 12; ++jj) {
        const double t = b2k[jj] * rising / fact * power;
        sum += t;
        if (std::fabs(t) < kEps * std::fabs(sum)) break;
        rising *= (s + 2 * jj + 1) * (s + 2 * jj + 2);
        fact *= (2.0 * jj + 3) * (2.0 * jj + 4);
        power /= a * a;
    }
    return sum;
}

inline double polygamma(int64_t n, double x) {  // n >= 2
    if (n < 0) return kNaN;
    const double sign = (n % 2) ? 1.0 : -1.0;
    return sign * std::exp(std::lgamma(n + 1.0)) * zeta(n + 1.0, x);
}

inline double erfcx(double x) {
    if (std::isnan(x)) return x;
    if (x < 26) {
        if (x < -26.7) return kInf;
        return std::exp(x * x) * std::erfc(x);
    }
    // 1/(x sqrt(pi)) * (1 - 1/(2x^2) + 3/(2x^2)^2 - 15/(2x^2)^3 ...)
    const double z = 1 / (2 * x * x);
    double term = 1.0, sum = 1.0;
    for (int kk = 1; kk < 30; ++kk) {
        term *= -(2.0 * kk - 1) * z;
        sum += term;
        if (std::fabs(term) < kEps) break;
    }
    return sum / (x * std::sqrt(kPi));
}

inline double log_ndtr(double x) {
    const double t = x / std::sqrt(2.0);
    if (x < -1) return std::log(erfcx(-t) / 2) - t * t;
    return std::log1p(-std::erfc(t) / 2);
}

// the quantile of the standard normal: a rational first guess (Acklam's coefficients), then
// Newton steps on 0.5 erfc(-x / sqrt 2) - p
inline double ndtri(double p) {
    if (std::isnan(p) || p < 0 || p > 1) return kNaN;
    if (p == 0) return -kInf;
    if (p == 1) return kInf;
    static const double a[] = {-3.969683028665376e+01, 2.209460984245205e+02,
                               -2.759285104469687e+02, 1.383577518672690e+02,
                               -3.066479806614716e+01, 2.506628277459239e+00};
    static const double b[] = {-5.447609879822406e+01, 1.615858368580409e+02,
                               -1.556989798598866e+02, 6.680131188771972e+01,
                               -1.328068155288572e+01};
    static const double c[] = {-7.784894002430293e-03, -3.223964580411365e-01,
                               -2.400758277161838e+00, -2.549732539343734e+00,
                               4.374664141464968e+00,  2.938163982698783e+00};
    static const double d[] = {7.784695709041462e-03, 3.224671290700398e-01,
                               2.445134137142996e+00, 3.754408661907416e+00};
    double x;
    const double lo = 0.02425;
    if (p < lo || p > 1 - lo) {
        const double q = std::sqrt(-2 * std::log(p < lo ? p : 1 - p));
        x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
            ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
        if (p > lo) x = -x;
    } else {
        const double q = p - 0.5, r = q * q;
        x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
            (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
    }
    for (int it = 0; it < 3; ++it) {  // Halley steps: each triples the correct digits
        const double e = 0.5 * std::erfc(-x / std::sqrt(2.0)) - p;
        const double u = e * std::sqrt(2 * kPi) * std::exp(x * x / 2);
        x = x - u / (1 + x * u / 2);
    }
    return x;
}

inline double airy_ai(double x) {
    if (std::isinf(x)) return kNaN;  // as PyTorch's kernel gives
    const double ax = std::fabs(x);
    if (ax <= 8) {  // Ai = c1 f(x) - c2 g(x)
        const double c1 = 0.355028053887817239, c2 = 0.258819403792806798;
        const double x3 = x * x * x;
        double f = 1.0, g = x, tf = 1.0, tg = x;
        for (int kk = 1; kk < 200; ++kk) {
            tf *= x3 / ((3.0 * kk - 1) * (3.0 * kk));
            tg *= x3 / ((3.0 * kk) * (3.0 * kk + 1));
            f += tf;
            g += tg;
            if (std::fabs(tf) + std::fabs(tg) < kEps * (std::fabs(f) + std::fabs(g))) break;
        }
        return c1 * f - c2 * g;
    }
    const double zeta = 2.0 / 3 * ax * std::sqrt(ax);
    // u_k = (6k-5)(6k-3)(6k-1) / ((2k-1) 216 k) u_{k-1}
    double u = 1.0, even = 1.0, odd = 0.0, plain = 1.0, last = kInf;
    double zk = 1.0;
    for (int kk = 1; kk < 60; ++kk) {
        u *= (6.0 * kk - 5) * (6.0 * kk - 3) * (6.0 * kk - 1) / ((2.0 * kk - 1) * 216.0 * kk);
        zk /= zeta;
        const double t = u * zk;
        if (t >= last) break;
        last = t;
        plain += (kk % 2 ? -t : t);
        if (kk % 2) odd += ((kk / 2) % 2 ? -t : t);
        else even += ((kk / 2) % 2 ? -t : t);
        if (t < kEps) break;
    }
    const double root = std::sqrt(kPi) * std::sqrt(std::sqrt(ax));
    if (x > 0) return std::exp(-zeta) * plain / (2 * root);
    const double phase = zeta + kPi / 4;
    return (std::sin(phase) * even - std::cos(phase) * odd) / root;
}

// the inverse error function: Newton steps on erf(y) = x from the first Taylor terms where
// |x| < 1/2; beyond, through the normal quantile, erfinv(x) = -ndtri((1 - |x|) / 2) / sqrt 2,
// where 1 - |x| is exact
inline double erfinv(double x) {
    if (std::isnan(x) || x < -1 || x > 1) return kNaN;
    if (std::fabs(x) == 1) return std::copysign(kInf, x);
    if (std::fabs(x) >= 0.5) return std::copysign(-ndtri((1 - std::fabs(x)) / 2), x) / std::sqrt(2.0);
    const double c = std::sqrt(kPi) / 2;  // 1 / erf'(0)
    double y = c * x * (1 + kPi / 12 * x * x);
    for (int k = 0; k < 4; ++k) y -= (std::erf(y) - x) * c * std::exp(y * y);
    return y;
}

// digamma and trigamma in the argument's own precision (float for float), with the steps of
// PyTorch's CPU kernels: their float results carry float rounding that a double evaluation
// would not reproduce to assert_close's tolerance near the poles
template <typename T> inline T digamma_in(T x) {
    if (x == 0) return std::copysign(T(kInf), -x);
    if (x < 0) {
        if (x == std::trunc(x)) return T(kNaN);
        double whole;
        const double r = std::modf(double(x), &whole);  // tan(pi r) is tan(pi x), more exact
        const T reflect = T(kPi / std::tan(kPi * r));
        return digamma_in<T>(T(1) - x) - reflect;
    }
    T result = 0;
    while (x < T(10)) {
        result -= T(1) / x;
        x += T(1);
    }
    if (x == T(10)) return result + T(2.25175258906672110764);  // psi(10) = H_9 - gamma
    // ln x - 1/(2x) - sum_k B_2k / (2k x^2k), B_2k / 2k for k = 7..1
    static const T c[] = {T(1.0 / 12), T(-691.0 / 32760), T(1.0 / 132), T(-1.0 / 240),
                          T(1.0 / 252), T(-1.0 / 120), T(1.0 / 12)};
    T tail = 0;
    if (x < T(1e17)) {
        const T z = T(1) / (x * x);
        T poly = c[0];
        for (int i = 1; i < 7; ++i) poly = poly * z + c[i];
        tail = z * poly;
    }
    return result + std::log(x) - (T(0.5) / x) - tail;
}

template <typename T> inline T trigamma_in(T x) {
    const T pi = T(kPi);
    T sign = 1, result = 0;
    if (x < T(0.5)) {
        sign = -1;
        const T s = std::sin(pi * x);
        result -= (pi * pi) / (s * s);
        x = T(1) - x;
    }
    for (int i = 0; i < 6; ++i) {
        result += T(1) / (x * x);
        x += T(1);
    }
    const T ixx = T(1) / (x * x);
    result += (T(1) + T(1) / (T(2) * x) +
               ixx * (T(1.0 / 6) - ixx * (T(1.0 / 30) - ixx * T(1.0 / 42)))) / x;
    return sign * result;
}

// orthogonal polynomials of degree n at x, by their three-term recurrences, with PyTorch's
// special cases (negative degree 0, the endpoints, the trigonometric form of high degrees)
// the recurrence r_k = 2y r_{k-1} - r_{k-2} that all four kinds share, from r_0 = 1 and the
// kind's r_1; it stops once a term is NaN (past overflow), so a huge degree ends early
template <typename T> inline T chebyshev_recurrence(T y, T r1, int64_t n) {
    if (n == 0) return 1;
    T p = 1, q = r1;
    for (int64_t k = 2; k <= n && !std::isnan(q); ++k) {
        const T r = (y + y) * q - p;
        p = q;
        q = r;
    }
    return q;
}

template <typename T> inline T odd_sign(int64_t n, T v) { return n % 2 == 0 ? v : -v; }

template <typename T> inline T chebyshev_t(T x, int64_t n) {
    if (n < 0) return 0;
    if (std::fabs(x) == T(1)) return x > 0 ? T(1) : odd_sign(n, T(1));
    if (n > 6 && std::fabs(x) < T(1)) return std::cos(T(n) * std::acos(x));
    return chebyshev_recurrence(x, x, n);
}

template <typename T> inline T chebyshev_u(T x, int64_t n) {
    if (n < 0) return 0;
    if (std::fabs(x) == T(1)) return x > 0 ? T(n + 1) : odd_sign(n, T(n + 1));
    if (n > 8 && std::fabs(x) < T(1)) {
        const T a = std::acos(x);
        if (std::sin(a) != T(0)) return std::sin(T(n + 1) * a) / std::sin(a);
        return T(n + 1) * std::cos(T(n + 1) * a) / x;
    }
    return chebyshev_recurrence(x, x + x, n);
}

// third kind V_n(cos a) = cos((n + 1/2) a) / cos(a / 2), fourth kind W_n = sin(..) / sin(a / 2);
// `trig_above` is the degree above which PyTorch switches to the trigonometric form
template <typename T> inline T chebyshev_v_at(T y, int64_t n, int64_t trig_above) {
    if (n < 0) return 0;
    if (std::fabs(y) == T(1)) return y > 0 ? T(1) : odd_sign(n, T(n + n + 1));
    if (n > trig_above && std::fabs(y) < T(1)) {
        const T a = std::acos(y);
        if (std::sin(a / T(2)) != T(1)) return std::cos((T(n) + T(0.5)) * a) / std::cos(a / T(2));
        return odd_sign(n, T(n + n + 1));
    }
    return chebyshev_recurrence(y, y + y - T(1), n);
}

// where cos(a / 2) rounds to 1 (y just below 1), PyTorch's shifted form answers +-1 instead
// of 2n + 1: `shifted` keeps that, so results agree with eager's
template <typename T> inline T chebyshev_w_at(T y, int64_t n, int64_t trig_above, bool shifted) {
    if (n < 0) return 0;
    if (std::fabs(y) == T(1)) return y > 0 ? T(n + n + 1) : odd_sign(n, T(1));
    if (n > trig_above && std::fabs(y) < T(1)) {
        const T a = std::acos(y);
        if (std::cos(a / T(2)) != T(1)) return std::sin((T(n) + T(0.5)) * a) / std::sin(a / T(2));
        return y > 0 && !shifted ? T(n + n + 1) : odd_sign(n, T(1));
    }
    return chebyshev_recurrence(y, y + y + T(1), n);
}

template <typename T> inline T chebyshev_v(T x, int64_t n) { return chebyshev_v_at(x, n, 8); }
template <typename T> inline T chebyshev_w(T x, int64_t n) {
    return chebyshev_w_at(x, n, 8, false);
}

// the shifted polynomials on [0, 1]: the kind at y = 2x - 1, with the endpoints read from x
// itself (x == 0 or 1 exactly) and a lower degree for the trigonometric form, as PyTorch
template <typename T> inline T shifted_chebyshev_t(T x, int64_t n) {
    if (n < 0) return 0;
    if (x == T(1) || x == T(0)) return x > 0 ? T(1) : odd_sign(n, T(1));
    const T y = x + x - T(1);
    if (n > 6 && std::fabs(y) < T(1)) return std::cos(T(n) * std::acos(y));
    return chebyshev_recurrence(y, y, n);
}

template <typename T> inline T shifted_chebyshev_u(T x, int64_t n) {
    if (n < 0) return 0;
    if (x == T(1) || x == T(0)) return x > 0 ? T(n + 1) : odd_sign(n, T(n + 1));
    const T y = x + x - T(1);
    if (n > 6 && std::fabs(y) < T(1)) {
        const T a = std::acos(y);
        if (std::sin(a) != T(0)) return std::sin(T(n + 1) * a) / std::sin(a);
        return T(n + 1) * std::cos(T(n + 1) * a) / y;
    }
    return chebyshev_recurrence(y, y + y, n);
}

template <typename T> inline T shifted_chebyshev_v(T x, int64_t n) {
    if (n >= 0 && (x == T(1) || x == T(0))) return x > 0 ? T(1) : odd_sign(n, T(n + n + 1));
    return chebyshev_v_at(x + x - T(1), n, 6);
}

template <typename T> inline T shifted_chebyshev_w(T x, int64_t n) {
    if (n >= 0 && (x == T(1) || x == T(0))) return x > 0 ? T(n + n + 1) : odd_sign(n, T(1));
    return chebyshev_w_at(x + x - T(1), n, 4, true);
}

template <typename T> inline T hermite_h(T x, int64_t n) {
    if (n < 0) return 0;
    if (n == 0) return 1;
    T p = 1, q = x + x, r = x + x;
    for (int64_t k = 2; k < n + n; k += 2, p = q, q = r) r = (x + x) * q - T(k) * p;
    return r;
}

template <typename T> inline T hermite_he(T x, int64_t n) {
    if (n < 0) return 0;
    if (n == 0) return 1;
    T p = 1, q = x, r = x;
    for (int64_t k = 1; k < n; ++k, p = q, q = r) r = x * q - T(k) * p;
    return r;
}

template <typename T> inline T laguerre_l(T x, int64_t n) {
    if (n < 0) return 0;
    if (std::fabs(x) == T(0) || n == 0) return 1;
    T p = 1, q = T(1) - x, r = T(1) - x;
    for (int64_t k = 1; k < n; ++k, p = q, q = r)
        r = ((T(k + k) + (T(1) - x)) * q - T(k) * p) / T(k + 1);
    return r;
}

template <typename T> inline T legendre_p(T x, int64_t n) {
    if (n < 0) return 0;
    if (std::fabs(x) == T(1)) return (x > 0 || n % 2 == 0) ? T(1) : T(-1);
    if (n == 0) return 1;
    T p = 1, q = x, r = x;
    for (int64_t k = 1; k < n; ++k, p = q, q = r)
        r = (T(k + k + 1) * x * q - T(k) * p) / T(k + 1);
    return r;
}

}  // namespace special_detail

namespace special {
#define AOTC_SPECIAL_UNARY(name, expr)                                                          \
    template <typename T> inline T name(T x_) {                                                  \
        const double x = static_cast<double>(x_);                                               \
        return static_cast<T>(expr);                                                            \
    }
AOTC_SPECIAL_UNARY(erfc, std::erfc(x))
AOTC_SPECIAL_UNARY(lgamma, std::lgamma(x))
AOTC_SPECIAL_UNARY(i0, special_detail::i(0, x))
AOTC_SPECIAL_UNARY(i1, special_detail::i(1, x))
AOTC_SPECIAL_UNARY(i0e, special_detail::ie(0, x))
AOTC_SPECIAL_UNARY(i1e, special_detail::ie(1, x))
AOTC_SPECIAL_UNARY(k0, special_detail::k(0, x))
AOTC_SPECIAL_UNARY(k1, special_detail::k(1, x))
AOTC_SPECIAL_UNARY(k0e, special_detail::ke(0, x))
AOTC_SPECIAL_UNARY(k1e, special_detail::ke(1, x))
AOTC_SPECIAL_UNARY(j0, special_detail::j(0, x))
AOTC_SPECIAL_UNARY(j1, special_detail::j(1, x))
AOTC_SPECIAL_UNARY(y0, special_detail::y(0, x))
AOTC_SPECIAL_UNARY(y1, special_detail::y(1, x))
AOTC_SPECIAL_UNARY(spherical_j0, std::isinf(x) ? 0.0 : (x == 0 ? 1.0 : std::sin(x) / x))
AOTC_SPECIAL_UNARY(ndtr, 0.5 * std::erfc(-x / std::sqrt(2.0)))
AOTC_SPECIAL_UNARY(erfcx, special_detail::erfcx(x))
AOTC_SPECIAL_UNARY(log_ndtr, special_detail::log_ndtr(x))
AOTC_SPECIAL_UNARY(ndtri, special_detail::ndtri(x))
AOTC_SPECIAL_UNARY(airy_ai, special_detail::airy_ai(x))
AOTC_SPECIAL_UNARY(erfinv, special_detail::erfinv(x))
#undef AOTC_SPECIAL_UNARY

template <typename T> inline T digamma(T x) {
    return special_detail::digamma_in<std::conditional_t<std::is_same_v<T, double>, double, float>>(x);
}
template <typename T> inline T zeta(T s, T q) {
    return static_cast<T>(special_detail::zeta(double(s), double(q)));
}
template <typename T> inline T polygamma(T n, T x) {
    using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
    if (n == T(0)) return static_cast<T>(special_detail::digamma_in<C>(C(x)));
    if (n == T(1)) return static_cast<T>(special_detail::trigamma_in<C>(C(x)));
    return static_cast<T>(special_detail::polygamma(static_cast<int64_t>(n), double(x)));
}
#define AOTC_SPECIAL_POLYNOMIAL(name)                                                           \
    template <typename T> inline T name(T x, T n) {                                             \
        using C = std::conditional_t<std::is_same_v<T, double>, double, float>;                \
        if (n != n) return T(0); /* a NaN degree counts as negative, as on x86 */           \
        return static_cast<T>(special_detail::name<C>(C(x), static_cast<int64_t>(n)));         \
    }
AOTC_SPECIAL_POLYNOMIAL(chebyshev_t)
AOTC_SPECIAL_POLYNOMIAL(chebyshev_u)
AOTC_SPECIAL_POLYNOMIAL(chebyshev_v)
AOTC_SPECIAL_POLYNOMIAL(chebyshev_w)
AOTC_SPECIAL_POLYNOMIAL(shifted_chebyshev_t)
AOTC_SPECIAL_POLYNOMIAL(shifted_chebyshev_u)
AOTC_SPECIAL_POLYNOMIAL(shifted_chebyshev_v)
AOTC_SPECIAL_POLYNOMIAL(shifted_chebyshev_w)
AOTC_SPECIAL_POLYNOMIAL(hermite_h)
AOTC_SPECIAL_POLYNOMIAL(hermite_he)
AOTC_SPECIAL_POLYNOMIAL(laguerre_l)
AOTC_SPECIAL_POLYNOMIAL(legendre_p)
#undef AOTC_SPECIAL_POLYNOMIAL
}  // namespace special
}  // namespace aotc
