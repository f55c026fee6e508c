/* Native kernels shared by the code that aotc generates. */
#ifndef AOTC_KERNELS_H
#define AOTC_KERNELS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Batched single-precision GEMM with a fused bias:
   for b in [0, batch):  C_b[m, n] = alpha * sum_k A_b[m, k] * B_b[k, n]  +  beta * bias_b[m, n]
   Element addresses (all strides in elements, any of them may be 0 or arbitrary, e.g. a transposed B):
     A_b(m,k)    = A    + b*sa_batch    + m*sa_m    + k*sa_k
     B_b(k,n)    = B    + b*sb_batch    + k*sb_k    + n*sb_n
     bias_b(m,n) = bias + b*sbias_batch + m*sbias_m + n*sbias_n   (bias may be NULL: no bias term)
     C_b(m,n)    = C    + b*sc_batch    + m*ldc     + n            (C rows are unit-stride)
   C must not alias A, B or bias. M, N or batch of 0 does nothing; K of 0 writes beta*bias (or 0).
   Multi-threaded with OpenMP, using the team size the calling thread would get (omp_get_max_threads()). */
void aotc_sgemm_batched(int64_t batch, int64_t M, int64_t N, int64_t K,
                        const float *A, int64_t sa_batch, int64_t sa_m, int64_t sa_k,
                        const float *B, int64_t sb_batch, int64_t sb_k, int64_t sb_n,
                        float *C, int64_t sc_batch, int64_t ldc,
                        const float *bias, int64_t sbias_batch, int64_t sbias_m, int64_t sbias_n,
                        float alpha, float beta);

/* A fused epilogue: fn(ctx, c, ldc, row, col, rows, cols) rewrites a finished block of C in
   place: rows x cols values at c (row stride ldc), whose first element is output row `row`
   (b*M + m: the rows of every matrix of the batch counted in order) and column `col`. It is
   called once per element, on blocks that hold their whole sum and bias term; blocks never
   overlap, and several threads may run it at once (on different blocks). */
typedef void (*aotc_gemm_epilogue_fn)(const void *ctx, float *c, int64_t ldc, int64_t row,
                                      int64_t col, int64_t rows, int64_t cols);
typedef struct {
  aotc_gemm_epilogue_fn fn;
  const void *ctx;
} aotc_gemm_epilogue;

/* aotc_sgemm_batched, then `epilogue` (may be NULL) on each finished block of C. */
void aotc_sgemm_fused(int64_t batch, int64_t M, int64_t N, int64_t K,
                      const float *A, int64_t sa_batch, int64_t sa_m, int64_t sa_k,
                      const float *B, int64_t sb_batch, int64_t sb_k, int64_t sb_n,
                      float *C, int64_t sc_batch, int64_t ldc,
                      const float *bias, int64_t sbias_batch, int64_t sbias_m, int64_t sbias_n,
                      float alpha, float beta, const aotc_gemm_epilogue *epilogue);

/* aotc_sgemm_batched with an activation fused into the stores of C (the convolutions' own,
   kernels/conv_activation.h): each element becomes act(alpha*sum + beta*bias + residual),
   residual NULL or laid out as C (same sc_batch and ldc, not aliasing C); kind 0 none, 1 the
   clamp to [lo, hi] (a NaN stays NaN), 2 hardswish. The main path applies it in registers
   before the store; the others on each finished block while it is in cache. */
typedef struct {
  int32_t kind;
  float lo, hi;
  const float *residual;
} aotc_gemm_activation;
void aotc_sgemm_act(int64_t batch, int64_t M, int64_t N, int64_t K,
                    const float *A, int64_t sa_batch, int64_t sa_m, int64_t sa_k,
                    const float *B, int64_t sb_batch, int64_t sb_k, int64_t sb_n,
                    float *C, int64_t sc_batch, int64_t ldc,
                    const float *bias, int64_t sbias_batch, int64_t sbias_m, int64_t sbias_n,
                    float alpha, float beta, const aotc_gemm_activation *act);

/* batch == 1 convenience */
void aotc_sgemm(int64_t M, int64_t N, int64_t K,
                const float *A, int64_t sa_m, int64_t sa_k,
                const float *B, int64_t sb_k, int64_t sb_n,
                float *C, int64_t ldc,
                const float *bias, int64_t sbias_m, int64_t sbias_n,
                float alpha, float beta);

/* Prepacked weights. A constant B [K, N] (element (k, n) at B + k*sb_k + n*sb_n) is packed
   once, into aotc_sgemm_packed_floats(K, N) floats (64-byte aligned), in the panel layout
   of this build's micro-kernel: K cut into near-equal slices of at most kc rows
   (kc_slice = ceil(K / ceil(K / kc))); slice by slice, N cut into panels nr columns wide
   (the last one zero padded), each panel k-major:
     packed[pc * round_up(N, nr) + q * nr * kc_this + (k - pc) * nr + j] = B(k, q*nr + j)
   where pc is the slice's first row and kc_this its depth. nr and kc depend on the ISA the
   kernel is compiled for (aotc_sgemm_packed_layout): a packed weight is only valid for a
   build with the same pair. aotc_sgemm_prepacked is aotc_sgemm_fused with such a B,
   shared by every matrix of the batch. */
void aotc_sgemm_packed_layout(int64_t *nr, int64_t *kc);
int64_t aotc_sgemm_packed_floats(int64_t K, int64_t N);
void aotc_sgemm_pack_b(int64_t K, int64_t N, const float *B, int64_t sb_k, int64_t sb_n,
                       float *packed);
void aotc_sgemm_prepacked(int64_t batch, int64_t M, int64_t N, int64_t K,
                          const float *A, int64_t sa_batch, int64_t sa_m, int64_t sa_k,
                          const float *packed_b, float *C, int64_t sc_batch, int64_t ldc,
                          const float *bias, int64_t sbias_batch, int64_t sbias_m,
                          int64_t sbias_n, float alpha, float beta,
                          const aotc_gemm_epilogue *epilogue);
/* aotc_sgemm_prepacked with aotc_sgemm_act's residual and activation in the stores. */
void aotc_sgemm_prepacked_act(int64_t batch, int64_t M, int64_t N, int64_t K,
                              const float *A, int64_t sa_batch, int64_t sa_m, int64_t sa_k,
                              const float *packed_b, float *C, int64_t sc_batch, int64_t ldc,
                              const float *bias, int64_t sbias_batch, int64_t sbias_m,
                              int64_t sbias_n, float alpha, float beta,
                              const aotc_gemm_activation *act);

/* bfloat16 prepacked weights (compile option precision="bf16"). B [K, N] rounded to
   bfloat16 (nearest even) in aotc_sgemm_packed_bf16_elems(K, N) uint16 values: K cut into
   slices as above but of an even depth (ceil(K / ceil(K / kc)) rounded up to even), each
   slice's depth padded to whole pairs (kc2, a zero row after an odd last slice), N into
   nr-wide panels, each panel's rows in interleaved pairs:
     packed[pc * round_up(N, nr) + q * nr * kc2 + ((k - pc) / 2) * 2 * nr + 2 * j + (k - pc) % 2]
       = bf16(B(k, q*nr + j))
   aotc_sgemm_prepacked_bf16 is aotc_sgemm_prepacked with such a B: A rounded to bfloat16
   as it is packed, products summed in float32 (vdpbf16ps: the AVX-512 build needs a CPU
   with avx512_bf16), bias and epilogue applied in float32. */
int64_t aotc_sgemm_packed_bf16_elems(int64_t K, int64_t N);
void aotc_sgemm_pack_b_bf16(int64_t K, int64_t N, const float *B, int64_t sb_k, int64_t sb_n,
                            uint16_t *packed);
void aotc_sgemm_prepacked_bf16(int64_t batch, int64_t M, int64_t N, int64_t K,
                               const float *A, int64_t sa_batch, int64_t sa_m, int64_t sa_k,
                               const uint16_t *packed_b, float *C, int64_t sc_batch, int64_t ldc,
                               const float *bias, int64_t sbias_batch, int64_t sbias_m,
                               int64_t sbias_n, float alpha, float beta,
                               const aotc_gemm_epilogue *epilogue);

/* Convolution over 1, 2 or 3 spatial dims, single precision, NC[D][H]W contiguous.
   Forward:    y[n, g*Cog + co, o] = bias[g*Cog + co]
                   + sum_{ci, k} w[g*Cog + co, ci, k] * x[n, g*Cig + ci, o*stride - padding + k*dilation]
   Transposed: y[n, g*Cog + co, i*stride - padding + k*dilation] += x[n, g*Cig + ci, i] * w[g*Cig + ci, co, k]
               (after y = bias), with w of shape [in_channels, Cog, k...].
   Cig = in_channels / groups, Cog = out_channels / groups; reads outside x are zero.
   `workspace` holds aotc_sconv_workspace(shape) floats (may be NULL when that is 0):
     forward, Cig == 1 (depthwise):              0 (a direct loop)
     forward, every kernel 1, stride 1, pad 0:   0 (one GEMM over x in place)
     other forward, prod(out_size) < 256, batch > 1:
                                   (Cig * prod(kernel) + Cog) * batch * prod(out_size)
     other forward:                              Cig * prod(kernel) * prod(out_size) (im2col)
       (the direct kernel of 1-D/2-D convolutions uses its start for a padded input copy)
     transposed:                                 Cog * prod(kernel) * prod(in_size)  (col2im)
     weight_packed (forward, groups 1):          batch * (Cin * prod(kernel) * P + P * Cout),
                                                 without the first term for 1x1, stride 1,
                                                 pad 0 (P = prod(out_size)), without the
                                                 second where y is channels last
   With `weight_packed`, w is the packed B of aotc_sgemm_pack_b for K = Cin * prod(kernel),
   N = Cout (element (k, n) = w[n * K + k] of the [Cout, Cin, k...] weight); groups must be 1.
   With `weight_packed` 2, w is the Winograd F(2x2, 3x3) transform of the [Cout, Cin, 3, 3]
   weight written by aotc_sconv_pack_winograd: for p = 0..15, u_p[co][ci] = (G g G^T)[p / 4]
   [p % 4] for g = w[co][ci], G = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1], stored as the
   packed B [Cin, Cout] of aotc_sgemm_pack_b (B(ci, co) = u_p[co][ci]), each starting
   aotc_sgemm_packed_floats(Cin, Cout) rounded up to a multiple of 16 floats after the one
   before (16 of them; the panel layout of this build; w 64-byte aligned); the
   convolution must be 2-D with a 3x3 kernel, stride 1, dilation 1 and one group.
   aotc_sconv_pack_winograd returns 0, or 1 without memory for its scratch.
   A non-null `residual` (contiguous, y's shape, not aliasing y) is added to every result;
   `clamped` then names the activation applied to it: 0 none; 1 the clamp to [clamp_min,
   clamp_max] (a fused ReLU, ReLU6 or hardtanh; an unbounded side is +-infinity); 2
   hardswish, r * min(max(r + 3, 0), 6) * (1/6) (clamp_min and clamp_max unused).
   `layout` bit AOTC_CONV_X_LAST: x is stored channels last, [batch, spatial..., in_channels];
   bit AOTC_CONV_Y_LAST: y (and the residual) are, [batch, spatial..., out_channels]. Only on
   the builds with the vector kernels (AVX2, AVX-512, NEON), 2-D, forward, and for
     x channels last: a depthwise convolution with one output channel per group, or a 1x1
       stride-1 unpadded one with `weight_packed` 1;
     y channels last: those, or any other with `weight_packed` 1 (its columns im2col'd from
       a channels-first x; the workspace then has no room for out^T: batch * Cin*taps * P).
   Multi-threaded with OpenMP; results do not depend on the thread count. */
#define AOTC_CONV_X_LAST 1
#define AOTC_CONV_Y_LAST 2
typedef struct {
  int64_t batch, in_channels, out_channels, groups;
  int64_t ndim; /* spatial dims, 1..3; the arrays below use their first ndim entries */
  int64_t in_size[3], out_size[3], kernel[3], stride[3], padding[3], dilation[3];
  int64_t transposed;
  int64_t clamped;
  float clamp_min, clamp_max;
  const float *residual; /* an epilogue operand rather than a size: NULL for none */
  int64_t weight_packed;  /* 1: w is the GEMM's packed B; 2: its Winograd transform (above) */
  int64_t layout;         /* AOTC_CONV_X_LAST | AOTC_CONV_Y_LAST, or 0: channels first */
} aotc_conv_shape;

int64_t aotc_sconv_workspace(const aotc_conv_shape *shape);

void aotc_sconv(const aotc_conv_shape *shape, const float *x, const float *w, const float *bias,
                float *y, float *workspace);
int aotc_sconv_pack_winograd(int64_t out_channels, int64_t in_channels, const float *w,
                             float *packed);

/* Inclusive scans along one dim of a contiguous tensor viewed as [outer, n, inner]:
   y[o, j, i] = x[o, 0, i] op x[o, 1, i] op ... op x[o, j, i], op one of
   sum, product, log-sum-exp (floats only), max, min (a NaN, once seen, stays).
   float32 sums, products and log-sum-exps accumulate in double; int64 wraps around.
   aotc_scan_index_*: the position j' <= j of the running max (AOTC_SCAN_MAX) or min
   (AOTC_SCAN_MIN): the last one among equal values, the last NaN once there is one
   (torch.cummax / cummin). Outputs may not alias x. */
#define AOTC_SCAN_SUM 0
#define AOTC_SCAN_PROD 1
#define AOTC_SCAN_LOGSUMEXP 2
#define AOTC_SCAN_MAX 3
#define AOTC_SCAN_MIN 4
void aotc_scan_f32(int32_t op, int64_t outer, int64_t n, int64_t inner, const float *x, float *y);
void aotc_scan_f64(int32_t op, int64_t outer, int64_t n, int64_t inner, const double *x, double *y);
void aotc_scan_i64(int32_t op, int64_t outer, int64_t n, int64_t inner, const int64_t *x,
                   int64_t *y);
void aotc_scan_index_f32(int32_t op, int64_t outer, int64_t n, int64_t inner, const float *x,
                         int64_t *y);
void aotc_scan_index_f64(int32_t op, int64_t outer, int64_t n, int64_t inner, const double *x,
                         int64_t *y);
void aotc_scan_index_i64(int32_t op, int64_t outer, int64_t n, int64_t inner, const int64_t *x,
                         int64_t *y);

/* Dense linear algebra (linalg.cpp) on batches of contiguous row-major matrices, float32
   (_f32) and float64 (_f64), each matrix of a batch on one thread:
   - aotc_lu_factor: LU with partial pivoting of each m x n matrix of a [batch, m, n]; out
     holds per matrix m*n + min(m, n) + AOTC_LU_EXTRA values: the factors (L below the
     diagonal, unit diagonal implied, U on and above), the 1-based pivots (row i swapped
     with row pivots[i], in order) as values, then info (the first zero pivot, 1-based, or
     0), det, the sign of det and log |det| (the last three for square matrices, else 0).
   - aotc_lu_solve: x [batch, n, k] solving A x = b (A^T x = b with adjoint) from A's
     factors lu [batch, n, n] and int32 pivots [batch, n].
   - aotc_cholesky: the lower factor L (A = L L^T) of each n x n matrix from its lower
     triangle; out holds per matrix n*n values (zero above the diagonal) then info (the
     order of the first minor that is not positive definite, or 0).
   - aotc_triangular_solve: x [batch, n, k] solving T x = b, T the lower (or upper)
     triangle of a [batch, n, n], transposed with trans, unit diagonal with unit.
   - aotc_lu_permutation: the m x m permutation matrix P with A = P L U of each int32 pivot
     sequence [batch, k].
   - aotc_geqrf: Householder QR of each m x n matrix as LAPACK's geqrf leaves it; out holds
     per matrix m*n values (R on and above the diagonal, reflector j below it in column j)
     then min(m, n) taus. Q = H_0 ... H_{k-1}, H_j = I - tau_j v_j v_j^T.
   - aotc_householder_product: q [batch, m, cols], the first cols columns of Q from the
     reflectors v [batch, m, ldv] (column j, j < k <= ldv) and tau [batch, k].
   - aotc_ormqr: out [batch, m, n] = Q c (left), c Q (right), or with Q^T (trans), Q from
     the reflectors v [batch, left ? m : n, k] and tau [batch, k].
   - aotc_eigh: eigenvalues and eigenvectors of each symmetric n x n matrix from its lower
     triangle (cyclic Jacobi in double); out holds per matrix the n eigenvalues ascending,
     then the n x n matrix whose column j is eigenvector j (unit length, its largest
     component positive).
   - aotc_svd (linalg_svd.cpp): singular values and vectors of each m x n matrix (one-sided
     Jacobi in double), k = min(m, n); out holds per matrix the k singular values descending,
     then with vectors U [m, full ? m : k] and Vh [full ? n : k, n], row-major (each left
     vector with its largest component positive, the right one signed to match).
   - aotc_eig (linalg_eig.cpp): eigenvalues and, with vectors, eigenvectors of each general
     (non-symmetric) n x n matrix (Hessenberg reduction and Francis double-shift QR to the
     real Schur form, in double); complex values as (re, im) pairs: out holds per matrix the
     n eigenvalues (in Schur-form order, a conjugate pair with its positive imaginary part
     first), then with vectors the n x n matrix whose column j is eigenvector j (unit norm,
     its largest component real and positive): 2 n values, 2 (n + n*n) with vectors. NaN
     everywhere for a matrix with a NaN or an infinity, or one that does not converge.
   - aotc_matrix_exp (linalg_expm.cpp): out [batch, n, n], the exponential of each n x n
     matrix (scaling and squaring of a Taylor polynomial, in double).
   - aotc_ldl_factor (linalg_ldl.cpp): Bunch-Kaufman LDL^T of each symmetric n x n matrix
     from its lower triangle as LAPACK's sytrf leaves it; out holds per matrix n*n values
     (L and the 1x1 / 2x2 blocks of D, zero above the diagonal), n 1-based pivots as values
     (a 2x2 block's two both -p), then info.
   - aotc_ldl_solve: x [batch, n, k] solving A x = b from A's LD [batch, n, n] and int32
     pivots [batch, n].
   x and out may not alias the inputs. */
#define AOTC_LU_EXTRA 4
#define AOTC_LINALG_DECLARE(suffix, T)                                                       \
  void aotc_lu_factor_##suffix(int64_t batch, int64_t m, int64_t n, const T *a, T *out);     \
  void aotc_lu_solve_##suffix(int64_t batch, int64_t n, int64_t k, int32_t adjoint,         \
                              const T *lu, const int32_t *pivots, const T *b, T *x);        \
  void aotc_cholesky_##suffix(int64_t batch, int64_t n, const T *a, T *out);                 \
  void aotc_triangular_solve_##suffix(int64_t batch, int64_t n, int64_t k, int32_t lower,   \
                                      int32_t trans, int32_t unit, const T *a, const T *b,  \
                                      T *x);                                                \
  void aotc_lu_permutation_##suffix(int64_t batch, int64_t m, int64_t k,                    \
                                    const int32_t *pivots, T *p);                           \
  void aotc_geqrf_##suffix(int64_t batch, int64_t m, int64_t n, const T *a, T *out);         \
  void aotc_eigh_##suffix(int64_t batch, int64_t n, const T *a, T *out);                     \
  void aotc_svd_##suffix(int64_t batch, int64_t m, int64_t n, int32_t full, int32_t vectors, \
                         const T *a, T *out);                                                \
  void aotc_eig_##suffix(int64_t batch, int64_t n, int32_t vectors, const T *a, T *out);     \
  void aotc_matrix_exp_##suffix(int64_t batch, int64_t n, const T *a, T *out);               \
  void aotc_ldl_factor_##suffix(int64_t batch, int64_t n, const T *a, T *out);               \
  void aotc_ldl_solve_##suffix(int64_t batch, int64_t n, int64_t k, const T *ld,             \
                               const int32_t *pivots, const T *b, T *x);                    \
  void aotc_householder_product_##suffix(int64_t batch, int64_t m, int64_t cols, int64_t k, \
                                         int64_t ldv, const T *v, const T *tau, T *q);      \
  void aotc_ormqr_##suffix(int64_t batch, int64_t m, int64_t n, int64_t k, int32_t left,    \
                           int32_t trans, const T *v, const T *tau, const T *c, T *out);
AOTC_LINALG_DECLARE(f32, float)
AOTC_LINALG_DECLARE(f64, double)
/* complex64 (_c64) and complex128 (_c128) matrices as interleaved (real, imag) pairs of R:
   LU and its solves, Cholesky of a Hermitian matrix (A = L L^H), the triangular solves, the
   permutation matrix and the exponential. `trans` (`adjoint` of aotc_lu_solve) reads the
   matrix as it is (0), transposed (1) or conjugate-transposed (2: A^H; A^T when real).
   Pivots, info, the sign of det and log |det| are complex values with a zero imaginary part
   where they are real. Householder QR as LAPACK's zgeqrf / zungqr / zunmqr: H_j = I - tau_j
   v_j v_j^H with a complex tau and a real beta on R's diagonal; aotc_ormqr applies Q^H for a
   `trans` that is not 0. aotc_eigh: a Hermitian matrix from its lower triangle (complex
   Jacobi in complex<double>), the eigenvalues real (written as (value, 0)), each eigenvector
   with its largest component real and positive. */
#define AOTC_LINALG_COMPLEX_DECLARE(suffix, R)                                               \
  void aotc_lu_factor_##suffix(int64_t batch, int64_t m, int64_t n, const R *a, R *out);     \
  void aotc_lu_solve_##suffix(int64_t batch, int64_t n, int64_t k, int32_t trans,           \
                              const R *lu, const int32_t *pivots, const R *b, R *x);        \
  void aotc_cholesky_##suffix(int64_t batch, int64_t n, const R *a, R *out);                 \
  void aotc_triangular_solve_##suffix(int64_t batch, int64_t n, int64_t k, int32_t lower,   \
                                      int32_t trans, int32_t unit, const R *a, const R *b,  \
                                      R *x);                                                \
  void aotc_lu_permutation_##suffix(int64_t batch, int64_t m, int64_t k,                    \
                                    const int32_t *pivots, R *p);                           \
  void aotc_matrix_exp_##suffix(int64_t batch, int64_t n, const R *a, R *out);               \
  void aotc_geqrf_##suffix(int64_t batch, int64_t m, int64_t n, const R *a, R *out);         \
  void aotc_householder_product_##suffix(int64_t batch, int64_t m, int64_t cols, int64_t k, \
                                         int64_t ldv, const R *v, const R *tau, R *q);      \
  void aotc_ormqr_##suffix(int64_t batch, int64_t m, int64_t n, int64_t k, int32_t left,    \
                           int32_t trans, const R *v, const R *tau, const R *c, R *out);    \
  void aotc_eigh_##suffix(int64_t batch, int64_t n, const R *a, R *out);
AOTC_LINALG_COMPLEX_DECLARE(c64, float)
AOTC_LINALG_COMPLEX_DECLARE(c128, double)
/* complex matrices (pairs of R, as above) for the SVD and LDL:
   - aotc_svd_c64 / _c128: as aotc_svd, the singular values real (pairs with a zero
     imaginary part), Vh = V^H; each left vector of the tall orientation (U for m >= n,
     Vh^H for m < n) has its largest-magnitude component real and positive, the other one
     of its pair multiplied by the same unit factor.
   - aotc_ldl_factor_c64 / _c128, aotc_ldl_solve_c64 / _c128: as the real ones, of complex
     symmetric matrices (A = L D L^T, LAPACK's zsytf2 / zsytrs; pivoting on |re| + |im|)
     or with `hermitian` of Hermitian ones (A = L D L^H, zhetf2 / zhetrs: D's diagonal
     real, its 2x2 blocks Hermitian). Pivots and info are values with a zero imaginary
     part.
   - aotc_eig_c64 / _c128 (linalg_eig.cpp): as aotc_eig, of complex matrices (complex
     Hessenberg reduction and single-shift QR to the triangular Schur form, in
     complex<double>; the eigenvalues in the order they stand on its diagonal), the same
     output layout. */
#define AOTC_SVD_LDL_COMPLEX_DECLARE(suffix, R)                                              \
  void aotc_svd_##suffix(int64_t batch, int64_t m, int64_t n, int32_t full, int32_t vectors, \
                         const R *a, R *out);                                                \
  void aotc_ldl_factor_##suffix(int64_t batch, int64_t n, int32_t hermitian, const R *a,    \
                                R *out);                                                     \
  void aotc_ldl_solve_##suffix(int64_t batch, int64_t n, int64_t k, int32_t hermitian,      \
                               const R *ld, const int32_t *pivots, const R *b, R *x);       \
  void aotc_eig_##suffix(int64_t batch, int64_t n, int32_t vectors, const R *a, R *out);
AOTC_SVD_LDL_COMPLEX_DECLARE(c64, float)
AOTC_SVD_LDL_COMPLEX_DECLARE(c128, double)

/* Discrete Fourier transforms (fft.cpp) of each line of a contiguous tensor viewed as
   [outer, length, inner], along the middle, float32 (_f32) and float64 (_f64), a complex
   value being its (real, imag) pair: any length (mixed radix, Bluestein for large prime
   factors); each line on one thread. Every result is multiplied by 1 (AOTC_FFT_NORM_NONE),
   1/sqrt(norm_size) or 1/norm_size, torch's normalization codes.
   - aotc_fft_c2c: y [outer, n, inner] complex = the forward (exp(-2 pi i jk/n)) or, with
     inverse, the backward (exp(+2 pi i jk/n)) transform of x [outer, n, inner] complex.
   - aotc_fft_r2c: y [outer, out_n, inner] complex = the first out_n values (out_n <= n) of
     the forward transform of x [outer, n, inner] real.
   - aotc_fft_c2r: y [outer, n, inner] real = the backward transform of the Hermitian
     spectrum whose first n/2 + 1 values are those of x [outer, in_n, inner] complex (0
     past in_n; the imaginary parts at 0 and n/2 do not count).
   Returns 0, or 1 when out of memory for the scratch. y may not alias x. */
#define AOTC_FFT_NORM_NONE 0
#define AOTC_FFT_NORM_BY_SQRT_N 1
#define AOTC_FFT_NORM_BY_N 2
#define AOTC_FFT_DECLARE(suffix, T)                                                          \
  int aotc_fft_c2c_##suffix(int64_t outer, int64_t n, int64_t inner, int32_t inverse,       \
                            int32_t norm, int64_t norm_size, const T *x, T *y);             \
  int aotc_fft_r2c_##suffix(int64_t outer, int64_t n, int64_t inner, int64_t out_n,         \
                            int32_t norm, int64_t norm_size, const T *x, T *y);             \
  int aotc_fft_c2r_##suffix(int64_t outer, int64_t in_n, int64_t inner, int64_t n,          \
                            int32_t norm, int64_t norm_size, const T *x, T *y);
AOTC_FFT_DECLARE(f32, float)
AOTC_FFT_DECLARE(f64, double)

/* Sorting positions of each line of a contiguous tensor viewed as [outer, n, inner], along
   the middle: out[o, j, i] = position of the (first + j)-th element of line (o, i) in sorted
   order, j < count (out is [outer, count, inner]); NaN ranks above every number. The
   algorithm decides the order of equal values: stable, an unstable sort, the first `count`
   (sorted or not), or selection of the element at `first`. And binary search: out[r, j] =
   where values[r, j] goes in line r (or 0 when lines == 1) of `sorted` [lines, n], left or
   right of equal elements. One pair per element type: f32 f64 i64 i32 i16 i8 u8 b8 (bool). */
#define AOTC_SORT_STABLE 0
#define AOTC_SORT_UNSTABLE 1
#define AOTC_SORT_TOPK 2
#define AOTC_SORT_TOPK_UNSORTED 3
#define AOTC_SORT_SELECT 4
#define AOTC_SORT_MEDIAN 5
#define AOTC_SORT_NANMEDIAN 6
#define AOTC_SORT_MODE 7
#define AOTC_SORT_DECLARE(suffix, T)                                                          \
  void aotc_argsort_##suffix(int32_t algorithm, int64_t outer, int64_t n, int64_t inner,      \
                             int64_t first, int64_t count, int32_t descending, const T *x,    \
                             int64_t *out);                                                   \
  void aotc_searchsorted_##suffix(int64_t lines, int64_t n, int64_t rows, int64_t per_row,    \
                                  int32_t right, const T *sorted, const T *values, int64_t *out);
AOTC_SORT_DECLARE(f32, float)
AOTC_SORT_DECLARE(f64, double)
AOTC_SORT_DECLARE(i64, int64_t)
AOTC_SORT_DECLARE(i32, int32_t)
AOTC_SORT_DECLARE(i16, int16_t)
AOTC_SORT_DECLARE(i8, int8_t)
AOTC_SORT_DECLARE(u8, uint8_t)
#ifdef __cplusplus
AOTC_SORT_DECLARE(b8, bool)
#endif

/* int8 GEMM with int32 accumulation (gemm_int8.cpp): the integer core of quantized linear
   layers and of aten._int_mm. A constant B [K, N] int8 (element (k, n) at B + k*sb_k + n*sb_n)
   is packed once into aotc_qgemm_packed_bytes(K, N) bytes: K in groups of 4 rows (the
   groups padded to a multiple of 16, an AMX tile's depth), N in panels of 16 columns (all
   zero padded), packed[q][g][j][t] = B(4g + t, 16q + j), then the int32 column sums of B.
   Then
     C[m, n] = sum_k (A[m, k] - a_zero) * B[k, n]      (int32, exact)
   for A [M, K] of uint8 (a_signed = 0) or int8 (a_signed = 1) with row stride lda, C rows
   of stride ldc (or, with an epilogue, handed to it: see below). Multi-threaded with OpenMP; AMX-INT8 tiles where the CPU has them (for
   M >= 16), else vpdpbusd or widened products. */
int64_t aotc_qgemm_packed_bytes(int64_t K, int64_t N);
void aotc_qgemm_pack_b(int64_t K, int64_t N, const int8_t *B, int64_t sb_k, int64_t sb_n,
                       void *packed);
/* A fused epilogue of the int8 product: fn(ctx, acc, ld, row, col, rows, cols) gets the
   finished int32 sums of rows [row, row + rows) and columns [col, col + cols) and writes
   whatever the model computes from them (a requantized uint8, a float); C is not written.
   For aotc_qgemm_s32 (and aotc_qconv_s32 writing channels last), acc[r * ld + j] is
   C[row + r, col + j]; for aotc_qconv_s32 writing channels first the block is transposed,
   acc[j * ld + r] is output channel col + j at position row + r (row counts
   b * oh * ow + oy * ow + ox), and a block never spans two images. Blocks never overlap;
   several threads may run fn at once (on different blocks). */
typedef void (*aotc_qgemm_epilogue_fn)(const void *ctx, const int32_t *acc, int64_t ld,
                                       int64_t row, int64_t col, int64_t rows, int64_t cols);
typedef struct {
  aotc_qgemm_epilogue_fn fn;
  const void *ctx;
} aotc_qgemm_epilogue;
void aotc_qgemm_s32(int64_t M, int64_t N, int64_t K, const void *A, int64_t lda, int a_signed,
                    int32_t a_zero, const void *packed_b, int32_t *C, int64_t ldc,
                    const aotc_qgemm_epilogue *epilogue);
/* The same product for a convolution (one group), its A the patches of an 8-bit input X
   [batch, c, h, w] read in place: row m = (b, oy, ox) of the [batch, oh, ow] output, column
   k = (ci * kh + ky) * kw + kx, reading X[b, ci, oy*sh - ph + ky*dh, ox*sw - pw + kx*dw]
   (a_zero outside X); its B the weight [N, c, kh, kw] packed as [K, N] (sb_k 1, sb_n K),
   K = c*kh*kw, and C written channels first, [batch, N, oh, ow].
   geometry = {c, h, w, kh, kw, oh, ow, sh, sw, ph, pw, dh, dw, taps_major, x_last, c_last}.
   With taps_major, column k = (ky * kw + kx) * cp + ci instead, cp = c rounded up to a
   multiple of 4: X is copied channels last into `workspace` (batch*cp*h*w bytes; unused
   otherwise), or with x_last (c a multiple of 4) X is [batch, h, w, c] already and read in
   place, and each tap's cp bytes are copied whole. With c_last, C is written channels last,
   [batch, oh, ow, N] (row-major [M, N]); B then packed by aotc_qconv_pack_b with
   taps = kh*kw (K = c*taps), which packs taps*cp rows, row (tap, ci) from the weight's row
   ci * taps + tap (zero for ci >= c), as aotc_qgemm_packed_bytes(taps*cp, N) bytes.
   taps_major = 2 orders the columns by kernel rows padded to whole groups instead:
   k = (ci * kh + ky) * kwp + kx, kwp = kw rounded up to a multiple of 4, zero weights for
   kx >= kw (a group four neighbouring taps of one input row); B then packed by
   aotc_qconv_pack_b_rows with that kw, which packs c*kh*kwp rows, row (q, kx) from the
   weight's row q * kw + kx, as aotc_qgemm_packed_bytes(c*kh*kwp, N) bytes. */
void aotc_qconv_pack_b(int64_t K, int64_t N, int64_t taps, const int8_t *B, int64_t sb_k,
                       int64_t sb_n, void *packed);
void aotc_qconv_pack_b_rows(int64_t K, int64_t N, int64_t kw, const int8_t *B, int64_t sb_k,
                            int64_t sb_n, void *packed);
void aotc_qconv_s32(int64_t M, int64_t N, const void *X, const int64_t *geometry, int a_signed,
                    int32_t a_zero, const void *packed_b, int32_t *C, void *workspace,
                    const aotc_qgemm_epilogue *epilogue);

/* Weight-only quantized linear (gemm_wo.cpp), the dequantization in registers (from 16
   rows of x, a prefill, by float32 panels of at most 1 MB of the weight and aotc_sgemm):
     out[m, n] = sum_k x[m, k] * ((q[n, k] - zero[n, k / group]) * scale[n, k / group])
                 + bias[n]
   for x [M, K] float32 with row stride ldx, q [N, K] int8 contiguous (int4 values are held
   one per byte), scale and zero [N, ceil(K / group)] contiguous (zero may be null: all 0;
   a group of K or more, or 0, is one group per row), bias [N] or null, out rows of stride
   ldo. Multi-threaded over N with OpenMP. */
void aotc_gemm_wo_f32(int64_t M, int64_t N, int64_t K, const float *x, int64_t ldx,
                      const int8_t *q, int64_t group, const float *scale, const int8_t *zero,
                      const float *bias, float *out, int64_t ldo);

/* The same product on int4 weights stored two a byte (gemm_w4.cpp). aotc_wo_pack_int4
   writes q [N, K] int8 (values -8..7, K a multiple of 32) as N rows of K / 2 bytes: runs of
   32 values, byte j of a run holding value j + 8 in its low nibble and value 16 + j + 8 in
   its high nibble; it returns how many values lay outside -8..7 (stored wrapped: the caller
   must refuse them), or -1 for a K that is no multiple of 32. aotc_gemm_w4_f32 reads that
   layout, with `group` a multiple of 32 dividing K (0, or K or more: one group per row);
   the rest as aotc_gemm_wo_f32. */
int64_t aotc_wo_pack_int4(int64_t N, int64_t K, const int8_t *q, void *packed);
void aotc_gemm_w4_f32(int64_t M, int64_t N, int64_t K, const float *x, int64_t ldx,
                      const void *packed, int64_t group, const float *scale, const int8_t *zero,
                      const float *bias, float *out, int64_t ldo);

/* Scaled dot-product attention, single precision, without the [q_len, kv_len] score matrix:
     out[b, h, i, :] = sum_j softmax_j(s[i, :]) * v[b, h / group, j, :]
     s[i, j] = scale * (q[b, h, i, :] . k[b, h / group, j, :]), then the mask:
       AOTC_ATTENTION_MASK_ADD:  s[i, j] += mask[b, h, i, j]                    (float)
       AOTC_ATTENTION_MASK_BOOL: s[i, j] = fill where (mask[b, h, i, j] != 0) == fill_when
                                 (one byte per element; SDPA's bool mask: fill_when 0, -inf)
     and with `causal`, key j > query i is not seen (PyTorch's top-left causal mask).
   q, k, v and the mask are read through element strides (batch, head, position, dim), any of
   them 0 (broadcast); k and v have heads / group heads (grouped-query attention). A row
   that sees no key at all holds 0, or NaN with empty_rows_nan (softmax of only -inf).
   out is contiguous [batch, heads, q_len, v_dim]. Online softmax over blocks of keys;
   multi-threaded with OpenMP over (batch, head, query blocks); results do not depend on the
   thread count. Returns 0, or 1 when a thread could not allocate its key/value blocks.
   `probs` AOTC_ATTENTION_PROBS_F16 / _BF16 computes as PyTorch's CPU flash-attention kernel
   does for float16 / bfloat16 inputs (which it is given here widened to float): keys in
   blocks of 512, each block's exp(s - running max) by that kernel's fast exponential on
   whole vectors (the accurate one on a row's tail), summed in float, then rounded to the
   half type before it weights the values. AOTC_ATTENTION_PROBS_F32: float throughout. */
#define AOTC_ATTENTION_MASK_NONE 0
#define AOTC_ATTENTION_MASK_ADD 1
#define AOTC_ATTENTION_MASK_BOOL 2
#define AOTC_ATTENTION_PROBS_F32 0
#define AOTC_ATTENTION_PROBS_F16 1
#define AOTC_ATTENTION_PROBS_BF16 2
typedef struct {
  int64_t batch, heads, group, q_len, kv_len, head_dim, v_dim;
  int64_t q_strides[4], k_strides[4], v_strides[4], mask_strides[4];
  int64_t mask_kind, fill_when, causal, empty_rows_nan, probs;
  float scale, fill;
} aotc_attention_shape;

int aotc_attention_f32(const aotc_attention_shape *shape, const float *q, const float *k,
                       const float *v, const void *mask, float *out);

#ifdef __cplusplus
} /* extern "C" */

#include <complex>

/* The scans by element type, for generated code. */
namespace aotc {
inline void scan(int32_t op, int64_t outer, int64_t n, int64_t inner, const float *x, float *y) {
  aotc_scan_f32(op, outer, n, inner, x, y);
}
inline void scan(int32_t op, int64_t outer, int64_t n, int64_t inner, const double *x, double *y) {
  aotc_scan_f64(op, outer, n, inner, x, y);
}
inline void scan(int32_t op, int64_t outer, int64_t n, int64_t inner, const int64_t *x,
                 int64_t *y) {
  aotc_scan_i64(op, outer, n, inner, x, y);
}
inline void scan_positions(int32_t op, int64_t outer, int64_t n, int64_t inner, const float *x,
                           int64_t *y) {
  aotc_scan_index_f32(op, outer, n, inner, x, y);
}
inline void scan_positions(int32_t op, int64_t outer, int64_t n, int64_t inner, const double *x,
                           int64_t *y) {
  aotc_scan_index_f64(op, outer, n, inner, x, y);
}
inline void scan_positions(int32_t op, int64_t outer, int64_t n, int64_t inner,
                           const int64_t *x, int64_t *y) {
  aotc_scan_index_i64(op, outer, n, inner, x, y);
}

/* The dense linear algebra by element type, for generated code. */
#define AOTC_LINALG_OVERLOADS(suffix, T)                                                     \
  inline void lu_factor(int64_t batch, int64_t m, int64_t n, const T *a, T *out) {           \
    aotc_lu_factor_##suffix(batch, m, n, a, out);                                            \
  }                                                                                          \
  inline void lu_solve(int64_t batch, int64_t n, int64_t k, int32_t adjoint, const T *lu,   \
                       const int32_t *pivots, const T *b, T *x) {                            \
    aotc_lu_solve_##suffix(batch, n, k, adjoint, lu, pivots, b, x);                          \
  }                                                                                          \
  inline void cholesky(int64_t batch, int64_t n, const T *a, T *out) {                       \
    aotc_cholesky_##suffix(batch, n, a, out);                                                \
  }                                                                                          \
  inline void triangular_solve(int64_t batch, int64_t n, int64_t k, int32_t lower,          \
                               int32_t trans, int32_t unit, const T *a, const T *b, T *x) { \
    aotc_triangular_solve_##suffix(batch, n, k, lower, trans, unit, a, b, x);                \
  }                                                                                          \
  inline void lu_permutation(int64_t batch, int64_t m, int64_t k, const int32_t *pivots,    \
                             T *p) {                                                         \
    aotc_lu_permutation_##suffix(batch, m, k, pivots, p);                                    \
  }                                                                                          \
  inline void geqrf(int64_t batch, int64_t m, int64_t n, const T *a, T *out) {               \
    aotc_geqrf_##suffix(batch, m, n, a, out);                                                \
  }                                                                                          \
  inline void eigh(int64_t batch, int64_t n, const T *a, T *out) {                           \
    aotc_eigh_##suffix(batch, n, a, out);                                                    \
  }                                                                                          \
  inline void svd(int64_t batch, int64_t m, int64_t n, int32_t full, int32_t vectors,        \
                  const T *a, T *out) {                                                      \
    aotc_svd_##suffix(batch, m, n, full, vectors, a, out);                                   \
  }                                                                                          \
  inline void eig(int64_t batch, int64_t n, int32_t vectors, const T *a, T *out) {           \
    aotc_eig_##suffix(batch, n, vectors, a, out);                                            \
  }                                                                                          \
  inline void matrix_exp(int64_t batch, int64_t n, const T *a, T *out) {                     \
    aotc_matrix_exp_##suffix(batch, n, a, out);                                              \
  }                                                                                          \
  inline void ldl_factor(int64_t batch, int64_t n, const T *a, T *out) {                     \
    aotc_ldl_factor_##suffix(batch, n, a, out);                                              \
  }                                                                                          \
  inline void ldl_solve(int64_t batch, int64_t n, int64_t k, const T *ld,                    \
                        const int32_t *pivots, const T *b, T *x) {                           \
    aotc_ldl_solve_##suffix(batch, n, k, ld, pivots, b, x);                                  \
  }                                                                                          \
  inline void householder_product(int64_t batch, int64_t m, int64_t cols, int64_t k,        \
                                  int64_t ldv, const T *v, const T *tau, T *q) {             \
    aotc_householder_product_##suffix(batch, m, cols, k, ldv, v, tau, q);                    \
  }                                                                                          \
  inline void ormqr(int64_t batch, int64_t m, int64_t n, int64_t k, int32_t left,           \
                    int32_t trans, const T *v, const T *tau, const T *c, T *out) {           \
    aotc_ormqr_##suffix(batch, m, n, k, left, trans, v, tau, c, out);                        \
  }
AOTC_LINALG_OVERLOADS(f32, float)
AOTC_LINALG_OVERLOADS(f64, double)

/* Complex matrices: generated code passes its float buffers of pairs through as_complex. */
#define AOTC_LINALG_COMPLEX_OVERLOADS(suffix, R)                                             \
  inline std::complex<R> *as_complex(R *p) { return reinterpret_cast<std::complex<R> *>(p); } \
  inline const std::complex<R> *as_complex(const R *p) {                                     \
    return reinterpret_cast<const std::complex<R> *>(p);                                     \
  }                                                                                          \
  inline const R *pairs(const std::complex<R> *p) { return reinterpret_cast<const R *>(p); } \
  inline R *pairs(std::complex<R> *p) { return reinterpret_cast<R *>(p); }                   \
  inline void lu_factor(int64_t batch, int64_t m, int64_t n, const std::complex<R> *a,      \
                        std::complex<R> *out) {                                              \
    aotc_lu_factor_##suffix(batch, m, n, pairs(a), pairs(out));                              \
  }                                                                                          \
  inline void lu_solve(int64_t batch, int64_t n, int64_t k, int32_t trans,                   \
                       const std::complex<R> *lu, const int32_t *pivots,                     \
                       const std::complex<R> *b, std::complex<R> *x) {                       \
    aotc_lu_solve_##suffix(batch, n, k, trans, pairs(lu), pivots, pairs(b), pairs(x));       \
  }                                                                                          \
  inline void cholesky(int64_t batch, int64_t n, const std::complex<R> *a,                   \
                       std::complex<R> *out) {                                               \
    aotc_cholesky_##suffix(batch, n, pairs(a), pairs(out));                                  \
  }                                                                                          \
  inline void triangular_solve(int64_t batch, int64_t n, int64_t k, int32_t lower,          \
                               int32_t trans, int32_t unit, const std::complex<R> *a,       \
                               const std::complex<R> *b, std::complex<R> *x) {              \
    aotc_triangular_solve_##suffix(batch, n, k, lower, trans, unit, pairs(a), pairs(b),      \
                                   pairs(x));                                                \
  }                                                                                          \
  inline void lu_permutation(int64_t batch, int64_t m, int64_t k, const int32_t *pivots,    \
                             std::complex<R> *p) {                                           \
    aotc_lu_permutation_##suffix(batch, m, k, pivots, pairs(p));                             \
  }                                                                                          \
  inline void matrix_exp(int64_t batch, int64_t n, const std::complex<R> *a,                 \
                         std::complex<R> *out) {                                             \
    aotc_matrix_exp_##suffix(batch, n, pairs(a), pairs(out));                                \
  }                                                                                          \
  inline void geqrf(int64_t batch, int64_t m, int64_t n, const std::complex<R> *a,          \
                    std::complex<R> *out) {                                                  \
    aotc_geqrf_##suffix(batch, m, n, pairs(a), pairs(out));                                  \
  }                                                                                          \
  inline void householder_product(int64_t batch, int64_t m, int64_t cols, int64_t k,        \
                                  int64_t ldv, const std::complex<R> *v,                    \
                                  const std::complex<R> *tau, std::complex<R> *q) {         \
    aotc_householder_product_##suffix(batch, m, cols, k, ldv, pairs(v), pairs(tau),         \
                                      pairs(q));                                             \
  }                                                                                          \
  inline void ormqr(int64_t batch, int64_t m, int64_t n, int64_t k, int32_t left,           \
                    int32_t trans, const std::complex<R> *v, const std::complex<R> *tau,    \
                    const std::complex<R> *c, std::complex<R> *out) {                        \
    aotc_ormqr_##suffix(batch, m, n, k, left, trans, pairs(v), pairs(tau), pairs(c),        \
                        pairs(out));                                                         \
  }                                                                                          \
  inline void eigh(int64_t batch, int64_t n, const std::complex<R> *a,                      \
                   std::complex<R> *out) {                                                   \
    aotc_eigh_##suffix(batch, n, pairs(a), pairs(out));                                      \
  }
inline const int32_t *as_complex(const int32_t *p) { return p; }  /* pivots stay integers */
AOTC_LINALG_COMPLEX_OVERLOADS(c64, float)
AOTC_LINALG_COMPLEX_OVERLOADS(c128, double)

/* The complex SVD, LDL and eig (as_complex and pairs from above). */
#define AOTC_SVD_LDL_COMPLEX_OVERLOADS(suffix, R)                                            \
  inline void svd(int64_t batch, int64_t m, int64_t n, int32_t full, int32_t vectors,        \
                  const std::complex<R> *a, std::complex<R> *out) {                          \
    aotc_svd_##suffix(batch, m, n, full, vectors, pairs(a), pairs(out));                     \
  }                                                                                          \
  inline void ldl_factor(int64_t batch, int64_t n, int32_t hermitian,                        \
                         const std::complex<R> *a, std::complex<R> *out) {                   \
    aotc_ldl_factor_##suffix(batch, n, hermitian, pairs(a), pairs(out));                     \
  }                                                                                          \
  inline void ldl_solve(int64_t batch, int64_t n, int64_t k, int32_t hermitian,              \
                        const std::complex<R> *ld, const int32_t *pivots,                    \
                        const std::complex<R> *b, std::complex<R> *x) {                      \
    aotc_ldl_solve_##suffix(batch, n, k, hermitian, pairs(ld), pivots, pairs(b), pairs(x));  \
  }                                                                                          \
  inline void eig(int64_t batch, int64_t n, int32_t vectors, const std::complex<R> *a,       \
                  std::complex<R> *out) {                                                    \
    aotc_eig_##suffix(batch, n, vectors, pairs(a), pairs(out));                              \
  }
AOTC_SVD_LDL_COMPLEX_OVERLOADS(c64, float)
AOTC_SVD_LDL_COMPLEX_OVERLOADS(c128, double)

/* The Fourier transforms by element type, for generated code. */
#define AOTC_FFT_OVERLOADS(suffix, T)                                                        \
  inline int fft_c2c(int64_t outer, int64_t n, int64_t inner, int32_t inverse, int32_t norm, \
                     int64_t norm_size, const T *x, T *y) {                                  \
    return aotc_fft_c2c_##suffix(outer, n, inner, inverse, norm, norm_size, x, y);           \
  }                                                                                          \
  inline int fft_r2c(int64_t outer, int64_t n, int64_t inner, int64_t out_n, int32_t norm,   \
                     int64_t norm_size, const T *x, T *y) {                                  \
    return aotc_fft_r2c_##suffix(outer, n, inner, out_n, norm, norm_size, x, y);             \
  }                                                                                          \
  inline int fft_c2r(int64_t outer, int64_t in_n, int64_t inner, int64_t n, int32_t norm,    \
                     int64_t norm_size, const T *x, T *y) {                                  \
    return aotc_fft_c2r_##suffix(outer, in_n, inner, n, norm, norm_size, x, y);              \
  }
AOTC_FFT_OVERLOADS(f32, float)
AOTC_FFT_OVERLOADS(f64, double)
}  // namespace aotc
#endif

#endif /* AOTC_KERNELS_H */
