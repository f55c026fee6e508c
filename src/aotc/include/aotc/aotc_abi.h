/* The C ABI every aotc model.so exports (version 8).
 * Every function returns 0 on success, or a non-zero aotc_status with a message in
 * aotc_last_error() (thread-local). No C++ exception and no abort crosses this ABI.
 * New functions may be added in later versions; existing meanings never change. Any change
 * of what this header declares is a new version, and a loader takes a library of exactly
 * its own version, refusing others with advice to compile the model again (docs/
 * ARCHITECTURE.md, "Versions"). A model library defines them in kernels/aotc_model_abi.h
 * (aotc_crc32 in kernels/checksum.cpp). */
#ifndef AOTC_ABI_H
#define AOTC_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define AOTC_ABI_VERSION 8

typedef struct {
  void *data;
  const int64_t *sizes;
  const int64_t *strides; /* in elements */
  int32_t ndim;
  int32_t dtype; /* aotc_dtype */
} aotc_tensor;

typedef enum {
  AOTC_FLOAT32 = 0, AOTC_FLOAT64 = 1, AOTC_FLOAT16 = 2, AOTC_BFLOAT16 = 3, AOTC_INT8 = 4,
  AOTC_INT16 = 5, AOTC_INT32 = 6, AOTC_INT64 = 7, AOTC_UINT8 = 8, AOTC_BOOL = 9,
  AOTC_UINT64 = 10, AOTC_COMPLEX64 = 11, AOTC_COMPLEX128 = 12 /* version 8: interleaved
  (real, imag) pairs of float / double, as std::complex, numpy and torch lay them out */
} aotc_dtype;

typedef enum {
  AOTC_OK = 0,
  AOTC_ERR_INPUT = 1,   /* inputs or outputs do not match the compiled signature */
  AOTC_ERR_MEMORY = 2,  /* an allocation failed */
  AOTC_ERR_ARGUMENT = 3, /* a bad argument to the ABI itself (null model, wrong counts) */
  AOTC_ERR_INTERNAL = 4,
  AOTC_ERR_PACKAGE = 5, /* (loaders only) a package is missing, corrupt, foreign or lacks a model */
  AOTC_ERR_STATE_LIMIT = 6 /* (loaders only) every state a loader may hold is in use */
} aotc_status;

/* Version 2: the library describes itself, so a loader needs no JSON parser. The tables
 * are immutable and live as long as the library is loaded. */
typedef struct {
  const char *name;
  const char *const *dims; /* ndim strings, each size as text: "10", "s0", "2*s0" */
  const int64_t *sizes;    /* ndim sizes: the static size, or -1 where it depends on symbols */
  int32_t ndim;
  int32_t dtype;           /* aotc_dtype */
} aotc_tensor_info;

typedef struct {
  const char *name; /* a shape symbol, as it appears in the dims of aotc_tensor_info */
  int64_t min;
  int64_t max;      /* -1: unbounded */
} aotc_symbol_info;

typedef struct {
  const char *name;     /* fully-qualified name in the state dict */
  const int64_t *sizes;
  int32_t ndim;
  int32_t dtype;
  int64_t offset;       /* byte offset in the package's weights.bin, 64-byte aligned */
  int64_t nbytes;
} aotc_constant_info;

int aotc_abi_version(void);
int aotc_create(const void *const *constants, int64_t n_constants, void **model);
/* Output sizes for these inputs. When they depend on values a kernel computes (a
 * .item() of a sum, the count of a mask computed from a matmul), this runs the model's
 * kernels up to the point where those values are known, in the model object's arena; the
 * following aotc_run computes everything again from the inputs. */
int aotc_output_shapes(void *model, const aotc_tensor *inputs, int64_t n_in, int64_t *out_sizes);
int aotc_run(void *model, const aotc_tensor *inputs, int64_t n_in, aotc_tensor *outputs,
             int64_t n_out);
int aotc_set_num_threads(void *model, int32_t n); /* n <= 0: OpenMP's default */
void aotc_destroy(void *model);
const char *aotc_last_error(void);

/* version 2: inputs and outputs in ABI order, symbols in the order of the run's symbol
 * table, constants in the order aotc_create takes them, metadata as string pairs */
int aotc_describe_inputs(const aotc_tensor_info **infos, int64_t *n);
int aotc_describe_outputs(const aotc_tensor_info **infos, int64_t *n);
int aotc_describe_symbols(const aotc_symbol_info **infos, int64_t *n);
int aotc_describe_constants(const aotc_constant_info **infos, int64_t *n);
int aotc_describe_metadata(const char *const **keys, const char *const **values, int64_t *n);

/* version 3: model state. The registered buffers a program updates in place (a counter, a
 * KV cache) are state: each model object owns a copy, made from the constant at
 * aotc_create, that runs update and that persists across runs. aotc_describe_state gives
 * the constants-table index of each state buffer, in state order; aotc_state gives the
 * model object's memory of state buffer k (the constant's dtype and sizes, contiguous),
 * which a caller may read or overwrite between runs. */
int aotc_describe_state(const int64_t **constant_index, int64_t *n);
int aotc_state(void *model, int64_t k, void **data);

/* version 4: state shared by a loader's model objects. aotc_share_state makes model
 * object `model` use `data` (the state buffer's bytes, 64-byte aligned, owned by the
 * caller and outliving the object) as state buffer k from now on, instead of its own copy.
 * A loader gives every model object the same memory, so the state belongs to the loaded
 * model, whichever object serves a call; the loader runs calls of a model with state one
 * at a time. */
int aotc_share_state(void *model, int64_t k, void *data);

/* version 5: prepacked constants. A weight that only GEMMs read is stored in weights.bin in
 * the GEMM kernel's panel layout for the library's ISA (aotc_constant_info.nbytes is its
 * stored size; sizes and dtype stay the user's), and aotc_create fails with
 * AOTC_ERR_PACKAGE if the kernel linked in uses another layout. A loader that swaps
 * constant k passes the user's contiguous value (the constant's sizes and dtype) to
 * aotc_pack_constant, which writes the nbytes the model reads to dst (64-byte aligned):
 * the packed layout, or a plain copy for a constant stored as given. A value the packed
 * layout cannot hold (an int4 weight stored two values a byte given a value outside
 * -8..7) is AOTC_ERR_INPUT, its message counting them. */
int aotc_pack_constant(int64_t k, const void *src, void *dst);

/* version 6: the dtype AOTC_UINT64 (hash_tensor's result), and the package's checksum:
 * aotc_crc32 continues the CRC-32 `crc` (zlib's
 * polynomial and convention: crc32(crc32(0, a), b) is the CRC of a followed by b) over
 * `size` bytes, so a loader checks weights.bin with the library before it uses it. */
uint32_t aotc_crc32(uint32_t crc, const void *data, size_t size);

/* version 7: the status AOTC_ERR_STATE_LIMIT (the C runtime's independent model states);
 * and the run timed step by step. A run is a sequence of steps (a generated kernel,
 * or a call into a shipped one), described in run order by aotc_describe_profile: the
 * kernel's name, the ATen nodes it computes and the user's source lines ("" where unknown).
 * While profiling is on (aotc_profile_enable(1); off when the library loads) each step
 * that runs adds to its counts, on CLOCK_MONOTONIC: how many times it ran, the nanoseconds
 * in total, and its latest run's start, duration, floating-point operations and bytes
 * (the whole buffers it reads and writes, at that run's sizes; flops 0 for a step that only
 * moves data). The counts are the library's, added to by every model object of it and by
 * calls on several threads at once. aotc_profile_read copies the first n of them (n at most
 * the number of steps) and, with `reset`, zeroes them; aotc_profile_enable returns whether
 * profiling was on. Off, a step costs one relaxed load of the switch. */
typedef struct {
  const char *kernel;
  const char *ops;
  const char *source;
} aotc_profile_step;

typedef struct {
  uint64_t runs;
  uint64_t total_ns;
  uint64_t last_begin_ns;
  uint64_t last_ns;
  double last_flops;
  double last_bytes;
} aotc_profile_count;

int aotc_describe_profile(const aotc_profile_step **steps, int64_t *n);
int aotc_profile_enable(int32_t on);
int aotc_profile_read(aotc_profile_count *counts, int64_t n, int32_t reset);

#ifdef __cplusplus
}
#endif
#endif
