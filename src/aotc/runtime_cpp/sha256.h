// SHA-256 (FIPS 180-4) of a byte range, as lowercase hex: the digest the package records.
#ifndef AOTC_RUNTIME_SHA256_H
#define AOTC_RUNTIME_SHA256_H

#include <cstddef>
#include <cstdint>
#include <string>

namespace aotc_rt {

std::string sha256_hex(const uint8_t *data, size_t size);

}  // namespace aotc_rt

#endif
