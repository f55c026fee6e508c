// The package checksum (aotc_crc32 of checksum.cpp, the C++ runtime's crc32.cpp) against a
// bit-at-a-time CRC-32: every length up to 300 at every alignment (the instruction path and
// the byte tail), continued CRCs, a large buffer, and the standard check value.
#include <cstring>
#include <string>
#include <vector>

#include "aotc_abi.h"
#include "check.h"

namespace {

uint32_t bitwise(uint32_t crc, const uint8_t *p, size_t n) {
    uint32_t c = ~crc;
    for (size_t i = 0; i < n; ++i) {
        c ^= p[i];
        for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
    }
    return ~c;
}

}  // namespace

int main() {
    const char *digits = "123456789";
    check::expect(aotc_crc32(0, digits, 9) == 0xCBF43926u, "crc32 check value of 123456789");
    std::vector<uint8_t> data(1 << 20);
    uint32_t s = 12345;
    for (uint8_t &b : data) s = s * 1664525u + 1013904223u, b = uint8_t(s >> 24);
    bool lengths = true;
    for (size_t offset = 0; offset < 8; ++offset)
        for (size_t n = 0; n <= 300; ++n)
            lengths = lengths && aotc_crc32(7, data.data() + offset, n) == bitwise(7, data.data() + offset, n);
    check::expect(lengths, "crc32 of lengths 0..300 at offsets 0..7");
    const uint32_t whole = aotc_crc32(0, data.data(), data.size());
    check::expect(whole == bitwise(0, data.data(), data.size()), "crc32 of 1 MiB");
    const uint32_t first = aotc_crc32(0, data.data(), 1000);
    check::expect(aotc_crc32(first, data.data() + 1000, data.size() - 1000) == whole,
                  "crc32 continued over a split");
    return check::finish();
}
