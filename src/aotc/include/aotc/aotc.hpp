// The aotc runtime's C++17 API, header-only over the C API of aotc_runtime.h:
//   aotc::ModelPackageLoader loader("model.pt2", "model", /*num_runners=*/1);
//   std::vector<aotc::Tensor> outputs = loader.run({aotc::Tensor(aotc::DType::Float32, {8, 10})});
// Every failure throws an aotc::Error (a std::runtime_error) carrying the runtime's message.
#ifndef AOTC_HPP
#define AOTC_HPP

#include <complex>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <ostream>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "aotc_runtime.h"

namespace aotc {

enum class DType : int32_t {
  Float32 = AOTC_FLOAT32, Float64 = AOTC_FLOAT64, Float16 = AOTC_FLOAT16,
  BFloat16 = AOTC_BFLOAT16, Int8 = AOTC_INT8, Int16 = AOTC_INT16, Int32 = AOTC_INT32,
  Int64 = AOTC_INT64, UInt8 = AOTC_UINT8, Bool = AOTC_BOOL, UInt64 = AOTC_UINT64,
  Complex64 = AOTC_COMPLEX64, Complex128 = AOTC_COMPLEX128  // std::complex<float / double>
};

inline size_t itemsize(DType d) {
  constexpr size_t sizes[] = {4, 8, 2, 2, 1, 2, 4, 8, 1, 1, 8, 8, 16};
  const auto k = static_cast<int32_t>(d);
  return k >= 0 && k < 13 ? sizes[k] : 0;
}

inline const char *dtype_name(DType d) {
  constexpr const char *names[] = {"float32", "float64", "float16", "bfloat16", "int8",
                                   "int16",   "int32",   "int64",   "uint8",    "bool",
                                   "uint64",  "complex64", "complex128"};
  const auto k = static_cast<int32_t>(d);
  return k >= 0 && k < 13 ? names[k] : "unknown";
}

// Errors: the status of the C API picks the class; what() is the runtime's message.
class Error : public std::runtime_error {
 public:
  Error(int status, const std::string &message) : std::runtime_error(message), status_(status) {}
  int status() const { return status_; }

 private:
  int status_;
};
class InputError : public Error { using Error::Error; };     // inputs do not match the model
class PackageError : public Error { using Error::Error; };   // missing, corrupt or foreign package
class ArgumentError : public Error { using Error::Error; };  // a bad argument to the runtime
class MemoryError : public Error { using Error::Error; };    // an allocation failed
class StateLimitError : public Error { using Error::Error; };  // every state allowed is in use

inline void check(int rc, const aotc_error &e) {
  if (rc == AOTC_OK) return;
  const std::string msg = e.message;
  switch (rc) {
    case AOTC_ERR_INPUT: throw InputError(rc, msg);
    case AOTC_ERR_PACKAGE: throw PackageError(rc, msg);
    case AOTC_ERR_ARGUMENT: throw ArgumentError(rc, msg);
    case AOTC_ERR_MEMORY: throw MemoryError(rc, msg);
    case AOTC_ERR_STATE_LIMIT: throw StateLimitError(rc, msg);
    default: throw Error(rc, msg);
  }
}

// A dense tensor: owning (allocated, zeroed, 64-byte aligned, shared between copies like
// at::Tensor) or borrowing (the caller's memory, which must outlive it).
class Tensor {
 public:
  Tensor() = default;
  Tensor(DType dtype, std::vector<int64_t> sizes)
      : dtype_(dtype), sizes_(std::move(sizes)), strides_(contiguous_strides(sizes_)) {
    const size_t bytes = nbytes();
    void *p = std::aligned_alloc(64, (bytes + 63) / 64 * 64 + 64);
    if (!p) throw MemoryError(AOTC_ERR_MEMORY, "cannot allocate a " + std::to_string(bytes) +
                              "-byte tensor");
    std::memset(p, 0, bytes);
    storage_ = std::shared_ptr<void>(p, std::free);
    data_ = p;
  }
  // strides in elements; empty: contiguous
  static Tensor borrow(void *data, DType dtype, std::vector<int64_t> sizes,
                       std::vector<int64_t> strides = {}) {
    Tensor t;
    t.dtype_ = dtype;
    t.sizes_ = std::move(sizes);
    t.strides_ = strides.empty() ? contiguous_strides(t.sizes_) : std::move(strides);
    if (t.strides_.size() != t.sizes_.size())
      throw ArgumentError(AOTC_ERR_ARGUMENT, "Tensor::borrow: " + std::to_string(t.strides_.size()) +
                          " strides for " + std::to_string(t.sizes_.size()) + " sizes");
    t.data_ = data;
    return t;
  }

  DType dtype() const { return dtype_; }
  const std::vector<int64_t> &sizes() const { return sizes_; }
  const std::vector<int64_t> &strides() const { return strides_; }
  int64_t dim() const { return static_cast<int64_t>(sizes_.size()); }
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t s : sizes_) n *= s;
    return n;
  }
  size_t nbytes() const { return static_cast<size_t>(numel()) * itemsize(dtype_); }
  bool owns_data() const { return storage_ != nullptr; }
  void *data_ptr() const { return data_; }
  template <typename T> T *data() const { return static_cast<T *>(data_); }

  // The C API's view; valid while this tensor lives and keeps its sizes.
  aotc_tensor view() const {
    return {data_, sizes_.data(), strides_.data(), static_cast<int32_t>(sizes_.size()),
            static_cast<int32_t>(dtype_)};
  }

  static std::vector<int64_t> contiguous_strides(const std::vector<int64_t> &sizes) {
    std::vector<int64_t> strides(sizes.size());
    int64_t acc = 1;
    for (size_t d = sizes.size(); d-- > 0;) {
      strides[d] = acc;
      acc *= sizes[d];
    }
    return strides;
  }

 private:
  std::shared_ptr<void> storage_;
  void *data_ = nullptr;
  DType dtype_ = DType::Float32;
  std::vector<int64_t> sizes_, strides_;
};

// Prints dtype, sizes and (for contiguous tensors of real types) the values, a row a line.
inline std::ostream &operator<<(std::ostream &os, const Tensor &t) {
  os << "Tensor " << dtype_name(t.dtype()) << " [";
  for (int64_t d = 0; d < t.dim(); ++d) os << (d ? ", " : "") << t.sizes()[d];
  os << "]";
  const int64_t row = t.dim() ? t.sizes().back() : 1;
  for (int64_t i = 0; i < t.numel(); ++i) {
    os << (i % (row ? row : 1) == 0 ? "\n  " : " ");
    switch (t.dtype()) {
      case DType::Float32: os << t.data<float>()[i]; break;
      case DType::Float64: os << t.data<double>()[i]; break;
      case DType::Int32: os << t.data<int32_t>()[i]; break;
      case DType::Int64: os << t.data<int64_t>()[i]; break;
      case DType::Int8: os << int(t.data<int8_t>()[i]); break;
      case DType::UInt8: os << int(t.data<uint8_t>()[i]); break;
      case DType::Int16: os << t.data<int16_t>()[i]; break;
      case DType::Bool: os << (t.data<bool>()[i] ? "true" : "false"); break;
      case DType::UInt64: os << t.data<uint64_t>()[i]; break;
      case DType::Complex64: os << t.data<std::complex<float>>()[i]; break;
      case DType::Complex128: os << t.data<std::complex<double>>()[i]; break;
      default: os << "?"; break;
    }
  }
  return os;
}

struct TensorSpec {
  std::string name;
  DType dtype;
  std::vector<int64_t> sizes;     // -1 where the size depends on symbols
  std::vector<std::string> dims;  // each size as text: "10", "s0", "2*s0"
};

struct SymbolSpec {
  std::string name;
  int64_t min;
  int64_t max;  // -1: unbounded
};

struct ConstantSpec {
  std::string name;
  DType dtype;
  std::vector<int64_t> sizes;
  int64_t nbytes;
};

// One step of the run (a kernel) and what profiling counted of it (aotc_abi.h, version 7).
struct ProfileStep {
  std::string kernel, ops, source;
  aotc_profile_count counts;  // runs, total_ns, and the latest run's begin, ns, flops, bytes
};

class ModelPackageLoader {
 public:
  // model_name "": the package's only model, else "model"; num_runners: concurrent calls
  explicit ModelPackageLoader(const std::string &path, const std::string &model_name = "",
                              int num_runners = 1) {
    aotc_error e{};
    check(aotc_loader_open(path.c_str(), model_name.c_str(), num_runners, &loader_, &e), e);
    outputs_ = output_specs();
  }
  // `data` holds a whole .pt2 file and must outlive the loader
  static ModelPackageLoader from_buffer(const void *data, size_t size,
                                        const std::string &model_name = "", int num_runners = 1) {
    aotc_error e{};
    aotc_loader *l = nullptr;
    check(aotc_loader_open_buffer(data, size, model_name.c_str(), num_runners, &l, &e), e);
    return ModelPackageLoader(l);
  }
  ModelPackageLoader(ModelPackageLoader &&o) noexcept
      : loader_(std::exchange(o.loader_, nullptr)), outputs_(std::move(o.outputs_)) {}
  ModelPackageLoader &operator=(ModelPackageLoader &&o) noexcept {
    std::swap(loader_, o.loader_);
    std::swap(outputs_, o.outputs_);
    return *this;
  }
  ModelPackageLoader(const ModelPackageLoader &) = delete;
  ModelPackageLoader &operator=(const ModelPackageLoader &) = delete;
  ~ModelPackageLoader() { aotc_loader_close(loader_); }

  // New output tensors for these inputs (safe to call from several threads at once).
  std::vector<Tensor> run(const std::vector<Tensor> &inputs) const { return run_on(nullptr, inputs); }

  // Into the caller's contiguous outputs.
  void run(const std::vector<Tensor> &inputs, std::vector<Tensor> &outputs) const {
    run_on(nullptr, inputs, outputs);
  }

  class ModelState;
  // A state of its own (every state buffer at the package's value, the weights shared) for
  // one sequence; at most max_states (8 unless set) at once, a StateLimitError beyond. It
  // must not outlive the loader.
  ModelState new_state();
  void set_max_states(int n) {
    aotc_error e{};
    check(aotc_loader_set_max_states(loader_, n, &e), e);
  }

 private:
  std::vector<Tensor> run_on(aotc_model_state *state, const std::vector<Tensor> &inputs) const {
    const std::vector<aotc_tensor> in = views(inputs);
    size_t total = 0;
    for (const TensorSpec &s : outputs_) total += s.sizes.size();
    std::vector<int64_t> sizes(total + 1);
    aotc_error e{};
    check(aotc_loader_output_sizes(loader_, in.data(), int64_t(in.size()), sizes.data(), &e), e);
    std::vector<Tensor> outputs;
    const int64_t *p = sizes.data();
    for (const TensorSpec &s : outputs_) {
      outputs.emplace_back(s.dtype, std::vector<int64_t>(p, p + s.sizes.size()));
      p += s.sizes.size();
    }
    run_on(state, inputs, outputs);
    return outputs;
  }

  void run_on(aotc_model_state *state, const std::vector<Tensor> &inputs,
              std::vector<Tensor> &outputs) const {
    const std::vector<aotc_tensor> in = views(inputs);
    std::vector<aotc_tensor> out = views(outputs);
    aotc_error e{};
    if (state)
      check(aotc_loader_run_state(loader_, state, in.data(), int64_t(in.size()), out.data(),
                                  int64_t(out.size()), &e), e);
    else
      check(aotc_loader_run(loader_, in.data(), int64_t(in.size()), out.data(),
                            int64_t(out.size()), &e), e);
  }

 public:

  std::vector<TensorSpec> input_specs() const { return tensor_specs(aotc_loader_inputs); }
  std::vector<TensorSpec> output_specs() const { return tensor_specs(aotc_loader_outputs); }

  std::vector<SymbolSpec> symbols() const {
    const aotc_symbol_info *infos = nullptr;
    int64_t n = 0;
    aotc_error e{};
    check(aotc_loader_symbols(loader_, &infos, &n, &e), e);
    std::vector<SymbolSpec> out;
    for (int64_t k = 0; k < n; ++k) out.push_back({infos[k].name, infos[k].min, infos[k].max});
    return out;
  }

  std::vector<ConstantSpec> constant_specs() const {
    const aotc_constant_info *infos = nullptr;
    int64_t n = 0;
    aotc_error e{};
    check(aotc_loader_constants(loader_, &infos, &n, &e), e);
    std::vector<ConstantSpec> out;
    for (int64_t k = 0; k < n; ++k) {
      const aotc_constant_info &c = infos[k];
      out.push_back({c.name, DType(c.dtype), std::vector<int64_t>(c.sizes, c.sizes + c.ndim),
                     c.nbytes});
    }
    return out;
  }

  std::vector<std::string> constant_names() const {
    std::vector<std::string> names;
    for (const ConstantSpec &c : constant_specs()) names.push_back(c.name);
    return names;
  }

  std::unordered_map<std::string, std::string> metadata() const {
    const char *const *keys = nullptr;
    const char *const *values = nullptr;
    int64_t n = 0;
    aotc_error e{};
    check(aotc_loader_metadata(loader_, &keys, &values, &n, &e), e);
    std::unordered_map<std::string, std::string> out;
    for (int64_t k = 0; k < n; ++k) out[keys[k]] = values[k];
    return out;
  }

  // Replaces constants by name (copied); check_full_update: all of them must be given.
  void load_constants(const std::unordered_map<std::string, Tensor> &constants,
                      bool check_full_update = false) {
    std::vector<const char *> names;
    std::vector<aotc_tensor> values;
    for (const auto &kv : constants) {
      names.push_back(kv.first.c_str());
      values.push_back(kv.second.view());
    }
    aotc_error e{};
    check(aotc_loader_load_constants(loader_, names.data(), values.data(), int64_t(names.size()),
                                     check_full_update ? 1 : 0, &e), e);
  }

  // Model state (registered buffers the program updates), the loader's one copy.
  std::vector<std::string> buffer_names() const {
    const int64_t *index = nullptr;
    int64_t n = 0;
    aotc_error e{};
    check(aotc_loader_state(loader_, &index, &n, &e), e);
    const std::vector<ConstantSpec> specs = constant_specs();
    std::vector<std::string> names;
    for (int64_t k = 0; k < n; ++k) names.push_back(specs[size_t(index[k])].name);
    return names;
  }

  // A copy of state buffer `name` as the model holds it now.
  Tensor get_buffer(const std::string &name) const { return get_buffer_of(nullptr, name); }

  // Overwrites state buffer `name` (contiguous, its dtype and sizes) before the next call.
  void set_buffer(const std::string &name, const Tensor &value) { set_buffer_of(nullptr, name, value); }

  // Every state buffer back to the value the package holds.
  void reset_buffers() { reset_buffers_of(nullptr); }

  // Per-kernel timing of this model's library: off when loaded; profile(true) turns it on,
  // profile_read gives the steps in run order with their counts (those of every call, on
  // any thread), zeroed after reading with `reset`.
  void profile(bool on) {
    aotc_error e{};
    check(aotc_loader_profile(loader_, on ? 1 : 0, nullptr, &e), e);
  }

  std::vector<ProfileStep> profile_read(bool reset = false) {
    const aotc_profile_step *steps = nullptr;
    int64_t n = 0;
    aotc_error e{};
    check(aotc_loader_profile_steps(loader_, &steps, &n, &e), e);
    std::vector<aotc_profile_count> counts(static_cast<size_t>(n));
    check(aotc_loader_profile_read(loader_, counts.data(), n, reset ? 1 : 0, &e), e);
    std::vector<ProfileStep> out;
    for (int64_t k = 0; k < n; ++k) {
      ProfileStep step;
      step.kernel = steps[k].kernel;
      step.ops = steps[k].ops;
      step.source = steps[k].source;
      step.counts = counts[size_t(k)];
      out.push_back(std::move(step));
    }
    return out;
  }

  aotc_loader *handle() const { return loader_; }

 private:
  explicit ModelPackageLoader(aotc_loader *l) : loader_(l) { outputs_ = output_specs(); }

  // the loader's own state (null) or one of new_state()'s
  Tensor get_buffer_of(aotc_model_state *state, const std::string &name) const {
    auto get = [&](aotc_tensor *v) {
      aotc_error e{};
      check(state ? aotc_loader_get_model_state(loader_, state, name.c_str(), v, &e)
                  : aotc_loader_get_state(loader_, name.c_str(), v, &e), e);
    };
    for (const ConstantSpec &c : constant_specs()) {
      if (c.name != name) continue;
      Tensor t(c.dtype, c.sizes);
      aotc_tensor v = t.view();
      get(&v);
      return t;
    }
    aotc_tensor none{};
    get(&none);  // names the error
    return Tensor();
  }

  void set_buffer_of(aotc_model_state *state, const std::string &name, const Tensor &value) {
    const aotc_tensor v = value.view();
    aotc_error e{};
    check(state ? aotc_loader_set_model_state(loader_, state, name.c_str(), &v, &e)
                : aotc_loader_set_state(loader_, name.c_str(), &v, &e), e);
  }

  void reset_buffers_of(aotc_model_state *state) {
    aotc_error e{};
    check(state ? aotc_loader_reset_model_state(loader_, state, &e)
                : aotc_loader_reset_state(loader_, &e), e);
  }

  static std::vector<aotc_tensor> views(const std::vector<Tensor> &tensors) {
    std::vector<aotc_tensor> out;
    out.reserve(tensors.size() + 1);
    for (const Tensor &t : tensors) out.push_back(t.view());
    return out;
  }

  template <typename F> std::vector<TensorSpec> tensor_specs(F query) const {
    const aotc_tensor_info *infos = nullptr;
    int64_t n = 0;
    aotc_error e{};
    check(query(loader_, &infos, &n, &e), e);
    std::vector<TensorSpec> out;
    for (int64_t k = 0; k < n; ++k) {
      const aotc_tensor_info &t = infos[k];
      out.push_back({t.name, DType(t.dtype), std::vector<int64_t>(t.sizes, t.sizes + t.ndim),
                     std::vector<std::string>(t.dims, t.dims + t.ndim)});
    }
    return out;
  }

  aotc_loader *loader_ = nullptr;
  std::vector<TensorSpec> outputs_;  // what run() allocates
};

// One independent state of a loaded model: its calls read and update this state only, and
// calls on different states run at once (on different runners). Freed when destroyed.
class ModelPackageLoader::ModelState {
 public:
  ModelState(ModelState &&o) noexcept
      : loader_(std::exchange(o.loader_, nullptr)), state_(std::exchange(o.state_, nullptr)) {}
  ModelState &operator=(ModelState &&o) noexcept {
    std::swap(loader_, o.loader_);
    std::swap(state_, o.state_);
    return *this;
  }
  ModelState(const ModelState &) = delete;
  ModelState &operator=(const ModelState &) = delete;
  ~ModelState() {
    if (state_) {
      aotc_error e{};
      aotc_loader_free_state(loader_->loader_, state_, &e);
    }
  }

  std::vector<Tensor> run(const std::vector<Tensor> &inputs) const {
    return loader_->run_on(live(), inputs);
  }
  void run(const std::vector<Tensor> &inputs, std::vector<Tensor> &outputs) const {
    loader_->run_on(live(), inputs, outputs);
  }
  Tensor get_buffer(const std::string &name) const { return loader_->get_buffer_of(live(), name); }
  void set_buffer(const std::string &name, const Tensor &value) {
    loader_->set_buffer_of(live(), name, value);
  }
  void reset_buffers() { loader_->reset_buffers_of(live()); }

 private:
  friend class ModelPackageLoader;
  ModelState(ModelPackageLoader *loader, aotc_model_state *state) : loader_(loader), state_(state) {}
  aotc_model_state *live() const {
    if (!state_) throw ArgumentError(AOTC_ERR_ARGUMENT, "this model state was moved from");
    return state_;
  }
  ModelPackageLoader *loader_;
  aotc_model_state *state_;
};

inline ModelPackageLoader::ModelState ModelPackageLoader::new_state() {
  aotc_model_state *state = nullptr;
  aotc_error e{};
  check(aotc_loader_new_state(loader_, &state, &e), e);
  return ModelState(this, state);
}

}  // namespace aotc

#endif
