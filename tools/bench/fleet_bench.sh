#!/usr/bin/env bash
# fleet_bench.sh: a fleet start simulated on one machine. N processes (default 8), each with its
# own empty disk cache (METRALE_CACHE_DIR), run `metrale-jit build --target T --json` (T default
# hopper: every kernel the target ships) until ready:
#   shared:  one Redis (a redis-server of this script's own, loopback, no persistence) for all:
#            the first starts alone on an empty Redis, the other N-1 start together after it;
#   alone:   N start at once, no Redis (each compiles everything).
# Prints each process's wall time and where its kernels came from (the `cache` field), then one
# summary line per scenario. Needs redis-server and redis-cli (Debian redis-server).
# Usage: tools/bench/fleet_bench.sh [path/to/metrale-jit] (FLEET_SIZE, FLEET_TARGET override)
set -euo pipefail
cli=${1:-build/tools/metrale-jit}
n=${FLEET_SIZE:-8}
target=${FLEET_TARGET:-hopper}
[[ -x $cli ]] || { echo "fleet_bench: no metrale-jit at $cli (build the metrale-jit target)" >&2; exit 2; }
command -v redis-server >/dev/null || { echo "fleet_bench: redis-server missing (apt-get install redis-server)" >&2; exit 2; }
work=$(mktemp -d /tmp/metrale-fleet-XXXXXX)
redis_pid=""
cleanup() {
  [[ -n $redis_pid ]] && kill "$redis_pid" 2>/dev/null && wait "$redis_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$work" --daemonize no \
  --logfile "$work/redis.log" &
redis_pid=$!
for _ in $(seq 100); do
  redis-cli -p "$port" ping 2>/dev/null | grep -q PONG && break
  sleep 0.05
done
url="redis://127.0.0.1:$port/0"

# run_one NAME URL: one process with its own empty cache; prints "NAME seconds origins".
run_one() {
  local name=$1 remote=$2 dir="$work/$1"
  mkdir -m 700 "$dir"
  local start end
  start=$(date +%s.%N)
  METRALE_CACHE_DIR="$dir/cache" METRALE_REMOTE_CACHE="$remote" METRALE_LOG_LEVEL=warn \
    "$cli" build --target "$target" --json >"$dir/out.json" 2>"$dir/err.log" || {
    echo "$name failed:" >&2
    cat "$dir/err.log" >&2
    return 1
  }
  end=$(date +%s.%N)
  python3 - "$name" "$start" "$end" "$dir/out.json" <<'EOF'
import collections, json, sys
name, start, end, path = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
rows = json.load(open(path))
origins = collections.Counter(r["cache"] for r in rows)
print(f"{name} {end - start:.2f} {' '.join(f'{k}={v}' for k, v in sorted(origins.items()))}")
EOF
}

summary() {  # summary LABEL FILE: min / median / max of the seconds column
  python3 - "$1" "$2" <<'EOF'
import statistics, sys
times = [float(line.split()[1]) for line in open(sys.argv[2]) if line.strip()]
print(f"{sys.argv[1]}: n={len(times)} min {min(times):.2f} s, median {statistics.median(times):.2f} s, "
      f"max {max(times):.2f} s")
EOF
}

echo "# fleet_bench: $n processes, target $target, $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "## shared Redis: the first alone on an empty Redis"
run_one shared-0 "$url" | tee "$work/first.txt"
echo "## shared Redis: the other $((n - 1)) at once"
pids=()
for i in $(seq 1 $((n - 1))); do
  run_one "shared-$i" "$url" >"$work/shared-$i.txt" &
  pids+=($!)
done
wait "${pids[@]}"  # not a bare wait: the Redis server is a child too
cat "$work"/shared-[1-9]*.txt | sort -V | tee "$work/others.txt"
echo "redis keys: $(redis-cli -p "$port" --scan --pattern 'metrale:jit:v1:*' | wc -l)"
echo "## no Redis: $n at once"
pids=()
for i in $(seq 0 $((n - 1))); do
  run_one "alone-$i" "" >"$work/alone-$i.txt" &
  pids+=($!)
done
wait "${pids[@]}"
cat "$work"/alone-*.txt | sort -V | tee "$work/alone.txt"
echo "## summary (seconds to a ready process: every kernel of $target built or fetched)"
summary "shared, first (compiles, publishes)" "$work/first.txt"
summary "shared, the other $((n - 1)) (fetch)" "$work/others.txt"
summary "no Redis, $n at once (each compiles)" "$work/alone.txt"
