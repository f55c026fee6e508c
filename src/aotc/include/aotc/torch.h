// Optional, header-only adapter for programs that already link libtorch: the loader of
// torch::inductor::AOTIModelPackageLoader's shape over aotc's runtime.
//   aotc::TorchModelPackageLoader loader("model.pt2");
//   std::vector<at::Tensor> outputs = loader.run({at::randn({8, 10})});
// Inputs are CPU tensors (made contiguous when they are not); outputs are new tensors.
#ifndef AOTC_TORCH_H
#define AOTC_TORCH_H

#include <ATen/ATen.h>

#include <string>
#include <unordered_map>
#include <vector>

#include "aotc.hpp"

namespace aotc {

inline DType dtype_of(at::ScalarType t) {
  switch (t) {
    case at::kFloat: return DType::Float32;
    case at::kDouble: return DType::Float64;
    case at::kHalf: return DType::Float16;
    case at::kBFloat16: return DType::BFloat16;
    case at::kChar: return DType::Int8;
    case at::kShort: return DType::Int16;
    case at::kInt: return DType::Int32;
    case at::kLong: return DType::Int64;
    case at::kByte: return DType::UInt8;
    case at::kBool: return DType::Bool;
    case at::kUInt64: return DType::UInt64;
    case at::kComplexFloat: return DType::Complex64;
    case at::kComplexDouble: return DType::Complex128;
    default:
      throw InputError(AOTC_ERR_INPUT, std::string("aotc has no dtype for torch ") +
                       c10::toString(t));
  }
}

inline at::ScalarType scalar_type_of(DType d) {
  constexpr at::ScalarType types[] = {at::kFloat, at::kDouble, at::kHalf, at::kBFloat16,
                                      at::kChar,  at::kShort,  at::kInt,  at::kLong,
                                      at::kByte,  at::kBool,   at::kUInt64, at::kComplexFloat,
                                      at::kComplexDouble};
  return types[static_cast<int32_t>(d)];
}

class TorchModelPackageLoader {
 public:
  explicit TorchModelPackageLoader(const std::string &path, const std::string &model_name = "",
                                   bool run_single_threaded = false, size_t num_runners = 1)
      : loader_(path, model_name, static_cast<int>(run_single_threaded ? 1 : num_runners)),
        outputs_(loader_.output_specs()) {}

  // New output tensors, as AOTIModelPackageLoader::run returns them.
  std::vector<at::Tensor> run(const std::vector<at::Tensor> &inputs,
                              void *stream_handle = nullptr) {
    (void)stream_handle;  // CPU only: there is no stream
    std::vector<at::Tensor> ins;
    std::vector<aotc_tensor> views;
    for (size_t k = 0; k < inputs.size(); ++k) {
      const at::Tensor &t = inputs[k];
      if (!t.defined() || !t.device().is_cpu())
        throw InputError(AOTC_ERR_INPUT, "input " + std::to_string(k) +
                         ": aotc runs CPU tensors (got an undefined or non-CPU tensor)");
      ins.push_back(t.contiguous());
    }
    for (const at::Tensor &t : ins) views.push_back(view(t));
    size_t total = 0;
    for (const TensorSpec &s : outputs_) total += s.sizes.size();
    std::vector<int64_t> sizes(total + 1);
    aotc_error e{};
    check(aotc_loader_output_sizes(loader_.handle(), views.data(), int64_t(views.size()),
                                   sizes.data(), &e), e);
    std::vector<at::Tensor> outputs;
    std::vector<aotc_tensor> out_views;
    const int64_t *p = sizes.data();
    for (const TensorSpec &s : outputs_) {
      outputs.push_back(at::empty(at::IntArrayRef(p, s.sizes.size()),
                                  at::TensorOptions().dtype(scalar_type_of(s.dtype))));
      p += s.sizes.size();
    }
    for (const at::Tensor &t : outputs) out_views.push_back(view(t));
    check(aotc_loader_run(loader_.handle(), views.data(), int64_t(views.size()), out_views.data(),
                          int64_t(out_views.size()), &e), e);
    return outputs;
  }

  std::unordered_map<std::string, std::string> get_metadata() const { return loader_.metadata(); }
  std::vector<std::string> get_constant_fqns() const { return loader_.constant_names(); }

  // The values are copied; use_inactive is accepted for AOTI's signature (aotc swaps at once).
  void load_constants(std::unordered_map<std::string, at::Tensor> &constants_map,
                      bool use_inactive = false, bool check_full_update = false) {
    (void)use_inactive;
    std::unordered_map<std::string, at::Tensor> dense;  // keeps contiguous copies alive
    std::unordered_map<std::string, Tensor> borrowed;
    for (auto &kv : constants_map) {
      at::Tensor t = kv.second.contiguous();
      dense[kv.first] = t;
      borrowed[kv.first] = Tensor::borrow(t.data_ptr(), dtype_of(t.scalar_type()), t.sizes().vec());
    }
    loader_.load_constants(borrowed, check_full_update);
  }

  ModelPackageLoader &loader() { return loader_; }

 private:
  static aotc_tensor view(const at::Tensor &t) {
    return {t.data_ptr(), t.sizes().data(), t.strides().data(), static_cast<int32_t>(t.dim()),
            static_cast<int32_t>(dtype_of(t.scalar_type()))};
  }

  ModelPackageLoader loader_;
  std::vector<TensorSpec> outputs_;
};

}  // namespace aotc

#endif
