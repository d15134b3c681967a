// tests/data/corpus/corpus_cases.hpp: the corpus of kernels written as people write them for nvcc
// (tests/data/corpus/*.cu, none in this project's dialect), as a table of cases: each names its
// kernels (source file and name expression), its sizes, and a run that launches them and compares
// the result with a C++ reference written here. The host test (tests/unit/corpus_host_test.cpp),
// the NVRTC test and the bench (metrale-host-bench --corpus) all read this table.
//
// Adding a case: write the kernel in tests/data/corpus/<family>.cu (a new family is a new file);
// add a CorpusCase to corpus_cases() below: its name (the test section and the bench row), its
// kernels as {registry name, file, expression}, `atomics` when it exercises atomics (it then also
// runs under ThreadSanitizer), the unit test's and the bench's element counts, what an element is,
// and a run(CaseRun&, elements, seed) that uploads inputs, launches through run.launch(name)
// inside run.timed(...), and returns "" or what differs from its reference. Another table (a
// second test file's) uses the same types and CorpusRegistry.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "jit/compiled_entry.hpp"
#include "metrale/gpu/gpu_backend.hpp"
#include "metrale/gpu/kernel_launch.hpp"
#include "metrale/jit/kernel_registry.hpp"

namespace corpus {

using Sources = std::map<std::string, std::string, std::less<>>;

// One kernel instantiation of the corpus.
struct CorpusKernel {
  std::string name;        // the registry's kernel name: "corpus_reduce0"
  std::string source;      // "reduction.cu"
  std::string expression;  // "reduce0", "reduce5<int, 256>"
};

// What a case's run works with: the backend, its kernels' handles by name, and the time its
// launches took (run.timed), which the bench divides the elements by.
class CaseRun {
 public:
  CaseRun(metrale::GpuBackend& gpu, std::function<metrale::KernelHandle(std::string_view)> handle)
      : gpu_(gpu), handle_(std::move(handle)) {}

  [[nodiscard]] metrale::GpuBackend& gpu() const { return gpu_; }
  [[nodiscard]] metrale::KernelLaunch launch(std::string_view kernel) const {
    return metrale::KernelLaunch(gpu_, handle_(kernel));
  }
  // Runs `launches` and waits for them (a device's launches are asynchronous), adding the time.
  template <typename Launches>
  void timed(Launches&& launches) {
    const auto start = std::chrono::steady_clock::now();
    launches();
    gpu_.synchronize(0);
    seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  [[nodiscard]] double seconds() const { return seconds_; }

  template <typename T>
  metrale::DevicePtr upload(const std::vector<T>& values) {
    const metrale::DevicePtr ptr = gpu_.alloc(std::max<std::size_t>(1, values.size()) * sizeof(T));
    gpu_.copy_to_device(ptr, values.data(), values.size() * sizeof(T));
    owned_.push_back(ptr);
    return ptr;
  }
  template <typename T>
  std::vector<T> download(metrale::DevicePtr ptr, std::size_t count) {
    std::vector<T> values(count);
    gpu_.copy_to_host(values.data(), ptr, count * sizeof(T));
    return values;
  }
  CaseRun(const CaseRun&) = delete;
  CaseRun& operator=(const CaseRun&) = delete;
  ~CaseRun() {
    for (const metrale::DevicePtr ptr : owned_) {
      gpu_.free(ptr);
    }
  }

 private:
  metrale::GpuBackend& gpu_;
  std::function<metrale::KernelHandle(std::string_view)> handle_;
  std::vector<metrale::DevicePtr> owned_;
  double seconds_ = 0.0;
};

struct CaseResult {
  std::size_t elements = 0;  // what the run processed (the requested count, rounded as the kernel needs)
  std::string mismatch;      // "" when the kernel matched its reference
};

struct CorpusCase {
  std::string name;  // "reduce0", "reduce5_int_256": a test name, so no ',' '[' ']'
  std::vector<CorpusKernel> kernels;
  bool atomics = false;  // exercises atomics: also a [concurrency] case, run under ThreadSanitizer
  std::size_t test_elements = 0;
  std::size_t bench_elements = 0;
  std::string element;  // what one element is, for the bench's table
  CaseResult (*run)(CaseRun& run, std::size_t elements, std::uint32_t seed) = nullptr;
};

// ---- helpers for references ----
template <typename T>
std::vector<T> random_ints(std::size_t count, std::uint32_t seed, T low, T high) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<long long> dist(low, high);
  std::vector<T> values(count);
  for (T& v : values) {
    v = static_cast<T>(dist(rng));
  }
  return values;
}

inline std::vector<float> random_floats(std::size_t count, std::uint32_t seed, float low = -1.0F, float high = 1.0F) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(low, high);
  std::vector<float> values(count);
  for (float& v : values) {
    v = dist(rng);
  }
  return values;
}

// "" when equal, else the first index that differs, with both values.
template <typename T>
std::string first_difference(const std::vector<T>& got, const std::vector<T>& want, std::string_view what) {
  if (got.size() != want.size()) {
    return std::string(what) + ": " + std::to_string(got.size()) + " values, expected " + std::to_string(want.size());
  }
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (!(got[i] == want[i])) {
      std::ostringstream out;
      out << what << "[" << i << "] = " << +got[i] << ", expected " << +want[i];
      return out.str();
    }
  }
  return {};
}

// "" when every |got - want| <= tolerance * scale[i] (scale: the sum of magnitudes behind want[i]).
inline std::string first_far(const std::vector<float>& got, const std::vector<double>& want,
                             const std::vector<double>& scale, double tolerance, std::string_view what) {
  for (std::size_t i = 0; i < want.size(); ++i) {
    if (!(std::abs(static_cast<double>(got[i]) - want[i]) <= tolerance * std::max(scale[i], 1e-30))) {
      std::ostringstream out;
      out.precision(9);
      out << what << "[" << i << "] = " << got[i] << ", expected " << want[i] << " (tolerance " << tolerance * scale[i]
          << ")";
      return out.str();
    }
  }
  return {};
}

inline std::uint32_t blocks_for(std::size_t n, std::uint32_t per_block) {
  return static_cast<std::uint32_t>((n + per_block - 1) / per_block);
}

// ---- reduction.cu ----
// The per-block sums a kernel that reduces `per_block` consecutive elements per block writes.
inline std::vector<int> block_sums(const std::vector<int>& x, std::uint32_t per_block) {
  std::vector<int> sums(blocks_for(x.size(), per_block), 0);
  for (std::size_t i = 0; i < x.size(); ++i) {
    sums[i / per_block] += x[i];
  }
  return sums;
}

// reduce0..reduce5: one block of `threads` reduces `threads * per_thread` consecutive elements.
template <std::uint32_t kThreads, std::uint32_t kPerThread>
CaseResult run_block_reduction(CaseRun& run, std::string_view kernel, std::size_t n, std::uint32_t seed) {
  const std::vector<int> x = random_ints<int>(n, seed, -1000, 1000);
  const std::uint32_t blocks = blocks_for(n, kThreads * kPerThread);
  const metrale::DevicePtr in = run.upload(x);
  const metrale::DevicePtr out = run.upload(std::vector<int>(blocks, 0x5a5a5a5a));
  run.timed([&] {
    run.launch(kernel)
        .grid({blocks, 1, 1})
        .block({kThreads, 1, 1})
        .dynamic_shared(kThreads * sizeof(int))
        .arg_ptr(in)
        .arg_ptr(out)
        .arg_u32(static_cast<std::uint32_t>(n))
        .launch();
  });
  return {n, first_difference(run.download<int>(out, blocks), block_sums(x, kThreads * kPerThread), "block sum")};
}

// reduce6<float, 128>: a grid of 64 blocks strides over any n; block b sums the chunks of 256
// consecutive elements whose index is b modulo 64.
inline CaseResult run_grid_stride_reduction(CaseRun& run, std::size_t n, std::uint32_t seed) {
  constexpr std::uint32_t kThreads = 128;
  constexpr std::uint32_t kBlocks = 64;
  const std::vector<float> x = random_floats(n, seed);
  const metrale::DevicePtr in = run.upload(x);
  const metrale::DevicePtr out = run.upload(std::vector<float>(kBlocks, std::numeric_limits<float>::quiet_NaN()));
  run.timed([&] {
    run.launch("corpus_reduce6_float_128")
        .grid({kBlocks, 1, 1})
        .block({kThreads, 1, 1})
        .dynamic_shared(kThreads * sizeof(float))
        .arg_ptr(in)
        .arg_ptr(out)
        .arg_u32(static_cast<std::uint32_t>(n))
        .launch();
  });
  std::vector<double> want(kBlocks, 0.0);
  std::vector<double> scale(kBlocks, 0.0);
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t block = i / (2 * kThreads) % kBlocks;
    want[block] += x[i];
    scale[block] += std::abs(x[i]);
  }
  return {n, first_far(run.download<float>(out, kBlocks), want, scale, 1e-5, "block sum")};
}

// ---- scan.cu ----
inline std::vector<int> segment_scan(const std::vector<int>& x, std::size_t segment, bool inclusive) {
  std::vector<int> out(x.size());
  for (std::size_t begin = 0; begin < x.size(); begin += segment) {
    int sum = 0;
    for (std::size_t i = begin; i < std::min(x.size(), begin + segment); ++i) {
      if (inclusive) {
        sum += x[i];
        out[i] = sum;
      } else {
        out[i] = sum;
        sum += x[i];
      }
    }
  }
  return out;
}

// scan_naive (blocks of 256 elements) and scan_blelloch (blocks of 128 threads, 256 elements).
inline CaseResult run_block_scan(CaseRun& run, std::string_view kernel, std::size_t n, std::uint32_t seed) {
  const bool blelloch = kernel == "corpus_scan_blelloch";
  constexpr std::uint32_t kPerBlock = 256;
  const std::uint32_t threads = blelloch ? kPerBlock / 2 : kPerBlock;
  const std::uint32_t blocks = blocks_for(n, kPerBlock);
  n = std::size_t{blocks} * kPerBlock;
  const std::vector<int> x = random_ints<int>(n, seed, -100, 100);
  const metrale::DevicePtr in = run.upload(x);
  const metrale::DevicePtr out = run.upload(std::vector<int>(n, 0x5a5a5a5a));
  // Blelloch: 256 ints and one pad per 32; naive: two buffers of 256.
  const std::uint32_t shared = blelloch ? (kPerBlock + kPerBlock / 32) * 4 : 2 * kPerBlock * 4;
  run.timed([&] {
    run.launch(kernel)
        .grid({blocks, 1, 1})
        .block({threads, 1, 1})
        .dynamic_shared(shared)
        .arg_ptr(out)
        .arg_ptr(in)
        .launch();
  });
  return {n, first_difference(run.download<int>(out, n), segment_scan(x, kPerBlock, false), "exclusive scan")};
}

// warp_scan at widths 8, 16 and 32 (blocks of 256 threads).
inline CaseResult run_warp_scan(CaseRun& run, std::size_t n, std::uint32_t seed) {
  constexpr std::uint32_t kThreads = 256;
  const std::uint32_t blocks = blocks_for(n, kThreads);
  n = std::size_t{blocks} * kThreads;
  const std::vector<int> x = random_ints<int>(n, seed, -100, 100);
  const metrale::DevicePtr in = run.upload(x);
  const metrale::DevicePtr out = run.upload(std::vector<int>(n, 0));
  for (const int width : {8, 16, 32}) {
    run.timed([&] {
      run.launch("corpus_warp_scan")
          .grid({blocks, 1, 1})
          .block({kThreads, 1, 1})
          .arg_ptr(in)
          .arg_ptr(out)
          .arg_i32(width)
          .launch();
    });
    std::string mismatch =
        first_difference(run.download<int>(out, n), segment_scan(x, static_cast<std::size_t>(width), true),
                         "width " + std::to_string(width) + " inclusive scan");
    if (!mismatch.empty()) {
      return {3 * n, mismatch};
    }
  }
  return {3 * n, {}};
}

// shfl_scan: blocks of 256, each an inclusive scan, and its total.
inline CaseResult run_shfl_scan(CaseRun& run, std::size_t n, std::uint32_t seed) {
  constexpr std::uint32_t kThreads = 256;
  const std::uint32_t blocks = blocks_for(n, kThreads);
  n = std::size_t{blocks} * kThreads;
  const std::vector<int> x = random_ints<int>(n, seed, -100, 100);
  const metrale::DevicePtr in = run.upload(x);
  const metrale::DevicePtr out = run.upload(std::vector<int>(n, 0));
  const metrale::DevicePtr totals = run.upload(std::vector<int>(blocks, 0));
  run.timed([&] {
    run.launch("corpus_shfl_scan")
        .grid({blocks, 1, 1})
        .block({kThreads, 1, 1})
        .dynamic_shared(kThreads / 32 * sizeof(int))
        .arg_ptr(in)
        .arg_ptr(out)
        .arg_ptr(totals)
        .launch();
  });
  const std::vector<int> want = segment_scan(x, kThreads, true);
  std::string mismatch = first_difference(run.download<int>(out, n), want, "inclusive scan");
  if (mismatch.empty()) {
    mismatch = first_difference(run.download<int>(totals, blocks), block_sums(x, kThreads), "block total");
  }
  return {n, mismatch};
}

// ---- transpose.cu ----
// A width x height matrix, about `n` elements, 5:3 wide and not a multiple of the tile.
inline CaseResult run_transpose(CaseRun& run, std::string_view kernel, std::size_t n, std::uint32_t seed) {
  const auto height = static_cast<std::uint32_t>(std::max(1.0, std::sqrt(static_cast<double>(n) * 3.0 / 5.0)));
  const auto width = static_cast<std::uint32_t>(std::max<std::size_t>(1, n / height + 7));
  const std::size_t count = std::size_t{width} * height;
  const std::vector<float> x = random_floats(count, seed);
  const metrale::DevicePtr in = run.upload(x);
  const metrale::DevicePtr out = run.upload(std::vector<float>(count, std::numeric_limits<float>::quiet_NaN()));
  run.timed([&] {
    run.launch(kernel)
        .grid({blocks_for(width, 32), blocks_for(height, 32), 1})
        .block({32, 8, 1})
        .arg_ptr(out)
        .arg_ptr(in)
        .arg_i32(static_cast<std::int32_t>(width))
        .arg_i32(static_cast<std::int32_t>(height))
        .launch();
  });
  std::vector<float> want(count);
  const bool copy = kernel == "corpus_copy_tiled";
  for (std::uint32_t y = 0; y < height; ++y) {
    for (std::uint32_t xi = 0; xi < width; ++xi) {
      const float v = x[std::size_t{y} * width + xi];
      want[copy ? std::size_t{y} * width + xi : std::size_t{xi} * height + y] = v;
    }
  }
  return {count, first_difference(run.download<float>(out, count), want, copy ? "copy" : "transpose")};
}

// ---- histogram.cu ----
inline CaseResult run_histogram(CaseRun& run, std::string_view kernel, std::size_t n, std::uint32_t seed) {
  // Skewed: half the bytes are 0 and the rest mostly small, so threads of blocks running at once
  // hit the same counters (a plain add in place of an atomic then loses updates).
  std::vector<unsigned char> data(n);
  std::mt19937 rng(seed);
  std::geometric_distribution<int> skew(0.5);
  for (unsigned char& d : data) {
    d = static_cast<unsigned char>(std::min(255, skew(rng) * (1 + skew(rng))));
  }
  const metrale::DevicePtr in = run.upload(data);
  const metrale::DevicePtr bins = run.upload(std::vector<std::uint32_t>(256, 0));
  run.timed([&] {
    run.launch(kernel)
        .grid({64, 1, 1})
        .block({256, 1, 1})
        .arg_ptr(in)
        .arg_u32(static_cast<std::uint32_t>(n))
        .arg_ptr(bins)
        .launch();
  });
  std::vector<std::uint32_t> want(256, 0);
  for (const unsigned char d : data) {
    ++want[d];
  }
  return {n, first_difference(run.download<std::uint32_t>(bins, 256), want, "bin")};
}

// ---- bitonic_sort.cu ----
// Each block sorts its 1024 keys: once ascending (dir 1), once descending (dir 0).
inline CaseResult run_bitonic_shared(CaseRun& run, std::size_t n, std::uint32_t seed) {
  constexpr std::uint32_t kThreads = 512;
  constexpr std::uint32_t kPerBlock = 2 * kThreads;
  const std::uint32_t blocks = blocks_for(n, kPerBlock);
  n = std::size_t{blocks} * kPerBlock;
  const std::vector<std::uint32_t> keys = random_ints<std::uint32_t>(n, seed, 0, 1U << 20U);
  for (const std::uint32_t dir : {1U, 0U}) {
    const metrale::DevicePtr d_keys = run.upload(keys);
    run.timed([&] {
      run.launch("corpus_bitonic_sort_shared")
          .grid({blocks, 1, 1})
          .block({kThreads, 1, 1})
          .arg_ptr(d_keys)
          .arg_u32(dir)
          .launch();
    });
    std::vector<std::uint32_t> want = keys;
    for (std::uint32_t b = 0; b < blocks; ++b) {
      const auto first = want.begin() + static_cast<std::ptrdiff_t>(b) * kPerBlock;
      if (dir == 1) {
        std::sort(first, first + kPerBlock);
      } else {
        std::sort(first, first + kPerBlock, std::greater<>());
      }
    }
    std::string mismatch =
        first_difference(run.download<std::uint32_t>(d_keys, n), want, dir == 1 ? "ascending key" : "descending key");
    if (!mismatch.empty()) {
      return {2 * n, mismatch};
    }
  }
  return {2 * n, {}};
}

inline CaseResult run_bitonic_global(CaseRun& run, std::size_t n, std::uint32_t seed) {
  std::size_t size = 1024;
  while (size < n) {
    size *= 2;
  }
  const std::vector<std::uint32_t> keys = random_ints<std::uint32_t>(size, seed, 0, 1U << 30U);
  const metrale::DevicePtr d_keys = run.upload(keys);
  const auto count = static_cast<int>(size);
  run.timed([&] {
    for (int k = 2; k <= count; k <<= 1) {
      for (int j = k >> 1; j > 0; j >>= 1) {
        run.launch("corpus_bitonic_sort_step")
            .grid({static_cast<std::uint32_t>(count / 256), 1, 1})
            .block({256, 1, 1})
            .arg_ptr(d_keys)
            .arg_i32(j)
            .arg_i32(k)
            .launch();
      }
    }
  });
  std::vector<std::uint32_t> want = keys;
  std::sort(want.begin(), want.end());
  return {size, first_difference(run.download<std::uint32_t>(d_keys, size), want, "sorted key")};
}

// ---- warp_vote.cu ----
inline CaseResult run_vote(CaseRun& run, std::string_view kernel, std::size_t n, std::uint32_t seed) {
  constexpr std::uint32_t kThreads = 128;
  const std::uint32_t blocks = blocks_for(n, kThreads);
  n = std::size_t{blocks} * kThreads;
  // Per warp: all zero, all one, or mixed, in turn.
  std::vector<std::uint32_t> input = random_ints<std::uint32_t>(n, seed, 0, 1);
  for (std::size_t w = 0; w < n / 32; ++w) {
    if (w % 3 != 2) {
      std::fill_n(input.begin() + static_cast<std::ptrdiff_t>(w * 32), 32, static_cast<std::uint32_t>(w % 3));
    }
  }
  const metrale::DevicePtr in = run.upload(input);
  const metrale::DevicePtr out = run.upload(std::vector<std::uint32_t>(n, 7));
  run.timed([&] { run.launch(kernel).grid({blocks, 1, 1}).block({kThreads, 1, 1}).arg_ptr(in).arg_ptr(out).launch(); });
  const bool any = kernel == "corpus_vote_any";
  std::vector<std::uint32_t> want(n);
  for (std::size_t w = 0; w < n / 32; ++w) {
    const auto first = input.begin() + static_cast<std::ptrdiff_t>(w * 32);
    const bool v = any ? std::any_of(first, first + 32, [](std::uint32_t x) { return x != 0; })
                       : std::all_of(first, first + 32, [](std::uint32_t x) { return x != 0; });
    std::fill_n(want.begin() + static_cast<std::ptrdiff_t>(w * 32), 32, v ? 1U : 0U);
  }
  return {n, first_difference(run.download<std::uint32_t>(out, n), want, any ? "__any_sync" : "__all_sync")};
}

inline CaseResult run_ballot(CaseRun& run, std::size_t n, std::uint32_t seed) {
  constexpr std::uint32_t kThreads = 128;
  const std::uint32_t blocks = blocks_for(n, kThreads);
  n = std::size_t{blocks} * kThreads;
  const std::vector<int> values = random_ints<int>(n, seed, -50, 50);
  const std::size_t warps = n / 32;
  const metrale::DevicePtr in = run.upload(values);
  const metrale::DevicePtr ballots = run.upload(std::vector<std::uint32_t>(warps, 0));
  const metrale::DevicePtr counts = run.upload(std::vector<int>(warps, -1));
  run.timed([&] {
    run.launch("corpus_ballot_popc")
        .grid({blocks, 1, 1})
        .block({kThreads, 1, 1})
        .arg_ptr(in)
        .arg_ptr(ballots)
        .arg_ptr(counts)
        .launch();
  });
  std::vector<std::uint32_t> want_ballots(warps, 0);
  std::vector<int> want_counts(warps, 0);
  for (std::size_t i = 0; i < n; ++i) {
    if (values[i] % 2 == 0) {
      want_ballots[i / 32] |= 1U << (i % 32);
      ++want_counts[i / 32];
    }
  }
  std::string mismatch = first_difference(run.download<std::uint32_t>(ballots, warps), want_ballots, "ballot");
  if (mismatch.empty()) {
    mismatch = first_difference(run.download<int>(counts, warps), want_counts, "even count");
  }
  return {n, mismatch};
}

// Blocks of 48 threads: a whole warp and a half one.
inline CaseResult run_active_lanes(CaseRun& run, std::size_t n, std::uint32_t /*seed*/) {
  constexpr std::uint32_t kThreads = 48;
  const std::uint32_t blocks = blocks_for(n, kThreads);
  n = std::size_t{blocks} * kThreads;
  const metrale::DevicePtr out = run.upload(std::vector<int>(n, -1));
  run.timed([&] {
    run.launch("corpus_active_lanes").grid({blocks, 1, 1}).block({kThreads, 1, 1}).arg_ptr(out).launch();
  });
  std::vector<int> want(n);
  for (std::size_t i = 0; i < n; ++i) {
    want[i] = i % kThreads < 32 ? 32 : 16;
  }
  return {n, first_difference(run.download<int>(out, n), want, "active lanes")};
}

inline CaseResult run_match(CaseRun& run, std::size_t n, std::uint32_t seed) {
  constexpr std::uint32_t kThreads = 128;
  const std::uint32_t blocks = blocks_for(n, kThreads);
  n = std::size_t{blocks} * kThreads;
  std::vector<int> keys = random_ints<int>(n, seed, 0, 3);
  for (std::size_t w = 0; w < n / 32; w += 4) {  // every fourth warp: one key for all
    std::fill_n(keys.begin() + static_cast<std::ptrdiff_t>(w * 32), 32, 9);
  }
  const metrale::DevicePtr in = run.upload(keys);
  const metrale::DevicePtr same = run.upload(std::vector<int>(n, -1));
  const metrale::DevicePtr all = run.upload(std::vector<int>(n, -1));
  run.timed([&] {
    run.launch("corpus_match_keys")
        .grid({blocks, 1, 1})
        .block({kThreads, 1, 1})
        .arg_ptr(in)
        .arg_ptr(same)
        .arg_ptr(all)
        .launch();
  });
  std::vector<int> want_same(n);
  std::vector<int> want_all(n);
  for (std::size_t i = 0; i < n; ++i) {
    const auto first = keys.begin() + static_cast<std::ptrdiff_t>(i / 32 * 32);
    want_same[i] = static_cast<int>(std::count(first, first + 32, keys[i]));
    want_all[i] = want_same[i] == 32 ? 1 : 0;
  }
  std::string mismatch = first_difference(run.download<int>(same, n), want_same, "__match_any_sync peers");
  if (mismatch.empty()) {
    mismatch = first_difference(run.download<int>(all, n), want_all, "__match_all_sync");
  }
  return {n, mismatch};
}

inline CaseResult run_warp_sums(CaseRun& run, std::size_t n, std::uint32_t seed) {
  constexpr std::uint32_t kThreads = 128;
  const std::uint32_t blocks = blocks_for(n, kThreads);
  n = std::size_t{blocks} * kThreads;
  const std::size_t warps = n / 32;
  const std::vector<int> values = random_ints<int>(n, seed, -100000, 100000);
  const metrale::DevicePtr in = run.upload(values);
  const metrale::DevicePtr sums = run.upload(std::vector<int>(warps, 0));
  const metrale::DevicePtr mins = run.upload(std::vector<int>(warps, 0));
  const metrale::DevicePtr maxs = run.upload(std::vector<std::uint32_t>(warps, 0));
  run.timed([&] {
    run.launch("corpus_warp_sums")
        .grid({blocks, 1, 1})
        .block({kThreads, 1, 1})
        .arg_ptr(in)
        .arg_ptr(sums)
        .arg_ptr(mins)
        .arg_ptr(maxs)
        .launch();
  });
  std::vector<int> want_sums(warps, 0);
  std::vector<int> want_mins(warps, std::numeric_limits<int>::max());
  std::vector<std::uint32_t> want_maxs(warps, 0);
  for (std::size_t i = 0; i < n; ++i) {
    want_sums[i / 32] += values[i];
    want_mins[i / 32] = std::min(want_mins[i / 32], values[i]);
    want_maxs[i / 32] = std::max(want_maxs[i / 32], static_cast<std::uint32_t>(values[i]));
  }
  std::string mismatch = first_difference(run.download<int>(sums, warps), want_sums, "__reduce_add_sync");
  if (mismatch.empty()) {
    mismatch = first_difference(run.download<int>(mins, warps), want_mins, "__reduce_min_sync");
  }
  if (mismatch.empty()) {
    mismatch = first_difference(run.download<std::uint32_t>(maxs, warps), want_maxs, "__reduce_max_sync (unsigned)");
  }
  return {n, mismatch};
}

inline CaseResult run_block_votes(CaseRun& run, std::size_t n, std::uint32_t seed) {
  constexpr std::uint32_t kThreads = 192;
  const std::uint32_t blocks = blocks_for(n, kThreads);
  n = std::size_t{blocks} * kThreads;
  std::vector<float> x = random_floats(n, seed);
  // Block 0: every value above the threshold; block 1: none.
  std::fill_n(x.begin(), std::min<std::size_t>(kThreads, n), 0.75F);
  if (blocks > 1) {
    std::fill_n(x.begin() + kThreads, kThreads, -0.75F);
  }
  const float threshold = 0.5F;
  const metrale::DevicePtr in = run.upload(x);
  const metrale::DevicePtr counts = run.upload(std::vector<int>(blocks, -1));
  const metrale::DevicePtr alls = run.upload(std::vector<int>(blocks, -1));
  const metrale::DevicePtr anys = run.upload(std::vector<int>(blocks, -1));
  run.timed([&] {
    run.launch("corpus_block_votes")
        .grid({blocks, 1, 1})
        .block({kThreads, 1, 1})
        .arg_ptr(in)
        .arg_f32(threshold)
        .arg_ptr(counts)
        .arg_ptr(alls)
        .arg_ptr(anys)
        .launch();
  });
  std::vector<int> want_counts(blocks, 0);
  for (std::size_t i = 0; i < n; ++i) {
    want_counts[i / kThreads] += x[i] > threshold ? 1 : 0;
  }
  std::vector<int> want_alls(blocks);
  std::vector<int> want_anys(blocks);
  for (std::uint32_t b = 0; b < blocks; ++b) {
    want_alls[b] = want_counts[b] == static_cast<int>(kThreads) ? 1 : 0;
    want_anys[b] = want_counts[b] != 0 ? 1 : 0;
  }
  std::string mismatch = first_difference(run.download<int>(counts, blocks), want_counts, "__syncthreads_count");
  if (mismatch.empty()) {
    mismatch = first_difference(run.download<int>(alls, blocks), want_alls, "__syncthreads_and");
  }
  if (mismatch.empty()) {
    mismatch = first_difference(run.download<int>(anys, blocks), want_anys, "__syncthreads_or");
  }
  return {n, mismatch};
}

// ---- matrix_mul.cu ----
// C (m x p) = A (m x k) B (k x p) with m:k:p = 10:7:9 and m k p about `n` multiply-adds.
template <std::uint32_t kBlock>
CaseResult run_matrix_mul(CaseRun& run, std::string_view kernel, std::size_t n, std::uint32_t seed) {
  const double unit = std::cbrt(static_cast<double>(n) / 630.0);
  const auto m = static_cast<std::uint32_t>(std::max(1.0, 10 * unit));
  const auto k = static_cast<std::uint32_t>(std::max(1.0, 7 * unit));
  const auto p = static_cast<std::uint32_t>(std::max(1.0, 9 * unit));
  const std::vector<float> a = random_floats(std::size_t{m} * k, seed);
  const std::vector<float> b = random_floats(std::size_t{k} * p, seed + 1);
  const metrale::DevicePtr da = run.upload(a);
  const metrale::DevicePtr db = run.upload(b);
  const metrale::DevicePtr dc =
      run.upload(std::vector<float>(std::size_t{m} * p, std::numeric_limits<float>::quiet_NaN()));
  run.timed([&] {
    run.launch(kernel)
        .grid({blocks_for(p, kBlock), blocks_for(m, kBlock), 1})
        .block({kBlock, kBlock, 1})
        .arg_ptr(dc)
        .arg_ptr(da)
        .arg_ptr(db)
        .arg_i32(static_cast<std::int32_t>(m))
        .arg_i32(static_cast<std::int32_t>(k))
        .arg_i32(static_cast<std::int32_t>(p))
        .launch();
  });
  std::vector<double> want(std::size_t{m} * p, 0.0);
  std::vector<double> scale(want.size(), 0.0);
  for (std::uint32_t r = 0; r < m; ++r) {
    for (std::uint32_t c = 0; c < p; ++c) {
      for (std::uint32_t i = 0; i < k; ++i) {
        const double term = static_cast<double>(a[std::size_t{r} * k + i]) * b[std::size_t{i} * p + c];
        want[std::size_t{r} * p + c] += term;
        scale[std::size_t{r} * p + c] += std::abs(term);
      }
    }
  }
  return {std::size_t{m} * k * p, first_far(run.download<float>(dc, want.size()), want, scale, 1e-5, "C")};
}

// ---- two_views.cu ----
inline CaseResult run_two_views(CaseRun& run, std::size_t n, std::uint32_t seed) {
  constexpr std::uint32_t kThreads = 128;
  const std::uint32_t blocks = blocks_for(n, 4 * kThreads);
  n = std::size_t{blocks} * 4 * kThreads;
  const std::vector<float> x = random_floats(n, seed);
  const metrale::DevicePtr in = run.upload(x);
  const metrale::DevicePtr sums = run.upload(std::vector<float>(blocks, std::numeric_limits<float>::quiet_NaN()));
  const metrale::DevicePtr positives = run.upload(std::vector<int>(blocks, -1));
  run.timed([&] {
    run.launch("corpus_two_views")
        .grid({blocks, 1, 1})
        .block({kThreads, 1, 1})
        .dynamic_shared(4 * kThreads * sizeof(float) + kThreads * sizeof(int))
        .arg_ptr(in)
        .arg_ptr(sums)
        .arg_ptr(positives)
        .launch();
  });
  std::vector<double> want(blocks, 0.0);
  std::vector<double> scale(blocks, 0.0);
  std::vector<int> want_positives(blocks, 0);
  for (std::size_t i = 0; i < n; ++i) {
    want[i / (4 * kThreads)] += x[i];
    scale[i / (4 * kThreads)] += std::abs(x[i]);
    want_positives[i / (4 * kThreads)] += x[i] > 0.0F ? 1 : 0;
  }
  std::string mismatch = first_far(run.download<float>(sums, blocks), want, scale, 1e-5, "block sum");
  if (mismatch.empty()) {
    mismatch = first_difference(run.download<int>(positives, blocks), want_positives, "positives");
  }
  return {n, mismatch};
}

// ---- atomics.cu ----
// `count` applications of atomicInc(limit) (dec: atomicDec) to `start`, as CUDA defines them.
inline std::uint32_t apply_inc(std::uint32_t start, std::uint32_t limit, std::size_t count, bool dec) {
  std::uint32_t v = start;
  for (std::size_t i = 0; i < count; ++i) {
    v = dec ? (v == 0 || v > limit ? limit : v - 1) : (v >= limit ? 0 : v + 1);
  }
  return v;
}

inline CaseResult run_atomics_global(CaseRun& run, std::size_t n, std::uint32_t /*seed*/) {
  constexpr std::uint32_t kThreads = 128;
  const std::uint32_t blocks = blocks_for(n, kThreads);
  n = std::size_t{blocks} * kThreads;
  const auto threads = static_cast<std::uint32_t>(n);
  std::vector<int> gi(12, 0);
  gi[2] = std::numeric_limits<int>::min();
  gi[3] = std::numeric_limits<int>::max();
  gi[4] = -1;
  gi[5] = -1;
  gi[11] = std::numeric_limits<int>::min();
  std::vector<std::uint32_t> gu(11, 0);
  gu[4] = 0xffffffffU;
  gu[9] = 0xffffffffU;
  std::vector<unsigned long long> gull(8, 0);
  gull[2] = ~0ULL;
  gull[5] = ~0ULL;
  std::vector<float> gf(3, 0.0F);
  std::vector<double> gd(1, 0.0);
  const metrale::DevicePtr d_gi = run.upload(gi);
  const metrale::DevicePtr d_gu = run.upload(gu);
  const metrale::DevicePtr d_gull = run.upload(gull);
  const metrale::DevicePtr d_gf = run.upload(gf);
  const metrale::DevicePtr d_gd = run.upload(gd);
  const metrale::DevicePtr d_tickets = run.upload(std::vector<std::uint32_t>(n, 0xffffffffU));
  run.timed([&] {
    run.launch("corpus_atomics_global")
        .grid({blocks, 1, 1})
        .block({kThreads, 1, 1})
        .arg_ptr(d_gi)
        .arg_ptr(d_gu)
        .arg_ptr(d_gull)
        .arg_ptr(d_gf)
        .arg_ptr(d_gd)
        .arg_ptr(d_tickets)
        .launch();
  });
  const std::vector<int> got_i = run.download<int>(d_gi, gi.size());
  const std::vector<std::uint32_t> got_u = run.download<std::uint32_t>(d_gu, gu.size());
  const std::vector<unsigned long long> got_ull = run.download<unsigned long long>(d_gull, gull.size());
  const std::vector<float> got_f = run.download<float>(d_gf, gf.size());
  const std::vector<double> got_d = run.download<double>(d_gd, gd.size());
  const std::vector<std::uint32_t> tickets = run.download<std::uint32_t>(d_tickets, n);
  // The order-independent results, computed as one thread would apply them.
  std::vector<int> want_i = gi;
  std::vector<std::uint32_t> want_u = gu;
  std::vector<unsigned long long> want_ull = gull;
  for (std::uint32_t tid = 0; tid < threads; ++tid) {
    want_i[0] += 10;
    want_i[2] = std::max(want_i[2], static_cast<int>(tid));
    want_i[3] = std::min(want_i[3], static_cast<int>(tid));
    want_i[5] &= static_cast<int>(2 * tid + 7);
    want_i[6] |= static_cast<int>(1U << (tid % 32));
    want_i[7] ^= static_cast<int>(tid);
    want_i[8] -= 10;
    want_i[9] += 1;
    want_i[10] += 1;
    want_i[11] = std::max(want_i[11], -static_cast<int>(tid));
    want_u[2] += 3;
    want_u[3] = std::max(want_u[3], tid);
    want_u[4] = std::min(want_u[4], tid);
    want_u[5] -= 1;
    want_u[6] |= 1U << (tid % 32);
    want_u[7] ^= tid;
    want_u[9] &= ~(1U << (tid % 32));
    want_ull[0] += static_cast<unsigned long long>(tid) << 20U;
    want_ull[1] = std::max(want_ull[1], static_cast<unsigned long long>(tid) << 33U);
    want_ull[2] = std::min(want_ull[2], static_cast<unsigned long long>(tid) << 33U);
    want_ull[3] |= 1ULL << (tid % 64);
    want_ull[4] ^= tid;
    want_ull[5] &= ~(1ULL << (tid % 64));
  }
  want_u[0] = apply_inc(0, 17, n, false);
  want_u[1] = apply_inc(0, 137, n, true);
  want_u[10] = threads;
  // Order-dependent ones: any thread's value (exch), the chain's reach (cas), the first (cas).
  want_i[1] = got_i[1] >= 0 && got_i[1] < static_cast<int>(threads) ? got_i[1] : -2;
  want_i[4] = got_i[4] >= -1 && got_i[4] < static_cast<int>(threads) ? got_i[4] : -2;
  want_u[8] = got_u[8] < threads ? got_u[8] : ~got_u[8];
  want_ull[6] = got_ull[6] < threads ? got_ull[6] : ~got_ull[6];
  want_ull[7] = got_ull[7] >= 1 && got_ull[7] <= threads ? got_ull[7] : ~got_ull[7];
  std::string mismatch = first_difference(got_i, want_i, "int atomic result");
  if (mismatch.empty()) {
    mismatch = first_difference(got_u, want_u, "unsigned atomic result");
  }
  if (mismatch.empty()) {
    mismatch = first_difference(got_ull, want_ull, "unsigned long long atomic result");
  }
  const float exch = got_f[1];
  const bool exch_ok = exch >= 0.0F && exch < static_cast<float>(threads) && exch == std::floor(exch);
  const std::vector<float> want_f{static_cast<float>(threads), exch_ok ? exch : -1.0F,
                                  0.25F * static_cast<float>(threads)};
  if (mismatch.empty()) {
    mismatch = first_difference(got_f, want_f, "float atomic result");
  }
  if (mismatch.empty()) {
    mismatch = first_difference(got_d, std::vector<double>{0.5 * threads}, "double atomicAdd");
  }
  if (mismatch.empty()) {
    std::vector<std::uint32_t> sorted = tickets;
    std::sort(sorted.begin(), sorted.end());
    std::vector<std::uint32_t> identity(n);
    std::iota(identity.begin(), identity.end(), 0U);
    mismatch = first_difference(sorted, identity, "threads holding the sorted tickets (atomicAdd's old values)");
  }
  return {n, mismatch};
}

inline CaseResult run_atomics_shared(CaseRun& run, std::size_t n, std::uint32_t /*seed*/) {
  constexpr std::uint32_t kThreads = 256;
  const std::uint32_t blocks = blocks_for(n, kThreads);
  n = std::size_t{blocks} * kThreads;
  const metrale::DevicePtr out = run.upload(std::vector<unsigned long long>(std::size_t{blocks} * 16, 0xdeadULL));
  run.timed([&] {
    run.launch("corpus_atomics_shared").grid({blocks, 1, 1}).block({kThreads, 1, 1}).arg_ptr(out).launch();
  });
  const std::vector<unsigned long long> got = run.download<unsigned long long>(out, std::size_t{blocks} * 16);
  std::vector<unsigned long long> want(16, 0);
  int and_bits = -1;
  int xor_bits = 0;
  std::uint32_t or_bits = 0;
  for (std::uint32_t t = 0; t < kThreads; ++t) {
    and_bits &= ~(1 << (t % 31));
    xor_bits ^= static_cast<int>(t);
    or_bits |= 1U << (t % 32);
  }
  const auto as_ull = [](int v) { return static_cast<unsigned long long>(static_cast<long long>(v)); };
  want[0] = as_ull(2 * static_cast<int>(kThreads));
  want[1] = as_ull(-static_cast<int>(kThreads));
  want[2] = kThreads - 1;
  want[3] = 0;
  want[4] = as_ull(and_bits);
  want[5] = as_ull(xor_bits);
  want[6] = apply_inc(0, 9, kThreads, false);
  want[7] = apply_inc(0, 5, kThreads, true);
  want[8] = or_bits;
  want[11] = static_cast<unsigned long long>(kThreads) << 40U;
  want[12] = 3ULL * (kThreads - 1);
  want[13] = kThreads;
  want[14] = kThreads;
  for (std::uint32_t b = 0; b < blocks; ++b) {
    std::vector<unsigned long long> block(got.begin() + static_cast<std::ptrdiff_t>(b) * 16,
                                          got.begin() + static_cast<std::ptrdiff_t>(b + 1) * 16);
    std::vector<unsigned long long> expected = want;
    expected[9] = block[9] < kThreads ? block[9] : ~block[9];       // atomicExch: some thread's index
    expected[10] = block[10] <= kThreads ? block[10] : ~block[10];  // the CAS chain's reach
    std::string mismatch = first_difference(block, expected, "block " + std::to_string(b) + " shared atomic result");
    if (!mismatch.empty()) {
      return {n, mismatch};
    }
  }
  return {n, {}};
}

// The runs of the cases for constructs the host backend once lacked (they use the helpers above).
#include "corpus_cases_constructs.hpp"

// ---- the table ----
inline const std::vector<CorpusCase>& corpus_cases() {
  static const std::vector<CorpusCase> cases = [] {
    std::vector<CorpusCase> table;
    const auto one = [](std::string name, std::string source, std::string expression) {
      return std::vector<CorpusKernel>{{"corpus_" + std::move(name), std::move(source), std::move(expression)}};
    };
    // reduction.cu
    table.push_back({"reduce0", one("reduce0", "reduction.cu", "reduce0"), false, 100000, 1U << 22U, "int",
                     [](CaseRun& r, std::size_t n, std::uint32_t s) {
                       return run_block_reduction<256, 1>(r, "corpus_reduce0", n, s);
                     }});
    table.push_back({"reduce1", one("reduce1", "reduction.cu", "reduce1"), false, 100000, 1U << 22U, "int",
                     [](CaseRun& r, std::size_t n, std::uint32_t s) {
                       return run_block_reduction<256, 1>(r, "corpus_reduce1", n, s);
                     }});
    table.push_back({"reduce2", one("reduce2", "reduction.cu", "reduce2"), false, 100000, 1U << 22U, "int",
                     [](CaseRun& r, std::size_t n, std::uint32_t s) {
                       return run_block_reduction<256, 1>(r, "corpus_reduce2", n, s);
                     }});
    table.push_back({"reduce3", one("reduce3", "reduction.cu", "reduce3"), false, 100000, 1U << 22U, "int",
                     [](CaseRun& r, std::size_t n, std::uint32_t s) {
                       return run_block_reduction<256, 2>(r, "corpus_reduce3", n, s);
                     }});
    table.push_back({"reduce4", one("reduce4", "reduction.cu", "reduce4"), false, 100000, 1U << 22U, "int",
                     [](CaseRun& r, std::size_t n, std::uint32_t s) {
                       return run_block_reduction<256, 2>(r, "corpus_reduce4", n, s);
                     }});
    table.push_back({"reduce5_int_256", one("reduce5_int_256", "reduction.cu", "reduce5<int, 256>"), false, 100000,
                     1U << 22U, "int", [](CaseRun& r, std::size_t n, std::uint32_t s) {
                       return run_block_reduction<256, 2>(r, "corpus_reduce5_int_256", n, s);
                     }});
    table.push_back({"reduce6_float_128", one("reduce6_float_128", "reduction.cu", "reduce6<float, 128>"), false,
                     100000, 1U << 22U, "float", run_grid_stride_reduction});
    // scan.cu
    table.push_back(
        {"scan_naive", one("scan_naive", "scan.cu", "scan_naive"), false, 50000, 1U << 20U, "int",
         [](CaseRun& r, std::size_t n, std::uint32_t s) { return run_block_scan(r, "corpus_scan_naive", n, s); }});
    table.push_back(
        {"scan_blelloch", one("scan_blelloch", "scan.cu", "scan_blelloch"), false, 50000, 1U << 20U, "int",
         [](CaseRun& r, std::size_t n, std::uint32_t s) { return run_block_scan(r, "corpus_scan_blelloch", n, s); }});
    table.push_back({"warp_scan", one("warp_scan", "scan.cu", "warp_scan"), false, 20000, 1U << 20U,
                     "int (per width 8, 16, 32)", run_warp_scan});
    table.push_back(
        {"shfl_scan", one("shfl_scan", "scan.cu", "shfl_scan"), false, 50000, 1U << 20U, "int", run_shfl_scan});
    // transpose.cu
    for (const char* name : {"copy_tiled", "transpose_naive", "transpose_coalesced", "transpose_no_bank_conflicts"}) {
      table.push_back({name, one(name, "transpose.cu", name), false, 60000, 1U << 22U, "float", nullptr});
    }
    table[table.size() - 4].run = [](CaseRun& r, std::size_t n, std::uint32_t s) {
      return run_transpose(r, "corpus_copy_tiled", n, s);
    };
    table[table.size() - 3].run = [](CaseRun& r, std::size_t n, std::uint32_t s) {
      return run_transpose(r, "corpus_transpose_naive", n, s);
    };
    table[table.size() - 2].run = [](CaseRun& r, std::size_t n, std::uint32_t s) {
      return run_transpose(r, "corpus_transpose_coalesced", n, s);
    };
    table[table.size() - 1].run = [](CaseRun& r, std::size_t n, std::uint32_t s) {
      return run_transpose(r, "corpus_transpose_no_bank_conflicts", n, s);
    };
    // histogram.cu
    table.push_back({"histogram_global", one("histogram_global", "histogram.cu", "histogram_global"), true, 1U << 20U,
                     1U << 24U, "byte", [](CaseRun& r, std::size_t n, std::uint32_t s) {
                       return run_histogram(r, "corpus_histogram_global", n, s);
                     }});
    table.push_back({"histogram_shared", one("histogram_shared", "histogram.cu", "histogram_shared"), true, 1U << 18U,
                     1U << 24U, "byte", [](CaseRun& r, std::size_t n, std::uint32_t s) {
                       return run_histogram(r, "corpus_histogram_shared", n, s);
                     }});
    // bitonic_sort.cu
    table.push_back({"bitonic_sort_shared", one("bitonic_sort_shared", "bitonic_sort.cu", "bitonic_sort_shared"), false,
                     8192, 1U << 20U, "key (both directions)", run_bitonic_shared});
    table.push_back({"bitonic_sort_step", one("bitonic_sort_step", "bitonic_sort.cu", "bitonic_sort_step"), false, 8192,
                     1U << 18U, "key", run_bitonic_global});
    // warp_vote.cu
    table.push_back({"vote_any", one("vote_any", "warp_vote.cu", "vote_any"), false, 20000, 1U << 22U, "thread",
                     [](CaseRun& r, std::size_t n, std::uint32_t s) { return run_vote(r, "corpus_vote_any", n, s); }});
    table.push_back({"vote_all", one("vote_all", "warp_vote.cu", "vote_all"), false, 20000, 1U << 22U, "thread",
                     [](CaseRun& r, std::size_t n, std::uint32_t s) { return run_vote(r, "corpus_vote_all", n, s); }});
    table.push_back({"ballot_popc", one("ballot_popc", "warp_vote.cu", "ballot_popc"), false, 20000, 1U << 22U,
                     "thread", run_ballot});
    table.push_back({"active_lanes", one("active_lanes", "warp_vote.cu", "active_lanes"), false, 20000, 1U << 22U,
                     "thread", run_active_lanes});
    table.push_back(
        {"match_keys", one("match_keys", "warp_vote.cu", "match_keys"), false, 20000, 1U << 22U, "thread", run_match});
    table.push_back(
        {"warp_sums", one("warp_sums", "warp_vote.cu", "warp_sums"), false, 20000, 1U << 22U, "thread", run_warp_sums});
    table.push_back({"block_votes", one("block_votes", "warp_vote.cu", "block_votes"), false, 20000, 1U << 22U,
                     "thread", run_block_votes});
    // matrix_mul.cu
    table.push_back({"matrix_mul_tiled_16", one("matrix_mul_tiled_16", "matrix_mul.cu", "matrix_mul_tiled<16>"), false,
                     400000, 1U << 25U, "multiply-add", [](CaseRun& r, std::size_t n, std::uint32_t s) {
                       return run_matrix_mul<16>(r, "corpus_matrix_mul_tiled_16", n, s);
                     }});
    table.push_back({"matrix_mul_tiled_32", one("matrix_mul_tiled_32", "matrix_mul.cu", "matrix_mul_tiled<32>"), false,
                     400000, 1U << 25U, "multiply-add", [](CaseRun& r, std::size_t n, std::uint32_t s) {
                       return run_matrix_mul<32>(r, "corpus_matrix_mul_tiled_32", n, s);
                     }});
    // two_views.cu
    table.push_back(
        {"two_views", one("two_views", "two_views.cu", "two_views"), false, 40000, 1U << 22U, "float", run_two_views});
    // atomics.cu
    table.push_back({"atomics_global", one("atomics_global", "atomics.cu", "atomics_global"), true, 4096, 1U << 18U,
                     "thread (35 atomics each)", run_atomics_global});
    table.push_back({"atomics_shared", one("atomics_shared", "atomics.cu", "atomics_shared"), true, 8192, 1U << 20U,
                     "thread (15 atomics each)", run_atomics_shared});
    // arch_guarded.cu, partly_host.cu, shared_templates.cu (corpus_cases_constructs.hpp)
    table.push_back({"arch_guarded_scale", one("arch_guarded_scale", "arch_guarded.cu", "corpus_arch::guarded_scale"),
                     false, 20000, 1U << 22U, "float", run_guarded_scale});
    table.push_back({"partly_host_affine", one("partly_host_affine", "partly_host.cu", "corpus_partly::affine"), false,
                     20001, 1U << 22U, "float", run_partly_host_affine});
    table.push_back({"smem_reverse_scaled_3",
                     one("smem_reverse_scaled_3", "shared_templates.cu", "corpus_smem::reverse_scaled<3>"), false,
                     20000, 1U << 22U, "float", [](CaseRun& r, std::size_t n, std::uint32_t s) {
                       return run_shared_reverse<float>(r, "corpus_smem_reverse_scaled_3", n, s, 3.0F);
                     }});
    table.push_back({"smem_reverse_typed",
                     one("smem_reverse_typed", "shared_templates.cu", "corpus_smem::reverse_typed"), false, 20000,
                     1U << 22U, "int", [](CaseRun& r, std::size_t n, std::uint32_t s) {
                       return run_shared_reverse<int>(r, "corpus_smem_reverse_typed", n, s, 1);
                     }});
    table.push_back({"smem_reverse_aligned",
                     one("smem_reverse_aligned", "shared_templates.cu", "corpus_smem::reverse_aligned"), false, 20000,
                     1U << 22U, "float", [](CaseRun& r, std::size_t n, std::uint32_t s) {
                       return run_shared_reverse<float>(r, "corpus_smem_reverse_aligned", n, s, 1.0F);
                     }});
    table.push_back({"smem_reverse_struct_double",
                     one("smem_reverse_struct_double", "shared_templates.cu", "corpus_smem::reverse_struct<double>"),
                     false, 20000, 1U << 22U, "double", [](CaseRun& r, std::size_t n, std::uint32_t s) {
                       return run_shared_reverse<double>(r, "corpus_smem_reverse_struct_double", n, s, 1.0);
                     }});
    table.push_back(
        {"smem_reverse_struct_float_explicit",
         one("smem_reverse_struct_float_explicit", "shared_templates.cu", "corpus_smem::reverse_struct<float>"), false,
         20000, 1U << 22U, "float", [](CaseRun& r, std::size_t n, std::uint32_t s) {
           return run_shared_reverse<float>(r, "corpus_smem_reverse_struct_float_explicit", n, s, 1.0F);
         }});
    return table;
  }();
  return cases;
}

// ---- running a table ----
// Every file of tests/data/corpus/ (the corpus's sources), by name.
inline Sources corpus_sources(const std::filesystem::path& dir) {
  Sources sources;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string ext = entry.path().extension().string();
    if (entry.is_regular_file() && (ext == ".cu" || ext == ".cuh")) {
      std::ifstream in(entry.path(), std::ios::binary);
      std::ostringstream text;
      text << in.rdbuf();
      sources.emplace(entry.path().filename().string(), text.str());
    }
  }
  return sources;
}

// The kernels of a table declared in one registry, as an engine declares its own: built for an
// arch with NVRTC (build), or loaded onto a backend (load: on the host backend, the host JIT).
class CorpusRegistry {
 public:
  CorpusRegistry(const std::vector<CorpusCase>& cases, const Sources& sources,
                 metrale::KernelRegistry::Options options = fresh_options())
      : registry_(source_set(sources), std::move(options)) {
    for (const CorpusCase& c : cases) {
      for (const CorpusKernel& k : c.kernels) {
        ids_.emplace(k.name, registry_.declare({k.name, k.source, k.expression, {}, false}));
      }
    }
  }

  std::vector<metrale::BuildRecord> build(std::string_view arch) { return registry_.build(arch); }

  void load(metrale::GpuBackend& gpu) {
    device_ = registry_.load(gpu);
    arch_ = metrale::KernelRegistry::arch_for(gpu).value_or("host");
  }

  // The handle of a loaded kernel; std::runtime_error with the registry's reason when absent.
  [[nodiscard]] metrale::KernelHandle handle(std::string_view kernel) const {
    const auto id = ids_.find(kernel);
    if (id == ids_.end()) {
      throw std::runtime_error("no corpus kernel " + std::string(kernel));
    }
    const metrale::KernelHandle handle = registry_.handle(device_, id->second);
    if (!handle.present()) {
      const auto record = registry_.record(id->second, arch_);
      throw std::runtime_error(std::string(kernel) + " is absent: " +
                               (record ? record->load_error + (record->entry ? record->entry->log : "") : "no record"));
    }
    return handle;
  }

  [[nodiscard]] std::function<metrale::KernelHandle(std::string_view)> handles() const {
    return [this](std::string_view kernel) { return handle(kernel); };
  }

  metrale::KernelRegistry& registry() { return registry_; }

  static metrale::KernelRegistry::Options fresh_options() {
    metrale::KernelRegistry::Options options;
    options.store = nullptr;   // memory only: the NVRTC test compiles for real
    options.memory = nullptr;  // a private memory cache
    options.bundles = nullptr;
    options.parallelism = 2;
    return options;
  }

 private:
  static metrale::SourceSet source_set(const Sources& sources) {
    metrale::SourceSet set;
    for (const auto& [name, text] : sources) {
      set.add_source(name, text);
    }
    return set;
  }

  metrale::KernelRegistry registry_;
  std::map<std::string, metrale::VariantId, std::less<>> ids_;
  metrale::DeviceIndex device_ = 0;
  std::string arch_ = "host";
};

}  // namespace corpus
