// engine_op_run.cpp: `metrale-jit run` on an engine's op from a plug-in (`--ops`, the test
// engine's engine_mirror_scale, tests/data/engine/engine_ops.cpp) on the host backend: random
// x.npy in, y.npy compared with a CPU reference, with the guard's pick, each role forced, and an
// fp32 scalar given as a flag; then a malformed input exits 1 naming the file.
// Usage: engine_op_run <metrale-jit> <plug-in> <hardware dir> <work dir> (the work dir is wiped first).
#include <fmt/format.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "cli_process.hpp"
#include "ground/npy.hpp"
#include "ref/bf16.hpp"

namespace fs = std::filesystem;
using metrale::NpyArray;
using metrale::NpyDtype;
using metrale::cli_test::Checks;
using metrale::cli_test::quoted;
using metrale::cli_test::Ran;
using metrale::cli_test::run_shell;

namespace {

void write_floats(const fs::path& path, std::vector<std::uint64_t> shape, const std::vector<float>& values) {
  NpyArray array{NpyDtype::kFloat32, std::move(shape), std::vector<std::byte>(values.size() * sizeof(float))};
  std::memcpy(array.data.data(), values.data(), array.data.size());
  metrale::write_npy(path, array);
}

std::vector<float> read_floats(const fs::path& path, const std::vector<std::uint64_t>& shape) {
  const NpyArray array = metrale::read_npy(path);
  if (array.dtype != NpyDtype::kFloat32 || array.shape != shape) {
    throw std::runtime_error(fmt::format("{}: dtype {} shape [{}]", path.string(), metrale::to_string(array.dtype),
                                         fmt::join(array.shape, ", ")));
  }
  std::vector<float> values(array.data.size() / sizeof(float));
  std::memcpy(values.data(), array.data.data(), array.data.size());
  return values;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: engine_op_run <metrale-jit> <plug-in> <hardware dir> <work dir>\n");
    return 2;
  }
  const std::string cli = argv[1];
  const std::string plugin = argv[2];
  const fs::path work = argv[4];
  fs::remove_all(work);
  fs::create_directories(work / "in");
  const auto run = [&](const std::string& args) {
    return run_shell(
        fmt::format("METRALE_HARDWARE_DIR={} METRALE_CACHE_DIR={} {} run {} --ops {} --target engine_test 2>&1",
                    quoted(argv[3]), quoted((work / "cache").string()), quoted(cli), args, quoted(plugin)));
  };
  Checks checks;
  try {
    const std::uint32_t m = 24;  // a multiple of the twin's 4 rows, above its 8-row floor
    const std::vector<float> x = metrale::ref::random_floats(std::size_t{m} * 128, 17, -4.0F, 4.0F);
    write_floats(work / "in" / "x.npy", {m, 128}, x);
    for (const std::string kernel : {"", "twin", "parent"}) {
      for (const float scale : {1.0F, -2.5F}) {
        const fs::path out = work / fmt::format("out_{}_{}", kernel.empty() ? "guard" : kernel, scale);
        const std::string args = fmt::format("mirror --in {} --out {}{}{}", quoted((work / "in").string()),
                                             quoted(out.string()), kernel.empty() ? "" : " --kernel " + kernel,
                                             scale == 1.0F ? "" : fmt::format(" --scale {}", scale));
        const Ran ran = run(args);
        checks.expect(ran.exit_code == 0, "run " + args + " exits 0: " + ran.output);
        if (ran.exit_code != 0) {
          continue;
        }
        checks.expect(ran.output.find(kernel == "parent" ? "ran engine_mirror (parent)"
                                                         : "ran engine_mirror_twin (twin)") != std::string::npos,
                      "run " + args + " names the kernel it ran: " + ran.output);
        const std::vector<float> got = read_floats(out / "y.npy", {m, 128});
        std::size_t bad = 0;
        for (std::size_t r = 0; r < m; ++r) {
          for (std::size_t t = 0; t < 128; ++t) {
            const float want = scale * x[r * 128 + 127 - t];
            bad += std::memcmp(&got[r * 128 + t], &want, sizeof(float)) != 0 ? 1 : 0;
          }
        }
        checks.expect(bad == 0,
                      fmt::format("run {}: {} of {} outputs differ from the reference", args, bad, got.size()));
      }
    }
    fs::create_directories(work / "bad");
    write_floats(work / "bad" / "x.npy", {4, 100}, metrale::ref::random_floats(400, 3, -1.0F, 1.0F));
    const Ran bad = run(
        fmt::format("mirror --in {} --out {}", quoted((work / "bad").string()), quoted((work / "bad_out").string())));
    checks.expect(bad.exit_code == 1 && bad.output.find("x.npy") != std::string::npos,
                  fmt::format("x.npy of [4, 100] exits 1 naming it (got {}): {}", bad.exit_code, bad.output));
    const Ran no_role = run(fmt::format("mirror --in {} --out {} --kernel mma", quoted((work / "in").string()),
                                        quoted((work / "unused").string())));
    checks.expect(
        no_role.exit_code == 2 && no_role.output.find("roles: parent, twin (grouped)") != std::string::npos,
        fmt::format("--kernel mma exits 2 naming the op's roles (got {}): {}", no_role.exit_code, no_role.output));
  } catch (const std::exception& error) {
    checks.expect(false, std::string("unexpected error: ") + error.what());
  }
  return checks.finish("engine_op_run");
}
