// What the kernel drivers share: inputs from a fixed seed, and comparisons that print one line
// per case ("ok <case>" or "FAILED <case>: ...") and count the failures for the exit status.
#ifndef AOTC_TESTS_AARCH64_CHECK_H
#define AOTC_TESTS_AARCH64_CHECK_H

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace check {

inline int cases = 0, failures = 0;

// n values in [-1, 1) from a linear congruential sequence: the same on every machine
inline std::vector<float> values(size_t n, uint32_t seed) {
    std::vector<float> x(n);
    uint32_t s = seed * 2654435761u + 1u;
    for (float &v : x) {
        s = s * 1664525u + 1013904223u;
        v = float(s >> 8) / float(1u << 23) - 1.0f;
    }
    return x;
}

inline void expect(bool ok, const std::string &what, const std::string &detail = "") {
    ++cases;
    if (ok) {
        std::printf("ok %s\n", what.c_str());
        return;
    }
    ++failures;
    std::printf("FAILED %s%s%s\n", what.c_str(), detail.empty() ? "" : ": ", detail.c_str());
}

// |got[i] - want[i]| <= tol[i] for every i (NaN only where want is NaN)
inline void close(const std::string &what, const float *got, const double *want,
                  const double *tol, size_t n) {
    for (size_t i = 0; i < n; ++i) {
        const bool ok = std::isnan(want[i]) ? std::isnan(got[i])
                                            : std::fabs(double(got[i]) - want[i]) <= tol[i];
        if (!ok) {
            char detail[160];
            std::snprintf(detail, sizeof detail, "element %zu is %.8g, expected %.8g (+- %.3g)", i,
                          double(got[i]), want[i], tol[i]);
            return expect(false, what, detail);
        }
    }
    expect(true, what);
}

// the same tolerance for every element
inline void close(const std::string &what, const float *got, const double *want, double tol,
                  size_t n) {
    const std::vector<double> tols(n, tol);
    close(what, got, want, tols.data(), n);
}

inline int finish() {
    std::printf("%d cases, %d failed\n", cases, failures);
    return failures ? 1 : 0;
}

}  // namespace check

#endif
