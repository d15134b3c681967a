// tests/support/redis_server.hpp: a real redis-server of the test's own, on a free loopback port,
// in its own temp dir, with no persistence (--save '' --appendonly no); ready once it answers
// PING; killed (SIGKILL, reaped) in the destructor or by kill(). A missing redis-server throws
// with the package to install, so a test that needs one fails loudly, never passes silently.
// Also a loopback port nothing listens on, and one that accepts connections but never answers.
#pragma once

#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "jit/redis_client.hpp"
#include "support/temp_dir.hpp"

extern char** environ;

namespace metrale::test {

// A loopback port free at the time of the call (bound to port 0, read back, closed).
inline std::uint16_t free_loopback_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  socklen_t length = sizeof(address);
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    if (fd >= 0) {
      ::close(fd);
    }
    throw std::runtime_error("cannot find a free loopback port");
  }
  ::close(fd);
  return ntohs(address.sin_port);
}

// A listening loopback socket that never accepts nor answers: connects succeed (the kernel
// completes the handshake), every read times out. A "slow" Redis.
class SilentListener {
 public:
  SilentListener() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof(address);
    if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 || ::listen(fd_, 16) != 0 ||
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
      throw std::runtime_error("cannot listen on loopback");
    }
    port_ = ntohs(address.sin_port);
  }
  ~SilentListener() { ::close(fd_); }
  SilentListener(const SilentListener&) = delete;
  SilentListener& operator=(const SilentListener&) = delete;
  [[nodiscard]] std::uint16_t port() const { return port_; }

 private:
  int fd_ = -1;
  std::uint16_t port_ = 0;
};

// redis-server on PATH, else a message naming the package.
inline std::string redis_server_binary() {
  for (const char* dir : {"/usr/bin", "/usr/local/bin", "/usr/sbin"}) {
    const std::filesystem::path candidate = std::filesystem::path(dir) / "redis-server";
    if (::access(candidate.c_str(), X_OK) == 0) {
      return candidate.string();
    }
  }
  throw std::runtime_error(
      "redis-server is not installed: the [remote] tests need a real one (apt-get install redis-server, or "
      "tools/install_deps.sh as root)");
}

class RedisServer {
 public:
  // `extra`: more "--name value" arguments (e.g. {"--maxmemory", "1"}).
  explicit RedisServer(std::vector<std::string> extra = {}) : dir_("metrale-redis") {
    const std::string binary = redis_server_binary();
    for (int attempt = 0; attempt < 3 && pid_ <= 0; ++attempt) {
      port_ = free_loopback_port();
      std::vector<std::string> args{binary,
                                    "--port",
                                    std::to_string(port_),
                                    "--bind",
                                    "127.0.0.1",
                                    "--save",
                                    "",
                                    "--appendonly",
                                    "no",
                                    "--dir",
                                    dir_.path().string(),
                                    "--logfile",
                                    (dir_.path() / "redis.log").string(),
                                    "--daemonize",
                                    "no",
                                    "--protected-mode",
                                    "no"};
      args.insert(args.end(), extra.begin(), extra.end());
      std::vector<char*> argv;
      for (std::string& arg : args) {
        argv.push_back(arg.data());
      }
      argv.push_back(nullptr);
      pid_t pid = 0;
      if (::posix_spawn(&pid, binary.c_str(), nullptr, nullptr, argv.data(), environ) != 0) {
        throw std::runtime_error("cannot start " + binary);
      }
      pid_ = pid;
      if (!wait_ready()) {
        kill();  // the port was taken meanwhile, or the server refused its arguments: try another
      }
    }
    if (pid_ <= 0) {
      throw std::runtime_error("redis-server did not answer PING; its log: " + (dir_.path() / "redis.log").string());
    }
  }
  ~RedisServer() { kill(); }
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  [[nodiscard]] std::uint16_t port() const { return port_; }
  [[nodiscard]] std::string url() const { return "redis://127.0.0.1:" + std::to_string(port_); }
  [[nodiscard]] RedisEndpoint endpoint() const { return RedisEndpoint{"127.0.0.1", port_, 0}; }
  [[nodiscard]] bool running() const { return pid_ > 0; }

  // SIGKILL and reap: the server is gone when this returns (its port refuses connections).
  void kill() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      int status = 0;
      ::waitpid(pid_, &status, 0);
      pid_ = -1;
    }
  }

 private:
  bool wait_ready() {
    RedisClient client(endpoint(), RedisTimeouts{std::chrono::milliseconds(100), std::chrono::milliseconds(500)});
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return false;
      }
      if (const RedisResult pong = client.ping(); pong.ok() && pong.value == "PONG") {
        return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }

  TempDir dir_;
  std::uint16_t port_ = 0;
  pid_t pid_ = -1;
};

}  // namespace metrale::test
