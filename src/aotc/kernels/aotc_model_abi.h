// The C ABI of include/aotc/aotc_abi.h, written once for every model: the generated
// translation unit includes this last, after it has defined, in its anonymous namespace,
// what differs from model to model:
//   constants   kNumInputs, kNumOutputs, kNumConstants, kNumSymbols, kConstantBytes[],
//               kNumState, kStateConstant[], kNumLateStages (arenas sized during the run),
//               kOutputSizesNeedRun (output sizes depend on values the kernels compute),
//               and the description tables kInputs, kOutputs, kSymbols, kConstants,
//               kKeys, kValues, kNumMetadata, kNumProfileSteps and kProfileSteps[]
//   the profile  g_profiling (its switch) and g_profile[] (a ProfileSlot per step)
//   struct Model  constants, state, shared_state, arena, late_arena[], num_threads
//   functions   bind_inputs(in, n_in, sym)          binds the shape symbols, checks inputs
//               output_sizes(sym, sizes)            n_out x kMaxRank sizes from the symbols
//               run(m, in, out, n_out, sym, shapes_only)  every kernel in order
//               check_packing()                     the linked GEMM's panel layout
//               pack_constant(k, src, dst)          false for a constant stored as given, or
//                                                   a failure (g_no_memory, g_outside_int4)
// Not a header to include anywhere else: its functions are the model library's exports.
#ifndef AOTC_MODEL_ABI_H
#define AOTC_MODEL_ABI_H

#include <omp.h>

#include "aotc_codegen.h"

namespace {

// The model's thread count around a call of run, and OpenMP's own restored after it.
int run_with_threads(Model *m, const aotc_tensor *in, aotc_tensor *out, int64_t n_out,
                     int64_t *sym, bool shapes_only) {
  const int saved_threads = omp_get_max_threads();
  if (m->num_threads > 0) omp_set_num_threads(m->num_threads);
  const int rc = run(m, in, out, n_out, sym, shapes_only);
  if (m->num_threads > 0) omp_set_num_threads(saved_threads);
  return rc;
}

}  // namespace

// Every function below must have been declared by aotc_abi.h: one defined without a
// declaration fails to compile, and C linkage makes a changed signature a conflict.
#pragma GCC diagnostic push
#if defined(__clang__)
#pragma GCC diagnostic error "-Wmissing-prototypes"
#else
#pragma GCC diagnostic error "-Wmissing-declarations"
#endif

extern "C" {

int aotc_abi_version(void) { return AOTC_ABI_VERSION; }

const char *aotc_last_error(void) { return aotc::g_error; }

int aotc_create(const void *const *constants, int64_t n_constants, void **model) {
  if (!model) return aotc::fail(AOTC_ERR_ARGUMENT, "aotc_create: model out-pointer is null");
  *model = nullptr;
  if (n_constants != kNumConstants)
    return aotc::fail(AOTC_ERR_ARGUMENT, "aotc_create: expected %lld constants, got %lld",
                      (long long)kNumConstants, (long long)n_constants);
  if (int rc = check_packing()) return rc;
  Model *m = static_cast<Model *>(std::calloc(1, sizeof(Model)));
  if (!m) return aotc::fail(AOTC_ERR_MEMORY, "aotc_create: out of memory");
  for (int64_t k = 0; k < kNumConstants; ++k) {
    if (kConstantBytes[k] > 0 && (!constants || !constants[k])) {
      std::free(m);
      return aotc::fail(AOTC_ERR_ARGUMENT, "aotc_create: constant %lld is null", (long long)k);
    }
    m->constants[k] = constants[k];
  }
  for (int64_t j = 0; j < kNumState; ++j) {  // the state starts as the package's values
    const int64_t bytes = kConstantBytes[kStateConstant[j]];
    m->state[j] = std::aligned_alloc(64, aotc::align64(bytes > 0 ? bytes : 1));
    if (!m->state[j]) {
      aotc_destroy(m);
      return aotc::fail(AOTC_ERR_MEMORY, "aotc_create: out of memory for the model state");
    }
    if (bytes > 0) __builtin_memcpy(m->state[j], constants[kStateConstant[j]], bytes);
  }
  *model = m;
  return AOTC_OK;
}

int aotc_describe_state(const int64_t **constant_index, int64_t *n) {
  if (!constant_index || !n) return aotc::fail(AOTC_ERR_ARGUMENT, "aotc_describe_state: null argument");
  *constant_index = kStateConstant;
  *n = kNumState;
  return AOTC_OK;
}

int aotc_state(void *model, int64_t k, void **data) {
  if (!model || !data) return aotc::fail(AOTC_ERR_ARGUMENT, "aotc_state: null argument");
  if (k < 0 || k >= kNumState)
    return aotc::fail(AOTC_ERR_ARGUMENT, "aotc_state: no state buffer %lld (the model has %lld)",
                      (long long)k, (long long)kNumState);
  *data = static_cast<Model *>(model)->state[k];
  return AOTC_OK;
}

int aotc_share_state(void *model, int64_t k, void *data) {
  if (!model || !data) return aotc::fail(AOTC_ERR_ARGUMENT, "aotc_share_state: null argument");
  if (k < 0 || k >= kNumState)
    return aotc::fail(AOTC_ERR_ARGUMENT, "aotc_share_state: no state buffer %lld (the model has %lld)",
                      (long long)k, (long long)kNumState);
  Model *m = static_cast<Model *>(model);
  if (!m->shared_state[k]) std::free(m->state[k]);
  m->state[k] = data;
  m->shared_state[k] = true;
  return AOTC_OK;
}

int aotc_set_num_threads(void *model, int32_t n) {
  if (!model) return aotc::fail(AOTC_ERR_ARGUMENT, "aotc_set_num_threads: null model");
  static_cast<Model *>(model)->num_threads = n;
  return AOTC_OK;
}

int aotc_output_shapes(void *model, const aotc_tensor *inputs, int64_t n_in, int64_t *out_sizes) {
  if (!model || !out_sizes) return aotc::fail(AOTC_ERR_ARGUMENT, "aotc_output_shapes: null argument");
  if (n_in > 0 && !inputs) return aotc::fail(AOTC_ERR_ARGUMENT, "aotc_output_shapes: null inputs");
  int64_t sym[kNumSymbols > 0 ? kNumSymbols : 1] = {0};
  if (int rc = bind_inputs(inputs, n_in, sym)) return rc;
  if constexpr (kOutputSizesNeedRun) {  // the kernels that bind their symbols run first
    if (int rc = run_with_threads(static_cast<Model *>(model), inputs, nullptr, 0, sym, true))
      return rc;
  }
  output_sizes(sym, out_sizes);
  return AOTC_OK;
}

int aotc_run(void *model, const aotc_tensor *inputs, int64_t n_in, aotc_tensor *outputs,
             int64_t n_out) {
  if (!model) return aotc::fail(AOTC_ERR_ARGUMENT, "aotc_run: null model");
  if ((n_in > 0 && !inputs) || (n_out > 0 && !outputs))
    return aotc::fail(AOTC_ERR_ARGUMENT, "aotc_run: null inputs or outputs");
  int64_t sym[kNumSymbols > 0 ? kNumSymbols : 1] = {0};
  if (int rc = bind_inputs(inputs, n_in, sym)) return rc;
  return run_with_threads(static_cast<Model *>(model), inputs, outputs, n_out, sym, false);
}

void aotc_destroy(void *model) {
  if (!model) return;
  Model *m = static_cast<Model *>(model);
  for (int64_t j = 0; j < kNumState; ++j)
    if (!m->shared_state[j]) std::free(m->state[j]);
  std::free(m->arena);
  for (int64_t k = 0; k < kNumLateStages; ++k) std::free(m->late_arena[k]);
  std::free(m);
}

// version 2: the library's description of itself
int aotc_describe_inputs(const aotc_tensor_info **infos, int64_t *n) {
  if (!infos || !n) return aotc::fail(AOTC_ERR_ARGUMENT, "aotc_describe_inputs: null argument");
  *infos = kInputs;
  *n = kNumInputs;
  return AOTC_OK;
}

int aotc_describe_outputs(const aotc_tensor_info **infos, int64_t *n) {
  if (!infos || !n) return aotc::fail(AOTC_ERR_ARGUMENT, "aotc_describe_outputs: null argument");
  *infos = kOutputs;
  *n = kNumOutputs;
  return AOTC_OK;
}

int aotc_describe_symbols(const aotc_symbol_info **infos, int64_t *n) {
  if (!infos || !n) return aotc::fail(AOTC_ERR_ARGUMENT, "aotc_describe_symbols: null argument");
  *infos = kSymbols;
  *n = kNumSymbols;
  return AOTC_OK;
}

int aotc_describe_constants(const aotc_constant_info **infos, int64_t *n) {
  if (!infos || !n) return aotc::fail(AOTC_ERR_ARGUMENT, "aotc_describe_constants: null argument");
  *infos = kConstants;
  *n = kNumConstants;
  return AOTC_OK;
}

int aotc_describe_metadata(const char *const **keys, const char *const **values, int64_t *n) {
  if (!keys || !values || !n)
    return aotc::fail(AOTC_ERR_ARGUMENT, "aotc_describe_metadata: null argument");
  *keys = kKeys;
  *values = kValues;
  *n = kNumMetadata;
  return AOTC_OK;
}

// version 5: a swapped constant packed as the package stores it
int aotc_pack_constant(int64_t k, const void *src, void *dst) {
  if (k < 0 || k >= kNumConstants)
    return aotc::fail(AOTC_ERR_ARGUMENT, "aotc_pack_constant: no constant %lld (the model has %lld)",
                      (long long)k, (long long)kNumConstants);
  if (kConstantBytes[k] == 0) return AOTC_OK;
  if (!src || !dst) return aotc::fail(AOTC_ERR_ARGUMENT, "aotc_pack_constant: null argument");
  aotc::g_no_memory = false;
  aotc::g_outside_int4 = 0;
  if (!pack_constant(k, src, dst)) {
    if (aotc::g_no_memory)
      return aotc::fail(AOTC_ERR_MEMORY, "aotc_pack_constant: no memory to widen constant %lld",
                        (long long)k);
    if (aotc::g_outside_int4 != 0)
      return aotc::fail(AOTC_ERR_INPUT, "%lld of the values lie outside -8..7: this int4 "
                        "weight is stored two values a byte, which holds only int4 values",
                        (long long)aotc::g_outside_int4);
    __builtin_memcpy(dst, src, size_t(kConstantBytes[k]));
  }
  return AOTC_OK;
}

// version 7: the run timed step by step
int aotc_describe_profile(const aotc_profile_step **steps, int64_t *n) {
  if (!steps || !n) return aotc::fail(AOTC_ERR_ARGUMENT, "aotc_describe_profile: null argument");
  *steps = kProfileSteps;
  *n = kNumProfileSteps;
  return AOTC_OK;
}

int aotc_profile_enable(int32_t on) {
  return g_profiling.exchange(on != 0, std::memory_order_relaxed) ? 1 : 0;
}

int aotc_profile_read(aotc_profile_count *counts, int64_t n, int32_t reset) {
  if (n < 0 || n > kNumProfileSteps)
    return aotc::fail(AOTC_ERR_ARGUMENT, "aotc_profile_read: %lld counts asked, the run has %lld "
                      "steps", (long long)n, (long long)kNumProfileSteps);
  if (n > 0 && !counts) return aotc::fail(AOTC_ERR_ARGUMENT, "aotc_profile_read: null counts");
  for (int64_t k = 0; k < n; ++k) counts[k] = g_profile[k].read(reset != 0);
  return AOTC_OK;
}

}  // extern "C"

#pragma GCC diagnostic pop

#endif
