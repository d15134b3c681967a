// A minimal host-engine program built against the installed package: lists the targets
// the library ships.
#include <cstdio>

#include "metrale/embedded_files.hpp"

int main() {
  for (const auto& file : metrale::embedded_hardware()) {
    std::printf("%.*s\n", static_cast<int>(file.name.size()), file.name.data());
  }
  return 0;
}
