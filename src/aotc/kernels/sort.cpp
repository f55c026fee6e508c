// Sorting positions and binary search: the kernels behind sort, argsort, msort, topk,
// kthvalue and searchsorted (see aotc_kernels.h). Each line is ordered by comparing values
// only (NaN above every number), with the standard algorithm each op's contract names: a
// stable sort, an unstable sort, a partial sort or selection for the first k (nth_element
// and a sort of the rest when k is large), so that equal values come out in the order
// PyTorch's CPU kernels give them, which run the same algorithms on the same comparisons.
// median, nanmedian and mode pick one position per line with the rules of those kernels.

#include "aotc_kernels.h"

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

namespace {

constexpr int64_t kParallelMin = 4096;

template <typename T> inline bool is_nan(T v) {
    if constexpr (std::is_floating_point_v<T>) return v != v;
    else return false;
}

template <typename T> struct Before {
    const T *src;
    int64_t stride;
    bool desc;
    bool operator()(int64_t a, int64_t b) const {
        const T va = src[a * stride], vb = src[b * stride];
        return desc ? ((is_nan(va) && !is_nan(vb)) || va > vb)
                    : ((!is_nan(va) && is_nan(vb)) || va < vb);
    }
};

// (value, position) order, NaN above every number: a total order, so the element of a given
// rank is the same whatever nth_element does with ties
template <typename T> struct BeforeOrFirst {
    const T *src;
    int64_t stride;
    bool operator()(int64_t a, int64_t b) const {
        const T va = src[a * stride], vb = src[b * stride];
        const bool na = is_nan(va), nb = is_nan(vb);
        if (na || nb) return na == nb ? a < b : nb;
        return va < vb || (va == vb && a < b);
    }
};

// the position median (ignore_nan = false) or nanmedian reports for a line: the lower median
// of the numbers, ties to the smaller position; for median a line with a NaN gives its first
template <typename T>
int64_t median_position(int64_t n, bool ignore_nan, const Before<T> &before,
                        std::vector<int64_t> &pos) {
    int64_t nans = 0;
    for (int64_t j = 0; j < n; ++j) {
        if (is_nan(before.src[j * before.stride])) {
            if (!ignore_nan) return j;
            ++nans;
        }
    }
    const int64_t k = nans == n ? 0 : (n - nans - 1) / 2;
    std::nth_element(pos.begin(), pos.begin() + k, pos.end(),
                     BeforeOrFirst<T>{before.src, before.stride});
    return pos[k];
}

// the position mode reports: sort by value (introsort, as PyTorch), then the last position of
// the first longest run of equal values (PyTorch compares NaN with `<`, which is no order and
// may read outside the line in std::sort; here NaN ranks highest)
template <typename T>
int64_t mode_position(int64_t n, const Before<T> &before, std::vector<int64_t> &pos) {
    std::sort(pos.begin(), pos.end(), before);
    const auto value = [&](int64_t j) { return before.src[pos[j] * before.stride]; };
    int64_t best = 0, best_count = 0, run = 0;
    for (int64_t j = 0; j < n; ++j) {
        ++run;
        if (j == n - 1 || value(j) != value(j + 1)) {
            if (run > best_count) best = pos[j], best_count = run;
            run = 0;
        }
    }
    return best;
}

template <typename T>
void order_line(int32_t algorithm, int64_t n, int64_t first, int64_t count, const Before<T> &before,
                std::vector<int64_t> &pos) {
    for (int64_t j = 0; j < n; ++j) pos[j] = j;
    const auto begin = pos.begin(), end = pos.end();
    switch (algorithm) {
    case AOTC_SORT_STABLE:
        std::stable_sort(begin, end, before);
        break;
    case AOTC_SORT_UNSTABLE:
        std::sort(begin, end, before);
        break;
    case AOTC_SORT_TOPK:
    case AOTC_SORT_TOPK_UNSORTED:
        if (count == 0) break;
        if (count * 64 <= n) {  // few of many: a heap of the best so far
            std::partial_sort(begin, begin + count, end, before);
        } else {
            std::nth_element(begin, begin + count - 1, end, before);
            if (algorithm == AOTC_SORT_TOPK) std::sort(begin, begin + count - 1, before);
        }
        break;
    case AOTC_SORT_MEDIAN:
    case AOTC_SORT_NANMEDIAN:
        pos[first] = median_position(n, algorithm == AOTC_SORT_NANMEDIAN, before, pos);
        break;
    case AOTC_SORT_MODE:
        pos[first] = mode_position(n, before, pos);
        break;
    default:  // AOTC_SORT_SELECT: the element at `first` in sorted order
        std::nth_element(begin, begin + first, end, before);
        break;
    }
}

template <typename T>
void argsort(int32_t algorithm, int64_t outer, int64_t n, int64_t inner, int64_t first,
             int64_t count, bool desc, const T *x, int64_t *out) {
    const int64_t lines = outer * inner;
#pragma omp parallel if (lines * n >= kParallelMin)
    {
        std::vector<int64_t> pos(static_cast<size_t>(n));
#pragma omp for
        for (int64_t line = 0; line < lines; ++line) {
            const int64_t o = line / inner, i = line % inner;
            order_line<T>(algorithm, n, first, count, Before<T>{x + o * n * inner + i, inner, desc},
                          pos);
            int64_t *dst = out + o * count * inner + i;
            for (int64_t j = 0; j < count; ++j) dst[j * inner] = pos[first + j];
        }
    }
}

// the first place in `line` where v may go: before the first element >= v (left) or > v
// (right); comparisons with NaN are false, so a NaN value goes after every number
template <typename T>
void searchsorted(int64_t lines, int64_t n, int64_t rows, int64_t per_row, bool right,
                  const T *sorted, const T *values, int64_t *out) {
#pragma omp parallel for if (rows * per_row >= kParallelMin)
    for (int64_t r = 0; r < rows; ++r) {
        const T *line = sorted + (lines == 1 ? 0 : r * n);
        for (int64_t j = 0; j < per_row; ++j) {
            const T v = values[r * per_row + j];
            int64_t lo = 0, hi = n;
            while (lo < hi) {
                const int64_t mid = lo + (hi - lo) / 2;
                const bool after = right ? !(line[mid] > v) : !(line[mid] >= v);
                if (after) lo = mid + 1;
                else hi = mid;
            }
            out[r * per_row + j] = lo;
        }
    }
}

}  // namespace

#define AOTC_SORT_KERNELS(suffix, T)                                                            \
    extern "C" void aotc_argsort_##suffix(int32_t algorithm, int64_t outer, int64_t n,          \
                                          int64_t inner, int64_t first, int64_t count,          \
                                          int32_t descending, const T *x, int64_t *out) {       \
        argsort<T>(algorithm, outer, n, inner, first, count, descending != 0, x, out);          \
    }                                                                                           \
    extern "C" void aotc_searchsorted_##suffix(int64_t lines, int64_t n, int64_t rows,          \
                                               int64_t per_row, int32_t right, const T *sorted, \
                                               const T *values, int64_t *out) {                 \
        searchsorted<T>(lines, n, rows, per_row, right != 0, sorted, values, out);              \
    }

AOTC_SORT_KERNELS(f32, float)
AOTC_SORT_KERNELS(f64, double)
AOTC_SORT_KERNELS(i64, int64_t)
AOTC_SORT_KERNELS(i32, int32_t)
AOTC_SORT_KERNELS(i16, int16_t)
AOTC_SORT_KERNELS(i8, int8_t)
AOTC_SORT_KERNELS(u8, uint8_t)
AOTC_SORT_KERNELS(b8, bool)
