// main.cpp: the Catch2 runner of the unit tests (CPU only, no GPU needed).
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
