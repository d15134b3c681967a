// jit/compiled_entry.hpp: one kernel variant compiled for one arch, as the memory
// and disk caches keep it, and its (de)serialisation into named sections for the disk.
// Invariants: an entry with ok == false has no image and keeps its log; the variants of one
// batched NVRTC program share one image (shared_ptr), so a batch costs one copy in memory.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "jit/compile_report.hpp"
#include "metrale/gpu/gpu_backend.hpp"

namespace metrale {

struct CompiledEntry {
  bool ok = false;
  std::string arch;          // "sm_90" or "compute_89"
  std::string lowered_name;  // the entry point for this variant's name expression
  std::shared_ptr<const std::string> ptx;
  std::shared_ptr<const std::string> cubin;  // null or empty for a PTX-only arch
  std::string log;                           // annotated compiler log (kept on success too)
  std::optional<KernelResources> resources;  // this variant's entry function, when ptxas ran
  double compile_ms = 0.0;                   // the NVRTC program's time (shared by a batch)
  std::size_t batch_size = 1;                // name expressions in that program
  // Sources the preprocessor opened that the key's #include scan did not name (a macro
  // include): the key does not cover them, so the entry is kept by no cache nor bundle.
  std::vector<std::string> unkeyed_includes;

  // The bytes a backend loads: the CUBIN when there is one, else the PTX text.
  [[nodiscard]] std::span<const std::byte> image() const;
  [[nodiscard]] ImageKind image_kind() const;
};

// Named byte blobs, the unit the disk cache stores.
using EntrySections = std::vector<std::pair<std::string, std::string>>;

// Only successful entries are serialised. Pure.
EntrySections entry_to_sections(const CompiledEntry& entry);
// nullopt when a section is missing or malformed (the caller then recompiles). Pure.
std::optional<CompiledEntry> entry_from_sections(const EntrySections& sections);

}  // namespace metrale
