// The shipped attention kernel (attention.cpp) against a naive softmax: tails of every
// dim, causal, grouped-query heads, additive and boolean masks (rows that see no key),
// strided queries, several query and key blocks, and probabilities rounded to half types.
#include <omp.h>

#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "aotc_kernels.h"
#include "check.h"

namespace {

struct Case {
    const char *name;
    int64_t batch, heads, group, q_len, kv_len, head_dim, v_dim;
    int64_t mask_kind = AOTC_ATTENTION_MASK_NONE, causal = 0, empty_rows_nan = 0;
    int64_t probs = AOTC_ATTENTION_PROBS_F32;
    bool q_seq_major = false;  // q stored [batch, q_len, heads, head_dim]
};

void contiguous(int64_t *st, int64_t h, int64_t l, int64_t d) {
    st[0] = h * l * d, st[1] = l * d, st[2] = d, st[3] = 1;
}

double round_half(double p, int64_t probs) {
    float f = float(p);
    if (probs == AOTC_ATTENTION_PROBS_F16) return double(static_cast<__fp16>(f));
    uint32_t u;
    std::memcpy(&u, &f, 4);
    u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
    std::memcpy(&f, &u, 4);
    return f;
}

void run(const Case &c) {
    aotc_attention_shape sh{};
    sh.batch = c.batch, sh.heads = c.heads, sh.group = c.group, sh.q_len = c.q_len;
    sh.kv_len = c.kv_len, sh.head_dim = c.head_dim, sh.v_dim = c.v_dim;
    const int64_t hk = c.heads / c.group;
    if (c.q_seq_major) {
        const int64_t d = c.head_dim;
        sh.q_strides[0] = c.q_len * c.heads * d, sh.q_strides[1] = d;
        sh.q_strides[2] = c.heads * d, sh.q_strides[3] = 1;
    } else {
        contiguous(sh.q_strides, c.heads, c.q_len, c.head_dim);
    }
    contiguous(sh.k_strides, hk, c.kv_len, c.head_dim);
    contiguous(sh.v_strides, hk, c.kv_len, c.v_dim);
    // masks [batch, 1, q_len, kv_len], broadcast over the heads
    sh.mask_strides[0] = c.q_len * c.kv_len, sh.mask_strides[1] = 0;
    sh.mask_strides[2] = c.kv_len, sh.mask_strides[3] = 1;
    sh.mask_kind = c.mask_kind, sh.causal = c.causal, sh.empty_rows_nan = c.empty_rows_nan;
    sh.probs = c.probs, sh.fill_when = 0, sh.fill = -std::numeric_limits<float>::infinity();
    sh.scale = 1.0f / std::sqrt(float(c.head_dim));

    const auto q = check::values(size_t(c.batch * c.heads * c.q_len * c.head_dim), 30);
    auto k = check::values(size_t(c.batch * hk * c.kv_len * c.head_dim), 31);
    for (float &x : k) x *= 3.0f;  // scores of a few units: softmaxes far from uniform
    const auto v = check::values(size_t(c.batch * hk * c.kv_len * c.v_dim), 32);
    const auto add = check::values(size_t(c.batch * c.q_len * c.kv_len), 33);
    // keep 2 keys in 3, and hide every key from query rows 3 and 4
    std::vector<uint8_t> keep(add.size());
    for (size_t i = 0; i < keep.size(); ++i) {
        const int64_t row = int64_t(i) / c.kv_len % c.q_len;
        keep[i] = i % 3 != 1 && row != 3 && row != 4;
    }
    const void *mask = c.mask_kind == AOTC_ATTENTION_MASK_ADD ? static_cast<const void *>(add.data())
                       : c.mask_kind == AOTC_ATTENTION_MASK_BOOL ? keep.data() : nullptr;
    std::vector<float> out(size_t(c.batch * c.heads * c.q_len * c.v_dim));
    const int rc = aotc_attention_f32(&sh, q.data(), k.data(), v.data(), mask, out.data());

    std::vector<double> want(out.size()), tol(out.size());
    std::vector<double> s(size_t(c.kv_len));
    for (int64_t b = 0; b < c.batch; ++b)
        for (int64_t h = 0; h < c.heads; ++h)
            for (int64_t i = 0; i < c.q_len; ++i) {
                const float *qi = q.data() + b * sh.q_strides[0] + h * sh.q_strides[1] + i * sh.q_strides[2];
                const int64_t kh = b * hk + h / c.group;
                double m = -INFINITY;
                for (int64_t j = 0; j < c.kv_len; ++j) {
                    const float *kj = k.data() + (kh * c.kv_len + j) * c.head_dim;
                    double dot = 0;
                    for (int64_t t = 0; t < c.head_dim; ++t) dot += double(qi[t]) * kj[t];
                    s[j] = double(sh.scale) * dot;
                    const size_t at = size_t((b * c.q_len + i) * c.kv_len + j);
                    if (c.mask_kind == AOTC_ATTENTION_MASK_ADD) s[j] += add[at];
                    if (c.mask_kind == AOTC_ATTENTION_MASK_BOOL && !keep[at]) s[j] = -INFINITY;
                    if (c.causal && j > i) s[j] = -INFINITY;
                    m = std::max(m, s[j]);
                }
                double *dst = want.data() + ((b * c.heads + h) * c.q_len + i) * c.v_dim;
                double *tl = tol.data() + ((b * c.heads + h) * c.q_len + i) * c.v_dim;
                if (m == -INFINITY) {
                    for (int64_t e = 0; e < c.v_dim; ++e)
                        dst[e] = c.empty_rows_nan ? NAN : 0.0, tl[e] = 0.0;
                    continue;
                }
                double l = 0;
                for (int64_t j = 0; j < c.kv_len; ++j) l += s[j] = std::exp(s[j] - m);
                for (int64_t e = 0; e < c.v_dim; ++e) {
                    double acc = 0;
                    for (int64_t j = 0; j < c.kv_len; ++j) {
                        const double p = c.probs == AOTC_ATTENTION_PROBS_F32 ? s[j] : round_half(s[j], c.probs);
                        acc += p * v[size_t((kh * c.kv_len + j) * c.v_dim + e)];
                    }
                    dst[e] = acc / l;
                    // a probability rounded to half moves by 2^-11 (f16) or 2^-8 (bf16)
                    tl[e] = c.probs == AOTC_ATTENTION_PROBS_F32 ? 2e-5
                            : c.probs == AOTC_ATTENTION_PROBS_F16 ? 1e-3 : 5e-3;
                }
            }
    check::expect(rc == 0, std::string("attention ") + c.name + " returns 0");
    check::close(std::string("attention ") + c.name, out.data(), want.data(), tol.data(), out.size());
}

}  // namespace

int main() {
    Case cases[] = {
        {"tails 37x45 d19 dv13", 2, 3, 1, 37, 45, 19, 13},
        {"causal 70x70 (two query blocks)", 1, 2, 1, 70, 70, 16, 16},
        {"grouped heads 4/2 kv 130", 1, 4, 2, 10, 130, 8, 24},
        {"additive mask", 2, 2, 1, 9, 67, 12, 5},
        {"bool mask, empty rows 0", 1, 2, 1, 8, 20, 4, 7},
        {"bool mask, empty rows nan", 1, 2, 1, 8, 20, 4, 7},
        {"seq-major q, causal kv > q", 2, 3, 3, 5, 9, 6, 6},
        {"probs f16 kv 300", 1, 2, 1, 7, 300, 16, 8},
        {"probs bf16 kv 300 causal", 1, 2, 1, 33, 300, 16, 8},
    };
    cases[3].mask_kind = AOTC_ATTENTION_MASK_ADD;
    cases[4].mask_kind = cases[5].mask_kind = AOTC_ATTENTION_MASK_BOOL;
    cases[5].empty_rows_nan = 1;
    cases[1].causal = cases[6].causal = cases[8].causal = 1;
    cases[6].q_seq_major = true;
    cases[7].probs = AOTC_ATTENTION_PROBS_F16;
    cases[8].probs = AOTC_ATTENTION_PROBS_BF16;
    for (int threads : {1, 4}) {
        omp_set_num_threads(threads);
        std::printf("threads %d\n", threads);
        for (const Case &c : cases) run(c);
    }
    return check::finish();
}
