// A model library loaded from bytes without writing it anywhere persistent (memfd_create +
// dlopen of /proc/self/fd/N on Linux; elsewhere a private temp file removed at once), and
// the table of its C ABI entry points.
#ifndef AOTC_RUNTIME_LIBRARY_H
#define AOTC_RUNTIME_LIBRARY_H

#include <cstddef>
#include <cstdint>
#include <string>

#include "aotc_abi.h"

namespace aotc_rt {

struct ModelAbi {
  int (*create)(const void *const *, int64_t, void **);
  int (*output_shapes)(void *, const aotc_tensor *, int64_t, int64_t *);
  int (*run)(void *, const aotc_tensor *, int64_t, aotc_tensor *, int64_t);
  int (*set_num_threads)(void *, int32_t);
  void (*destroy)(void *);
  const char *(*last_error)(void);
  int (*describe_inputs)(const aotc_tensor_info **, int64_t *);
  int (*describe_outputs)(const aotc_tensor_info **, int64_t *);
  int (*describe_symbols)(const aotc_symbol_info **, int64_t *);
  int (*describe_constants)(const aotc_constant_info **, int64_t *);
  int (*describe_metadata)(const char *const **, const char *const **, int64_t *);
  int (*describe_state)(const int64_t **, int64_t *);
  int (*share_state)(void *, int64_t, void *);
  int (*pack_constant)(int64_t, const void *, void *);
  int (*describe_profile)(const aotc_profile_step **, int64_t *);
  int (*profile_enable)(int32_t);
  int (*profile_read)(aotc_profile_count *, int64_t, int32_t);
};

class Library {
 public:
  // `label` names the library in error messages (package and model)
  Library(const uint8_t *data, size_t size, const std::string &label);
  ~Library();
  Library(const Library &) = delete;
  Library &operator=(const Library &) = delete;
  const ModelAbi &abi() const { return abi_; }

 private:
  void *handle_ = nullptr;
  int fd_ = -1;  // the memfd, open while the library is loaded
  ModelAbi abi_{};
};

}  // namespace aotc_rt

#endif
