// A reader of the package's own zip subset: the central directory, and the bytes of entries
// stored without compression (every entry the C++ runtime reads), zip64 included. No inflate.
#ifndef AOTC_RUNTIME_ZIP_READER_H
#define AOTC_RUNTIME_ZIP_READER_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace aotc_rt {

struct ZipEntry {
  std::string name;
  uint16_t method;  // 0: stored
  uint32_t crc32;
  uint64_t compressed_size;
  uint64_t size;
  uint64_t header_offset;
};

struct Bytes {
  const uint8_t *data;
  size_t size;
  std::string str() const { return std::string(reinterpret_cast<const char *>(data), size); }
};

class ZipReader {
 public:
  // `label` names the archive in error messages; the bytes must outlive the reader.
  ZipReader(const uint8_t *data, size_t size, std::string label);
  const ZipEntry *find(const std::string &name) const;
  const std::vector<ZipEntry> &entries() const { return entries_; }
  // The data of a stored entry (checked against the archive's bounds), without copying;
  // `check_crc` also verifies its zip CRC-32 (for small entries: the package records
  // chunked CRC-32s of the large ones, verified in parallel).
  Bytes stored(const std::string &name, bool check_crc) const;

 private:
  const uint8_t *data_;
  size_t size_;
  std::string label_;
  std::vector<ZipEntry> entries_;
};

}  // namespace aotc_rt

#endif
