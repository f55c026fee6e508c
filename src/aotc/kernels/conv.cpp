// Single-precision convolution over 1-3 spatial dims (see aotc_kernels.h for the contract).
//
// Four paths for an unpacked weight, picked by shape:
//   direct (AVX-512 and AVX2 builds; 1-D and 2-D, output planes of 256 positions or more):
//     the blocked direct kernel of conv_direct.h over a phased, zero-padded input copy;
//   depthwise (one input channel per group): on AVX-512 and AVX2 builds, 1-D and 2-D ones
//     take conv_depthwise.h: with one output channel per group, its channel-blocked kernel
//     (a vector of channels per output position, the planes transposed in and out, or
//     read and written in place where channels last; with both channels last, at a
//     stride above 1 or with a square 3x3 or 5x5 kernel at stride 1 or 2, its kernel
//     without copies);
//     otherwise its per-channel kernel (the same phased input, one channel at a time, 4
//     vectors of positions per tile); on other builds a direct loop per output plane,
//     each row accumulated tap by tap over unit-stride spans that the compiler vectorizes;
//   pointwise (1x1, stride 1, no padding): the GEMM reads x in place, batched over images,
//     the residual and activation applied in its stores (aotc_sgemm_act: in registers, before
//     the store; a pass after the GEMM, or a callback re-reading each finished tile, cost
//     3-15% more on MobileNet's 1x1 layers);
//   the rest: im2col of one (image, group) into the workspace, then the GEMM
//     (weights [Cog, Cig*K] times columns [Cig*K, out positions], the residual and
//     activation in its stores); for small output planes, the columns of all images side
//     by side and one GEMM (the residual and activation then in a pass after it).
// Transposed convolution is the GEMM of the transposed weight with x into columns,
// then col2im: each output channel gathers its columns (one thread per channel, so the
// sum order, and the result, do not depend on the thread count).
// A weight prepacked at compile time as the GEMM's B (groups 1; scheduler/prepack.py picks
// convolutions whose output planes are small, where the weights dominate the memory
// traffic): per image out^T[P, Cout] = columns^T[P, K] w^T[K, Cout], the columns read as a
// strided A (x itself for 1x1), the GEMM's epilogue storing each finished block transposed
// into y with the residual and clamp. A stem into channels-last activations (a channels-first
// x, y channels last, the weight one panel of the packed layout) takes conv_stem.h instead:
// the taps' inputs broadcast against the weight's rows, no columns.
// A 3x3 weight prepacked as its Winograd F(2x2, 3x3) transform (stride 1, dilation 1, one
// group, 2-D; scheduler/prepack.py picks them): conv_winograd.h, 16 matrix products per
// image in place of 9 taps per output.
// Every path handles 1-D and 2-D as 3-D with leading unit dims.

#include "aotc_kernels.h"
#include "conv_activation.h"
#include "conv_depthwise.h"
#include "conv_direct.h"
#include "conv_stem.h"
#include "conv_winograd.h"
#include "gemm_panels.h"

#include <algorithm>
#include <vector>

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#endif

#ifdef _OPENMP
#include <omp.h>
#endif

namespace {

// Below this many multiply-adds (or copied elements) a loop runs on one thread.
constexpr int64_t kParallelMin = 32768;

struct Geometry {
    int64_t batch, cin, cout, groups, cig, cog;
    bool packed;    // w is the GEMM's packed B [cig * taps, cout]
    bool winograd;  // w is the Winograd transform of a 3x3 weight (aotc_sconv_pack_winograd)
    int64_t in[3], out[3], k[3], s[3], p[3], d[3];
    int64_t in_plane, out_plane, taps;  // products of in, out, k
    int act;                // the fused activation (conv_activation.h)
    float lo, hi;           // its clamp
    const float *residual;  // added before the activation, or null
    bool x_last, y_last;    // x, or y and the residual, stored channels last (aotc_kernels.h)
};

Geometry geometry(const aotc_conv_shape &sh) {
    Geometry g{};
    g.batch = sh.batch;
    g.cin = sh.in_channels;
    g.cout = sh.out_channels;
    g.groups = sh.groups;
    g.act = static_cast<int>(sh.clamped);
    g.lo = sh.clamp_min;
    g.hi = sh.clamp_max;
    g.residual = sh.residual;
    g.packed = sh.weight_packed == 1 && !sh.transposed;
    g.winograd = sh.weight_packed == 2 && !sh.transposed;
    g.x_last = (sh.layout & AOTC_CONV_X_LAST) != 0;
    g.y_last = (sh.layout & AOTC_CONV_Y_LAST) != 0;
    g.cig = sh.in_channels / sh.groups;
    g.cog = sh.out_channels / sh.groups;
    const int64_t lead = 3 - sh.ndim;
    for (int a = 0; a < 3; ++a) {
        const bool unit = a < lead;
        const int64_t j = a - lead;
        g.in[a] = unit ? 1 : sh.in_size[j];
        g.out[a] = unit ? 1 : sh.out_size[j];
        g.k[a] = unit ? 1 : sh.kernel[j];
        g.s[a] = unit ? 1 : sh.stride[j];
        g.p[a] = unit ? 0 : sh.padding[j];
        g.d[a] = unit ? 1 : sh.dilation[j];
    }
    g.in_plane = g.in[0] * g.in[1] * g.in[2];
    g.out_plane = g.out[0] * g.out[1] * g.out[2];
    g.taps = g.k[0] * g.k[1] * g.k[2];
    return g;
}

inline int64_t ceil_div(int64_t a, int64_t b) { return a <= 0 ? -((-a) / b) : (a + b - 1) / b; }

// The positions j in [0, n) with 0 <= j*stride + off < limit: [lo, hi), possibly empty.
inline void span(int64_t n, int64_t stride, int64_t off, int64_t limit, int64_t &lo, int64_t &hi) {
    lo = std::min(n, std::max<int64_t>(0, ceil_div(-off, stride)));
    hi = std::max(lo, std::min(n, ceil_div(limit - off, stride)));
}

bool is_pointwise(const Geometry &g) {
    for (int a = 0; a < 3; ++a)
        if (g.k[a] != 1 || g.s[a] != 1 || g.p[a] != 0) return false;
    return true;
}

// dst[0, n) = src[0, n) and dst[0, n) = 0 for the short rows of im2col: the calls to
// memmove and memset that std::copy and std::fill become cost more than a 14-float row.
inline void copy_span(const float *src, float *dst, int64_t n) {
#ifdef AOTC_CONV_DIRECT
    aotc_conv_direct::copy_run(src, dst, n);
#else
    std::copy(src, src + n, dst);
#endif
}

inline void zero_span(float *dst, int64_t n) {
#ifdef AOTC_CONV_DIRECT
    aotc_conv_direct::zero_run(dst, n);
#else
    std::fill(dst, dst + n, 0.0f);
#endif
}

void im2col_planar(const Geometry &g, const float *x, float *col, int64_t ld);

// col[(ci*taps + t) * ld + o] = x[ci, o*s - p + t*d] (0 outside), for one image and
// group: x points at its first channel.
void im2col(const Geometry &g, const float *x, float *col, int64_t ld) {
    if (g.in[0] == 1 && g.k[0] == 1 && g.out[0] == 1) return im2col_planar(g, x, col, ld);
    const int64_t rows = g.cig * g.taps;
#pragma omp parallel for if (rows * g.out_plane >= kParallelMin)
    for (int64_t r = 0; r < rows; ++r) {
        const int64_t ci = r / g.taps, t = r % g.taps;
        const int64_t kd = t / (g.k[1] * g.k[2]), kh = t / g.k[2] % g.k[1], kw = t % g.k[2];
        const float *xc = x + ci * g.in_plane;
        float *dst = col + r * ld;
        int64_t lo, hi;
        const int64_t off = kw * g.d[2] - g.p[2];
        span(g.out[2], g.s[2], off, g.in[2], lo, hi);
        for (int64_t od = 0; od < g.out[0]; ++od) {
            const int64_t id = od * g.s[0] - g.p[0] + kd * g.d[0];
            for (int64_t oh = 0; oh < g.out[1]; ++oh) {
                const int64_t ih = oh * g.s[1] - g.p[1] + kh * g.d[1];
                float *row = dst + (od * g.out[1] + oh) * g.out[2];
                if (id < 0 || id >= g.in[0] || ih < 0 || ih >= g.in[1]) {
                    zero_span(row, g.out[2]);
                    continue;
                }
                const float *src = xc + (id * g.in[1] + ih) * g.in[2] + off;
                zero_span(row, lo);
                if (g.s[2] == 1) {
                    copy_span(src + lo, row + lo, hi - lo);
                } else if (g.s[2] == 2) {  // a constant stride: the gather vectorizes
                    for (int64_t ow = lo; ow < hi; ++ow) row[ow] = src[2 * ow];
                } else {
                    for (int64_t ow = lo; ow < hi; ++ow) row[ow] = src[ow * g.s[2]];
                }
                zero_span(row + hi, g.out[2] - hi);
            }
        }
    }
}

// im2col of a 1-D or 2-D convolution: each input channel is first copied into a zero-padded
// plane (rows w + 2p apart, in cache), from which every tap's row of col is read without
// bounds checks: ho runs of wo floats (unit stride along a row, or s apart). On the 14 x 14
// and 7 x 7 planes of a ResNet's last stages the per-row bounds of the general loop cost
// more than the copy.
void im2col_planar(const Geometry &g, const float *x, float *col, int64_t ld) {
    const int64_t h = g.in[1], w = g.in[2], ho = g.out[1], wo = g.out[2];
    const int64_t ph = g.p[1], pw = g.p[2], sh = g.s[1], sw = g.s[2], dh = g.d[1], dw = g.d[2];
    const int64_t kh = g.k[1], kw = g.k[2];
    // the rows and columns of the padded plane that some tap reads
    const int64_t hp = std::max(h + 2 * ph, (ho - 1) * sh + (kh - 1) * dh + 1);
    const int64_t wp = std::max(w + 2 * pw, (wo - 1) * sw + (kw - 1) * dw + 1);
#pragma omp parallel if (g.cig * g.taps * g.out_plane >= kParallelMin)
    {
        std::vector<float> padded(hp * wp, 0.0f);  // the padding stays zero
#pragma omp for schedule(static)
        for (int64_t ci = 0; ci < g.cig; ++ci) {
            const float *xc = x + ci * g.in_plane;
            for (int64_t r = 0; r < h; ++r) copy_span(xc + r * w, padded.data() + (r + ph) * wp + pw, w);
            for (int64_t a = 0; a < kh; ++a)
                for (int64_t b = 0; b < kw; ++b) {
                    float *dst = col + (ci * g.taps + a * kw + b) * ld;
                    const float *src = padded.data() + a * dh * wp + b * dw;
                    for (int64_t oh = 0; oh < ho; ++oh) {
                        const float *sr = src + oh * sh * wp;
                        float *dr = dst + oh * wo;
                        if (sw == 1) {
                            copy_span(sr, dr, wo);
                        } else if (sw == 2) {  // a constant stride: the gather vectorizes
                            for (int64_t ow = 0; ow < wo; ++ow) dr[ow] = sr[2 * ow];
                        } else {
                            for (int64_t ow = 0; ow < wo; ++ow) dr[ow] = sr[ow * sw];
                        }
                    }
                }
        }
    }
}

// Sixteen floats in registers: one AVX-512 vector, two AVX2 ones, or a plain array (the
// compile target decides; the AVX2 build of the package must not touch AVX-512).
struct Acc16 {
#if defined(__AVX512F__)
    __m512 v;
    explicit Acc16(float b) : v(_mm512_set1_ps(b)) {}
    void fma(float w, const float *src) { v = _mm512_fmadd_ps(_mm512_set1_ps(w), _mm512_loadu_ps(src), v); }
    void store(float *dst, int64_t n) const {
        _mm512_mask_storeu_ps(dst, static_cast<__mmask16>((1u << n) - 1u), v);
    }
#elif defined(__AVX2__) && defined(__FMA__)
    __m256 lo, hi;
    explicit Acc16(float b) : lo(_mm256_set1_ps(b)), hi(_mm256_set1_ps(b)) {}
    void fma(float w, const float *src) {
        const __m256 wv = _mm256_set1_ps(w);
        lo = _mm256_fmadd_ps(wv, _mm256_loadu_ps(src), lo);
        hi = _mm256_fmadd_ps(wv, _mm256_loadu_ps(src + 8), hi);
    }
    void store(float *dst, int64_t n) const {
        alignas(32) float t[16];
        _mm256_store_ps(t, lo);
        _mm256_store_ps(t + 8, hi);
        std::copy(t, t + n, dst);
    }
#else
    float v[16];
    explicit Acc16(float b) { std::fill(v, v + 16, b); }
    void fma(float w, const float *src) {
        for (int j = 0; j < 16; ++j) v[j] += w * src[j];
    }
    void store(float *dst, int64_t n) const { std::copy(v, v + n, dst); }
#endif
};

// One input channel per group: a direct loop per output plane. The plane is first copied
// into a zero-padded local volume whose rows are split into their `stride` phases
// (elements q, q + s, q + 2s, ...), so that every tap of every output row reads one
// unit-stride span without bounds checks; 16 outputs at a time accumulate in registers
// over all taps. Rows carry 16 spare zeros, so the last block of a row may read past it;
// those lanes are not stored.
// Returns whether the fused activation is already applied (the vector kernel of
// conv_depthwise.h takes 1-D and 2-D ones on AVX-512 and AVX2 builds).
bool depthwise(const Geometry &g, const float *x, const float *w, const float *bias, float *y) {
#ifdef AOTC_CONV_DIRECT
    if (g.in[0] == 1 && g.k[0] == 1 && g.out[0] == 1) {
        const aotc_conv_direct::Plan pl =
            aotc_conv_direct::plan(1, 1, g.in + 1, g.out + 1, g.k + 1, g.s + 1, g.p + 1, g.d + 1);
        const bool threaded = g.batch * g.cout * g.out_plane * g.taps >= kParallelMin;
        if (g.cog == 1 && g.x_last && g.y_last &&
            ((pl.sh > 1 && pl.sw > 1) || aotc_conv_direct::dwl_fixed(pl))) {
            aotc_conv_direct::depthwise_last(pl, g.batch, g.cin, x, w, bias, g.residual, g.act,
                                             g.lo, g.hi, y, threaded);
            return true;
        }
        if (g.cog == 1) {
            aotc_conv_direct::depthwise_blocked(pl, g.batch, g.cin, x, w, bias, g.residual,
                                                g.act, g.lo, g.hi, y, threaded, g.x_last,
                                                g.y_last);
            return true;
        }
        aotc_conv_direct::depthwise(pl, g.batch, g.cin, g.cog, x, w, bias, g.residual, g.act,
                                    g.lo, g.hi,
                                    y, threaded);
        return true;
    }
#endif
    const int64_t work = g.batch * g.cout * g.out_plane * g.taps;
    const int64_t st = g.s[2];
    const int64_t pd = g.in[0] + 2 * g.p[0], ph = g.in[1] + 2 * g.p[1];
    const int64_t row_len = ceil_div(g.in[2] + 2 * g.p[2], st) + 16;  // one phase of a row
    const int64_t phase_size = pd * ph * row_len;
#pragma omp parallel if (work >= kParallelMin)
    {
        std::vector<float> padded(st * phase_size);
        std::vector<int64_t> tap_offset(g.taps);  // from an output's first input element
        for (int64_t t = 0; t < g.taps; ++t) {
            const int64_t kd = t / (g.k[1] * g.k[2]), kh = t / g.k[2] % g.k[1], kw = t % g.k[2];
            const int64_t c = kw * g.d[2];
            tap_offset[t] = c % st * phase_size + (kd * g.d[0] * ph + kh * g.d[1]) * row_len + c / st;
        }
#pragma omp for collapse(2)
        for (int64_t n = 0; n < g.batch; ++n)
            for (int64_t oc = 0; oc < g.cout; ++oc) {
                const float *xc = x + (n * g.cin + oc / g.cog) * g.in_plane;
                std::fill(padded.begin(), padded.end(), 0.0f);
                for (int64_t id = 0; id < g.in[0]; ++id)
                    for (int64_t ih = 0; ih < g.in[1]; ++ih) {
                        const float *src = xc + (id * g.in[1] + ih) * g.in[2];
                        float *dst = padded.data() + ((id + g.p[0]) * ph + ih + g.p[1]) * row_len;
                        if (st == 1) {
                            std::copy(src, src + g.in[2], dst + g.p[2]);
                            continue;
                        }
                        for (int64_t q = 0; q < st; ++q) {  // padded column c = q + j*st
                            int64_t j0, j1;  // the j whose column holds an input element
                            span(row_len, st, q - g.p[2], g.in[2], j0, j1);
                            float *dq = dst + q * phase_size;
                            const int64_t o = q - g.p[2];
                            if (st == 2) {  // a constant stride: the copy vectorizes
                                for (int64_t j = j0; j < j1; ++j) dq[j] = src[o + 2 * j];
                            } else {
                                for (int64_t j = j0; j < j1; ++j) dq[j] = src[o + j * st];
                            }
                        }
                    }
                const float *wc = w + oc * g.taps;
                float *yc = y + (n * g.cout + oc) * g.out_plane;
                const float b = bias ? bias[oc] : 0.0f;
                for (int64_t od = 0; od < g.out[0]; ++od)
                    for (int64_t oh = 0; oh < g.out[1]; ++oh) {
                        float *row = yc + (od * g.out[1] + oh) * g.out[2];
                        const float *base =
                            padded.data() + (od * g.s[0] * ph + oh * g.s[1]) * row_len;
                        for (int64_t ow0 = 0; ow0 < g.out[2]; ow0 += 16) {
                            Acc16 acc(b);
                            for (int64_t t = 0; t < g.taps; ++t)
                                acc.fma(wc[t], base + tap_offset[t] + ow0);
                            acc.store(row + ow0, std::min<int64_t>(16, g.out[2] - ow0));
                        }
                    }
            }
    }
    return false;
}

// Output planes smaller than this take all images in one GEMM (columns side by side), so
// that the weights are packed once rather than once per image (a 7x7 plane is 49 columns).
constexpr int64_t kSmallPlane = 256;

#ifdef AOTC_CONV_DIRECT
// The blocked direct kernel (conv_direct.h) for 1-D and 2-D convolutions with output
// planes of at least kSmallPlane positions (on smaller ones the GEMM, which packs the
// weights once for a whole row of output channels, is faster) whose phased input fits the
// workspace sized for im2col; false when it does not apply.
bool direct_plan(const Geometry &g, int64_t workspace, aotc_conv_direct::Plan &pl) {
    if (g.in[0] != 1 || g.k[0] != 1 || g.out[0] != 1 || g.cig == 1 || is_pointwise(g) ||
        g.out_plane < kSmallPlane)
        return false;
    pl = aotc_conv_direct::plan(g.cig, g.cog, g.in + 1, g.out + 1, g.k + 1, g.s + 1, g.p + 1,
                                g.d + 1);
    return aotc_conv_direct::buffer_size(pl) <= workspace;
}
#endif

int64_t workspace_size(const Geometry &g);

// Returns whether the fused activation is already applied.
bool forward(const Geometry &g, const float *x, const float *w, const float *bias, float *y,
             float *ws) {
    const int64_t kdim = g.cig * g.taps;
#ifdef AOTC_CONV_DIRECT
    aotc_conv_direct::Plan pl;
    if (direct_plan(g, workspace_size(g), pl)) {
        const bool threaded = g.cout * g.out_plane * kdim >= kParallelMin;
        for (int64_t n = 0; n < g.batch; ++n)
            for (int64_t gr = 0; gr < g.groups; ++gr) {
                aotc_conv_direct::fill(pl, x + (n * g.cin + gr * g.cig) * g.in_plane, ws,
                                       threaded);
                const int64_t at = (n * g.cout + gr * g.cog) * g.out_plane;
                aotc_conv_direct::run(pl, ws, w + gr * g.cog * kdim,
                                      bias ? bias + gr * g.cog : nullptr,
                                      g.residual ? g.residual + at : nullptr, g.act, g.lo,
                                      g.hi, y + at, threaded);
            }
        return true;
    }
#endif
    // the residual and activation in the GEMM's stores (the residual laid out as y)
    const auto act = [&](int64_t at) {
        return aotc_gemm_activation{static_cast<int32_t>(g.act), g.lo, g.hi,
                                    g.residual ? g.residual + at : nullptr};
    };
    if (is_pointwise(g)) {  // y_n[Cog, P] = w[Cog, Cig] x_n[Cig, P] for every image at once
        for (int64_t gr = 0; gr < g.groups; ++gr) {
            const aotc_gemm_activation a = act(gr * g.cog * g.out_plane);
            aotc_sgemm_act(g.batch, g.cog, g.out_plane, kdim,
                           w + gr * g.cog * kdim, 0, kdim, 1,
                           x + gr * g.cig * g.in_plane, g.cin * g.in_plane, g.in_plane, 1,
                           y + gr * g.cog * g.out_plane, g.cout * g.out_plane, g.out_plane,
                           bias ? bias + gr * g.cog : nullptr, 0, 1, 0, 1.0f, 1.0f, &a);
        }
        return true;
    }
    if (g.out_plane < kSmallPlane && g.batch > 1) {
        // col[Cig*taps, N*P] for every image, one GEMM into res[Cog, N*P], then each image's
        // rows to its place in y
        const int64_t cols = g.batch * g.out_plane;
        float *res = ws + kdim * cols;
        for (int64_t gr = 0; gr < g.groups; ++gr) {
            for (int64_t n = 0; n < g.batch; ++n)
                im2col(g, x + (n * g.cin + gr * g.cig) * g.in_plane, ws + n * g.out_plane, cols);
            aotc_sgemm(g.cog, cols, kdim, w + gr * g.cog * kdim, kdim, 1, ws, cols, 1, res, cols,
                       bias ? bias + gr * g.cog : nullptr, 1, 0, 1.0f, 1.0f);
#pragma omp parallel for collapse(2) if (g.cog * cols >= kParallelMin)
            for (int64_t n = 0; n < g.batch; ++n)
                for (int64_t co = 0; co < g.cog; ++co)
                    std::copy(res + co * cols + n * g.out_plane,
                              res + co * cols + (n + 1) * g.out_plane,
                              y + (n * g.cout + gr * g.cog + co) * g.out_plane);
        }
        return false;
    }
    for (int64_t n = 0; n < g.batch; ++n)
        for (int64_t gr = 0; gr < g.groups; ++gr) {
            im2col(g, x + (n * g.cin + gr * g.cig) * g.in_plane, ws, g.out_plane);
            const int64_t at = (n * g.cout + gr * g.cog) * g.out_plane;
            const aotc_gemm_activation a = act(at);
            aotc_sgemm_act(1, g.cog, g.out_plane, kdim, w + gr * g.cog * kdim, 0, kdim, 1,
                           ws, 0, g.out_plane, 1, y + at, 0, g.out_plane,
                           bias ? bias + gr * g.cog : nullptr, 0, 1, 0, 1.0f, 1.0f, &a);
        }
    return true;
}

// The transposing store of a finished block of out^T (rows: image * P + position;
// columns: output channels) into y, with the residual and the clamp.
struct PackedStore {
    const Geometry *g;
    float *y;
};

void store_transposed(const void *ctx, float *c, int64_t ldc, int64_t row, int64_t col,
                      int64_t rows, int64_t cols) {
    const PackedStore &st = *static_cast<const PackedStore *>(ctx);
    const Geometry &g = *st.g;
    // locals: stores through y could otherwise alias them, which keeps the loops scalar
    const int act = g.act;
    const float lo = g.lo, hi = g.hi;
    const int64_t plane = g.out_plane, cout = g.cout;
    const float *residual = g.residual;
#ifdef AOTC_CONV_DIRECT
    // L positions x L channels at a time: the block's rows loaded, transposed in registers,
    // each channel's run of positions stored as one vector (the scalar loop below reads c
    // down its columns, ldc apart, which cost as much as the GEMM on thin K)
    using namespace aotc_conv_direct;
    const V vlo = vset(lo), vhi = vset(hi);
    for (int64_t i0 = 0; i0 < rows;) {  // runs of rows inside one image
        const int64_t n = (row + i0) / plane, o = (row + i0) % plane;
        const int64_t run = std::min(rows - i0, plane - o);
        for (int64_t p = 0; p < run; p += L) {
            const int64_t np = std::min<int64_t>(L, run - p);
            for (int64_t j0 = 0; j0 < cols; j0 += L) {
                const int64_t nj = std::min<int64_t>(L, cols - j0);
                V r[L];
                for (int i = 0; i < L; ++i) {
                    const float *src = c + (i0 + p + i) * ldc + j0;
                    r[i] = i >= np ? vzero() : nj == L ? vload(src) : vload_n(src, nj);
                }
                transpose(r);
                for (int64_t j = 0; j < nj; ++j) {
                    const int64_t at = (n * cout + col + j0 + j) * plane + o + p;
                    V v = r[j];
                    if (residual)
                        v = vadd(v, np == L ? vload(residual + at) : vload_n(residual + at, np));
                    v = activate(v, act, vlo, vhi);
                    if (np == L)
                        vstore(st.y + at, v);
                    else
                        vstore_n(st.y + at, v, np);
                }
            }
        }
        i0 += run;
    }
#else
    for (int64_t i0 = 0; i0 < rows;) {  // runs of rows inside one image
        const int64_t n = (row + i0) / plane, o = (row + i0) % plane;
        const int64_t run = std::min(rows - i0, plane - o);
        for (int64_t j = 0; j < cols; ++j) {
            const int64_t at = (n * cout + col + j) * plane + o;
            const float *src = c + i0 * ldc + j;
            float *__restrict dst = st.y + at;
            if (residual) {
                const float *res = residual + at;
                for (int64_t i = 0; i < run; ++i)
                    dst[i] = aotc_conv_act::activate(src[i * ldc] + res[i], act, lo, hi);
            } else {
                for (int64_t i = 0; i < run; ++i)
                    dst[i] = aotc_conv_act::activate(src[i * ldc], act, lo, hi);
            }
        }
        i0 += run;
    }
#endif
}

// Whether conv_stem.h computes the convolution: a channels-first x into a channels-last y,
// 2-D, one group, the packed weight one panel and one slice.
bool stem_into_last(const Geometry &g) {
#ifdef AOTC_CONV_DIRECT
    return g.y_last && !g.x_last && !is_pointwise(g) && g.groups == 1 && g.in[0] == 1 &&
           g.k[0] == 1 && g.out[0] == 1 && aotc_conv_stem::fits(g.cout, aotc_gemm::NR) &&
           g.cig * g.taps <= aotc_gemm::KC;
#else
    (void)g;
    return false;
#endif
}

void packed_forward(const Geometry &g, const float *x, const float *w, const float *bias,
                    float *y, float *ws) {
    const int64_t kdim = g.cig * g.taps, plane = g.out_plane;
#ifdef AOTC_CONV_DIRECT
    if (stem_into_last(g)) {
        const aotc_conv_direct::Plan pl =
            aotc_conv_direct::plan(g.cin, g.cout, g.in + 1, g.out + 1, g.k + 1, g.s + 1, g.p + 1,
                                   g.d + 1);
        aotc_conv_stem::run(pl, g.batch, aotc_gemm::NR, x, w, bias, g.residual, g.act, g.lo,
                            g.hi, y, g.batch * g.cout * plane * kdim >= kParallelMin);
        return;
    }
#endif
    const float *a = x;
    int64_t sa_batch = g.cin * g.in_plane;
    // A's rows are positions: a channels-last x is read row-major in place
    const int64_t sa_m = g.x_last ? g.cin : 1, sa_k = g.x_last ? 1 : plane;
    float *out_t = ws;
    if (!is_pointwise(g)) {  // (x channels first: aotc_kernels.h)
        for (int64_t n = 0; n < g.batch; ++n)
            im2col(g, x + n * g.cin * g.in_plane, ws + n * kdim * plane, plane);
        a = ws;
        sa_batch = kdim * plane;
        out_t = ws + g.batch * kdim * plane;
    }
    if (g.y_last) {  // out^T is y itself: stored with the residual and activation
        const aotc_gemm_activation act{static_cast<int32_t>(g.act), g.lo, g.hi, g.residual};
        aotc_sgemm_prepacked_act(g.batch, plane, g.cout, kdim, a, sa_batch, sa_m, sa_k, w, y,
                                 plane * g.cout, g.cout, bias, 0, 0, 1, 1.0f, 1.0f, &act);
        return;
    }
    const PackedStore st{&g, y};
    const aotc_gemm_epilogue epilogue{store_transposed, &st};
    aotc_sgemm_prepacked(g.batch, plane, g.cout, kdim, a, sa_batch, sa_m, sa_k, w, out_t,
                         plane * g.cout, g.cout, bias, 0, 0, 1, 1.0f, 1.0f, &epilogue);
}

// y[co, i*s - p + t*d] += col[(co*taps + t) * in_plane + i] for one image and group,
// after y = bias: one thread per output channel.
void col2im(const Geometry &g, const float *col, const float *bias, float *y) {
    const int64_t work = g.cog * g.taps * g.in_plane;
#pragma omp parallel for if (work >= kParallelMin)
    for (int64_t co = 0; co < g.cog; ++co) {
        float *yc = y + co * g.out_plane;
        std::fill(yc, yc + g.out_plane, bias ? bias[co] : 0.0f);
        for (int64_t t = 0; t < g.taps; ++t) {
            const int64_t kd = t / (g.k[1] * g.k[2]), kh = t / g.k[2] % g.k[1], kw = t % g.k[2];
            const float *src = col + (co * g.taps + t) * g.in_plane;
            const int64_t off = kw * g.d[2] - g.p[2];
            int64_t lo, hi;  // input columns whose output column lies inside y
            span(g.in[2], g.s[2], off, g.out[2], lo, hi);
            for (int64_t id = 0; id < g.in[0]; ++id) {
                const int64_t od = id * g.s[0] - g.p[0] + kd * g.d[0];
                if (od < 0 || od >= g.out[0]) continue;
                for (int64_t ih = 0; ih < g.in[1]; ++ih) {
                    const int64_t oh = ih * g.s[1] - g.p[1] + kh * g.d[1];
                    if (oh < 0 || oh >= g.out[1]) continue;
                    const float *s_row = src + (id * g.in[1] + ih) * g.in[2];
                    float *d_row = yc + (od * g.out[1] + oh) * g.out[2] + off;
                    for (int64_t iw = lo; iw < hi; ++iw) d_row[iw * g.s[2]] += s_row[iw];
                }
            }
        }
    }
}

void transposed(const Geometry &g, const float *x, const float *w, const float *bias, float *y,
                float *ws) {
    const int64_t rows = g.cog * g.taps;
    for (int64_t n = 0; n < g.batch; ++n)
        for (int64_t gr = 0; gr < g.groups; ++gr) {
            // col[Cog*taps, P_in] = w_g^T x_g, w_g = w[g*Cig : (g+1)*Cig] viewed as [Cig, Cog*taps]
            aotc_sgemm(rows, g.in_plane, g.cig, w + gr * g.cig * rows, 1, rows,
                       x + (n * g.cin + gr * g.cig) * g.in_plane, g.in_plane, 1,
                       ws, g.in_plane, nullptr, 0, 0, 1.0f, 0.0f);
            col2im(g, ws, bias ? bias + gr * g.cog : nullptr,
                   y + (n * g.cout + gr * g.cog) * g.out_plane);
        }
}

// Winograd F(2x2, 3x3) over the transformed weight u (conv_winograd.h), image by image.
aotc_winograd::Shape winograd_shape(const Geometry &g) {
    return aotc_winograd::shape(g.cin, g.cout, g.in[1], g.in[2], g.out[1], g.out[2], g.p[1],
                                g.p[2]);
}

void winograd(const Geometry &g, const float *x, const float *u, const float *bias, float *y,
              float *ws) {
    const aotc_winograd::Shape s = winograd_shape(g);
    const bool threaded = g.cout * g.out_plane * g.cin >= kParallelMin;
    for (int64_t n = 0; n < g.batch; ++n) {
        const int64_t at = n * g.cout * g.out_plane;
        aotc_winograd::image(s, x + n * g.cin * g.in_plane, u, bias,
                             g.residual ? g.residual + at : nullptr, g.act, g.lo, g.hi,
                             y + at, ws, threaded);
    }
}

}  // namespace

namespace {
int64_t workspace_size(const Geometry &g) {
    if (g.winograd) return aotc_winograd::workspace_floats(winograd_shape(g));
    if (g.packed)
        return stem_into_last(g) ? 0
            : g.batch * ((is_pointwise(g) ? 0 : g.cig * g.taps) + (g.y_last ? 0 : g.cout)) *
                  g.out_plane;
    if (g.cig == 1 || is_pointwise(g)) return 0;
    if (g.out_plane < kSmallPlane && g.batch > 1)  // every image's columns, and the result
        return (g.cig * g.taps + g.cog) * g.batch * g.out_plane;
    return g.cig * g.taps * g.out_plane;
}
}  // namespace

extern "C" int64_t aotc_sconv_workspace(const aotc_conv_shape *shape) {
    const Geometry g = geometry(*shape);
    if (shape->transposed) return g.cog * g.taps * g.in_plane;
    return workspace_size(g);
}

extern "C" void aotc_sconv(const aotc_conv_shape *shape, const float *x, const float *w,
                           const float *bias, float *y, float *workspace) {
    const Geometry g = geometry(*shape);
    if (g.batch <= 0 || g.cout <= 0 || g.out_plane <= 0) return;
    bool done = false;
    if (shape->transposed) {
        transposed(g, x, w, bias, y, workspace);
    } else if (g.winograd) {
        winograd(g, x, w, bias, y, workspace);
        done = true;
    } else if (g.packed) {
        packed_forward(g, x, w, bias, y, workspace);
        done = true;
    } else if (g.cig == 1) {
        done = depthwise(g, x, w, bias, y);
    } else {
        done = forward(g, x, w, bias, y, workspace);
    }
    if ((g.act || g.residual) && !done) {  // the fused epilogue, as one pass over y
        const int64_t total = g.batch * g.cout * g.out_plane;
        const int act = g.act;
        const float lo = g.lo, hi = g.hi;
        const float *res = g.residual;
#pragma omp parallel for if (total >= kParallelMin)
        for (int64_t i = 0; i < total; ++i)
            y[i] = aotc_conv_act::activate(res ? y[i] + res[i] : y[i], act, lo, hi);
    }
}

extern "C" int aotc_sconv_pack_winograd(int64_t out_channels, int64_t in_channels,
                                        const float *w, float *packed) {
    return aotc_winograd::pack(out_channels, in_channels, w, packed,
                               out_channels * in_channels >= kParallelMin) ? 0 : 1;
}
