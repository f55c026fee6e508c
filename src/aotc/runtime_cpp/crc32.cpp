// CRC-32 (reflected, polynomial 0xEDB88320). The folding path keeps four 128-bit lanes of
// the message and folds each 64 bytes ahead with carry-less products by x^(512±32) mod P;
// at the end the lanes fold into one, whose CRC (from a zero state, by table) continues
// over the last bytes: the same value a Barrett reduction would give, with less code.
#include "crc32.h"

#include <cstring>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define AOTC_CRC_FOLDING 1
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

// the register over `size` >= 64 bytes
__attribute__((target("pclmul,sse4.1"))) uint32_t by_folding(uint32_t c, const uint8_t *p,
                                                               size_t size) {
  const __m128i k512 = _mm_set_epi64x(0x1c6e41596, 0x154442bd4);  // x^(512-32), x^(512+32)
  const __m128i k128 = _mm_set_epi64x(0x0ccaa009e, 0x1751997d0);  // x^(128-32), x^(128+32)
  auto load = [](const uint8_t *q) { return _mm_loadu_si128(reinterpret_cast<const __m128i *>(q)); };
  __m128i x0 = _mm_xor_si128(load(p), _mm_cvtsi32_si128(int(c)));
  __m128i x1 = load(p + 16), x2 = load(p + 32), x3 = load(p + 48);
  p += 64;
  size -= 64;
  for (; size >= 64; p += 64, size -= 64) {
    x0 = _mm_xor_si128(fold(x0, k512), load(p));
    x1 = _mm_xor_si128(fold(x1, k512), load(p + 16));
    x2 = _mm_xor_si128(fold(x2, k512), load(p + 32));
    x3 = _mm_xor_si128(fold(x3, k512), load(p + 48));
  }
  __m128i x = _mm_xor_si128(fold(x0, k128), x1);
  x = _mm_xor_si128(fold(x, k128), x2);
  x = _mm_xor_si128(fold(x, k128), x3);
  for (; size >= 16; p += 16, size -= 16) x = _mm_xor_si128(fold(x, k128), load(p));
  uint8_t lane[16];
  _mm_storeu_si128(reinterpret_cast<__m128i *>(lane), x);
  return by_table(by_table(0, lane, 16), p, size);
}

bool has_folding() {
  static const bool yes = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
  }();
  return yes;
}
#endif

}  // namespace

uint32_t crc32(uint32_t crc, const uint8_t *data, size_t size) {
  uint32_t c = ~crc;
#ifdef AOTC_CRC_FOLDING
  if (size >= 64 && has_folding()) return ~by_folding(c, data, size);
#endif
  return ~by_table(c, data, size);
}

}  // namespace aotc_rt
