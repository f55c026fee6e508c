/* Kernel-private: the complex variants of the linear-algebra kernels take interleaved
   (real, imag) pairs of R through their C ABI and compute on std::complex<R>, whose layout
   the C++ standard guarantees to be that pair. */
#ifndef AOTC_LINALG_COMPLEX_H
#define AOTC_LINALG_COMPLEX_H

#include <complex>

namespace aotc_linalg {
template <typename R>
inline std::complex<R> *cx(R *p) { return reinterpret_cast<std::complex<R> *>(p); }
template <typename R>
inline const std::complex<R> *cx(const R *p) { return reinterpret_cast<const std::complex<R> *>(p); }
}  // namespace aotc_linalg

#endif /* AOTC_LINALG_COMPLEX_H */
