// The regularized incomplete gamma functions P(a, x) (torch.igamma) and Q(a, x) = 1 - P
// (torch.igammac), written for aotc. Evaluated in double and rounded once to the caller's
// type: the power series of P where x <= max(a, 1), the continued fraction of Q beyond, and
// Temme's uniform expansion for very large a near the transition x ~ a, where both converge
// slowly. Each quantity is computed directly where it is small, so both keep their relative
// accuracy in the tails.

#pragma once

#include <cmath>
#include <limits>

namespace aotc {
namespace igamma_detail {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kEps = 1e-17;
constexpr double kTiny = 1e-300;     // keeps the continued fraction's denominators nonzero
constexpr int kMaxTerms = 20000;     // enough for a <= kTemmeAbove near x ~ a
constexpr double kTemmeAbove = 1e5;  // a above which x ~ a uses the uniform expansion

// x^a e^-x / Gamma(a), the factor in front of both expansions
inline double prefactor(double a, double x) {
    return std::exp(a * std::log(x) - x - std::lgamma(a));
}

// P(a, x) = x^a e^-x / Gamma(a + 1) * sum_k x^k / ((a + 1) ... (a + k))
inline double lower_series(double a, double x) {
    double term = 1, sum = 1;
    for (int k = 1; k < kMaxTerms; ++k) {
        term *= x / (a + k);
        sum += term;
        if (term <= sum * kEps) break;
    }
    return sum * prefactor(a, x) / a;
}

// Q(a, x) = x^a e^-x / Gamma(a) * 1 / (x + 1 - a - 1 (1 - a) / (x + 3 - a - 2 (2 - a) / ...)),
// evaluated forward by the modified Lentz method
inline double upper_fraction(double a, double x) {
    double b = x + 1 - a, c = 1 / kTiny, d = 1 / b, h = d;
    for (int i = 1; i < kMaxTerms; ++i) {
        const double an = -i * (i - a);
        b += 2;
        d = an * d + b;
        if (std::fabs(d) < kTiny) d = kTiny;
        c = b + an / c;
        if (std::fabs(c) < kTiny) c = kTiny;
        d = 1 / d;
        const double step = d * c;
        h *= step;
        if (std::fabs(step - 1) < kEps) break;
    }
    return h * prefactor(a, x);
}

// Temme: Q = erfc(eta sqrt(a / 2)) / 2 + e^{-a eta^2 / 2} / sqrt(2 pi a) (c0(eta) + O(1/a)),
// with lambda = x / a, eta^2 / 2 = lambda - 1 - log(lambda) and c0 = 1 / (lambda - 1) - 1 / eta;
// returns Q, or P when `lower` (the erfc of the opposite sign, the correction negated)
inline double temme(double a, double x, bool lower) {
    const double mu = (x - a) / a;
    const double half_eta2 = mu - std::log1p(mu);
    const double eta = std::copysign(std::sqrt(2 * half_eta2), mu);
    // c0 loses its digits to cancellation near lambda = 1: its Taylor series there
    const double c0 = std::fabs(mu) < 1e-3 ? -1.0 / 3 + eta / 12 - eta * eta * 2 / 135
                                           : 1 / mu - 1 / eta;
    const double pi = 3.14159265358979323846;
    const double tail = std::exp(-a * half_eta2) / std::sqrt(2 * pi * a) * c0;
    const double s = eta * std::sqrt(a / 2);
    return lower ? std::erfc(-s) / 2 - tail : std::erfc(s) / 2 + tail;
}

// the value of P (upper = false) or Q (upper = true) at the edges of the domain, or NaN when
// (a, x) is interior and needs an expansion
inline bool edge(double a, double x, bool upper, double* out) {
    if (std::isnan(a) || std::isnan(x) || a < 0 || x < 0) return *out = kNaN, true;
    double p;
    if (a == 0) {
        if (x == 0) return *out = kNaN, true;
        p = 1;
    } else if (x == 0) {
        p = 0;
    } else if (std::isinf(a)) {
        if (std::isinf(x)) return *out = kNaN, true;
        p = 0;
    } else if (std::isinf(x)) {
        p = 1;
    } else {
        return false;
    }
    *out = upper ? 1 - p : p;
    return true;
}

inline double regularized_gamma(double a, double x, bool upper) {
    double v;
    if (edge(a, x, upper, &v)) return v;
    if (a > kTemmeAbove && std::fabs(x - a) < 0.3 * a) {
        const bool small_p = x < a;  // compute whichever of P and Q is the smaller directly
        const double t = temme(a, x, small_p);
        return upper == small_p ? 1 - t : t;
    }
    if (x > 1 && x > a) {
        const double q = upper_fraction(a, x);
        return upper ? q : 1 - q;
    }
    const double p = lower_series(a, x);
    return upper ? 1 - p : p;
}

}  // namespace igamma_detail

namespace special {
template <typename T> inline T igamma(T a, T x) {
    return static_cast<T>(igamma_detail::regularized_gamma(double(a), double(x), false));
}
template <typename T> inline T igammac(T a, T x) {
    return static_cast<T>(igamma_detail::regularized_gamma(double(a), double(x), true));
}
}  // namespace special
}  // namespace aotc
