// The C API of aotc_runtime.h: a loader owns the package's bytes, the model library, the
// constants table and a pool of model objects (num_runners); exceptions stop here.
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <vector>

#include "aotc_runtime.h"
#include "failure.h"
#include "library.h"
#include "package.h"

using aotc_rt::Failure;
using aotc_rt::fail;

namespace {

struct FreeDeleter {
  void operator()(void *p) const { free(p); }
};
using Buffer = std::unique_ptr<uint8_t, FreeDeleter>;

Buffer aligned_copy(const void *data, size_t size) {
  Buffer b(static_cast<uint8_t *>(aligned_alloc(64, (size + 63) / 64 * 64 + 64)));
  if (!b) throw std::bad_alloc();
  if (size && data) memcpy(b.get(), data, size);
  return b;
}

const char *dtype_name(int32_t d) {
  static const char *const names[] = {"float32", "float64", "float16", "bfloat16", "int8",
                                      "int16",   "int32",   "int64",   "uint8",    "bool",
                                      "uint64",  "complex64", "complex128"};
  return d >= 0 && d < 13 ? names[d] : "unknown";
}

}  // namespace

struct aotc_loader {
  aotc_rt::Archive archive;
  std::string label;
  std::unique_ptr<aotc_rt::Library> library;
  aotc_rt::ModelAbi abi{};
  const aotc_tensor_info *inputs = nullptr, *outputs = nullptr;
  const aotc_symbol_info *symbols = nullptr;
  const aotc_constant_info *constants = nullptr;
  int64_t n_inputs = 0, n_outputs = 0, n_symbols = 0, n_constants = 0;
  int64_t max_rank = 1;
  std::vector<std::string> meta_storage;  // keys and values, in pairs
  std::vector<const char *> meta_keys, meta_values;
  Buffer weights_copy;                         // when the buffer left weights unaligned
  std::vector<const void *> constant_ptrs;     // what model objects read
  std::map<std::string, Buffer> replaced;      // constants given by load_constants
  int32_t num_threads = 0;
  // model state: one copy for the loaded model, shared by every model object; calls of a
  // model with state run one at a time (state_mutex), as do reads and writes of it
  const int64_t *state_constant = nullptr;  // constants-table index of each state buffer
  int64_t n_state = 0;
  std::vector<Buffer> state;
  std::vector<const void *> state_initial;  // the package's values
  std::mutex state_mutex;
  std::mutex mutex;
  std::condition_variable idle;
  std::vector<void *> all, free_runners;
  // independent states (aotc_loader_new_state), counted against max_states, and which
  // state each runner reads now (0, or no entry: the loader's own); under `mutex`
  int32_t max_states = 8, open_states = 0;
  uint64_t next_state = 1;
  std::map<void *, uint64_t> bound;

  explicit aotc_loader(aotc_rt::Archive a) : archive(std::move(a)) {}
  ~aotc_loader() {
    for (void *r : all) abi.destroy(r);
  }

  [[noreturn]] void model_failure(int rc) const {
    const char *msg = abi.last_error ? abi.last_error() : nullptr;
    fail(rc, msg && *msg ? msg : "the compiled model failed with status " + std::to_string(rc));
  }

  void check(int rc) const {
    if (rc != AOTC_OK) model_failure(rc);
  }

  void *new_runner(const std::vector<const void *> &table) {
    void *r = nullptr;
    check(abi.create(table.empty() ? nullptr : table.data(), n_constants, &r));
    int rc = num_threads > 0 ? abi.set_num_threads(r, num_threads) : AOTC_OK;
    for (int64_t k = 0; rc == AOTC_OK && k < n_state; ++k) rc = abi.share_state(r, k, state[k].get());
    if (rc != AOTC_OK) {
      abi.destroy(r);
      model_failure(rc);
    }
    return r;
  }

  // held while a call or an access touches the state (no lock for a model without state)
  std::unique_lock<std::mutex> state_lock() {
    return n_state > 0 ? std::unique_lock<std::mutex>(state_mutex) : std::unique_lock<std::mutex>();
  }

  const aotc_constant_info &state_info(const char *name, int64_t *k) const {
    const std::string wanted = name ? name : "";
    for (int64_t j = 0; j < n_state; ++j)
      if (wanted == constants[state_constant[j]].name) {
        *k = j;
        return constants[state_constant[j]];
      }
    std::string known;
    for (int64_t j = 0; j < n_state; ++j) known += std::string(j ? ", " : "") + constants[state_constant[j]].name;
    fail(AOTC_ERR_INPUT, "'" + wanted + "' is not a buffer the model updates; its state buffers: [" +
                             known + "]");
  }

  // runner `r`, held by the caller alone, reads and updates `buffers` (state `ident`)
  void bind(void *r, uint64_t ident, const std::vector<Buffer> &buffers) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      auto it = bound.find(r);
      if ((it == bound.end() ? 0 : it->second) == ident) return;
    }
    for (int64_t k = 0; k < n_state; ++k) check(abi.share_state(r, k, buffers[size_t(k)].get()));
    std::lock_guard<std::mutex> lock(mutex);
    bound[r] = ident;
  }

  void *acquire() {
    std::unique_lock<std::mutex> lock(mutex);
    idle.wait(lock, [&] { return !free_runners.empty(); });
    void *r = free_runners.back();
    free_runners.pop_back();
    return r;
  }

  void release(void *r) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      free_runners.push_back(r);
    }
    idle.notify_all();
  }
};

struct aotc_model_state {
  aotc_loader *owner;
  uint64_t ident;
  std::vector<Buffer> buffers;
  std::mutex mutex;  // held by a call on this state, and by reads and writes of it
};

namespace {

struct Runner {  // one model object, borrowed from the pool for one call
  aotc_loader *loader;
  void *handle;
  explicit Runner(aotc_loader *l) : loader(l), handle(l->acquire()) {}
  ~Runner() { loader->release(handle); }
};

int report(aotc_error *error, int status, const std::string &message) {
  if (error) {
    error->status = status;
    const size_t n = std::min(message.size(), sizeof error->message - 1);
    memcpy(error->message, message.data(), n);
    error->message[n] = '\0';
  }
  return status;
}

template <typename F> int guarded(aotc_error *error, F &&body) {
  try {
    body();
    return report(error, AOTC_OK, "");
  } catch (const Failure &f) {
    return report(error, f.status, f.message);
  } catch (const std::bad_alloc &) {
    return report(error, AOTC_ERR_MEMORY, "out of memory");
  } catch (const std::exception &e) {
    return report(error, AOTC_ERR_INTERNAL, e.what());
  } catch (...) {
    return report(error, AOTC_ERR_INTERNAL, "unknown failure");
  }
}

void describe(aotc_loader &l) {
  const aotc_rt::ModelAbi &abi = l.abi;
  l.check(abi.describe_inputs(&l.inputs, &l.n_inputs));
  l.check(abi.describe_outputs(&l.outputs, &l.n_outputs));
  l.check(abi.describe_symbols(&l.symbols, &l.n_symbols));
  l.check(abi.describe_constants(&l.constants, &l.n_constants));
  for (int64_t j = 0; j < l.n_outputs; ++j)
    l.max_rank = std::max<int64_t>(l.max_rank, l.outputs[j].ndim);
  const char *const *keys = nullptr;
  const char *const *values = nullptr;
  int64_t n = 0;
  l.check(abi.describe_metadata(&keys, &values, &n));
  for (int64_t k = 0; k < n; ++k) {
    l.meta_storage.push_back(keys[k]);
    l.meta_storage.push_back(values[k]);
    if (std::string(keys[k]) == "num_threads") l.num_threads = atoi(values[k]);
  }
  l.meta_storage.push_back("abi_version");
  l.meta_storage.push_back(std::to_string(AOTC_ABI_VERSION));
  l.meta_storage.push_back("package");
  l.meta_storage.push_back(l.archive.label());
  for (size_t k = 0; k < l.meta_storage.size(); k += 2) {
    l.meta_keys.push_back(l.meta_storage[k].c_str());
    l.meta_values.push_back(l.meta_storage[k + 1].c_str());
  }
}

void map_constants(aotc_loader &l, const aotc_rt::Bytes &weights) {
  const uint8_t *base = weights.data;
  if (reinterpret_cast<uintptr_t>(base) % 64) {  // a caller's buffer may be unaligned
    l.weights_copy = aligned_copy(weights.data, weights.size);
    base = l.weights_copy.get();
  }
  for (int64_t k = 0; k < l.n_constants; ++k) {
    const aotc_constant_info &c = l.constants[k];
    if (c.offset < 0 || c.nbytes < 0 || c.offset % 64 ||
        uint64_t(c.offset) + uint64_t(c.nbytes) > weights.size)
      aotc_rt::fail_package(l.label, std::string("constant ") + c.name + " lies outside weights.bin");
    l.constant_ptrs.push_back(base + c.offset);
  }
}

std::unique_ptr<aotc_loader> open_loader(aotc_rt::Archive archive, const char *model_name,
                                         int32_t num_runners) {
  if (num_runners < 1)
    fail(AOTC_ERR_ARGUMENT, "num_runners must be at least 1, got " + std::to_string(num_runners));
  auto l = std::make_unique<aotc_loader>(std::move(archive));
  aotc_rt::ZipReader zip(l->archive.data(), l->archive.size(), l->archive.label());
  aotc_rt::PackageModel pm = aotc_rt::open_model(zip, l->archive.label(), model_name);
  l->label = l->archive.label() + " (model '" + pm.name + "')";
  l->library = std::make_unique<aotc_rt::Library>(pm.library.data, pm.library.size, l->label);
  l->abi = l->library->abi();
  describe(*l);
  map_constants(*l, pm.weights);
  l->check(l->abi.describe_state(&l->state_constant, &l->n_state));
  for (int64_t j = 0; j < l->n_state; ++j) {  // the loaded model's one copy of its state
    const int64_t c = l->state_constant[j];
    l->state_initial.push_back(l->constant_ptrs[size_t(c)]);
    l->state.push_back(aligned_copy(l->constant_ptrs[size_t(c)], size_t(l->constants[c].nbytes)));
  }
  for (int32_t k = 0; k < num_runners; ++k) {
    l->all.push_back(l->new_runner(l->constant_ptrs));
    l->free_runners.push_back(l->all.back());
  }
  return l;
}

int open_into(aotc_loader **out, aotc_error *error, const char *what,
              const std::function<aotc_rt::Archive()> &archive, const char *model_name,
              int32_t num_runners) {
  if (!out) return report(error, AOTC_ERR_ARGUMENT, std::string(what) + ": null loader pointer");
  *out = nullptr;
  return guarded(error, [&] { *out = open_loader(archive(), model_name, num_runners).release(); });
}

// whether `v` is a contiguous tensor with the sizes of constant `c`
bool dense_like(const aotc_tensor &v, const aotc_constant_info &c) {
  bool same = v.ndim == c.ndim && (v.ndim == 0 || (v.sizes && v.strides));
  int64_t expected_stride = 1;
  for (int32_t d = c.ndim - 1; same && d >= 0; --d) {
    same = v.sizes[d] == c.sizes[d] && (c.sizes[d] == 1 || v.strides[d] == expected_stride);
    expected_stride *= c.sizes[d];
  }
  return same;
}

// a caller's tensor for state buffer `name`: its dtype, sizes, contiguous, with data
void check_state_tensor(const aotc_tensor *t, const aotc_constant_info &c, const char *what) {
  const std::string name = c.name;
  if (!t) fail(AOTC_ERR_ARGUMENT, std::string(what) + ": null tensor");
  if (t->dtype != c.dtype)
    fail(AOTC_ERR_INPUT, std::string(what) + ": buffer '" + name + "' is " + dtype_name(c.dtype) +
         ", got " + dtype_name(t->dtype));
  if (!dense_like(*t, c))
    fail(AOTC_ERR_INPUT, std::string(what) + ": buffer '" + name + "' needs a contiguous tensor of "
         "rank " + std::to_string(c.ndim) + " with its sizes");
  if (!t->data && c.nbytes) fail(AOTC_ERR_ARGUMENT, std::string(what) + ": null data");
}

void check_own_state(const aotc_loader *l, const aotc_model_state *s, const char *what) {
  if (!s) fail(AOTC_ERR_ARGUMENT, std::string(what) + ": null state");
  if (s->owner != l) fail(AOTC_ERR_ARGUMENT, std::string(what) + ": the state is another loader's");
}

// State buffer `name` of `buffers` (a state whose lock is `m`) copied out into `value`, or
// with `in` from it.
void copy_state(const aotc_loader *l, std::vector<Buffer> &buffers, std::mutex &m,
                const char *name, const aotc_tensor *value, bool in, const char *what) {
  int64_t k = 0;
  const aotc_constant_info &c = l->state_info(name, &k);
  check_state_tensor(value, c, what);
  std::lock_guard<std::mutex> lock(m);
  uint8_t *state = buffers[size_t(k)].get();
  if (c.nbytes && in) memcpy(state, value->data, size_t(c.nbytes));
  else if (c.nbytes) memcpy(value->data, state, size_t(c.nbytes));
}

void check_loader(const void *loader, const char *what) {
  if (!loader) fail(AOTC_ERR_ARGUMENT, std::string(what) + ": null loader");
}

template <typename T>
int table(const aotc_loader *l, const T *items, const int64_t aotc_loader::*count, const T **infos,
          int64_t *n, aotc_error *error, const char *what) {
  return guarded(error, [&] {
    check_loader(l, what);
    if (!infos || !n) fail(AOTC_ERR_ARGUMENT, std::string(what) + ": null argument");
    *infos = items;
    *n = l->*count;
  });
}

}  // namespace

extern "C" {

int aotc_loader_open(const char *path, const char *model_name, int32_t num_runners,
                     aotc_loader **loader, aotc_error *error) {
  if (!path) return report(error, AOTC_ERR_ARGUMENT, "aotc_loader_open: null path");
  return open_into(loader, error, "aotc_loader_open",
                   [&] { return aotc_rt::Archive::map_file(path); }, model_name, num_runners);
}

int aotc_loader_open_buffer(const void *data, size_t size, const char *model_name,
                            int32_t num_runners, aotc_loader **loader, aotc_error *error) {
  return open_into(loader, error, "aotc_loader_open_buffer",
                   [&] { return aotc_rt::Archive::borrow(data, size); }, model_name, num_runners);
}

void aotc_loader_close(aotc_loader *loader) { delete loader; }

int aotc_loader_inputs(const aotc_loader *l, const aotc_tensor_info **infos, int64_t *n,
                       aotc_error *error) {
  return table(l, l ? l->inputs : nullptr, &aotc_loader::n_inputs, infos, n, error,
               "aotc_loader_inputs");
}

int aotc_loader_outputs(const aotc_loader *l, const aotc_tensor_info **infos, int64_t *n,
                        aotc_error *error) {
  return table(l, l ? l->outputs : nullptr, &aotc_loader::n_outputs, infos, n, error,
               "aotc_loader_outputs");
}

int aotc_loader_symbols(const aotc_loader *l, const aotc_symbol_info **infos, int64_t *n,
                        aotc_error *error) {
  return table(l, l ? l->symbols : nullptr, &aotc_loader::n_symbols, infos, n, error,
               "aotc_loader_symbols");
}

int aotc_loader_constants(const aotc_loader *l, const aotc_constant_info **infos, int64_t *n,
                          aotc_error *error) {
  return table(l, l ? l->constants : nullptr, &aotc_loader::n_constants, infos, n, error,
               "aotc_loader_constants");
}

int aotc_loader_metadata(const aotc_loader *l, const char *const **keys,
                         const char *const **values, int64_t *n, aotc_error *error) {
  return guarded(error, [&] {
    check_loader(l, "aotc_loader_metadata");
    if (!keys || !values || !n) fail(AOTC_ERR_ARGUMENT, "aotc_loader_metadata: null argument");
    *keys = l->meta_keys.data();
    *values = l->meta_values.data();
    *n = int64_t(l->meta_keys.size());
  });
}

int aotc_loader_output_sizes(aotc_loader *l, const aotc_tensor *inputs, int64_t n_in,
                             int64_t *sizes, aotc_error *error) {
  return guarded(error, [&] {
    check_loader(l, "aotc_loader_output_sizes");
    if (!sizes) fail(AOTC_ERR_ARGUMENT, "aotc_loader_output_sizes: null sizes");
    std::vector<int64_t> all(size_t(l->n_outputs * l->max_rank + 1));
    {
      auto lock = l->state_lock();
      Runner r(l);  // sizes that follow the data run the first kernels in its arena
      l->check(l->abi.output_shapes(r.handle, inputs, n_in, all.data()));
    }
    for (int64_t j = 0; j < l->n_outputs; ++j)
      for (int32_t d = 0; d < l->outputs[j].ndim; ++d) *sizes++ = all[size_t(j * l->max_rank + d)];
  });
}

int aotc_loader_run(aotc_loader *l, const aotc_tensor *inputs, int64_t n_in,
                    aotc_tensor *outputs, int64_t n_out, aotc_error *error) {
  return guarded(error, [&] {
    check_loader(l, "aotc_loader_run");
    auto lock = l->state_lock();
    Runner r(l);
    if (l->n_state > 0) l->bind(r.handle, 0, l->state);
    l->check(l->abi.run(r.handle, inputs, n_in, outputs, n_out));
  });
}

int aotc_loader_load_constants(aotc_loader *l, const char *const *names,
                               const aotc_tensor *values, int64_t n, int32_t check_full_update,
                               aotc_error *error) {
  return guarded(error, [&] {
    check_loader(l, "aotc_loader_load_constants");
    if (n > 0 && (!names || !values))
      fail(AOTC_ERR_ARGUMENT, "aotc_loader_load_constants: null names or values");
    std::unique_lock<std::mutex> lock(l->mutex);  // wait for running calls to finish
    l->idle.wait(lock, [&] { return l->free_runners.size() == l->all.size(); });
    std::map<std::string, Buffer> copies;
    std::vector<const void *> table = l->constant_ptrs;
    std::vector<bool> given(size_t(l->n_constants), false);
    for (int64_t k = 0; k < n; ++k) {
      const std::string name = names[k] ? names[k] : "";
      int64_t index = -1;
      for (int64_t c = 0; c < l->n_constants; ++c)
        if (name == l->constants[c].name) index = c;
      if (index < 0) fail(AOTC_ERR_INPUT, "load_constants: the model has no constant '" + name + "'");
      const aotc_constant_info &c = l->constants[index];
      const aotc_tensor &v = values[k];
      if (v.dtype != c.dtype)
        fail(AOTC_ERR_INPUT, "load_constants: '" + name + "' is " + dtype_name(c.dtype) + ", got " +
             dtype_name(v.dtype));
      if (!dense_like(v, c))
        fail(AOTC_ERR_INPUT, "load_constants: '" + name + "' must be a contiguous tensor of rank " +
             std::to_string(c.ndim) + " with the compiled sizes");
      if (!v.data && c.nbytes) fail(AOTC_ERR_ARGUMENT, "load_constants: '" + name + "' has null data");
      // the bytes the model reads: a copy, or a GEMM weight packed as weights.bin holds it
      copies[name] = aligned_copy(nullptr, size_t(c.nbytes));
      const int rc = l->abi.pack_constant(index, v.data, copies[name].get());
      if (rc == AOTC_ERR_INPUT) {  // a value its packed layout cannot hold
        const char *why = l->abi.last_error ? l->abi.last_error() : nullptr;
        fail(rc, "load_constants: '" + name + "': " + (why ? why : "a value it cannot hold"));
      }
      l->check(rc);
      table[size_t(index)] = copies[name].get();
      given[size_t(index)] = true;
    }
    // constants stored as one range of weights.bin (same offset, size and dtype) held one
    // value at compile time (tied weights): a name given swaps the others of its tie
    std::vector<bool> covered = given;
    for (int64_t k = 0; k < l->n_constants; ++k) {
      const aotc_constant_info &a = l->constants[k];
      if (!given[size_t(k)] || !a.nbytes) continue;
      for (int64_t j = 0; j < l->n_constants; ++j) {
        const aotc_constant_info &b = l->constants[j];
        if (!covered[size_t(j)] && b.offset == a.offset && b.nbytes == a.nbytes &&
            b.dtype == a.dtype) {
          table[size_t(j)] = table[size_t(k)];
          covered[size_t(j)] = true;
        }
      }
    }
    const int64_t n_covered = int64_t(std::count(covered.begin(), covered.end(), true));
    if (check_full_update && n_covered != l->n_constants)
      fail(AOTC_ERR_INPUT, "load_constants: check_full_update needs all " +
           std::to_string(l->n_constants) + " constants, got " + std::to_string(n_covered));
    std::vector<void *> fresh;  // new model objects first: on failure the old ones stay
    try {
      for (size_t k = 0; k < l->all.size(); ++k) fresh.push_back(l->new_runner(table));
    } catch (...) {
      for (void *r : fresh) l->abi.destroy(r);
      throw;
    }
    for (void *r : l->all) l->abi.destroy(r);
    l->bound.clear();  // the new runners read the loader's own state
    l->all = fresh;
    l->free_runners = fresh;
    l->constant_ptrs = table;
    for (auto &kv : copies) l->replaced[kv.first] = std::move(kv.second);
  });
}

int aotc_loader_state(const aotc_loader *l, const int64_t **constant_index, int64_t *n,
                      aotc_error *error) {
  return guarded(error, [&] {
    check_loader(l, "aotc_loader_state");
    if (!constant_index || !n) fail(AOTC_ERR_ARGUMENT, "aotc_loader_state: null argument");
    *constant_index = l->state_constant;
    *n = l->n_state;
  });
}

int aotc_loader_get_state(aotc_loader *l, const char *name, aotc_tensor *value, aotc_error *error) {
  return guarded(error, [&] {
    check_loader(l, "aotc_loader_get_state");
    copy_state(l, l->state, l->state_mutex, name, value, false, "aotc_loader_get_state");
  });
}

int aotc_loader_set_state(aotc_loader *l, const char *name, const aotc_tensor *value,
                          aotc_error *error) {
  return guarded(error, [&] {
    check_loader(l, "aotc_loader_set_state");
    copy_state(l, l->state, l->state_mutex, name, value, true, "aotc_loader_set_state");
  });
}

int aotc_loader_reset_state(aotc_loader *l, aotc_error *error) {
  return guarded(error, [&] {
    check_loader(l, "aotc_loader_reset_state");
    auto lock = l->state_lock();
    for (int64_t k = 0; k < l->n_state; ++k) {
      const int64_t bytes = l->constants[l->state_constant[k]].nbytes;
      if (bytes) memcpy(l->state[size_t(k)].get(), l->state_initial[size_t(k)], size_t(bytes));
    }
  });
}

int aotc_loader_set_max_states(aotc_loader *l, int32_t max_states, aotc_error *error) {
  return guarded(error, [&] {
    check_loader(l, "aotc_loader_set_max_states");
    if (max_states < 0) fail(AOTC_ERR_ARGUMENT, "aotc_loader_set_max_states: a negative limit");
    std::lock_guard<std::mutex> lock(l->mutex);
    l->max_states = max_states;
  });
}

int aotc_loader_new_state(aotc_loader *l, aotc_model_state **state, aotc_error *error) {
  return guarded(error, [&] {
    check_loader(l, "aotc_loader_new_state");
    if (!state) fail(AOTC_ERR_ARGUMENT, "aotc_loader_new_state: null state out-pointer");
    *state = nullptr;
    if (l->n_state == 0)
      fail(AOTC_ERR_INPUT, "the model updates no buffer: it has no state to make another of");
    uint64_t ident = 0;
    {
      std::lock_guard<std::mutex> lock(l->mutex);
      if (l->open_states >= l->max_states)
        fail(AOTC_ERR_STATE_LIMIT, "the loader holds " + std::to_string(l->max_states) +
             " states already (max_states); free one or raise the limit");
      ++l->open_states;
      ident = l->next_state++;
    }
    try {
      auto s = std::make_unique<aotc_model_state>();
      s->owner = l;
      s->ident = ident;
      for (int64_t k = 0; k < l->n_state; ++k)
        s->buffers.push_back(aligned_copy(l->state_initial[size_t(k)],
                                          size_t(l->constants[l->state_constant[k]].nbytes)));
      *state = s.release();
    } catch (...) {
      std::lock_guard<std::mutex> lock(l->mutex);
      --l->open_states;
      throw;
    }
  });
}

int aotc_loader_free_state(aotc_loader *l, aotc_model_state *state, aotc_error *error) {
  return guarded(error, [&] {
    check_loader(l, "aotc_loader_free_state");
    check_own_state(l, state, "aotc_loader_free_state");
    { std::lock_guard<std::mutex> wait(state->mutex); }  // a call running on it finishes
    delete state;
    std::lock_guard<std::mutex> lock(l->mutex);
    --l->open_states;
  });
}

int aotc_loader_run_state(aotc_loader *l, aotc_model_state *state, const aotc_tensor *inputs,
                          int64_t n_in, aotc_tensor *outputs, int64_t n_out, aotc_error *error) {
  return guarded(error, [&] {
    check_loader(l, "aotc_loader_run_state");
    check_own_state(l, state, "aotc_loader_run_state");
    std::lock_guard<std::mutex> lock(state->mutex);
    Runner r(l);
    l->bind(r.handle, state->ident, state->buffers);
    l->check(l->abi.run(r.handle, inputs, n_in, outputs, n_out));
  });
}

int aotc_loader_get_model_state(aotc_loader *l, aotc_model_state *state, const char *name,
                                aotc_tensor *value, aotc_error *error) {
  return guarded(error, [&] {
    check_loader(l, "aotc_loader_get_model_state");
    check_own_state(l, state, "aotc_loader_get_model_state");
    copy_state(l, state->buffers, state->mutex, name, value, false, "aotc_loader_get_model_state");
  });
}

int aotc_loader_set_model_state(aotc_loader *l, aotc_model_state *state, const char *name,
                                const aotc_tensor *value, aotc_error *error) {
  return guarded(error, [&] {
    check_loader(l, "aotc_loader_set_model_state");
    check_own_state(l, state, "aotc_loader_set_model_state");
    copy_state(l, state->buffers, state->mutex, name, value, true, "aotc_loader_set_model_state");
  });
}

int aotc_loader_reset_model_state(aotc_loader *l, aotc_model_state *state, aotc_error *error) {
  return guarded(error, [&] {
    check_loader(l, "aotc_loader_reset_model_state");
    check_own_state(l, state, "aotc_loader_reset_model_state");
    std::lock_guard<std::mutex> lock(state->mutex);
    for (int64_t k = 0; k < l->n_state; ++k) {
      const int64_t bytes = l->constants[l->state_constant[k]].nbytes;
      if (bytes) memcpy(state->buffers[size_t(k)].get(), l->state_initial[size_t(k)], size_t(bytes));
    }
  });
}

int aotc_loader_profile_steps(const aotc_loader *l, const aotc_profile_step **steps, int64_t *n,
                              aotc_error *error) {
  return guarded(error, [&] {
    check_loader(l, "aotc_loader_profile_steps");
    if (!steps || !n) fail(AOTC_ERR_ARGUMENT, "aotc_loader_profile_steps: null argument");
    l->check(l->abi.describe_profile(steps, n));
  });
}

int aotc_loader_profile(aotc_loader *l, int32_t on, int32_t *was_on, aotc_error *error) {
  return guarded(error, [&] {
    check_loader(l, "aotc_loader_profile");
    const int32_t before = l->abi.profile_enable(on);
    if (was_on) *was_on = before;
  });
}

int aotc_loader_profile_read(aotc_loader *l, aotc_profile_count *counts, int64_t n, int32_t reset,
                             aotc_error *error) {
  return guarded(error, [&] {
    check_loader(l, "aotc_loader_profile_read");
    l->check(l->abi.profile_read(counts, n, reset));
  });
}

}  // extern "C"
