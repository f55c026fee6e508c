/* The aotc runtime's C API: open a model of a .pt2 package (from a path or a memory buffer)
 * and run it, with no libtorch, no Python and no JSON or zip library. Usable from C, C++,
 * Rust, Go or C#; aotc.hpp is the C++17 API on top of it.
 *
 * Every function returns 0 (AOTC_OK) or an aotc_status, and fills the caller's aotc_error
 * (when not NULL) with the status and a message naming what was wrong. The runtime keeps no
 * global state: a loader may be used from several threads at once; each run takes one of
 * its `num_runners` model objects (waiting while all are busy). */
#ifndef AOTC_RUNTIME_H
#define AOTC_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#include "aotc_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

#define AOTC_RUNTIME_VERSION 1

#if defined(__GNUC__) || defined(__clang__)
#define AOTC_RUNTIME_API __attribute__((visibility("default")))
#else
#define AOTC_RUNTIME_API
#endif

typedef struct aotc_loader aotc_loader;

typedef struct {
  int32_t status; /* aotc_status */
  char message[1024];
} aotc_error;

/* model_name NULL or "": the package's only model, else the one named "model".
 * num_runners: how many calls may run at once (at least 1). */
AOTC_RUNTIME_API
int aotc_loader_open(const char *path, const char *model_name, int32_t num_runners,
                     aotc_loader **loader, aotc_error *error);
/* The buffer holds a whole .pt2 file and must outlive the loader (weights are used in
 * place when the buffer keeps them 64-byte aligned, else copied). */
AOTC_RUNTIME_API
int aotc_loader_open_buffer(const void *data, size_t size, const char *model_name,
                            int32_t num_runners, aotc_loader **loader, aotc_error *error);
AOTC_RUNTIME_API
void aotc_loader_close(aotc_loader *loader); /* NULL: nothing */

/* What the model takes and returns; the tables live as long as the loader. */
AOTC_RUNTIME_API
int aotc_loader_inputs(const aotc_loader *loader, const aotc_tensor_info **infos, int64_t *n,
                       aotc_error *error);
AOTC_RUNTIME_API
int aotc_loader_outputs(const aotc_loader *loader, const aotc_tensor_info **infos, int64_t *n,
                        aotc_error *error);
AOTC_RUNTIME_API
int aotc_loader_symbols(const aotc_loader *loader, const aotc_symbol_info **infos, int64_t *n,
                        aotc_error *error);
AOTC_RUNTIME_API
int aotc_loader_constants(const aotc_loader *loader, const aotc_constant_info **infos,
                          int64_t *n, aotc_error *error);
/* String pairs: the library's metadata (model_name, aotc_version, torch_version, device,
 * arch, isa, num_threads) and the runtime's (abi_version, package). */
AOTC_RUNTIME_API
int aotc_loader_metadata(const aotc_loader *loader, const char *const **keys,
                         const char *const **values, int64_t *n, aotc_error *error);

/* The output sizes for these inputs: every output's ndim sizes one after another. The
 * inputs are checked (count, dtype, rank, static sizes, symbol ranges). */
AOTC_RUNTIME_API
int aotc_loader_output_sizes(aotc_loader *loader, const aotc_tensor *inputs, int64_t n_in,
                             int64_t *sizes, aotc_error *error);
/* Runs the model; the caller allocates contiguous outputs of the sizes above. Inputs
 * and outputs are checked before any kernel runs (outputs sized by values a kernel computes:
 * once those are known). */
AOTC_RUNTIME_API
int aotc_loader_run(aotc_loader *loader, const aotc_tensor *inputs, int64_t n_in,
                    aotc_tensor *outputs, int64_t n_out, aotc_error *error);

/* Replaces constants by name with copies of `values` (contiguous, same dtype and sizes).
 * check_full_update != 0: every constant must be given. Waits for running calls. */
AOTC_RUNTIME_API
int aotc_loader_load_constants(aotc_loader *loader, const char *const *names,
                               const aotc_tensor *values, int64_t n, int32_t check_full_update,
                               aotc_error *error);

/* Model state: the registered buffers the program updates in place (a counter, a KV
 * cache). The state belongs to the loader: one copy, made from the package's values at
 * open and kept across runs and load_constants, shared by all its model objects; runs of
 * a model with state take turns. aotc_loader_state gives each state buffer's index in
 * aotc_loader_constants (its name, dtype and sizes). get copies a buffer's current value
 * into `value`, set overwrites it from `value` (contiguous, its dtype and sizes), reset puts
 * every buffer back to the package's value. */
AOTC_RUNTIME_API
int aotc_loader_state(const aotc_loader *loader, const int64_t **constant_index, int64_t *n,
                      aotc_error *error);
AOTC_RUNTIME_API
int aotc_loader_get_state(aotc_loader *loader, const char *name, aotc_tensor *value,
                          aotc_error *error);
AOTC_RUNTIME_API
int aotc_loader_set_state(aotc_loader *loader, const char *name, const aotc_tensor *value,
                          aotc_error *error);
AOTC_RUNTIME_API
int aotc_loader_reset_state(aotc_loader *loader, aotc_error *error);

/* Independent states (a KV cache per sequence): besides the loader's own state above, up
 * to `max_states` more (8 unless set), each its own copy of every state buffer at the
 * package's values, the weights shared. aotc_loader_run_state runs a call that reads and
 * updates `state` only: calls on different states run at once (on different runners),
 * calls on one state one at a time. A new state beyond the limit fails with
 * AOTC_ERR_STATE_LIMIT; a model without state buffers with AOTC_ERR_INPUT. Free a state
 * before its loader is closed (free waits for a call running on it); the _model_state
 * functions read, write and reset one state's buffers as aotc_loader_*_state do the
 * loader's own. */
typedef struct aotc_model_state aotc_model_state;
AOTC_RUNTIME_API
int aotc_loader_set_max_states(aotc_loader *loader, int32_t max_states, aotc_error *error);
AOTC_RUNTIME_API
int aotc_loader_new_state(aotc_loader *loader, aotc_model_state **state, aotc_error *error);
AOTC_RUNTIME_API
int aotc_loader_free_state(aotc_loader *loader, aotc_model_state *state, aotc_error *error);
AOTC_RUNTIME_API
int aotc_loader_run_state(aotc_loader *loader, aotc_model_state *state, const aotc_tensor *inputs,
                          int64_t n_in, aotc_tensor *outputs, int64_t n_out, aotc_error *error);
AOTC_RUNTIME_API
int aotc_loader_get_model_state(aotc_loader *loader, aotc_model_state *state, const char *name,
                                aotc_tensor *value, aotc_error *error);
AOTC_RUNTIME_API
int aotc_loader_set_model_state(aotc_loader *loader, aotc_model_state *state, const char *name,
                                const aotc_tensor *value, aotc_error *error);
AOTC_RUNTIME_API
int aotc_loader_reset_model_state(aotc_loader *loader, aotc_model_state *state,
                                  aotc_error *error);

/* The run timed step by step (aotc_abi.h, version 7). aotc_loader_profile_steps describes
 * the steps in run order; aotc_loader_profile switches the timing of the loaded model's
 * library on or off (it starts off; *was_on, if not NULL, gets the previous setting);
 * aotc_loader_profile_read copies the first n steps' counts (n at most their number) and,
 * with `reset`, zeroes them. The counts belong to the library: calls on every thread add
 * to them. */
AOTC_RUNTIME_API
int aotc_loader_profile_steps(const aotc_loader *loader, const aotc_profile_step **steps,
                              int64_t *n, aotc_error *error);
AOTC_RUNTIME_API
int aotc_loader_profile(aotc_loader *loader, int32_t on, int32_t *was_on, aotc_error *error);
AOTC_RUNTIME_API
int aotc_loader_profile_read(aotc_loader *loader, aotc_profile_count *counts, int64_t n,
                             int32_t reset, aotc_error *error);

#ifdef __cplusplus
}
#endif
#endif
