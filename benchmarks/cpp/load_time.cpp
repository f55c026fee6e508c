// Time to load a package with aotc's C++ runtime (open, verify checksums, load model.so from
// memory, map weights, create the model object), the first run after it, and a steady call.
// Inputs are zeros of the compiled sizes (dynamic dims at their smallest allowed value, or
// at `batch` when it fits). usage: load_time model.pt2 [repeats] [batch]
#include <aotc/aotc.hpp>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdlib>
#include <iostream>
#include <map>

namespace {

std::vector<aotc::Tensor> zero_inputs(const aotc::ModelPackageLoader &loader, int64_t batch) {
  std::map<std::string, int64_t> value;
  for (const aotc::SymbolSpec &s : loader.symbols())
    value[s.name] = std::max(s.min, s.max < 0 ? batch : std::min(batch, s.max));
  std::vector<aotc::Tensor> inputs;
  for (const aotc::TensorSpec &spec : loader.input_specs()) {
    std::vector<int64_t> sizes = spec.sizes;
    for (size_t d = 0; d < sizes.size(); ++d)
      if (sizes[d] < 0) sizes[d] = value.count(spec.dims[d]) ? value[spec.dims[d]] : 1;
    inputs.emplace_back(spec.dtype, sizes);
  }
  return inputs;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    std::cerr << "usage: load_time model.pt2 [repeats] [batch]\n";
    return 2;
  }
  const int repeats = argc > 2 ? std::max(1, std::atoi(argv[2])) : 20;
  const int64_t batch = argc > 3 ? std::atoll(argv[3]) : 8;
  using clock = std::chrono::steady_clock;
  std::vector<double> loads, cpus, firsts;
  for (int r = 0; r < repeats; ++r) {
    const std::clock_t c0 = std::clock();  // CPU time of every thread: less hit by a busy machine
    const auto t0 = clock::now();
    aotc::ModelPackageLoader loader(argv[1]);
    const auto t1 = clock::now();
    cpus.push_back(1e3 * double(std::clock() - c0) / CLOCKS_PER_SEC);
    loader.run(zero_inputs(loader, batch));
    const auto t2 = clock::now();
    loads.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    firsts.push_back(std::chrono::duration<double, std::milli>(t2 - t1).count());
  }
  aotc::ModelPackageLoader loader(argv[1]);
  const std::vector<aotc::Tensor> x = zero_inputs(loader, batch);
  const auto c0 = clock::now();
  int calls = 0;
  while (calls < 10000 && std::chrono::duration<double>(clock::now() - c0).count() < 1.0) {
    loader.run(x);
    ++calls;
  }
  const double call_us =
      std::chrono::duration<double, std::micro>(clock::now() - c0).count() / calls;
  std::cout << "load: first " << loads.front() << " ms, median " << median(loads)
            << " ms, min " << *std::min_element(loads.begin(), loads.end()) << " ms over "
            << repeats << " loads (CPU time median " << median(cpus)
            << " ms); first run median " << median(firsts)
            << " ms; steady call " << call_us << " us\n";
  return 0;
}
