// Generation from C++ with a decoder LM package (exported through transformers'
// TorchExportableModuleForDecoderOnlyLM, compiled by aotc): token ids in, token ids out.
//
//   ./generate model.pt2 MAX_NEW_TOKENS ID [ID...] [--stop ID] [--sequences N]
//
// With --sequences N the same prompt is decoded N times at once, each sequence on a model
// state of its own and a thread of its own; every line printed is one sequence's tokens.
#include <aotc/generate.hpp>

#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

int main(int argc, char **argv) {
  if (argc < 4) {
    std::cerr << "usage: generate model.pt2 MAX_NEW_TOKENS ID [ID...] [--stop ID] [--sequences N]\n";
    return 2;
  }
  aotc::GenerateOptions options;
  options.max_new_tokens = std::atoi(argv[2]);
  std::vector<int64_t> prompt;
  int sequences = 1;
  for (int k = 3; k < argc; ++k) {
    if (std::strcmp(argv[k], "--stop") == 0 && k + 1 < argc)
      options.stop_token_ids.push_back(std::atoll(argv[++k]));
    else if (std::strcmp(argv[k], "--sequences") == 0 && k + 1 < argc)
      sequences = std::atoi(argv[++k]);
    else
      prompt.push_back(std::atoll(argv[k]));
  }
  try {
    // a runner per sequence, so that they decode at the same time
    aotc::ModelPackageLoader loader(argv[1], "", sequences);
    loader.set_max_states(sequences);
    std::vector<aotc::ModelPackageLoader::ModelState> states;
    for (int s = 0; s < sequences; ++s) states.push_back(loader.new_state());
    std::vector<std::vector<int64_t>> results(static_cast<size_t>(sequences));
    std::vector<std::string> errors(static_cast<size_t>(sequences));
    std::vector<std::thread> threads;
    for (int s = 0; s < sequences; ++s)
      threads.emplace_back([&, s] {
        try {
          results[size_t(s)] = aotc::generate(loader, prompt, options, &states[size_t(s)]);
        } catch (const aotc::Error &e) {
          errors[size_t(s)] = e.what();
        }
      });
    for (std::thread &t : threads) t.join();
    for (const std::string &e : errors)
      if (!e.empty()) {
        std::cerr << "error: " << e << "\n";
        return 1;
      }
    for (const std::vector<int64_t> &tokens : results) {
      for (size_t k = 0; k < tokens.size(); ++k) std::cout << (k ? " " : "") << tokens[k];
      std::cout << "\n";
    }
  } catch (const aotc::Error &e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
