// CRC-32 with zlib's polynomial (the zip format's checksum, and the chunked checksums the
// package records for model.so and weights.bin): carry-less multiplication folding where
// an x86-64 CPU has PCLMULQDQ, the CRC32 instructions where an aarch64 one has them,
// slicing-by-8 tables elsewhere. Equal to zlib's crc32() in all three.
#ifndef AOTC_RUNTIME_CRC32_H
#define AOTC_RUNTIME_CRC32_H

#include <cstddef>
#include <cstdint>

namespace aotc_rt {

// zlib's convention: crc32(crc32(0, a), b) is the CRC of a followed by b.
uint32_t crc32(uint32_t crc, const uint8_t *data, size_t size);

}  // namespace aotc_rt

#endif
