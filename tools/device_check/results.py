#!/usr/bin/env python3
"""results.py SCRATCH OUT MODE SECONDS: writes OUT/results.json and OUT/summary.txt for
tools/device_check.sh from what exists in SCRATCH now: steps.txt (NAME|VERDICT|SECONDS|DETAIL
lines), bench.json (metrale-ops-bench --json), peers.json (tools/peers.py --json) and
predicted.json (tools/profile_table.py --json, staged by --build: the host profile's predicted
time of each kernel and shape), any of which may be missing, partial (a step killed mid-run) or
unreadable.

Invariants: never fails on a missing or broken input (it is recorded as such); both files are
written whole (temporary file, then rename), so a reader never sees half of one; one row per
op and shape: the floor at the copy ceiling, our kernels, the peers, as times and ratios.
"""
import datetime
import json
import os
import sys

COLS = ["twin", "parent", "shared", "torch_eager", "torch_compile"]


def load(scratch, name):
    path = os.path.join(scratch, name)
    if not os.path.exists(path):
        return None, f"{name}: not written"
    try:
        with open(path) as f:
            return json.load(f), None
    except (OSError, ValueError) as error:
        return None, f"{name}: unreadable ({error})"


def read_steps(scratch):
    steps = []
    path = os.path.join(scratch, "steps.txt")
    if os.path.exists(path):
        for line in open(path):
            if line.strip():
                name, verdict, seconds, detail = (line.rstrip("\n").split("|", 3) + ["", "", ""])[:4]
                steps.append(dict(step=name, verdict=verdict, seconds=int(seconds or 0), detail=detail))
    return steps


def comparison(bench, peers):
    bench, peers, rows = bench or {}, peers or {}, {}
    ceiling = (bench.get("ceiling") or peers.get("ceiling") or {}).get("bytes_per_s")
    for r in bench.get("kernels", []):
        row = rows.setdefault((r["op"], r["m"], r["k"]), dict(op=r["op"], m=r["m"], k=r["k"], bytes=r["bytes"]))
        row[r["kernel"]] = r["median_us"] if r["checked"] else ("REFUSED" if r.get("refused") else "WRONG")
    for r in peers.get("cases", []):
        row = rows.setdefault((r["op"], r["m"], r["k"]), dict(op=r["op"], m=r["m"], k=r["k"], bytes=r["bytes"]))
        row[r["peer"]] = r.get("median_us") if r.get("ok") else ("ERROR" if "error" in r else "WRONG")
    for row in rows.values():
        row["floor_us"] = row["bytes"] / ceiling * 1e6 if ceiling else None
        twin = row.get("twin")
        peer_times = [row[p] for p in ("torch_eager", "torch_compile") if isinstance(row.get(p), (int, float))]
        ok = isinstance(twin, (int, float)) and twin > 0
        row["twin_over_floor"] = twin / row["floor_us"] if ok and row["floor_us"] else None
        row["best_peer_over_twin"] = min(peer_times) / twin if ok and peer_times else None
    return [rows[k] for k in sorted(rows)]


def predicted_vs_measured(predicted, bench):
    """Each measured kernel row beside the profile's prediction for the same kernel and shape
    (joined on the profile row's bench_key, spelled as the bench spells its rows)."""
    by_key = {}
    for p in predicted or []:
        key = p.get("bench_key") or {}
        by_key[(key.get("op"), key.get("kernel"), key.get("m"), key.get("k"))] = p
    rows = []
    for r in (bench or {}).get("kernels", []):
        p = by_key.get((r["op"], r["kernel"], r["m"], r["k"]))
        if p is None:
            continue
        measured = r.get("median_us") if r.get("checked") else None
        rows.append(dict(op=r["op"], kernel=r["kernel"], m=r["m"], k=r["k"], predicted_us=p["predicted_us"],
                         bound=p["bound"], dram_us=p.get("dram_us"), l2_us=p.get("l2_us"),
                         latency_us=p.get("latency_us"),
                         launch_us=p.get("launch_us"), measured_us=measured,
                         measured_over_predicted=measured / p["predicted_us"] if measured else None))
    return rows


def us(v):
    return f"{v:.2f}" if isinstance(v, (int, float)) else ("-" if v is None else str(v))


def summary_lines(result, seconds):
    lines = []
    bench = result["bench"] or {}
    if bench:
        c = bench.get("ceiling") or {}
        lines.append(f"bench: {bench.get('mode')} | {bench.get('device')} | copy ceiling "
                     f"{c.get('bytes_per_s', 0) / 1e9:.1f} GB/s | {len(bench.get('kernels', []))} kernel rows")
        for r in bench.get("kernels", []):
            t = us(r.get("median_us")) if r.get("checked") else ("REFUSED" if r.get("refused") else "WRONG")
            g = us(r.get("graph_us")) if r.get("checked") else "-"
            lines.append(f"  {r['op']:<14} {r['kernel']:<7} M={r['m']:<5} K={r['k']:<6} {t:>10} us (graph {g:>8} us)  "
                         f"{r.get('check', '')}")
        for g in bench.get("goals", []):
            lines.append(f"  goal: {g['goal']}: {us(g.get('value'))} (target >= {g['target']})")
    peers = result["peers"] or {}
    if peers.get("skipped") or peers.get("stopped"):
        lines.append(f"peers: {peers.get('skipped') or 'stopped by ' + peers['stopped']}")
    lines.append("")
    lines.append("side by side (us; floor = fewest bytes at the copy ceiling measured by the bench):")
    lines.append(f"{'op':<14} {'M':>5} {'K':>6} {'floor':>8} " + " ".join(f"{c:>13}" for c in COLS) +
                 "  twin/floor  best peer/twin")
    for row in result["comparison"]:
        lines.append(f"{row['op']:<14} {row['m']:>5} {row['k']:>6} {us(row['floor_us']):>8} " +
                     " ".join(f"{us(row.get(c)):>13}" for c in COLS) +
                     f"  {us(row['twin_over_floor']):>10}  {us(row['best_peer_over_twin']):>14}")
    if result["predicted_vs_measured"]:
        lines.append("")
        lines.append("predicted (metrale-jit profile on the host, the target's [roofline]) vs measured (us):")
        for r in result["predicted_vs_measured"]:
            lines.append(f"  {r['op']:<14} {r['kernel']:<7} M={r['m']:<5} K={r['k']:<6} predicted "
                         f"{us(r['predicted_us']):>9} ({r['bound']})  measured {us(r['measured_us']):>9}  "
                         f"measured/predicted {us(r['measured_over_predicted'])}")
    for problem in result["inputs"]:
        lines.append(f"note: {problem}")
    lines.append("")
    lines.append(f"device_check.sh ({result['mode']}) {result['date']}, {seconds} s")
    lines.append(f"{'step':<16} {'verdict':<11} {'secs':>5}  detail")
    for s in result["steps"]:
        lines.append(f"{s['step']:<16} {s['verdict']:<11} {s['seconds']:>5}  {s['detail']}")
    return lines


def write_whole(path, text):
    with open(path + ".partial", "w") as f:
        f.write(text)
    os.replace(path + ".partial", path)


def main(argv):
    scratch, out, mode, seconds = argv[1:5]
    bench, bench_problem = load(scratch, "bench.json")
    peers, peers_problem = load(scratch, "peers.json")
    predicted, predicted_problem = load(scratch, "predicted.json")
    result = dict(tool="tools/device_check.sh", mode=mode, seconds=int(seconds),
                  date=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                  steps=read_steps(scratch), bench=bench, peers=peers,
                  inputs=[p for p in (bench_problem, peers_problem, predicted_problem) if p])
    try:
        result["comparison"] = comparison(bench, peers)
    except (KeyError, TypeError, ZeroDivisionError) as error:  # a partial or odd JSON: keep the rest
        result["comparison"] = []
        result["inputs"].append(f"comparison skipped: {type(error).__name__}: {error}")
    try:
        result["predicted_vs_measured"] = predicted_vs_measured(predicted, bench)
    except (AttributeError, KeyError, TypeError, ZeroDivisionError) as error:
        result["predicted_vs_measured"] = []
        result["inputs"].append(f"predictions skipped: {type(error).__name__}: {error}")
    write_whole(os.path.join(out, "results.json"), json.dumps(result, indent=2) + "\n")
    write_whole(os.path.join(out, "summary.txt"), "\n".join(summary_lines(result, seconds)) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
