// The run's per-step counters (include/aotc/aotc_abi.h, version 7): a generated run
// reads the clock around each step only while the library's profile switch is on, and
// adds what it measured to that step's slot. Relaxed atomics: calls on several threads add
// to the same slots without a lock, and a reader sees each figure whole.
#ifndef AOTC_PROFILE_H
#define AOTC_PROFILE_H

#include <time.h>

#include <atomic>
#include <cstdint>

#include "aotc_abi.h"

namespace aotc {

// CLOCK_MONOTONIC, the clock Python's time.monotonic_ns() reads
inline uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000u + uint64_t(ts.tv_nsec);
}

struct ProfileSlot {
  std::atomic<uint64_t> runs{0}, total_ns{0}, last_begin_ns{0}, last_ns{0};
  std::atomic<double> last_flops{0.0}, last_bytes{0.0};

  // one run of the step, begun at `begin` (now_ns) and ending now
  void record(uint64_t begin, double flops, double bytes) {
    const uint64_t ns = now_ns() - begin;
    constexpr auto relaxed = std::memory_order_relaxed;
    runs.fetch_add(1, relaxed);
    total_ns.fetch_add(ns, relaxed);
    last_begin_ns.store(begin, relaxed);
    last_ns.store(ns, relaxed);
    last_flops.store(flops, relaxed);
    last_bytes.store(bytes, relaxed);
  }

  aotc_profile_count read(bool reset) {
    constexpr auto relaxed = std::memory_order_relaxed;
    if (reset)
      return {runs.exchange(0, relaxed), total_ns.exchange(0, relaxed),
              last_begin_ns.exchange(0, relaxed), last_ns.exchange(0, relaxed),
              last_flops.exchange(0.0, relaxed), last_bytes.exchange(0.0, relaxed)};
    return {runs.load(relaxed), total_ns.load(relaxed), last_begin_ns.load(relaxed),
            last_ns.load(relaxed), last_flops.load(relaxed), last_bytes.load(relaxed)};
  }
};

}  // namespace aotc

#endif
