// The package's chunked CRC-32 (zlib's polynomial), exported from every model library so the
// Python runtime checks weights.bin at the C++ runtime's speed (carry-less multiplication
// folding, chosen by CPUID at run time) rather than zlib's. One implementation: the C++
// runtime's own, compiled here as a shipped kernel.
#include "../runtime_cpp/crc32.cpp"

#include "aotc_abi.h"

extern "C" uint32_t aotc_crc32(uint32_t crc, const void *data, size_t size) {
  return aotc_rt::crc32(crc, static_cast<const uint8_t *>(data), size);
}
