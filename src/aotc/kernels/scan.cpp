// Inclusive scans (cumulative sum and product) along one dim of a contiguous tensor seen
// as [outer, n, inner] (see aotc_kernels.h). Each line runs front to back, one thread per
// line or block of lines, so the result never depends on the thread count. float32
// accumulates in double, as PyTorch does on CPU.

#include "aotc_kernels.h"

#include <cstdint>

namespace {

constexpr int64_t kParallelMin = 32768;

template <typename T, typename Acc, bool Prod>
void scan(int64_t outer, int64_t n, int64_t inner, const T *x, T *y) {
    const int64_t work = outer * n * inner;
    if (inner == 1) {  // each row is one line: a running total in a register
#pragma omp parallel for if (work >= kParallelMin)
        for (int64_t o = 0; o < outer; ++o) {
            Acc acc = Prod ? Acc(1) : Acc(0);
            const T *src = x + o * n;
            T *dst = y + o * n;
            for (int64_t j = 0; j < n; ++j) {
                acc = Prod ? Acc(acc * Acc(src[j])) : Acc(acc + Acc(src[j]));
                dst[j] = T(acc);
            }
        }
        return;
    }
    // lines side by side along the contiguous inner dim: a vector of running totals,
    // kept in the accumulation type in blocks of 64 lines
    constexpr int64_t B = 64;
#pragma omp parallel for collapse(2) if (work >= kParallelMin)
    for (int64_t o = 0; o < outer; ++o)
        for (int64_t i0 = 0; i0 < inner; i0 += B) {
            const int64_t m = inner - i0 < B ? inner - i0 : B;
            Acc acc[B];
            for (int64_t i = 0; i < m; ++i) acc[i] = Prod ? Acc(1) : Acc(0);
            for (int64_t j = 0; j < n; ++j) {
                const T *src = x + (o * n + j) * inner + i0;
                T *dst = y + (o * n + j) * inner + i0;
                for (int64_t i = 0; i < m; ++i) {
                    acc[i] = Prod ? Acc(acc[i] * Acc(src[i])) : Acc(acc[i] + Acc(src[i]));
                    dst[i] = T(acc[i]);
                }
            }
        }
}

template <typename T, typename Acc>
void dispatch(int32_t op, int64_t outer, int64_t n, int64_t inner, const T *x, T *y) {
    if (op == AOTC_SCAN_PROD) scan<T, Acc, true>(outer, n, inner, x, y);
    else scan<T, Acc, false>(outer, n, inner, x, y);
}

}  // namespace

extern "C" void aotc_scan_f32(int32_t op, int64_t outer, int64_t n, int64_t inner, const float *x,
                              float *y) {
    dispatch<float, double>(op, outer, n, inner, x, y);
}

extern "C" void aotc_scan_f64(int32_t op, int64_t outer, int64_t n, int64_t inner, const double *x,
                              double *y) {
    dispatch<double, double>(op, outer, n, inner, x, y);
}

extern "C" void aotc_scan_i64(int32_t op, int64_t outer, int64_t n, int64_t inner, const int64_t *x,
                              int64_t *y) {
    // sums and products wrap around like PyTorch's (two's complement), without the
    // undefined behaviour of signed overflow
    dispatch<uint64_t, uint64_t>(op, outer, n, inner, reinterpret_cast<const uint64_t *>(x),
                                 reinterpret_cast<uint64_t *>(y));
}
