// int8 GEMM with int32 accumulation against a prepacked int8 weight: the integer core of
// quantized linear layers and of aten._int_mm (the contract is in aotc_kernels.h).
//
// B (int8, K x N) is packed once into the dot-product layout: K in groups of four rows
// (zero padded), N in panels of 16 columns (zero padded), each panel group-major with a
// column's four bytes adjacent:
//     packed[q][g][j][t] = B(4g + t, 16q + j)
// followed by the int32 column sums of B (16-padded). A (uint8, or int8 taken as
// uint8 + 128) is packed per block of rows to the same four-byte groups. An unsigned-times-
// signed dot product of four bytes (vpdpbusd) then multiplies a row's group into 16
// columns at once, and the zero point of A (and the +128 of a signed A) is taken off at
// the end with the column sums, exactly: every sum is an int32, as in torch.
//
// Paths, chosen at run time where the CPU has the feature (no x86 level includes it):
// AVX-512 VNNI (vpdpbusd on 512 bits, avx512_vnni), AVX-VNNI (the same on 256 bits,
// avx_vnni); else AVX-512BW and AVX2 (bytes widened to int16, vpmaddwd: exact, where
// vpmaddubsw would saturate); and a portable loop.

#include "aotc_kernels.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif
#ifdef _OPENMP
#include <omp.h>
#endif

namespace {

constexpr int64_t NP = 16;   // columns per panel
constexpr int64_t MB = 64;   // rows per packed block of A
constexpr int64_t MR = 4;    // rows per micro-tile

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

struct Packed {
    int64_t K, N, groups, panels;
    const int8_t *data;
    const int32_t *colsum;
};

Packed view(int64_t K, int64_t N, const void *packed) {
    Packed p;
    p.K = K;
    p.N = N;
    p.groups = ceil_div(K, 4);
    p.panels = ceil_div(N, NP);
    p.data = static_cast<const int8_t *>(packed);
    p.colsum = reinterpret_cast<const int32_t *>(p.data + p.panels * p.groups * NP * 4);
    return p;
}

// Rows [m0, m0 + rows) of A as uint8 four-byte groups, zero padded: dst[r][4g + t].
void pack_a(const uint8_t *A, int64_t lda, bool a_signed, int64_t m0, int64_t rows,
            int64_t K, int64_t groups, uint8_t *dst) {
    const uint8_t flip = a_signed ? 0x80 : 0;
    for (int64_t r = 0; r < rows; ++r) {
        const uint8_t *src = A + (m0 + r) * lda;
        uint8_t *out = dst + r * groups * 4;
        for (int64_t k = 0; k < K; ++k) out[k] = static_cast<uint8_t>(src[k] ^ flip);
        for (int64_t k = K; k < groups * 4; ++k) out[k] = 0;
    }
}

#if !defined(__AVX2__)
// acc[r][j] += sum over groups of a[r] . panel column j (uint8 x int8), for `rows` <= MR
// rows and one panel; the portable form of the paths below.
void tile_portable(const uint8_t *a, int64_t groups, const int8_t *panel, int64_t rows,
                   int32_t acc[MR][NP]) {
    for (int64_t r = 0; r < rows; ++r) {
        const uint8_t *ar = a + r * groups * 4;
        for (int64_t g = 0; g < groups; ++g) {
            const int8_t *b = panel + g * NP * 4;
            for (int64_t j = 0; j < NP; ++j) {
                int32_t s = 0;
                for (int t = 0; t < 4; ++t) s += int32_t(ar[4 * g + t]) * int32_t(b[4 * j + t]);
                acc[r][j] += s;
            }
        }
    }
}
#endif

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
__attribute__((target("avx512f,avx512bw,avx512vnni")))
void tile_vnni(const uint8_t *a, int64_t groups, const int8_t *panel, int64_t rows,
               int32_t acc[MR][NP]) {
    __m512i c0 = _mm512_setzero_si512(), c1 = c0, c2 = c0, c3 = c0;
    const int64_t stride = groups * 4;
    for (int64_t g = 0; g < groups; ++g) {
        const __m512i b = _mm512_loadu_si512(panel + g * NP * 4);
        int32_t w;
        std::memcpy(&w, a + 4 * g, 4);
        c0 = _mm512_dpbusd_epi32(c0, _mm512_set1_epi32(w), b);
        if (rows > 1) {
            std::memcpy(&w, a + stride + 4 * g, 4);
            c1 = _mm512_dpbusd_epi32(c1, _mm512_set1_epi32(w), b);
        }
        if (rows > 2) {
            std::memcpy(&w, a + 2 * stride + 4 * g, 4);
            c2 = _mm512_dpbusd_epi32(c2, _mm512_set1_epi32(w), b);
        }
        if (rows > 3) {
            std::memcpy(&w, a + 3 * stride + 4 * g, 4);
            c3 = _mm512_dpbusd_epi32(c3, _mm512_set1_epi32(w), b);
        }
    }
    const __m512i c[MR] = {c0, c1, c2, c3};
    for (int64_t r = 0; r < rows; ++r) {
        __m512i sum = _mm512_add_epi32(_mm512_loadu_si512(acc[r]), c[r]);
        _mm512_storeu_si512(acc[r], sum);
    }
}

// AVX-VNNI: the same vpdpbusd on 256-bit registers (Intel's client and recent server
// cores, AMD Zen 5), for builds below AVX-512 or processors without avx512_vnni: the
// panel's 16 columns as two halves of 8.
__attribute__((target("avx2,avxvnni")))
void tile_avx_vnni(const uint8_t *a, int64_t groups, const int8_t *panel, int64_t rows,
                   int32_t acc[MR][NP]) {
    __m256i c[MR][2];
    for (auto &row : c) row[0] = row[1] = _mm256_setzero_si256();
    const int64_t stride = groups * 4;
    for (int64_t g = 0; g < groups; ++g) {
        const __m256i b0 = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(panel + g * NP * 4));
        const __m256i b1 =
            _mm256_loadu_si256(reinterpret_cast<const __m256i *>(panel + g * NP * 4 + 32));
        for (int64_t r = 0; r < MR; ++r) {
            if (r >= rows) break;
            int32_t w;
            std::memcpy(&w, a + r * stride + 4 * g, 4);
            const __m256i av = _mm256_set1_epi32(w);
            c[r][0] = _mm256_dpbusd_avx_epi32(c[r][0], av, b0);
            c[r][1] = _mm256_dpbusd_avx_epi32(c[r][1], av, b1);
        }
    }
    for (int64_t r = 0; r < rows; ++r)
        for (int h = 0; h < 2; ++h) {
            __m256i *dst = reinterpret_cast<__m256i *>(acc[r] + 8 * h);
            _mm256_storeu_si256(dst, _mm256_add_epi32(_mm256_loadu_si256(dst), c[r][h]));
        }
}

// AOTC_QGEMM_NO_VNNI builds the other paths only, AOTC_QGEMM_NO_AVX512_VNNI all but the
// 512-bit one: what tests use to reach each path on a processor that has them all.
bool has_vnni() {
#if defined(AOTC_QGEMM_NO_VNNI) || defined(AOTC_QGEMM_NO_AVX512_VNNI)
    return false;
#else
    static const bool yes = __builtin_cpu_supports("avx512vnni");
    return yes;
#endif
}

bool has_avx_vnni() {
#ifdef AOTC_QGEMM_NO_VNNI
    return false;
#else
    static const bool yes = __builtin_cpu_supports("avxvnni");
    return yes;
#endif
}
#endif

#if defined(__AVX2__)
// Four columns at a time: their 16 bytes widened to int16, times the row's group
// broadcast as four int16 (vpmaddwd sums pairs exactly into int32); the two pair sums of
// a column are added at the end.
void tile_avx2(const uint8_t *a, int64_t groups, const int8_t *panel, int64_t rows,
               int32_t acc[MR][NP]) {
    const int64_t stride = groups * 4;
    for (int64_t r = 0; r < rows; ++r) {
        const uint8_t *ar = a + r * stride;
        __m256i s[NP / 4];
        for (auto &v : s) v = _mm256_setzero_si256();
        for (int64_t g = 0; g < groups; ++g) {
            int32_t w;
            std::memcpy(&w, ar + 4 * g, 4);
            const __m128i bytes = _mm_cvtsi32_si128(w);
            const __m256i av = _mm256_broadcastq_epi64(_mm_cvtepu8_epi16(bytes));
            const int8_t *b = panel + g * NP * 4;
            for (int q = 0; q < NP / 4; ++q) {
                const __m256i bv = _mm256_cvtepi8_epi16(
                    _mm_loadu_si128(reinterpret_cast<const __m128i *>(b + 16 * q)));
                s[q] = _mm256_add_epi32(s[q], _mm256_madd_epi16(av, bv));
            }
        }
        // s[q] holds, per column j of the four, the sums of groups' pairs (t 0-1, t 2-3)
        for (int q = 0; q < NP / 4; ++q) {
            alignas(32) int32_t pairs[8];
            _mm256_store_si256(reinterpret_cast<__m256i *>(pairs), s[q]);
            for (int j = 0; j < 4; ++j) acc[r][4 * q + j] += pairs[2 * j] + pairs[2 * j + 1];
        }
    }
}
#endif

void tile(const uint8_t *a, int64_t groups, const int8_t *panel, int64_t rows,
          int32_t acc[MR][NP]) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    if (has_vnni()) return tile_vnni(a, groups, panel, rows, acc);
    if (has_avx_vnni()) return tile_avx_vnni(a, groups, panel, rows, acc);
#endif
#if defined(__AVX2__)
    return tile_avx2(a, groups, panel, rows, acc);
#else
    return tile_portable(a, groups, panel, rows, acc);
#endif
}

}  // namespace

extern "C" {

int64_t aotc_qgemm_packed_bytes(int64_t K, int64_t N) {
    const int64_t panels = ceil_div(N, NP);
    return panels * ceil_div(K, 4) * NP * 4 + panels * NP * int64_t(sizeof(int32_t));
}

void aotc_qgemm_pack_b(int64_t K, int64_t N, const int8_t *B, int64_t sb_k, int64_t sb_n,
                       void *packed) {
    const int64_t groups = ceil_div(K, 4), panels = ceil_div(N, NP);
    int8_t *out = static_cast<int8_t *>(packed);
    std::memset(out, 0, size_t(aotc_qgemm_packed_bytes(K, N)));
    int32_t *colsum = reinterpret_cast<int32_t *>(out + panels * groups * NP * 4);
    for (int64_t q = 0; q < panels; ++q)
        for (int64_t j = 0; j < NP && q * NP + j < N; ++j) {
            const int64_t n = q * NP + j;
            int32_t sum = 0;
            for (int64_t k = 0; k < K; ++k) {
                const int8_t v = B[k * sb_k + n * sb_n];
                out[((q * groups + k / 4) * NP + j) * 4 + k % 4] = v;
                sum += v;
            }
            colsum[n] = sum;
        }
}

void aotc_qgemm_s32(int64_t M, int64_t N, int64_t K, const void *A, int64_t lda, int a_signed,
                    int32_t a_zero, const void *packed_b, int32_t *C, int64_t ldc) {
    if (M <= 0 || N <= 0) return;
    const Packed p = view(K, N, packed_b);
    // A - a_zero == A_u8 - zero_u8: a signed A is read as uint8 + 128
    const int32_t zero = a_signed ? a_zero + 128 : a_zero;
    const int64_t blocks = ceil_div(M, MB);
    const int64_t units = blocks * p.panels;
#pragma omp parallel if (M * N * std::max<int64_t>(K, 1) >= (int64_t(1) << 16))
    {
        std::vector<uint8_t> apack(size_t(MB * p.groups * 4));
        int64_t packed_block = -1;
#pragma omp for schedule(static)
        for (int64_t u = 0; u < units; ++u) {
            const int64_t blk = u / p.panels, q = u % p.panels;
            const int64_t m0 = blk * MB, rows = std::min<int64_t>(MB, M - m0);
            if (packed_block != blk) {  // consecutive units of a thread share the block
                pack_a(static_cast<const uint8_t *>(A), lda, a_signed != 0, m0, rows, K,
                       p.groups, apack.data());
                packed_block = blk;
            }
            const int8_t *panel = p.data + q * p.groups * NP * 4;
            const int64_t cols = std::min<int64_t>(NP, N - q * NP);
            for (int64_t r0 = 0; r0 < rows; r0 += MR) {
                const int64_t n_rows = std::min<int64_t>(MR, rows - r0);
                int32_t acc[MR][NP] = {};
                tile(apack.data() + r0 * p.groups * 4, p.groups, panel, n_rows, acc);
                for (int64_t r = 0; r < n_rows; ++r) {
                    int32_t *c = C + (m0 + r0 + r) * ldc + q * NP;
                    for (int64_t j = 0; j < cols; ++j)
                        c[j] = acc[r][j] - zero * p.colsum[q * NP + j];
                }
            }
        }
    }
}

}  // extern "C"
