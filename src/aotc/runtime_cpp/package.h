// The .pt2 package as the C++ runtime reads it: the archive's bytes (a read-only mapping of
// the file, or the caller's buffer) and one model's verified entries, with the same checks
// as the Python loader (format version, model name, target CPU, chunked CRC-32s).
#ifndef AOTC_RUNTIME_PACKAGE_H
#define AOTC_RUNTIME_PACKAGE_H

#include <string>

#include "zip_reader.h"

namespace aotc_rt {

class Archive {
 public:
  static Archive map_file(const std::string &path);  // the whole file, mapped read-only
  static Archive borrow(const void *data, size_t size);
  Archive(Archive &&other) noexcept;
  Archive(const Archive &) = delete;
  Archive &operator=(const Archive &) = delete;
  Archive &operator=(Archive &&) = delete;
  ~Archive();
  const uint8_t *data() const { return data_; }
  size_t size() const { return size_; }
  const std::string &label() const { return label_; }

 private:
  Archive(const uint8_t *data, size_t size, bool mapped, std::string label);
  const uint8_t *data_;
  size_t size_;
  bool mapped_;
  std::string label_;
};

struct PackageModel {
  std::string name;
  Bytes library;  // model.so, inside the archive
  Bytes weights;  // weights.bin, inside the archive
};

// Verifies the package and the model's entries; `requested` NULL or "": the default model.
PackageModel open_model(const ZipReader &zip, const std::string &label, const char *requested);

}  // namespace aotc_rt

#endif
