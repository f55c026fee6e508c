// The fp32 FMA peak of the ISA this file is compiled for: independent register-only
// multiply-adds (no loads), enough chains to cover the FMA latency on every port.
// Built by benchmarks/gemm.py beside the GEMM kernel, once per -march level.
#include <cstdint>

#ifdef _OPENMP
#include <omp.h>
#endif
#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#endif

namespace {

// Enough independent chains to cover FMA latency (4-5 cycles) on 2 ports, few enough to
// stay in registers beside the two constants (32 zmm, 16 ymm).
#if defined(__AVX512F__)
constexpr int kChains = 16;
#else
constexpr int kChains = 12;
#endif

// Runs `iters` steps of kChains multiply-adds; returns a value that depends on all of
// them so the compiler keeps the loop.
float fma_loop(int64_t iters) {
#if defined(__AVX512F__)
    __m512 acc[kChains];
    for (int i = 0; i < kChains; ++i) acc[i] = _mm512_set1_ps(float(i) * 1e-3f);
    const __m512 x = _mm512_set1_ps(0.999999f), y = _mm512_set1_ps(1e-7f);
    for (int64_t n = 0; n < iters; ++n)
#pragma GCC unroll 16
        for (int i = 0; i < kChains; ++i) acc[i] = _mm512_fmadd_ps(acc[i], x, y);
    __m512 s = acc[0];
    for (int i = 1; i < kChains; ++i) s = _mm512_add_ps(s, acc[i]);
    return _mm512_reduce_add_ps(s);
#elif defined(__AVX2__) && defined(__FMA__)
    __m256 acc[kChains];
    for (int i = 0; i < kChains; ++i) acc[i] = _mm256_set1_ps(float(i) * 1e-3f);
    const __m256 x = _mm256_set1_ps(0.999999f), y = _mm256_set1_ps(1e-7f);
    for (int64_t n = 0; n < iters; ++n)
#pragma GCC unroll 16
        for (int i = 0; i < kChains; ++i) acc[i] = _mm256_fmadd_ps(acc[i], x, y);
    __m256 s = acc[0];
    for (int i = 1; i < kChains; ++i) s = _mm256_add_ps(s, acc[i]);
    float out[8];
    _mm256_storeu_ps(out, s);
    return out[0] + out[1] + out[2] + out[3] + out[4] + out[5] + out[6] + out[7];
#else
    float acc[kChains][4];
    for (int i = 0; i < kChains; ++i)
        for (int j = 0; j < 4; ++j) acc[i][j] = float(i) * 1e-3f;
    for (int64_t n = 0; n < iters; ++n)
        for (int i = 0; i < kChains; ++i)
            for (int j = 0; j < 4; ++j) acc[i][j] = acc[i][j] * 0.999999f + 1e-7f;
    float s = 0.0f;
    for (int i = 0; i < kChains; ++i)
        for (int j = 0; j < 4; ++j) s += acc[i][j];
    return s;
#endif
}

}  // namespace

extern "C" {

// Floats per vector of this build (flops per step = 2 * kChains * lanes).
int64_t bench_fma_lanes() {
#if defined(__AVX512F__)
    return 16;
#elif defined(__AVX2__) && defined(__FMA__)
    return 8;
#else
    return 4;
#endif
}

int64_t bench_fma_chains() { return kChains; }

// Runs the loop on `threads` threads at once (each `iters` steps); returns a checksum.
float bench_fma_run(int64_t iters, int threads) {
    float total = 0.0f;
#ifdef _OPENMP
#pragma omp parallel num_threads(threads) reduction(+ : total)
    total += fma_loop(iters);
#else
    (void)threads;
    total = fma_loop(iters);
#endif
    return total;
}

}  // extern "C"
