// Loads model.so from memory: into a memfd (or a temp file unlinked at once), then dlopen.
#include "library.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "failure.h"

namespace aotc_rt {
namespace {

void write_all(int fd, const uint8_t *data, size_t size, const std::string &label) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail(AOTC_ERR_INTERNAL, label + ": cannot stage the model library (" +
                     std::string(strerror(errno)) + ")");
    data += n;
    size -= size_t(n);
  }
}

// A memfd holding the bytes (Linux), or -1 when the kernel has none.
int memory_file(const uint8_t *data, size_t size, const std::string &label) {
#if defined(__linux__) && defined(MFD_CLOEXEC)
  const int fd = memfd_create("aotc-model", MFD_CLOEXEC);
  if (fd < 0) return -1;
  try {
    write_all(fd, data, size, label);
  } catch (...) {
    ::close(fd);
    throw;
  }
  return fd;
#else
  (void)data; (void)size; (void)label;
  return -1;
#endif
}

void *open_memory_file(int fd, const std::string &label) {
  // glibc matches loaded libraries by name first, and a closed model library stays loaded
  // while a thread still holds its thread_local state (the GEMM's scratch), so the name of
  // an earlier memfd with this number may still be taken: spell the path differently
  // ("/proc/self/fd/./N", ...) until the name is free
  const std::string number = std::to_string(fd);
  std::string path;
  for (int k = 0; k < 1024; ++k) {
    path = "/proc/self/fd/";
    for (int j = 0; j < k; ++j) path += "./";
    path += number;
    if (void *taken = dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD)) {
      dlclose(taken);
      continue;
    }
    void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      const char *why = dlerror();
      fail_package(label, std::string("cannot load model.so: ") + (why ? why : "dlopen failed"));
    }
    return handle;
  }
  fail(AOTC_ERR_INTERNAL, label + ": no free name to load model.so under");
}

void *open_temp_file(const uint8_t *data, size_t size, const std::string &label) {
  const char *dir = getenv("TMPDIR");
  std::string path = std::string(dir && *dir ? dir : "/tmp") + "/aotc-model-XXXXXX";
  const int fd = mkstemp(&path[0]);
  if (fd < 0) fail(AOTC_ERR_INTERNAL, label + ": cannot create a temp file for model.so");
  try {
    write_all(fd, data, size, label);
  } catch (...) {
    ::close(fd);
    ::unlink(path.c_str());
    throw;
  }
  ::close(fd);
  void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  ::unlink(path.c_str());  // the mapping stays; the name goes at once
  if (!handle) {
    const char *why = dlerror();
    fail_package(label, std::string("cannot load model.so: ") + (why ? why : "dlopen failed"));
  }
  return handle;
}

// libgomp's workers spin GOMP_SPINCOUNT times after a parallel region (300000 unless told,
// a few milliseconds), holding the cores the caller's next work wants. Around the load of a
// model library the variable asks for a short spin instead (the Python runtime's
// runtime/wait_policy.py does the same, with the same value, and says why), unless the user
// chose OMP_WAIT_POLICY or GOMP_SPINCOUNT or libgomp is loaded already: libgomp reads its
// environment once, when it is loaded. The environment is restored afterwards.
constexpr const char *kSpinCount = "1000";

class SpinSetting {
 public:
  SpinSetting() {
    if (getenv("OMP_WAIT_POLICY") || getenv("GOMP_SPINCOUNT")) return;
    if (void *gomp = dlopen("libgomp.so.1", RTLD_NOW | RTLD_NOLOAD)) {
      dlclose(gomp);
      return;
    }
    set_ = setenv("GOMP_SPINCOUNT", kSpinCount, 0) == 0;
  }
  ~SpinSetting() {
    if (set_) unsetenv("GOMP_SPINCOUNT");
  }
  SpinSetting(const SpinSetting &) = delete;
  SpinSetting &operator=(const SpinSetting &) = delete;

 private:
  bool set_ = false;
};

template <typename F> void bind(void *handle, const char *name, F *out, const std::string &label) {
  void *sym = dlsym(handle, name);
  if (!sym) fail_package(label, std::string("model.so lacks ") + name + "; not an aotc model library");
  *out = reinterpret_cast<F>(sym);
}

}  // namespace

Library::Library(const uint8_t *data, size_t size, const std::string &label) {
  {
    SpinSetting spin;  // the first model library loads libgomp: its wait policy
    fd_ = memory_file(data, size, label);
    handle_ = fd_ >= 0 ? open_memory_file(fd_, label) : open_temp_file(data, size, label);
  }
  // model libraries run OpenMP; libgomp's idle workers must not outlive its code when the
  // last model library is closed, so it stays loaded once a model has pulled it in
  if (void *gomp = dlopen("libgomp.so.1", RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE)) dlclose(gomp);
  try {
    int (*version)(void) = nullptr;
    bind(handle_, "aotc_abi_version", &version, label);
    if (version() != AOTC_ABI_VERSION)
      fail_package(label, "model library ABI version " + std::to_string(version()) +
                   "; this runtime speaks " + std::to_string(AOTC_ABI_VERSION) +
                   recompile_advice(std::to_string(version()), AOTC_ABI_VERSION));
    bind(handle_, "aotc_create", &abi_.create, label);
    bind(handle_, "aotc_output_shapes", &abi_.output_shapes, label);
    bind(handle_, "aotc_run", &abi_.run, label);
    bind(handle_, "aotc_set_num_threads", &abi_.set_num_threads, label);
    bind(handle_, "aotc_destroy", &abi_.destroy, label);
    bind(handle_, "aotc_last_error", &abi_.last_error, label);
    bind(handle_, "aotc_describe_inputs", &abi_.describe_inputs, label);
    bind(handle_, "aotc_describe_outputs", &abi_.describe_outputs, label);
    bind(handle_, "aotc_describe_symbols", &abi_.describe_symbols, label);
    bind(handle_, "aotc_describe_constants", &abi_.describe_constants, label);
    bind(handle_, "aotc_describe_metadata", &abi_.describe_metadata, label);
    bind(handle_, "aotc_describe_state", &abi_.describe_state, label);
    bind(handle_, "aotc_share_state", &abi_.share_state, label);
    bind(handle_, "aotc_pack_constant", &abi_.pack_constant, label);
    bind(handle_, "aotc_describe_profile", &abi_.describe_profile, label);
    bind(handle_, "aotc_profile_enable", &abi_.profile_enable, label);
    bind(handle_, "aotc_profile_read", &abi_.profile_read, label);
  } catch (...) {
    dlclose(handle_);
    if (fd_ >= 0) ::close(fd_);
    throw;
  }
}

Library::~Library() {
  dlclose(handle_);
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace aotc_rt
