// The tile shapes of the SGEMM micro-kernels, one set per compile target (AVX-512, AVX2+FMA,
// NEON, portable): MR x NR register tiles, B packed in panels NR columns wide and slices at
// most KC deep (the packed-B layout a prepacked weight must match: aotc_kernels.h), A in
// blocks of MC rows. gemm.cpp's micro-kernels (gemm_microkernels.h) are built on them, and
// conv.cpp reads a packed weight of one panel with them.
#ifndef AOTC_GEMM_PANELS_H
#define AOTC_GEMM_PANELS_H

#include <cstdint>

#if defined(__AVX2__) && defined(__FMA__)
#define AOTC_GEMM_AVX2 1
#else
#define AOTC_GEMM_AVX2 0
#endif
#if AOTC_GEMM_AVX2 && defined(__AVX512F__)
#define AOTC_GEMM_AVX512 1
#else
#define AOTC_GEMM_AVX512 0
#endif
#if defined(__aarch64__) && defined(__ARM_NEON)
#define AOTC_GEMM_NEON 1  // its micro-kernels: gemm_microkernels_neon.h, included at the end
#else
#define AOTC_GEMM_NEON 0
#endif

namespace aotc_gemm {

#if AOTC_GEMM_AVX512
// 12x32 keeps 24 of the 32 zmm registers as accumulators (two vectors per
// row), leaving room for the two B vectors and the broadcast A values. On
// Zen 4 it measured level with 14x32 and ahead of 8x48 and 6x64, which waste
// more work on the N = 16 and M = 8 edges.
constexpr int64_t MR = 12;
constexpr int64_t NR = 32;
// KC*NR*4 = 64 KiB: one B micro-panel, from L1 and L2 while it is swept over the
// A block. On Zen 5, 512 ran 5-13% faster than 256 (fewer passes over C, fewer
// slices), 192 slower, 768 the same.
constexpr int64_t KC = 512;
// MC*KC*4 = 144 KiB: the packed A block lives in L2.
constexpr int64_t MC = 144;
#elif AOTC_GEMM_NEON
// 6x16 keeps 24 of the 32 q registers as accumulators (four per row), four for a row of
// the B panel and two for the six A values, which the FMAs broadcast by lane. AVX2's
// panel, so the packed layout of a weight is one for both (16 wide, 512 deep).
constexpr int64_t MR = 6;
constexpr int64_t NR = 16;
// KC*NR*4 = 32 KiB: one B micro-panel within a 64 KiB L1 (Neoverse), half of a 32 KiB one.
constexpr int64_t KC = 512;
// MC*KC*4 = 144 KiB: the packed A block lives in L2 (512 KiB to 1 MiB per core).
constexpr int64_t MC = 144;
#else
// 6x16 uses 12 of the 16 ymm registers for accumulators, leaving room for
// two B vectors and one broadcast A value.
constexpr int64_t MR = 6;
constexpr int64_t NR = 16;
// KC*NR*4 = 32 KiB: one B micro-panel sits in L1 while it is swept over the A block
// (512 measured 1-4% ahead of 256).
constexpr int64_t KC = 512;
// MC*KC*4 = 144 KiB: the packed A block lives in L2.
constexpr int64_t MC = 144;
#endif

}  // namespace aotc_gemm

#endif
