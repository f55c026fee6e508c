// The shipped convolution kernel (conv.cpp with conv_direct.h) against naive loops, one case
// per path: the direct kernel (1-D and 2-D, strides, dilation, groups), depthwise with and
// without a channel multiplier, pointwise, small planes batched, 3-D, transposed, a
// prepacked weight, a weight stored as its Winograd transform, and the fused residual and
// clamp.
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "aotc_kernels.h"
#include "check.h"

namespace {

struct Case {
    const char *name;
    int64_t batch, cin, cout, groups, ndim;
    int64_t in[3], k[3], s[3], p[3], d[3];
    bool transposed = false, fused = false, packed = false, winograd = false;
};

aotc_conv_shape shape_of(const Case &c) {
    aotc_conv_shape sh{};
    sh.batch = c.batch;
    sh.in_channels = c.cin;
    sh.out_channels = c.cout;
    sh.groups = c.groups;
    sh.ndim = c.ndim;
    for (int a = 0; a < c.ndim; ++a) {
        sh.in_size[a] = c.in[a];
        sh.kernel[a] = c.k[a];
        sh.stride[a] = c.s[a];
        sh.padding[a] = c.p[a];
        sh.dilation[a] = c.d[a];
        const int64_t span = c.d[a] * (c.k[a] - 1);
        sh.out_size[a] = c.transposed ? (c.in[a] - 1) * c.s[a] - 2 * c.p[a] + span + 1
                                      : (c.in[a] + 2 * c.p[a] - span - 1) / c.s[a] + 1;
    }
    sh.transposed = c.transposed;
    sh.clamped = c.fused;
    sh.clamp_min = 0.0f;
    sh.clamp_max = 6.0f;
    sh.weight_packed = c.winograd ? 2 : c.packed ? 1 : 0;
    return sh;
}

int64_t prod(const int64_t *v, int64_t n) {
    int64_t p = 1;
    for (int64_t a = 0; a < n; ++a) p *= v[a];
    return p;
}

// Every (output, input, tap) triple of the convolution as 3-D with leading unit dims, in
// double: forward gathers, transposed scatters.
void reference(const aotc_conv_shape &sh, const float *x, const float *w, const float *bias,
               const float *res, std::vector<double> &y, std::vector<double> &tol) {
    const int64_t lead = 3 - sh.ndim;
    int64_t in[3], out[3], k[3], s[3], p[3], d[3];
    for (int a = 0; a < 3; ++a) {
        const bool unit = a < lead;
        in[a] = unit ? 1 : sh.in_size[a - lead];
        out[a] = unit ? 1 : sh.out_size[a - lead];
        k[a] = unit ? 1 : sh.kernel[a - lead];
        s[a] = unit ? 1 : sh.stride[a - lead];
        p[a] = unit ? 0 : sh.padding[a - lead];
        d[a] = unit ? 1 : sh.dilation[a - lead];
    }
    const int64_t cig = sh.in_channels / sh.groups, cog = sh.out_channels / sh.groups;
    const int64_t inp = in[0] * in[1] * in[2], outp = out[0] * out[1] * out[2];
    const int64_t taps = k[0] * k[1] * k[2];
    y.assign(size_t(sh.batch * sh.out_channels * outp), 0.0);
    std::vector<double> mag(y.size(), 0.0);
    for (int64_t n = 0; n < sh.batch; ++n)
        for (int64_t g = 0; g < sh.groups; ++g)
            for (int64_t co = 0; co < cog; ++co)
                for (int64_t ci = 0; ci < cig; ++ci)
                    for (int64_t t = 0; t < taps; ++t)
                        for (int64_t q = 0; q < (sh.transposed ? inp : outp); ++q) {
                            // q: an output position (forward) or an input one (transposed)
                            const int64_t sz[3] = {sh.transposed ? in[0] : out[0],
                                                   sh.transposed ? in[1] : out[1],
                                                   sh.transposed ? in[2] : out[2]};
                            const int64_t qi[3] = {q / (sz[1] * sz[2]), q / sz[2] % sz[1], q % sz[2]};
                            const int64_t ti[3] = {t / (k[1] * k[2]), t / k[2] % k[1], t % k[2]};
                            int64_t r[3];
                            bool inside = true;
                            for (int a = 0; a < 3; ++a) {
                                r[a] = qi[a] * s[a] - p[a] + ti[a] * d[a];
                                inside = inside && r[a] >= 0 && r[a] < (sh.transposed ? out[a] : in[a]);
                            }
                            if (!inside) continue;
                            const int64_t rq = (r[0] * (sh.transposed ? out[1] : in[1]) + r[1]) *
                                                   (sh.transposed ? out[2] : in[2]) + r[2];
                            const int64_t oc = g * cog + co, ic = g * cig + ci;
                            const double wv = sh.transposed ? w[(ic * cog + co) * taps + t]
                                                            : w[(oc * cig + ci) * taps + t];
                            const int64_t yi = (n * sh.out_channels + oc) * outp + (sh.transposed ? rq : q);
                            const double xv = x[(n * sh.in_channels + ic) * inp + (sh.transposed ? q : rq)];
                            y[size_t(yi)] += wv * xv;
                            mag[size_t(yi)] += std::fabs(wv * xv);
                        }
    tol.resize(y.size());
    for (size_t i = 0; i < y.size(); ++i) {
        const int64_t oc = int64_t(i) / outp % sh.out_channels;
        y[i] += bias[oc] + (res ? res[i] : 0.0);
        if (sh.clamped) y[i] = std::min<double>(std::max<double>(y[i], sh.clamp_min), sh.clamp_max);
        tol[i] = 1e-5 * (mag[i] + 2.0) + 1e-6;
    }
}

void run(const Case &c) {
    aotc_conv_shape sh = shape_of(c);
    const int64_t inp = prod(c.in, c.ndim), outp = prod(sh.out_size, c.ndim);
    const int64_t taps = prod(c.k, c.ndim);
    const auto x = check::values(size_t(c.batch * c.cin * inp), 20);
    const auto w = check::values(size_t(c.cout * (c.cin / c.groups) * taps), 21);
    auto bias = check::values(size_t(c.cout), 22);
    // residual values spread the results over the clamp's both ends
    std::vector<float> res = check::values(size_t(c.batch * c.cout * outp), 23);
    for (float &r : res) r *= 8.0f;
    sh.residual = c.fused ? res.data() : nullptr;
    std::vector<float> packed = w;  // the weight as the kernel reads it, 64-byte aligned
    float *wp = packed.data();
    if (c.packed) {  // the GEMM's packed B: (k, n) = w[n * K + k]
        const int64_t K = c.cin * taps;
        packed.assign(size_t(aotc_sgemm_packed_floats(K, c.cout) + 16), 0.0f);
        wp = packed.data() + (-reinterpret_cast<uintptr_t>(packed.data()) % 64) / 4;
        aotc_sgemm_pack_b(K, c.cout, w.data(), 1, K, wp);
    } else if (c.winograd) {  // 16 transformed matrices, each the GEMM's packed B
        const int64_t stride = (aotc_sgemm_packed_floats(c.cin, c.cout) + 15) / 16 * 16;
        packed.assign(size_t(16 * stride + 16), 0.0f);
        wp = packed.data() + (-reinterpret_cast<uintptr_t>(packed.data()) % 64) / 4;
        if (aotc_sconv_pack_winograd(c.cout, c.cin, w.data(), wp) != 0) {
            std::printf("FAIL conv %s: no memory to pack\n", c.name);
            std::exit(1);
        }
    }
    std::vector<float> ws(size_t(std::max<int64_t>(1, aotc_sconv_workspace(&sh))));
    std::vector<float> y(size_t(c.batch * c.cout * outp), std::numeric_limits<float>::quiet_NaN());
    aotc_sconv(&sh, x.data(), wp, bias.data(), y.data(), ws.data());
    std::vector<double> want, tol;
    reference(sh, x.data(), w.data(), bias.data(), sh.residual, want, tol);
    check::close(std::string("conv ") + c.name, y.data(), want.data(), tol.data(), y.size());
}

}  // namespace

int main() {
    const Case cases[] = {
        {"2d direct 3->8 20x20 k3 p1", 2, 3, 8, 1, 2, {20, 20}, {3, 3}, {1, 1}, {1, 1}, {1, 1}},
        {"2d direct 4->13 s2 d2 p2", 1, 4, 13, 1, 2, {37, 35}, {3, 3}, {2, 2}, {2, 2}, {2, 2}},
        {"2d direct groups 2", 1, 4, 6, 2, 2, {24, 24}, {3, 3}, {1, 1}, {1, 1}, {1, 1}},
        {"2d direct fused", 1, 5, 9, 1, 2, {18, 17}, {3, 2}, {1, 1}, {1, 0}, {1, 1}, false, true},
        {"depthwise 6ch 17x19", 2, 6, 6, 6, 2, {17, 19}, {3, 3}, {1, 1}, {1, 1}, {1, 1}},
        {"depthwise 6ch fused", 1, 6, 6, 6, 2, {9, 11}, {3, 3}, {2, 1}, {1, 1}, {1, 1}, false, true},
        {"depthwise x2 k5 s2", 1, 3, 6, 3, 2, {21, 20}, {5, 5}, {2, 2}, {2, 2}, {1, 1}},
        {"depthwise 3d", 1, 2, 2, 2, 3, {4, 5, 6}, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}},
        {"pointwise 16->12", 2, 16, 12, 1, 2, {9, 9}, {1, 1}, {1, 1}, {0, 0}, {1, 1}},
        {"pointwise fused", 1, 8, 4, 1, 2, {5, 7}, {1, 1}, {1, 1}, {0, 0}, {1, 1}, false, true},
        {"1d direct k4", 1, 5, 7, 1, 1, {300}, {4}, {1}, {0}, {1}},
        {"1d k3 s3", 2, 3, 4, 1, 1, {50}, {3}, {3}, {1}, {1}},
        {"3d k2x3x3 p1", 1, 2, 3, 1, 3, {5, 6, 7}, {2, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}},
        {"small planes batched", 3, 4, 5, 1, 2, {6, 6}, {3, 3}, {1, 1}, {0, 0}, {1, 1}},
        {"transposed s2 p1", 2, 4, 3, 1, 2, {7, 6}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, true},
        {"transposed groups 2", 1, 4, 6, 2, 2, {5, 5}, {4, 4}, {2, 2}, {1, 1}, {1, 1}, true},
        {"packed 6->10 k3 p1 fused", 2, 6, 10, 1, 2, {8, 8}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, false, true, true},
        {"packed pointwise", 2, 6, 10, 1, 2, {8, 8}, {1, 1}, {1, 1}, {0, 0}, {1, 1}, false, false, true},
        {"winograd 33->40 13x11 p1 fused", 2, 33, 40, 1, 2, {13, 11}, {3, 3}, {1, 1}, {1, 1}, {1, 1},
         false, true, false, true},
        {"winograd 32->36 17x18 p0", 1, 32, 36, 1, 2, {17, 18}, {3, 3}, {1, 1}, {0, 0}, {1, 1},
         false, false, false, true},
        {"winograd 32->32 6x21 p(2, 1)", 1, 32, 32, 1, 2, {6, 21}, {3, 3}, {1, 1}, {2, 1}, {1, 1},
         false, false, false, true},
    };
    for (int threads : {1, 4}) {
        omp_set_num_threads(threads);
        std::printf("threads %d\n", threads);
        for (const Case &c : cases) run(c);
    }
    return check::finish();
}
