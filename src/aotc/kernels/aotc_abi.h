/* The C ABI every aotc model.so exports (version 1).
 * Every function returns 0 on success, or a non-zero aotc_status with a message in
 * aotc_last_error() (thread-local). No C++ exception and no abort crosses this ABI.
 * New functions may be added in later versions; existing meanings never change. */
#ifndef AOTC_ABI_H
#define AOTC_ABI_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define AOTC_ABI_VERSION 1

typedef struct {
  void *data;
  const int64_t *sizes;
  const int64_t *strides; /* in elements */
  int32_t ndim;
  int32_t dtype; /* aotc_dtype */
} aotc_tensor;

typedef enum {
  AOTC_FLOAT32 = 0, AOTC_FLOAT64 = 1, AOTC_FLOAT16 = 2, AOTC_BFLOAT16 = 3, AOTC_INT8 = 4,
  AOTC_INT16 = 5, AOTC_INT32 = 6, AOTC_INT64 = 7, AOTC_UINT8 = 8, AOTC_BOOL = 9
} aotc_dtype;

typedef enum {
  AOTC_OK = 0,
  AOTC_ERR_INPUT = 1,   /* inputs or outputs do not match the compiled signature */
  AOTC_ERR_MEMORY = 2,  /* an allocation failed */
  AOTC_ERR_ARGUMENT = 3, /* a bad argument to the ABI itself (null model, wrong counts) */
  AOTC_ERR_INTERNAL = 4
} aotc_status;

int aotc_abi_version(void);
int aotc_create(const void *const *constants, int64_t n_constants, void **model);
int aotc_output_shapes(void *model, const aotc_tensor *inputs, int64_t n_in, int64_t *out_sizes);
int aotc_run(void *model, const aotc_tensor *inputs, int64_t n_in, aotc_tensor *outputs,
             int64_t n_out);
int aotc_set_num_threads(void *model, int32_t n); /* n <= 0: OpenMP's default */
void aotc_destroy(void *model);
const char *aotc_last_error(void);

#ifdef __cplusplus
}
#endif
#endif
