// Depthwise convolution for conv.cpp on the builds of conv_direct.h: a kernel per output
// channel over its phased input, and one on blocks of channels held channel-minor.
#ifndef AOTC_CONV_DEPTHWISE_H
#define AOTC_CONV_DEPTHWISE_H

#include "conv_direct.h"

#ifdef AOTC_CONV_DIRECT

namespace aotc_conv_direct {

// Depthwise (one input channel per group, `mult` output channels each): every output
// channel of every image on its own, one thread each, over the same phased input (of its
// one channel, refilled per output channel) with DW_NV vectors of positions per tile.
constexpr int DW_NV = 4;
constexpr int DW_T = L * DW_NV;

inline void depthwise(const Plan &pl, int64_t batch, int64_t channels, int64_t mult,
                      const float *x, const float *w, const float *bias, const float *res,
                      int act, float lo, float hi, float *y, bool threaded) {
    std::vector<int64_t> offset(pl.taps);
    const int64_t plane = pl.hs * pl.ws;
    for (int64_t a = 0; a < pl.kh; ++a)
        for (int64_t b = 0; b < pl.kw; ++b) {
            const int64_t r = a * pl.dh, c = b * pl.dw;
            offset[a * pl.kw + b] =
                ((r % pl.sh) * pl.sw + c % pl.sw) * plane + (r / pl.sh) * pl.ws + c / pl.sw;
        }
    const int64_t out_plane = pl.ho * pl.wo, tiles = (pl.q + DW_T - 1) / DW_T;
    const int64_t cout = channels * mult;
#pragma omp parallel if (threaded)
    {
        // the last tile reads up to DW_T past the last valid position's run
        std::vector<float> buf(pl.chan + DW_T + pl.ws + pl.chan);  // a zero tail
        alignas(64) float out[DW_T];
#pragma omp for collapse(2) schedule(static)
        for (int64_t n = 0; n < batch; ++n)
            for (int64_t oc = 0; oc < cout; ++oc) {
                fill_channel(pl, x + (n * channels + oc / mult) * pl.h * pl.w, buf.data(),
                             true);  // the vector starts zeroed
                const float *wc = w + oc * pl.taps;
                const V b = vset(bias ? bias[oc] : 0.0f);
                float *yc = y + (n * cout + oc) * out_plane;
                const float *rc = res ? res + (n * cout + oc) * out_plane : nullptr;
                for (int64_t tq = 0; tq < tiles; ++tq) {
                    const int64_t q0 = tq * DW_T;
                    V acc[DW_NV];
                    for (int j = 0; j < DW_NV; ++j) acc[j] = b;
                    const float *base = buf.data() + q0;
                    for (int64_t t = 0; t < pl.taps; ++t) {
                        const V wv = vset(wc[t]);
                        const float *src = base + offset[t];
                        for (int j = 0; j < DW_NV; ++j) acc[j] = vfma(wv, vload(src + j * L), acc[j]);
                    }
                    for (int j = 0; j < DW_NV; ++j) {
                        V v = acc[j];
                        if (!res) v = activate(v, act, vset(lo), vset(hi));
                        vstore(out + j * L, v);
                    }
                    // the valid positions: row segments oh, ow in [0, wo) (one division
                    // per tile: per row, they cost more than a small plane's arithmetic)
                    const int64_t q1 = std::min(q0 + DW_T, pl.q);
                    for (int64_t oh = q0 / pl.ws, row = oh * pl.ws; row < q1;
                         ++oh, row += pl.ws) {
                        const int64_t a = std::max(q0, row), cnt = std::min(q1, row + pl.wo) - a;
                        if (cnt <= 0) continue;
                        const int64_t at = oh * pl.wo + (a - row);
                        store_run(out + (a - q0), rc ? rc + at : nullptr, act, lo, hi, yc + at,
                                  cnt);
                    }
                }
            }
    }
}


// r[i][j] <- r[j][i]: an L x L block of floats transposed in registers (unpacks within
// 128-bit lanes, then lane shuffles).
inline void transpose(V (&r)[L]) {
#if defined(__AVX512F__)
    // the masked forms, all lanes: g++ 12 warns that the unmasked ones read an
    // uninitialized register
    constexpr __mmask16 all = 0xFFFF;
    V t[16], u[16];
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_mask_unpacklo_ps(r[i], all, r[i], r[i + 1]);
        t[i + 1] = _mm512_mask_unpackhi_ps(r[i], all, r[i], r[i + 1]);
    }
    // per group g of 4 rows: u[4g + k] holds, in 128-bit lane m, column k + 4m of the group
    for (int g = 0; g < 16; g += 4) {
        u[g] = _mm512_mask_shuffle_ps(t[g], all, t[g], t[g + 2], 0x44);
        u[g + 1] = _mm512_mask_shuffle_ps(t[g], all, t[g], t[g + 2], 0xEE);
        u[g + 2] = _mm512_mask_shuffle_ps(t[g + 1], all, t[g + 1], t[g + 3], 0x44);
        u[g + 3] = _mm512_mask_shuffle_ps(t[g + 1], all, t[g + 1], t[g + 3], 0xEE);
    }
    for (int k = 0; k < 4; ++k) {
        // groups 0 and 1: their lanes 0, 1 (a) and 2, 3 (b); groups 2 and 3 likewise
        const V a = _mm512_mask_shuffle_f32x4(u[k], all, u[k], u[4 + k], 0x44);
        const V b = _mm512_mask_shuffle_f32x4(u[k], all, u[k], u[4 + k], 0xEE);
        const V c = _mm512_mask_shuffle_f32x4(u[8 + k], all, u[8 + k], u[12 + k], 0x44);
        const V d = _mm512_mask_shuffle_f32x4(u[8 + k], all, u[8 + k], u[12 + k], 0xEE);
        r[k] = _mm512_mask_shuffle_f32x4(a, all, a, c, 0x88);
        r[k + 4] = _mm512_mask_shuffle_f32x4(a, all, a, c, 0xDD);
        r[k + 8] = _mm512_mask_shuffle_f32x4(b, all, b, d, 0x88);
        r[k + 12] = _mm512_mask_shuffle_f32x4(b, all, b, d, 0xDD);
    }
#elif defined(__aarch64__)
    // pairs of rows interleaved (trn1/trn2), then pairs of 64-bit halves
    const float32x4_t t0 = vtrn1q_f32(r[0], r[1]), t1 = vtrn2q_f32(r[0], r[1]);
    const float32x4_t t2 = vtrn1q_f32(r[2], r[3]), t3 = vtrn2q_f32(r[2], r[3]);
    const auto lo = [](float32x4_t a, float32x4_t b) {
        return vreinterpretq_f32_f64(vzip1q_f64(vreinterpretq_f64_f32(a), vreinterpretq_f64_f32(b)));
    };
    const auto hi = [](float32x4_t a, float32x4_t b) {
        return vreinterpretq_f32_f64(vzip2q_f64(vreinterpretq_f64_f32(a), vreinterpretq_f64_f32(b)));
    };
    r[0] = lo(t0, t2);
    r[1] = lo(t1, t3);
    r[2] = hi(t0, t2);
    r[3] = hi(t1, t3);
#else
    V t[8], u[8];
    for (int i = 0; i < 8; i += 2) {
        t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int g = 0; g < 8; g += 4) {
        u[g] = _mm256_shuffle_ps(t[g], t[g + 2], 0x44);
        u[g + 1] = _mm256_shuffle_ps(t[g], t[g + 2], 0xEE);
        u[g + 2] = _mm256_shuffle_ps(t[g + 1], t[g + 3], 0x44);
        u[g + 3] = _mm256_shuffle_ps(t[g + 1], t[g + 3], 0xEE);
    }
    for (int k = 0; k < 4; ++k) {
        r[k] = _mm256_permute2f128_ps(u[k], u[4 + k], 0x20);
        r[k + 4] = _mm256_permute2f128_ps(u[k], u[4 + k], 0x31);
    }
#endif
}

// Depthwise with multiplier 1 on blocks of L channels: the block's input rows are
// transposed (L positions x L channels in registers) into a zero-padded channel-minor
// scratch [rows][w + 2pw][L], every output position is then one vector of L channels (a
// multiply-add per tap, any stride or dilation without phases), and the channel-minor
// result is transposed back with the residual and clamp. A channels-last x or y skips its
// transpose: a position's run of the block's channels is one load or store. The
// per-channel bookkeeping of `depthwise` (a phased copy, row segments) is paid once per L
// channels. A block goes in bands of output rows (about DWB_BAND positions each) so that
// its scratch stays in L2 (a whole 112x112 plane of 16 channels would be 1.6 MB in and
// out); the rows a band shares with the next are transposed for each; threads share out
// the (image, block, band) triples (channels last: (image, band, block)), each output
// summed by one of them in one order. Channels past the last full block are computed with
// zero weights and not stored.
constexpr int DWB_OW = 8;  // output positions per register tile (fewer at a row's end)
constexpr int64_t DWB_BAND = 2048;  // output positions per band (at least one row)

// Output positions ow .. ow + B - 1 of one row (irow: its first input row in the scratch),
// every tap, channel-minor into orow.
struct DwRow {
    const Plan &pl;
    int64_t wp;
    const float *irow, *wb;
    V bv, vlo, vhi;
    int act;  // the activation (conv_activation.h)
    float *orow;
};

template <int B>
inline void dw_tile(const DwRow &r, int64_t ow) {
    const Plan &pl = r.pl;
    const int64_t wp = r.wp;
    const float *irow = r.irow, *wb = r.wb;
    float *orow = r.orow;
    const V bv = r.bv, vlo = r.vlo, vhi = r.vhi;
    const int act = r.act;
    V acc[B];
    for (int j = 0; j < B; ++j) acc[j] = bv;
    for (int64_t a = 0; a < pl.kh; ++a) {
        const float *ir = irow + (a * pl.dh * wp + ow * pl.sw) * L;
        for (int64_t b = 0; b < pl.kw; ++b) {
            const V wv = vload(wb + (a * pl.kw + b) * L);
            const float *src = ir + b * pl.dw * L;
            for (int j = 0; j < B; ++j) acc[j] = vfma(wv, vload(src + j * pl.sw * L), acc[j]);
        }
    }
    for (int j = 0; j < B; ++j) vstore(orow + (ow + j) * L, activate(acc[j], act, vlo, vhi));
}

// One output row of the block, from its first input row in the scratch.
inline void dw_row(const DwRow &row, int64_t wo) {
    int64_t ow = 0;
    for (; ow + DWB_OW <= wo; ow += DWB_OW) dw_tile<DWB_OW>(row, ow);
    switch (wo - ow) {
        case 7: dw_tile<7>(row, ow); break;
        case 6: dw_tile<6>(row, ow); break;
        case 5: dw_tile<5>(row, ow); break;
        case 4: dw_tile<4>(row, ow); break;
        case 3: dw_tile<3>(row, ow); break;
        case 2: dw_tile<2>(row, ow); break;
        case 1: dw_tile<1>(row, ow); break;
        default: break;
    }
}

// Input rows [r0, r1) of the block's nc channel planes xb (L positions of the flat plane at
// a time), transposed into the scratch, whose row 0 is padded row `first` (input row
// first - ph). With x channels last (`last`: xb is the block's first channel at position 0,
// `channels` apart), each position's nc channels are one load.
inline void dw_rows_in(const Plan &pl, const float *xb, int64_t nc, int64_t r0, int64_t r1,
                       int64_t first, int64_t wp, float *ib, bool last, int64_t channels) {
    const int64_t in_plane = pl.h * pl.w, end = r1 * pl.w;
    if (last) {
        for (int64_t ih = r0; ih < r1; ++ih) {
            const float *src = xb + ih * pl.w * channels;
            float *dst = ib + ((ih + pl.ph - first) * wp + pl.pw) * L;
            for (int64_t iw = 0; iw < pl.w; ++iw)
                vstore(dst + iw * L, nc == L ? vload(src + iw * channels)
                                             : vload_n(src + iw * channels, nc));
        }
        return;
    }
    int64_t ih = r0, iw = 0;
    for (int64_t p0 = r0 * pl.w; p0 < end; p0 += L) {
        const int64_t cnt = std::min<int64_t>(L, end - p0);
        V r[L];
        for (int c = 0; c < L; ++c) {
            const float *src = xb + c * in_plane + p0;
            r[c] = c >= nc ? vzero() : cnt == L ? vload(src) : vload_n(src, cnt);
        }
        transpose(r);
        for (int64_t j = 0; j < cnt; ++j) {
            vstore(ib + ((ih + pl.ph - first) * wp + iw + pl.pw) * L, r[j]);
            if (++iw == pl.w) iw = 0, ++ih;
        }
    }
}

// Output positions [p0, p1) of the block, channel-minor in ob from position p0 on (ob has
// L positions of slack), back to its nc channel planes yb, with the residual and clamp.
// With y channels last (`last`: yb and rb at the block's first channel of position 0,
// `channels` apart), each position's nc channels are one store.
inline void dw_rows_out(const Plan &pl, const float *ob, int64_t nc, int64_t p0, int64_t p1,
                        const float *rb, int act, V vlo, V vhi, float *yb, bool last,
                        int64_t channels) {
    const int64_t out_plane = pl.ho * pl.wo;
    if (last) {
        for (int64_t p = p0; p < p1; ++p) {
            V v = vload(ob + (p - p0) * L);
            if (rb) {
                const float *rs = rb + p * channels;
                v = activate(vadd(v, nc == L ? vload(rs) : vload_n(rs, nc)), act, vlo, vhi);
            }
            if (nc == L)
                vstore(yb + p * channels, v);
            else
                vstore_n(yb + p * channels, v, nc);
        }
        return;
    }
    for (int64_t p = p0; p < p1; p += L) {
        const int64_t cnt = std::min<int64_t>(L, p1 - p);
        V r[L];
        for (int j = 0; j < L; ++j) r[j] = vload(ob + (p - p0 + j) * L);
        transpose(r);
        for (int64_t c = 0; c < nc; ++c) {
            float *dst = yb + c * out_plane + p;
            const float *rs = rb ? rb + c * out_plane + p : nullptr;
            V v = r[c];
            if (rs) {
                v = vadd(v, cnt == L ? vload(rs) : vload_n(rs, cnt));
                v = activate(v, act, vlo, vhi);
            }
            if (cnt == L)
                vstore(dst, v);
            else
                vstore_n(dst, v, cnt);
        }
    }
}

inline void depthwise_blocked(const Plan &pl, int64_t batch, int64_t channels, const float *x,
                              const float *w, const float *bias, const float *res, int act,
                              float lo, float hi, float *y, bool threaded, bool x_last,
                              bool y_last) {
    const int64_t wp = pl.w + 2 * pl.pw;
    const int64_t in_plane = pl.h * pl.w, out_plane = pl.ho * pl.wo;
    const int64_t blocks = (channels + L - 1) / L;
    // channels last: the blocks inner, each reading its run of a band's positions (bands of
    // about 256 KiB of input rows, every channel, measured 15-25% slower on MobileNetV2's
    // 56x56 and 112x112 layers: more rows read twice, more per band)
    const bool cl = x_last || y_last;
    const int64_t band = std::max<int64_t>(1, std::min(pl.ho, DWB_BAND / pl.wo));
    const int64_t bands = (pl.ho + band - 1) / band;
    const int64_t band_rows = (band - 1) * pl.sh + (pl.kh - 1) * pl.dh + 1;  // padded rows read
    const V vlo = vset(lo), vhi = vset(hi);
    const int act_here = res ? 0 : act;  // with a residual, dw_rows_out applies it
#pragma omp parallel if (threaded)
    {
        // scratch left uninitialized but for the padding columns of ib (zeroed once: every
        // band writes the same interior columns; padding rows are zeroed where a band reads
        // them) and the slack of ob (read by the last transpose back)
        const std::unique_ptr<float[]> ib(new float[band_rows * wp * L]);
        const std::unique_ptr<float[]> ob(new float[(band * pl.wo + L) * L]);
        std::fill(ob.get() + band * pl.wo * L, ob.get() + (band * pl.wo + L) * L, 0.0f);
        for (int64_t r = 0; r < band_rows; ++r) {
            float *row = ib.get() + r * wp * L;
            std::fill(row, row + pl.pw * L, 0.0f);
            std::fill(row + (pl.pw + pl.w) * L, row + wp * L, 0.0f);
        }
        std::vector<float> wb(pl.taps * L);
        int64_t block_in_wb = -1;  // the channel block whose weights wb holds
        alignas(64) float part[L];
        // a network's first depthwise layers have one or two blocks of channels, many bands
        const int64_t outer = cl ? bands : blocks, inner = cl ? blocks : bands;
#pragma omp for collapse(3) schedule(static)
        for (int64_t n = 0; n < batch; ++n)
            for (int64_t u = 0; u < outer; ++u)
                for (int64_t v = 0; v < inner; ++v) {
                    const int64_t cb = cl ? v : u, bi = cl ? u : v;
                    const int64_t c0 = cb * L, nc = std::min<int64_t>(L, channels - c0);
                    if (cb != block_in_wb) {  // this thread's weights for the block
                        for (int64_t c = 0; c < L; ++c)
                            for (int64_t t = 0; t < pl.taps; ++t)
                                wb[t * L + c] = c < nc ? w[(c0 + c) * pl.taps + t] : 0.0f;
                        block_in_wb = cb;
                    }
                    for (int c = 0; c < L; ++c) part[c] = c < nc && bias ? bias[c0 + c] : 0.0f;
                    const V bv = vload(part);
                    // the block's first channel at position 0 (of the planes, or of the
                    // positions where channels last)
                    const float *xb = x + (x_last ? n * in_plane * channels + c0
                                                  : (n * channels + c0) * in_plane);
                    const int64_t y_at = y_last ? n * out_plane * channels + c0
                                                : (n * channels + c0) * out_plane;
                    float *yb = y + y_at;
                    const float *rb = res ? res + y_at : nullptr;
                    const int64_t oh0 = bi * band, oh1 = std::min(pl.ho, oh0 + band);
                    // padded rows [first, last) in, input rows [r0, r1) of them inside x
                    const int64_t first = oh0 * pl.sh;
                    const int64_t last = (oh1 - 1) * pl.sh + (pl.kh - 1) * pl.dh + 1;
                    const int64_t r0 = std::max<int64_t>(first - pl.ph, 0);
                    const int64_t r1 = std::min<int64_t>(last - pl.ph, pl.h);
                    for (int64_t pr = first; pr < last; ++pr)
                        if (pr - pl.ph < r0 || pr - pl.ph >= r1) {
                            float *row = ib.get() + ((pr - first) * wp + pl.pw) * L;
                            std::fill(row, row + pl.w * L, 0.0f);
                        }
                    if (r1 > r0)
                        dw_rows_in(pl, xb, nc, r0, r1, first, wp, ib.get(), x_last, channels);
                    for (int64_t oh = oh0; oh < oh1; ++oh) {
                        const DwRow row{pl, wp, ib.get() + (oh - oh0) * pl.sh * wp * L,
                                        wb.data(), bv, vlo, vhi, act_here,
                                        ob.get() + (oh - oh0) * pl.wo * L};
                        dw_row(row, pl.wo);
                    }
                    dw_rows_out(pl, ob.get(), nc, oh0 * pl.wo, oh1 * pl.wo, rb, act, vlo, vhi,
                                yb, y_last, channels);
                }
    }
}

// Depthwise with multiplier 1, x and y channels last, at a stride above 1 or with a kernel
// of dwl_tile_fixed (below): no copies. Threads share out the output rows; along a row, a
// tile of positions at a time, each vector of L channels sums its taps straight from x
// (taps outside it skipped), the weights read as [tap][channel] (wt, transposed once per
// call) a vector per tap for all the tile's positions, then the bias, residual and
// activation, and one store per position. Against the blocked kernel (its copies of a
// band's rows, a pass per channel block), one thread: 96 channels of 112x112 at stride 2
// 344-471 -> 265-388 us with the general tiles (dwl_tile), 253 -> 182 with the fixed ones;
// at stride 1 the fixed tiles, which load each input column once for all the taps and
// positions that read it: 144 of 56x56 234 -> 172 us, 32 of 112x112 214 -> 146, 960 of
// 7x7 33 -> 20, 240 of 28x28 with a 5x5 kernel 214 -> 115 (the general tiles at stride 1
// were slower than the blocked kernel: 297 -> 367 us).
constexpr int DWL_P = 4;

// The first np of a tile's P sums (positions ow + j, channels c .. c + nc - 1 of a row whose
// positions are `channels` apart), with the residual and the activation, one store each.
template <int P>
inline void dwl_store(const V (&acc)[P], int np, const float *rrow, float *yrow, int64_t ow,
                      int64_t channels, int64_t c, int64_t nc, int act, V vlo, V vhi) {
    const bool full = nc == L;
#pragma GCC unroll 16
    for (int j = 0; j < P; ++j) {
        if (j >= np) break;
        V v = acc[j];
        const int64_t at = (ow + j) * channels + c;
        if (rrow) v = vadd(v, full ? vload(rrow + at) : vload_n(rrow + at, nc));
        v = activate(v, act, vlo, vhi);
        if (full)
            vstore(yrow + at, v);
        else
            vstore_n(yrow + at, v, nc);
    }
}

// P positions from ow; INSIDE: every tap of every one lies inside the row (no checks)
template <int P, bool INSIDE>
inline void dwl_tile(const Plan &pl, int64_t channels, const float *xn, const float *wt,
                     const float *bias, const float *rrow, int act, V vlo, V vhi, float *yrow,
                     int64_t oh, int64_t ow) {
    for (int64_t c = 0; c < channels; c += L) {
        const int64_t nc = std::min<int64_t>(L, channels - c);
        const bool full = nc == L;
        V acc[P];
        const V b = bias ? (full ? vload(bias + c) : vload_n(bias + c, nc)) : vzero();
        for (int j = 0; j < P; ++j) acc[j] = b;
        for (int64_t ky = 0; ky < pl.kh; ++ky) {
            const int64_t ih = oh * pl.sh - pl.ph + ky * pl.dh;
            if (ih < 0 || ih >= pl.h) continue;
            const float *xr = xn + ih * pl.w * channels + c;
            for (int64_t kx = 0; kx < pl.kw; ++kx) {
                const float *wp = wt + (ky * pl.kw + kx) * channels + c;
                const V wv = full ? vload(wp) : vload_n(wp, nc);
                for (int j = 0; j < P; ++j) {
                    const int64_t iw = (ow + j) * pl.sw - pl.pw + kx * pl.dw;
                    if (!INSIDE && (iw < 0 || iw >= pl.w)) continue;
                    const float *src = xr + iw * channels;
                    acc[j] = vfma(wv, full ? vload(src) : vload_n(src, nc), acc[j]);
                }
            }
        }
        dwl_store<P>(acc, P, rrow, yrow, ow, channels, c, nc, act, vlo, vhi);
    }
}

// P positions from ow (np of them stored: all but at a row's end) of a K x K kernel at
// stride S, dilation 1: each input column that a kernel row of the tile reads is loaded once
// and serves every position and tap that reads it, (P - 1) S + K loads a row instead of
// P K. EDGE: some columns lie outside x (skipped: zero padding), or np < P.
template <int P, int K, int S, bool EDGE>
inline void dwl_tile_fixed(const Plan &pl, int64_t channels, const float *xn, const float *wt,
                           const float *bias, const float *rrow, int act, V vlo, V vhi,
                           float *yrow, int64_t oh, int64_t ow, int np) {
    constexpr int COLS = (P - 1) * S + K;
    const int64_t iw0 = ow * S - pl.pw;  // the tile's first input column
    for (int64_t c = 0; c < channels; c += L) {
        const int64_t nc = std::min<int64_t>(L, channels - c);
        const bool full = nc == L;
        V acc[P];
        const V b = bias ? (full ? vload(bias + c) : vload_n(bias + c, nc)) : vzero();
#pragma GCC unroll 16
        for (int j = 0; j < P; ++j) acc[j] = b;
        for (int ky = 0; ky < K; ++ky) {
            const int64_t ih = oh * pl.sh - pl.ph + ky;
            if (ih < 0 || ih >= pl.h) continue;
            const float *xr = xn + ih * pl.w * channels + c;
            V wv[K];
#pragma GCC unroll 16
            for (int kx = 0; kx < K; ++kx) {
                const float *wp = wt + (ky * K + kx) * channels + c;
                wv[kx] = full ? vload(wp) : vload_n(wp, nc);
            }
#pragma GCC unroll 64
            for (int q = 0; q < COLS; ++q) {
                const int64_t iw = iw0 + q;
                if (EDGE && (iw < 0 || iw >= pl.w)) continue;
                const float *src = xr + iw * channels;
                const V xv = full ? vload(src) : vload_n(src, nc);
#pragma GCC unroll 16
                for (int j = 0; j < P; ++j) {
                    const int kx = q - j * S;
                    if (kx >= 0 && kx < K) acc[j] = vfma(wv[kx], xv, acc[j]);
                }
            }
        }
        dwl_store<P>(acc, EDGE ? np : P, rrow, yrow, ow, channels, c, nc, act, vlo, vhi);
    }
}

// One output row of dwl_tile_fixed's tiles.
template <int P, int K, int S>
inline void dwl_row_fixed(const Plan &pl, int64_t channels, const float *xn, const float *wt,
                          const float *bias, const float *rrow, int act, V vlo, V vhi,
                          float *yrow, int64_t oh) {
    for (int64_t ow = 0; ow < pl.wo; ow += P) {
        const int np = static_cast<int>(std::min<int64_t>(P, pl.wo - ow));
        if (np == P && ow * S - pl.pw >= 0 && (ow + P - 1) * S - pl.pw + K <= pl.w)
            dwl_tile_fixed<P, K, S, false>(pl, channels, xn, wt, bias, rrow, act, vlo, vhi, yrow,
                                           oh, ow, P);
        else
            dwl_tile_fixed<P, K, S, true>(pl, channels, xn, wt, bias, rrow, act, vlo, vhi, yrow,
                                          oh, ow, np);
    }
}

// One output row of dwl_tile's tiles (any kernel, stride, dilation).
inline void dwl_row(const Plan &pl, int64_t channels, const float *xn, const float *wt,
                    const float *bias, const float *rrow, int act, V vlo, V vhi, float *yrow,
                    int64_t oh) {
    int64_t ow = 0;
    for (; ow + DWL_P <= pl.wo; ow += DWL_P) {
        const bool inside = ow * pl.sw - pl.pw >= 0 &&
            (ow + DWL_P - 1) * pl.sw - pl.pw + (pl.kw - 1) * pl.dw < pl.w;
        if (inside)
            dwl_tile<DWL_P, true>(pl, channels, xn, wt, bias, rrow, act, vlo, vhi, yrow, oh, ow);
        else
            dwl_tile<DWL_P, false>(pl, channels, xn, wt, bias, rrow, act, vlo, vhi, yrow, oh, ow);
    }
    for (; ow < pl.wo; ++ow)
        dwl_tile<1, false>(pl, channels, xn, wt, bias, rrow, act, vlo, vhi, yrow, oh, ow);
}

using DwlRow = void (*)(const Plan &, int64_t, const float *, const float *, const float *,
                        const float *, int, V, V, float *, int64_t);

// Positions a tile of dwl_tile_fixed at stride 1 and 2. One thread, 3x3 (5x5) kernels, the
// input as if just written: at stride 1, P = 10 against 6: 144 channels of 56x56 172 against
// 189 us, 240 of 28x28 (5x5) 115 against 137; at stride 2, P = 4 against 6: 96 of 112x112
// 182 against 193.
constexpr int DWL_P1 = 10, DWL_P2 = 4;

// Whether dwl_tile_fixed takes the plan: a square 3x3 or 5x5 kernel at stride 1 or 2 along
// both axes, no dilation.
inline bool dwl_fixed(const Plan &pl) {
    return pl.kh == pl.kw && (pl.kh == 3 || pl.kh == 5) && pl.sh == pl.sw &&
           (pl.sh == 1 || pl.sh == 2) && pl.dh == 1 && pl.dw == 1;
}

// The row kernel for this plan: the fixed tiles where dwl_fixed, the general ones otherwise.
inline DwlRow dwl_row_for(const Plan &pl) {
    if (!dwl_fixed(pl)) return dwl_row;
    if (pl.kh == 3) return pl.sh == 1 ? dwl_row_fixed<DWL_P1, 3, 1> : dwl_row_fixed<DWL_P2, 3, 2>;
    return pl.sh == 1 ? dwl_row_fixed<DWL_P1, 5, 1> : dwl_row_fixed<DWL_P2, 5, 2>;
}

inline void depthwise_last(const Plan &pl, int64_t batch, int64_t channels, const float *x,
                           const float *w, const float *bias, const float *res, int act,
                           float lo, float hi, float *y, bool threaded) {
    std::vector<float> wt(pl.taps * channels);
    for (int64_t c = 0; c < channels; ++c)
        for (int64_t t = 0; t < pl.taps; ++t) wt[t * channels + c] = w[c * pl.taps + t];
    const V vlo = vset(lo), vhi = vset(hi);
    const int64_t in_plane = pl.h * pl.w, out_plane = pl.ho * pl.wo;
    const DwlRow row_kernel = dwl_row_for(pl);
#pragma omp parallel for collapse(2) schedule(static) if (threaded)
    for (int64_t n = 0; n < batch; ++n)
        for (int64_t oh = 0; oh < pl.ho; ++oh) {
            const int64_t row = (n * out_plane + oh * pl.wo) * channels;
            row_kernel(pl, channels, x + n * in_plane * channels, wt.data(), bias,
                       res ? res + row : nullptr, act, vlo, vhi, y + row, oh);
        }
}

}  // namespace aotc_conv_direct

#endif
#endif
