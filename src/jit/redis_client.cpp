// redis_client.cpp: RedisClient over hiredis's blocking API (redisCommandArgv, so keys and
// values are binary), and the pure redis:// URL parse.
#include "jit/redis_client.hpp"

#include <fmt/format.h>
#include <hiredis/hiredis.h>
#include <pthread.h>
#include <signal.h>
#include <sys/time.h>

#include <charconv>
#include <memory>
#include <vector>

namespace metrale {

namespace {

struct ReplyFree {
  void operator()(redisReply* reply) const { freeReplyObject(reply); }
};
using Reply = std::unique_ptr<redisReply, ReplyFree>;

timeval to_timeval(std::chrono::milliseconds ms) {
  const auto count = std::max<std::int64_t>(ms.count(), 1);
  return timeval{static_cast<time_t>(count / 1000), static_cast<suseconds_t>((count % 1000) * 1000)};
}

// hiredis writes with write(2): a server that closed its end would raise SIGPIPE, whose default
// action ends the process. SIGPIPE is blocked on this thread around each command, and one it
// raised is taken off the pending set before the mask is restored (the signal is per thread for
// a write, so this never eats another thread's).
class SigpipeGuard {
 public:
  SigpipeGuard() {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_, &old_);
    sigset_t pending;
    sigemptyset(&pending);
    sigpending(&pending);
    pending_before_ = sigismember(&pending, SIGPIPE) == 1;
  }
  ~SigpipeGuard() {
    if (!pending_before_) {
      sigset_t pending;
      sigemptyset(&pending);
      sigpending(&pending);
      if (sigismember(&pending, SIGPIPE) == 1) {
        const timespec zero{0, 0};
        sigtimedwait(&pipe_, nullptr, &zero);
      }
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  SigpipeGuard(const SigpipeGuard&) = delete;
  SigpipeGuard& operator=(const SigpipeGuard&) = delete;

 private:
  sigset_t pipe_{};
  sigset_t old_{};
  bool pending_before_ = false;
};

template <typename Number>
std::optional<Number> parse_number(std::string_view text) {
  Number value{};
  if (text.empty() || text.size() > 10) {
    return std::nullopt;
  }
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc{} || end != text.data() + text.size()) {
    return std::nullopt;
  }
  return value;
}

bool is_host_char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_';
}

// SCAN's MATCH is a glob: the prefix's own glob characters are escaped.
std::string glob_escaped(std::string_view prefix) {
  std::string out;
  for (const char c : prefix) {
    if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') {
      out.push_back('\\');
    }
    out.push_back(c);
  }
  return out + "*";
}

RedisResult failure(RedisStatus status, std::string message) { return RedisResult{status, {}, std::move(message), 0}; }

}  // namespace

std::string RedisEndpoint::url() const {
  const bool ipv6 = host.find(':') != std::string::npos;
  return fmt::format("redis://{}{}{}:{}/{}", ipv6 ? "[" : "", host, ipv6 ? "]" : "", port, db);
}

RedisUrlParse parse_redis_url(std::string_view url) {
  constexpr std::string_view kScheme = "redis://";
  if (!url.starts_with(kScheme)) {
    return {std::nullopt, "it does not start with redis://"};
  }
  std::string_view rest = url.substr(kScheme.size());
  if (rest.find_first_of("@?#") != std::string_view::npos) {
    return {std::nullopt, "a user, password, query or fragment is not supported"};
  }
  RedisEndpoint endpoint;
  std::string_view host;
  if (rest.starts_with('[')) {
    const std::size_t close = rest.find(']');
    if (close == std::string_view::npos) {
      return {std::nullopt, "the IPv6 address has no closing ']'"};
    }
    host = rest.substr(1, close - 1);
    rest = rest.substr(close + 1);
    if (host.empty() || host.find_first_not_of("0123456789abcdefABCDEF:.") != std::string_view::npos ||
        host.find(':') == std::string_view::npos) {
      return {std::nullopt, fmt::format("'{}' is not an IPv6 address", host)};
    }
  } else {
    const std::size_t colon = rest.find(':');
    host = rest.substr(0, colon);
    rest = colon == std::string_view::npos ? std::string_view{} : rest.substr(colon);
    if (host.empty()) {
      return {std::nullopt, "the host is empty"};
    }
    for (const char c : host) {
      if (!is_host_char(c)) {
        return {std::nullopt, fmt::format("the host '{}' has a character outside [A-Za-z0-9._-]", host)};
      }
    }
  }
  endpoint.host = std::string(host);
  if (!rest.starts_with(':')) {
    return {std::nullopt, "the port is missing (redis://HOST:PORT)"};
  }
  rest = rest.substr(1);
  const std::size_t slash = rest.find('/');
  const std::string_view port_text = rest.substr(0, slash);
  const std::optional<std::uint32_t> port = parse_number<std::uint32_t>(port_text);
  if (!port || *port == 0 || *port > 65535) {
    return {std::nullopt, fmt::format("the port '{}' is not a number in 1-65535", port_text)};
  }
  endpoint.port = static_cast<std::uint16_t>(*port);
  if (slash != std::string_view::npos) {
    const std::string_view db_text = rest.substr(slash + 1);
    const std::optional<std::uint32_t> db = parse_number<std::uint32_t>(db_text);
    if (!db || *db > 65535) {
      return {std::nullopt, fmt::format("the database '{}' is not a number in 0-65535", db_text)};
    }
    endpoint.db = *db;
  }
  return {std::move(endpoint), {}};
}

std::string_view redis_status_name(RedisStatus status) {
  switch (status) {
    case RedisStatus::kOk:
      return "ok";
    case RedisStatus::kNil:
      return "nil";
    case RedisStatus::kUnreachable:
      return "unreachable";
    case RedisStatus::kIoError:
      return "I/O error";
    case RedisStatus::kRefused:
      return "refused by the server";
    case RedisStatus::kTooLarge:
      return "too large";
  }
  return "?";
}

RedisClient::RedisClient(RedisEndpoint endpoint, RedisTimeouts timeouts)
    : endpoint_(std::move(endpoint)), timeouts_(timeouts) {}

RedisClient::~RedisClient() { disconnect(); }

void RedisClient::disconnect() {
  if (context_ != nullptr) {
    redisFree(context_);
    context_ = nullptr;
  }
}

namespace {

// One command on `context`; null with `error` filled when the connection failed (the caller
// then disconnects).
Reply run_command(redisContext* context, std::initializer_list<std::string_view> args, RedisResult& error) {
  std::vector<const char*> argv;
  std::vector<std::size_t> lengths;
  for (const std::string_view arg : args) {
    argv.push_back(arg.data());
    lengths.push_back(arg.size());
  }
  const SigpipeGuard guard;
  Reply reply(
      static_cast<redisReply*>(redisCommandArgv(context, static_cast<int>(argv.size()), argv.data(), lengths.data())));
  if (reply == nullptr) {
    error = failure(RedisStatus::kIoError, context->err != 0 ? std::string(context->errstr) : "no reply");
  }
  return reply;
}

std::string reply_text(const redisReply& reply) { return std::string(reply.str, reply.len); }

// One command on a connected client: its reply, or null with `error` filled: an I/O failure (the
// client is disconnected, as hiredis cannot use the context again) or an error reply (kRefused
// with the server's text, the connection kept).
Reply checked_command(RedisClient& client, redisContext* context, std::initializer_list<std::string_view> args,
                      RedisResult& error) {
  Reply reply = run_command(context, args, error);
  if (reply == nullptr) {
    client.disconnect();
    return nullptr;
  }
  if (reply->type == REDIS_REPLY_ERROR) {
    error = failure(RedisStatus::kRefused, reply_text(*reply));
    return nullptr;
  }
  return reply;
}

}  // namespace

RedisResult RedisClient::connect() {
  if (context_ != nullptr) {
    return {};
  }
  // hiredis wants the bare IPv6 address, which the endpoint keeps without brackets.
  redisContext* context =
      redisConnectWithTimeout(endpoint_.host.c_str(), endpoint_.port, to_timeval(timeouts_.connect));
  if (context == nullptr) {
    return failure(RedisStatus::kUnreachable, "cannot allocate a Redis connection");
  }
  if (context->err != 0) {
    std::string message = fmt::format("cannot connect to {}: {}", endpoint_.url(), context->errstr);
    redisFree(context);
    return failure(RedisStatus::kUnreachable, std::move(message));
  }
  const timeval io = to_timeval(timeouts_.io);
  if (redisSetTimeout(context, io) != REDIS_OK) {
    redisFree(context);
    return failure(RedisStatus::kUnreachable, fmt::format("cannot set a time limit on {}", endpoint_.url()));
  }
  context_ = context;
  if (endpoint_.db != 0) {
    RedisResult error;
    const std::string db = std::to_string(endpoint_.db);
    Reply reply = run_command(context_, {"SELECT", db}, error);
    if (reply == nullptr) {
      disconnect();
      return error;
    }
    if (reply->type == REDIS_REPLY_ERROR) {
      std::string message = fmt::format("SELECT {} on {}: {}", db, endpoint_.url(), reply_text(*reply));
      disconnect();
      return failure(RedisStatus::kRefused, std::move(message));
    }
  }
  return {};
}

RedisResult RedisClient::ping() {
  if (RedisResult connected = connect(); !connected.ok()) {
    return connected;
  }
  RedisResult error;
  const Reply reply = checked_command(*this, context_, {"PING"}, error);
  if (reply == nullptr) {
    return error;
  }
  RedisResult out;
  out.value = reply->type == REDIS_REPLY_STATUS || reply->type == REDIS_REPLY_STRING ? reply_text(*reply) : "";
  return out;
}

RedisResult RedisClient::get(std::string_view key, std::uint64_t max_bytes) {
  if (RedisResult connected = connect(); !connected.ok()) {
    return connected;
  }
  RedisResult error;
  const Reply reply = checked_command(*this, context_, {"GET", key}, error);
  if (reply == nullptr) {
    return error;
  }
  switch (reply->type) {
    case REDIS_REPLY_NIL:
      return failure(RedisStatus::kNil, {});
    case REDIS_REPLY_STRING:
      if (reply->len > max_bytes) {
        return failure(RedisStatus::kTooLarge, fmt::format("{} bytes, more than {}", reply->len, max_bytes));
      }
      return RedisResult{RedisStatus::kOk, reply_text(*reply), {}, 0};
    default:
      return failure(RedisStatus::kRefused, fmt::format("GET answered with reply type {}", reply->type));
  }
}

RedisResult RedisClient::set(std::string_view key, std::string_view value, std::chrono::seconds ttl) {
  if (RedisResult connected = connect(); !connected.ok()) {
    return connected;
  }
  RedisResult error;
  const std::string seconds = std::to_string(ttl.count());
  const Reply reply = ttl.count() > 0 ? checked_command(*this, context_, {"SET", key, value, "EX", seconds}, error)
                                      : checked_command(*this, context_, {"SET", key, value}, error);
  return reply == nullptr ? error : RedisResult{};
}

RedisResult RedisClient::del(std::string_view key) {
  if (RedisResult connected = connect(); !connected.ok()) {
    return connected;
  }
  RedisResult error;
  const Reply reply = checked_command(*this, context_, {"DEL", key}, error);
  if (reply == nullptr) {
    return error;
  }
  RedisResult out;
  out.count = reply->type == REDIS_REPLY_INTEGER ? static_cast<std::uint64_t>(reply->integer) : 0;
  return out;
}

RedisResult RedisClient::count_prefix(std::string_view prefix) {
  if (RedisResult connected = connect(); !connected.ok()) {
    return connected;
  }
  const std::string pattern = glob_escaped(prefix);
  std::string cursor = "0";
  RedisResult out;
  do {
    RedisResult error;
    const Reply reply = checked_command(*this, context_, {"SCAN", cursor, "MATCH", pattern, "COUNT", "1000"}, error);
    if (reply == nullptr) {
      return error;
    }
    if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 2 || reply->element[0]->type != REDIS_REPLY_STRING ||
        reply->element[1]->type != REDIS_REPLY_ARRAY) {
      return failure(RedisStatus::kRefused, "SCAN answered in an unexpected form");
    }
    cursor = reply_text(*reply->element[0]);
    out.count += reply->element[1]->elements;
  } while (cursor != "0");
  return out;
}

}  // namespace metrale
