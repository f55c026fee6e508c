// Runs any model of a package through the C++ API, for tests that compare with the Python
// runtime. Tensors travel in a small raw format: a text line "dtype ndim size..." and the
// bytes. Prints the specs, metadata and constant names.
// usage: run_model package.pt2 model_name out_dir in0.raw [in1.raw ...] [--threads N] [--buffer]
//        [--calls N] [--swap NAME value.raw]
// --calls N (a model with state): N calls, then each state buffer to state<k>.raw; then
// reset_buffers and one call (reset<j>.raw); then set_buffer of the saved values and one
// call (restored<j>.raw).
// --swap NAME value.raw: load_constants({NAME: value}) (a partial update) before the calls.
// --memory: print the process's resident memory (/proc/self/status) after the calls.
#include <aotc/aotc.hpp>

#include <atomic>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>
#include <thread>
#include <unordered_map>

namespace {

aotc::Tensor read_tensor(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  std::string header;
  std::getline(f, header);
  std::istringstream h(header);
  int dtype = 0, ndim = 0;
  h >> dtype >> ndim;
  std::vector<int64_t> sizes(size_t(ndim), 0);
  for (int64_t &s : sizes) h >> s;
  aotc::Tensor t(aotc::DType(dtype), sizes);
  f.read(static_cast<char *>(t.data_ptr()), std::streamsize(t.nbytes()));
  if (!f) throw std::runtime_error("cannot read " + path);
  return t;
}

void write_tensor(const std::string &path, const aotc::Tensor &t) {
  std::ofstream f(path, std::ios::binary);
  f << int(t.dtype()) << " " << t.dim();
  for (int64_t s : t.sizes()) f << " " << s;
  f << "\n";
  f.write(static_cast<const char *>(t.data_ptr()), std::streamsize(t.nbytes()));
}

void print_spec(const char *kind, const aotc::TensorSpec &s) {
  std::cout << kind << " " << s.name << " " << aotc::dtype_name(s.dtype) << " [";
  for (size_t d = 0; d < s.dims.size(); ++d) std::cout << (d ? ", " : "") << s.dims[d];
  std::cout << "]\n";
}

bool same(const std::vector<aotc::Tensor> &a, const std::vector<aotc::Tensor> &b) {
  if (a.size() != b.size()) return false;
  for (size_t k = 0; k < a.size(); ++k)
    if (a[k].sizes() != b[k].sizes() || std::memcmp(a[k].data_ptr(), b[k].data_ptr(), a[k].nbytes()))
      return false;
  return true;
}

}  // namespace

int main(int argc, char **argv) {
  if (argc < 4) {
    std::cerr << "usage: run_model package.pt2 model_name out_dir inputs... [--threads N] [--buffer] "
                 "[--calls N] [--swap NAME value.raw] [--memory] [--profile] [--states N]\n";
    return 2;
  }
  std::vector<aotc::Tensor> inputs;
  int threads = 0, calls = 1, states = 0;
  bool from_buffer = false, memory = false, profile = false;
  std::unordered_map<std::string, aotc::Tensor> swaps;
  for (int k = 4; k < argc; ++k) {
    if (std::strcmp(argv[k], "--threads") == 0 && k + 1 < argc) threads = std::atoi(argv[++k]);
    else if (std::strcmp(argv[k], "--buffer") == 0) from_buffer = true;
    else if (std::strcmp(argv[k], "--memory") == 0) memory = true;
    else if (std::strcmp(argv[k], "--profile") == 0) profile = true;
    else if (std::strcmp(argv[k], "--states") == 0 && k + 1 < argc) states = std::atoi(argv[++k]);
    else if (std::strcmp(argv[k], "--calls") == 0 && k + 1 < argc) calls = std::atoi(argv[++k]);
    else if (std::strcmp(argv[k], "--swap") == 0 && k + 2 < argc) {
      const std::string name = argv[++k];
      swaps.emplace(name, read_tensor(argv[++k]));
    }
    else inputs.push_back(read_tensor(argv[k]));
  }
  try {
    const int runners = threads > 0 ? threads : 1;
    std::string bytes;  // the package in memory, for --buffer only
    if (from_buffer) {
      std::ifstream file(argv[1], std::ios::binary);
      bytes.assign(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>());
    }
    aotc::ModelPackageLoader loader =
        from_buffer ? aotc::ModelPackageLoader::from_buffer(bytes.data(), bytes.size(), argv[2], runners)
                    : aotc::ModelPackageLoader(argv[1], argv[2], runners);
    for (const aotc::TensorSpec &s : loader.input_specs()) print_spec("input", s);
    for (const aotc::TensorSpec &s : loader.output_specs()) print_spec("output", s);
    for (const aotc::SymbolSpec &s : loader.symbols())
      std::cout << "symbol " << s.name << " [" << s.min << ", " << s.max << "]\n";
    for (const std::string &c : loader.constant_names()) std::cout << "constant " << c << "\n";
    std::cout << "model_name " << loader.metadata().at("model_name") << "\n";
    if (!swaps.empty()) loader.load_constants(swaps, false);
    if (states > 0) {  // state k gets k + 1 calls, then one thread a state adds 20 more
      loader.set_max_states(states);
      std::vector<aotc::ModelPackageLoader::ModelState> held;
      for (int k = 0; k < states; ++k) {
        held.push_back(loader.new_state());
        for (int c = 0; c <= k; ++c) held.back().run(inputs);
      }
      try {
        loader.new_state();
        std::cout << "no state limit\n";
      } catch (const aotc::StateLimitError &e) {
        std::cout << "StateLimitError: " << e.what() << "\n";
      }
      const std::vector<std::string> names = loader.buffer_names();
      const std::string dir = argv[3];
      for (int k = 0; k < states; ++k)
        for (size_t j = 0; j < names.size(); ++j)
          write_tensor(dir + "/seq" + std::to_string(k) + "_" + std::to_string(j) + ".raw",
                       held[size_t(k)].get_buffer(names[j]));
      std::vector<std::thread> pool;
      for (int k = 0; k < states; ++k)
        pool.emplace_back([&, k] {
          for (int c = 0; c < 20; ++c) held[size_t(k)].run(inputs);
        });
      for (std::thread &t : pool) t.join();
      for (int k = 0; k < states; ++k)
        for (size_t j = 0; j < names.size(); ++j)
          write_tensor(dir + "/seqmore" + std::to_string(k) + "_" + std::to_string(j) + ".raw",
                       held[size_t(k)].get_buffer(names[j]));
      held[0].reset_buffers();
      write_tensor(dir + "/seqreset.raw", held[0].get_buffer(names[0]));
    }
    if (profile) loader.profile(true);
    std::vector<aotc::Tensor> outputs = loader.run(inputs);
    for (int c = 1; c < calls; ++c) outputs = loader.run(inputs);
    if (profile) {  // each step: its kernel, how often it ran, and its latest run's figures
      loader.profile(false);
      for (const aotc::ProfileStep &p : loader.profile_read(true))
        std::cout << "profile " << p.kernel << " runs " << p.counts.runs << " ns "
                  << p.counts.total_ns << " flops " << p.counts.last_flops << " bytes "
                  << p.counts.last_bytes << "\n";
      for (const aotc::ProfileStep &p : loader.profile_read())
        if (p.counts.runs != 0) std::cout << "profile not reset\n";
    }
    const std::string dir = argv[3];
    for (size_t j = 0; j < outputs.size(); ++j)
      write_tensor(dir + "/out" + std::to_string(j) + ".raw", outputs[j]);
    if (memory) {
      std::ifstream status("/proc/self/status");
      for (std::string line; std::getline(status, line);)
        if (line.compare(0, 3, "Rss") == 0) std::cout << line << "\n";
    }
    if (calls > 1) {  // the state after the calls; reset; set back
      const std::vector<std::string> names = loader.buffer_names();
      std::vector<aotc::Tensor> saved;
      for (size_t k = 0; k < names.size(); ++k) {
        std::cout << "buffer " << names[k] << "\n";
        saved.push_back(loader.get_buffer(names[k]));
        write_tensor(dir + "/state" + std::to_string(k) + ".raw", saved.back());
      }
      loader.reset_buffers();
      std::vector<aotc::Tensor> again = loader.run(inputs);
      for (size_t j = 0; j < again.size(); ++j)
        write_tensor(dir + "/reset" + std::to_string(j) + ".raw", again[j]);
      for (size_t k = 0; k < names.size(); ++k) loader.set_buffer(names[k], saved[k]);
      again = loader.run(inputs);
      for (size_t j = 0; j < again.size(); ++j)
        write_tensor(dir + "/restored" + std::to_string(j) + ".raw", again[j]);
    }
    if (threads > 0) {  // one loader, several threads: every call must match the first
      std::atomic<int> mismatches{0};
      std::vector<std::thread> pool;
      for (int t = 0; t < threads; ++t)
        pool.emplace_back([&] {
          for (int r = 0; r < 50; ++r)
            if (!same(loader.run(inputs), outputs)) ++mismatches;
        });
      for (std::thread &t : pool) t.join();
      std::cout << "threads " << threads << " mismatches " << mismatches.load() << "\n";
      if (calls > 1) {  // a model with state: every call of every thread counted once
        const std::vector<std::string> names = loader.buffer_names();
        for (size_t k = 0; k < names.size(); ++k)
          write_tensor(dir + "/threaded" + std::to_string(k) + ".raw", loader.get_buffer(names[k]));
      }
    }
  } catch (const aotc::InputError &e) {
    std::cout << "InputError: " << e.what() << "\n";
    return 3;
  } catch (const aotc::PackageError &e) {
    std::cout << "PackageError: " << e.what() << "\n";
    return 4;
  } catch (const aotc::Error &e) {
    std::cout << "Error " << e.status() << ": " << e.what() << "\n";
    return 5;
  }
  return 0;
}
