// Reads the central directory and stored entries of a .pt2 archive (the subset of zip that
// aotc writes for what a loader needs, zip64 included); anything else is refused with a message.
#include "zip_reader.h"

#include "crc32.h"
#include "failure.h"

namespace aotc_rt {
namespace {

constexpr uint32_t kEndSignature = 0x06054b50;
constexpr uint32_t kCentralSignature = 0x02014b50;
constexpr uint32_t kLocalSignature = 0x04034b50;
constexpr uint32_t kEnd64Signature = 0x06064b50, kLocator64Signature = 0x07064b50;
constexpr size_t kEndSize = 22, kCentralSize = 46, kLocalSize = 30;
constexpr size_t kEnd64Size = 56, kLocator64Size = 20;
constexpr uint16_t kZip64ExtraId = 0x0001;

uint16_t u16(const uint8_t *p) { return uint16_t(p[0] | p[1] << 8); }
uint32_t u32(const uint8_t *p) { return uint32_t(u16(p)) | uint32_t(u16(p + 2)) << 16; }
uint64_t u64(const uint8_t *p) { return uint64_t(u32(p)) | uint64_t(u32(p + 4)) << 32; }

// The zip64 extra field of a central directory entry holds, in this order, the sizes and
// the header offset whose 32-bit fields are saturated (0xFFFFFFFF), and only those; false
// when a saturated field finds no value there.
bool read_zip64_extra(const uint8_t *extra, size_t len, ZipEntry *e) {
  uint64_t *fields[] = {&e->size, &e->compressed_size, &e->header_offset};
  for (size_t at = 0; at + 4 <= len;) {
    const uint16_t id = u16(extra + at), size = u16(extra + at + 2);
    if (at + 4 + size > len) break;
    if (id == kZip64ExtraId) {
      const uint8_t *p = extra + at + 4, *stop = p + size;
      for (uint64_t *field : fields) {
        if (*field != 0xFFFFFFFFu) continue;
        if (p + 8 > stop) return false;
        *field = u64(p);
        p += 8;
      }
      return true;
    }
    at += 4 + size;
  }
  for (const uint64_t *field : fields)
    if (*field == 0xFFFFFFFFu) return false;
  return true;
}

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
  uint64_t count = u16(e + 10), dir_size = u32(e + 12), dir_offset = u32(e + 16);
  uint64_t dir_end = end;  // where the directory must stop: the first end record
  // zip64 (an archive past 4 GB, or one whose writer chose it): the locator right before
  // the end record points at the zip64 end record, whose fields are 64-bit
  if (end >= kLocator64Size && u32(data_ + end - kLocator64Size) == kLocator64Signature) {
    const uint64_t at = u64(data_ + end - kLocator64Size + 8);
    if (at > end - kLocator64Size || end - kLocator64Size - at < kEnd64Size ||
        u32(data_ + at) != kEnd64Signature)
      fail_package(label_, "is corrupt (its zip64 end record is missing or misplaced)");
    const uint8_t *e64 = data_ + at;
    count = u64(e64 + 32);
    dir_size = u64(e64 + 40);
    dir_offset = u64(e64 + 48);
    dir_end = at;
  } else if (count == 0xFFFF || dir_offset == 0xFFFFFFFFu || dir_size == 0xFFFFFFFFu) {
    fail_package(label_, "is corrupt (its end record needs a zip64 end record, and there is none)");
  }
  if (dir_offset > dir_end || dir_size > dir_end - dir_offset)
    fail_package(label_, "is truncated or corrupt (the zip directory lies outside the file)");
  // each directory entry takes at least kCentralSize bytes: a larger count is damage
  if (count > dir_size / kCentralSize)
    fail_package(label_, "is corrupt (its zip directory holds fewer entries than it claims)");
  uint64_t pos = dir_offset;
  entries_.reserve(size_t(count));
  for (uint64_t k = 0; k < count; ++k) {
    if (pos + kCentralSize > dir_end || u32(data_ + pos) != kCentralSignature)
      fail_package(label_, "is corrupt (bad zip directory entry " + std::to_string(k) + ")");
    const uint8_t *c = data_ + pos;
    const size_t name_len = u16(c + 28), extra_len = u16(c + 30), comment_len = u16(c + 32);
    if (pos + kCentralSize + name_len + extra_len > dir_end)
      fail_package(label_, "is corrupt (a zip entry name runs past the directory)");
    ZipEntry entry{std::string(reinterpret_cast<const char *>(c + kCentralSize), name_len),
                   u16(c + 10), u32(c + 16), u32(c + 20), u32(c + 24), u32(c + 42)};
    if (!read_zip64_extra(c + kCentralSize + name_len, extra_len, &entry))
      fail_package(label_, "is corrupt (entry " + entry.name + " lacks the zip64 sizes its "
                   "directory entry calls for)");
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
  if (h > size_ || size_ - h < kLocalSize || u32(data_ + h) != kLocalSignature)
    fail_package(label_, "bad local header for " + name);
  const uint64_t start = h + kLocalSize + u16(data_ + h + 26) + u16(data_ + h + 28);
  if (start > size_ || e->size > size_ - start) fail_package(label_, name + " is truncated");
  Bytes bytes{data_ + start, size_t(e->size)};
  if (check_crc && crc32(0, bytes.data, bytes.size) != e->crc32)
    fail_package(label_, "entry " + name + " is corrupt (CRC-32 mismatch)");
  return bytes;
}

}  // namespace aotc_rt
