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

// The end of the refusal of a package (or its model library) of version `found` where this
// runtime reads `current`: a loader takes exactly its own format and ABI version
// (docs/ARCHITECTURE.md, "Versions"), and the advice is the Python loader's, word for word.
inline std::string recompile_advice(const std::string &found, int current) {
  bool number = !found.empty() && found.size() < 10;
  for (char c : found) number = number && c >= '0' && c <= '9';
  if (number && std::stoi(found) < current)
    return " (the package was written by an older aotc: compile the model again with this one)";
  if (number)
    return " (the package was written by a newer aotc: compile the model again with this one, "
           "or load it with the aotc that wrote it)";
  return " (compile the model again with this aotc)";
}

}  // namespace aotc_rt

#endif
