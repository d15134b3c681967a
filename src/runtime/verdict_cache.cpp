// verdict_cache.cpp: verdict files (JSON with a MAC) under the disk cache's verdicts/ directory.
#include "runtime/verdict_cache.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <mutex>
#include <nlohmann/json.hpp>

#include "ground/log.hpp"
#include "jit/cache_file_io.hpp"
#include "jit/cache_trust.hpp"
#include "jit/entry_key.hpp"

namespace metrale {

namespace {

constexpr int kFormat = 2;  // 2: with a MAC
constexpr const char* kKeyFile = "key";
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

std::string verdict_to_text(const VerdictKey& key, const KernelVerdict& verdict, const CacheSecret& secret) {
  nlohmann::json json = {{"format", kFormat},
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
  // The MAC covers the compact dump of every other field (keys sorted), which a parse of the
  // file gives back whatever its layout.
  json["mac"] = keyed_checksum(secret, json.dump());
  return json.dump(2) + "\n";
}

std::optional<KernelVerdict> verdict_from_text(const VerdictKey& key, const std::string& text,
                                               const CacheSecret& secret, std::string* problem) {
  auto refuse = [&](std::string why) -> std::optional<KernelVerdict> {
    if (problem != nullptr) {
      *problem = std::move(why);
    }
    return std::nullopt;
  };
  nlohmann::json json = nlohmann::json::parse(text, nullptr, false);
  if (json.is_discarded() || !json.is_object()) {
    return refuse("it is not a JSON object");
  }
  try {
    const auto mac = json.find("mac");
    if (mac == json.end() || !mac->is_string()) {
      return refuse("it has no keyed checksum (\"mac\")");
    }
    const std::string stated = mac->get<std::string>();
    json.erase("mac");
    if (!keyed_checksum_matches(secret, json.dump(), stated)) {
      return refuse("its keyed checksum does not hold under this cache's key: it was edited or not written here");
    }
    if (json.at("format").get<int>() != kFormat || json.at("key").get<std::string>() != key.digest() ||
        json.at("kernel_key").get<std::string>() != key.kernel_key || json.at("uuid").get<std::string>() != key.uuid ||
        json.at("driver").get<std::string>() != key.driver || json.at("device").get<std::string>() != key.device) {
      return refuse("it names another key");
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
      return refuse("its verdict is neither passed nor failed");  // only a comparison's is stored
    }
    verdict.check = json.at("check").get<std::string>();
    verdict.worst = json.at("worst").get<std::string>();
    verdict.ms = json.at("ms").get<double>();
    verdict.refusal = json.at("refusal").get<std::string>();
    if ((verdict.verdict == ops::CheckVerdict::kFailed) == verdict.refusal.empty()) {
      return refuse("a failure must carry its refusal and a pass none");
    }
    verdict.cached = true;
    verdict.cacheable = true;
    return verdict;
  } catch (const nlohmann::json::exception& error) {
    return refuse(error.what());
  }
}

struct VerdictCache::Folder {
  std::once_flag once;
  std::optional<std::filesystem::path> dir;  // trusted, with its key; absent: nothing on disk
  CacheSecret secret;
};

VerdictCache::VerdictCache(std::optional<std::filesystem::path> dir)
    : dir_(std::move(dir)), folder_(std::make_shared<Folder>()) {}

const VerdictCache::Folder& VerdictCache::folder() const {
  std::call_once(folder_->once, [&] {
    if (!dir_) {
      return;
    }
    const TrustedFolder trusted = trusted_cache_folder(dir_->parent_path(), dir_->filename().native());
    if (!trusted.dir) {
      logger().warn("verdicts are not kept on disk: refusing cache directory {}", trusted.problem);
      return;
    }
    CacheSecretResult key = load_or_create_cache_secret(*trusted.dir, kKeyFile);
    if (!key.secret) {
      logger().warn("verdicts are not kept on disk: the cache's key is unusable: {}", key.problem);
      return;
    }
    folder_->secret = *key.secret;
    folder_->dir = trusted.dir;
  });
  return *folder_;
}

std::optional<KernelVerdict> VerdictCache::load(const VerdictKey& key) const {
  const Folder& folder = this->folder();
  if (!folder.dir) {
    return std::nullopt;
  }
  const std::filesystem::path path = *folder.dir / key.file_name();
  const CacheReadResult read = read_cache_file(path, ::geteuid());
  if (read.status == CacheReadStatus::missing) {
    return std::nullopt;
  }
  if (read.status != CacheReadStatus::ok) {
    warn_once(fmt::format("verdict file {} is unusable: {}", path.string(), read.message));
    return std::nullopt;
  }
  std::string problem;
  std::optional<KernelVerdict> verdict = verdict_from_text(key, read.bytes, folder.secret, &problem);
  if (!verdict) {
    // Each refusal is an event (a file edited or planted): logged with its path every time.
    logger().warn("verdict file {} is refused: {}; the kernel is checked again", path.string(), problem);
  }
  return verdict;
}

void VerdictCache::store(const VerdictKey& key, const KernelVerdict& verdict) const {
  if (!verdict.cacheable) {
    return;
  }
  const Folder& folder = this->folder();
  if (!folder.dir) {
    return;
  }
  const CacheIoResult made =
      write_file_atomically(*folder.dir, key.file_name(), verdict_to_text(key, verdict, folder.secret));
  if (!made.ok) {
    static std::atomic<bool> warned{false};
    if (!warned.exchange(true)) {
      logger().warn("verdicts are not kept on disk: {}", made.message);
    }
  }
}

}  // namespace metrale
