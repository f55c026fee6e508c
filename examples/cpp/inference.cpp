// Loads model.pt2 (written by model.py) with aotc's C++ runtime, no libtorch, and runs it at
// batch 8 and then batch 1. Inputs are a fixed pattern so any runtime can reproduce them.
#include <aotc/aotc.hpp>

#include <iostream>

// x[i] = (i % 17) / 8 - 1: exact in float32
aotc::Tensor example_input(int64_t batch) {
  aotc::Tensor x(aotc::DType::Float32, {batch, 10});
  float *p = x.data<float>();
  for (int64_t i = 0; i < x.numel(); ++i) p[i] = static_cast<float>(i % 17) / 8.0f - 1.0f;
  return x;
}

int main(int argc, char **argv) {
  try {
    aotc::ModelPackageLoader loader(argc > 1 ? argv[1] : "model.pt2", "model", 1);
    std::cout.precision(9);
    for (int64_t batch : {8, 1}) {
      std::vector<aotc::Tensor> outputs = loader.run({example_input(batch)});
      std::cout << "batch " << batch << ": " << outputs[0] << "\n";
    }
  } catch (const aotc::Error &e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
