// The shipped SGEMM kernels (gemm.cpp, gemm_bf16.cpp) against naive loops: edge and tail
// sizes, strided and transposed operands, every bias form, batches, prepacked weights with
// an epilogue, bfloat16 weights, and several threads.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "aotc_kernels.h"
#include "check.h"

namespace {

struct Layout {
    bool a_t, b_t;     // A stored [K, M], B stored [N, K]
    int bias;          // 0 none, 1 per column, 2 per row, 3 full with column stride 2
};

std::string name(const char *what, int64_t M, int64_t N, int64_t K, const Layout &l) {
    return std::string(what) + " " + std::to_string(M) + "x" + std::to_string(N) + "x" +
           std::to_string(K) + (l.a_t ? " At" : "") + (l.b_t ? " Bt" : "") + " bias" +
           std::to_string(l.bias);
}

// C = alpha * A B + beta * bias in double, with the tolerance of each element: a few float
// roundings of the sum of |products|
void reference(int64_t M, int64_t N, int64_t K, const float *A, int64_t sa_m, int64_t sa_k,
               const float *B, int64_t sb_k, int64_t sb_n, const float *bias, int64_t sbm,
               int64_t sbn, float alpha, float beta, double *want, double *tol) {
    for (int64_t m = 0; m < M; ++m)
        for (int64_t n = 0; n < N; ++n) {
            double s = 0, mag = 0;
            for (int64_t k = 0; k < K; ++k) {
                const double p = double(A[m * sa_m + k * sa_k]) * B[k * sb_k + n * sb_n];
                s += p;
                mag += std::fabs(p);
            }
            const double b = bias ? double(beta) * bias[m * sbm + n * sbn] : 0.0;
            want[m * N + n] = alpha * s + b;
            tol[m * N + n] = 1e-5 * (std::fabs(alpha) * mag + std::fabs(b)) + 1e-6;
        }
}

void sgemm_case(int64_t M, int64_t N, int64_t K, const Layout &l) {
    const auto A = check::values(size_t(M * K), 1), B = check::values(size_t(K * N), 2);
    const auto bias = check::values(size_t(M * N * 2), 3);
    const int64_t sa_m = l.a_t ? 1 : K, sa_k = l.a_t ? M : 1;
    const int64_t sb_k = l.b_t ? 1 : N, sb_n = l.b_t ? K : 1;
    const int64_t sbm[] = {0, 0, 1, 2 * N}, sbn[] = {0, 1, 0, 2};
    const float *bp = l.bias ? bias.data() : nullptr;
    const int64_t ldc = N + 3;  // the columns past N must stay untouched
    std::vector<float> C(size_t(M * ldc), 7.0f);
    const float alpha = 1.5f, beta = 0.5f;
    aotc_sgemm(M, N, K, A.data(), sa_m, sa_k, B.data(), sb_k, sb_n, C.data(), ldc, bp,
               sbm[l.bias], sbn[l.bias], alpha, beta);
    std::vector<double> want(size_t(M * N)), tol(size_t(M * N));
    reference(M, N, K, A.data(), sa_m, sa_k, B.data(), sb_k, sb_n, bp, sbm[l.bias], sbn[l.bias],
              alpha, beta, want.data(), tol.data());
    std::vector<float> got(size_t(M * N));
    bool padding = true;
    for (int64_t m = 0; m < M; ++m) {
        std::copy(&C[m * ldc], &C[m * ldc] + N, &got[m * N]);
        for (int64_t j = N; j < ldc; ++j) padding = padding && C[m * ldc + j] == 7.0f;
    }
    check::close(name("sgemm", M, N, K, l), got.data(), want.data(), tol.data(), got.size());
    check::expect(padding, name("sgemm leaves ldc padding", M, N, K, l));
}

// batch 3: B shared (sb_batch 0) or one per matrix, a bias per matrix
void batched_case(int64_t M, int64_t N, int64_t K, bool shared_b) {
    const int64_t batch = 3;
    const auto A = check::values(size_t(batch * M * K), 4);
    const auto B = check::values(size_t(batch * K * N), 5);
    const auto bias = check::values(size_t(batch * N), 6);
    std::vector<float> C(size_t(batch * M * N));
    const int64_t sb_batch = shared_b ? 0 : K * N;
    aotc_sgemm_batched(batch, M, N, K, A.data(), M * K, K, 1, B.data(), sb_batch, N, 1, C.data(),
                       M * N, N, bias.data(), N, 0, 1, 1.0f, 1.0f);
    std::vector<double> want(C.size()), tol(C.size());
    for (int64_t b = 0; b < batch; ++b)
        reference(M, N, K, A.data() + b * M * K, K, 1, B.data() + b * sb_batch, N, 1,
                  bias.data() + b * N, 0, 1, 1.0f, 1.0f, want.data() + b * M * N,
                  tol.data() + b * M * N);
    check::close("sgemm_batched " + std::to_string(M) + "x" + std::to_string(N) + "x" +
                     std::to_string(K) + (shared_b ? " shared B" : ""),
                 C.data(), want.data(), tol.data(), C.size());
}

// the epilogue of the prepacked case: c = 2c + 1 on each finished block, counted per element
struct Twice {
    std::vector<int> calls;
    int64_t N;
};
void twice_plus_one(const void *ctx, float *c, int64_t ldc, int64_t row, int64_t col,
                    int64_t rows, int64_t cols) {
    Twice &t = *static_cast<Twice *>(const_cast<void *>(ctx));
    for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j) {
            c[i * ldc + j] = 2.0f * c[i * ldc + j] + 1.0f;
#pragma omp atomic
            t.calls[size_t((row + i) * t.N + col + j)] += 1;
        }
}

void prepacked_case(int64_t M, int64_t N, int64_t K) {
    const auto A = check::values(size_t(M * K), 7), B = check::values(size_t(K * N), 8);
    const auto bias = check::values(size_t(N), 9);
    std::vector<float> packed(size_t(aotc_sgemm_packed_floats(K, N)));
    aotc_sgemm_pack_b(K, N, B.data(), 1, K, packed.data());  // B given as [N, K]
    std::vector<float> C(size_t(M * N));
    Twice t{std::vector<int>(size_t(M * N), 0), N};
    const aotc_gemm_epilogue post{twice_plus_one, &t};
    aotc_sgemm_prepacked(1, M, N, K, A.data(), 0, K, 1, packed.data(), C.data(), 0, N,
                         bias.data(), 0, 0, 1, 1.0f, 1.0f, &post);
    std::vector<double> want(C.size()), tol(C.size());
    reference(M, N, K, A.data(), K, 1, B.data(), 1, K, bias.data(), 0, 1, 1.0f, 1.0f,
              want.data(), tol.data());
    for (size_t i = 0; i < want.size(); ++i) want[i] = 2 * want[i] + 1, tol[i] *= 2;
    const std::string what = "sgemm_prepacked " + std::to_string(M) + "x" + std::to_string(N) +
                             "x" + std::to_string(K);
    check::close(what, C.data(), want.data(), tol.data(), C.size());
    check::expect(std::all_of(t.calls.begin(), t.calls.end(), [](int c) { return c == 1; }),
                  what + " runs the epilogue once per element");
}

// aotc_sgemm_act: the residual and the activation (clamp, hardswish) in the stores of C,
// bit for bit what applying them after the plain product gives (a NaN bias column stays NaN)
void act_case(int64_t M, int64_t N, int64_t K, int kind) {
    const auto A = check::values(size_t(M * K), 12), B = check::values(size_t(K * N), 13);
    auto bias = check::values(size_t(N), 14);
    bias[size_t(N / 2)] = NAN;
    auto res = check::values(size_t(M * N), 15);
    for (float &r : res) r *= 4.0f;
    std::vector<float> plain(size_t(M * N)), C(size_t(M * N));
    aotc_sgemm_batched(1, M, N, K, A.data(), 0, K, 1, B.data(), 0, N, 1, plain.data(), 0, N,
                       bias.data(), 0, 0, 1, 1.0f, 1.0f);
    const aotc_gemm_activation act{kind, -0.5f, 0.75f, res.data()};
    aotc_sgemm_act(1, M, N, K, A.data(), 0, K, 1, B.data(), 0, N, 1, C.data(), 0, N,
                   bias.data(), 0, 0, 1, 1.0f, 1.0f, &act);
    bool same = true;
    for (size_t i = 0; i < C.size(); ++i) {
        const float v = plain[i] + res[i];
        const float want = kind == 2 ? v * std::min(std::max(v + 3.0f, 0.0f), 6.0f) * (1.0f / 6.0f)
                                     : kind == 1 ? std::min(std::max(v, -0.5f), 0.75f) : v;
        same = same && (std::isnan(want) ? std::isnan(C[i]) : C[i] == want);
    }
    check::expect(same, "sgemm_act " + std::to_string(M) + "x" + std::to_string(N) + "x" +
                            std::to_string(K) + " kind " + std::to_string(kind));
}

inline float bf16(float x) {  // round to nearest even, as the packing does
    uint32_t u;
    std::memcpy(&u, &x, 4);
    u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
    std::memcpy(&x, &u, 4);
    return x;
}

void bf16_case(int64_t M, int64_t N, int64_t K) {
    auto A = check::values(size_t(M * K), 10), B = check::values(size_t(K * N), 11);
    std::vector<uint16_t> packed(size_t(aotc_sgemm_packed_bf16_elems(K, N)));
    aotc_sgemm_pack_b_bf16(K, N, B.data(), N, 1, packed.data());
    std::vector<float> C(size_t(M * N));
    aotc_sgemm_prepacked_bf16(1, M, N, K, A.data(), 0, K, 1, packed.data(), C.data(), 0, N,
                              nullptr, 0, 0, 0, 1.0f, 0.0f, nullptr);
    for (float &a : A) a = bf16(a);
    for (float &b : B) b = bf16(b);
    std::vector<double> want(C.size()), tol(C.size());
    reference(M, N, K, A.data(), K, 1, B.data(), N, 1, nullptr, 0, 0, 1.0f, 0.0f, want.data(),
              tol.data());
    check::close("sgemm_prepacked_bf16 " + std::to_string(M) + "x" + std::to_string(N) + "x" +
                     std::to_string(K),
                 C.data(), want.data(), tol.data(), C.size());
}

}  // namespace

int main() {
    int64_t nr = 0, kc = 0;
    aotc_sgemm_packed_layout(&nr, &kc);
    std::printf("packed layout: nr %lld kc %lld\n", (long long)nr, (long long)kc);
    check::expect(nr == 16 && kc == 512, "packed layout is 16 x 512");
    const int64_t sizes[][3] = {{1, 1, 1},   {1, 17, 3},  {5, 7, 9},     {6, 16, 8},
                                {7, 33, 65}, {13, 50, 130}, {64, 64, 64}, {100, 37, 520},
                                {3, 200, 1030}, {150, 20, 31}, {2, 3, 700}};
    for (int threads : {1, 4}) {
        omp_set_num_threads(threads);
        std::printf("threads %d\n", threads);
        for (const auto &s : sizes)
            for (int bias = 0; bias < 4; ++bias)
                sgemm_case(s[0], s[1], s[2], Layout{bias == 3, bias == 1, bias});
        sgemm_case(8, 16, 1100, Layout{false, false, 1});  // split along K on 4 threads
        sgemm_case(40, 24, 1536, Layout{false, true, 2});
        batched_case(9, 21, 17, true);
        batched_case(9, 21, 17, false);
        prepacked_case(1, 10, 33);
        prepacked_case(37, 45, 600);
        for (int kind = 0; kind < 3; ++kind) {
            act_case(37, 45, 20, kind);  // packed tiles
            act_case(5, 30, 9, kind);    // few rows
            act_case(9, 70, 1100, kind); // K slices (split along K on 4 threads)
        }
        bf16_case(7, 19, 33);
        bf16_case(20, 40, 515);
    }
    return check::finish();
}
