// host/host_object_file.hpp: a host-JIT object as kept in the cache folder (<cache>/host/*.so):
// the compiler's shared object followed by a fixed trailer that records the object's size, its
// XXH3-128 and the key it was built for. The trailer is the object's metadata, in the same file
// so one rename publishes both (a sidecar file could pair with another writer's object); the
// dynamic loader maps an ELF object by its headers, so bytes after it are never read by it.
// Invariants: an object is handed to dlopen only after its whole file was read by the read-back
// rules (jit/read_back_file.hpp: a regular file, no link, at most kHostObjectMaxBytes, owned by
// this user and writable by no one else) and its trailer and checksum held, and only while its
// name is still that file (same device and inode, before and after dlopen); a bad one has a problem naming the path and
// the rule (truncated, checksum, other key, no trailer), never a crash. Pure parts are fuzzed
// (tests/fuzz/fuzz_host_object.cpp).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "jit/read_back_file.hpp"

namespace metrale::host {

// The largest object file read back. A host kernel's object is tens to hundreds of KB; 256 MiB
// is far past any real one and keeps a planted or runaway file from being read into memory.
inline constexpr std::uint64_t kHostObjectMaxBytes = 256ull << 20;
inline constexpr std::size_t kHostObjectTrailerBytes = 64;
inline constexpr std::size_t kHostObjectKeyChars = 16;  // the key digest's prefix, as in the file name

// The object's bytes with its trailer appended. `key` is kHostObjectKeyChars characters. Pure.
std::string seal_host_object(std::string_view object, std::string_view key);

struct HostObjectCheck {
  std::string problem;  // "" when the file holds a sealed object
  std::string key;      // the key its trailer records
  std::size_t object_bytes = 0;
};
// Checks a sealed file's trailer and checksum; `expected_key` empty accepts any key. Pure.
HostObjectCheck check_host_object(std::string_view bytes, std::string_view expected_key);

// The key a cached object's file name carries ("k.b64.host.0123456789abcdef.so" -> the last
// part); "" when the name is not an object's. Pure.
std::string host_object_key_of_name(std::string_view file_name);

struct HostObjectRead {
  ReadBackFile file;    // its fstat in info (the loader checks the name is still this file)
  std::string problem;  // names the path and the rule
  bool missing = false;
};
// Reads and checks the object at `path` for `expected_key` ("" takes the name's key).
HostObjectRead read_host_object(const std::filesystem::path& path, std::string_view expected_key);

struct HostObjectVerdict {
  std::filesystem::path path;
  std::string problem;  // "" when sound
};
// Every object file in `dir` (a missing folder has none), checked as a load would check it.
std::vector<HostObjectVerdict> verify_host_objects(const std::filesystem::path& dir);
// Removes every object file in `dir` and the work folders of compiles that died over an hour
// ago; other files stay. Returns the number of objects removed.
std::size_t clear_host_objects(const std::filesystem::path& dir);

}  // namespace metrale::host
