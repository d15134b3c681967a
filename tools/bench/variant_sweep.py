#!/usr/bin/env python3
"""variant_sweep.py: time kernel variants on a device without rebuilding anything.

The library compiles its kernels at run time, so a variant is only data: a target file with other
template parameters (METRALE_HARDWARE_DIR) or another template folder (METRALE_TEMPLATE_DIR).
Each variant runs metrale-ops-bench once at the given shapes with a fresh cache directory, and the
rows of every run are printed side by side with the run's own copy ceiling.

    variant_sweep.py --bench build-device/bin/metrale-ops-bench --hardware hardware \\
        --variant "base" \\
        --variant "b512=ssm_ba_gates_mma:block=512,lanes=64,groups=8;fp8_act_quant_hopper:lanes=16,groups=4" \\
        --variant "old@templates-old" --m 8192 --fp8-k 17408 --json sweep.json

A variant is LABEL[@TEMPLATE_DIR][%CLUSTER][=KERNEL:KEY=VALUE,...[;KERNEL:...]]; the kernels' entries
in the target's HARDWARE.toml (--target, default hopper) are replaced by the given parameters, and
%CLUSTER (1, 2, 4 or 8) caps the tensor-core kernel's K split (metrale-ops-bench --mma-max-cluster).
--variants-file adds one variant per line (blank lines and # comments skipped); --plan checks
every variant against the hardware folder (and, with --cli, that `metrale-jit targets` accepts its
edited target: the kernel catalog's rules) and prints what each would run, timing nothing. A
failed run (a kernel that fails its check, a compile error) is reported with its log tail, and the
sweep goes on; each variant's rows are printed as soon as it ends, so a sweep cut short still
shows what it measured. Invariant: nothing outside the temporary folders and --json is written.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time


def parse_variant(text: str) -> dict:
    label, _, overrides = text.partition("=")
    label, _, cluster = label.partition("%")
    if cluster and cluster not in ("1", "2", "4", "8"):
        raise SystemExit(f"variant_sweep: bad cluster cap '%{cluster}' in '{text}' (1, 2, 4 or 8)")
    label, _, templates = label.partition("@")
    kernels = {}
    for part in filter(None, overrides.split(";")):
        kernel, _, params = part.partition(":")
        values = dict(p.split("=", 1) for p in params.split(",") if p)
        if not kernel or not values or not all(v.isdigit() for v in values.values()):
            raise SystemExit(f"variant_sweep: bad override '{part}' in '{text}' (KERNEL:KEY=INT,...)")
        kernels[kernel] = values
    return {"label": label, "templates": templates or None, "kernels": kernels, "max_cluster": cluster or None}


def read_variants_file(path: str) -> list:
    variants = []
    with open(path) as f:
        for number, line in enumerate(f, 1):
            text = line.split("#", 1)[0].strip()
            if text:
                try:
                    variants.append(parse_variant(text))
                except SystemExit as error:
                    raise SystemExit(f"{path}:{number}: {error}") from None
    return variants


def edited_hardware_text(src: str, target: str, kernels: dict) -> str:
    path = os.path.join(src, target, "HARDWARE.toml")
    with open(path) as f:
        text = f.read()
    for kernel, values in kernels.items():
        entry = "{ " + ", ".join(f"{k} = {v}" for k, v in values.items()) + " }"
        text, count = re.subn(rf"(?m)^{re.escape(kernel)} = \{{[^}}]*\}}", f"{kernel} = {entry}", text)
        if count != 1:
            raise SystemExit(f"variant_sweep: {path} has no entry '{kernel} = {{...}}' to replace")
    return text


def write_hardware(src: str, dst: str, target: str, kernels: dict) -> None:
    text = edited_hardware_text(src, target, kernels)
    shutil.copytree(src, dst)
    with open(os.path.join(dst, target, "HARDWARE.toml"), "w") as f:
        f.write(text)


def run_variant(args, variant: dict, scratch: str) -> dict:
    folder = tempfile.mkdtemp(prefix=variant["label"] + ".", dir=scratch)
    env = dict(os.environ, METRALE_CACHE_DIR=os.path.join(folder, "cache"))
    if variant["kernels"]:
        write_hardware(args.hardware, os.path.join(folder, "hardware"), args.target, variant["kernels"])
        env["METRALE_HARDWARE_DIR"] = os.path.join(folder, "hardware")
    if variant["templates"]:
        env["METRALE_TEMPLATE_DIR"] = os.path.abspath(variant["templates"])
    out = os.path.join(folder, "bench.json")
    command = [args.bench, "--json", out, "--no-open", "--repeats", str(args.repeats)]
    command += ["--m", *map(str, args.m), "--fp8-k", *map(str, args.fp8_k)]
    if variant.get("max_cluster"):
        command += ["--mma-max-cluster", variant["max_cluster"]]
    started = time.monotonic()
    try:
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=args.timeout)
        rc, log = done.returncode, done.stdout + done.stderr
    except subprocess.TimeoutExpired as timeout:
        out = timeout.stdout or ""  # bytes even with text=True on some Pythons
        rc, log = 124, out.decode(errors="replace") if isinstance(out, bytes) else out
    result = {"variant": variant, "rc": rc, "seconds": round(time.monotonic() - started, 1), "log_tail": log[-1500:]}
    if os.path.exists(out):
        with open(out) as f:
            result["bench"] = json.load(f)
    return result


def print_header() -> None:
    print(f"{'variant':<16} {'op':<14} {'kernel':<7} {'M':>6} {'K':>6} {'us':>9} {'GB/s':>8} {'%ceil':>6}  check")


def print_table(results: list) -> None:
    for result in results:
        bench = result.get("bench") or {}
        ceiling = (bench.get("ceiling") or {}).get("bytes_per_s") or 0
        if result["rc"] != 0:
            print(f"{result['variant']['label']:<16} run exit {result['rc']}: {result['log_tail'][-400:]!r}")
        for row in bench.get("kernels", []):
            us = row.get("median_us")
            rate = row["bytes"] / (us * 1e-6) if us else 0
            fraction = f"{100 * rate / ceiling:5.1f}" if ceiling and us else "    -"
            us_text = f"{us:9.2f}" if us else "        -"
            print(f"{result['variant']['label']:<16} {row['op']:<14} {row['kernel']:<7} {row['m']:>6} {row['k']:>6} "
                  f"{us_text} {rate / 1e9:8.0f} {fraction}  {'ok' if row.get('checked') else 'WRONG'}")


def plan(args, variants: list) -> int:
    refused = 0
    with tempfile.TemporaryDirectory(prefix="metrale-sweep-plan.") as scratch:
        for variant in variants:
            verdict = "not validated (no --cli)"
            if args.cli:
                folder = tempfile.mkdtemp(prefix=variant["label"] + ".", dir=scratch)
                write_hardware(args.hardware, folder + "/hardware", args.target, variant["kernels"])
                env = dict(os.environ, METRALE_HARDWARE_DIR=folder + "/hardware")
                done = subprocess.run([args.cli, "targets"], env=env, capture_output=True, text=True, timeout=60)
                verdict = "accepted" if done.returncode == 0 else f"REFUSED: {(done.stdout + done.stderr).strip()[-400:]}"
                refused += done.returncode != 0
            cap = f", K split at most {variant['max_cluster']}" if variant.get("max_cluster") else ""
            print(f"{variant['label']}: templates {variant['templates'] or 'embedded'}, "
                  f"{args.target} overrides {variant['kernels'] or 'none'}{cap}: {verdict}")
    print(f"{len(variants)} variant(s), {refused} refused; M {args.m}, FP8 K {args.fp8_k}, {args.repeats} runs each")
    return 1 if refused else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bench", help="metrale-ops-bench (not needed with --plan)")
    parser.add_argument("--cli", help="with --plan: a metrale-jit that validates each edited target")
    parser.add_argument("--hardware", default="hardware", help="the hardware/ folder to copy and edit")
    parser.add_argument("--target", default="hopper")
    parser.add_argument("--variant", action="append", default=[], type=parse_variant)
    parser.add_argument("--variants-file", help="more variants, one per line")
    parser.add_argument("--plan", action="store_true", help="check and print the variants; run nothing")
    parser.add_argument("--m", type=int, nargs="+", default=[8192])
    parser.add_argument("--fp8-k", type=int, nargs="+", default=[17408])
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per variant")
    parser.add_argument("--json", help="write every run's results here")
    args = parser.parse_args()
    variants = args.variant + (read_variants_file(args.variants_file) if args.variants_file else [])
    if not variants:
        parser.error("no variant: give --variant or --variants-file")
    if args.plan:
        return plan(args, variants)
    if not args.bench:
        parser.error("--bench is required to time variants")
    results = []
    print_header()
    with tempfile.TemporaryDirectory(prefix="metrale-sweep.") as scratch:
        for variant in variants:
            results.append(run_variant(args, variant, scratch))
            print_table(results[-1:])
            print(f"variant {variant['label']}: exit {results[-1]['rc']} in {results[-1]['seconds']} s", flush=True)
            if args.json:
                with open(args.json, "w") as f:
                    json.dump(results, f, indent=1)
    return 0 if all(r["rc"] == 0 for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
