// Opens and verifies one model of a .pt2 archive: the checks of the Python loader.
#include "package.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#if defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#endif

#include <algorithm>
#include <atomic>
#include <set>
#include <system_error>
#include <thread>
#include <vector>

#include "crc32.h"
#include "failure.h"
#include "metadata_scan.h"

namespace aotc_rt {
namespace {

constexpr int kFormatVersion = 4;  // package/schema.py's FORMAT_VERSION
constexpr const char *kDefaultModel = "model";

std::string entry(const std::string &model, const char *file) {
  return "aotc/" + model + "/" + file;
}

std::string resolve(const ZipReader &zip, const std::string &label, const char *requested) {
  std::set<std::string> models;
  for (const ZipEntry &e : zip.entries()) {
    const std::string &n = e.name;
    const size_t slash = n.find('/', 5);
    if (n.compare(0, 5, "aotc/") == 0 && slash != std::string::npos &&
        n.find('/', slash + 1) == std::string::npos)
      models.insert(n.substr(5, slash - 5));
  }
  std::string name = requested && *requested ? requested : "";
  if (name.empty())
    name = models.count(kDefaultModel) || models.size() != 1 ? kDefaultModel : *models.begin();
  if (!models.count(name)) {
    std::string held;
    for (const std::string &m : models) held += (held.empty() ? "'" : ", '") + m + "'";
    fail_package(label, "has no model named '" + name + "'; it holds [" + held + "]");
  }
  return name;
}

// `f` as target/x86_64.py and target/aarch64.py spell it (/proc/cpuinfo's names), or as a
// g++ -march extension (an aarch64 arch written before target.cpu_features)
bool has_feature(const std::string &f) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  if (f == "avx2") return __builtin_cpu_supports("avx2");
  if (f == "fma") return __builtin_cpu_supports("fma");
  if (f == "bmi2") return __builtin_cpu_supports("bmi2");
  if (f == "avx512f") return __builtin_cpu_supports("avx512f");
  if (f == "avx512bw") return __builtin_cpu_supports("avx512bw");
  if (f == "avx512vl") return __builtin_cpu_supports("avx512vl");
  if (f == "avx512dq") return __builtin_cpu_supports("avx512dq");
  if (f == "avx512_bf16") return __builtin_cpu_supports("avx512bf16");
#endif
#if defined(__aarch64__) && defined(__linux__)
  // the kernel's HWCAP bits
  const unsigned long hw = getauxval(AT_HWCAP);
  if (f == "fp") return hw & HWCAP_FP;
  if (f == "asimd") return hw & HWCAP_ASIMD;
  if (f == "crc32" || f == "crc") return hw & HWCAP_CRC32;
  if (f == "atomics" || f == "lse") return hw & HWCAP_ATOMICS;
  if (f == "asimdrdm" || f == "rdma") return hw & HWCAP_ASIMDRDM;
  if (f == "fphp") return hw & HWCAP_FPHP;
  if (f == "asimdhp") return hw & HWCAP_ASIMDHP;
  if (f == "fp16") return (hw & HWCAP_FPHP) && (hw & HWCAP_ASIMDHP);
  if (f == "asimddp" || f == "dotprod") return hw & HWCAP_ASIMDDP;
#endif
  (void)f;
  return false;
}

// the words of `text` between `sep`s
std::vector<std::string> words(const std::string &text, char sep) {
  std::vector<std::string> out;
  for (size_t at = 0; at < text.size();) {
    const size_t end = std::min(text.find(sep, at), text.size());
    if (end > at) out.push_back(text.substr(at, end - at));
    at = end + 1;
  }
  return out;
}

bool known_arch(const std::string &arch) {
  if (arch == "x86-64" || arch == "x86-64-v3" || arch == "x86-64-v4") return true;
  const std::string level = arch.substr(0, std::min(arch.find('+'), arch.size()));
  return level == "armv8-a" || level == "armv8.1-a" || level == "armv8.2-a";
}

// What a package's code needs of the CPU: target.cpu_features, recorded by every package
// since the field came. A package of the same format written before it (the field restates
// its arch, so no new format) falls back to this copy of target/: the features of the x86
// levels, or an aarch64 -march level and its +extensions; the next format can drop it.
std::vector<std::string> needed_features(const std::string &meta, const std::string &arch,
                                         const std::vector<std::string> &extra) {
  std::string recorded;
  if (json_lookup(meta, {"target", "cpu_features"}, &recorded)) return words(recorded, ' ');
  std::vector<std::string> need;
  if (arch == "x86-64-v3") need = {"avx2", "fma", "bmi2"};
  if (arch == "x86-64-v4") need = {"avx512f", "avx512bw", "avx512vl", "avx512dq", "avx2", "fma"};
  if (arch.compare(0, 4, "armv") == 0) {
    const std::vector<std::string> parts = words(arch, '+');  // the level, then its extensions
    if (parts[0] != "armv8-a") need = {"crc", "lse", "rdma"};
    need.insert(need.end(), parts.begin() + 1, parts.end());
  }
  need.insert(need.end(), extra.begin(), extra.end());
  return need;
}

void check_target(const std::string &meta, const std::string &label) {
  std::string device, arch, isa, features, precision = "fp32";
  json_lookup(meta, {"target", "device"}, &device);
  json_lookup(meta, {"target", "arch"}, &arch);
  json_lookup(meta, {"target", "isa"}, &isa);
  json_lookup(meta, {"target", "features"}, &features);  // beyond the arch's: a bf16 GEMM's
  json_lookup(meta, {"target", "precision"}, &precision);
  if (device != "cpu")
    fail_package(label, "was compiled for device '" + device + "'; this runtime runs cpu packages");
  // the processor family, recorded since aarch64 came; an older package's arch names it (or
  // is native, built on the machine that compiled it)
  std::string family;
  if (!json_lookup(meta, {"target", "architecture"}, &family) && arch != "native")
    family = arch.compare(0, 4, "armv") == 0 ? "aarch64" : "x86_64";
#if defined(__aarch64__)
  const std::string here = "aarch64";
#elif defined(__x86_64__)
  const std::string here = "x86_64";
#else
  const std::string here = "neither x86_64 nor aarch64";
#endif
  if (!family.empty() && family != here)
    fail_package(label, "was compiled for " + family + " (" + arch + ", isa '" + isa +
                 "'): it runs on an " + family + " machine, and this is " + here +
                 ". Compile it again without a target option to run it here");
  if (arch == "native") return;
  if (!known_arch(arch))
    fail_package(label, "was compiled for an unknown target arch '" + arch + "'");
  const std::vector<std::string> extra = words(features, ' ');
  std::string missing;
  bool extra_missing = false;
  for (const std::string &f : needed_features(meta, arch, extra)) {
    if (has_feature(f)) continue;
    missing += " " + f;
    extra_missing = extra_missing || std::find(extra.begin(), extra.end(), f) != extra.end();
  }
  if (missing.empty()) return;
  const std::string built = "was compiled for " + arch + " (" + isa + ")";
  if (extra_missing)
    fail_package(label, built + " with precision '" + precision + "'; this CPU lacks" + missing +
                 ". Recompile with options={'precision': 'fp32'}");
  fail_package(label, built + "; this CPU lacks" + missing +
               (family == "aarch64"
                    ? ". Recompile with options={'target': 'aarch64'} (armv8-a, the NEON "
                      "baseline) for older machines"
                    : ". Recompile with options={'isa': 'avx2'} (or 'sse2') for older machines"));
}

uint64_t chunk_bytes(const std::string &meta, const std::string &model, const std::string &label) {
  std::string text;
  json_lookup(meta, {"crc32", "chunk_bytes"}, &text);
  uint64_t n = 0;
  bool ok = !text.empty() && text.size() <= 13;
  for (char c : text) ok = ok && c >= '0' && c <= '9' && (n = n * 10 + uint64_t(c - '0'), true);
  if (!ok || n < 64 || n > (uint64_t(1) << 40))
    fail_package(label, "metadata of '" + model + "': field 'crc32.chunk_bytes' is '" + text +
                 "'; expected an integer in [64, 2^40]");
  return n;
}

bool parse_hex32(const char *p, uint32_t *out) {
  uint32_t v = 0;
  for (int k = 0; k < 8; ++k) {
    const char c = p[k];
    const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (d < 0) return false;
    v = v << 4 | uint32_t(d);
  }
  *out = v;
  return true;
}

// The CRC-32 of each chunk against the metadata's; large entries on several threads.
void check_crcs(const Bytes &bytes, const std::string &meta, const char *file,
                const std::string &model, const std::string &label) {
  const uint64_t chunk = chunk_bytes(meta, model, label);
  std::string sums;
  json_lookup(meta, {"crc32", file}, &sums);
  const size_t n = std::max<size_t>(1, size_t((bytes.size + chunk - 1) / chunk));
  std::vector<uint32_t> want(n);
  bool ok = sums.size() == 8 * n;
  for (size_t k = 0; ok && k < n; ++k) ok = parse_hex32(sums.data() + 8 * k, &want[k]);
  if (!ok)
    fail_package(label, "metadata of '" + model + "': field 'crc32." + file + "' is not " +
                 std::to_string(n) + " CRC-32s in hex (one per " + std::to_string(chunk) +
                 "-byte chunk of " + file + ")");
  std::atomic<size_t> first_bad{n};
  auto check = [&](size_t first, size_t step) {
    for (size_t k = first; k < n && first_bad.load(std::memory_order_relaxed) == n; k += step) {
      const uint64_t begin = k * chunk, size = std::min<uint64_t>(chunk, bytes.size - begin);
      if (crc32(0, bytes.data + begin, size_t(size)) != want[k]) {
        size_t seen = n;
        while (k < seen && !first_bad.compare_exchange_weak(seen, k)) {}
        return;
      }
    }
  };
  constexpr uint64_t kParallelBytes = uint64_t(8) << 20;
  const size_t threads = bytes.size < kParallelBytes ? 1 :
      std::min<size_t>({n, 4, std::max(1u, std::thread::hardware_concurrency())});
  std::vector<std::thread> workers;
  size_t started = 1;
  try {
    for (; started < threads; ++started) workers.emplace_back(check, started, threads);
  } catch (const std::system_error &) {}  // no thread to spare: this one checks their chunks
  for (size_t t = started; t < threads; ++t) check(t, threads);
  check(0, threads);
  for (std::thread &w : workers) w.join();
  if (first_bad.load() != n) {
    const uint64_t begin = first_bad.load() * chunk;
    const uint64_t end = std::min<uint64_t>(begin + chunk, bytes.size);
    fail_package(label, std::string(file) + " of '" + model + "' does not match its CRC-32 (bytes " +
                 std::to_string(begin) + ".." + std::to_string(end) + " are damaged); the package "
                 "is corrupt");
  }
}

}  // namespace

Archive::Archive(const uint8_t *data, size_t size, bool mapped, std::string label)
    : data_(data), size_(size), mapped_(mapped), label_(std::move(label)) {}

Archive::Archive(Archive &&o) noexcept
    : data_(o.data_), size_(o.size_), mapped_(o.mapped_), label_(std::move(o.label_)) {
  o.mapped_ = false;
}

Archive::~Archive() {
  if (mapped_) munmap(const_cast<uint8_t *>(data_), size_);
}

Archive Archive::map_file(const std::string &path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    fail_package("package " + path, errno == ENOENT ? "does not exist"
                 : std::string("cannot be opened (") + strerror(errno) + ")");
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    fail_package("package " + path, "is not a regular file");
  }
  if (st.st_size == 0) {
    ::close(fd);
    fail_package(path, "is not a valid .pt2 package (empty file)");
  }
  void *p = mmap(nullptr, size_t(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) fail_package(path, std::string("cannot be mapped (") + strerror(errno) + ")");
  return Archive(static_cast<const uint8_t *>(p), size_t(st.st_size), true, path);
}

Archive Archive::borrow(const void *data, size_t size) {
  if (!data && size) fail(AOTC_ERR_ARGUMENT, "aotc_loader_open_buffer: null data");
  return Archive(static_cast<const uint8_t *>(data), size, false, "package buffer");
}

PackageModel open_model(const ZipReader &zip, const std::string &label, const char *requested) {
  if (!zip.find("aotc/version")) {
    if (zip.find("archive_format"))
      fail_package(label, "is a .pt2 archive but not an aotc package (no aotc/version entry); "
                   "was it written by another compiler?");
    fail_package(label, "is not a .pt2 package (no archive_format entry)");
  }
  std::string version = zip.stored("aotc/version", true).str();
  while (!version.empty() && (version.back() == '\n' || version.back() == ' ')) version.pop_back();
  const std::string expected = std::to_string(kFormatVersion);
  if (version != expected)
    fail_package(label, "has package format version " + version + "; this runtime reads version " +
                 expected + recompile_advice(version, kFormatVersion));
  PackageModel m;
  m.name = resolve(zip, label, requested);
  const std::string meta = zip.stored(entry(m.name, "metadata.json"), true).str();
  std::string format;
  if (!json_lookup(meta, {"format_version"}, &format) || format != expected)
    fail_package(label, "model '" + m.name + "' has metadata format " +
                 (format.empty() ? std::string("(none)") : format) + ", expected " + expected);
  check_target(meta, label);
  m.library = zip.stored(entry(m.name, "model.so"), false);
  check_crcs(m.library, meta, "model.so", m.name, label);
  m.weights = zip.stored(entry(m.name, "weights.bin"), false);
  check_crcs(m.weights, meta, "weights.bin", m.name, label);
  return m;
}

}  // namespace aotc_rt
