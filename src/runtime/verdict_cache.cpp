// verdict_cache.cpp: verdict files (JSON) under the disk cache's verdicts/ directory.
#include "runtime/verdict_cache.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <nlohmann/json.hpp>

#include "ground/log.hpp"
#include "jit/cache_file_io.hpp"
#include "jit/cache_key.hpp"

namespace metrale {

namespace {

constexpr int kFormat = 1;
constexpr std::size_t kMaxNamePart = 48;

// One warning per process for the first unusable verdict file; the rest at debug.
void warn_once(const std::string& message) {
  static std::atomic<bool> warned{false};
  if (!warned.exchange(true)) {
    logger().warn("{} (ignored: the kernel is checked again; later ones are logged at debug)", message);
  } else {
    logger().debug("{}", message);
  }
}

}  // namespace

std::string VerdictKey::digest() const {
  const std::string format = std::to_string(kFormat);
  return fields_digest({&format, &device, &uuid, &driver, &kernel, &params, &kernel_key});
}

std::string VerdictKey::file_name() const {
  return fmt::format("{}.{}.{}.verdict", sanitize_cache_name_part(kernel, kMaxNamePart),
                     sanitize_cache_name_part(params, kMaxNamePart), digest().substr(0, 16));
}

std::string verdict_to_text(const VerdictKey& key, const KernelVerdict& verdict) {
  const nlohmann::json json = {{"format", kFormat},
                               {"key", key.digest()},
                               {"device", key.device},
                               {"uuid", key.uuid},
                               {"driver", key.driver},
                               {"kernel", key.kernel},
                               {"params", key.params},
                               {"kernel_key", key.kernel_key},
                               {"verdict", std::string(ops::to_string(verdict.verdict))},
                               {"check", verdict.check},
                               {"worst", verdict.worst},
                               {"ms", verdict.ms},
                               {"refusal", verdict.refusal}};
  return json.dump(2) + "\n";
}

std::optional<KernelVerdict> verdict_from_text(const VerdictKey& key, const std::string& text) {
  const nlohmann::json json = nlohmann::json::parse(text, nullptr, false);
  if (json.is_discarded() || !json.is_object()) {
    return std::nullopt;
  }
  try {
    if (json.at("format").get<int>() != kFormat || json.at("key").get<std::string>() != key.digest() ||
        json.at("kernel_key").get<std::string>() != key.kernel_key || json.at("uuid").get<std::string>() != key.uuid ||
        json.at("driver").get<std::string>() != key.driver || json.at("device").get<std::string>() != key.device) {
      return std::nullopt;
    }
    KernelVerdict verdict;
    verdict.kernel = key.kernel;
    verdict.params = key.params;
    const std::string word = json.at("verdict").get<std::string>();
    if (word == ops::to_string(ops::CheckVerdict::kPassed)) {
      verdict.verdict = ops::CheckVerdict::kPassed;
    } else if (word == ops::to_string(ops::CheckVerdict::kFailed)) {
      verdict.verdict = ops::CheckVerdict::kFailed;
    } else {
      return std::nullopt;  // only a comparison's verdict is ever stored
    }
    verdict.check = json.at("check").get<std::string>();
    verdict.worst = json.at("worst").get<std::string>();
    verdict.ms = json.at("ms").get<double>();
    verdict.refusal = json.at("refusal").get<std::string>();
    if ((verdict.verdict == ops::CheckVerdict::kFailed) == verdict.refusal.empty()) {
      return std::nullopt;  // a failure always carries its refusal, a pass never
    }
    verdict.cached = true;
    verdict.cacheable = true;
    return verdict;
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
}

std::optional<KernelVerdict> VerdictCache::load(const VerdictKey& key) const {
  if (!dir_) {
    return std::nullopt;
  }
  const std::filesystem::path path = *dir_ / key.file_name();
  const CacheReadResult read = read_cache_file(path, ::geteuid());
  if (read.status == CacheReadStatus::missing) {
    return std::nullopt;
  }
  if (read.status != CacheReadStatus::ok) {
    warn_once(fmt::format("verdict file {} is unusable: {}", path.string(), read.message));
    return std::nullopt;
  }
  std::optional<KernelVerdict> verdict = verdict_from_text(key, read.bytes);
  if (!verdict) {
    warn_once(fmt::format("verdict file {} is corrupt or names another key", path.string()));
  }
  return verdict;
}

void VerdictCache::store(const VerdictKey& key, const KernelVerdict& verdict) const {
  if (!dir_ || !verdict.cacheable) {
    return;
  }
  CacheIoResult made = make_private_directories(*dir_);
  if (made.ok) {
    made = write_file_atomically(*dir_, key.file_name(), verdict_to_text(key, verdict));
  }
  if (!made.ok) {
    static std::atomic<bool> warned{false};
    if (!warned.exchange(true)) {
      logger().warn("verdicts are not kept on disk: {}", made.message);
    }
  }
}

}  // namespace metrale
