// The headers every generated model includes first (codegen/cpp/model.py), in its order.
// cxx/prelude.py precompiles this file once per compiler and flags and has each model's
// compile include the result first: parsing these headers (immintrin.h above all) took
// about 0.6 s of a small model's 0.8 s compile.
#ifndef AOTC_MODEL_PRELUDE_H
#define AOTC_MODEL_PRELUDE_H

#include <omp.h>

#include "aotc_codegen.h"
#include "aotc_kernels.h"

#endif
