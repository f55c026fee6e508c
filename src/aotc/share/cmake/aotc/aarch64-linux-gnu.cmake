# Cross-compiling the C++ runtime and programs that use it (examples/cpp) for 64-bit Arm
# Linux with Debian's cross compilers (apt-get install g++-aarch64-linux-gnu; qemu-user runs
# the results on an x86-64 host):
#   cmake -S <project> -B build-aarch64 \
#     -DCMAKE_TOOLCHAIN_FILE="$(python -c 'import aotc; print(aotc.cmake_prefix_path)')/aotc/aarch64-linux-gnu.cmake" \
#     -DCMAKE_PREFIX_PATH="$(python -c 'import aotc; print(aotc.cmake_prefix_path)')"
# AOTC_AARCH64_MARCH (default armv8-a, the NEON baseline) sets -march for everything built;
# AOTC_AARCH64_SYSROOT (default /usr/aarch64-linux-gnu) is where the target's libraries are.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(AOTC_AARCH64_MARCH "armv8-a" CACHE STRING "-march of the aarch64 build")
set(AOTC_AARCH64_SYSROOT "/usr/aarch64-linux-gnu" CACHE PATH "the aarch64 libraries and headers")

set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_C_FLAGS_INIT "-march=${AOTC_AARCH64_MARCH}")
set(CMAKE_CXX_FLAGS_INIT "-march=${AOTC_AARCH64_MARCH}")

# libraries and headers from the target's tree; programs (Python, which compiles the
# examples' model) and CMake packages (aotc's own, from CMAKE_PREFIX_PATH) from the host
set(CMAKE_FIND_ROOT_PATH "${AOTC_AARCH64_SYSROOT}")
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)

# ctest and add_custom_command run the target's programs under qemu-user when it is there
find_program(AOTC_QEMU_AARCH64 qemu-aarch64)
if(AOTC_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR "${AOTC_QEMU_AARCH64};-L;${AOTC_AARCH64_SYSROOT}")
endif()
