// Time to load a package with aotc's C++ runtime (open, verify digests, load model.so from
// memory, map weights, create the model object), the first run after it, and a steady call.
// usage: load_time model.pt2 [repeats]
#include <aotc/aotc.hpp>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iostream>

int main(int argc, char **argv) {
  if (argc < 2) {
    std::cerr << "usage: load_time model.pt2 [repeats]\n";
    return 2;
  }
  const int repeats = argc > 2 ? std::atoi(argv[2]) : 20;
  using clock = std::chrono::steady_clock;
  std::vector<double> loads, firsts;
  for (int r = 0; r < repeats; ++r) {
    const auto t0 = clock::now();
    aotc::ModelPackageLoader loader(argv[1]);
    const auto t1 = clock::now();
    aotc::Tensor x(aotc::DType::Float32, {8, 10});
    loader.run({x});
    const auto t2 = clock::now();
    loads.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    firsts.push_back(std::chrono::duration<double, std::milli>(t2 - t1).count());
  }
  aotc::ModelPackageLoader loader(argv[1]);
  const std::vector<aotc::Tensor> x = {aotc::Tensor(aotc::DType::Float32, {8, 10})};
  const int calls = 10000;
  const auto c0 = clock::now();
  for (int k = 0; k < calls; ++k) loader.run(x);
  const double call_us =
      std::chrono::duration<double, std::micro>(clock::now() - c0).count() / calls;
  const double first_load = loads.front();
  std::sort(loads.begin(), loads.end());
  std::sort(firsts.begin(), firsts.end());
  std::cout << "load: first " << first_load << " ms, median " << loads[loads.size() / 2]
            << " ms over " << repeats << " loads; first run median "
            << firsts[firsts.size() / 2] << " ms; steady call (batch 8) " << call_us << " us\n";
  return 0;
}
