// variant_builder.hpp (private): memory cache -> bundles -> entry store -> remote store -> NVRTC for a list
// of variants. NVRTC is asked for nothing (not even its version, which keys the disk cache)
// until a variant misses memory and the bundles, so a process served from bundles never
// loads it (unless a source includes the toolkit's headers: which toolkit is the loaded
// NVRTC's, so its key asks nvrtc_library() where that is, jit/cuda_toolkit.hpp).
// Invariants: every claimed memory-cache key is fulfilled, even when compiling throws; the
// misses of one source share one NVRTC program, and when that program fails with several
// name expressions each is retried alone, so one bad instantiation cannot take down its
// siblings (not after a timeout: each alone would take as long); a failed compile is logged here, once, by the one
// thread that compiled it; a shape-specialised variant is a program of its own; a program past the compile deadline is
// abandoned and its variants fail with "compile exceeded N s", a failure not remembered in the
// memory cache (a later build tries again); with a store that locks, each group's keys are locked
// (machine-wide) and looked up in the store again before the group compiles.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "jit/bundle.hpp"
#include "jit/compile_deadline.hpp"
#include "jit/compiled_entry.hpp"
#include "jit/compiled_memory_cache.hpp"
#include "jit/cuda_toolkit.hpp"
#include "jit/entry_store.hpp"
#include "jit/nvrtc_compiler.hpp"
#include "metrale/jit/kernel_registry.hpp"

namespace metrale::detail {

struct BuildJob {
  VariantId id = 0;
  KernelVariant variant;
  EntryKey key;
};

struct BuildOutcome {
  VariantId id = 0;
  std::shared_ptr<const CompiledEntry> entry;
  BuildOrigin origin = BuildOrigin::kNvrtc;
};

struct BuildSummary {
  std::vector<BuildOutcome> outcomes;  // one per job, in job order
  std::uint64_t programs = 0;          // NVRTC programs this call ran
  std::uint64_t compiled_variants = 0;
  double compile_ms = 0.0;
};

struct BuildContext {
  const SourceSet& sources;
  CompiledMemoryCache& memory;
  const EntryStore& store;
  std::string_view arch;
  const std::vector<std::string>& extra_options;
  std::size_t parallelism = 1;
  const BundleSet* bundles = nullptr;  // null: none
  const EnvLookup* env = nullptr;      // METRALE_PCH for the compiles; null: the process environment
  // The remote tier (Redis, remote_entry_store.hpp), asked after `store`; what it gives is also
  // written to `store`, and what NVRTC compiles is published to it. Null: none.
  const EntryStore* remote = nullptr;
  // Each NVRTC program's limit (jit/compile_deadline.hpp), and the longest wait for a key's compile
  // lock (jit/compile_lock.hpp, through store.lock).
  double compile_timeout_s = kDefaultCompileTimeoutS;
};

// The sources a successful compile of `source` opened (its include markers) that the key's
// digest does not cover, sorted; empty when the markers were silenced (the scan is then trusted).
std::vector<std::string> unkeyed_includes(const CompileResult& result, const SourceSet& sources,
                                          std::string_view source);

// The key of one variant for `arch` (the option list and source digest included). Its
// nvrtc_version is left empty: with_compiler() fills it when the disk or NVRTC is consulted.
// A source compiled against the toolkit (toolkit_for) has the toolkit's include folders in its
// options and its identity appended to its source digest ("<digest>+cuda13000-cccl...+<hex>"),
// so another toolkit recompiles; `toolkit` is asked only for such a source. Pure given `toolkit`.
EntryKey make_entry_key(const KernelVariant& variant, std::string_view arch, const SourceSet& sources,
                        const std::vector<std::string>& extra_options,
                        const std::function<const std::optional<CudaToolkit>&()>& toolkit);
// The same with cuda_toolkit() (which loads NVRTC, once, for a source that needs the toolkit).
EntryKey make_entry_key(const KernelVariant& variant, std::string_view arch, const SourceSet& sources,
                        const std::vector<std::string>& extra_options);

// The key with nvrtc_version() filled (loads NVRTC on first use).
EntryKey with_compiler(EntryKey key);
// The bundle key of one variant for `arch` (no compiler, no toolkit path). Pure apart from
// nothing: the options are computed with an empty include directory.
EntryKey make_bundle_key(const KernelVariant& variant, std::string_view arch, const SourceSet& sources,
                         const std::vector<std::string>& extra_options);

BuildSummary build_variants(std::span<const BuildJob> jobs, const BuildContext& context);

// The misses grouped by source, each group in job order; groups in order of first
// appearance; a shape-specialised variant (params.shape != 0) in a group of its own. Pure.
std::vector<std::vector<std::size_t>> group_by_source(std::span<const BuildJob> jobs,
                                                      std::span<const std::size_t> misses);

}  // namespace metrale::detail
