// The same model through aotc's optional libtorch adapter (aotc/torch.h): at::Tensor in and
// out, as with torch::inductor::AOTIModelPackageLoader, batch 8 then batch 1.
#include <aotc/torch.h>

#include <iostream>

int main(int argc, char **argv) {
  try {
    aotc::TorchModelPackageLoader loader(argc > 1 ? argv[1] : "model.pt2", "model");
    std::cout.precision(9);
    for (int64_t batch : {8, 1}) {
      // x[i] = (i % 17) / 8 - 1, the plain example's input
      at::Tensor x = (at::arange(batch * 10).remainder(17).to(at::kFloat) / 8 - 1).reshape({batch, 10});
      std::vector<at::Tensor> outputs = loader.run({x});
      const at::Tensor &y = outputs[0];
      std::cout << "batch " << batch << ": Tensor float32 [" << y.size(0) << ", " << y.size(1) << "]";
      for (int64_t i = 0; i < y.numel(); ++i) std::cout << "\n  " << y.data_ptr<float>()[i];
      std::cout << "\n";
    }
  } catch (const std::exception &e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
