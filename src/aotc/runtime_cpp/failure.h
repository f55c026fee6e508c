// The runtime library's internal error: thrown inside, turned into a status and message at
// the C API boundary (loader.cpp), so no exception ever leaves the library.
#ifndef AOTC_RUNTIME_FAILURE_H
#define AOTC_RUNTIME_FAILURE_H

#include <string>

#include "aotc_abi.h"

namespace aotc_rt {

struct Failure {
  int status;
  std::string message;
};

[[noreturn]] inline void fail(int status, std::string message) {
  throw Failure{status, std::move(message)};
}

[[noreturn]] inline void fail_package(const std::string &label, const std::string &what) {
  fail(AOTC_ERR_PACKAGE, label + ": " + what);
}

}  // namespace aotc_rt

#endif
