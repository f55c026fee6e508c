// The int8 GEMM (gemm_int8.cpp) against a naive int64 loop: uint8 and int8 A with zero
// points, odd and tail sizes, strided A and C, a transposed B, extreme values, several
// threads; the implicit-GEMM convolution (aotc_qconv_s32) against a direct loop, with
// padding, strides, dilation and a batch. Every product is exact, so the comparison is
// equality.
#include <omp.h>

#include <cstdint>
#include <string>
#include <vector>

#include "aotc_kernels.h"
#include "check.h"

namespace {

uint32_t next(uint32_t &s) { return s = s * 1664525u + 1013904223u; }

void one(int64_t M, int64_t N, int64_t K, bool a_signed, int32_t zero, bool b_t, int threads) {
    uint32_t s = uint32_t(M * 131 + N * 17 + K);
    const int64_t lda = K + 3, ldc = N + 2;
    std::vector<uint8_t> A(size_t(M * lda));
    for (auto &v : A) v = uint8_t(next(s) >> 24);
    std::vector<int8_t> B(size_t(K * N));
    for (auto &v : B) v = int8_t(next(s) >> 24);
    const int64_t sb_k = b_t ? 1 : N, sb_n = b_t ? K : 1;
    std::vector<uint8_t> packed(size_t(aotc_qgemm_packed_bytes(K, N)));
    aotc_qgemm_pack_b(K, N, B.data(), sb_k, sb_n, packed.data());
    std::vector<int32_t> C(size_t(M * ldc), -7);
    omp_set_num_threads(threads);
    aotc_qgemm_s32(M, N, K, A.data(), lda, a_signed, zero, packed.data(), C.data(), ldc, nullptr);
    bool ok = true;
    for (int64_t m = 0; m < M; ++m)
        for (int64_t n = 0; n < ldc; ++n) {
            int64_t want = -7;
            if (n < N) {
                want = 0;
                for (int64_t k = 0; k < K; ++k) {
                    const int64_t a = a_signed ? int64_t(int8_t(A[m * lda + k])) : A[m * lda + k];
                    want += (a - zero) * B[k * sb_k + n * sb_n];
                }
            }
            ok = ok && C[m * ldc + n] == int32_t(want);
        }
    check::expect(ok, "qgemm " + std::to_string(M) + "x" + std::to_string(N) + "x" +
                          std::to_string(K) + (a_signed ? " s8" : " u8") + (b_t ? " Bt" : "") +
                          " threads " + std::to_string(threads));
}

// geometry {c, h, w, kh, kw, oh, ow, sh, sw, ph, pw, dh, dw, taps_major, x_last, c_last}:
// X is [batch, h, w, c] with x_last (else [batch, c, h, w]), C [batch, oh, ow, oc] with
// c_last (else [batch, oc, oh, ow])
void conv(int64_t batch, int64_t oc, const int64_t (&g)[16], bool a_signed, int32_t zero) {
    const int64_t c = g[0], h = g[1], w = g[2], kh = g[3], kw = g[4], oh = g[5], ow = g[6];
    const int64_t K = c * kh * kw, taps = kh * kw;
    const bool taps_major = g[13] != 0, x_last = g[14] != 0, c_last = g[15] != 0;
    const int64_t rows = taps_major ? taps * ((c + 3) / 4 * 4) : K;  // channels padded
    uint32_t s = uint32_t(c * 7 + h * 3 + kh);
    std::vector<uint8_t> X(size_t(batch * c * h * w));
    for (auto &v : X) v = uint8_t(next(s) >> 24);
    std::vector<int8_t> W(size_t(oc * K));  // [oc, c, kh, kw] = B transposed
    for (auto &v : W) v = int8_t(next(s) >> 24);
    std::vector<uint8_t> packed(size_t(aotc_qgemm_packed_bytes(rows, oc)));
    if (taps_major)
        aotc_qconv_pack_b(K, oc, taps, W.data(), 1, K, packed.data());
    else
        aotc_qgemm_pack_b(K, oc, W.data(), 1, K, packed.data());
    std::vector<int32_t> C(size_t(batch * oc * oh * ow), -7);
    std::vector<uint8_t> workspace(size_t(batch * ((c + 3) / 4 * 4) * h * w));  // channels last
    aotc_qconv_s32(batch * oh * ow, oc, X.data(), g, a_signed, zero, packed.data(), C.data(),
                   workspace.data(), nullptr);
    bool ok = true;
    for (int64_t b = 0; b < batch; ++b)
        for (int64_t o = 0; o < oc; ++o)
            for (int64_t oy = 0; oy < oh; ++oy)
                for (int64_t ox = 0; ox < ow; ++ox) {
                    int64_t want = 0;
                    for (int64_t ci = 0; ci < c; ++ci)
                        for (int64_t ky = 0; ky < kh; ++ky)
                            for (int64_t kx = 0; kx < kw; ++kx) {
                                const int64_t y = oy * g[7] - g[9] + ky * g[11];
                                const int64_t x = ox * g[8] - g[10] + kx * g[12];
                                if (y < 0 || y >= h || x < 0 || x >= w) continue;
                                const uint8_t raw = X[size_t(
                                    x_last ? ((b * h + y) * w + x) * c + ci
                                           : ((b * c + ci) * h + y) * w + x)];
                                const int64_t a = a_signed ? int64_t(int8_t(raw)) : raw;
                                const size_t tap = size_t(((o * c + ci) * kh + ky) * kw + kx);
                                want += (a - zero) * W[tap];
                            }
                    const int64_t at = c_last ? ((b * oh + oy) * ow + ox) * oc + o
                                              : ((b * oc + o) * oh + oy) * ow + ox;
                    ok = ok && C[size_t(at)] == int32_t(want);
                }
    check::expect(ok, "qconv c " + std::to_string(c) + " " + std::to_string(h) + "x" +
                          std::to_string(w) + " k " + std::to_string(kh) + "x" +
                          std::to_string(kw) + (a_signed ? " s8" : " u8") +
                          (taps_major ? " taps major" : "") + (x_last ? " x last" : "") +
                          (c_last ? " c last" : ""));
}

}  // namespace

int main() {
    const int64_t shapes[][3] = {{1, 1, 1}, {3, 17, 5}, {13, 45, 37}, {65, 70, 259}, {5, 16, 0}};
    for (const auto &sh : shapes)
        for (int a_signed = 0; a_signed < 2; ++a_signed)
            one(sh[0], sh[1], sh[2], a_signed, a_signed ? -5 : 131, sh[0] % 2 == 1, 1 + a_signed);
    // 255 x -128: past int16 in a pair sum
    std::vector<uint8_t> A(64 * 64, 255);
    std::vector<int8_t> B(64 * 20, -128);
    std::vector<uint8_t> packed(size_t(aotc_qgemm_packed_bytes(64, 20)));
    aotc_qgemm_pack_b(64, 20, B.data(), 20, 1, packed.data());
    std::vector<int32_t> C(64 * 20);
    aotc_qgemm_s32(64, 20, 64, A.data(), 64, 0, 0, packed.data(), C.data(), 20, nullptr);
    bool ok = true;
    for (int32_t c : C) ok = ok && c == 64 * 255 * -128;
    check::expect(ok, "qgemm extremes do not saturate");
    // a 7x7 stride-2 stem with 3 channels; a batch of 3x3s; stride 2 and dilation 2 on
    // rows of 5; taps mostly outside the input; each also tap-major from a channels-last
    // copy (the stem's channels padded to 4), and written channels last; the convolutions
    // of whole 4-channel groups also from a channels-last input read in place
    for (int64_t v = 0; v < 4; ++v) {
        const int64_t major = v > 0, out_last = v > 1, in_last = v > 2;
        conv(1, 9, {3, 17, 19, 7, 7, 9, 10, 2, 2, 3, 3, 1, 1, major, 0, out_last}, false, 128);
        conv(2, 20, {8, 9, 9, 3, 3, 9, 9, 1, 1, 1, 1, 1, 1, major, in_last, out_last}, true, -3);
        conv(1, 5, {16, 70, 5, 3, 1, 34, 3, 2, 2, 1, 0, 2, 1, major, in_last, out_last}, false, 7);
        conv(1, 4, {4, 3, 3, 5, 5, 3, 3, 1, 1, 2, 2, 1, 1, major, in_last, out_last}, true, 0);
        conv(2, 6, {32, 7, 6, 3, 3, 7, 6, 1, 1, 1, 1, 1, 1, major, in_last, out_last}, false, 90);
    }
    return check::finish();
}
