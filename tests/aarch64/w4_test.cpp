// The int4 weight-only GEMM (gemm_w4.cpp, its portable form on aarch64): the packer's layout
// byte for byte and its count of values past -8..7, and x times the packed weight against
// a double-precision product of the dequantized weight, for one row (the GEMV), three rows
// (the GEMV per row) and 20 rows (dequantized panels on the float32 GEMM), groups of 32 and
// whole rows, with zero points and bias.
#include <cstdint>
#include <string>
#include <vector>

#include "aotc_kernels.h"
#include "check.h"

namespace {

void one(int64_t M, int64_t N, int64_t K, int64_t group, uint32_t seed) {
    const std::vector<float> u = check::values(size_t(N * K + 2 * N * K / 32 + M * K + N), seed);
    const int64_t g = group ? group : K, groups = K / g;
    std::vector<int8_t> q(size_t(N * K)), zero(size_t(N * groups));
    std::vector<float> scale(size_t(N * groups)), x(size_t(M * K)), bias(static_cast<size_t>(N));
    size_t at = 0;
    for (auto &v : q) v = int8_t(int(std::floor((u[at++] + 1.0f) * 8.0f)) - 8);  // -8..7
    for (int64_t i = 0; i < N * groups; ++i) {
        scale[size_t(i)] = 0.01f + 0.005f * u[at++];
        zero[size_t(i)] = int8_t(int(std::floor(u[at++] * 4.0f)));
    }
    for (auto &v : x) v = u[at++];
    for (auto &v : bias) v = u[at++];
    std::vector<uint8_t> packed(size_t(N * K / 2));
    bool layout = aotc_wo_pack_int4(N, K, q.data(), packed.data()) == 0;
    for (int64_t n = 0; n < N; ++n)
        for (int64_t k = 0; k < K; ++k) {
            const uint8_t b = packed[size_t(n * K / 2 + k / 32 * 16 + k % 16)];
            const int stored = k % 32 < 16 ? (b & 15) : (b >> 4);
            layout = layout && stored == q[size_t(n * K + k)] + 8;
        }
    const std::string what = "w4 " + std::to_string(M) + "x" + std::to_string(N) + "x" +
                             std::to_string(K) + " group " + std::to_string(g);
    check::expect(layout, what + " packing");
    std::vector<float> out(size_t(M * N));
    aotc_gemm_w4_f32(M, N, K, x.data(), K, packed.data(), group, scale.data(), zero.data(),
                     bias.data(), out.data(), N);
    std::vector<double> want(size_t(M * N)), tol(size_t(M * N));
    for (int64_t m = 0; m < M; ++m)
        for (int64_t n = 0; n < N; ++n) {
            double sum = bias[size_t(n)], size = 0.0;
            for (int64_t k = 0; k < K; ++k) {
                const size_t s = size_t(n * groups + k / g);
                const double w = double(float(q[size_t(n * K + k)] - zero[s]) * scale[s]);
                sum += double(x[size_t(m * K + k)]) * w;
                size += std::fabs(double(x[size_t(m * K + k)]) * w);
            }
            want[size_t(m * N + n)] = sum;
            tol[size_t(m * N + n)] = 1e-5 * size + 1e-6;
        }
    check::close(what, out.data(), want.data(), tol.data(), want.size());
}

}  // namespace

int main() {
    for (int64_t M : {1, 3, 20})
        for (int64_t group : {32, 0}) {
            one(M, 37, 128, group, uint32_t(M * 10 + group));
            one(M, 8, 96, group, uint32_t(M * 10 + group + 1));
        }
    std::vector<int8_t> q(64, 0);
    q[5] = 8;
    q[40] = -9;
    std::vector<uint8_t> packed(32);
    check::expect(aotc_wo_pack_int4(1, 64, q.data(), packed.data()) == 2,
                  "w4 packing counts values past -8..7");
    return check::finish();
}
