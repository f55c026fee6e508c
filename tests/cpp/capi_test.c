/* Exercises the runtime's C API from C: open (path and buffer), describe, run, constants,
 * and every error path, on the README model (dynamic batch 1..1024). Prints one line per
 * check; exits 1 at the first check that fails.
 * usage: capi_test model.pt2 damaged.pt2 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aotc/aotc_runtime.h"

static int failures = 0;

static void expect(int ok, const char *what, const aotc_error *e) {
  printf("%s: %s%s%s\n", ok ? "ok" : "FAILED", what, e ? " -- " : "", e ? e->message : "");
  if (!ok) failures++;
}

static int fails_with(int rc, const aotc_error *e, int status, const char *text) {
  return rc == status && e->status == status && strstr(e->message, text) != NULL;
}

static unsigned char *read_file(const char *path, size_t *size, size_t pad) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  *size = (size_t)ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *data = malloc(*size + pad);
  if (data && fread(data + pad, 1, *size, f) != *size) {
    free(data);
    data = NULL;
  }
  fclose(f);
  return data;
}

/* x[i] = (i % 17) / 8 - 1, as the examples use */
static void fill(float *x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] = (float)(i % 17) / 8.0f - 1.0f;
}

static int run_batch(aotc_loader *l, int64_t batch, float *y, aotc_error *e) {
  float x[1024 * 10];
  fill(x, batch * 10);
  int64_t in_sizes[2] = {batch, 10}, in_strides[2] = {10, 1};
  aotc_tensor in = {x, in_sizes, in_strides, 2, AOTC_FLOAT32};
  int64_t out_sizes[2] = {0, 0}, out_strides[2] = {1, 1};
  int rc = aotc_loader_output_sizes(l, &in, 1, out_sizes, e);
  if (rc) return rc;
  aotc_tensor out = {y, out_sizes, out_strides, 2, AOTC_FLOAT32};
  return aotc_loader_run(l, &in, 1, &out, 1, e);
}

static void check_inputs(aotc_loader *l) {
  aotc_error e;
  float x[2 * 11], y[8];
  int64_t sizes[2] = {2, 10}, strides[2] = {10, 1}, out_sizes[2] = {2, 1}, out_strides[2] = {1, 1};
  fill(x, 22);
  aotc_tensor in = {x, sizes, strides, 2, AOTC_FLOAT32};
  aotc_tensor out = {y, out_sizes, out_strides, 2, AOTC_FLOAT32};
  aotc_tensor two[2] = {in, in};
  int rc = aotc_loader_run(l, two, 2, &out, 1, &e);
  expect(fails_with(rc, &e, AOTC_ERR_INPUT, "expected 1 inputs, got 2"), "wrong input count", &e);
  aotc_tensor wrong_dtype = in;
  wrong_dtype.dtype = AOTC_FLOAT64;
  rc = aotc_loader_run(l, &wrong_dtype, 1, &out, 1, &e);
  expect(fails_with(rc, &e, AOTC_ERR_INPUT, "expected dtype float32, got float64"), "wrong dtype", &e);
  aotc_tensor wrong_rank = in;
  wrong_rank.ndim = 1;
  rc = aotc_loader_output_sizes(l, &wrong_rank, 1, out_sizes, &e);
  expect(fails_with(rc, &e, AOTC_ERR_INPUT, "expected rank 2, got 1"), "wrong rank", &e);
  int64_t too_big[2] = {1025, 10}, wide[2] = {2, 11};
  aotc_tensor big = in;
  big.sizes = too_big;
  rc = aotc_loader_run(l, &big, 1, &out, 1, &e);
  expect(fails_with(rc, &e, AOTC_ERR_INPUT, "outside the allowed range [0, 1024]"),
         "batch out of range", &e);
  aotc_tensor bad_dim = in;
  bad_dim.sizes = wide;
  rc = aotc_loader_run(l, &bad_dim, 1, &out, 1, &e);
  expect(fails_with(rc, &e, AOTC_ERR_INPUT, "dim 1 is 11, expected 10"), "wrong static size", &e);
  int64_t short_out[2] = {3, 1};
  out.sizes = short_out;
  rc = aotc_loader_run(l, &in, 1, &out, 1, &e);
  expect(fails_with(rc, &e, AOTC_ERR_INPUT, "output 0: dim 0 is 3, expected 2"),
         "wrong output size", &e);
  rc = aotc_loader_run(l, NULL, 1, NULL, 1, &e);
  expect(fails_with(rc, &e, AOTC_ERR_ARGUMENT, "null inputs or outputs"), "null tensors", &e);
  rc = aotc_loader_run(NULL, &in, 1, &out, 1, &e);
  expect(fails_with(rc, &e, AOTC_ERR_ARGUMENT, "null loader"), "null loader", &e);
  rc = aotc_loader_run(l, &in, 1, &out, 1, NULL); /* no error struct: status only */
  expect(rc == AOTC_ERR_INPUT, "status without an error struct", NULL);
}

static void check_constants(aotc_loader *l) {
  aotc_error e;
  float zeros[16] = {0}, bias = 0.0f, y[8];
  int64_t w_sizes[2] = {1, 16}, w_strides[2] = {16, 1}, b_sizes[1] = {1}, b_strides[1] = {1};
  aotc_tensor values[2] = {{zeros, w_sizes, w_strides, 2, AOTC_FLOAT32},
                           {&bias, b_sizes, b_strides, 1, AOTC_FLOAT32}};
  const char *names[2] = {"fc2.weight", "fc2.bias"};
  const char *bad_names[1] = {"fc9.weight"};
  int rc = aotc_loader_load_constants(l, bad_names, values, 1, 0, &e);
  expect(fails_with(rc, &e, AOTC_ERR_INPUT, "no constant 'fc9.weight'"), "unknown constant", &e);
  rc = aotc_loader_load_constants(l, names + 1, values, 1, 0, &e);
  expect(fails_with(rc, &e, AOTC_ERR_INPUT, "'fc2.bias' must be a contiguous tensor of rank 1"),
         "constant of the wrong shape", &e);
  rc = aotc_loader_load_constants(l, names, values, 2, 1, &e);
  expect(fails_with(rc, &e, AOTC_ERR_INPUT, "needs all 4 constants, got 2"), "check_full_update", &e);
  rc = aotc_loader_load_constants(l, names, values, 2, 0, &e);
  expect(rc == AOTC_OK, "load_constants", &e);
  zeros[0] = 100.0f; /* copied: later changes to the caller's buffer do not leak in */
  rc = run_batch(l, 8, y, &e);
  int all_half = rc == AOTC_OK;
  for (int i = 0; i < 8; ++i) all_half = all_half && y[i] == 0.5f;
  expect(all_half, "zero fc2 gives sigmoid(0) = 0.5 everywhere", &e);

  /* fc1.weight may be stored packed for the GEMM: the library packs the new value. With
     fc1 picking x[:, 2] into hidden unit 3 and fc2 reading only that unit, y = sigmoid(relu(
     x[:, 2])): 0.5 where x[:, 2] <= 0, and ordered as x[:, 2] is elsewhere. */
  float w1[16 * 10] = {0}, b1[16] = {0}, w2[16] = {0}, x[8 * 10];
  w1[3 * 10 + 2] = 1.0f;
  w2[3] = 1.0f;
  int64_t w1_sizes[2] = {16, 10}, w1_strides[2] = {10, 1}, b1_sizes[1] = {16};
  aotc_tensor all[4] = {{w1, w1_sizes, w1_strides, 2, AOTC_FLOAT32},
                        {b1, b1_sizes, b_strides, 1, AOTC_FLOAT32},
                        {w2, w_sizes, w_strides, 2, AOTC_FLOAT32},
                        {&bias, b_sizes, b_strides, 1, AOTC_FLOAT32}};
  const char *all_names[4] = {"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"};
  rc = aotc_loader_load_constants(l, all_names, all, 4, 1, &e);
  expect(rc == AOTC_OK, "load_constants of every weight", &e);
  rc = run_batch(l, 8, y, &e);
  fill(x, 8 * 10);
  int picked = rc == AOTC_OK;
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 8; ++j) {
      const float xi = x[i * 10 + 2], xj = x[j * 10 + 2];
      picked = picked && ((xi <= 0.0f) == (y[i] == 0.5f)) &&
               (xi <= 0.0f || xj <= 0.0f || (xi > xj) == (y[i] > y[j]));
    }
  expect(picked, "a swapped fc1.weight is packed as the package stores it", &e);
}

static void check_describe(aotc_loader *l) {
  aotc_error e;
  const aotc_tensor_info *inputs, *outputs;
  const aotc_symbol_info *symbols;
  const aotc_constant_info *constants;
  const char *const *keys, *const *values;
  int64_t n_in, n_out, n_sym, n_const, n_meta;
  int ok = aotc_loader_inputs(l, &inputs, &n_in, &e) == 0 && n_in == 1 &&
           strcmp(inputs[0].name, "x") == 0 && inputs[0].ndim == 2 && inputs[0].sizes[0] == -1 &&
           inputs[0].sizes[1] == 10 && inputs[0].dtype == AOTC_FLOAT32;
  expect(ok, "input spec", NULL);
  ok = aotc_loader_outputs(l, &outputs, &n_out, &e) == 0 && n_out == 1 && outputs[0].ndim == 2 &&
       strcmp(outputs[0].dims[0], inputs[0].dims[0]) == 0 && outputs[0].sizes[1] == 1;
  expect(ok, "output spec", NULL);
  ok = aotc_loader_symbols(l, &symbols, &n_sym, &e) == 0 && n_sym == 1 && symbols[0].min == 0 &&
       symbols[0].max == 1024 && strcmp(symbols[0].name, inputs[0].dims[0]) == 0;
  expect(ok, "symbol range", NULL);
  ok = aotc_loader_constants(l, &constants, &n_const, &e) == 0 && n_const == 4 &&
       strcmp(constants[0].name, "fc1.weight") == 0 && constants[0].ndim == 2 &&
       constants[0].sizes[0] == 16 && constants[0].sizes[1] == 10 &&
       constants[0].nbytes >= 640 && /* a GEMM weight may be stored packed (padded panels) */
       constants[1].offset % 64 == 0;
  expect(ok, "constants table", NULL);
  ok = aotc_loader_metadata(l, &keys, &values, &n_meta, &e) == 0;
  int named = 0;
  for (int64_t k = 0; ok && k < n_meta; ++k)
    named |= strcmp(keys[k], "model_name") == 0 && strcmp(values[k], "model") == 0;
  expect(ok && named, "metadata names the model", NULL);
  int rc = aotc_loader_inputs(l, NULL, &n_in, &e);
  expect(fails_with(rc, &e, AOTC_ERR_ARGUMENT, "null argument"), "describe with null out", &e);
}

static void check_packages(const char *good, const char *damaged) {
  aotc_error e;
  aotc_loader *l = NULL;
  int rc = aotc_loader_open(damaged, NULL, 1, &l, &e);
  expect(fails_with(rc, &e, AOTC_ERR_PACKAGE, "CRC-32") && !l, "damaged package refused", &e);
  rc = aotc_loader_open("no/such/model.pt2", NULL, 1, &l, &e);
  expect(fails_with(rc, &e, AOTC_ERR_PACKAGE, "does not exist"), "missing package", &e);
  rc = aotc_loader_open(good, "nope", 1, &l, &e);
  expect(fails_with(rc, &e, AOTC_ERR_PACKAGE, "has no model named 'nope'; it holds ['model']"),
         "unknown model name", &e);
  rc = aotc_loader_open(good, NULL, 0, &l, &e);
  expect(fails_with(rc, &e, AOTC_ERR_ARGUMENT, "num_runners must be at least 1"), "zero runners", &e);
  size_t size = 0;
  unsigned char *data = read_file(good, &size, 0);
  rc = aotc_loader_open_buffer(data, size / 2, NULL, 1, &l, &e);
  expect(fails_with(rc, &e, AOTC_ERR_PACKAGE, "package buffer"), "truncated buffer", &e);
  const char junk[] = "definitely not a zip archive";
  rc = aotc_loader_open_buffer(junk, sizeof junk, NULL, 1, &l, &e);
  expect(fails_with(rc, &e, AOTC_ERR_PACKAGE, "not a valid .pt2 package"), "not a zip", &e);
  free(data);
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: capi_test model.pt2 damaged.pt2\n");
    return 2;
  }
  aotc_error e;
  aotc_loader *l = NULL;
  int rc = aotc_loader_open(argv[1], "model", 2, &l, &e);
  expect(rc == AOTC_OK && l != NULL, "open from a path", &e);
  if (rc) return 1;
  check_describe(l);
  float y[8], y_buffer[8];
  for (int64_t batch = 8; batch >= 1; batch -= 7) {
    rc = run_batch(l, batch, y, &e);
    expect(rc == AOTC_OK, batch == 8 ? "run batch 8" : "run batch 1", &e);
    printf("batch %lld:", (long long)batch);
    for (int64_t i = 0; i < batch; ++i) printf(" %.9g", y[i]);
    printf("\n");
  }
  check_inputs(l);
  /* from memory, one byte off alignment so the weights must be copied */
  size_t size = 0;
  unsigned char *data = read_file(argv[1], &size, 1);
  aotc_loader *from_buffer = NULL;
  rc = aotc_loader_open_buffer(data + 1, size, "", 1, &from_buffer, &e);
  expect(rc == AOTC_OK, "open from an unaligned buffer", &e);
  if (rc == AOTC_OK) {
    rc = run_batch(from_buffer, 8, y_buffer, &e);
    expect(rc == AOTC_OK && run_batch(l, 8, y, &e) == AOTC_OK && memcmp(y, y_buffer, sizeof y) == 0,
           "buffer and path give the same outputs", &e);
  }
  aotc_loader_close(from_buffer);
  free(data);
  check_constants(l);
  check_packages(argv[1], argv[2]);
  /* open, run and close again and again: a closed library that the run's thread still
   * pins (thread_local state) must not be mistaken for the next one */
  int reopened = 0;
  for (int k = 0; k < 40; ++k) {
    aotc_loader *again = NULL;
    if (aotc_loader_open(argv[1], NULL, 1, &again, &e) == AOTC_OK &&
        run_batch(again, 8, y_buffer, &e) == AOTC_OK)
      reopened++;
    aotc_loader_close(again);
  }
  expect(reopened == 40, "open, run and close 40 times", &e);
  aotc_loader_close(l);
  aotc_loader_close(NULL);
  printf("%d failed\n", failures);
  return failures ? 1 : 0;
}
