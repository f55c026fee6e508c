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

/* batch == 1 convenience */
void aotc_sgemm(int64_t M, int64_t N, int64_t K,
                const float *A, int64_t sa_m, int64_t sa_k,
                const float *B, int64_t sb_k, int64_t sb_n,
                float *C, int64_t ldc,
                const float *bias, int64_t sbias_m, int64_t sbias_n,
                float alpha, float beta);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* AOTC_KERNELS_H */
