// jit/nvrtc_pch_folder.hpp (private): the folder this process's NVRTC writes its precompiled
// headers into (--pch-dir), instead of NVRTC's default $TMPDIR/__nvrtc_auto_pch_<pid>_<n>, a
// predictable name another user could plant first.
// Why a private folder matters: NVRTC maps a PCH file into its heap; one damaged in place
// crashes the compiling process (measured with NVRTC 13.0: truncated -> SIGBUS, overwritten in the
// middle -> SIGSEGV; only a damaged header is refused, warning 626) and a planted one would
// choose the code. So the folder is one no one but this user (or root) can write.
// Invariants: the folder is <cache root>/pch/<pid>-XXXXXX when the disk cache's root is trusted
// (cache_trust.hpp; the pch/ folder checked like verdicts/), else $TMPDIR/metrale-pch-<pid>-XXXXXX;
// made by mkdtemp (mode 0700, a fresh name); one per process (a forked child makes its own, as
// NVRTC's file names would collide; one removed meanwhile, e.g. with a test's cache root, is made
// again); removed when the process exits normally; folders of dead
// processes under <cache root>/pch are swept when a process makes its own. None can be made:
// nullopt, and the reason is logged once (PCH is then off; compiles go on).
#pragma once

#include <filesystem>
#include <optional>
#include <string_view>

#include "metrale/environment.hpp"

namespace metrale {

// The process's folder, made on first call (the cache root chosen from `env`: METRALE_CACHE_DIR,
// XDG_CACHE_HOME, HOME). Thread-safe.
std::optional<std::filesystem::path> pch_folder(const EnvLookup& env);

// Whether a name under <cache root>/pch is a folder of process `pid` ("<pid>-XXXXXX"). Pure.
bool is_pch_folder_of(std::string_view name, long pid);
// The pid a folder name under <cache root>/pch carries, or nullopt for another name. Pure.
std::optional<long> pch_folder_pid(std::string_view name);

}  // namespace metrale
