// bundle_load.cpp: the ahead-of-time bundle, end to end. Builds a hopper bundle with the CLI
// (NVRTC reachable), then, in this process where NVRTC is hidden (CTest sets
// METRALE_NVRTC_LIBRARY to a path that does not exist) and the disk cache is empty:
// - a runtime on a stub sm_90 device backend gets every handle from the bundle, loading the
//   bundle's exact CUBIN bytes under the manifest's lowered names;
// - without the bundle, the disk cache the build filled serves every kernel (any compiler's
//   entry for the same key will do when none can compile);
// - the target's pinned shape (hopper's [shapes]: N = 96) is in the bundle and served from it;
// - a runtime on the host backend opens with the bundle, and `metrale-jit selftest` passes;
// - each tampered copy (flipped CUBIN byte, CUBIN re-stamped for another arch with its
//   checksum updated, edited options, edited lowered name) loses exactly that entry, which a
//   warning and `bundle verify` name, while the rest load.
// - and, in a child with NVRTC reachable, the stub device served from the bundle never maps
//   libnvrtc (read from /proc/self/maps), though it loads when asked.
// Usage: bundle_load <path to metrale-jit>. Exit 0 when every check holds.
#include <fmt/format.h>
#include <spdlog/sinks/ostream_sink.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "ground/log.hpp"
#include "jit/bundle.hpp"
#include "jit/compiled_memory_cache.hpp"
#include "jit/disk_entry_store.hpp"
#include "jit/nvrtc_compiler.hpp"
#include "metrale/ops/fp8_act_quant.hpp"
#include "metrale/ops/ssm_ba_gates.hpp"
#include "metrale/runtime.hpp"
#include "support/jit_test_support.hpp"
#include "support/temp_dir.hpp"

namespace {

namespace fs = std::filesystem;
using metrale::test::TempDir;

int g_failures = 0;

void check(bool ok, const std::string& what) {
  if (!ok) {
    ++g_failures;
    std::fprintf(stderr, "FAILED: %s\n", what.c_str());
  }
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

void write_text(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

// Runs a shell command; returns its exit status and fills `output` with stdout.
int run(const std::string& command, std::string* output = nullptr) {
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) {
    return -1;
  }
  std::string text;
  char buffer[4096];
  while (std::fgets(buffer, sizeof buffer, pipe) != nullptr) {
    text += buffer;
  }
  const int status = pclose(pipe);
  if (output != nullptr) {
    *output = text;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

struct Opened {
  std::unique_ptr<metrale::Runtime> runtime;
  jit_test_support::FakeBackend* fake = nullptr;
};

// A runtime on a stub sm_90 device, reading only `bundle` (none when empty), with its own
// memory cache and the disk cache in `cache_dir`.
Opened open_on_stub(const fs::path& bundle, const fs::path& cache_dir) {
  auto backend = std::make_unique<jit_test_support::FakeBackend>(true, metrale::ComputeCapability{9, 0}, "stub-sm90");
  Opened opened;
  opened.fake = backend.get();
  metrale::RuntimeOptions options;
  options.target = "hopper";
  if (!bundle.empty()) {
    options.bundle_dirs = {bundle.string()};
  }
  options.env = [](const char*) { return std::optional<std::string>(); };
  options.verify = false;  // a stub device runs nothing: every check would fail on it
  metrale::KernelRegistry::Options registry;
  registry.memory = std::make_shared<metrale::CompiledMemoryCache>();
  registry.store = std::make_shared<const metrale::EntryStore>(
      metrale::disk_entry_store(std::make_shared<metrale::DiskCache>(metrale::DiskCache::open_at(cache_dir))));
  options.registry = std::move(registry);
  opened.runtime = metrale::Runtime::open_with(std::move(backend), std::move(options));
  return opened;
}

// Every variant of the runtime: handle present except `absent_kernel` (empty: none; "kernel" or
// "kernel params", when the kernel also has shape variants that stay).
void check_handles(const Opened& opened, const std::string& absent_kernel, const std::string& context,
                   metrale::BuildOrigin origin = metrale::BuildOrigin::kBundle) {
  metrale::KernelRegistry& registry = opened.runtime->registry();
  check(registry.variant_count() >= 4, context + ": the hopper target declares its kernels");
  for (metrale::VariantId id = 0; id < registry.variant_count(); ++id) {
    const metrale::KernelVariant variant = registry.variant(id);
    const bool present = registry.handle(0, id).value != 0;
    const bool want = variant.kernel != absent_kernel && variant.kernel + " " + variant.params.tag() != absent_kernel;
    check(present == want, fmt::format("{}: {} handle is {} (expected {})", context, variant.kernel,
                                       present ? "present" : "absent", want ? "present" : "absent"));
    const auto record = registry.record(id, "sm_90");
    check(record.has_value(), context + ": " + variant.kernel + " has a record");
    if (record && want) {
      check(record->origin == origin,
            fmt::format("{}: {} came from the {}", context, variant.kernel, metrale::to_string(origin)));
    } else if (record) {
      // The miss could not compile: its record says why.
      check(record->entry != nullptr && record->entry->log.find("no NVRTC was found") != std::string::npos,
            context + ": the absent " + variant.kernel + "'s record says no NVRTC was found");
    }
  }
}

using Tamper = std::function<void(const fs::path& dir, nlohmann::json& manifest)>;

// The first entry of `kernel` (with `params`, when given: a kernel may also have shape variants).
nlohmann::json& entry_of(nlohmann::json& manifest, const std::string& kernel, const std::string& params = "") {
  for (nlohmann::json& entry : manifest["entries"]) {
    if (entry["kernel"] == kernel && (params.empty() || entry["params"] == params)) {
      return entry;
    }
  }
  throw std::runtime_error("the bundle has no entry for " + kernel);
}

void check_tampered(const std::string& cli, const fs::path& bundle, const fs::path& work, const std::string& name,
                    const std::string& kernel, const Tamper& tamper, std::ostringstream& log) {
  const fs::path copy = work / ("tampered-" + name);
  fs::copy(bundle, copy, fs::copy_options::recursive);
  nlohmann::json manifest = nlohmann::json::parse(read_text(copy / metrale::kBundleManifestName));
  tamper(copy, manifest);
  write_text(copy / metrale::kBundleManifestName, manifest.dump(2));

  log.str("");
  const TempDir cache("metrale-bundle-cache");
  const Opened opened = open_on_stub(copy, cache.path());
  check_handles(opened, kernel, name);
  const std::string label = fmt::format("entry {} ", kernel);
  check(log.str().find(label) != std::string::npos && log.str().find("is skipped") != std::string::npos,
        name + ": a warning names " + kernel + "; the log was:\n" + log.str());
  std::string verify;
  const int status = run(fmt::format("'{}' bundle verify '{}'", cli, copy.string()), &verify);
  check(status == 1 && verify.find("BAD  " + kernel + " ") != std::string::npos,
        name + ": bundle verify exits 1 naming " + kernel + ", it said:\n" + verify);
}

// Whether libnvrtc is mapped into this process (read from the kernel, not from the library).
bool nvrtc_mapped() { return read_text("/proc/self/maps").find("libnvrtc") != std::string::npos; }

// The child mode: NVRTC reachable, the stub device served from the bundle, and NVRTC never loaded.
int stub_without_loading_nvrtc(const fs::path& bundle) {
  const TempDir cache("metrale-bundle-cache");
  const Opened opened = open_on_stub(bundle, cache.path());
  check_handles(opened, "", "stub device, NVRTC reachable");
  check(!nvrtc_mapped(), "a process served from a bundle never loads libnvrtc");
  check(metrale::nvrtc_available() && nvrtc_mapped(), "NVRTC was reachable all along (it loads when asked)");
  return g_failures == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == "--stub-without-loading-nvrtc") {
    return stub_without_loading_nvrtc(argv[2]);
  }
  if (argc != 2) {
    std::fprintf(stderr, "usage: bundle_load <path to metrale-jit>\n");
    return 2;
  }
  const std::string cli = argv[1];
  const TempDir work("metrale-bundle-test");
  const fs::path bundle = work.path() / "bundle";

  // The bundle is built where NVRTC is reachable (the empty value lifts this process's hiding).
  const int built =
      run(fmt::format("METRALE_NVRTC_LIBRARY= METRALE_CACHE_DIR='{}' '{}' build --target hopper --bundle '{}'",
                      (work.path() / "build-cache").string(), cli, bundle.string()));
  check(built == 0, "metrale-jit build --bundle exits 0");
  check(run(fmt::format("'{}' bundle verify '{}'", cli, bundle.string())) == 0, "the fresh bundle verifies");

  std::string child_output;
  check(run(fmt::format("METRALE_NVRTC_LIBRARY= '{}' --stub-without-loading-nvrtc '{}' 2>&1", argv[0], bundle.string()),
            &child_output) == 0,
        "with NVRTC reachable, a stub device served from the bundle never loads it:\n" + child_output);

  check(!metrale::nvrtc_available(), "NVRTC is hidden from this process");
  check(metrale::nvrtc_unavailable_reason().find("no NVRTC was found") != std::string::npos,
        "the reason says no NVRTC was found: " + metrale::nvrtc_unavailable_reason());

  auto sink_stream = std::make_shared<std::ostringstream>();
  metrale::logger().sinks().push_back(std::make_shared<spdlog::sinks::ostream_sink_mt>(*sink_stream));

  {  // The stub device: every handle from the bundle, the bundle's bytes, the manifest's names.
    const TempDir cache("metrale-bundle-cache");
    const Opened opened = open_on_stub(bundle, cache.path());
    check_handles(opened, "", "stub device");
    check(opened.runtime->registry().stats().bundle_hits == opened.runtime->registry().variant_count(),
          "every variant is a bundle hit");
    check(fs::is_empty(cache.path()), "nothing was compiled into the empty disk cache");
    const nlohmann::json manifest = nlohmann::json::parse(read_text(bundle / metrale::kBundleManifestName));
    const auto loads = opened.fake->loads_copy();
    check(loads.size() == manifest["entries"].size(), "one backend load per bundle entry");
    for (const auto& load : loads) {
      bool matched = false;
      for (const auto& entry : manifest["entries"]) {
        // A kernel may have several entries (a shape-specialised variant beside the generic).
        if (entry["kernel"] == load.kernel) {
          matched = matched || (entry["lowered_name"] == load.lowered_name && load.kind == metrale::ImageKind::kCubin &&
                                fs::file_size(bundle / entry["cubin_file"].get<std::string>()) == load.image_bytes);
        }
      }
      check(matched, "the stub loaded " + load.kernel + "'s CUBIN under the manifest's lowered name");
    }
    // hopper's [shapes] pins N = 96: the tensor-core kernel's 6-tile variant is in the bundle, and
    // the runtime (which declares it at open) loaded it from there.
    bool pinned = false;
    for (const auto& entry : manifest["entries"]) {
      pinned = pinned || (entry["kernel"] == "ssm_ba_gates_mma" && entry["params"] == "b256l128g6s6");
    }
    check(pinned, "the bundle holds the pinned shape's variant (ssm_ba_gates_mma b256l128g6s6)");
    const auto six = opened.runtime->registry().find("ssm_ba_gates_mma", metrale::KernelParams{256, 128, 6, 6});
    check(six && opened.runtime->registry().handle(0, *six).value != 0,
          "the runtime's pinned variant was loaded from the bundle");
  }
  {  // No bundle: the disk cache the build filled serves every kernel, though NVRTC is absent.
    const Opened opened = open_on_stub({}, work.path() / "build-cache");
    check_handles(opened, "", "disk cache without NVRTC", metrale::BuildOrigin::kDisk);
  }
  {  // The host backend opens with the bundle and no NVRTC; selftest passes in such a process.
    metrale::RuntimeOptions options;
    options.backend = metrale::BackendChoice::kHost;
    options.bundle_dirs = {bundle.string()};
    const auto runtime = metrale::Runtime::open(std::move(options));
    for (metrale::VariantId id = 0; id < runtime->registry().variant_count(); ++id) {
      check(runtime->registry().handle(0, id).value != 0, "host handle " + std::to_string(id) + " is present");
    }
    std::string output;
    const int status = run(fmt::format("METRALE_BUNDLE_DIR='{}' METRALE_CACHE_DIR='{}' '{}' selftest", bundle.string(),
                                       (work.path() / "selftest-cache").string(), cli),
                           &output);
    check(status == 0, "selftest passes without NVRTC:\n" + output);
  }

  check_tampered(
      cli, bundle, work.path(), "flipped-byte", "ssm_ba_gates_mma b256l128g6",
      [](const fs::path& dir, nlohmann::json& manifest) {
        const fs::path cubin =
            dir / entry_of(manifest, "ssm_ba_gates_mma", "b256l128g6")["cubin_file"].get<std::string>();
        std::string bytes = read_text(cubin);
        bytes[bytes.size() / 2] = static_cast<char>(bytes[bytes.size() / 2] ^ 0x01);
        write_text(cubin, bytes);
      },
      *sink_stream);
  check_tampered(
      cli, bundle, work.path(), "swapped-arch", "ssm_ba_gates_hopper",
      [](const fs::path& dir, nlohmann::json& manifest) {
        // A CUBIN for sm_89 in place of the sm_90 one, its checksums made consistent.
        nlohmann::json& entry = entry_of(manifest, "ssm_ba_gates_hopper");
        const fs::path cubin = dir / entry["cubin_file"].get<std::string>();
        std::string bytes = read_text(cubin);
        bytes[49] = static_cast<char>(89);  // ELF ABI 8: e_flags bits 8-15 hold the SM
        write_text(cubin, bytes);
        entry["cubin_xxh3"] = metrale::bundle_checksum(bytes);
        metrale::BundleEntry parsed = metrale::manifest_from_json(manifest.dump(), "test").entries[0];
        for (const auto& candidate : metrale::manifest_from_json(manifest.dump(), "test").entries) {
          if (candidate.fields.kernel == "ssm_ba_gates_hopper") {
            parsed = candidate;
          }
        }
        entry["entry_xxh3"] = parsed.entry_checksum();
      },
      *sink_stream);
  check_tampered(
      cli, bundle, work.path(), "edited-options", "fp8_act_quant",
      [](const fs::path&, nlohmann::json& manifest) {
        entry_of(manifest, "fp8_act_quant")["options"] = "-std=c++17 --fmad=true";
      },
      *sink_stream);
  check_tampered(
      cli, bundle, work.path(), "edited-lowered-name", "fp8_act_quant_hopper",
      [](const fs::path&, nlohmann::json& manifest) {
        entry_of(manifest, "fp8_act_quant_hopper")["lowered_name"] =
            entry_of(manifest, "fp8_act_quant")["lowered_name"];
      },
      *sink_stream);

  std::fprintf(stderr, "%s: %d failure(s)\n", g_failures == 0 ? "PASSED" : "FAILED", g_failures);
  return g_failures == 0 ? 0 : 1;
}
