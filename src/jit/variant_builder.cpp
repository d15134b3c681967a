// variant_builder.cpp: the lookup (memory, bundles, disk, remote) and the batched, parallel NVRTC compiles.
#include "variant_builder.hpp"

#include <fmt/ranges.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <future>
#include <iterator>
#include <map>
#include <thread>

#include "ground/log.hpp"
#include "jit/compile_target.hpp"
#include "jit/nvrtc_c_headers.hpp"
#include "jit/nvrtc_compiler.hpp"

namespace metrale::detail {
namespace {

using EntryPtr = std::shared_ptr<const CompiledEntry>;

std::string join_options(const std::vector<std::string>& options) {
  std::string out;
  for (const std::string& option : options) {
    out += (out.empty() ? "" : " ") + option;
  }
  return out;
}

// Runs task(0 .. count-1) on up to `parallelism` threads (the caller's thread included).
void run_parallel(std::size_t count, std::size_t parallelism, const std::function<void(std::size_t)>& task) {
  std::atomic<std::size_t> next{0};
  auto worker = [&] {
    for (std::size_t i = next++; i < count; i = next++) {
      task(i);
    }
  };
  const std::size_t helpers = std::min(count, std::max<std::size_t>(parallelism, 1)) - (count > 0 ? 1 : 0);
  std::vector<std::future<void>> running;
  for (std::size_t i = 0; i < helpers; ++i) {
    running.push_back(std::async(std::launch::async, worker));
  }
  worker();
  for (std::future<void>& done : running) {
    done.get();
  }
}

EntryPtr failed_entry(std::string_view arch, std::string log, double compile_ms, std::size_t batch_size) {
  auto entry = std::make_shared<CompiledEntry>();
  entry->arch = std::string(arch);
  entry->log = std::move(log);
  entry->compile_ms = compile_ms;
  entry->batch_size = batch_size;
  return entry;
}

struct GroupResult {
  std::uint64_t programs = 0;
  std::uint64_t variants = 0;
  double compile_ms = 0.0;
};

// Compiles one group of misses of one source (batched), fulfilling each job's promise.
GroupResult compile_group(std::span<const BuildJob* const> group, std::span<std::promise<EntryPtr>* const> promises,
                          const BuildContext& context) {
  GroupResult totals;
  CompileRequest request{
      group.front()->variant.source, &context.sources, {}, std::string(context.arch), context.extra_options};
  for (const BuildJob* job : group) {
    request.name_expressions.push_back(job->variant.name_expression);
  }
  if (context.env != nullptr) {
    request.env = *context.env;
  }
  const CompileResult result = compile_with_nvrtc(request, context.compile_timeout_s);
  ++totals.programs;
  totals.variants += group.size();
  totals.compile_ms += result.compile_ms;
  if (!result.ok && !result.timed_out && group.size() > 1) {
    for (std::size_t i = 0; i < group.size(); ++i) {
      const GroupResult single = compile_group(group.subspan(i, 1), promises.subspan(i, 1), context);
      totals.programs += single.programs;
      totals.compile_ms += single.compile_ms;
    }
    return totals;
  }
  const auto ptx = std::make_shared<const std::string>(result.ptx);
  const auto cubin = std::make_shared<const std::string>(result.cubin);
  const std::vector<std::string> unkeyed = unkeyed_includes(result, context.sources, request.source_name);
  if (result.ok && !unkeyed.empty()) {
    logger().warn(
        "{}: the compile opened {}, which its cache key does not cover (no plain #include line names it: a "
        "macro include?); its kernels are compiled on each request and neither stored on disk nor bundled",
        request.source_name, fmt::join(unkeyed, ", "));
  }
  for (std::size_t i = 0; i < group.size(); ++i) {
    const BuildJob& job = *group[i];
    if (!result.ok) {
      logger().warn("kernel {} ({}) failed to compile for {}; its handle stays absent:\n{}", job.variant.kernel,
                    job.variant.name_expression, context.arch, result.log);
      promises[i]->set_value(failed_entry(context.arch, result.log, result.compile_ms, group.size()));
      // The failure memo is keyed by the scan too: a fixed header must retry; a timeout says
      // nothing of the key (a loaded machine), so a later build tries again.
      if (!unkeyed.empty() || result.timed_out) {
        context.memory.forget(job.key.joined());
      }
      continue;
    }
    auto entry = std::make_shared<CompiledEntry>();
    entry->ok = true;
    entry->arch = std::string(context.arch);
    entry->lowered_name = result.lowered_names[i];
    entry->ptx = ptx;
    entry->cubin = cubin;
    entry->log = result.log;
    if (const KernelResources* resources = result.resources_for(entry->lowered_name); resources != nullptr) {
      entry->resources = *resources;
    }
    entry->compile_ms = result.compile_ms;
    entry->batch_size = group.size();
    entry->unkeyed_includes = unkeyed;
    if (!unkeyed.empty()) {
      promises[i]->set_value(std::move(entry));
      context.memory.forget(job.key.joined());
      continue;
    }
    const EntrySections sections = entry_to_sections(*entry);
    if (context.store.enabled() && !context.store.store(with_compiler(job.key), sections)) {
      logger().debug("kernel {}: the compiled entry was not stored on disk", job.variant.kernel);
    }
    if (context.remote != nullptr && context.remote->enabled() &&
        !context.remote->store(with_compiler(job.key), sections)) {
      logger().debug("kernel {}: the compiled entry was not published to the remote cache", job.variant.kernel);
    }
    promises[i]->set_value(std::move(entry));
  }
  return totals;
}

EntryPtr load_from_store(const BuildJob& job, const BuildContext& context, const EntryStore& store,
                         EntrySections* loaded = nullptr) {
  if (!store.enabled()) {
    return nullptr;
  }
  std::optional<EntrySections> sections = store.load(with_compiler(job.key));
  if (!sections) {
    return nullptr;
  }
  std::optional<CompiledEntry> entry = entry_from_sections(*sections);
  if (!entry || entry->arch != context.arch) {
    logger().debug("kernel {}: the stored entry is not valid; recompiling", job.variant.kernel);
    return nullptr;
  }
  if (loaded != nullptr) {
    *loaded = std::move(*sections);
  }
  return std::make_shared<const CompiledEntry>(std::move(*entry));
}

// The remote tier's entry, kept on the local disk too (the next start of this machine reads it there).
EntryPtr load_from_remote(const BuildJob& job, const BuildContext& context) {
  if (context.remote == nullptr) {
    return nullptr;
  }
  EntrySections sections;
  EntryPtr fetched = load_from_store(job, context, *context.remote, &sections);
  if (fetched != nullptr && context.store.enabled() && !context.store.store(with_compiler(job.key), sections)) {
    logger().debug("kernel {}: the remote entry was not stored on disk", job.variant.kernel);
  }
  return fetched;
}

// The compile locks of a group's keys, taken in the keys' order (every process sorts the same way,
// so two builds of overlapping groups never wait on each other in a cycle), all within one
// deadline: past it the rest are not waited for and the group compiles anyway.
std::vector<CompileLock> lock_keys(std::span<const BuildJob* const> group, const BuildContext& context) {
  std::vector<const BuildJob*> ordered(group.begin(), group.end());
  std::sort(ordered.begin(), ordered.end(),
            [](const BuildJob* a, const BuildJob* b) { return a->key.joined() < b->key.joined(); });
  std::vector<CompileLock> locks;
  const auto start = std::chrono::steady_clock::now();
  for (const BuildJob* job : ordered) {
    const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    locks.push_back(context.store.lock(with_compiler(job->key), std::max(0.0, context.compile_timeout_s - waited)));
  }
  return locks;
}

}  // namespace

std::vector<std::string> unkeyed_includes(const CompileResult& result, const SourceSet& sources,
                                          std::string_view source) {
  std::vector<std::string> out;
  if (!result.included) {
    logger().debug("{}: the options silence NVRTC's include markers; its key relies on the #include scan", source);
    return out;
  }
  const std::vector<std::string> keyed = sources.digested_members(source);
  std::set_difference(result.included->begin(), result.included->end(), keyed.begin(), keyed.end(),
                      std::back_inserter(out));
  return out;
}

EntryKey make_entry_key(const KernelVariant& variant, std::string_view arch, const SourceSet& sources,
                        const std::vector<std::string>& extra_options,
                        const std::function<const std::optional<CudaToolkit>&()>& toolkit) {
  const CudaToolkit* used = toolkit_for(sources, variant.source, toolkit);
  const std::vector<std::string> include_dirs = used != nullptr ? used->include_dirs : std::vector<std::string>{};
  std::string digest = sources.digest(variant.source).value_or("");
  if (used != nullptr) {
    digest += "+" + used->identity;  // the toolkit's headers are part of what the source includes
  }
  digest += c_headers_key_part(sources, variant.source);  // the built-in C headers it is given
  return EntryKey{variant.kernel,
                  variant.params.tag(),
                  std::string(arch),
                  {},
                  join_options(nvrtc_options(arch, include_dirs, extra_options)),
                  std::move(digest),
                  variant.name_expression};
}

EntryKey make_entry_key(const KernelVariant& variant, std::string_view arch, const SourceSet& sources,
                        const std::vector<std::string>& extra_options) {
  return make_entry_key(variant, arch, sources, extra_options, cuda_toolkit);
}

EntryKey with_compiler(EntryKey key) {
  key.nvrtc_version = nvrtc_version();
  return key;
}

EntryKey make_bundle_key(const KernelVariant& variant, std::string_view arch, const SourceSet& sources,
                         const std::vector<std::string>& extra_options) {
  return EntryKey{.kernel = variant.kernel,
                  .params_tag = variant.params.tag(),
                  .arch = std::string(arch),
                  .nvrtc_version = "",  // a bundle's key names no compiler
                  .options = join_options(nvrtc_options(arch, {}, extra_options)),
                  .source_digest = sources.digest(variant.source).value_or(""),
                  .name_expression = variant.name_expression};
}

std::vector<std::vector<std::size_t>> group_by_source(std::span<const BuildJob> jobs,
                                                      std::span<const std::size_t> misses) {
  std::vector<std::vector<std::size_t>> groups;
  std::map<std::string_view, std::size_t> group_of_source;
  for (const std::size_t miss : misses) {
    // A shape-specialised variant compiles alone: its image then holds only its own code, and it
    // does not lengthen its generic form's program, which is the longest of a cold build.
    if (jobs[miss].variant.params.shape != 0) {
      groups.push_back({miss});
      continue;
    }
    const std::string_view source = jobs[miss].variant.source;
    auto [it, inserted] = group_of_source.emplace(source, groups.size());
    if (inserted) {
      groups.emplace_back();
    }
    groups[it->second].push_back(miss);
  }
  return groups;
}

namespace {

// The claims of one build: each job's future in the memory cache, and the promise of each key this
// build claimed (nullptr: another build holds it, this one waits on its future).
struct Claims {
  std::vector<std::shared_future<EntryPtr>> futures;
  std::vector<std::shared_ptr<std::promise<EntryPtr>>> owned;
};

// Memory, bundles, disk, the remote tier, in that order: each key this build claimed is fulfilled
// from the first that holds it; the indices of those none holds (NVRTC's work) are returned.
std::vector<std::size_t> look_up_stored(std::span<const BuildJob> jobs, const BuildContext& context, Claims& claims,
                                        BuildSummary& summary) {
  std::vector<std::size_t> misses;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    summary.outcomes[i].id = jobs[i].id;
    CompiledMemoryCache::Claim claim = context.memory.claim(jobs[i].key.joined());
    claims.futures[i] = claim.future;
    if (!claim.owned()) {
      summary.outcomes[i].origin = BuildOrigin::kMemory;
      continue;
    }
    claims.owned[i] = claim.promise;
    std::promise<EntryPtr>& promise = *claims.owned[i];
    if (context.bundles != nullptr) {
      if (std::optional<CompiledEntry> bundled = context.bundles->find(
              make_bundle_key(jobs[i].variant, context.arch, context.sources, context.extra_options))) {
        summary.outcomes[i].origin = BuildOrigin::kBundle;
        promise.set_value(std::make_shared<const CompiledEntry>(std::move(*bundled)));
        continue;
      }
    }
    if (EntryPtr stored = load_from_store(jobs[i], context, context.store)) {
      summary.outcomes[i].origin = BuildOrigin::kDisk;
      promise.set_value(std::move(stored));
      continue;
    }
    if (EntryPtr fetched = load_from_remote(jobs[i], context)) {
      summary.outcomes[i].origin = BuildOrigin::kRemote;
      promise.set_value(std::move(fetched));
      continue;
    }
    summary.outcomes[i].origin = BuildOrigin::kNvrtc;
    misses.push_back(i);
  }
  return misses;
}

// One group of misses compiled as one NVRTC program. With a disk store that locks, its keys are
// locked first and the disk looked in again: another process may have compiled a key while this
// one waited. What it stored is whole or absent: the disk cache publishes by temp file, fsync and
// rename (jit/cache_file_io.hpp), never in place; the locks are released once this group's
// entries are stored (compile_group stores before it returns).
GroupResult compile_group_under_locks(std::span<const std::size_t> members, std::span<const BuildJob> jobs,
                                      const Claims& claims, const BuildContext& context, BuildSummary& summary) {
  std::vector<const BuildJob*> group;
  std::vector<std::promise<EntryPtr>*> promises;
  for (const std::size_t i : members) {
    group.push_back(&jobs[i]);
    promises.push_back(claims.owned[i].get());
  }
  try {
    if (!context.store.lock) {
      return compile_group(group, promises, context);
    }
    const std::vector<CompileLock> locks = lock_keys(group, context);
    std::vector<const BuildJob*> left;
    std::vector<std::promise<EntryPtr>*> left_promises;
    for (std::size_t k = 0; k < group.size(); ++k) {
      if (EntryPtr stored = load_from_store(*group[k], context, context.store)) {
        summary.outcomes[members[k]].origin = BuildOrigin::kDisk;
        promises[k]->set_value(std::move(stored));
      } else {
        left.push_back(group[k]);
        left_promises.push_back(promises[k]);
      }
    }
    return left.empty() ? GroupResult{} : compile_group(left, left_promises, context);
  } catch (const std::exception& error) {
    // Waiters in other threads must never hang on an unfulfilled key.
    for (std::promise<EntryPtr>* promise : promises) {
      try {
        promise->set_value(failed_entry(context.arch, std::string("compile aborted: ") + error.what(), 0.0, 1));
      } catch (const std::future_error&) {
        // already fulfilled before the failure
      }
    }
    return GroupResult{};
  }
}

}  // namespace

// The stages, top to bottom: the keys (the jobs'), memory, bundles, disk, remote, then NVRTC per
// group of misses (loading, verifying and publishing handles are the registry's, after this).
BuildSummary build_variants(std::span<const BuildJob> jobs, const BuildContext& context) {
  BuildSummary summary;
  summary.outcomes.resize(jobs.size());
  Claims claims{std::vector<std::shared_future<EntryPtr>>(jobs.size()),
                std::vector<std::shared_ptr<std::promise<EntryPtr>>>(jobs.size())};
  std::vector<std::size_t> misses = look_up_stored(jobs, context, claims, summary);

  if (!misses.empty() && !nvrtc_available()) {
    // Nothing can compile: each miss is an absent handle whose record says why.
    for (const std::size_t i : misses) {
      logger().debug("kernel {} ({}) for {}: {}", jobs[i].variant.kernel, jobs[i].variant.params.tag(), context.arch,
                     nvrtc_unavailable_reason());
      claims.owned[i]->set_value(failed_entry(context.arch, nvrtc_unavailable_reason(), 0.0, 1));
    }
    misses.clear();
  }
  const std::vector<std::vector<std::size_t>> groups = group_by_source(jobs, misses);
  std::vector<GroupResult> results(groups.size());
  run_parallel(groups.size(), context.parallelism, [&](std::size_t g) {
    results[g] = compile_group_under_locks(groups[g], jobs, claims, context, summary);
  });
  for (const GroupResult& result : results) {
    summary.programs += result.programs;
    summary.compiled_variants += result.variants;
    summary.compile_ms += result.compile_ms;
  }
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    summary.outcomes[i].entry = claims.futures[i].get();
  }
  return summary;
}

}  // namespace metrale::detail
