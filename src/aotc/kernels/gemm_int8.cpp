// int8 GEMM with int32 accumulation against a prepacked int8 weight: the integer core of
// quantized linear layers and convolutions and of aten._int_mm (the contract is in
// aotc_kernels.h).
//
// B (int8, K x N) is packed once into the dot-product layout: K in groups of four rows,
// the groups zero padded to a multiple of 16 (K to a multiple of 64: one AMX tile's depth),
// N in panels of 16 columns (zero padded), each panel group-major with a column's four
// bytes adjacent:
//     packed[q][g][j][t] = B(4g + t, 16q + j)
// followed by the int32 column sums of B (16-padded). Sixteen groups of a panel are then
// one 16 x 64-byte AMX tile of B as they lie. A (uint8, or int8 taken as
// uint8 + 128) is read in the same four-byte groups, per block of MB rows: where it lies
// when its rows are whole groups of unsigned bytes (a linear's activations, a 1x1
// convolution's channels-last input), else packed row-major (or group-major,
//     apack[g][r][t] = A(m0 + r, 4g + t),
// as the patches of a channels-first input are gathered). An unsigned-times-signed dot
// product of four bytes (vpdpbusd) then multiplies a row's group into 16 columns at once, and the
// zero point of A (and the +128 of a signed A) is taken off at the end with the column
// sums, exactly: every sum is an int32, as in torch. A convolution's A is its patches,
// gathered straight from the input into the packed block (no patch matrix in memory).
//
// Paths, chosen at run time where the CPU has the feature (no x86 level includes it):
// AMX-INT8 (tdpbusd on 16 x 64-byte tiles: blocks of 32 rows x 32 columns in four int32
// tiles, A packed row-major for it), for products of at least 16 rows; AVX-512 VNNI (vpdpbusd on 512 bits, avx512_vnni: micro-tiles of 4 rows x 64 columns),
// AVX-VNNI (the same on 256 bits, avx_vnni); else AVX-512BW and AVX2 (bytes widened to
// int16, vpmaddwd: exact, where vpmaddubsw would saturate); and a portable loop.

#include "aotc_kernels.h"
#include "transpose16.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif
#if defined(__x86_64__) && defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif
#ifdef _OPENMP
#include <omp.h>
#endif

// GCC 12 reports the undefined passthrough operand of AVX-512 intrinsics (unpack, shuffle,
// convert) as maybe-uninitialized once they are inlined
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace {

#if defined(__AVX512F__)
using aotc_transpose16::transpose16;
#endif

constexpr int64_t NP = 16;   // columns per panel
constexpr int64_t PG = 4;    // panels per micro-tile
constexpr int64_t MB = 64;   // rows per packed block of A
constexpr int64_t MR = 4;    // rows per micro-tile
constexpr int64_t GS = MB * 4;  // bytes from one group of a packed block to the next
constexpr int64_t KG = 16;      // a panel's groups are padded to a multiple of KG

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Groups of four rows of K as stored: ceil(K / 4) rounded up to whole AMX tiles.
inline int64_t stored_groups(int64_t K) { return ceil_div(ceil_div(K, 4), KG) * KG; }

struct Packed {
    int64_t K, N, groups, kgroups, panels;  // groups: of K's rows; kgroups: as stored
    const int8_t *data;
    const int32_t *colsum;
};

Packed view(int64_t K, int64_t N, const void *packed) {
    Packed p;
    p.K = K;
    p.N = N;
    p.groups = ceil_div(K, 4);
    p.kgroups = stored_groups(K);
    p.panels = ceil_div(N, NP);
    p.data = static_cast<const int8_t *>(packed);
    p.colsum = reinterpret_cast<const int32_t *>(p.data + p.panels * p.kgroups * NP * 4);
    return p;
}

// Where a packed block of A puts its bytes: row r's group g (four bytes) at
// r * row + g * group. The VNNI and AVX2 tiles read any layout: row-major (group 4; A
// itself where its rows already hold whole groups), or group-major (row 4, group GS) as
// the patches of a channels-first input are gathered; the AMX tiles read row-major blocks
// of whole tiles (row: the padded K in bytes).
struct Layout {
    int64_t row, group;
};

// A block of A as the tiles read it: where it lies, and how.
struct Block {
    const uint8_t *data;
    Layout at;
};

// The accumulators of one micro-tile: MR rows of up to PG panels.
using Tile = int32_t[MR][PG * NP];

// Rows [m0, m0 + rows) of a row-major A as a packed block of `groups` groups, row-major
// with rows `row` bytes apart (each byte xor `flip`: 0x80 takes a signed A to uint8 + 128;
// the K padding zero).
void pack_a(const uint8_t *A, int64_t lda, uint8_t flip, int64_t m0, int64_t rows, int64_t K,
            int64_t groups, int64_t row, uint8_t *dst) {
    for (int64_t r = 0; r < rows; ++r) {
        const uint8_t *src = A + (m0 + r) * lda;
        uint8_t *out = dst + r * row;
        for (int64_t k = 0; k < K; ++k) out[k] = static_cast<uint8_t>(src[k] ^ flip);
        std::memset(out + K, 0, size_t(4 * groups - K));
    }
}

// A convolution read as a product (aotc_qconv_s32): row m is output position (b, oy, ox),
// column k = (ci * kh + ky) * kw + kx reads x[b, ci, oy*sh - ph + ky*dh, ox*sw - pw + kx*dw]
// of the input (channels first), a tap outside it the zero point.
struct Patches {
    int64_t c, h, w, kh, kw, oh, ow, sh, sw, ph, pw, dh, dw;
    bool taps_major;    // columns k = (ky * kw + kx) * cp + ci, from a channels-last input
    // columns k = (ci * kh + ky) * kwp + kx, kwp = kw rounded up to a multiple of 4 (zero
    // weights for kx >= kw): a group is four neighbouring taps of one input row
    bool row_groups;
    int64_t kwp;
    bool x_last;        // that input is x itself ([b, h, w, c], c = cp), not a copy
    bool c_last;        // the output is written channels last, [b, oh, ow, N] (row-major)
    int64_t cp;         // taps_major: channels padded to a multiple of 4 (zero weights there)
    uint8_t flip, pad;  // the xor that makes bytes unsigned; the zero point so made
};

Patches patches(const int64_t *g, bool a_signed, int32_t a_zero) {
    Patches p;
    p.c = g[0], p.h = g[1], p.w = g[2], p.kh = g[3], p.kw = g[4], p.oh = g[5], p.ow = g[6];
    p.sh = g[7], p.sw = g[8], p.ph = g[9], p.pw = g[10], p.dh = g[11], p.dw = g[12];
    p.taps_major = g[13] == 1;
    p.row_groups = g[13] == 2;
    p.kwp = p.row_groups ? ceil_div(p.kw, 4) * 4 : p.kw;
    p.x_last = g[14] != 0;
    p.c_last = g[15] != 0;
    p.cp = ceil_div(p.c, 4) * 4;
    p.flip = a_signed ? 0x80 : 0;
    p.pad = static_cast<uint8_t>(static_cast<uint8_t>(a_zero) ^ p.flip);
    return p;
}

// A block's rows in pieces along one output row: rows [r0, r0 + len) are positions
// (b, oy, ox0 ...) of the output.
struct Run {
    int64_t b, oy, ox0, len, r0;
};

// Where a run reads along the input row for one kx: its taps [lo, hi) fall inside the
// input, tap j at ix = first + j * sw.
struct Span {
    int64_t lo, hi, first;
};

// Four columns of the patches, one byte per row of the block, as the block's four-byte
// groups (group-major: row r's group at 4 r). The rows up to the next 16 are written too
// (the block has room for MB rows; their sums are never used).
void interleave(const uint8_t (*col)[MB], int64_t rows, uint8_t *out) {
#if defined(__SSE2__)
    for (int64_t r = 0; r < rows; r += 16) {
        const auto load = [&](int t) {
            return _mm_load_si128(reinterpret_cast<const __m128i *>(col[t] + r));
        };
        const __m128i a = load(0), b = load(1), c = load(2), d = load(3);
        const __m128i ab_lo = _mm_unpacklo_epi8(a, b), ab_hi = _mm_unpackhi_epi8(a, b);
        const __m128i cd_lo = _mm_unpacklo_epi8(c, d), cd_hi = _mm_unpackhi_epi8(c, d);
        __m128i *o = reinterpret_cast<__m128i *>(out + 4 * r);
        _mm_storeu_si128(o, _mm_unpacklo_epi16(ab_lo, cd_lo));
        _mm_storeu_si128(o + 1, _mm_unpackhi_epi16(ab_lo, cd_lo));
        _mm_storeu_si128(o + 2, _mm_unpacklo_epi16(ab_hi, cd_hi));
        _mm_storeu_si128(o + 3, _mm_unpackhi_epi16(ab_hi, cd_hi));
    }
#else
    for (int64_t r = 0; r < rows; ++r) {
        const uint32_t v = uint32_t(col[0][r]) | uint32_t(col[1][r]) << 8
                           | uint32_t(col[2][r]) << 16 | uint32_t(col[3][r]) << 24;
        std::memcpy(out + 4 * r, &v, 4);
    }
#endif
}

#if defined(__AVX512BW__) && defined(__BMI2__)
// Bits [lo, hi) of a 64-bit mask (0 <= lo <= hi <= 64).
inline __mmask64 bits(int64_t lo, int64_t hi) {
    const uint64_t below_hi = hi >= 64 ? ~uint64_t(0) : (uint64_t(1) << hi) - 1;
    const uint64_t below_lo = lo >= 64 ? ~uint64_t(0) : (uint64_t(1) << lo) - 1;
    return below_hi & ~below_lo;
}
#endif

// v[j] for j < len: the tap src[j * sw] (xor flip) for j in [lo, hi), the padding outside.
// Masked loads on AVX-512 for strides 1 and 2 (a lane outside [lo, hi) reads nothing).
inline void copy_run(uint8_t *v, const uint8_t *src, int64_t lo, int64_t hi, int64_t len,
                     int64_t sw, const Patches &p) {
#if defined(__AVX512BW__) && defined(__BMI2__)
    if (len <= 64 && sw <= 2) {
        const __mmask64 inside = bits(lo, hi);
        __m512i vals;
        if (sw == 1) {
            vals = _mm512_maskz_loadu_epi8(inside, src);
        } else {  // the even bytes of src[0, 128): low bytes of 16-bit words
            const uint64_t even = 0x5555555555555555ull;
            const __m512i w0 = _mm512_maskz_loadu_epi8(_pdep_u64(inside & 0xffffffffu, even), src);
            const __m512i w1 = _mm512_maskz_loadu_epi8(_pdep_u64(inside >> 32, even), src + 64);
            vals = _mm512_inserti64x4(_mm512_castsi256_si512(_mm512_cvtepi16_epi8(w0)),
                                      _mm512_cvtepi16_epi8(w1), 1);
        }
        vals = _mm512_xor_si512(vals, _mm512_set1_epi8(static_cast<char>(p.flip)));
        vals = _mm512_mask_blend_epi8(inside, _mm512_set1_epi8(static_cast<char>(p.pad)), vals);
        _mm512_mask_storeu_epi8(v, bits(0, len), vals);
        return;
    }
#endif
    std::memset(v, p.pad, size_t(lo));
    if (sw == 1) {
        std::memcpy(v + lo, src + lo, size_t(hi - lo));
        if (p.flip)
            for (int64_t j = lo; j < hi; ++j) v[j] ^= p.flip;
    } else {
        for (int64_t j = lo; j < hi; ++j) v[j] = src[j * sw] ^ p.flip;
    }
    std::memset(v + hi, p.pad, size_t(len - hi));
}

// Runs of a block's rows along one output row each (at most MB of them).
int64_t runs_of(const Patches &p, int64_t m0, int64_t rows, Run *runs) {
    int64_t n_runs = 0;
    for (int64_t r = 0; r < rows;) {
        const int64_t m = m0 + r, ox = m % p.ow, oy = (m / p.ow) % p.oh, b = m / (p.ow * p.oh);
        const int64_t len = std::min(p.ow - ox, rows - r);
        runs[n_runs++] = Run{b, oy, ox, len, r};
        r += len;
    }
    return n_runs;
}

// The block's patches group-major (row r's group g at g * GS + 4 r): `groups` groups, those
// past the taps zero.
void pack_patches(const Patches &p, const uint8_t *x, int64_t m0, int64_t rows, int64_t groups,
                  uint8_t *dst) {
    Run runs[MB];
    const int64_t n_runs = runs_of(p, m0, rows, runs);
    std::vector<Span> spans(size_t(n_runs * p.kw));  // [run][kx]
    for (int64_t i = 0; i < n_runs; ++i)
        for (int64_t kx = 0; kx < p.kw; ++kx) {
            const int64_t first = runs[i].ox0 * p.sw - p.pw + kx * p.dw, len = runs[i].len;
            int64_t lo = first >= 0 ? 0 : ceil_div(-first, p.sw);
            int64_t hi = first >= p.w ? 0 : ceil_div(p.w - first, p.sw);
            lo = std::min(lo, len);
            hi = std::max(lo, std::min(hi, len));
            spans[size_t(i * p.kw + kx)] = Span{lo, hi, first};
        }
    alignas(64) uint8_t col[4][MB];
    int64_t t = 0, g = 0;
    for (int64_t ci = 0; ci < p.c; ++ci)
        for (int64_t ky = 0; ky < p.kh; ++ky)
            for (int64_t kx = 0; kx < p.kw; ++kx) {
                uint8_t *column = col[t];
                for (int64_t i = 0; i < n_runs; ++i) {
                    const Run &run = runs[i];
                    uint8_t *v = column + run.r0;
                    const int64_t iy = run.oy * p.sh - p.ph + ky * p.dh;
                    if (iy < 0 || iy >= p.h) {
                        std::memset(v, p.pad, size_t(run.len));
                        continue;
                    }
                    const Span &s = spans[size_t(i * p.kw + kx)];
                    const uint8_t *src = x + ((run.b * p.c + ci) * p.h + iy) * p.w + s.first;
                    copy_run(v, src, s.lo, s.hi, run.len, p.sw, p);
                }
                if (++t == 4) {
                    interleave(col, rows, dst + g * GS);
                    t = 0;
                    ++g;
                }
            }
    if (t) {  // the last group's padding: B's rows there are zero
        for (; t < 4; ++t) std::memset(col[t], 0, size_t(rows));
        interleave(col, rows, dst + g * GS);
        ++g;
    }
    for (; g < groups; ++g) std::memset(dst + g * GS, 0, size_t(4 * rows));
}


// Rows i0 .. i0 + n of a run in group (ci, ky, h) of the row-groups order: row i's four
// bytes are taps kx = 4h .. 4h + 3 of input row `src` (the padding where iy is outside),
// input columns ix = (ox0 + i) * sw - pw + kx * dw, the zero point outside [0, w).
void row_group(const Patches &p, const uint8_t *src, int64_t ox0, int64_t h, int64_t i0,
               int64_t n, uint8_t *out) {
    for (int64_t i = i0; i < i0 + n; ++i)
        for (int64_t t = 0; t < 4; ++t) {
            const int64_t ix = (ox0 + i) * p.sw - p.pw + (4 * h + t) * p.dw;
            out[4 * i + t] = src && ix >= 0 && ix < p.w ? src[ix] ^ p.flip : p.pad;
        }
}

// The block's patches group-major in the row-groups order (Patches::row_groups): group
// (ci * kh + ky) * kwp / 4 + h of row r at (that group) * GS + 4 r, groups past the
// patches' zero. With AVX-512 and dw == 1, sw <= 4, sixteen rows of a group are one masked
// load of the 64 input bytes from the first row's first tap (the zero point outside the
// input), a dword permute that gives each 128-bit lane the bytes of its four rows, and a
// byte shuffle that puts row s's taps t at 4 s + t (input byte sw * s + t of the lane's).
void pack_row_groups(const Patches &p, const uint8_t *x, int64_t m0, int64_t rows,
                     int64_t groups, uint8_t *dst) {
    Run runs[MB];
    const int64_t n_runs = runs_of(p, m0, rows, runs), halves = p.kwp / 4;
#if defined(__AVX512BW__) && defined(__BMI2__)
    const bool vector = p.dw == 1 && p.sw <= 4;
    const int64_t sw = p.sw;
    const __m512i lanes = _mm512_setr_epi32(0, 1, 2, 3, sw, sw + 1, sw + 2, sw + 3, 2 * sw,
                                            2 * sw + 1, 2 * sw + 2, 2 * sw + 3, 3 * sw,
                                            3 * sw + 1, 3 * sw + 2, 3 * sw + 3);
    alignas(64) int8_t order[64];
    for (int64_t q = 0; q < 64; ++q) order[q] = int8_t(sw * (q % 16 / 4) + q % 4);
    const __m512i taps = _mm512_load_si512(order);
    const __m512i pad = _mm512_set1_epi8(static_cast<char>(p.pad));
    const __m512i flip = _mm512_set1_epi8(static_cast<char>(p.flip));
#endif
    int64_t g = 0;
    for (int64_t ci = 0; ci < p.c; ++ci)
        for (int64_t ky = 0; ky < p.kh; ++ky)
            for (int64_t h = 0; h < halves; ++h, ++g) {
                uint8_t *column = dst + g * GS;
                for (int64_t k = 0; k < n_runs; ++k) {
                    const Run &run = runs[k];
                    const int64_t iy = run.oy * p.sh - p.ph + ky * p.dh;
                    const uint8_t *src = iy >= 0 && iy < p.h
                                             ? x + ((run.b * p.c + ci) * p.h + iy) * p.w
                                             : nullptr;
                    uint8_t *out = column + 4 * run.r0;
                    int64_t i = 0;
#if defined(__AVX512BW__) && defined(__BMI2__)
                    for (; vector && src && i < run.len; i += 16) {
                        const int64_t first = (run.ox0 + i) * sw - p.pw + 4 * h;
                        const __mmask64 inside = bits(std::clamp<int64_t>(-first, 0, 64),
                                                      std::clamp<int64_t>(p.w - first, 0, 64));
                        const __m512i bytes = _mm512_xor_si512(
                            _mm512_maskz_loadu_epi8(inside, src + first), flip);
                        const __m512i v = _mm512_shuffle_epi8(
                            _mm512_permutexvar_epi32(
                                lanes, _mm512_mask_blend_epi8(inside, pad, bytes)), taps);
                        _mm512_mask_storeu_epi8(out + 4 * i, bits(0, 4 * std::min<int64_t>(
                                                                     16, run.len - i)), v);
                    }
#endif
                    row_group(p, src, run.ox0, h, i, run.len - i, out);
                }
            }
    for (; g < groups; ++g) std::memset(dst + g * GS, 0, size_t(4 * rows));
}

// d[j][i] = s[i][j] for an int32 matrix s of `rows` x `cols` (multiples of 16), rows of s
// `sld` apart and of d `dld`: 16 x 16 blocks in registers on AVX-512.
void transpose_i32(const int32_t *s, int64_t sld, int64_t rows, int64_t cols, int32_t *d,
                   int64_t dld) {
#if defined(__AVX512F__)
    for (int64_t i = 0; i < rows; i += 16)
        for (int64_t j = 0; j < cols; j += 16) transpose16(s + i * sld + j, sld, d + j * dld + i, dld);
#else
    for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j) d[j * dld + i] = s[i * sld + j];
#endif
}

// A group-major block of `groups` groups (a multiple of 16) as row-major rows `row` bytes
// apart, all MB rows.
void to_rows(const uint8_t *src, int64_t groups, uint8_t *dst, int64_t row) {
    transpose_i32(reinterpret_cast<const int32_t *>(src), MB, groups, MB,
                  reinterpret_cast<int32_t *>(dst), row / 4);
}

// x [batch, c, plane] as xh [batch, plane, cp], every byte xor flip and channels c .. cp
// zero: 16 x 16 blocks of bytes transposed in registers (four rounds of interleaving row i
// with row i + 8 rotate each byte's (row, column) index by a nibble), the edges one byte at
// a time.
void to_channels_last(const uint8_t *x, int64_t batch, int64_t c, int64_t cp, int64_t plane,
                      uint8_t flip, uint8_t *xh) {
    const int64_t cb = c / 16, pb = plane / 16;
#pragma omp parallel for collapse(2) schedule(static) if (batch * c * plane >= (int64_t(1) << 16))
    for (int64_t b = 0; b < batch; ++b)
        for (int64_t j = 0; j < pb + 1; ++j) {
            const uint8_t *xb = x + b * c * plane;
            uint8_t *hb = xh + b * cp * plane;
            const int64_t p0 = j * 16, pn = std::min<int64_t>(16, plane - p0);
            int64_t c0 = 0;
#if defined(__SSE2__)
            if (pn == 16) {
                const __m128i f = _mm_set1_epi8(static_cast<char>(flip));
                for (; c0 < cb * 16; c0 += 16) {
                    __m128i r[16], t[16];
                    for (int i = 0; i < 16; ++i)
                        r[i] = _mm_xor_si128(f, _mm_loadu_si128(reinterpret_cast<const __m128i *>(
                                                    xb + (c0 + i) * plane + p0)));
                    for (int round = 0; round < 4; ++round) {
                        for (int i = 0; i < 8; ++i) {
                            t[2 * i] = _mm_unpacklo_epi8(r[i], r[i + 8]);
                            t[2 * i + 1] = _mm_unpackhi_epi8(r[i], r[i + 8]);
                        }
                        for (int i = 0; i < 16; ++i) r[i] = t[i];
                    }
                    for (int i = 0; i < 16; ++i)
                        _mm_storeu_si128(reinterpret_cast<__m128i *>(hb + (p0 + i) * cp + c0), r[i]);
                }
            }
#endif
            for (int64_t q = p0; q < p0 + pn; ++q) {
                for (int64_t ci = c0; ci < c; ++ci) hb[q * cp + ci] = xb[ci * plane + q] ^ flip;
                for (int64_t ci = c; ci < cp; ++ci) hb[q * cp + ci] = 0;
            }
        }
}

// n bytes from src to out, inline (a tap's channels: a call to memcpy per tap cost more
// than the copy).
inline void copy_bytes(uint8_t *out, const uint8_t *src, int64_t n) {
#if defined(__AVX512BW__) && defined(__BMI2__)
    int64_t i = 0;
    for (; i + 64 <= n; i += 64) _mm512_storeu_si512(out + i, _mm512_loadu_si512(src + i));
    if (i < n) {
        const __mmask64 tail = bits(0, n - i);
        _mm512_mask_storeu_epi8(out + i, tail, _mm512_maskz_loadu_epi8(tail, src + i));
    }
#else
    std::memcpy(out, src, size_t(n));
#endif
}

// The block's patches row-major (rows `row` bytes apart) from the channels-last xh (a copy
// made unsigned, or a signed x read in place, made unsigned here): a tap's cp bytes whole
// (a kernel row's taps as one run where they lie side by side in the input), the padding
// outside the input, zeros past K up to `groups` groups.
void pack_taps(const Patches &p, const uint8_t *xh, int64_t m0, int64_t rows, int64_t groups,
               int64_t row, uint8_t *dst) {
    const int64_t K = p.cp * p.kh * p.kw, c = p.cp;
    for (int64_t r = 0; r < rows; ++r) {
        const int64_t m = m0 + r, ox = m % p.ow, oy = (m / p.ow) % p.oh, b = m / (p.ow * p.oh);
        uint8_t *out = dst + r * row;
        // the taps of one kernel row, adjacent input positions (dw 1), all inside: one run
        const int64_t ix0 = ox * p.sw - p.pw;
        const bool whole_rows = p.dw == 1 && ix0 >= 0 && ix0 + p.kw <= p.w &&
                                !(p.x_last && p.flip) && c > 4;
        for (int64_t ky = 0; ky < p.kh; ++ky) {
            const int64_t iy = oy * p.sh - p.ph + ky * p.dh;
            if (whole_rows && iy >= 0 && iy < p.h) {
                copy_bytes(out, xh + ((b * p.h + iy) * p.w + ix0) * c, p.kw * c);
                out += p.kw * c;
                continue;
            }
            for (int64_t kx = 0; kx < p.kw; ++kx, out += c) {
                const int64_t ix = ox * p.sw - p.pw + kx * p.dw;
                const bool outside = iy < 0 || iy >= p.h || ix < 0 || ix >= p.w;
                const uint8_t *src = xh + ((b * p.h + iy) * p.w + ix) * c;
                if (outside && c == 4) {  // a padded 3-channel stem's tap: one word
                    const uint32_t pad = 0x01010101u * p.pad;
                    std::memcpy(out, &pad, 4);
                } else if (outside) {
                    std::memset(out, p.pad, size_t(c));
                } else if (p.x_last && p.flip) {  // a signed input read in place
                    for (int64_t i = 0; i < c; ++i) out[i] = static_cast<uint8_t>(src[i] ^ p.flip);
                } else if (c == 4) {  // one word
                    std::memcpy(out, src, 4);
                } else {
                    copy_bytes(out, src, c);
                }
            }
        }
        if (4 * groups > K) std::memset(dst + r * row + K, 0, size_t(4 * groups - K));
    }
}

#if !defined(__AVX2__)
// acc[r][16i + j] = sum over groups of row r . column j of panel i (uint8 x int8), for
// `rows` <= MR rows of the block at `a` (laid out `at`) and `panels` <= PG panels `pstride`
// bytes apart (the rest of acc untouched); the portable form of the paths below.
void tile_portable(const uint8_t *a, Layout at, int64_t groups, const int8_t *panel,
                   int64_t pstride, int64_t panels, int64_t rows, Tile &acc) {
    for (int64_t i = 0; i < panels; ++i)
        for (int64_t r = 0; r < rows; ++r)
            for (int64_t j = 0; j < NP; ++j) {
                int32_t s = 0;
                for (int64_t g = 0; g < groups; ++g) {
                    const uint8_t *ar = a + g * at.group + r * at.row;
                    const int8_t *b = panel + i * pstride + g * NP * 4 + 4 * j;
                    for (int t = 0; t < 4; ++t) s += int32_t(ar[t]) * int32_t(b[t]);
                }
                acc[r][i * NP + j] = s;
            }
}
#endif

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
// c[i] += the four bytes at ag (one row's group) . panel i, for the P panels in b.
template <int P>
__attribute__((always_inline, target("avx512f,avx512bw,avx512vnni")))
inline void dot_row(const uint8_t *ag, const __m512i *b, __m512i *c) {
    int32_t w;
    std::memcpy(&w, ag, 4);
    const __m512i av = _mm512_set1_epi32(w);
#pragma GCC unroll 4
    for (int i = 0; i < P; ++i) c[i] = _mm512_dpbusd_epi32(c[i], av, b[i]);
}

// R rows x P panels in R * P registers: per group, P panel loads and R broadcasts feed
// R * P dot products. Each row's accumulators are an array of their own: with one
// two-dimensional array GCC 12 copied every accumulator to another register (and one to
// the stack) on each group, which made a product with K = 64 a third slower.
template <int R, int P>
__attribute__((target("avx512f,avx512bw,avx512vnni")))
void tile_vnni_rp(const uint8_t *a, Layout at, int64_t groups, const int8_t *panel,
                  int64_t pstride, Tile &acc) {
    static_assert(R >= 1 && R <= 4 && P >= 1 && P <= PG, "a micro-tile is at most 4 x PG");
    __m512i c0[P], c1[P], c2[P], c3[P];
#pragma GCC unroll 4
    for (int i = 0; i < P; ++i) c0[i] = c1[i] = c2[i] = c3[i] = _mm512_setzero_si512();
    const int64_t row = at.row;
    for (int64_t g = 0; g < groups; ++g, panel += NP * 4, a += at.group) {
        __m512i b[P];
#pragma GCC unroll 4
        for (int i = 0; i < P; ++i) b[i] = _mm512_loadu_si512(panel + i * pstride);
        dot_row<P>(a, b, c0);
        if (R > 1) dot_row<P>(a + row, b, c1);
        if (R > 2) dot_row<P>(a + 2 * row, b, c2);
        if (R > 3) dot_row<P>(a + 3 * row, b, c3);
    }
#pragma GCC unroll 4
    for (int i = 0; i < P; ++i) {
        _mm512_storeu_si512(acc[0] + i * NP, c0[i]);
        if (R > 1) _mm512_storeu_si512(acc[1] + i * NP, c1[i]);
        if (R > 2) _mm512_storeu_si512(acc[2] + i * NP, c2[i]);
        if (R > 3) _mm512_storeu_si512(acc[3] + i * NP, c3[i]);
    }
}

template <int R>
void tile_vnni_r(const uint8_t *a, Layout at, int64_t groups, const int8_t *panel,
                 int64_t pstride, int64_t panels, Tile &acc) {
    switch (panels) {
        case 4: return tile_vnni_rp<R, 4>(a, at, groups, panel, pstride, acc);
        case 3: return tile_vnni_rp<R, 3>(a, at, groups, panel, pstride, acc);
        case 2: return tile_vnni_rp<R, 2>(a, at, groups, panel, pstride, acc);
        default: return tile_vnni_rp<R, 1>(a, at, groups, panel, pstride, acc);
    }
}

void tile_vnni(const uint8_t *a, Layout at, int64_t groups, const int8_t *panel,
               int64_t pstride, int64_t panels, int64_t rows, Tile &acc) {
    switch (rows) {
        case 4: return tile_vnni_r<4>(a, at, groups, panel, pstride, panels, acc);
        case 3: return tile_vnni_r<3>(a, at, groups, panel, pstride, panels, acc);
        case 2: return tile_vnni_r<2>(a, at, groups, panel, pstride, panels, acc);
        default: return tile_vnni_r<1>(a, at, groups, panel, pstride, panels, acc);
    }
}

// `quads` micro-tiles of 4 rows down a block (rows 4 apart in A and in the sums), in one
// call. Called a micro-tile at a time (through tile's dispatch), 3136 x 256 x 64 took
// 288 us on Zen 4 at one thread, 229 us so; 784 x 512 x 128 258 -> 226 us.
template <int P>
__attribute__((target("avx512f,avx512bw,avx512vnni")))
void quads_vnni(const uint8_t *a, Layout at, int64_t groups, const int8_t *panel,
                int64_t pstride, int64_t quads, int32_t (*sums)[PG * NP]) {
    for (int64_t q = 0; q < quads; ++q)
        tile_vnni_rp<4, P>(a + 4 * q * at.row, at, groups, panel, pstride,
                           *reinterpret_cast<Tile *>(sums[4 * q]));
}

// AVX-VNNI: the same vpdpbusd on 256-bit registers (Intel's client and recent server
// cores, AMD Zen 5), for builds below AVX-512 or processors without avx512_vnni: a
// panel's 16 columns as two halves of 8, one panel at a time.
__attribute__((target("avx2,avxvnni")))
void tile_avx_vnni(const uint8_t *a, Layout at, int64_t groups, const int8_t *panel0,
                   int64_t pstride, int64_t panels, int64_t rows, Tile &acc) {
    for (int64_t i = 0; i < panels; ++i) {
        const int8_t *panel = panel0 + i * pstride;
        __m256i c[MR][2];
        for (auto &row : c) row[0] = row[1] = _mm256_setzero_si256();
        for (int64_t g = 0; g < groups; ++g) {
            const __m256i b0 =
                _mm256_loadu_si256(reinterpret_cast<const __m256i *>(panel + g * NP * 4));
            const __m256i b1 =
                _mm256_loadu_si256(reinterpret_cast<const __m256i *>(panel + g * NP * 4 + 32));
            for (int64_t r = 0; r < MR; ++r) {
                if (r >= rows) break;
                int32_t w;
                std::memcpy(&w, a + g * at.group + r * at.row, 4);
                const __m256i av = _mm256_set1_epi32(w);
                c[r][0] = _mm256_dpbusd_avx_epi32(c[r][0], av, b0);
                c[r][1] = _mm256_dpbusd_avx_epi32(c[r][1], av, b1);
            }
        }
        for (int64_t r = 0; r < rows; ++r)
            for (int h = 0; h < 2; ++h) {
                _mm256_storeu_si256(reinterpret_cast<__m256i *>(acc[r] + i * NP + 8 * h), c[r][h]);
            }
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

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
// AMX-INT8: the tile unit's tdpbusd multiplies a 16 x 64-byte tile of A (16 rows, 16
// groups) by a 16 x 64-byte tile of B (16 groups of one panel) into 16 x 16 int32 sums.
// Every tile used is 16 rows of 64 bytes: C in tmm0-3 (two row halves x two panels), A in
// tmm4-5, B in tmm6-7. Linux hands the tile state to a process that asks for it
// (arch_prctl); a thread loads the configuration before its first tile instruction.
struct alignas(64) TileConfig {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
};

bool has_amx() {
#if defined(AOTC_QGEMM_NO_VNNI) || defined(AOTC_QGEMM_NO_AVX512_VNNI) || \
    defined(AOTC_QGEMM_NO_AMX) || !defined(__linux__)
    return false;
#else
    static const bool yes = [] {
        unsigned a, b, c, d;
        if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
        const bool tile = d & (1u << 24), int8 = d & (1u << 25);
        if (!tile || !int8) return false;
        constexpr long kReqXcompPerm = 0x1023, kXtileData = 18;
        return syscall(SYS_arch_prctl, kReqXcompPerm, kXtileData) == 0;
    }();
    return yes;
#endif
}

// Palette 1, tiles 0-7 of 16 rows x 64 bytes: static data, since a configuration built on
// the stack is a set of stores the compiler may drop (it does not see ldtilecfg read them).
constexpr TileConfig kTiles = {1, 0, {}, {64, 64, 64, 64, 64, 64, 64, 64},
                               {16, 16, 16, 16, 16, 16, 16, 16}};

__attribute__((target("amx-tile,amx-int8")))
void amx_begin() { _tile_loadconfig(&kTiles); }

__attribute__((target("amx-tile,amx-int8")))
void amx_end() { _tile_release(); }

// sums[r][16 q + j] = row r of the block . column j of panel q over `chunks` tiles of 16
// groups, for rows [r0, r0 + 16 R) and panels [q0, q0 + P); the A block row-major with rows
// `lda` bytes apart (rows past the block's end are read, their sums not used).
template <int R, int P>
__attribute__((target("amx-tile,amx-int8")))
void amx_tiles(const uint8_t *a, int64_t lda, int64_t chunks, const int8_t *panel,
               int64_t pstride, int32_t (*sums)[PG * NP]) {
    _tile_zero(0);
    if (P == 2) _tile_zero(1);
    if (R == 2) _tile_zero(2);
    if (R == 2 && P == 2) _tile_zero(3);
    for (int64_t c = 0; c < chunks; ++c) {
        const uint8_t *ac = a + c * 64;
        const int8_t *bc = panel + c * KG * NP * 4;
        _tile_loadd(4, ac, lda);
        _tile_loadd(6, bc, 64);
        if (P == 2) _tile_loadd(7, bc + pstride, 64);
        _tile_dpbusd(0, 4, 6);
        if (P == 2) _tile_dpbusd(1, 4, 7);
        if (R == 2) {
            _tile_loadd(5, ac + 16 * lda, lda);
            _tile_dpbusd(2, 5, 6);
            if (P == 2) _tile_dpbusd(3, 5, 7);
        }
    }
    constexpr int64_t ld = PG * NP * 4;
    _tile_stored(0, sums[0], ld);
    if (P == 2) _tile_stored(1, sums[0] + NP, ld);
    if (R == 2) _tile_stored(2, sums[16], ld);
    if (R == 2 && P == 2) _tile_stored(3, sums[16] + NP, ld);
}

// The sums of a packed block's `rows` rows with `panels` panels, in AMX tiles: 32 rows by
// two panels at a time, the pairs of panels visited forward, then backward for the next
// 32 rows, so that each step shares its A rows or its B panels with the step before (still
// in L1) and the block's last step its panels with the next block's first.
void amx_block(const uint8_t *a, int64_t lda, int64_t rows, int64_t chunks, const int8_t *panel,
               int64_t pstride, int64_t panels, int32_t (*sums)[PG * NP]) {
    const int64_t pairs = (panels + 1) / 2;
    for (int64_t r = 0; r < rows; r += 32) {
        const bool two_rows = rows - r > 16;
        const uint8_t *ar = a + r * lda;
        for (int64_t step = 0; step < pairs; ++step) {
            const int64_t q = 2 * ((r / 32) % 2 ? pairs - 1 - step : step);
            const int8_t *pq = panel + q * pstride;
            int32_t(*sq)[PG * NP] = reinterpret_cast<int32_t(*)[PG * NP]>(sums[r] + q * NP);
            if (panels - q > 1) {
                if (two_rows) amx_tiles<2, 2>(ar, lda, chunks, pq, pstride, sq);
                else amx_tiles<1, 2>(ar, lda, chunks, pq, pstride, sq);
            } else {
                if (two_rows) amx_tiles<2, 1>(ar, lda, chunks, pq, pstride, sq);
                else amx_tiles<1, 1>(ar, lda, chunks, pq, pstride, sq);
            }
        }
    }
}
#else
bool has_amx() { return false; }
void amx_begin() {}
void amx_end() {}
void amx_block(const uint8_t *, int64_t, int64_t, int64_t, const int8_t *, int64_t, int64_t,
               int32_t (*)[PG * NP]) {}
#endif


#if defined(__AVX2__)
// Four columns at a time: their 16 bytes widened to int16, times the row's group
// broadcast as four int16 (vpmaddwd sums pairs exactly into int32); the two pair sums of
// a column are added at the end.
void tile_avx2(const uint8_t *a, Layout at, int64_t groups, const int8_t *panel0,
               int64_t pstride, int64_t panels, int64_t rows, Tile &acc) {
    for (int64_t i = 0; i < panels; ++i) {
        const int8_t *panel = panel0 + i * pstride;
        for (int64_t r = 0; r < rows; ++r) {
            __m256i s[NP / 4];
            for (auto &v : s) v = _mm256_setzero_si256();
            for (int64_t g = 0; g < groups; ++g) {
                int32_t w;
                std::memcpy(&w, a + g * at.group + r * at.row, 4);
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
                for (int j = 0; j < 4; ++j)
                    acc[r][i * NP + 4 * q + j] = pairs[2 * j] + pairs[2 * j + 1];
            }
        }
    }
}
#endif

void tile(const uint8_t *a, Layout at, int64_t groups, const int8_t *panel, int64_t pstride,
          int64_t panels, int64_t rows, Tile &acc) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    if (has_vnni()) return tile_vnni(a, at, groups, panel, pstride, panels, rows, acc);
    if (has_avx_vnni()) return tile_avx_vnni(a, at, groups, panel, pstride, panels, rows, acc);
#endif
#if defined(__AVX2__)
    return tile_avx2(a, at, groups, panel, pstride, panels, rows, acc);
#else
    return tile_portable(a, at, groups, panel, pstride, panels, rows, acc);
#endif
}

// The sums of a block's `rows` rows (micro-tiles of MR rows) with `panels` panels.
void tiles(const uint8_t *a, Layout at, int64_t groups, const int8_t *panel, int64_t pstride,
           int64_t panels, int64_t rows, int32_t (*sums)[PG * NP]) {
    int64_t r0 = 0;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    if (has_vnni()) {
        const int64_t quads = rows / MR;
        switch (panels) {
            case 4: quads_vnni<4>(a, at, groups, panel, pstride, quads, sums); break;
            case 3: quads_vnni<3>(a, at, groups, panel, pstride, quads, sums); break;
            case 2: quads_vnni<2>(a, at, groups, panel, pstride, quads, sums); break;
            default: quads_vnni<1>(a, at, groups, panel, pstride, quads, sums);
        }
        r0 = quads * MR;
    }
#endif
    for (; r0 < rows; r0 += MR)
        tile(a + r0 * at.row, at, groups, panel, pstride, panels,
             std::min<int64_t>(MR, rows - r0), *reinterpret_cast<Tile *>(sums[r0]));
}

// `rows` rows of B [K, N] (element (k, n) = B[k * sb_k + n * sb_n]) in the dot-product
// layout, then their column sums: packed row k is B's row source(k), a zero row where that
// is negative.
template <class Source>
void pack_rows(int64_t rows, int64_t N, Source source, const int8_t *B, int64_t sb_k,
               int64_t sb_n, void *packed) {
    const int64_t groups = stored_groups(rows), panels = ceil_div(N, NP);
    int8_t *out = static_cast<int8_t *>(packed);
    std::memset(out, 0, size_t(panels * groups * NP * 4 + panels * NP * int64_t(sizeof(int32_t))));
    int32_t *colsum = reinterpret_cast<int32_t *>(out + panels * groups * NP * 4);
    for (int64_t q = 0; q < panels; ++q)
        for (int64_t j = 0; j < NP && q * NP + j < N; ++j) {
            const int64_t n = q * NP + j;
            int32_t sum = 0;
            for (int64_t k = 0; k < rows; ++k) {
                const int64_t from = source(k);
                if (from < 0) continue;  // a padding row: zero
                const int8_t v = B[from * sb_k + n * sb_n];
                out[((q * groups + k / 4) * NP + j) * 4 + k % 4] = v;
                sum += v;
            }
            colsum[n] = sum;
        }
}

// B [K, N] packed; with taps > 1, a convolution's weight [N, c, kh, kw] (K = c * taps rows)
// taken tap-major as its channels-last patches are: rows (tap, ci) for ci < cp, c padded to
// a multiple of 4, row (tap, ci) read from row ci * taps + tap, zero for ci >= c.
void pack_b(int64_t K, int64_t N, int64_t taps, const int8_t *B, int64_t sb_k, int64_t sb_n,
            void *packed) {
    const int64_t c = K / taps, cp = taps > 1 ? ceil_div(c, 4) * 4 : c;
    pack_rows(taps * cp, N, [=](int64_t k) {
        const int64_t ci = k % cp, tap = k / cp;
        return ci >= c ? -1 : taps > 1 ? ci * taps + tap : k;
    }, B, sb_k, sb_n, packed);
}

// Where C[m, n] goes: row-major at C + m * ld + n (a product's, or a convolution's output
// channels last), or a convolution's channels-first output: m = b * plane + p at
// C + (b * channels + n) * plane + p. With an epilogue, nothing is stored at C: the
// epilogue gets each finished block instead.
struct Out {
    int32_t *c;
    bool channels_first;
    int64_t ld, plane, channels;
    const aotc_qgemm_epilogue *epilogue;
};

// The block's corrected sums of rows [r, r + len) (within one image) and `cols` columns,
// transposed: t[j][i] = sums[r + i][j] - zero * colsum[j], rows of t `ld` apart.
void transposed(const int32_t (*sums)[PG * NP], int64_t r, int64_t len, int64_t cols,
                int32_t zero, const int32_t *colsum, int32_t *t, int64_t ld) {
    int64_t i = 0;
#if defined(__AVX512F__)
    for (; i + 16 <= len; i += 16)
        for (int64_t j0 = 0; j0 < cols; j0 += 16) transpose16(sums[r + i] + j0, PG * NP, t + j0 * ld + i, ld);
    for (int64_t j = 0; j < cols; ++j) {
        const __m512i off = _mm512_set1_epi32(zero * colsum[j]);
        for (int64_t q = 0; q < i; q += 16) {
            int32_t *d = t + j * ld + q;
            _mm512_store_si512(d, _mm512_sub_epi32(_mm512_load_si512(d), off));
        }
    }
#endif
    for (int64_t j = 0; j < cols; ++j) {
        const int32_t off = zero * colsum[j];
        for (int64_t q = i; q < len; ++q) t[j * ld + q] = sums[r + q][j] - off;
    }
}

// C's rows [m0, m0 + rows) and columns [n0, n0 + cols) from a block's sums: each sum less
// the zero point's share of its column (zero * colsum), stored, or handed to the epilogue:
// a convolution's (channels first) transposed, one image at a time, a product's in place.
void store(const Out &out, int64_t m0, int64_t rows, int64_t n0, int64_t cols,
           int32_t (*sums)[PG * NP], int32_t zero, const int32_t *colsum) {
    const aotc_qgemm_epilogue *ep = out.epilogue;
    if (out.channels_first) {  // a column's rows lie together within an image
        for (int64_t r = 0; r < rows;) {
            const int64_t m = m0 + r, pos = m % out.plane;
            const int64_t len = std::min(rows - r, out.plane - pos);
            if (ep) {
                alignas(64) int32_t t[PG * NP][MB];
                transposed(sums, r, len, cols, zero, colsum, t[0], MB);
                ep->fn(ep->ctx, t[0], MB, m, n0, len, cols);
                r += len;
                continue;
            }
            int32_t *base = out.c + ((m / out.plane) * out.channels + n0) * out.plane + pos;
            int64_t i = 0;
#if defined(__AVX512F__)
            // 16 rows x 16 columns at a time, transposed so that a column's rows are stored
            // as one vector
            for (; i + 16 <= len; i += 16)
                for (int64_t j0 = 0; j0 < cols; j0 += 16) {
                    alignas(64) int32_t t[16][16];
                    transpose16(sums[r + i] + j0, PG * NP, t[0], 16);
                    for (int64_t j = j0; j < std::min(cols, j0 + 16); ++j) {
                        const __m512i v = _mm512_sub_epi32(_mm512_load_si512(t[j - j0]),
                                                           _mm512_set1_epi32(zero * colsum[j]));
                        _mm512_storeu_si512(base + j * out.plane + i, v);
                    }
                }
#endif
            for (int64_t j = 0; j < cols; ++j) {
                int32_t *d = base + j * out.plane;
                const int32_t off = zero * colsum[j];
                for (int64_t q = i; q < len; ++q) d[q] = sums[r + q][j] - off;
            }
            r += len;
        }
        return;
    }
    if (ep) {
        if (zero != 0)  // (an activation after ReLU has zero point 0)
            for (int64_t r = 0; r < rows; ++r)
                for (int64_t j = 0; j < cols; ++j) sums[r][j] -= zero * colsum[j];
        ep->fn(ep->ctx, sums[0], PG * NP, m0, n0, rows, cols);
        return;
    }
    for (int64_t r = 0; r < rows; ++r) {
        int32_t *c = out.c + (m0 + r) * out.ld + n0;
        for (int64_t j = 0; j < cols; ++j) c[j] = sums[r][j] - zero * colsum[j];
    }
}

// Whether a block of `rows` rows of A whose rows lie `lda` bytes apart, K bytes each, can
// be read where it lies: unsigned (no byte to flip) and rows of whole groups; for the AMX
// tiles, rows of whole 64-byte tiles one after another, and a whole block, since the
// tiles read all MB rows.
inline bool in_place(bool amx, int64_t rows, int64_t lda, int64_t K, uint8_t flip) {
    if (flip != 0 || K % 4 != 0) return false;
    return !amx || (rows == MB && K % (4 * KG) == 0 && lda == K);
}

// Products of at least this many rows take the AMX tiles where the CPU has them.
constexpr int64_t AMX_MIN_ROWS = 16;

// C = (A - a_zero) B for an A whose blocks of rows `pack(m0, rows, groups, amx, dst)`
// returns as a Block (a signed A as uint8 + 128): packed at dst, row-major with rows of
// `groups` groups (for the AMX tiles: whole tiles), or group-major where the packing gathers
// it so, or where A lies (see in_place).
template <class PackA>
void product(int64_t M, int64_t N, int64_t K, bool a_signed, int32_t a_zero,
             const void *packed_b, const Out &out, PackA pack) {
    if (M <= 0 || N <= 0) return;
    const Packed p = view(K, N, packed_b);
    // A - a_zero == A_u8 - zero_u8: a signed A is read as uint8 + 128
    const int32_t zero = a_signed ? a_zero + 128 : a_zero;
    const bool amx = M >= AMX_MIN_ROWS && has_amx();
    const bool parallel = M * N * std::max<int64_t>(K, 1) >= (int64_t(1) << 16);
    // Blocks of rows as tall as each other to a micro-tile (whole micro-tiles, at most MB),
    // as many as a multiple of the team, so that a static share of the (block, strip) units
    // gives the threads as many rows: 196 rows (a 14x14 convolution) as 64, 64, 64 and 4
    // gave one of two threads 128 of them, as 52, 52, 52 and 40 104; as 52, 48, 48, 48 it
    // gets 100. 784 (28x28) as 13 blocks split one block between the two. The AMX tiles
    // keep blocks of MB rows, which they read whole.
    int64_t blocks = ceil_div(M, MB);
#ifdef _OPENMP
    const int64_t team = parallel ? omp_get_max_threads() : 1;
    if (team > 1 && blocks > 1 && !amx) blocks = ceil_div(blocks, team) * team;
#endif
    const int64_t quads = ceil_div(M, MR);
    blocks = std::min(blocks, quads);
    // block blk's first row: its share of the micro-tiles, or MB rows a block for AMX
    const auto first_row = [=](int64_t blk) {
        return std::min(M, amx ? blk * MB : blk * quads / blocks * MR);
    };
    const int64_t strips = ceil_div(p.panels, PG);
    const int64_t units = blocks * strips;
    const int64_t pstride = p.kgroups * NP * 4;
    // AMX: the block's rows over the stored groups (whole tiles)
    const int64_t packed_groups = amx ? p.kgroups : p.groups;
#pragma omp parallel if (parallel)
    {
        // MB rows of whole tiles of groups (a block turned 16 x 16 at a time writes them),
        // kept by the thread from call to call (allocating and zeroing it each time cost
        // more than small products). The AMX tiles read all MB rows of a block that may hold
        // fewer: the sums of the rows past its end are never stored.
        thread_local std::vector<uint8_t> apack;
        if (apack.size() < size_t(GS * p.kgroups)) apack.resize(size_t(GS * p.kgroups));
        int64_t packed_block = -1;
        Block ablock{};
        if (amx) amx_begin();
#pragma omp for schedule(static)
        for (int64_t u = 0; u < units; ++u) {
            const int64_t blk = u / strips, q0 = (u % strips) * PG;
            const int64_t m0 = first_row(blk), rows = first_row(blk + 1) - m0;
            if (packed_block != blk) {  // consecutive units of a thread share the block
                ablock = pack(m0, rows, packed_groups, amx, apack.data());
                packed_block = blk;
            }
            const int64_t panels = std::min<int64_t>(PG, p.panels - q0);
            const int64_t cols = std::min<int64_t>(PG * NP, N - q0 * NP);
            const int8_t *panel = p.data + q0 * pstride;
            const int32_t *colsum = p.colsum + q0 * NP;
            alignas(64) int32_t sums[MB][PG * NP];
            if (amx) {
                amx_block(ablock.data, ablock.at.row, rows, p.kgroups / KG, panel, pstride,
                          panels, sums);
            } else {
                tiles(ablock.data, ablock.at, p.groups, panel, pstride, panels, rows, sums);
            }
            store(out, m0, rows, q0 * NP, cols, sums, zero, colsum);
        }
        if (amx) amx_end();
    }
}

}  // namespace

extern "C" {

int64_t aotc_qgemm_packed_bytes(int64_t K, int64_t N) {
    const int64_t panels = ceil_div(N, NP);
    return panels * stored_groups(K) * NP * 4 + panels * NP * int64_t(sizeof(int32_t));
}

void aotc_qgemm_pack_b(int64_t K, int64_t N, const int8_t *B, int64_t sb_k, int64_t sb_n,
                       void *packed) {
    pack_b(K, N, 1, B, sb_k, sb_n, packed);
}

void aotc_qconv_pack_b(int64_t K, int64_t N, int64_t taps, const int8_t *B, int64_t sb_k,
                       int64_t sb_n, void *packed) {
    pack_b(K, N, taps, B, sb_k, sb_n, packed);
}

void aotc_qconv_pack_b_rows(int64_t K, int64_t N, int64_t kw, const int8_t *B, int64_t sb_k,
                            int64_t sb_n, void *packed) {
    const int64_t kwp = ceil_div(kw, 4) * 4;
    pack_rows(K / kw * kwp, N, [=](int64_t k) {
        return k % kwp < kw ? k / kwp * kw + k % kwp : -1;
    }, B, sb_k, sb_n, packed);
}

void aotc_qgemm_s32(int64_t M, int64_t N, int64_t K, const void *A, int64_t lda, int a_signed,
                    int32_t a_zero, const void *packed_b, int32_t *C, int64_t ldc,
                    const aotc_qgemm_epilogue *epilogue) {
    const uint8_t *a = static_cast<const uint8_t *>(A);
    const uint8_t flip = a_signed ? 0x80 : 0;
    product(M, N, K, a_signed != 0, a_zero, packed_b, Out{C, false, ldc, 0, 0, epilogue},
            [=](int64_t m0, int64_t rows, int64_t groups, bool amx, uint8_t *dst) -> Block {
                if (in_place(amx, rows, lda, K, flip)) return Block{a + m0 * lda, Layout{lda, 4}};
                const Layout to{4 * groups, 4};
                pack_a(a, lda, flip, m0, rows, K, groups, to.row, dst);
                return Block{dst, to};
            });
}

void aotc_qconv_s32(int64_t M, int64_t N, const void *X, const int64_t *geometry, int a_signed,
                    int32_t a_zero, const void *packed_b, int32_t *C, void *workspace,
                    const aotc_qgemm_epilogue *epilogue) {
    const Patches p = patches(geometry, a_signed != 0, a_zero);
    const uint8_t *x = static_cast<const uint8_t *>(X);
    const int64_t plane = p.oh * p.ow;
    const Out out = p.c_last ? Out{C, false, N, 0, 0, epilogue}
                             : Out{C, true, 0, std::max<int64_t>(plane, 1), N, epilogue};
    if (p.taps_major) {  // the input channels last (copied so once, or as given): whole taps
        const uint8_t *xh = x;
        if (!p.x_last) {
            uint8_t *copy = static_cast<uint8_t *>(workspace);
            const int64_t batch = plane ? M / plane : 0;
            to_channels_last(x, batch, p.c, p.cp, p.h * p.w, p.flip, copy);
            xh = copy;
        }
        product(M, N, p.cp * p.kh * p.kw, a_signed != 0, a_zero, packed_b, out,
                [&p, xh](int64_t m0, int64_t rows, int64_t groups, bool amx,
                         uint8_t *dst) -> Block {
                    // a 1x1 convolution of stride 1 over a channels-last input: the rows
                    // of the input are the rows of A
                    const bool rows_of_x = p.kh == 1 && p.kw == 1 && p.sh == 1 && p.sw == 1 &&
                                           p.ph == 0 && p.pw == 0 && p.x_last;
                    if (rows_of_x && in_place(amx, rows, p.cp, p.cp, p.flip))
                        return Block{xh + m0 * p.cp, Layout{p.cp, 4}};
                    const Layout to{4 * groups, 4};
                    pack_taps(p, xh, m0, rows, groups, to.row, dst);
                    return Block{dst, to};
                });
        return;
    }
    product(M, N, p.c * p.kh * p.kwp, a_signed != 0, a_zero, packed_b, out,
            [&p, x](int64_t m0, int64_t rows, int64_t groups, bool amx,
                    uint8_t *dst) -> Block {
                const auto gather = [&](uint8_t *to) {
                    if (p.row_groups) pack_row_groups(p, x, m0, rows, groups, to);
                    else pack_patches(p, x, m0, rows, groups, to);
                };
                if (!amx) {  // gathered group-major
                    gather(dst);
                    return Block{dst, Layout{4, GS}};
                }
                // AMX: the patches group-major, then turned row-major 16 x 16 groups at once
                thread_local std::vector<uint8_t> scratch;
                scratch.resize(size_t(GS * groups));
                gather(scratch.data());
                const Layout to{4 * groups, 4};
                to_rows(scratch.data(), groups, dst, to.row);
                return Block{dst, to};
            });
}

}  // extern "C"
