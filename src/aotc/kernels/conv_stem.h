// A network's stem into channels-last activations, for conv.cpp on the builds of
// conv_direct.h: a one-group 2-D convolution of a channels-first x of few channels (an
// image) whose weight is the GEMM's packed B of one panel and one slice ([K][NR], K = Cin *
// kh * kw, the columns past Cout zero), y [n, ho, wo, Cout]. A tile of P output positions
// along a row keeps P x W vectors of output channels in registers; each tap's input value is
// broadcast from x where it lies against the weight's row for that tap. No columns are
// written: im2col and the GEMM read and wrote them (MobileNetV2's 3 -> 32 stem at 224x224,
// stride 2: 27 x 12544 floats, 1.3 MB) and applied the activation in a pass after the strip
// kernel. The sums are the GEMM's, in its order: from zero over k = (ci, ky, kx), then the
// bias, the residual and the activation; a tap in the padding adds nothing.
#ifndef AOTC_CONV_STEM_H
#define AOTC_CONV_STEM_H

#include "conv_direct.h"

#ifdef AOTC_CONV_DIRECT

#include <algorithm>
#include <cstdint>

namespace aotc_conv_stem {

using namespace aotc_conv_direct;

// accumulators a tile keeps: 32 vector registers on AVX-512 and NEON, 16 on AVX2
#if defined(__AVX512F__) || defined(__aarch64__)
constexpr int kAccumulators = 24;
#else
constexpr int kAccumulators = 12;
#endif

struct Stem {
    const Plan *pl;          // its cig and cog: the input and output channels
    int64_t nr;              // the panel's width
    const float *w, *bias;   // w: the packed panel, row k at w + k * nr
    int act;
    V vlo, vhi;
};

// Output positions ow .. ow + np - 1 (np <= P) of row oh, image plane xn (Cin planes),
// written from yrow (the row's first position), the residual rrow laid out as y. S: the
// stride along the row where it is 1 or 2 (the offsets of the P positions' inputs are then
// constants), 0 for any (pl.sw). EDGE: some taps lie outside the row, or np < P.
template <int P, int W, int S, bool EDGE>
inline void tile(const Stem &s, const float *xn, const float *rrow, float *yrow, int64_t oh,
                 int64_t ow, int np) {
    const Plan &pl = *s.pl;
    const int64_t sw = S ? S : pl.sw;
    V acc[P][W];
#pragma GCC unroll 32
    for (int j = 0; j < P; ++j)
#pragma GCC unroll 4
        for (int v = 0; v < W; ++v) acc[j][v] = vzero();
    for (int64_t ci = 0; ci < pl.cig; ++ci)
        for (int64_t ky = 0; ky < pl.kh; ++ky) {
            const int64_t ih = oh * pl.sh - pl.ph + ky * pl.dh;
            if (ih < 0 || ih >= pl.h) continue;
            const float *xr = xn + (ci * pl.h + ih) * pl.w;
            const float *wk = s.w + ((ci * pl.kh + ky) * pl.kw) * s.nr;
            for (int64_t kx = 0; kx < pl.kw; ++kx, wk += s.nr) {
                V wv[W];
#pragma GCC unroll 4
                for (int v = 0; v < W; ++v) wv[v] = vload(wk + v * L);
                const int64_t iw0 = ow * sw - pl.pw + kx * pl.dw;
                const float *xt = xr + iw0;  // inside the row wherever it is read
#pragma GCC unroll 32
                for (int j = 0; j < P; ++j) {
                    if (EDGE && (j >= np || iw0 + j * sw < 0 || iw0 + j * sw >= pl.w)) continue;
                    const V a = vset(xt[j * sw]);
#pragma GCC unroll 4
                    for (int v = 0; v < W; ++v) acc[j][v] = vfma(a, wv[v], acc[j][v]);
                }
            }
        }
#pragma GCC unroll 32
    for (int j = 0; j < P; ++j) {
        if (EDGE && j >= np) break;
#pragma GCC unroll 4
        for (int v = 0; v < W; ++v) {
            const int64_t c = v * L, nc = std::min<int64_t>(L, pl.cog - c);
            const int64_t at = (ow + j) * pl.cog + c;
            V r = acc[j][v];
            if (s.bias) r = vadd(r, nc == L ? vload(s.bias + c) : vload_n(s.bias + c, nc));
            if (rrow) r = vadd(r, nc == L ? vload(rrow + at) : vload_n(rrow + at, nc));
            r = activate(r, s.act, s.vlo, s.vhi);
            if (nc == L)
                vstore(yrow + at, r);
            else
                vstore_n(yrow + at, r, nc);
        }
    }
}

// One output row: tiles without checks over the positions whose taps all lie inside the row,
// tiles with checks before and after them.
template <int W, int S>
inline void row(const Stem &s, const float *xn, const float *rrow, float *yrow, int64_t oh) {
    constexpr int P = kAccumulators / W;
    const Plan &pl = *s.pl;
    const int64_t sw = S ? S : pl.sw, reach = (pl.kw - 1) * pl.dw;
    // [left, right): the positions whose taps lie inside the row
    const int64_t left = std::min(pl.wo, (pl.pw + sw - 1) / sw);
    const int64_t right = std::max(left, std::min(pl.wo, pl.w + pl.pw - reach > 0
                                                  ? (pl.w + pl.pw - reach - 1) / sw + 1 : 0));
    const auto edge = [&](int64_t from, int64_t to) {
        for (int64_t ow = from; ow < to; ow += P)
            tile<P, W, S, true>(s, xn, rrow, yrow, oh, ow,
                                static_cast<int>(std::min<int64_t>(P, to - ow)));
    };
    edge(0, left);
    int64_t ow = left;
    for (; ow + P <= right; ow += P) tile<P, W, S, false>(s, xn, rrow, yrow, oh, ow, P);
    edge(ow, pl.wo);
}

template <int W>
inline void row_any(const Stem &s, const float *xn, const float *rrow, float *yrow,
                    int64_t oh) {
    if (s.pl->sw == 2) row<W, 2>(s, xn, rrow, yrow, oh);
    else if (s.pl->sw == 1) row<W, 1>(s, xn, rrow, yrow, oh);
    else row<W, 0>(s, xn, rrow, yrow, oh);
}

// Whether `run` takes a convolution of Cout output channels: at most one panel of nr
// columns, in at most 4 vectors.
inline bool fits(int64_t cout, int64_t nr) { return cout <= nr && cout <= 4 * L; }

// y = conv(x, w) + bias (+ residual, then the activation) for every image, threads sharing
// out the output rows.
// pl: the plan of conv_direct.h for cig input and cog output channels.
inline void run(const Plan &pl, int64_t batch, int64_t nr, const float *x, const float *w,
                const float *bias, const float *residual, int act, float lo, float hi, float *y,
                bool threaded) {
    const Stem s{&pl, nr, w, bias, act, vset(lo), vset(hi)};
    const int64_t vectors = (pl.cog + L - 1) / L, in_image = pl.cig * pl.h * pl.w;
    const int64_t out_row = pl.wo * pl.cog, out_image = pl.ho * out_row;
#pragma omp parallel for collapse(2) schedule(static) if (threaded)
    for (int64_t n = 0; n < batch; ++n)
        for (int64_t oh = 0; oh < pl.ho; ++oh) {
            const float *xn = x + n * in_image;
            const int64_t at = n * out_image + oh * out_row;
            const float *rrow = residual ? residual + at : nullptr;
            float *yrow = y + at;
            if (vectors == 1) row_any<1>(s, xn, rrow, yrow, oh);
            else if (vectors == 2) row_any<2>(s, xn, rrow, yrow, oh);
            else if (vectors == 3) row_any<3>(s, xn, rrow, yrow, oh);
            else row_any<4>(s, xn, rrow, yrow, oh);
        }
}

}  // namespace aotc_conv_stem

#endif
#endif
