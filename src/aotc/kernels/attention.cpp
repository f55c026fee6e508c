// Scaled dot-product attention in one pass over the keys (see aotc_kernels.h): for each
// block of queries, the scores of one block of keys at a time, an online softmax (running
// row max and sum, the partial output rescaled when the max grows) and the weighted sum of
// the values, so the [q_len, kv_len] score matrix never exists. Masks are read block by
// block through their strides (a broadcast mask costs nothing); a causal mask is a bound on
// the keys each query block visits. Each (batch, head, query chunk) is one task on one
// thread, so results do not depend on the thread count.
//
// Half inputs (probs = F16 / BF16) follow PyTorch's CPU flash-attention kernel
// (aten/src/ATen/native/cpu/FlashAttentionKernel.cpp), which rounds them in ways that move a
// result by more than a half ulp: its key blocks are 512 long (the running max each block's
// exponentials are taken from), its exp on whole vectors is Vectorized<float>::fexp_u20 (a
// cubic for 2^fraction, relative error about 1e-4) and std::exp on a row's tail past the
// last whole vector, the row sum adds those float values, and the probabilities weight the
// values rounded to the input type. The scale multiplies the finished dot products (before
// the mask is added), as there; the output is rounded once, by the caller.

#include "aotc_kernels.h"
#include "transpose16.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>

#if defined(__AVX2__) && defined(__FMA__)
// g++ 12 reports its own AVX-512 headers' deliberately undefined vectors (_mm512_undefined_ps
// inside the max, round and reduce intrinsics) as maybe-uninitialized once they are inlined
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#endif
#if defined(__aarch64__) && defined(__ARM_NEON)
#include <arm_neon.h>
#endif
#ifdef _OPENMP
#include <omp.h>
#endif

namespace {

inline float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
// fexp_u20's constants, as PyTorch writes them
constexpr float kFexpC0 = 0.00010703434948458272f, kFexpC1 = 0.30354260500649682f,
                kFexpC2 = -0.22433836478672356f, kFexpC3 = -0.079204240219773236f;
constexpr float kFexpA = 8388608.0f;      // 2^23 / log2(2)
constexpr float kFexpB = 1065353216.0f;   // 2^23 * 127

// ---- one vector of floats per ISA ------------------------------------------------------
#if defined(__AVX512F__)
using V = __m512;
constexpr int64_t W = 16;
constexpr int R = 6, C = 4;  // score / output tile: R rows x C vectors (24 accumulators)
inline V vload(const float *p) { return _mm512_loadu_ps(p); }
inline void vstore(float *p, V v) { _mm512_storeu_ps(p, v); }
inline V vset(float x) { return _mm512_set1_ps(x); }
inline V vfma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
inline V vmul(V a, V b) { return _mm512_mul_ps(a, b); }
inline V vmax(V a, V b) { return _mm512_max_ps(a, b); }
inline V vadd(V a, V b) { return _mm512_add_ps(a, b); }
inline float hmax(V v) { return _mm512_reduce_max_ps(v); }
inline float hsum(V v) { return _mm512_reduce_add_ps(v); }
inline V vexp(V x) {
  const V xc = _mm512_max_ps(vset(-87.3f), _mm512_min_ps(vset(88.7f), x));
  const V n = _mm512_roundscale_ps(_mm512_mul_ps(xc, vset(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  V r = _mm512_fnmadd_ps(n, vset(0.693359375f), xc);
  r = _mm512_fnmadd_ps(n, vset(-2.12194440e-4f), r);
  V p = vset(1.9875691500e-4f);
  p = vfma(p, r, vset(1.3981999507e-3f));
  p = vfma(p, r, vset(8.3334519073e-3f));
  p = vfma(p, r, vset(4.1665795894e-2f));
  p = vfma(p, r, vset(1.6666665459e-1f));
  p = vfma(p, r, vset(5.0000001201e-1f));
  const V y = vfma(_mm512_mul_ps(p, r), r, _mm512_add_ps(r, vset(1.0f)));
  const __m512i e = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23);
  const V out = _mm512_mul_ps(y, _mm512_castsi512_ps(e));
  // below the normal range (and -inf, a masked score): exactly 0
  return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(x, vset(-87.3f), _CMP_NLT_UQ), out);
}
// max that keeps a NaN (vec::maximum)
inline V vmax_nan(V a, V b) {
  return _mm512_mask_mov_ps(_mm512_max_ps(a, b), _mm512_cmp_ps_mask(a, b, _CMP_UNORD_Q),
                            vset(std::numeric_limits<float>::quiet_NaN()));
}
// PyTorch's Vectorized<float>::fexp_u20 for AVX-512, operation for operation
inline V vfexp(V x) {
  const __mmask16 small = _mm512_cmp_ps_mask(x, vset(from_bits(0xc2aeac50u)), _CMP_LT_OS);
  const __mmask16 large = _mm512_cmp_ps_mask(x, vset(from_bits(0x42b17218u)), _CMP_GT_OS);
  V t = _mm512_mul_ps(x, vset(from_bits(0x3fb8aa3bu)));  // x log2(e)
  const V f = _mm512_sub_ps(t, _mm512_floor_ps(t));
  V r = _mm512_fmadd_ps(f, vset(kFexpC3), vset(kFexpC2));
  r = _mm512_fmadd_ps(f, r, vset(kFexpC1));
  r = _mm512_fmadd_ps(f, r, vset(kFexpC0));
  t = _mm512_sub_ps(t, r);
  __m512i bits = _mm512_cvttps_epi32(_mm512_fmadd_ps(vset(kFexpA), t, vset(kFexpB)));
  bits = _mm512_mask_mov_epi32(bits, small, _mm512_setzero_si512());
  bits = _mm512_mask_mov_epi32(bits, large, _mm512_set1_epi32(0x7f800000));
  return _mm512_castsi512_ps(bits);
}
#elif defined(__AVX2__) && defined(__FMA__)
using V = __m256;
constexpr int64_t W = 8;
constexpr int R = 6, C = 2;  // 12 accumulators of the 16 ymm registers
inline V vload(const float *p) { return _mm256_loadu_ps(p); }
inline void vstore(float *p, V v) { _mm256_storeu_ps(p, v); }
inline V vset(float x) { return _mm256_set1_ps(x); }
inline V vfma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
inline V vmul(V a, V b) { return _mm256_mul_ps(a, b); }
inline V vmax(V a, V b) { return _mm256_max_ps(a, b); }
inline V vadd(V a, V b) { return _mm256_add_ps(a, b); }
inline float hmax(V v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_movehdup_ps(m));
  return _mm_cvtss_f32(m);
}
inline float hsum(V v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}
inline V vexp(V x) {
  const V xc = _mm256_max_ps(vset(-87.3f), _mm256_min_ps(vset(88.7f), x));
  const V n = _mm256_round_ps(_mm256_mul_ps(xc, vset(1.44269504088896341f)),
                              _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  V r = _mm256_fnmadd_ps(n, vset(0.693359375f), xc);
  r = _mm256_fnmadd_ps(n, vset(-2.12194440e-4f), r);
  V p = vset(1.9875691500e-4f);
  p = vfma(p, r, vset(1.3981999507e-3f));
  p = vfma(p, r, vset(8.3334519073e-3f));
  p = vfma(p, r, vset(4.1665795894e-2f));
  p = vfma(p, r, vset(1.6666665459e-1f));
  p = vfma(p, r, vset(5.0000001201e-1f));
  const V y = vfma(_mm256_mul_ps(p, r), r, _mm256_add_ps(r, vset(1.0f)));
  const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  const V out = _mm256_mul_ps(y, _mm256_castsi256_ps(e));
  return _mm256_and_ps(out, _mm256_cmp_ps(x, vset(-87.3f), _CMP_NLT_UQ));
}
inline V vmax_nan(V a, V b) {
  return _mm256_or_ps(_mm256_max_ps(a, b), _mm256_cmp_ps(a, b, _CMP_UNORD_Q));
}
// PyTorch's Vectorized<float>::fexp_u20 for AVX2, operation for operation
inline V vfexp(V x) {
  const V small = _mm256_cmp_ps(x, vset(from_bits(0xc2aeac50u)), _CMP_LT_OS);
  const V large = _mm256_cmp_ps(x, vset(from_bits(0x42b17218u)), _CMP_GT_OS);
  V t = _mm256_mul_ps(x, vset(from_bits(0x3fb8aa3bu)));  // x log2(e)
  const V f = _mm256_sub_ps(t, _mm256_floor_ps(t));
  V r = _mm256_fmadd_ps(f, vset(kFexpC3), vset(kFexpC2));
  r = _mm256_fmadd_ps(f, r, vset(kFexpC1));
  r = _mm256_fmadd_ps(f, r, vset(kFexpC0));
  t = _mm256_sub_ps(t, r);
  V out = _mm256_castsi256_ps(_mm256_cvttps_epi32(_mm256_fmadd_ps(vset(kFexpA), t, vset(kFexpB))));
  out = _mm256_blendv_ps(out, _mm256_setzero_ps(), small);
  return _mm256_blendv_ps(out, vset(std::numeric_limits<float>::infinity()), large);
}
#elif defined(__aarch64__) && defined(__ARM_NEON)
using V = float32x4_t;
constexpr int64_t W = 4;
constexpr int R = 6, C = 4;  // 24 accumulators of the 32 q registers
inline V vload(const float *p) { return vld1q_f32(p); }
inline void vstore(float *p, V v) { vst1q_f32(p, v); }
inline V vset(float x) { return vdupq_n_f32(x); }
inline V vfma(V a, V b, V c) { return vfmaq_f32(c, a, b); }
inline V vmul(V a, V b) { return vmulq_f32(a, b); }
inline V vmax(V a, V b) { return vmaxq_f32(a, b); }
inline V vadd(V a, V b) { return vaddq_f32(a, b); }
inline float hmax(V v) { return vmaxvq_f32(v); }
inline float hsum(V v) { return vaddvq_f32(v); }
// the exp of the AVX builds above, step for step (frintn rounds to nearest even as they do)
inline V vexp(V x) {
  const V xc = vmaxq_f32(vset(-87.3f), vminq_f32(vset(88.7f), x));
  const V n = vrndnq_f32(vmulq_f32(xc, vset(1.44269504088896341f)));
  V r = vfmsq_f32(xc, n, vset(0.693359375f));
  r = vfmsq_f32(r, n, vset(-2.12194440e-4f));
  V p = vset(1.9875691500e-4f);
  p = vfma(p, r, vset(1.3981999507e-3f));
  p = vfma(p, r, vset(8.3334519073e-3f));
  p = vfma(p, r, vset(4.1665795894e-2f));
  p = vfma(p, r, vset(1.6666665459e-1f));
  p = vfma(p, r, vset(5.0000001201e-1f));
  const V y = vfma(vmulq_f32(p, r), r, vaddq_f32(r, vset(1.0f)));
  const int32x4_t e = vshlq_n_s32(vaddq_s32(vcvtnq_s32_f32(n), vdupq_n_s32(127)), 23);
  const V out = vmulq_f32(y, vreinterpretq_f32_s32(e));
  // below the normal range (and -inf, a masked score): exactly 0; a NaN stays
  return vreinterpretq_f32_u32(vbicq_u32(vreinterpretq_u32_f32(out), vcltq_f32(x, vset(-87.3f))));
}
// fmax keeps a NaN already
inline V vmax_nan(V a, V b) { return vmaxq_f32(a, b); }
// PyTorch's NEON fexp_u20 is not the AVX cubic (and has changed between releases): the
// accurate exp, lane by lane, as on builds without vectors
inline V vfexp(V x) {
  float lanes[W];
  vstore(lanes, x);
  for (float &l : lanes) l = std::exp(l);
  return vload(lanes);
}
#else
using V = float;
constexpr int64_t W = 1;
constexpr int R = 4, C = 4;
inline V vload(const float *p) { return *p; }
inline void vstore(float *p, V v) { *p = v; }
inline V vset(float x) { return x; }
inline V vfma(V a, V b, V c) { return a * b + c; }
inline V vmul(V a, V b) { return a * b; }
inline V vmax(V a, V b) { return a > b ? a : b; }
inline V vadd(V a, V b) { return a + b; }
inline float hmax(V v) { return v; }
inline float hsum(V v) { return v; }
inline V vexp(V x) { return std::exp(x); }
inline V vmax_nan(V a, V b) { return (a > b || a != a) ? a : b; }
// without x86 vectors PyTorch's fexp_u20 is its accurate exp
inline V vfexp(V x) { return std::exp(x); }
#endif

constexpr int64_t BQ = 64;  // queries per block: their scores and partial outputs stay in L2
constexpr int64_t BK = 64;  // keys per block (float inputs), a multiple of C * W on every ISA
constexpr int64_t BK_FLASH = 512;  // keys per block of PyTorch's flash kernel (half inputs)
constexpr int64_t kParallelMin = 1 << 16;  // multiply-adds below which one thread runs it
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

// the largest of a vector's lanes, NaN when one is
inline float hmax_nan(V v) {
  float lanes[W];
  vstore(lanes, v);
  float m = lanes[0];
  for (int64_t l = 1; l < W; ++l) m = (lanes[l] > m || lanes[l] != lanes[l]) ? lanes[l] : m;
  return m;
}

// a probability rounded to the half type, as PyTorch stores it before it weights the values
#if defined(__aarch64__)
// (g++ 12 has no _Float16 in C++ on aarch64; __fp16 is IEEE binary16 there, rounded to nearest even)
inline float round_f16(float x) { return static_cast<float>(static_cast<__fp16>(x)); }
#else
inline float round_f16(float x) { return static_cast<float>(static_cast<_Float16>(x)); }
#endif
inline float round_bf16(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  if (x != x) return x;
  u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;  // to nearest, ties to even
  return from_bits(u);
}

// s[r, 0:C*W] = scale * (q[r, :d] . kt[:d, 0:C*W]) for `Rows` rows (q rows ldq apart, kt
// rows ldk): the scale multiplies the finished dot product, as PyTorch's flash kernel does
template <int Rows>
void score_tile(int64_t d, const float *q, int64_t ldq, const float *kt, int64_t ldk, float *s,
                int64_t lds, float scale) {
  V acc[Rows][C];
  for (int r = 0; r < Rows; ++r)
    for (int c = 0; c < C; ++c) acc[r][c] = vset(0.0f);
  for (int64_t t = 0; t < d; ++t) {
    V k[C];
    for (int c = 0; c < C; ++c) k[c] = vload(kt + t * ldk + c * W);
    for (int r = 0; r < Rows; ++r) {
      const V b = vset(q[r * ldq + t]);
      for (int c = 0; c < C; ++c) acc[r][c] = vfma(b, k[c], acc[r][c]);
    }
  }
  const V sv = vset(scale);
  for (int r = 0; r < Rows; ++r)
    for (int c = 0; c < C; ++c) vstore(s + r * lds + c * W, vmul(acc[r][c], sv));
}

// o[r, 0:Cols*W] += p[r, :n] . v[:n, 0:Cols*W] for `Rows` rows.
template <int Rows, int Cols>
void output_tile(int64_t n, const float *p, int64_t ldp, const float *v, int64_t ldv, float *o,
                 int64_t ldo) {
  V acc[Rows][Cols];
  for (int r = 0; r < Rows; ++r)
    for (int c = 0; c < Cols; ++c) acc[r][c] = vload(o + r * ldo + c * W);
  for (int64_t j = 0; j < n; ++j) {
    V x[Cols];
    for (int c = 0; c < Cols; ++c) x[c] = vload(v + j * ldv + c * W);
    for (int r = 0; r < Rows; ++r) {
      const V b = vset(p[r * ldp + j]);
      for (int c = 0; c < Cols; ++c) acc[r][c] = vfma(b, x[c], acc[r][c]);
    }
  }
  for (int r = 0; r < Rows; ++r)
    for (int c = 0; c < Cols; ++c) vstore(o + r * ldo + c * W, acc[r][c]);
}

// The row tails of a block: Op<k>::run(args...) with k = rows, 1 <= rows <= R.
template <template <int> class Op, int K = R, typename... A>
void with_rows(int rows, A... args) {
  if constexpr (K >= 1) {
    if (rows == K) return Op<K>::run(args...);
    with_rows<Op, K - 1>(rows, args...);
  }
}

// scores of `Rows` rows against the first `ncols` (a multiple of C * W) keys of a block
template <int Rows> struct ScoreRows {
  static void run(int64_t d, const float *q, const float *kt, int64_t ldk, float *s,
                  int64_t lds, int64_t ncols, float scale) {
    for (int64_t c = 0; c < ncols; c += C * W)
      score_tile<Rows>(d, q, d, kt + c, ldk, s + c, lds, scale);
  }
};

// o += p . v for `Rows` rows over n keys, the output dim in tiles of C vectors, then single ones
template <int Rows> struct OutputRows {
  static void run(int64_t n, const float *p, int64_t ldp, const float *v, int64_t dvp,
                  float *o) {
    int64_t e = 0;
    for (; e + C * W <= dvp; e += C * W) output_tile<Rows, C>(n, p, ldp, v + e, dvp, o + e, dvp);
    for (; e < dvp; e += W) output_tile<Rows, 1>(n, p, ldp, v + e, dvp, o + e, dvp);
  }
};

// sr[0:ncols] = exp(sr - m), returning their sum. Float inputs: the accurate vexp. Half
// inputs: PyTorch's flash kernel on a block of `len` keys: fexp on its whole vectors, then
// std::exp one by one, the vector lanes summed first (columns past `len` are -inf here).
float exp_row(float *sr, int64_t ncols, int64_t len, float m, bool flash) {
  const V negm = vset(-m);  // x + (-m) is x - m, exactly
  V sum = vset(0.0f);
  if (!flash) {
    for (int64_t j = 0; j < ncols; j += W) {
      const V p = vexp(vadd(vload(sr + j), negm));
      vstore(sr + j, p);
      sum = vadd(sum, p);
    }
    return hsum(sum);
  }
  const int64_t vec_end = std::min(len / W * W, ncols);
  for (int64_t j = 0; j < vec_end; j += W) {
    const V p = vfexp(vadd(vload(sr + j), negm));
    vstore(sr + j, p);
    sum = vadd(sum, p);
  }
  float total = hsum(sum);
  for (int64_t j = vec_end; j < ncols; ++j) {
    sr[j] = std::exp(sr[j] - m);
    total += sr[j];
  }
  return total;
}

// A task of at most this many query rows (decoding: one new token) reads K and V where they
// are instead of packing them: the packing would cost more than the products it serves.
constexpr int64_t kDirectRows = 2;

// scale * (q . k) over d values, k contiguous
inline float dot_scaled(const float *q, const float *k, int64_t d, float scale) {
  V acc = vset(0.0f);
  int64_t t = 0;
  for (; t + W <= d; t += W) acc = vfma(vload(q + t), vload(k + t), acc);
  float total = hsum(acc);
  for (; t < d; ++t) total += q[t] * k[t];
  return total * scale;
}

// o[0:dv] += p * v[0:dv], v contiguous
inline void add_scaled_row(float *o, float p, const float *v, int64_t dv) {
  const V pv = vset(p);
  int64_t e = 0;
  for (; e + W <= dv; e += W) vstore(o + e, vfma(pv, vload(v + e), vload(o + e)));
  for (; e < dv; ++e) o[e] += p * v[e];
}

// One (batch, head, query range) task: K^T and V of the keys it can see packed once (or, for
// a few rows with contiguous key and value rows, read in place), then its query blocks one
// by one.
bool attend(const aotc_attention_shape &sh, const float *q, const float *k, const float *v,
            const void *mask, float *out, int64_t b, int64_t h, int64_t i_begin, int64_t i_end) {
  const bool flash = sh.probs != AOTC_ATTENTION_PROBS_F32;
  const int64_t bk = flash ? BK_FLASH : BK;
  const int64_t d = sh.head_dim, dv = sh.v_dim, dvp = round_up(dv, W);
  const int64_t hk = h / sh.group;
  const int64_t kv_end = sh.causal ? std::min(sh.kv_len, i_end) : sh.kv_len;
  const bool direct = i_end - i_begin <= kDirectRows && sh.k_strides[3] == 1 &&
                      sh.v_strides[3] == 1;
  const int64_t kpad = direct ? 0 : round_up(std::max<int64_t>(kv_end, 1), C * W);
  const int64_t words = d * kpad + kpad * dvp + BQ * d + BQ * bk + BQ * dvp + 2 * BQ;
  float *mem = static_cast<float *>(std::aligned_alloc(64, round_up(words * 4, 64)));
  if (mem == nullptr) return false;
  float *kt = mem, *vp = kt + d * kpad, *qs = vp + kpad * dvp, *s = qs + BQ * d,
        *o = s + BQ * bk, *mrow = o + BQ * dvp, *lrow = mrow + BQ;

  // K^T [d, kpad] and V [kpad, dvp], zero beyond kv_end and dv
  const float *kb = k + b * sh.k_strides[0] + hk * sh.k_strides[1];
  const float *vb = v + b * sh.v_strides[0] + hk * sh.v_strides[1];
  std::memset(kt, 0, sizeof(float) * d * kpad);
  std::memset(vp, 0, sizeof(float) * kpad * dvp);
  const int64_t keys = std::min(kpad, kv_end);
  int64_t j_whole = 0;  // keys transposed 16 x 16 at a time
#if defined(__AVX512F__)
  if (sh.k_strides[3] == 1 && d % 16 == 0)  // (a direct task packs no key: kpad is 0)
    for (; j_whole + 16 <= keys; j_whole += 16)
      for (int64_t t = 0; t < d; t += 16)
        aotc_transpose16::transpose16(kb + j_whole * sh.k_strides[2] + t, sh.k_strides[2],
                                      kt + t * kpad + j_whole, kpad);
#endif
  for (int64_t j = j_whole; j < keys; ++j) {
    const float *kr = kb + j * sh.k_strides[2];
    for (int64_t t = 0; t < d; ++t) kt[t * kpad + j] = kr[t * sh.k_strides[3]];
  }
  for (int64_t j = 0; j < keys; ++j) {
    const float *vr = vb + j * sh.v_strides[2];
    if (sh.v_strides[3] == 1)
      std::memcpy(vp + j * dvp, vr, sizeof(float) * dv);
    else
      for (int64_t e = 0; e < dv; ++e) vp[j * dvp + e] = vr[e * sh.v_strides[3]];
  }

  const float *qb = q + b * sh.q_strides[0] + h * sh.q_strides[1];
  const char *mb = static_cast<const char *>(mask);
  for (int64_t i0 = i_begin; i0 < i_end; i0 += BQ) {
    const int64_t rows = std::min(BQ, i_end - i0);
    for (int64_t r = 0; r < rows; ++r) {
      const float *qr = qb + (i0 + r) * sh.q_strides[2];
      for (int64_t t = 0; t < d; ++t) qs[r * d + t] = qr[t * sh.q_strides[3]];
      mrow[r] = kNegInf;
      lrow[r] = 0.0f;
    }
    std::memset(o, 0, sizeof(float) * rows * dvp);
    const int64_t block_end = sh.causal ? std::min(kv_end, i0 + rows) : kv_end;
    for (int64_t j0 = 0; j0 < block_end; j0 += bk) {
      const int64_t cols = std::min(bk, block_end - j0);
      const int64_t ncols = round_up(cols, C * W);
      const int64_t len = std::min(bk, sh.kv_len - j0);  // the block's keys, seen or not
      // scores of the block: rows x ncols
      for (int64_t r = 0; r < rows && direct; ++r)
        for (int64_t j = 0; j < cols; ++j)
          s[r * bk + j] = dot_scaled(qs + r * d, kb + (j0 + j) * sh.k_strides[2], d, sh.scale);
      for (int64_t r = 0; r < rows && !direct; r += R) {
        const int n = static_cast<int>(std::min<int64_t>(R, rows - r));
        with_rows<ScoreRows>(n, d, qs + r * d, kt + j0, kpad, s + r * bk, bk, ncols, sh.scale);
      }
      // mask, causal bound, and the online softmax of each row
      for (int64_t r = 0; r < rows; ++r) {
        float *sr = s + r * bk;
        const int64_t i = i0 + r;
        if (sh.mask_kind == AOTC_ATTENTION_MASK_ADD) {
          const float *mr = reinterpret_cast<const float *>(mb) + b * sh.mask_strides[0] +
                            h * sh.mask_strides[1] + i * sh.mask_strides[2] +
                            j0 * sh.mask_strides[3];
          for (int64_t j = 0; j < cols; ++j) sr[j] += mr[j * sh.mask_strides[3]];
        } else if (sh.mask_kind == AOTC_ATTENTION_MASK_BOOL) {
          const uint8_t *mr = reinterpret_cast<const uint8_t *>(mb) + b * sh.mask_strides[0] +
                              h * sh.mask_strides[1] + i * sh.mask_strides[2] +
                              j0 * sh.mask_strides[3];
          const uint8_t when = static_cast<uint8_t>(sh.fill_when);
          for (int64_t j = 0; j < cols; ++j)
            sr[j] = (mr[j * sh.mask_strides[3]] != 0) == (when != 0) ? sh.fill : sr[j];
        }
        const int64_t visible = sh.causal ? std::min(cols, std::max<int64_t>(i + 1 - j0, 0)) : cols;
        for (int64_t j = visible; j < ncols; ++j) sr[j] = kNegInf;
        V mx = vload(sr);
        for (int64_t j = W; j < ncols; j += W) mx = vmax_nan(mx, vload(sr + j));
        // a NaN score makes the max NaN, so the row: fexp would take a NaN to -0
        const float bmax = hmax_nan(mx);
        const float m_new = mrow[r] > bmax ? mrow[r] : bmax;
        if (m_new == kNegInf) {  // nothing visible in this row yet
          std::memset(sr, 0, sizeof(float) * ncols);
          continue;
        }
        const float block_sum = exp_row(sr, ncols, len, m_new, flash);
        const float alpha = std::exp(mrow[r] - m_new);
        lrow[r] = block_sum + alpha * lrow[r];
        mrow[r] = m_new;
        if (alpha != 1.0f) {
          const V av = vset(alpha);
          for (int64_t e = 0; e < dvp; e += W) vstore(o + r * dvp + e, vmul(vload(o + r * dvp + e), av));
        }
        if (sh.probs == AOTC_ATTENTION_PROBS_F16)
          for (int64_t j = 0; j < cols; ++j) sr[j] = round_f16(sr[j]);
        else if (sh.probs == AOTC_ATTENTION_PROBS_BF16)
          for (int64_t j = 0; j < cols; ++j) sr[j] = round_bf16(sr[j]);
      }
      // o += p . v over the block's keys
      for (int64_t r = 0; r < rows && direct; ++r)
        for (int64_t j = 0; j < cols; ++j)
          add_scaled_row(o + r * dvp, s[r * bk + j], vb + (j0 + j) * sh.v_strides[2], dv);
      for (int64_t r = 0; r < rows && !direct; r += R) {
        const int n = static_cast<int>(std::min<int64_t>(R, rows - r));
        with_rows<OutputRows>(n, cols, s + r * bk, bk, vp + j0 * dvp, dvp, o + r * dvp);
      }
    }
    // normalize; a row that saw no key is 0 (SDPA) or NaN (softmax of all -inf)
    for (int64_t r = 0; r < rows; ++r) {
      float *dst = out + ((b * sh.heads + h) * sh.q_len + i0 + r) * dv;
      const float l = lrow[r];
      if (l == 0.0f || mrow[r] == kNegInf) {
        const float fill = sh.empty_rows_nan ? std::numeric_limits<float>::quiet_NaN() : 0.0f;
        for (int64_t e = 0; e < dv; ++e) dst[e] = fill;
        continue;
      }
      const float inv = 1.0f / l;
      for (int64_t e = 0; e < dv; ++e) dst[e] = o[r * dvp + e] * inv;
    }
  }
  std::free(mem);
  return true;
}

}  // namespace

extern "C" int aotc_attention_f32(const aotc_attention_shape *sh, const float *q, const float *k,
                                  const float *v, const void *mask, float *out) {
  const int64_t bh = sh->batch * sh->heads;
  if (bh == 0 || sh->q_len == 0 || sh->v_dim == 0) return 0;
  const int64_t q_blocks = (sh->q_len + BQ - 1) / BQ;
  const double work = double(bh) * double(sh->q_len) * double(sh->kv_len) *
                      double(sh->head_dim + sh->v_dim);
  const bool parallel = work >= double(kParallelMin);
  // enough query chunks per head to give every thread work; each chunk packs its own K, V
  int64_t chunks = 1;
#ifdef _OPENMP
  if (parallel) {
    const int64_t threads = omp_get_max_threads();
    chunks = std::min(q_blocks, (threads + bh - 1) / bh);
  }
#endif
  const int64_t per_chunk = (q_blocks + chunks - 1) / chunks * BQ;
  int failed = 0;
#pragma omp parallel for collapse(2) schedule(dynamic, 1) if (parallel) reduction(| : failed)
  for (int64_t t = 0; t < bh; ++t)
    for (int64_t c = 0; c < chunks; ++c) {
      const int64_t i_begin = c * per_chunk;
      const int64_t i_end = std::min(sh->q_len, i_begin + per_chunk);
      if (i_begin < i_end && !attend(*sh, q, k, v, mask, out, t / sh->heads, t % sh->heads,
                                     i_begin, i_end))
        failed = 1;
    }
  return failed;
}
