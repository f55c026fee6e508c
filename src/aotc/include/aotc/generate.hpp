// Text generation with a decoder LM package from C++, as aotc.runtime.generate does from
// Python: the prompt in one call (prefill), then one token per call, greedy or sampled,
// until a stop token or the token budget. The package is one exported through transformers'
// TorchExportableModuleForDecoderOnlyLM: inputs input_ids [1, T] and cache_position [T]
// (int64), logits [1, T, vocab] (float32) first among its outputs, its KV cache as state.
// The caller tokenizes.
//
//   aotc::ModelPackageLoader loader("llama.pt2");
//   auto state = loader.new_state();  // a cache of this sequence's own
//   std::vector<int64_t> tokens = aotc::generate(loader, {1, 5, 9}, {32, {2}}, &state);
#ifndef AOTC_GENERATE_HPP
#define AOTC_GENERATE_HPP

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "aotc.hpp"

namespace aotc {

struct GenerateOptions {
  int max_new_tokens = 16;
  std::vector<int64_t> stop_token_ids;
  double temperature = 0.0;  // 0: the most likely token (greedy)
  int top_k = 0;             // sampling among the k most likely (0: all)
  uint64_t seed = 0;         // the sampler's (std::mt19937_64): reproducible in C++
};

// The longest sequence the package's cache holds: the bound export gave cache_position's
// length (-1: none).
inline int64_t cache_length(const ModelPackageLoader &loader) {
  for (const TensorSpec &s : loader.input_specs()) {
    if (s.name != "cache_position" || s.dims.empty()) continue;
    for (const SymbolSpec &sym : loader.symbols())
      if (sym.name == s.dims[0]) return sym.max;
  }
  return -1;
}

namespace detail {

inline int64_t choose(const float *logits, int64_t vocab, const GenerateOptions &opt,
                      std::mt19937_64 &rng) {
  if (opt.temperature <= 0) return std::max_element(logits, logits + vocab) - logits;
  std::vector<double> scaled(static_cast<size_t>(vocab));
  for (int64_t v = 0; v < vocab; ++v) scaled[size_t(v)] = double(logits[v]) / opt.temperature;
  if (opt.top_k > 0 && opt.top_k < vocab) {
    std::vector<double> sorted = scaled;
    std::nth_element(sorted.begin(), sorted.begin() + (opt.top_k - 1), sorted.end(),
                     std::greater<double>());
    const double cut = sorted[size_t(opt.top_k - 1)];
    for (double &x : scaled)
      if (x < cut) x = -INFINITY;
  }
  const double top = *std::max_element(scaled.begin(), scaled.end());
  std::vector<double> p(scaled.size());
  for (size_t v = 0; v < p.size(); ++v) p[v] = std::exp(scaled[v] - top);
  std::discrete_distribution<int64_t> pick(p.begin(), p.end());
  return pick(rng);
}

}  // namespace detail

// The new tokens after `prompt` (at most max_new_tokens, ending with the stop token when one
// came). With `state`, the calls read and update that state's cache (it is reset first),
// else the loader's own (reset too). A sequence longer than the cache is an InputError
// before any call.
inline std::vector<int64_t> generate(ModelPackageLoader &loader, const std::vector<int64_t> &prompt,
                                     const GenerateOptions &opt = {},
                                     ModelPackageLoader::ModelState *state = nullptr) {
  if (prompt.empty()) throw InputError(AOTC_ERR_INPUT, "generate: the prompt is empty");
  if (opt.max_new_tokens < 1)
    throw InputError(AOTC_ERR_INPUT, "generate: max_new_tokens must be at least 1");
  const int64_t limit = cache_length(loader);
  const int64_t needed = int64_t(prompt.size()) + opt.max_new_tokens - 1;
  if (limit >= 0 && needed > limit)
    throw InputError(AOTC_ERR_INPUT, "generate: the sequence needs a cache of " +
                     std::to_string(needed) + " positions; the package's holds " +
                     std::to_string(limit));
  // the inputs by name, in the package's order
  const std::vector<TensorSpec> specs = loader.input_specs();
  int ids_at = -1, positions_at = -1;
  for (size_t k = 0; k < specs.size(); ++k) {
    if (specs[k].name == "input_ids") ids_at = int(k);
    if (specs[k].name == "cache_position") positions_at = int(k);
  }
  if (ids_at < 0 || positions_at < 0 || specs.size() != 2)
    throw InputError(AOTC_ERR_INPUT, "generate: the model must take input_ids and cache_position");
  auto call = [&](const std::vector<int64_t> &ids, int64_t first_position) {
    const int64_t n = int64_t(ids.size());
    Tensor input_ids(DType::Int64, {1, n}), positions(DType::Int64, {n});
    for (int64_t k = 0; k < n; ++k) {
      input_ids.data<int64_t>()[k] = ids[size_t(k)];
      positions.data<int64_t>()[k] = first_position + k;
    }
    std::vector<Tensor> inputs(2);
    inputs[size_t(ids_at)] = input_ids;
    inputs[size_t(positions_at)] = positions;
    return state ? state->run(inputs) : loader.run(inputs);
  };
  if (state) state->reset_buffers();
  else loader.reset_buffers();
  std::mt19937_64 rng(opt.seed);
  std::vector<int64_t> tokens;
  std::vector<Tensor> out = call(prompt, 0);
  for (;;) {
    const Tensor &logits = out[0];
    const int64_t vocab = logits.sizes().back(), last = logits.sizes()[1] - 1;
    tokens.push_back(detail::choose(logits.data<float>() + last * vocab, vocab, opt, rng));
    const bool stop = std::find(opt.stop_token_ids.begin(), opt.stop_token_ids.end(),
                                tokens.back()) != opt.stop_token_ids.end();
    if (stop || int(tokens.size()) == opt.max_new_tokens) return tokens;
    out = call({tokens.back()}, int64_t(prompt.size() + tokens.size()) - 1);
  }
}

}  // namespace aotc

#endif
