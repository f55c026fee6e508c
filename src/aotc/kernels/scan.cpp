// Inclusive scans along one dim of a contiguous tensor seen as [outer, n, inner] (see
// aotc_kernels.h): cumulative sum, product, log-sum-exp, max and min, and the running
// position of the max or min. Each line runs front to back on one thread, so the result
// never depends on the thread count. float32 sums, products and log-sum-exps accumulate
// in double, as PyTorch does on CPU.

#include "aotc_kernels.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>

namespace {

constexpr int64_t kParallelMin = 32768;
constexpr int64_t kBlock = 64;  // lines side by side along the inner dim

template <typename T>
bool is_nan(T v) {
    if constexpr (std::is_floating_point_v<T>) return std::isnan(v);
    return false;
}

// The combining rules: `first` is the value before any element, `step` folds one in.
template <typename Acc> struct Sum {
    static Acc first() { return Acc(0); }
    static Acc step(Acc acc, Acc v) { return acc + v; }
};
template <typename Acc> struct Prod {
    static Acc first() { return Acc(1); }
    static Acc step(Acc acc, Acc v) { return acc * v; }
};
template <typename Acc> struct LogSumExp {  // torch's _log_add_exp_helper(v, acc)
    static Acc first() { return -INFINITY; }
    static Acc step(Acc acc, Acc v) {
        const Acc lo = std::isnan(acc) ? acc : std::min(v, acc);
        const Acc hi = std::isnan(acc) ? acc : std::max(v, acc);
        if (lo != hi || std::isfinite(lo)) return std::log1p(std::exp(lo - hi)) + hi;
        return v;  // both the same infinity
    }
};

// Visit every line: f(src, dst, stride) with stride = inner, B lines at a time when the
// lines interleave (inner > 1), so the inner loop runs over contiguous memory.
template <typename F>
void for_lines(int64_t outer, int64_t n, int64_t inner, F f) {
    const int64_t work = outer * n * inner;
#pragma omp parallel for collapse(2) if (work >= kParallelMin)
    for (int64_t o = 0; o < outer; ++o)
        for (int64_t i0 = 0; i0 < inner; i0 += kBlock)
            f(o * n * inner + i0, inner - i0 < kBlock ? inner - i0 : kBlock);
}

template <typename T, typename Acc, typename Op>
void scan(int64_t outer, int64_t n, int64_t inner, const T *x, T *y) {
    for_lines(outer, n, inner, [&](int64_t base, int64_t m) {
        Acc acc[kBlock];
        for (int64_t i = 0; i < m; ++i) acc[i] = Op::first();
        for (int64_t j = 0; j < n; ++j) {
            const T *src = x + base + j * inner;
            T *dst = y + base + j * inner;
            for (int64_t i = 0; i < m; ++i) {
                acc[i] = Op::step(acc[i], Acc(src[i]));
                dst[i] = T(acc[i]);
            }
        }
    });
}

// Running max (min) and its position, as torch's cummax: a NaN, or a value at least as
// large (small) as the best so far, takes over, so ties keep the last position.
template <typename T, bool Max>
void running_best(int64_t outer, int64_t n, int64_t inner, const T *x, T *values,
                  int64_t *indices) {
    for_lines(outer, n, inner, [&](int64_t base, int64_t m) {
        T best[kBlock];
        int64_t at[kBlock] = {0};
        for (int64_t i = 0; i < m; ++i) best[i] = x[base + i];
        for (int64_t j = 0; j < n; ++j) {
            const T *src = x + base + j * inner;
            for (int64_t i = 0; i < m; ++i) {
                const T v = src[i];
                const bool wins = Max ? v >= best[i] : v <= best[i];
                if (is_nan(v) || (!is_nan(best[i]) && wins)) {
                    best[i] = v;
                    at[i] = j;
                }
                if (values) values[base + j * inner + i] = best[i];
                if (indices) indices[base + j * inner + i] = at[i];
            }
        }
    });
}

template <typename T, typename Acc>
void dispatch(int32_t op, int64_t outer, int64_t n, int64_t inner, const T *x, T *y) {
    switch (op) {
        case AOTC_SCAN_PROD: return scan<T, Acc, Prod<Acc>>(outer, n, inner, x, y);
        case AOTC_SCAN_MAX: return running_best<T, true>(outer, n, inner, x, y, nullptr);
        case AOTC_SCAN_MIN: return running_best<T, false>(outer, n, inner, x, y, nullptr);
        default: return scan<T, Acc, Sum<Acc>>(outer, n, inner, x, y);
    }
}

template <typename T>
void dispatch_index(int32_t op, int64_t outer, int64_t n, int64_t inner, const T *x,
                    int64_t *y) {
    if (op == AOTC_SCAN_MIN) running_best<T, false>(outer, n, inner, x, nullptr, y);
    else running_best<T, true>(outer, n, inner, x, nullptr, y);
}

}  // namespace

extern "C" void aotc_scan_f32(int32_t op, int64_t outer, int64_t n, int64_t inner, const float *x,
                              float *y) {
    if (op == AOTC_SCAN_LOGSUMEXP)
        return scan<float, double, LogSumExp<double>>(outer, n, inner, x, y);
    dispatch<float, double>(op, outer, n, inner, x, y);
}

extern "C" void aotc_scan_f64(int32_t op, int64_t outer, int64_t n, int64_t inner, const double *x,
                              double *y) {
    if (op == AOTC_SCAN_LOGSUMEXP)
        return scan<double, double, LogSumExp<double>>(outer, n, inner, x, y);
    dispatch<double, double>(op, outer, n, inner, x, y);
}

extern "C" void aotc_scan_i64(int32_t op, int64_t outer, int64_t n, int64_t inner, const int64_t *x,
                              int64_t *y) {
    if (op == AOTC_SCAN_MAX || op == AOTC_SCAN_MIN)
        return dispatch<int64_t, int64_t>(op, outer, n, inner, x, y);
    // sums and products wrap around like PyTorch's (two's complement), without the
    // undefined behaviour of signed overflow
    dispatch<uint64_t, uint64_t>(op, outer, n, inner, reinterpret_cast<const uint64_t *>(x),
                                 reinterpret_cast<uint64_t *>(y));
}

extern "C" void aotc_scan_index_f32(int32_t op, int64_t outer, int64_t n, int64_t inner,
                                    const float *x, int64_t *y) {
    dispatch_index<float>(op, outer, n, inner, x, y);
}

extern "C" void aotc_scan_index_f64(int32_t op, int64_t outer, int64_t n, int64_t inner,
                                    const double *x, int64_t *y) {
    dispatch_index<double>(op, outer, n, inner, x, y);
}

extern "C" void aotc_scan_index_i64(int32_t op, int64_t outer, int64_t n, int64_t inner,
                                    const int64_t *x, int64_t *y) {
    dispatch_index<int64_t>(op, outer, n, inner, x, y);
}
