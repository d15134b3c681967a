// jit/redis_client.hpp: the few Redis commands the remote cache tier needs (PING, GET, SET with
// a TTL, DEL, SCAN, SELECT), over one hiredis connection, and the parse of a redis:// URL.
// Invariants: nothing here throws (but std::bad_alloc): every failure is a value (RedisStatus and
// its message); every connect has a time limit and every command a read/write time limit, so a
// dead or slow server costs at most those; a failed command closes the connection (a hiredis
// context is unusable after an I/O error) and the next command reconnects; a write to a server
// that went away never raises SIGPIPE in the process. Not thread-safe: one caller at a time
// (the tier, remote_entry_store.hpp, holds a mutex around it). Values are binary (%b).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

struct redisContext;

namespace metrale {

// Where a redis:// URL points.
struct RedisEndpoint {
  std::string host;
  std::uint16_t port = 6379;
  std::uint32_t db = 0;

  // "redis://host:port/db", the one spelling logs and the CLI show.
  [[nodiscard]] std::string url() const;
  friend bool operator==(const RedisEndpoint&, const RedisEndpoint&) = default;
};

// The rule a URL must meet, for error messages.
inline constexpr std::string_view kRedisUrlRule =
    "redis://HOST:PORT[/DB]: HOST a name, an IPv4 address or [IPv6], PORT 1-65535, DB a number 0-65535 "
    "(no user, password, query or other scheme)";

struct RedisUrlParse {
  std::optional<RedisEndpoint> endpoint;  // absent: see problem
  std::string problem;                    // "the port '0' is not in 1-65535", ...
};

// Parses "redis://HOST:PORT[/DB]". Pure.
RedisUrlParse parse_redis_url(std::string_view url);

enum class RedisStatus {
  kOk,
  kNil,          // GET of a key that is not there
  kUnreachable,  // connect failed or timed out
  kIoError,      // the connection broke or a read/write timed out
  kRefused,      // the server answered with an error (OOM: full, READONLY, NOAUTH, ...)
  kTooLarge,     // a reply larger than the caller's limit
};

// "ok", "nil", "unreachable", "I/O error", "refused by the server", "too large". Pure.
std::string_view redis_status_name(RedisStatus status);

struct RedisResult {
  RedisStatus status = RedisStatus::kOk;
  std::string value;        // GET: the bytes; PING: the answer
  std::string message;      // what went wrong, for a log line
  std::uint64_t count = 0;  // DEL: keys removed; SCAN count: keys found

  [[nodiscard]] bool ok() const { return status == RedisStatus::kOk; }
  // True when the server could not be talked to (the tier then backs off).
  [[nodiscard]] bool connection_failed() const {
    return status == RedisStatus::kUnreachable || status == RedisStatus::kIoError;
  }
};

struct RedisTimeouts {
  std::chrono::milliseconds connect{200};
  std::chrono::milliseconds io{500};  // each read and write
};

class RedisClient {
 public:
  RedisClient(RedisEndpoint endpoint, RedisTimeouts timeouts);
  RedisClient(const RedisClient&) = delete;
  RedisClient& operator=(const RedisClient&) = delete;
  ~RedisClient();

  [[nodiscard]] const RedisEndpoint& endpoint() const { return endpoint_; }
  [[nodiscard]] bool connected() const { return context_ != nullptr; }
  // Connects (and SELECTs the DB) if not connected.
  RedisResult connect();
  void disconnect();

  RedisResult ping();
  // kNil when absent; kTooLarge (and the connection kept) when longer than max_bytes.
  RedisResult get(std::string_view key, std::uint64_t max_bytes);
  // SET key value EX ttl (ttl 0: no expiry).
  RedisResult set(std::string_view key, std::string_view value, std::chrono::seconds ttl);
  RedisResult del(std::string_view key);
  // Counts the keys starting with `prefix` (SCAN ... MATCH prefix*, never KEYS).
  RedisResult count_prefix(std::string_view prefix);

 private:
  RedisEndpoint endpoint_;
  RedisTimeouts timeouts_;
  redisContext* context_ = nullptr;
};

}  // namespace metrale
