// A minimal host-engine program built against the installed package: loads the targets the
// library ships (or METRALE_HARDWARE_DIR's) and prints their names.
#include <cstdio>
#include <exception>

#include "metrale/target/hardware_loader.hpp"

int main() {
  try {
    for (const auto& target : metrale::load_targets()) {
      std::printf("%s\n", target.name.c_str());
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "consumer: %s\n", e.what());
    return 1;
  }
  return 0;
}
