# find_package(aotc) for C/C++ projects: the target aotc::runtime (the runtime library, built
# from the sources shipped inside the Python package, in the caller's build tree) and
# aotc_INCLUDE_DIRS. Locate it with
#   cmake -DCMAKE_PREFIX_PATH="$(python -c 'import aotc; print(aotc.cmake_prefix_path)')" ...
get_filename_component(_aotc_root "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)
set(aotc_INCLUDE_DIRS "${_aotc_root}/include")
set(aotc_VERSION 0.1.0)

if(NOT TARGET aotc::runtime)
  include(CMakeFindDependencyMacro)
  set(THREADS_PREFER_PTHREAD_FLAG ON)
  find_dependency(Threads)
  set(_aotc_src "${_aotc_root}/runtime_cpp")
  add_library(aotc_runtime SHARED
    "${_aotc_src}/library.cpp" "${_aotc_src}/loader.cpp" "${_aotc_src}/metadata_scan.cpp"
    "${_aotc_src}/package.cpp" "${_aotc_src}/crc32.cpp" "${_aotc_src}/zip_reader.cpp")
  set_target_properties(aotc_runtime PROPERTIES
    CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON POSITION_INDEPENDENT_CODE ON)
  target_include_directories(aotc_runtime PUBLIC "${_aotc_root}/include"
                             PRIVATE "${_aotc_root}/include/aotc")
  # small and self-contained: optimized whatever the project's build type, unused code dropped
  target_compile_options(aotc_runtime PRIVATE -O2 -ffunction-sections -fdata-sections -Wall)
  target_link_options(aotc_runtime PRIVATE -Wl,--gc-sections -Wl,--as-needed)
  target_link_libraries(aotc_runtime PRIVATE ${CMAKE_DL_LIBS} Threads::Threads)
  add_library(aotc::runtime ALIAS aotc_runtime)
endif()
unset(_aotc_src)
unset(_aotc_root)
