// cmd_build.cpp: `metrale-jit build [--target NAME | --all-targets] [--out DIR] [--json]`:
// compiles every kernel variant a target ships through the KernelRegistry (memory cache,
// disk cache, the remote cache of METRALE_REMOTE_CACHE, then NVRTC, so a build also fills the
// caches), optionally writes DIR/<target>/<kernel>.<params>.<arch>.ptx and .cubin, and prints one
// row per kernel with the resources ptxas reported. --bundle writes an ahead-of-time bundle
// (bundle.hpp) that a runtime reads through RuntimeOptions::bundle_dirs or METRALE_BUNDLE_DIR; a
// variant that several targets ship is written once; --sign KEYFILE then signs it
// (bundle_signature.hpp). Exit 1 when a shipped kernel fails, with the compiler's log.
// Which targets at which arch is a pure decision (plan_builds); the device only informs it. A
// target's [shapes] add their shape-specialised variants (ops/pinned_shapes.hpp) to its batch;
// --pinned-only leaves their kernels' generic forms out, as Runtime::open with background variants
// does (not with --bundle: a bundle serves any shape without NVRTC).
// The variants of one template file compile as one NVRTC program, so their CUBINs (and the
// table's sizes) are the same image holding every entry of that program; a shape-specialised
// variant compiles alone.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "cli_support.hpp"
#include "gpu/cuda_backend.hpp"
#include "hardware/hardware_loader.hpp"
#include "hardware/target_selection.hpp"
#include "jit/bundle.hpp"
#include "jit/bundle_signature.hpp"
#include "jit/compiled_entry.hpp"
#include "jit/nvrtc_compiler.hpp"
#include "jit/remote_entry_store.hpp"
#include "metrale/error.hpp"
#include "metrale/jit/kernel_registry.hpp"
#include "ops/op_kernels.hpp"
#include "ops/pinned_shapes.hpp"

namespace metrale::cli {
namespace {

// What generic is compiled for when no device names an arch: a common recent SM.
constexpr std::string_view kRepresentativeGenericArch = "sm_89";

struct BuildOptions {
  std::string target;
  bool all_targets = false;
  std::string out;
  std::string bundle;
  std::string sign;  // the secret key file that signs the bundle (--sign)
  bool pinned_only = false;
  bool json = false;
};

// The device this process sees, if any: its compute capability and the arch NVRTC builds for it.
struct DeviceInfo {
  ComputeCapability capability;
  std::string arch;
  std::string description;
};

struct BuildPlan {
  HardwareTarget target;
  std::string arch;
  std::string note;  // why this arch, when it is not the target's own
};

std::optional<DeviceInfo> detect_device() {
  CudaBackendOpen opened = CudaBackend::open(0);
  if (!opened.backend || !opened.backend->compute_capability()) {
    return std::nullopt;
  }
  const auto arch = KernelRegistry::arch_for(*opened.backend);
  if (!arch) {
    return std::nullopt;
  }
  return DeviceInfo{*opened.backend->compute_capability(), *arch, opened.backend->describe()};
}

BuildPlan plan_for(const HardwareTarget& target, const std::optional<DeviceInfo>& device) {
  if (!target.arch.empty()) {
    return {target, target.arch, ""};
  }
  if (device) {
    return {target, device->arch, fmt::format("{} compiled for the device's {}", target.name, device->arch)};
  }
  return {target, std::string(kRepresentativeGenericArch),
          fmt::format("{} compiled for {}, a representative arch (no device to name its own)", target.name,
                      kRepresentativeGenericArch)};
}

// Pure: the targets to build and their archs. --all-targets: every one; --target: that one;
// neither: the device's target, else hopper.
std::vector<BuildPlan> plan_builds(const std::vector<HardwareTarget>& targets, const BuildOptions& options,
                                   const std::optional<DeviceInfo>& device) {
  std::vector<BuildPlan> plans;
  if (options.all_targets) {
    for (const auto& target : targets) {
      plans.push_back(plan_for(target, device));
    }
  } else if (!options.target.empty()) {
    plans.push_back(plan_for(require_target(targets, options.target), device));
  } else if (device) {
    plans.push_back(plan_for(select_target(targets, device->capability), device));
  } else {
    plans.push_back(plan_for(require_target(targets, kDefaultTarget), device));
  }
  return plans;
}

struct KernelRow {
  std::string target;
  BuildRecord record;
  std::filesystem::path ptx_file, cubin_file;  // empty when not written
};

void write_file(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) {
    throw Error(fmt::format("cannot write {}", path.string()));
  }
}

void write_outputs(const std::filesystem::path& out_dir, KernelRow& row) {
  const CompiledEntry* entry = row.record.entry.get();
  if (entry == nullptr || !entry->ok) {
    return;
  }
  const std::filesystem::path dir = out_dir / row.target;
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) {
    throw Error(fmt::format("cannot create {}: {}", dir.string(), error.message()));
  }
  const std::string stem = fmt::format("{}.{}.{}", row.record.kernel, row.record.params.tag(), row.record.arch);
  if (entry->ptx) {
    row.ptx_file = dir / (stem + ".ptx");
    write_file(row.ptx_file, *entry->ptx);
  }
  if (entry->cubin && !entry->cubin->empty()) {
    row.cubin_file = dir / (stem + ".cubin");
    write_file(row.cubin_file, *entry->cubin);
  }
}

// Writes every successful variant once (by bundle key), in build order.
std::size_t write_bundle_of(const KernelRegistry& registry, const std::vector<KernelRow>& rows,
                            const std::filesystem::path& dir) {
  std::vector<BundleImage> images;
  std::set<std::string> written;
  for (const KernelRow& row : rows) {
    const CompiledEntry* entry = row.record.entry.get();
    if (entry == nullptr || !entry->ok) {
      continue;
    }
    if (!entry->unkeyed_includes.empty()) {
      fmt::print(stderr, "warning: {} ({}) is not bundled: its key does not cover {}\n", row.record.kernel,
                 row.record.params.tag(), entry->unkeyed_includes.front());
      continue;
    }
    BundleEntry described;
    described.fields = registry.bundle_key(row.record.id, row.record.arch);
    if (!written.insert(described.fields.bundle_digest()).second) {
      continue;
    }
    described.lowered_name = entry->lowered_name;
    described.built_by_nvrtc = nvrtc_version();
    described.resources = entry->resources;
    images.push_back(BundleImage{std::move(described), entry->cubin, entry->ptx});
  }
  write_bundle(dir, images);
  return images.size();
}

std::size_t cubin_bytes(const BuildRecord& record) {
  return (record.entry && record.entry->cubin) ? record.entry->cubin->size() : 0;
}

nlohmann::json row_json(const KernelRow& row) {
  const BuildRecord& record = row.record;
  const auto* resources = record.entry && record.entry->resources ? &*record.entry->resources : nullptr;
  auto resource = [&](int KernelResources::*field) {
    return resources != nullptr ? nlohmann::json(resources->*field) : nlohmann::json(nullptr);
  };
  return {{"target", row.target},
          {"kernel", record.kernel},
          {"params", record.params.tag()},
          {"arch", record.arch},
          {"ok", record.ok()},
          {"registers", resource(&KernelResources::registers)},
          {"spill_stores", resource(&KernelResources::spill_stores)},
          {"spill_loads", resource(&KernelResources::spill_loads)},
          {"shared_bytes", resource(&KernelResources::shared_bytes)},
          {"stack_bytes", resource(&KernelResources::stack_bytes)},
          {"cubin_bytes", cubin_bytes(record)},
          {"compile_ms", record.entry ? record.entry->compile_ms : 0.0},
          {"cache", std::string(to_string(record.origin))},
          {"ptx_file", row.ptx_file.empty() ? nlohmann::json(nullptr) : nlohmann::json(row.ptx_file.string())},
          {"cubin_file", row.cubin_file.empty() ? nlohmann::json(nullptr) : nlohmann::json(row.cubin_file.string())}};
}

std::string rows_text(const std::vector<KernelRow>& rows) {
  TextTable table({{"target"},
                   {"kernel"},
                   {"params"},
                   {"arch"},
                   {"regs", true},
                   {"spills", true},
                   {"shared B", true},
                   {"stack B", true},
                   {"cubin B", true},
                   {"compile ms", true},
                   {"cache"}});
  for (const auto& row : rows) {
    const BuildRecord& record = row.record;
    const auto& resources = record.entry ? record.entry->resources : std::nullopt;
    auto number = [&](int KernelResources::*field) {
      return resources ? std::to_string((*resources).*field) : std::string("?");
    };
    const std::string spills =
        resources ? std::to_string(resources->spill_stores + resources->spill_loads) : std::string("?");
    // A hit cost no compile; the entry's time is the NVRTC program's that first built it.
    const std::string compile_ms = !record.ok() ? "FAILED"
                                   : record.origin == BuildOrigin::kNvrtc
                                       ? fmt::format("{:.1f}", record.entry->compile_ms)
                                       : "-";
    table.add_row({row.target, record.kernel, record.params.tag(), record.arch, number(&KernelResources::registers),
                   spills, number(&KernelResources::shared_bytes), number(&KernelResources::stack_bytes),
                   std::to_string(cubin_bytes(record)), compile_ms, std::string(to_string(record.origin))});
  }
  return table.render();
}

// The variants of one NVRTC program share its log: each distinct log is printed once, after
// the kernels it failed.
int print_failures(const std::vector<KernelRow>& rows) {
  std::vector<std::pair<std::string, std::vector<std::string>>> logs;  // log -> "kernel params arch (target)"
  for (const auto& row : rows) {
    const BuildRecord& record = row.record;
    if (record.ok()) {
      continue;
    }
    const std::string log = !record.load_error.empty() ? record.load_error
                            : record.entry             ? record.entry->log
                                                       : std::string("(no log)");
    auto same = std::find_if(logs.begin(), logs.end(), [&](const auto& known) { return known.first == log; });
    if (same == logs.end()) {
      same = logs.insert(logs.end(), {log, {}});
    }
    same->second.push_back(
        fmt::format("{} {} for {} ({})", record.kernel, record.params.tag(), record.arch, row.target));
  }
  for (const auto& [log, kernels] : logs) {
    std::fputs(fmt::format("metrale-jit: failed to compile {}:\n{}\n", fmt::join(kernels, ", "), log).c_str(), stderr);
  }
  return static_cast<int>(logs.size());
}

int build(const BuildOptions& options) {
  if (options.all_targets && !options.target.empty()) {
    throw UsageError("--target and --all-targets exclude each other");
  }
  // The key is read before anything is built: a bad key file fails in a moment, not after the build.
  const std::optional<BundleSecretKey> signing_key =
      options.sign.empty() ? std::nullopt : std::optional<BundleSecretKey>(read_bundle_secret_key(options.sign));
  const auto targets = load_targets(metrale::ops::library_catalog());
  const std::optional<DeviceInfo> device = detect_device();
  const std::vector<BuildPlan> plans = plan_builds(targets, options, device);

  SourceSet sources;
  sources.add_embedded_templates();
  KernelRegistry::Options registry_options;
  // METRALE_REMOTE_CACHE: fetch what another machine compiled, publish what this one compiles.
  if (const auto remote = remote_tier_from(std::nullopt, process_environment())) {
    registry_options.remote = std::make_shared<const EntryStore>(remote_entry_store(remote));
  }
  KernelRegistry registry(std::move(sources), std::move(registry_options));
  std::vector<KernelRow> rows;
  Progress progress;
  for (std::size_t i = 0; i < plans.size(); ++i) {
    const BuildPlan& plan = plans[i];
    if (!plan.note.empty() && !options.json) {
      std::fputs(fmt::format("note: {}\n", plan.note).c_str(), stdout);
    }
    const auto ids_by_name = ops::declare_target_kernels(registry, plan.target);
    std::vector<VariantId> ids;
    ids.reserve(ids_by_name.size());
    for (const auto& [name, id] : ids_by_name) {
      ids.push_back(id);
    }
    // The target's pinned shapes ([shapes]): their specialised variants, in the same batch; with
    // --pinned-only their kernels' generic forms left to first sight, as Runtime::open leaves them
    // with LoadMode::kBackgroundTwins (a bundle always ships them).
    const std::vector<VariantId> pinned = ops::declare_pinned_shape_variants(registry, plan.target, ops::library_ops());
    ids.insert(ids.end(), pinned.begin(), pinned.end());
    if (options.pinned_only && options.bundle.empty()) {
      for (const VariantId generic : ops::defer_generic_forms(registry, pinned)) {
        const KernelVariant variant = registry.variant(generic);
        std::erase(ids, generic);
        if (!options.json) {
          std::fputs(fmt::format("note: {}: {} {} left to a call's first sight of a shape no pin covers "
                                 "(--pinned-only)\n",
                                 plan.target.name, variant.kernel, variant.params.tag())
                         .c_str(),
                     stdout);
        }
      }
    }
    progress.step(fmt::format("[{}/{}] {}: building {} kernels for {}", i + 1, plans.size(), plan.target.name,
                              ids.size(), plan.arch));
    for (BuildRecord& record : registry.build(plan.arch, ids)) {
      KernelRow row{plan.target.name, std::move(record), {}, {}};
      if (!options.out.empty()) {
        write_outputs(options.out, row);
      }
      progress.step(fmt::format("[{}/{}] {}: {} {} {}: {}", i + 1, plans.size(), plan.target.name, row.record.kernel,
                                row.record.params.tag(), row.record.arch,
                                row.record.ok() ? std::string(to_string(row.record.origin)) : "FAILED"));
      rows.push_back(std::move(row));
    }
  }
  const bool any_failed = print_failures(rows) > 0;
  const std::size_t bundled = options.bundle.empty() ? 0 : write_bundle_of(registry, rows, options.bundle);
  if (signing_key) {
    sign_bundle(options.bundle, *signing_key);
  }
  const auto failed = std::count_if(rows.begin(), rows.end(), [](const KernelRow& row) { return !row.record.ok(); });
  if (options.json) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& row : rows) {
      out.push_back(row_json(row));
    }
    std::fputs((out.dump(2) + "\n").c_str(), stdout);
  } else {
    const RegistryStats stats = registry.stats();
    std::fputs(rows_text(rows).c_str(), stdout);
    std::fputs(
        fmt::format("{} kernels, {} failed: {} compiled by NVRTC, {} from bundles, {} from the disk cache, {} "
                    "from the remote cache, {} from memory{}\n",
                    rows.size(), failed, stats.nvrtc_compiles, stats.bundle_hits, stats.disk_hits, stats.remote_hits,
                    stats.memory_hits, options.out.empty() ? "" : "; files under " + options.out)
            .c_str(),
        stdout);
    if (!options.bundle.empty()) {
      std::fputs(
          fmt::format("bundle {}: {} entries{}\n", options.bundle, bundled, signing_key ? ", signed (bundle.sig)" : "")
              .c_str(),
          stdout);
    }
  }
  return any_failed ? kFailed : kDone;
}

void setup_build(CLI::App& app, CommandContext& context) {
  auto* command = app.add_subcommand(
      "build", "Compile every kernel a target ships (filling the cache), optionally write PTX and CUBIN");
  auto options = std::make_shared<BuildOptions>();
  command->add_option("--target", options->target, "Target name (default: the device's, else hopper)");
  command->add_flag("--all-targets", options->all_targets, "Build every target");
  command->add_option("--out", options->out, "Write DIR/<target>/<kernel>.<params>.<arch>.ptx and .cubin");
  command->add_option("--bundle", options->bundle,
                      "Write an ahead-of-time bundle (bundle.json, CUBIN and PTX per variant) to DIR");
  command
      ->add_option("--sign", options->sign,
                   "Sign the bundle with this Ed25519 secret key file (metrale-jit keygen): bundle.sig")
      ->needs(command->get_option("--bundle"));
  command->add_flag("--pinned-only", options->pinned_only,
                    "Leave the generic form of a kernel whose shapes the target pins to first sight, as "
                    "Runtime::open with background variants does (ignored with --bundle)");
  command->add_flag("--json", options->json, "Print JSON instead of a table");
  command->callback([options, &context] { run_command(context, [&] { return build(*options); }); });
}

const CommandRegistration kBuild{"build", setup_build};

}  // namespace
}  // namespace metrale::cli
