// Batched 1-D discrete Fourier transforms over interleaved (real, imag) pairs (see
// aotc_kernels.h): complex to complex either way, real to complex (forward) and complex to
// real (inverse, from the Hermitian half). Any length: one Stockham (autosort) Cooley-Tukey
// pass per factor, radix 4, 2, 3 and 5 written out and every other prime up to kMaxRadix by a
// butterfly that pairs the roots k and p - k; a length with a larger prime factor goes
// through Bluestein's chirp-z, a convolution done by power-of-two transforms. Twiddles are
// computed in double from exact integer angles, the arithmetic is in the element type. A
// batch of at least kLanes lines runs kLanes lines at a time, one per lane of a SIMD vector
// (the same butterflies on vectors of elements, gathered from and scattered to the lines;
// the last group padded with zero lines); fewer lines run one at a time. Each group or line
// is done by one thread front to back, so a result never depends on the thread count.

#include "aotc_kernels.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <type_traits>
#include <vector>

namespace {

constexpr int64_t kParallelMin = 1 << 14;  // elements of work below which one thread runs
constexpr int64_t kMaxRadix = 31;          // larger prime factors go through Bluestein
constexpr double kPi = 3.141592653589793238462643383279502884;

template <typename T>
struct Cx {
    T re, im;
};

// A vector of lanes of T: element j of kLanes lines at once (GCC's vector extension, which
// takes a scalar operand as that value in every lane)
#if defined(__AVX512F__)
constexpr int kVectorBytes = 64;
#elif defined(__AVX__)
constexpr int kVectorBytes = 32;
#else
constexpr int kVectorBytes = 16;
#endif
template <typename T>
struct LanesOf;
template <>
struct LanesOf<float> {
    typedef float type __attribute__((vector_size(kVectorBytes)));
};
template <>
struct LanesOf<double> {
    typedef double type __attribute__((vector_size(kVectorBytes)));
};
template <typename T>
using Lanes = typename LanesOf<T>::type;
template <typename T>
constexpr int64_t kLanes = kVectorBytes / sizeof(T);

// complex arithmetic on Cx<T> or Cx<Lanes<T>> values, a twiddle or root a scalar Cx<T>
template <typename A, typename B>
inline Cx<A> operator+(Cx<A> a, Cx<B> b) { return {a.re + b.re, a.im + b.im}; }
template <typename A>
inline Cx<A> operator-(Cx<A> a, Cx<A> b) { return {a.re - b.re, a.im - b.im}; }
template <typename A, typename B>
inline Cx<A> operator*(Cx<A> a, Cx<B> b) {
    return {a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re};
}
template <typename A, typename T>
inline Cx<A> scaled(Cx<A> a, T s) { return {a.re * s, a.im * s}; }
template <typename T>
inline Cx<T> conj(Cx<T> a) { return {a.re, -a.im}; }
// a * (sign i): a quarter turn, counterclockwise for sign +1
template <typename T>
inline Cx<T> turn(Cx<T> a, int sign) { return sign > 0 ? Cx<T>{-a.im, a.re} : Cx<T>{a.im, -a.re}; }

// exp(sign * 2 pi i * k / n), from k reduced into (-n/2, n/2] so the angle is small
template <typename T>
Cx<T> root(int64_t k, int64_t n, int sign) {
    k %= n;
    if (k < 0) k += n;
    if (2 * k > n) k -= n;
    const double a = 2.0 * kPi * double(k) / double(n);
    return {T(std::cos(a)), T(sign * std::sin(a))};
}

// One pass on l sequences of length p*m held interleaved (element j of sequence b at
// b + l*j): each becomes p sequences of length m, sequence b + l*k2 at position
// b + l*k2 + l*p*j1, so that after the last pass (m = 1) the data is in natural order.
template <typename T>
struct Pass {
    int64_t p, l, m;
    size_t twiddles;  // offset of tw[j1*(p-1) + k2-1] = w_{p*m}^(j1*k2) in Plan::twiddles
    size_t roots;     // offset of w_p^r, r < p, in Plan::twiddles (generic radix)
};

template <typename T>
class Plan {
   public:
    // false when out of memory
    bool build(int64_t n, int sign) noexcept {
        try {
            make(n, sign);
            return true;
        } catch (const std::bad_alloc &) {
            return false;
        }
    }

    // elements of scratch `run` needs besides the line
    int64_t work() const { return bluestein_ ? 2 * big_ : n_; }

    // the transform of x (n values: Cx<T>, or Cx<Lanes<T>> for a group of lines) in place
    template <typename D>
    void run(D *x, D *work) const {
        if (bluestein_) return run_bluestein(x, work);
        D *src = x, *dst = work;
        for (const Pass<T> &pass : passes_) {
            apply(pass, src, dst);
            D *t = src;
            src = dst;
            dst = t;
        }
        if (src != x)
            for (int64_t j = 0; j < n_; ++j) x[j] = src[j];
    }

   private:
    int64_t n_ = 0, big_ = 0;
    int sign_ = -1;
    bool bluestein_ = false;
    std::vector<Pass<T>> passes_;
    std::vector<Cx<T>> twiddles_;
    std::vector<Cx<T>> chirp_, filter_;  // Bluestein
    std::vector<Plan<T>> sub_;           // Bluestein: the forward transform of length big_

    void make(int64_t n, int sign) {
        n_ = n;
        sign_ = sign;
        std::vector<int64_t> radices;
        int64_t rest = n;
        while (rest % 4 == 0) {
            radices.push_back(4);
            rest /= 4;
        }
        for (int64_t p = 2; p <= kMaxRadix && rest > 1; ++p)
            while (rest % p == 0) {
                radices.push_back(p);
                rest /= p;
            }
        if (rest > 1) return make_bluestein();
        int64_t l = 1;
        for (int64_t p : radices) {
            const int64_t m = n / (l * p);
            Pass<T> pass{p, l, m, twiddles_.size(), 0};
            for (int64_t j1 = 0; j1 < m; ++j1)
                for (int64_t k2 = 1; k2 < p; ++k2) twiddles_.push_back(root<T>(j1 * k2, p * m, sign));
            pass.roots = twiddles_.size();
            for (int64_t r = 0; r < p; ++r) twiddles_.push_back(root<T>(r, p, sign));
            passes_.push_back(pass);
            l *= p;
        }
    }

    // X[k] = c[k] sum_j (x[j] c[j]) conj(c[k - j]), c[t] = exp(sign pi i t^2 / n): a
    // cyclic convolution of length big_ >= 2n - 1, the filter's transform made once
    void make_bluestein() {
        bluestein_ = true;
        big_ = 1;
        while (big_ < 2 * n_ - 1) big_ *= 2;
        chirp_.resize(size_t(n_));
        int64_t r = 0;  // t^2 mod 2n, exactly
        for (int64_t t = 0; t < n_; ++t) {
            const double a = kPi * double(r) / double(n_);
            chirp_[size_t(t)] = {T(std::cos(a)), T(sign_ * std::sin(a))};
            r = (r + 2 * t + 1) % (2 * n_);
        }
        sub_.resize(1);
        sub_[0].make(big_, -1);
        filter_.assign(size_t(big_), Cx<T>{T(0), T(0)});
        filter_[0] = conj(chirp_[0]);
        for (int64_t t = 1; t < n_; ++t)
            filter_[size_t(t)] = filter_[size_t(big_ - t)] = conj(chirp_[size_t(t)]);
        std::vector<Cx<T>> scratch(static_cast<size_t>(big_));
        sub_[0].run(filter_.data(), scratch.data());
        const T inv = T(1.0 / double(big_));
        for (Cx<T> &f : filter_) f = scaled(f, inv);
    }

    template <typename D>
    void run_bluestein(D *x, D *work) const {
        D *a = work, *scratch = work + big_;
        for (int64_t j = 0; j < n_; ++j) a[j] = x[j] * chirp_[size_t(j)];
        for (int64_t j = n_; j < big_; ++j) a[j] = D{};
        sub_[0].run(a, scratch);
        // the inverse transform as conj(forward(conj(.)))
        for (int64_t j = 0; j < big_; ++j) a[j] = conj(a[j] * filter_[size_t(j)]);
        sub_[0].run(a, scratch);
        for (int64_t k = 0; k < n_; ++k) x[k] = conj(a[k]) * chirp_[size_t(k)];
    }

    template <typename D>
    void apply(const Pass<T> &pass, const D *src, D *dst) const {
        if (pass.p == 4) return sweep<4>(pass, src, dst);
        if (pass.p == 2) return sweep<2>(pass, src, dst);
        if (pass.p == 3) return sweep<3>(pass, src, dst);
        if (pass.p == 5) return sweep<5>(pass, src, dst);
        sweep<0>(pass, src, dst);
    }

    // The butterflies of one pass, the radix a template argument (0: generic) so that each
    // loop holds one; j1 = 0 needs no twiddles, and the longer of the b and j1 loops runs
    // innermost.
    template <int R, typename D>
    void sweep(const Pass<T> &pass, const D *src, D *dst) const {
        const int64_t p = pass.p, l = pass.l, m = pass.m, is = l * m, os = l;
        const Cx<T> *tw = twiddles_.data() + pass.twiddles;
        const Cx<T> *roots = twiddles_.data() + pass.roots;
        for (int64_t b = 0; b < l; ++b) butterfly<R, false>(p, roots, src + b, is, dst + b, os, tw);
        if (l >= m) {
            for (int64_t j1 = 1; j1 < m; ++j1) {
                const Cx<T> *w = tw + j1 * (p - 1);
                const D *in = src + l * j1;
                D *out = dst + l * p * j1;
                for (int64_t b = 0; b < l; ++b) butterfly<R, true>(p, roots, in + b, is, out + b, os, w);
            }
        } else {
            for (int64_t b = 0; b < l; ++b)
                for (int64_t j1 = 1; j1 < m; ++j1)
                    butterfly<R, true>(p, roots, src + l * j1 + b, is, dst + l * p * j1 + b, os,
                                       tw + j1 * (p - 1));
        }
    }

    template <bool Tw, typename D>
    static void store(D *out, int64_t k, int64_t step, D v, const Cx<T> *w) {
        if constexpr (Tw)
            out[k * step] = k ? v * w[k - 1] : v;
        else
            out[k * step] = v;
    }

    template <int R, bool Tw, typename D>
    void butterfly(int64_t p, const Cx<T> *roots, const D *in, int64_t is, D *out,
                   int64_t os, const Cx<T> *w) const {
        if constexpr (R == 2) {
            const D a0 = in[0], a1 = in[is];
            store<Tw>(out, 0, os, a0 + a1, w);
            store<Tw>(out, 1, os, a0 - a1, w);
        } else if constexpr (R == 3) {
            const T half_sqrt3 = T(0.866025403784438646763723170752936183);
            const D a0 = in[0], a1 = in[is], a2 = in[2 * is];
            const D s = a1 + a2;
            const D u = {a0.re - T(0.5) * s.re, a0.im - T(0.5) * s.im};
            const D v = turn(scaled(a1 - a2, half_sqrt3), sign_);
            store<Tw>(out, 0, os, a0 + s, w);
            store<Tw>(out, 1, os, u + v, w);
            store<Tw>(out, 2, os, u - v, w);
        } else if constexpr (R == 4) {
            const D a0 = in[0], a1 = in[is], a2 = in[2 * is], a3 = in[3 * is];
            const D t0 = a0 + a2, t1 = a0 - a2, t2 = a1 + a3, t3 = turn(a1 - a3, sign_);
            store<Tw>(out, 0, os, t0 + t2, w);
            store<Tw>(out, 1, os, t1 + t3, w);
            store<Tw>(out, 2, os, t0 - t2, w);
            store<Tw>(out, 3, os, t1 - t3, w);
        } else if constexpr (R == 5) {
            // cos and sin of 2 pi / 5 and 4 pi / 5; w^3 and w^4 are the conjugates of w^2, w
            const T c1 = T(0.309016994374947424102293417182819059);
            const T c2 = T(-0.809016994374947424102293417182819059);
            const T s1 = T(0.951056516295153572116439333379382143);
            const T s2 = T(0.587785252292473129168705954639072769);
            const D a0 = in[0], a1 = in[is], a2 = in[2 * is], a3 = in[3 * is], a4 = in[4 * is];
            const D p1 = a1 + a4, p2 = a2 + a3, d1 = a1 - a4, d2 = a2 - a3;
            const D e1 = a0 + scaled(p1, c1) + scaled(p2, c2);
            const D e2 = a0 + scaled(p1, c2) + scaled(p2, c1);
            const D o1 = turn(scaled(d1, s1) + scaled(d2, s2), sign_);
            const D o2 = turn(scaled(d1, s2) - scaled(d2, s1), sign_);
            store<Tw>(out, 0, os, a0 + p1 + p2, w);
            store<Tw>(out, 1, os, e1 + o1, w);
            store<Tw>(out, 2, os, e2 + o2, w);
            store<Tw>(out, 3, os, e2 - o2, w);
            store<Tw>(out, 4, os, e1 - o1, w);
        } else {
            generic<Tw>(p, roots, in, is, out, os, w);
        }
    }

    // any odd prime p <= kMaxRadix: c_k and c_{p-k} share the sums over the pairs
    // a_q +- a_{p-q}, weighted by cos and sin of 2 pi q k / p (`roots`: w_p^r)
    template <bool Tw, typename D>
    static void generic(int64_t p, const Cx<T> *roots, const D *in, int64_t is, D *out,
                        int64_t os, const Cx<T> *w) {
        D sum[kMaxRadix / 2 + 1], diff[kMaxRadix / 2 + 1];
        const D a0 = in[0];
        D total = a0;
        const int64_t h = p / 2;
        for (int64_t q = 1; q <= h; ++q) {
            const D x = in[q * is], y = in[(p - q) * is];
            sum[q] = x + y;
            diff[q] = x - y;
            total = total + sum[q];
        }
        store<Tw>(out, 0, os, total, w);
        for (int64_t k = 1; k <= h; ++k) {
            D even = a0, odd = {};
            int64_t r = 0;
            for (int64_t q = 1; q <= h; ++q) {
                r += k;
                if (r >= p) r -= p;
                // roots[r] = cos + i sign sin: a_q w^r + a_{p-q} w^-r = sum cos + i sign sin diff
                even = even + scaled(sum[q], roots[r].re);
                odd = odd + scaled(diff[q], roots[r].im);
            }
            const D i_odd = turn(odd, 1);  // roots' imaginary parts carry the sign
            store<Tw>(out, k, os, even + i_odd, w);
            store<Tw>(out, p - k, os, even - i_odd, w);
        }
    }
};

// One lane of a line buffer's element: Cx<T> holds one line, Cx<Lanes<T>> kLanes of them
template <typename T>
inline void set_lane(Cx<T> &d, int64_t, T re, T im) { d = {re, im}; }
template <typename T>
inline Cx<T> lane(const Cx<T> &d, int64_t) { return d; }
#define AOTC_FFT_LANE_ACCESS(T)                                                              \
    inline void set_lane(Cx<Lanes<T>> &d, int64_t l, T re, T im) {                           \
        d.re[l] = re;                                                                        \
        d.im[l] = im;                                                                        \
    }                                                                                        \
    inline Cx<T> lane(const Cx<Lanes<T>> &d, int64_t l) { return {d.re[l], d.im[l]}; }
AOTC_FFT_LANE_ACCESS(float)
AOTC_FFT_LANE_ACCESS(double)

// Calls body(first line, lanes, line buffer of n values, work buffer) for each group of
// kLanes lines (the last group with fewer lanes, the others zero) on Cx<Lanes<T>> buffers
// when there are at least kLanes lines, else for each line (one lane) on Cx<T> buffers; each
// group or line on one thread with scratch of its own. 1 when some thread could not
// allocate it.
template <typename T, typename D, typename F>
int for_groups(int64_t lines, int64_t per_group, int64_t n, const Plan<T> &plan, F body) {
    int failed = 0;
    const int64_t groups = (lines + per_group - 1) / per_group;
    const int64_t each = n + plan.work();
#pragma omp parallel if (groups > 1 && lines * n >= kParallelMin)
    {
        void *raw = nullptr;
        if (posix_memalign(&raw, 64, sizeof(D) * size_t(each)) != 0) raw = nullptr;
        D *buf = static_cast<D *>(raw);
        if (buf == nullptr) {
#pragma omp atomic write
            failed = 1;
        }
#pragma omp for schedule(static)
        for (int64_t g = 0; g < groups; ++g)
            if (buf != nullptr) {
                const int64_t first = g * per_group;
                body(first, std::min(per_group, lines - first), buf, buf + n);
            }
        std::free(buf);
    }
    return failed;
}

template <typename T, typename F>
int for_lines(int64_t lines, int64_t n, const Plan<T> &plan, F body) {
    if (lines >= kLanes<T>)
        return for_groups<T, Cx<Lanes<T>>>(lines, kLanes<T>, n, plan, body);
    return for_groups<T, Cx<T>>(lines, 1, n, plan, body);
}

// the factor a normalization mode applies for a signal of `size` elements
double norm_scale(int32_t norm, int64_t size) {
    if (norm == AOTC_FFT_NORM_BY_SQRT_N) return 1.0 / std::sqrt(double(size));
    if (norm == AOTC_FFT_NORM_BY_N) return 1.0 / double(size);
    return 1.0;
}

template <typename T>
int c2c(int64_t outer, int64_t n, int64_t inner, int32_t inverse, int32_t norm, int64_t norm_size,
        const T *x, T *y) {
    if (outer * inner == 0 || n == 0) return 0;
    Plan<T> plan;
    if (!plan.build(n, inverse ? 1 : -1)) return 1;
    const T s = T(norm_scale(norm, norm_size));
    auto base = [&](int64_t t) { return (t / inner) * n * inner + t % inner; };
    return for_lines<T>(outer * inner, n, plan, [&](int64_t first, int64_t lanes, auto *v,
                                                    auto *work) {
        using D = std::remove_pointer_t<decltype(v)>;
        for (int64_t j = 0; j < n; ++j) {
            D e{};
            for (int64_t l = 0; l < lanes; ++l) {
                const T *p = x + 2 * (base(first + l) + j * inner);
                set_lane(e, l, p[0], p[1]);
            }
            v[j] = e;
        }
        plan.run(v, work);
        for (int64_t j = 0; j < n; ++j)
            for (int64_t l = 0; l < lanes; ++l) {
                const Cx<T> c = lane(v[j], l);
                T *e = y + 2 * (base(first + l) + j * inner);
                e[0] = c.re * s;
                e[1] = c.im * s;
            }
    });
}

// w^k = exp(sign 2 pi i k / n) for k <= n / 2: what joins the two halves of an even real
// transform done as one complex transform of half its length; false when out of memory
template <typename T>
bool half_twiddles(std::vector<Cx<T>> &tw, int64_t n, int sign) noexcept {
    try {
        tw.resize(size_t(n / 2 + 1));
    } catch (const std::bad_alloc &) {
        return false;
    }
    for (int64_t k = 0; k <= n / 2; ++k) tw[size_t(k)] = root<T>(k, n, sign);
    return true;
}

// An even length n = 2h transforms z[j] = x[2j] + i x[2j+1] (h values) and takes the
// spectrum apart: X[k] = E[k] + w^k O[k], E[k] = (Z[k] + conj Z[h-k]) / 2,
// O[k] = (Z[k] - conj Z[h-k]) / 2i (indices mod h), X[n-k] = conj X[k]. An odd one is
// transformed as complex with zero imaginary parts.
template <typename T>
int r2c(int64_t outer, int64_t n, int64_t inner, int64_t out_n, int32_t norm, int64_t norm_size,
        const T *x, T *y) {
    if (outer * inner == 0 || out_n == 0) return 0;
    const bool even = n % 2 == 0;
    const int64_t h = even ? n / 2 : n;
    Plan<T> plan;
    std::vector<Cx<T>> tw;
    if (!plan.build(h, -1) || (even && !half_twiddles(tw, n, -1))) return 1;
    const T s = T(norm_scale(norm, norm_size));
    const T half = T(0.5);
    return for_lines<T>(outer * inner, n, plan, [&](int64_t first, int64_t lanes, auto *v,
                                                    auto *work) {
        using D = std::remove_pointer_t<decltype(v)>;
        for (int64_t j = 0; j < h; ++j) {
            D e{};
            for (int64_t l = 0; l < lanes; ++l) {
                const int64_t t = first + l;
                const T *in = x + (t / inner) * n * inner + t % inner;
                if (even)
                    set_lane(e, l, in[2 * j * inner], in[(2 * j + 1) * inner]);
                else
                    set_lane(e, l, in[j * inner], T(0));
            }
            v[j] = e;
        }
        plan.run(v, work);
        for (int64_t k = 0; k < out_n; ++k) {
            const int64_t kk = 2 * k > n ? n - k : k;  // X[n-k] = conj X[k]
            D value = v[kk];
            if (even) {
                const D a = v[kk % h], b = conj(v[(h - kk) % h]);
                value = scaled(a + b, half) + turn(scaled(a - b, half), -1) * tw[size_t(kk)];
            }
            if (kk != k) value = conj(value);
            for (int64_t l = 0; l < lanes; ++l) {
                const int64_t t = first + l;
                const Cx<T> c = lane(value, l);
                T *e = y + 2 * (((t / inner) * out_n + k) * inner + t % inner);
                e[0] = c.re * s;
                e[1] = c.im * s;
            }
        }
    });
}

// An even length n = 2h: Z[k] = E[k] + i O[k], E[k] = X[k] + conj X[h-k],
// O[k] = (X[k] - conj X[h-k]) w^k, whose backward transform of length h is
// x[2j] + i x[2j+1]. The imaginary parts of X[0] and X[h] do not count, as in a c2r
// (they would leak into this one). An odd one completes the Hermitian spectrum.
template <typename T>
int c2r(int64_t outer, int64_t in_n, int64_t inner, int64_t n, int32_t norm, int64_t norm_size,
        const T *x, T *y) {
    if (outer * inner == 0 || n == 0) return 0;
    const bool even = n % 2 == 0;
    const int64_t h = even ? n / 2 : n;
    Plan<T> plan;
    std::vector<Cx<T>> tw;
    if (!plan.build(h, 1) || (even && !half_twiddles(tw, n, 1))) return 1;
    const T s = T(norm_scale(norm, norm_size));
    const int64_t given = n / 2 + 1;
    return for_lines<T>(outer * inner, n + 2, plan, [&](int64_t first, int64_t lanes, auto *v,
                                                        auto *work) {
        using D = std::remove_pointer_t<decltype(v)>;
        for (int64_t k = 0; k < given; ++k) {
            D e{};
            for (int64_t l = 0; l < lanes; ++l) {
                const int64_t t = first + l;
                const T *p = x + 2 * (((t / inner) * in_n + k) * inner + t % inner);
                if (k < in_n) set_lane(e, l, p[0], p[1]);
            }
            v[k] = e;
        }
        auto store = [&](int64_t j, auto value) {  // out[j] of each lane's line
            for (int64_t l = 0; l < lanes; ++l) {
                const int64_t t = first + l;
                y[((t / inner) * n + j) * inner + t % inner] = lane(value, l).re * s;
            }
        };
        if (!even) {
            for (int64_t k = given; k < n; ++k) v[k] = conj(v[n - k]);
            plan.run(v, work);
            for (int64_t j = 0; j < n; ++j) store(j, v[j]);
            return;
        }
        v[0].im = decltype(v[0].im){};
        v[h].im = decltype(v[h].im){};
        D *z = v + h + 1;
        for (int64_t k = 0; k < h; ++k) {
            const D a = v[k], b = conj(v[h - k]);
            z[k] = (a + b) + turn((a - b) * tw[size_t(k)], 1);
        }
        plan.run(z, work);
        for (int64_t j = 0; j < h; ++j) {
            store(2 * j, z[j]);
            store(2 * j + 1, D{z[j].im, z[j].re});
        }
    });
}

}  // namespace

#define AOTC_FFT_DEFINE(suffix, T)                                                           \
    int aotc_fft_c2c_##suffix(int64_t outer, int64_t n, int64_t inner, int32_t inverse,      \
                              int32_t norm, int64_t norm_size, const T *x, T *y) {           \
        return c2c<T>(outer, n, inner, inverse, norm, norm_size, x, y);                      \
    }                                                                                        \
    int aotc_fft_r2c_##suffix(int64_t outer, int64_t n, int64_t inner, int64_t out_n,        \
                              int32_t norm, int64_t norm_size, const T *x, T *y) {           \
        return r2c<T>(outer, n, inner, out_n, norm, norm_size, x, y);                        \
    }                                                                                        \
    int aotc_fft_c2r_##suffix(int64_t outer, int64_t in_n, int64_t inner, int64_t n,         \
                              int32_t norm, int64_t norm_size, const T *x, T *y) {           \
        return c2r<T>(outer, in_n, inner, n, norm, norm_size, x, y);                         \
    }

extern "C" {
AOTC_FFT_DEFINE(f32, float)
AOTC_FFT_DEFINE(f64, double)
}
