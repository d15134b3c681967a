// cmd_cache.cpp: `metrale-jit cache list | verify | clear [--dir DIR] [--json]`: inspect the
// disk cache; `metrale-jit cache remote [--url URL] [--json]`: the remote tier's state (the URL of
// METRALE_REMOTE_CACHE, reachable or why not, the keys under the library's prefix; exit 1 when
// configured and unreachable). verify re-checks every entry's checksum, key and ownership, and every host-JIT
// object in its host/ folder as a load would (trailer, checksum, key, file type), and names each
// bad one (exit 1 when any is bad); clear removes entries and host objects only, never other files.
#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "command.hpp"
#include "host/host_object_file.hpp"
#include "jit/disk_cache.hpp"
#include "jit/remote_entry_store.hpp"
#include "metrale/error.hpp"

namespace metrale::cli {
namespace {

struct CacheOptions {
  std::string dir;
  bool json = false;
};

// Where the host backend keeps its objects for this cache (host/host_backend.hpp).
std::filesystem::path host_objects_of(const DiskCache& cache) { return cache.dir() / "host"; }

DiskCache open_cache(const CacheOptions& options) {
  DiskCache cache = options.dir.empty() ? DiskCache::open() : DiskCache::open_at(options.dir);
  if (!cache.enabled()) {
    throw Error(fmt::format("the disk cache is not usable: {}", cache.disabled_reason()));
  }
  return cache;
}

void list_entries(const CacheOptions& options) {
  const DiskCache cache = open_cache(options);
  const auto entries = cache.list();
  if (options.json) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& entry : entries) {
      out.push_back({{"path", entry.path.string()},
                     {"bytes", entry.bytes},
                     {"kernel", entry.kernel},
                     {"params", entry.params_tag},
                     {"arch", entry.arch},
                     {"age_s", entry.age.count()}});
    }
    std::fputs((out.dump(2) + "\n").c_str(), stdout);
    return;
  }
  std::fputs(fmt::format("{} entries in {}\n", entries.size(), cache.dir().string()).c_str(), stdout);
  std::fputs(fmt::format("{:<24} {:<12} {:<8} {:>10} {:>10}  {}\n", "kernel", "params", "arch", "bytes", "age", "file")
                 .c_str(),
             stdout);
  for (const auto& entry : entries) {
    std::fputs(fmt::format("{:<24} {:<12} {:<8} {:>10} {:>9}s  {}\n", entry.kernel.empty() ? "?" : entry.kernel,
                           entry.params_tag, entry.arch, entry.bytes, entry.age.count(), entry.path.filename().string())
                   .c_str(),
               stdout);
  }
}

int verify_entries(const CacheOptions& options) {
  const DiskCache cache = open_cache(options);
  auto results = cache.verify();
  for (host::HostObjectVerdict& object : host::verify_host_objects(host_objects_of(cache))) {
    results.push_back({std::move(object.path), object.problem.empty(), std::move(object.problem)});
  }
  int bad = 0;
  nlohmann::json out = nlohmann::json::array();
  for (const auto& result : results) {
    bad += result.ok ? 0 : 1;
    if (options.json) {
      out.push_back({{"path", result.path.string()}, {"ok", result.ok}, {"problem", result.problem}});
    } else if (!result.ok) {
      std::fputs(fmt::format("BAD  {}: {}\n", result.path.string(), result.problem).c_str(), stdout);
    }
  }
  if (options.json) {
    std::fputs((out.dump(2) + "\n").c_str(), stdout);
  } else {
    std::fputs(fmt::format("{} entries checked, {} bad\n", results.size(), bad).c_str(), stdout);
  }
  return bad == 0 ? kDone : kFailed;
}

int show_remote(const std::string& url, bool json) {
  const std::shared_ptr<RemoteEntryStore> tier =
      remote_tier_from(url.empty() ? std::nullopt : std::optional<std::string>(url), process_environment(), "--url");
  if (tier == nullptr) {
    if (json) {
      std::fputs((nlohmann::json{{"configured", false}}.dump(2) + "\n").c_str(), stdout);
    } else {
      std::fputs(fmt::format("remote cache: not configured ({} is unset)\n", kRemoteCacheVariable).c_str(), stdout);
    }
    return kDone;
  }
  const RemoteTierState state = tier->probe();
  if (json) {
    std::fputs((nlohmann::json{{"configured", true},
                               {"url", state.url},
                               {"reachable", state.reachable},
                               {"error", state.error},
                               {"prefix", tier->options().prefix},
                               {"keys", state.keys}}
                    .dump(2) +
                "\n")
                   .c_str(),
               stdout);
  } else if (state.reachable) {
    std::fputs(fmt::format("remote cache {}: reachable, {} keys under {}{}\n", state.url, state.keys,
                           tier->options().prefix, state.error.empty() ? "" : " (" + state.error + ")")
                   .c_str(),
               stdout);
  } else {
    std::fputs(fmt::format("remote cache {}: {}\n", state.url, state.error).c_str(), stdout);
  }
  return state.reachable ? kDone : kFailed;
}

void setup_cache(CLI::App& app, CommandContext& context) {
  auto* cache = app.add_subcommand("cache", "Inspect, verify or clear the disk cache; the remote tier's state");
  cache->require_subcommand(1);
  auto options = std::make_shared<CacheOptions>();
  auto add_common = [&](CLI::App* command) {
    command->add_option("--dir", options->dir, "Cache directory (default: METRALE_CACHE_DIR, XDG, ~/.cache)");
    command->add_flag("--json", options->json, "Print JSON");
  };
  auto* list = cache->add_subcommand("list", "Entries with kernel, arch, size and age");
  add_common(list);
  list->callback([options] { list_entries(*options); });
  auto* verify = cache->add_subcommand("verify", "Re-check every entry; name the bad ones (exit 1 if any)");
  add_common(verify);
  verify->callback([options, &context] { context.exit_code = verify_entries(*options); });
  auto* remote = cache->add_subcommand("remote", "The remote (Redis) tier: URL, reachable or why not, keys");
  auto remote_url = std::make_shared<std::string>();
  remote->add_option("--url", *remote_url, "redis://HOST:PORT[/DB] (default: METRALE_REMOTE_CACHE)");
  remote->add_flag("--json", options->json, "Print JSON");
  remote->callback([options, remote_url, &context] { context.exit_code = show_remote(*remote_url, options->json); });
  auto* clear = cache->add_subcommand("clear", "Remove every entry and host-JIT object");
  add_common(clear);
  clear->callback([options] {
    DiskCache opened = open_cache(*options);
    const std::size_t removed = opened.clear();
    const std::size_t objects = host::clear_host_objects(host_objects_of(opened));
    std::fputs(fmt::format("removed {} entries and {} host objects from {}\n", removed, objects, opened.dir().string())
                   .c_str(),
               stdout);
  });
}

const CommandRegistration kCache{"cache", setup_cache};

}  // namespace
}  // namespace metrale::cli
