// CRC-32 (reflected, polynomial 0xEDB88320). The folding path keeps four 128-bit lanes of
// the message and folds each 64 bytes ahead with carry-less products by x^(512±32) mod P
// (with VPCLMULQDQ: four 512-bit lanes, 256 bytes ahead, by x^(2048±32) mod P); at the end
// the lanes fold into one, whose CRC (from a zero state, by table) continues over the last
// bytes: the same value a Barrett reduction would give, with less code. Each constant is
// bit-reflect(x^n mod P) << 1. On aarch64, the CRC32 instructions where the CPU has them.
#include "crc32.h"

#include <cstring>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define AOTC_CRC_FOLDING 1
#endif
#if defined(__aarch64__) && defined(__linux__) && (defined(__GNUC__) || defined(__clang__))
#include <arm_acle.h>
#include <sys/auxv.h>
#define AOTC_CRC_ARM 1
#endif

namespace aotc_rt {
namespace {

struct Tables {
  uint32_t t[8][256];
  Tables() {
    for (uint32_t n = 0; n < 256; ++n) {
      uint32_t c = n;
      for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
      t[0][n] = c;
    }
    for (uint32_t n = 0; n < 256; ++n)
      for (int s = 1; s < 8; ++s) t[s][n] = (t[s - 1][n] >> 8) ^ t[0][t[s - 1][n] & 0xFF];
  }
};

const Tables &tables() {
  static const Tables tables;
  return tables;
}

// the register (not inverted) over `size` bytes: slicing-by-8
uint32_t by_table(uint32_t c, const uint8_t *p, size_t size) {
  const auto &t = tables().t;
  while (size >= 8) {
    uint32_t lo, hi;
    memcpy(&lo, p, 4);
    memcpy(&hi, p + 4, 4);
    lo ^= c;  // little-endian: the x86-64 and aarch64 Linux this runtime targets
    c = t[7][lo & 0xFF] ^ t[6][(lo >> 8) & 0xFF] ^ t[5][(lo >> 16) & 0xFF] ^ t[4][lo >> 24] ^
        t[3][hi & 0xFF] ^ t[2][(hi >> 8) & 0xFF] ^ t[1][(hi >> 16) & 0xFF] ^ t[0][hi >> 24];
    p += 8;
    size -= 8;
  }
  while (size--) c = (c >> 8) ^ t[0][(c ^ *p++) & 0xFF];
  return c;
}

#ifdef AOTC_CRC_FOLDING
__attribute__((target("pclmul,sse4.1"))) inline __m128i fold(__m128i x, __m128i k) {
  return _mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00), _mm_clmulepi64_si128(x, k, 0x11));
}

constexpr long long kFold512Lo = 0x154442bd4, kFold512Hi = 0x1c6e41596;  // x^(512±32)
constexpr long long kFold128Lo = 0x1751997d0, kFold128Hi = 0x0ccaa009e;  // x^(128±32)
constexpr long long kFold2048Lo = 0x11542778a, kFold2048Hi = 0x1322d1430;  // x^(2048±32)

__attribute__((target("pclmul,sse4.1"))) inline __m128i load16(const uint8_t *q) {
  return _mm_loadu_si128(reinterpret_cast<const __m128i *>(q));
}

// one 128-bit lane `x` left after the 64-byte blocks: fold the remaining 16-byte blocks
// into it, then finish by table
__attribute__((target("pclmul,sse4.1"))) uint32_t finish(__m128i x, const uint8_t *p, size_t size) {
  const __m128i k128 = _mm_set_epi64x(kFold128Hi, kFold128Lo);
  for (; size >= 16; p += 16, size -= 16) x = _mm_xor_si128(fold(x, k128), load16(p));
  uint8_t lane[16];
  _mm_storeu_si128(reinterpret_cast<__m128i *>(lane), x);
  return by_table(by_table(0, lane, 16), p, size);
}

__attribute__((target("pclmul,sse4.1"))) __m128i fold4(__m128i x0, __m128i x1, __m128i x2,
                                                        __m128i x3) {
  const __m128i k128 = _mm_set_epi64x(kFold128Hi, kFold128Lo);
  __m128i x = _mm_xor_si128(fold(x0, k128), x1);
  x = _mm_xor_si128(fold(x, k128), x2);
  return _mm_xor_si128(fold(x, k128), x3);
}

// the register over `size` >= 64 bytes
__attribute__((target("pclmul,sse4.1"))) uint32_t by_folding(uint32_t c, const uint8_t *p,
                                                               size_t size) {
  const __m128i k512 = _mm_set_epi64x(kFold512Hi, kFold512Lo);
  __m128i x0 = _mm_xor_si128(load16(p), _mm_cvtsi32_si128(int(c)));
  __m128i x1 = load16(p + 16), x2 = load16(p + 32), x3 = load16(p + 48);
  p += 64;
  size -= 64;
  for (; size >= 64; p += 64, size -= 64) {
    x0 = _mm_xor_si128(fold(x0, k512), load16(p));
    x1 = _mm_xor_si128(fold(x1, k512), load16(p + 16));
    x2 = _mm_xor_si128(fold(x2, k512), load16(p + 32));
    x3 = _mm_xor_si128(fold(x3, k512), load16(p + 48));
  }
  return finish(fold4(x0, x1, x2, x3), p, size);
}

#define AOTC_WIDE "avx512f,avx512bw,avx512vl,vpclmulqdq,pclmul,sse4.1"

__attribute__((target(AOTC_WIDE))) inline __m512i fold_wide(__m512i x, __m512i k) {
  return _mm512_xor_si512(_mm512_clmulepi64_epi128(x, k, 0x00),
                          _mm512_clmulepi64_epi128(x, k, 0x11));
}

// the register over `size` >= 256 bytes, 64 bytes per 512-bit lane
__attribute__((target(AOTC_WIDE))) uint32_t by_wide_folding(uint32_t c, const uint8_t *p,
                                                             size_t size) {
  const __m512i k2048 = _mm512_set_epi64(kFold2048Hi, kFold2048Lo, kFold2048Hi, kFold2048Lo,
                                         kFold2048Hi, kFold2048Lo, kFold2048Hi, kFold2048Lo);
  const __m512i k512 = _mm512_set_epi64(kFold512Hi, kFold512Lo, kFold512Hi, kFold512Lo,
                                        kFold512Hi, kFold512Lo, kFold512Hi, kFold512Lo);
  __m512i x0 = _mm512_xor_si512(_mm512_loadu_si512(p),
                                _mm512_zextsi128_si512(_mm_cvtsi32_si128(int(c))));
  __m512i x1 = _mm512_loadu_si512(p + 64), x2 = _mm512_loadu_si512(p + 128);
  __m512i x3 = _mm512_loadu_si512(p + 192);
  p += 256;
  size -= 256;
  for (; size >= 256; p += 256, size -= 256) {
    x0 = _mm512_xor_si512(fold_wide(x0, k2048), _mm512_loadu_si512(p));
    x1 = _mm512_xor_si512(fold_wide(x1, k2048), _mm512_loadu_si512(p + 64));
    x2 = _mm512_xor_si512(fold_wide(x2, k2048), _mm512_loadu_si512(p + 128));
    x3 = _mm512_xor_si512(fold_wide(x3, k2048), _mm512_loadu_si512(p + 192));
  }
  __m512i x = _mm512_xor_si512(fold_wide(x0, k512), x1);
  x = _mm512_xor_si512(fold_wide(x, k512), x2);
  x = _mm512_xor_si512(fold_wide(x, k512), x3);
  for (; size >= 64; p += 64, size -= 64)
    x = _mm512_xor_si512(fold_wide(x, k512), _mm512_loadu_si512(p));
  uint8_t lanes[64];
  _mm512_storeu_si512(lanes, x);
  return finish(fold4(load16(lanes), load16(lanes + 16), load16(lanes + 32), load16(lanes + 48)),
                p, size);
}

// 0: tables, 1: 128-bit folding, 2: 512-bit folding
int folding_width() {
  static const int width = [] {
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("pclmul") || !__builtin_cpu_supports("sse4.1")) return 0;
    return __builtin_cpu_supports("vpclmulqdq") && __builtin_cpu_supports("avx512f") &&
           __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") ? 2 : 1;
  }();
  return width;
}
#endif

#ifdef AOTC_CRC_ARM
// The register over `size` bytes by the CRC32 instructions: zlib's polynomial (crc32x and
// crc32b, not the crc32c ones), 8 bytes a step. Optional before Armv8.1, so compiled for
// that feature alone and chosen at run time.
__attribute__((target("+crc"))) uint32_t by_instructions(uint32_t c, const uint8_t *p,
                                                         size_t size) {
  for (; size >= 8; p += 8, size -= 8) {
    uint64_t v;
    memcpy(&v, p, 8);
    c = __crc32d(c, v);
  }
  while (size--) c = __crc32b(c, *p++);
  return c;
}

bool has_crc_instructions() {
  static const bool has = (getauxval(AT_HWCAP) & HWCAP_CRC32) != 0;
  return has;
}
#endif

}  // namespace

uint32_t crc32(uint32_t crc, const uint8_t *data, size_t size) {
  uint32_t c = ~crc;
#ifdef AOTC_CRC_FOLDING
  const int width = size >= 64 ? folding_width() : 0;
  if (width == 2 && size >= 256) return ~by_wide_folding(c, data, size);
  if (width >= 1) return ~by_folding(c, data, size);
#endif
#ifdef AOTC_CRC_ARM
  if (size >= 16 && has_crc_instructions()) return ~by_instructions(c, data, size);
#endif
  return ~by_table(c, data, size);
}

}  // namespace aotc_rt
