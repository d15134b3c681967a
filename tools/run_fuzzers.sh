#!/usr/bin/env bash
# run_fuzzers.sh: builds the libFuzzer targets with clang (ASan + UBSan) and runs each for a
# bounded time on a copy of its seed corpus in tests/fuzz/corpus/<name> (with the dictionary
# tests/fuzz/<name>.dict when there is one). Any crash, leak, sanitizer report or input running
# past 10 s fails.
# Usage: tools/run_fuzzers.sh [seconds per target, default 30] [build dir, default build-fuzz]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-30}
build=${2:-build-fuzz}
cmake -S . -B "$build" -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DMETRALE_BUILD_TESTS=OFF -DMETRALE_BUILD_TOOLS=OFF -DMETRALE_BUILD_FUZZERS=ON \
  -DMETRALE_SANITIZE=address,undefined,fuzzer-no-link >/dev/null
targets=()
for src in tests/fuzz/fuzz_*.cpp; do targets+=("$(basename "$src" .cpp)"); done
cmake --build "$build" -j "$(nproc)" --target "${targets[@]}"
for t in "${targets[@]}"; do
  name=${t#fuzz_}
  corpus="$build/corpus/$name"
  mkdir -p "$corpus"
  [[ -d tests/fuzz/corpus/$name ]] && cp -r tests/fuzz/corpus/"$name"/. "$corpus"/
  echo "fuzz: $t for ${seconds}s"
  dict=()
  [[ -f tests/fuzz/$name.dict ]] && dict=(-dict="tests/fuzz/$name.dict")
  "$build/tests/fuzz/$t" -max_total_time="$seconds" -timeout=10 -print_final_stats=1 "${dict[@]}" "$corpus" \
    2>"$build/$t.log" || {
    tail -n 40 "$build/$t.log"
    echo "fuzz: $t FAILED (log: $build/$t.log)" >&2
    exit 1
  }
  grep -E "^stat::number_of_executed_units|^Done [0-9]+ runs" "$build/$t.log" | tail -n 1 || true
done
echo "fuzz: all ${#targets[@]} targets clean"
