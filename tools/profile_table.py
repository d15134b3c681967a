#!/usr/bin/env python3
"""profile_table.py: the "predicted" table of BENCHMARKS.md: `metrale-jit profile --json` for both
ops at the Qwen3.5-27B shapes on one target, printed as a markdown table with an empty column for
the device's measured times (joined later on each row's bench_key, see BENCHMARKS.md).

    tools/profile_table.py [--cli build/tools/metrale-jit] [--target hopper] [--json PATH]

--json also writes every row, as `metrale-jit profile --json` gives it, to PATH: the predictions
tools/device_check.sh --build stages (build-device/predicted.json) for the device run to join with
the bench's measured rows on each row's bench_key.
"""
import argparse
import json
import os
import subprocess
import sys

BA_SHAPES = [(m, 96, 5120) for m in (1, 16, 264, 2048, 8192)]
FP8_SHAPES = [(m, 0, k) for k in (5120, 17408) for m in (16, 264, 8192)]


def profile(cli, target, op, m, n, k):
    cmd = [cli, "profile", op, "--target", target, "--m", str(m), "--k", str(k), "--json"]
    if op == "ba-gates":
        cmd += ["--n", str(n)]
    print("running: " + " ".join(cmd), file=sys.stderr, flush=True)
    out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True).stdout
    return json.loads(out)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cli", default="build/tools/metrale-jit")
    parser.add_argument("--target", default="hopper")
    parser.add_argument("--json", help="also write every profile row to this file")
    args = parser.parse_args()
    rows = []
    print("| op | kernel | M | K | N | grid | regs | occ | DRAM MB | L2 MB | sect/req | MFLOP | lat us | "
          "predicted us | floor us | bound | pred/floor | blocks run | measured us |")
    print("| --- | --- | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | "
          "--- | ---: | ---: | ---: |")
    cases = [("ba-gates",) + s for s in BA_SHAPES] + [("fp8-quant",) + s for s in FP8_SHAPES]
    for op, m, n, k in cases:
        for row in profile(args.cli, args.target, op, m, n, k):
            rows.append(row)
            occ = "?" if row["occupancy"] is None else f"{row['occupancy'] * 100:.0f}%"
            regs = "?" if row["registers"] is None else str(row["registers"])
            print(f"| {op} | {row['kernel']} | {m} | {k} | {n or '-'} | {row['grid']} | {regs} | {occ} | "
                  f"{row['dram_bytes'] / 1e6:.2f} | {row['l2_bytes'] / 1e6:.1f} | "
                  f"{row['sectors_per_request']:.1f} | {row['flops'] / 1e6:.1f} | {row['latency_us']:.2f} | "
                  f"{row['predicted_us']:.2f} | "
                  f"{row['floor_us']:.2f} | {row['bound']} | {row['predicted_over_floor']:.2f} | "
                  f"{row['sampled_blocks']}/{row['total_blocks']} |  |", flush=True)
    if args.json:
        with open(args.json + ".partial", "w") as f:
            json.dump(rows, f, indent=1)
        os.replace(args.json + ".partial", args.json)


if __name__ == "__main__":
    main()
