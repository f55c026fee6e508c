// Reads the central directory and stored entries of a .pt2 archive (the subset of zip that
// aotc writes for what a loader needs); anything else is refused with a message.
#include "zip_reader.h"

#include "crc32.h"
#include "failure.h"

namespace aotc_rt {
namespace {

constexpr uint32_t kEndSignature = 0x06054b50;
constexpr uint32_t kCentralSignature = 0x02014b50;
constexpr uint32_t kLocalSignature = 0x04034b50;
constexpr size_t kEndSize = 22, kCentralSize = 46, kLocalSize = 30;

uint16_t u16(const uint8_t *p) { return uint16_t(p[0] | p[1] << 8); }
uint32_t u32(const uint8_t *p) { return uint32_t(u16(p)) | uint32_t(u16(p + 2)) << 16; }

}  // namespace

ZipReader::ZipReader(const uint8_t *data, size_t size, std::string label)
    : data_(data), size_(size), label_(std::move(label)) {
  const char *not_zip = "is not a valid .pt2 package (not a zip archive)";
  if (size_ < kEndSize) fail_package(label_, not_zip);
  // the end record sits in the last 22 bytes plus at most a 65535-byte comment
  size_t end = size_ - kEndSize;
  const size_t lowest = size_ > kEndSize + 65535 ? size_ - kEndSize - 65535 : 0;
  while (u32(data_ + end) != kEndSignature) {
    if (end == lowest) fail_package(label_, not_zip);
    --end;
  }
  const uint8_t *e = data_ + end;
  const uint16_t count = u16(e + 10);
  const uint32_t dir_size = u32(e + 12), dir_offset = u32(e + 16);
  if (count == 0xFFFF || dir_offset == 0xFFFFFFFFu)
    fail_package(label_, "is a zip64 archive; the C++ runtime reads packages under 4 GB");
  if (uint64_t(dir_offset) + dir_size > end)
    fail_package(label_, "is truncated or corrupt (the zip directory lies outside the file)");
  size_t pos = dir_offset;
  entries_.reserve(count);
  for (uint16_t k = 0; k < count; ++k) {
    if (pos + kCentralSize > end || u32(data_ + pos) != kCentralSignature)
      fail_package(label_, "is corrupt (bad zip directory entry " + std::to_string(k) + ")");
    const uint8_t *c = data_ + pos;
    const size_t name_len = u16(c + 28), extra_len = u16(c + 30), comment_len = u16(c + 32);
    if (pos + kCentralSize + name_len > end)
      fail_package(label_, "is corrupt (a zip entry name runs past the directory)");
    ZipEntry entry{std::string(reinterpret_cast<const char *>(c + kCentralSize), name_len),
                   u16(c + 10), u32(c + 16), u32(c + 20), u32(c + 24), u32(c + 42)};
    if (entry.compressed_size == 0xFFFFFFFFu || entry.size == 0xFFFFFFFFu ||
        entry.header_offset == 0xFFFFFFFFu)
      fail_package(label_, "entry " + entry.name + " uses zip64; the C++ runtime reads packages "
                   "under 4 GB");
    entries_.push_back(std::move(entry));
    pos += kCentralSize + name_len + extra_len + comment_len;
  }
}

const ZipEntry *ZipReader::find(const std::string &name) const {
  for (const ZipEntry &e : entries_)
    if (e.name == name) return &e;
  return nullptr;
}

Bytes ZipReader::stored(const std::string &name, bool check_crc) const {
  const ZipEntry *e = find(name);
  if (!e) fail_package(label_, "is missing " + name);
  if (e->method != 0)
    fail_package(label_, name + " is compressed; the C++ runtime reads stored entries only "
                 "(rebuild the package with this aotc)");
  if (e->compressed_size != e->size)
    fail_package(label_, name + " is corrupt (stored sizes disagree)");
  const uint64_t h = e->header_offset;
  if (h + kLocalSize > size_ || u32(data_ + h) != kLocalSignature)
    fail_package(label_, "bad local header for " + name);
  const uint64_t start = h + kLocalSize + u16(data_ + h + 26) + u16(data_ + h + 28);
  if (start + e->size > size_) fail_package(label_, name + " is truncated");
  Bytes bytes{data_ + start, size_t(e->size)};
  if (check_crc && crc32(0, bytes.data, bytes.size) != e->crc32)
    fail_package(label_, "entry " + name + " is corrupt (CRC-32 mismatch)");
  return bytes;
}

}  // namespace aotc_rt
