# dependencies.cmake: every external package, from Debian's packages, with a clear message
# naming the package to install when one is missing. Nothing is fetched at build time.
find_package(Threads REQUIRED)

macro(metrale_require package debian_package)
  find_package(${package} ${ARGN} QUIET)
  if(NOT ${package}_FOUND)
    message(FATAL_ERROR "metrale-jit needs ${package}: install the Debian package '${debian_package}' "
                        "(apt-get install ${debian_package}), or run 'make run' as root, which installs it.")
  endif()
endmacro()

# CUDA: headers only, from a toolkit or NVIDIA's wheels (cuda_headers.cmake); nothing is linked.
include(${CMAKE_CURRENT_LIST_DIR}/cuda_headers.cmake)
metrale_require(fmt libfmt-dev)
metrale_require(spdlog libspdlog-dev)
metrale_require(tomlplusplus libtomlplusplus-dev)
metrale_require(Boost libboost-context-dev COMPONENTS context)
metrale_require(nlohmann_json nlohmann-json3-dev)

find_path(METRALE_XXHASH_INCLUDE_DIR xxhash.h)
if(NOT METRALE_XXHASH_INCLUDE_DIR)
  message(FATAL_ERROR "metrale-jit needs xxHash: install the Debian package 'libxxhash-dev'")
endif()

# libsodium (keyed verdict checksums, Ed25519 bundle signatures) ships no CMake package: found
# through its pkg-config file, as the installed package config finds it again for a consumer.
find_package(PkgConfig QUIET)
if(PkgConfig_FOUND)
  pkg_check_modules(METRALE_SODIUM QUIET IMPORTED_TARGET libsodium)
endif()
if(NOT TARGET PkgConfig::METRALE_SODIUM)
  message(FATAL_ERROR "metrale-jit needs libsodium: install the Debian packages 'libsodium-dev' and 'pkg-config' "
                      "(apt-get install libsodium-dev pkg-config), or run 'make run' as root, which installs them.")
endif()

# hiredis (the Redis remote cache tier, src/jit/redis_client.hpp) also ships only a pkg-config file.
pkg_check_modules(METRALE_HIREDIS QUIET IMPORTED_TARGET hiredis)
if(NOT TARGET PkgConfig::METRALE_HIREDIS)
  message(FATAL_ERROR "metrale-jit needs hiredis: install the Debian package 'libhiredis-dev' "
                      "(apt-get install libhiredis-dev), or run 'make run' as root, which installs it.")
endif()

# xxHash is inlined (XXH_INLINE_ALL); the shared libraries of the others are bundled next to
# the binaries by tools/device_check.sh for a device machine that lacks them.
set(METRALE_PUBLIC_DEPS spdlog::spdlog fmt::fmt nlohmann_json::nlohmann_json)
set(METRALE_PRIVATE_DEPS tomlplusplus::tomlplusplus Boost::context PkgConfig::METRALE_SODIUM PkgConfig::METRALE_HIREDIS
                          Threads::Threads
                          ${CMAKE_DL_LIBS})
include_directories(SYSTEM ${METRALE_XXHASH_INCLUDE_DIR})
