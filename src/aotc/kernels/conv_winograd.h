// Winograd F(2x2, 3x3) for 2-D convolutions with 3x3 kernels, stride 1, dilation 1 and one
// group (conv.cpp picks it): each 2x2 block of outputs (a tile) comes from the 4x4 input
// patch around it as
//     Y = A^T [ (G g G^T) (.) (B^T d B) ] A
// with the elementwise product (.) summed over input channels: 16 matrix products per image
// (one per position of the 4x4 transformed tile, [Cout, Cin] x [Cin, tiles]) in place of
// the 9 taps' 36 multiply-adds per output, 2.25x fewer. The transforms only add, subtract
// and halve:
//     B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]
//     G   = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1]
//     A^T = [1 1 1 0; 0 1 -1 -1]
// so the rounding stays that of a direct sum (F(4x4, 3x3) would save more multiplies at
// the price of constants up to 1/24 and errors ten times larger).
//
// Layouts: U[16][Cout][Cin] the transformed weights, stored once (pack) as 16 GEMM B
// operands U[p]^T [Cin, Cout] in the GEMM's panels; in the workspace, one image at a time,
// V[16][Cin][T] the transformed input tiles and M^T[16][T][Cout] their products, tiles T =
// ceil(Ho/2) * ceil(Wo/2) in row-major order. The input transform runs per channel, a row
// of tiles at a time (the row pass over contiguous columns, the column pass over the tiles
// of the row); the output transform per block of 16 output channels and row of tiles,
// writing the bias, the residual and the activation with each finished row of outputs. No sum
// depends on the thread count.
#ifndef AOTC_CONV_WINOGRAD_H
#define AOTC_CONV_WINOGRAD_H

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "aotc_kernels.h"
#include "conv_activation.h"
#include "conv_depthwise.h"  // the vector builds' V, L and transpose

namespace aotc_winograd {

struct Shape {
    int64_t cin, cout, h, w, ho, wo, ph, pw;  // input and output planes, padding
    int64_t th, tw;                           // tiles down and across
};

inline Shape shape(int64_t cin, int64_t cout, int64_t h, int64_t w, int64_t ho, int64_t wo,
                   int64_t ph, int64_t pw) {
    return Shape{cin, cout, h, w, ho, wo, ph, pw, (ho + 1) / 2, (wo + 1) / 2};
}

inline int64_t tiles(const Shape &s) { return s.th * s.tw; }

// floats from one u_p^T's packing to the next: its packed B, rounded up to 64 bytes (the
// alignment the GEMM's packed B keeps)
inline int64_t packed_stride(int64_t cin, int64_t cout) {
    return (aotc_sgemm_packed_floats(cin, cout) + 15) / 16 * 16;
}

// floats of workspace for one image's V and M
inline int64_t workspace_floats(const Shape &s) { return 16 * (s.cin + s.cout) * tiles(s); }

// U[p][co][ci] = (G g G^T)[p] for g = w[co][ci] (3x3)
inline void transform_weights(const Shape &s, const float *w, float *u, bool threaded) {
    const int64_t plane = s.cout * s.cin;
#pragma omp parallel for if (threaded)
    for (int64_t co = 0; co < s.cout; ++co)
        for (int64_t ci = 0; ci < s.cin; ++ci) {
            const float *g = w + (co * s.cin + ci) * 9;
            float gg[4][3];  // G g
            for (int c = 0; c < 3; ++c) {
                const float a = g[c], b = g[3 + c], d = g[6 + c];
                gg[0][c] = a;
                gg[1][c] = 0.5f * (a + b + d);
                gg[2][c] = 0.5f * (a - b + d);
                gg[3][c] = d;
            }
            for (int r = 0; r < 4; ++r) {  // (G g) G^T
                const float a = gg[r][0], b = gg[r][1], d = gg[r][2];
                float *dst = u + (r * 4) * plane + co * s.cin + ci;
                dst[0] = a;
                dst[plane] = 0.5f * (a + b + d);
                dst[2 * plane] = 0.5f * (a - b + d);
                dst[3 * plane] = d;
            }
        }
}

// (B^T d) B for the tiles of one row: e and o hold the even and odd padded columns of the
// 4 rows of B^T d (n = tw + 1 each, rows n apart); tile x0 reads columns 2 x0 .. 2 x0 + 3,
// that is e[x0], o[x0], e[x0 + 1], o[x0 + 1]. Writes V[4i + j][x0] at dst, p apart.
inline void tiles_of_row(const float *e, const float *o, int64_t tw, int64_t n, float *dst,
                         int64_t stride_p) {
    for (int i = 0; i < 4; ++i) {
        const float *ei = e + i * n, *oi = o + i * n;
        float *v0 = dst + (4 * i) * stride_p, *v1 = v0 + stride_p;
        float *v2 = v1 + stride_p, *v3 = v2 + stride_p;
        int64_t x0 = 0;
#ifdef AOTC_CONV_DIRECT
        using namespace aotc_conv_direct;
        for (; x0 + L <= tw; x0 += L) {
            const V a = vload(ei + x0), b = vload(oi + x0), c = vload(ei + x0 + 1),
                    d = vload(oi + x0 + 1);
            vstore(v0 + x0, vsub(a, c));
            vstore(v1 + x0, vadd(b, c));
            vstore(v2 + x0, vsub(c, b));
            vstore(v3 + x0, vsub(b, d));
        }
        if (x0 < tw) {  // the last tiles: the loads end at column n - 1 = tw
            const int64_t k = tw - x0;
            const V a = vload_n(ei + x0, k), b = vload_n(oi + x0, k),
                    c = vload_n(ei + x0 + 1, k), d = vload_n(oi + x0 + 1, k);
            vstore_n(v0 + x0, vsub(a, c), k);
            vstore_n(v1 + x0, vadd(b, c), k);
            vstore_n(v2 + x0, vsub(c, b), k);
            vstore_n(v3 + x0, vsub(b, d), k);
            x0 = tw;
        }
#endif
        for (; x0 < tw; ++x0) {
            const float a = ei[x0], b = oi[x0], c = ei[x0 + 1], d = oi[x0 + 1];
            v0[x0] = a - c;
            v1[x0] = b + c;
            v2[x0] = c - b;
            v3[x0] = b - d;
        }
    }
}

// even[k], odd[k] = row[2k], row[2k + 1] for k < n
inline void deinterleave(const float *row, int64_t n, float *even, float *odd) {
    int64_t k = 0;
#ifdef AOTC_CONV_DIRECT
    using namespace aotc_conv_direct;
    for (; k + L <= n; k += L) {
        V a, b;
        vdeinterleave(row + 2 * k, a, b);
        vstore(even + k, a);
        vstore(odd + k, b);
    }
#endif
    for (; k < n; ++k) {
        even[k] = row[2 * k];
        odd[k] = row[2 * k + 1];
    }
}

// V[p][ci][t] = (B^T d B)[p] for the 4x4 patch d of tile t in channel ci of x (one image):
// per channel and row of tiles, B^T d over the 4 zero-padded input rows (unit stride), its
// rows split into even and odd columns, then (B^T d) B tile by tile (unit stride again).
// B^T d reads the input rows where they lie (a row above or below the input reads a row of
// zeros) into the padded columns inside the input; the columns of padding left and right
// stay zero from the start (zeros in, zeros out). Copying each row into a zeroed padded row
// first took a sixth of the convolution (128 -> 32 channels at 56x56: 17% in memset and
// memcpy).
inline void transform_input(const Shape &s, const float *x, int64_t ty0, int64_t ty1, float *v,
                            bool threaded) {
    const int64_t t_all = (ty1 - ty0) * s.tw, n = s.tw + 1, wp = 2 * n;  // a padded row's width
    const int64_t stride_p = s.cin * t_all;
    const int64_t m = std::max<int64_t>(0, std::min(s.w, wp - s.pw));  // columns inside a row
#pragma omp parallel if (threaded)
    {
        std::vector<float> zeros(std::max<int64_t>(m, 1), 0.0f), t(4 * wp, 0.0f), split(8 * n);
#pragma omp for schedule(static)
        for (int64_t ci = 0; ci < s.cin; ++ci) {
            const float *xc = x + ci * s.h * s.w;
            for (int64_t ty = ty0; ty < ty1; ++ty) {
                const float *d[4];  // input rows 2 ty - ph + r from column pw of the padded row
                for (int r = 0; r < 4; ++r) {
                    const int64_t ih = 2 * ty - s.ph + r;
                    d[r] = ih >= 0 && ih < s.h ? xc + ih * s.w : zeros.data();
                }
                const float *__restrict d0 = d[0], *__restrict d1 = d[1];
                const float *__restrict d2 = d[2], *__restrict d3 = d[3];
                float *__restrict t0 = t.data() + s.pw, *__restrict t1 = t0 + wp;
                float *__restrict t2 = t1 + wp, *__restrict t3 = t2 + wp;
                for (int64_t c = 0; c < m; ++c) {  // B^T d, over whole rows
                    t0[c] = d0[c] - d2[c];
                    t1[c] = d1[c] + d2[c];
                    t2[c] = d2[c] - d1[c];
                    t3[c] = d1[c] - d3[c];
                }
                for (int i = 0; i < 4; ++i)
                    deinterleave(t.data() + i * wp, n, split.data() + i * n,
                                 split.data() + (4 + i) * n);
                tiles_of_row(split.data(), split.data() + 4 * n, s.tw, n,
                             v + ci * t_all + (ty - ty0) * s.tw, stride_p);
            }
        }
    }
}

#ifdef AOTC_CONV_DIRECT
constexpr int64_t kLanes = aotc_conv_direct::L;
#else
constexpr int64_t kLanes = 16;
#endif

// Output row oh of channels co0 .. co0 + lanes from `row` ([column][lane], whole blocks of
// kLanes columns), with the residual and the activation (conv_activation.h).
inline void store_rows(const Shape &s, const float *row, int64_t co0, int64_t lanes,
                       int64_t oh, const float *residual, int act, float lo, float hi,
                       float *y) {
#ifdef AOTC_CONV_DIRECT
    using namespace aotc_conv_direct;
    const V vlo = vset(lo), vhi = vset(hi);
    for (int64_t c0 = 0; c0 < s.wo; c0 += L) {
        const int64_t nc = std::min<int64_t>(L, s.wo - c0);
        V r[L];
        for (int i = 0; i < L; ++i) r[i] = vload(row + (c0 + i) * L);
        transpose(r);  // r[l]: channel co0 + l at columns c0 .. c0 + L - 1
        for (int64_t l = 0; l < lanes; ++l) {
            const int64_t at = ((co0 + l) * s.ho + oh) * s.wo + c0;
            V v = r[l];
            if (residual) v = vadd(v, nc == L ? vload(residual + at) : vload_n(residual + at, nc));
            v = activate(v, act, vlo, vhi);
            if (nc == L)
                vstore(y + at, v);
            else
                vstore_n(y + at, v, nc);
        }
    }
#else
    for (int64_t l = 0; l < lanes; ++l) {
        const int64_t at = ((co0 + l) * s.ho + oh) * s.wo;
        float *__restrict dst = y + at;
        for (int64_t c = 0; c < s.wo; ++c) {
            const float v = row[c * kLanes + l] + (residual ? residual[at + c] : 0.0f);
            dst[c] = aotc_conv_act::activate(v, act, lo, hi);
        }
    }
#endif
}

// The 2x2 outputs (A^T M A + bias) of one tile for kLanes channels: m[p * stride_p + l]
// for channel l < lanes; written channel-minor at o (row 0: columns 0 and 1, kLanes apart)
// and o + row (row 1).
inline void tile_outputs(const float *m, int64_t stride_p, int64_t lanes, const float *b,
                         float *o, int64_t row) {
#ifdef AOTC_CONV_DIRECT
    using namespace aotc_conv_direct;
    V mv[16];
    for (int p = 0; p < 16; ++p)
        mv[p] = lanes == L ? vload(m + p * stride_p) : vload_n(m + p * stride_p, lanes);
    V r0[4], r1[4];  // A^T M: the two rows of each column j
    for (int j = 0; j < 4; ++j) {
        r0[j] = vadd(vadd(mv[j], mv[4 + j]), mv[8 + j]);
        r1[j] = vsub(vsub(mv[4 + j], mv[8 + j]), mv[12 + j]);
    }
    const V bv = vload(b);
    vstore(o, vadd(vadd(vadd(r0[0], r0[1]), r0[2]), bv));  // (A^T M) A
    vstore(o + L, vadd(vsub(vsub(r0[1], r0[2]), r0[3]), bv));
    vstore(o + row, vadd(vadd(vadd(r1[0], r1[1]), r1[2]), bv));
    vstore(o + row + L, vadd(vsub(vsub(r1[1], r1[2]), r1[3]), bv));
#else
    for (int64_t l = 0; l < kLanes; ++l) {
        float mv[16];
        for (int p = 0; p < 16; ++p) mv[p] = l < lanes ? m[p * stride_p + l] : 0.0f;
        float r0[4], r1[4];
        for (int j = 0; j < 4; ++j) {
            r0[j] = mv[j] + mv[4 + j] + mv[8 + j];
            r1[j] = mv[4 + j] - mv[8 + j] - mv[12 + j];
        }
        o[l] = r0[0] + r0[1] + r0[2] + b[l];
        o[kLanes + l] = r0[1] - r0[2] - r0[3] + b[l];
        o[row + l] = r1[0] + r1[1] + r1[2] + b[l];
        o[row + kLanes + l] = r1[1] - r1[2] - r1[3] + b[l];
    }
#endif
}

// y[co] = A^T M A per tile, plus the bias, the residual and the activation (one image), from
// mt[p][t][co] (the products as the GEMM leaves them: output channels along a row): a block
// of kLanes channels and a row of tiles at a time, the tiles' outputs gathered channel-minor
// ([row][column][lane]) and then written out row by row (transposed in registers on the
// vector builds).
inline void transform_output(const Shape &s, const float *mt, int64_t ty0, int64_t ty1,
                             const float *bias, const float *residual, int act, float lo,
                             float hi, float *y, bool threaded) {
    const int64_t t_all = (ty1 - ty0) * s.tw, stride_p = t_all * s.cout;
    const int64_t blocks = (s.cout + kLanes - 1) / kLanes, cols = 2 * s.tw;
#pragma omp parallel if (threaded)
    {
        // [row][column][lane], columns padded to whole blocks of kLanes for the transposes
        const int64_t padded = (cols + kLanes - 1) / kLanes * kLanes;
        std::vector<float> out(2 * padded * kLanes, 0.0f);
#pragma omp for collapse(2) schedule(static)
        for (int64_t cb = 0; cb < blocks; ++cb)
            for (int64_t ty = ty0; ty < ty1; ++ty) {
                const int64_t co0 = cb * kLanes, lanes = std::min(kLanes, s.cout - co0);
                float b[kLanes] = {};
                for (int64_t l = 0; l < lanes; ++l) b[l] = bias ? bias[co0 + l] : 0.0f;
                for (int64_t x0 = 0; x0 < s.tw; ++x0)
                    tile_outputs(mt + ((ty - ty0) * s.tw + x0) * s.cout + co0, stride_p, lanes, b,
                                 out.data() + 2 * x0 * kLanes, padded * kLanes);
                for (int r = 0; r < 2; ++r) {
                    const int64_t oh = 2 * ty + r;
                    if (oh >= s.ho) break;
                    const float *row = out.data() + r * padded * kLanes;
                    store_rows(s, row, co0, lanes, oh, residual, act, lo, hi, y);
                }
            }
    }
}

// One chunk of tile rows [ty0, ty1): its input transform, 16 GEMMs and output transform,
// threaded (the transforms split over the team, the GEMMs one per thread) or on the calling
// thread. `ws` holds V and M^T of every tile of the image (workspace_floats).
inline void chunk(const Shape &s, const float *x, const float *u, const float *bias,
                  const float *residual, int act, float lo, float hi, float *y, float *ws,
                  int64_t ty0, int64_t ty1, bool threaded) {
    const int64_t t_all = tiles(s), packed = packed_stride(s.cin, s.cout);
    const int64_t t0 = ty0 * s.tw, tc = (ty1 - ty0) * s.tw;
    float *v = ws + 16 * s.cin * t0, *mt = ws + 16 * s.cin * t_all + 16 * s.cout * t0;
    transform_input(s, x, ty0, ty1, v, threaded);
    // M^T[p] [tc, Cout] = V[p]^T [tc, Cin] U[p]^T [Cin, Cout] (a GEMM called inside a parallel
    // region runs on its caller's thread)
    auto product = [&](int p) {
        aotc_sgemm_prepacked(1, tc, s.cout, s.cin, v + p * s.cin * tc, 0, 1, tc, u + p * packed,
                             mt + p * tc * s.cout, 0, s.cout, nullptr, 0, 0, 0, 1.0f, 0.0f,
                             nullptr);
    };
    if (threaded) {
#pragma omp parallel for schedule(static)
        for (int p = 0; p < 16; ++p) product(p);
    } else {
        for (int p = 0; p < 16; ++p) product(p);
    }
    transform_output(s, mt, ty0, ty1, bias, residual, act, lo, hi, y, threaded);
}

// Tile rows are taken in chunks whose transformed tiles and products (16 (Cin + Cout) floats
// a tile) fit in about kChunkFloats floats, so that each chunk's V and M^T stay in the core's
// cache between the transforms and the GEMMs, but of at least kChunkTiles tiles (the GEMMs'
// rows: fewer leave their micro-kernel short of work).
#ifndef AOTC_WINOGRAD_CHUNK_FLOATS
#define AOTC_WINOGRAD_CHUNK_FLOATS (256 * 1024)
#endif
#ifndef AOTC_WINOGRAD_CHUNK_TILES
#define AOTC_WINOGRAD_CHUNK_TILES 192
#endif
constexpr int64_t kChunkFloats = AOTC_WINOGRAD_CHUNK_FLOATS, kChunkTiles = AOTC_WINOGRAD_CHUNK_TILES;

// One image: y = conv(x, w) + bias (+ residual, then the activation), x [Cin, H, W], y [Cout, Ho, Wo].
// `u` holds the weights' transform packed as 16 GEMM B operands [Cin, Cout] (pack), `ws`
// room for V and M^T of every tile (workspace_floats): each chunk of tile rows uses its own
// part of it. Several chunks run one per thread (each its own GEMMs, on one thread); a
// single chunk runs its transforms threaded and its 16 GEMMs one per thread.
// The unthreaded forms around the GEMMs are plain loops, not parallel regions with a false
// `if`: such a region is inactive, so a parallel region inside it (the GEMM's) starts a
// nested team, whose threads libgomp creates anew each time (DenseNet-121 at 2 threads ran
// 1.3x slower so, and 13x with torch's libgomp spinning beside it).
inline void image(const Shape &s, const float *x, const float *u, const float *bias,
                  const float *residual, int act, float lo, float hi, float *y, float *ws,
                  bool threaded) {
    const int64_t rows = std::max({int64_t(1), kChunkFloats / (16 * (s.cin + s.cout) * s.tw),
                                   (kChunkTiles + s.tw - 1) / s.tw});
    const int64_t chunks = (s.th + rows - 1) / rows;
    if (threaded && chunks > 1) {
#pragma omp parallel for schedule(static)
        for (int64_t c = 0; c < chunks; ++c)
            chunk(s, x, u, bias, residual, act, lo, hi, y, ws, c * rows,
                  std::min(s.th, (c + 1) * rows), false);
        return;
    }
    for (int64_t c = 0; c < chunks; ++c)
        chunk(s, x, u, bias, residual, act, lo, hi, y, ws, c * rows,
              std::min(s.th, (c + 1) * rows), threaded);
}

// The transformed weight of w [Cout, Cin, 3, 3] packed for `image`: for each p, U[p]^T
// [Cin, Cout] as the GEMM's packed B (aotc_sgemm_pack_b), packed_stride floats apart
// (`packed` 64-byte aligned). False without memory for the
// transform.
inline bool pack(int64_t cout, int64_t cin, const float *w, float *packed, bool threaded) {
    const Shape s = shape(cin, cout, 0, 0, 0, 0, 0, 0);
    float *u = static_cast<float *>(std::malloc(sizeof(float) * 16 * cout * cin));
    if (!u) return false;
    transform_weights(s, w, u, threaded);
    const int64_t floats = packed_stride(cin, cout);
    for (int p = 0; p < 16; ++p)  // B(ci, co) = U[p][co][ci]
        aotc_sgemm_pack_b(cin, cout, u + p * cout * cin, 1, cin, packed + p * floats);
    std::free(u);
    return true;
}

}  // namespace aotc_winograd

#endif
