// Opens each package named on the command line with aotc's C++ runtime and prints one line
// per package: "<path>: <status> <message>" (status 0 and "ok" when it opened). Prints the
// runtime's version first; exits 0 once every package was tried.
#include <cstdio>

#include "aotc/aotc_runtime.h"

int main(int argc, char **argv) {
    std::printf("aotc runtime %d\n", AOTC_RUNTIME_VERSION);
    for (int i = 1; i < argc; ++i) {
        aotc_loader *loader = nullptr;
        aotc_error error{};
        const int rc = aotc_loader_open(argv[i], nullptr, 1, &loader, &error);
        std::printf("%s: %d %s\n", argv[i], rc, rc ? error.message : "ok");
        aotc_loader_close(loader);
    }
    return 0;
}
