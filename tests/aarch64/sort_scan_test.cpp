// The shipped sort and scan kernels (sort.cpp, scan.cpp) against naive loops: stable
// argsort both ways with ties and NaN, top-k, selection, binary search, and the cumulative
// sum, product, log-sum-exp, max and min with their positions, along inner and outer dims.
#include <omp.h>

#include <cmath>
#include <string>
#include <vector>

#include "aotc_kernels.h"
#include "check.h"

namespace {

// x[o, j, i] with ties (values on a grid of eighths) and a NaN at every seventh element
std::vector<float> tied(int64_t outer, int64_t n, int64_t inner) {
    auto x = check::values(size_t(outer * n * inner), 40);
    for (size_t t = 0; t < x.size(); ++t) {
        x[t] = std::round(x[t] * 4.0f) / 8.0f;
        if (t % 7 == 3) x[t] = NAN;
    }
    return x;
}

// NaN above every number; a strict order on values alone
bool before(float a, float b, bool desc) {
    return desc ? ((std::isnan(a) && !std::isnan(b)) || a > b) : ((!std::isnan(a) && std::isnan(b)) || a < b);
}

bool same(float a, float b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

void sort_cases(int64_t outer, int64_t n, int64_t inner) {
    const auto x = tied(outer, n, inner);
    const std::string dims = " " + std::to_string(outer) + "x" + std::to_string(n) + "x" + std::to_string(inner);
    for (int desc = 0; desc < 2; ++desc) {
        std::vector<int64_t> got(x.size()), top(size_t(outer * 5 * inner)), kth(size_t(outer * inner));
        aotc_argsort_f32(AOTC_SORT_STABLE, outer, n, inner, 0, n, desc, x.data(), got.data());
        aotc_argsort_f32(AOTC_SORT_TOPK, outer, n, inner, 0, 5, desc, x.data(), top.data());
        aotc_argsort_f32(AOTC_SORT_SELECT, outer, n, inner, n / 2, 1, desc, x.data(), kth.data());
        bool stable = true, topk = true, select = true;
        for (int64_t o = 0; o < outer; ++o)
            for (int64_t i = 0; i < inner; ++i) {
                const auto at = [&](int64_t j) { return x[size_t((o * n + j) * inner + i)]; };
                // insertion sort: stable by construction
                std::vector<int64_t> want;
                for (int64_t j = 0; j < n; ++j) {
                    auto pos = want.end();
                    while (pos != want.begin() && before(at(j), at(*(pos - 1)), desc)) --pos;
                    want.insert(pos, j);
                }
                for (int64_t j = 0; j < n; ++j)
                    stable = stable && got[size_t((o * n + j) * inner + i)] == want[size_t(j)];
                for (int64_t j = 0; j < 5; ++j)  // ties may come in any order: values only
                    topk = topk && same(at(top[size_t((o * 5 + j) * inner + i)]), at(want[size_t(j)]));
                select = select && same(at(kth[size_t(o * inner + i)]), at(want[size_t(n / 2)]));
            }
        const std::string way = desc ? " descending" : " ascending";
        check::expect(stable, "argsort stable" + way + dims);
        check::expect(topk, "topk 5" + way + dims);
        check::expect(select, "kthvalue" + way + dims);
    }
}

void searchsorted_case() {
    const int64_t lines = 3, n = 11, per_row = 9;
    std::vector<float> sorted(size_t(lines * n)), values = check::values(size_t(lines * per_row), 41);
    for (int64_t r = 0; r < lines; ++r)
        for (int64_t j = 0; j < n; ++j) sorted[size_t(r * n + j)] = float(j / 2) / 4.0f - 0.5f;
    values[4] = 0.25f, values[5] = NAN;  // an exact hit and a NaN
    for (int right = 0; right < 2; ++right) {
        std::vector<int64_t> got(values.size());
        aotc_searchsorted_f32(lines, n, lines, per_row, right, sorted.data(), values.data(), got.data());
        bool ok = true;
        for (int64_t r = 0; r < lines; ++r)
            for (int64_t j = 0; j < per_row; ++j) {
                const float v = values[size_t(r * per_row + j)];
                int64_t want = 0;  // elements before v: < v (left) or <= v (right); NaN last
                for (int64_t t = 0; t < n; ++t) {
                    const float s = sorted[size_t(r * n + t)];
                    want += std::isnan(v) || (right ? s <= v : s < v);
                }
                ok = ok && got[size_t(r * per_row + j)] == want;
            }
        check::expect(ok, right ? "searchsorted right" : "searchsorted left");
    }
}

void scan_cases(int64_t outer, int64_t n, int64_t inner) {
    auto x = check::values(size_t(outer * n * inner), 42);
    x[5] = NAN;
    const std::string dims = " " + std::to_string(outer) + "x" + std::to_string(n) + "x" + std::to_string(inner);
    const char *names[] = {"cumsum", "cumprod", "logcumsumexp", "cummax", "cummin"};
    for (int op = AOTC_SCAN_SUM; op <= AOTC_SCAN_MIN; ++op) {
        std::vector<float> got(x.size());
        std::vector<int64_t> pos(x.size());
        aotc_scan_f32(op, outer, n, inner, x.data(), got.data());
        if (op >= AOTC_SCAN_MAX) aotc_scan_index_f32(op, outer, n, inner, x.data(), pos.data());
        std::vector<double> want(x.size());
        bool positions = true;
        for (int64_t o = 0; o < outer; ++o)
            for (int64_t i = 0; i < inner; ++i) {
                double acc = op == AOTC_SCAN_PROD ? 1.0 : op == AOTC_SCAN_LOGSUMEXP ? -INFINITY : 0.0;
                int64_t best = 0;
                for (int64_t j = 0; j < n; ++j) {
                    const size_t t = size_t((o * n + j) * inner + i);
                    const double v = x[t];
                    if (op == AOTC_SCAN_SUM) acc += v;
                    if (op == AOTC_SCAN_PROD) acc *= v;
                    if (op == AOTC_SCAN_LOGSUMEXP)
                        acc = std::isnan(v) || std::isnan(acc) ? NAN : std::max(acc, v) + std::log1p(std::exp(-std::fabs(acc - v)));
                    if (op >= AOTC_SCAN_MAX) {  // a NaN, or a value at least as good, takes over
                        const double b = x[size_t((o * n + best) * inner + i)];
                        const bool wins = op == AOTC_SCAN_MAX ? v >= b : v <= b;
                        if (j == 0 || std::isnan(v) || (!std::isnan(b) && wins)) best = j;
                        acc = x[size_t((o * n + best) * inner + i)];
                        positions = positions && pos[t] == best;
                    }
                    want[t] = acc;
                }
            }
        check::close(std::string(names[op]) + dims, got.data(), want.data(), 1e-5, got.size());
        if (op >= AOTC_SCAN_MAX) check::expect(positions, std::string(names[op]) + " positions" + dims);
    }
}

}  // namespace

int main() {
    for (int threads : {1, 4}) {
        omp_set_num_threads(threads);
        std::printf("threads %d\n", threads);
        sort_cases(3, 40, 1);
        sort_cases(2, 33, 5);
        sort_cases(70, 100, 1);  // enough work for the threads
        searchsorted_case();
        scan_cases(4, 30, 1);
        scan_cases(3, 25, 70);  // more than one block of inner lines
    }
    return check::finish();
}
