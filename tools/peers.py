#!/usr/bin/env python3
"""peers.py: what a user would write instead of metrale-jit's three ops, timed the way
metrale-ops-bench times ours (CUDA events, median of >= 50 runs after warm-up, input sets
rotated past twice the L2, the copy ceiling measured in the same run), at the same shapes.

Peers:
  ssm_ba_gates   torch_eager    F.linear(x, W) in bf16, then the gating math in fp32
                 torch_compile  the same function through torch.compile
  fp8_act_quant  torch_eager    per-128-group amax / 448, divide, cast to float8_e4m3fn
                 torch_compile  the same function through torch.compile
  silu_mul_fp8_quant
                 torch_eager    F.silu(gate) * up in bf16 (gate and up the halves of one [M, 2K]
                                tensor), then fp8_act_quant's peer on the product
                 torch_compile  the same function through torch.compile (which may fuse it)

Invariants: torch and numpy are imported only inside functions, so `--dry-run` (argument
parsing, the case plan, the JSON) works on a machine without them; a missing torch or CUDA is a
skip (exit 0, a message, and a JSON that says so), never a failure; bytes are the fewest an op
must move (each input read once, each output written once), the same formula as the bench.
Streaming (issue 17): each row is printed when measured and the JSON rewritten after each case;
the time budget counts from the process's start (torch's import included), no case starts that
the same peer's slowest case so far would carry past it, and SIGTERM stops the run with its JSON written.
"""
import argparse
import json
import os
import signal
import statistics
import sys
import time

START = time.monotonic()  # the budget counts from here: importing torch is part of the cost

BA = dict(k=5120, n=96, nv=48, vpg=3)
FP8_KS = (5120, 6144, 17408)
SILU_KS = (17408,)  # Qwen3.5-27B's MLP intermediate size: the down projection's input
MS = (1, 16, 264, 1024, 8192)
GROUP = 128
CHUNK = 20  # runs per chunk; a large copy goes ahead of each so launches queue without gaps
SPACER_BYTES = 256 << 20


def ba_bytes(m):
    k, n, nv = BA["k"], BA["n"], BA["nv"]
    return m * k * 2 + n * k * 2 + 2 * nv * 4 + m * 2 * nv * 4


def fp8_bytes(m, k):
    return m * k * 2 + m * k + m * (k // GROUP) * 4


def silu_bytes(m, k):
    return m * k * 2 * 2 + m * k + m * (k // GROUP) * 4  # gate and up read, q and scales written


# The bench's goal shapes.
GOALS = (("ssm_ba_gates", 8192, BA["k"]), ("fp8_act_quant", 8192, 17408), ("silu_mul_fp8_quant", 8192, 17408))


def plan(ms):
    """Every case; the bench's goal shapes first, so a run cut short still has them."""
    cases = []
    for m in ms:
        cases.append(dict(op="ssm_ba_gates", m=m, k=BA["k"], n=BA["n"], bytes=ba_bytes(m)))
    for k in FP8_KS:
        for m in ms:
            cases.append(dict(op="fp8_act_quant", m=m, k=k, n=0, bytes=fp8_bytes(m, k)))
    for k in SILU_KS:
        for m in ms:
            cases.append(dict(op="silu_mul_fp8_quant", m=m, k=k, n=0, bytes=silu_bytes(m, k)))
    return sorted(cases, key=lambda c: (c["op"], c["m"], c["k"]) not in GOALS)


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--json", default="", help="write the results to this file")
    p.add_argument("--dry-run", action="store_true", help="plan and write the JSON without torch or a GPU")
    p.add_argument("--repeats", type=int, default=60, help="timed runs per case (median)")
    p.add_argument("--warmup", type=int, default=5, help="untimed runs first")
    p.add_argument("--m", type=int, nargs="+", default=list(MS), help="token counts")
    p.add_argument("--rotate-mib", type=int, default=256, help="input sets span at least this many MiB")
    p.add_argument("--no-compile", action="store_true", help="skip the torch.compile peers")
    p.add_argument("--time-budget-s", type=float, default=200.0,
                   help="seconds from the process's start after which no case starts (recorded as skipped)")
    args = p.parse_args(argv)
    if args.repeats < 1 or args.warmup < 0 or any(m < 1 for m in args.m):
        p.error("--repeats must be >= 1, --warmup >= 0 and every --m >= 1")
    return args


class Stopped(BaseException):
    """SIGTERM arrived (the device check's step deadline): stop, keep what was measured."""


def on_sigterm(signum, frame):
    raise Stopped()


def write(path, payload):
    """Whole file or nothing: a reader never sees half a JSON, even if the kill comes mid-write."""
    if path:
        with open(path + ".partial", "w") as f:
            json.dump(payload, f, indent=2)
            f.write("\n")
        os.replace(path + ".partial", path)


def budget_allows(elapsed, slowest, budget):
    """Start another case only if the slowest case so far would still end inside the budget."""
    return elapsed + slowest <= budget


def ba_peer(torch):
    F = torch.nn.functional
    nv, vpg = BA["nv"], BA["vpg"]

    def run(x, w, a_log, dt_bias):
        acc = F.linear(x, w).float()                      # [M, N]
        grouped = acc.view(acc.shape[0], nv // vpg, 2, vpg)  # per group: vpg betas, then vpg gates
        beta = torch.sigmoid(grouped[:, :, 0, :].reshape(-1, nv))
        gate = -torch.exp(a_log) * F.softplus(grouped[:, :, 1, :].reshape(-1, nv) + dt_bias, threshold=20.0)
        return torch.cat([gate, beta], dim=1)             # [M, 2 nv]: gate then beta

    return run


def fp8_peer(torch):
    def run(x):
        m, k = x.shape
        groups = x.view(m, k // GROUP, GROUP).float()
        scale = groups.abs().amax(dim=-1, keepdim=True).clamp_min(1e-10) / 448.0
        q = (groups / scale).clamp(-448.0, 448.0).to(torch.float8_e4m3fn).view(m, k)
        return q, scale.view(m, k // GROUP)

    return run


def silu_peer(torch):
    F = torch.nn.functional
    quant = fp8_peer(torch)

    def run(gate, up):
        return quant(F.silu(gate) * up)  # h in bf16, as a user's MLP computes it

    return run


def ba_check(torch, out, x, w, a_log, dt_bias):
    """Relative error against a float64 computation (bf16 operands: expect 1e-3..1e-2)."""
    acc = (x.double() @ w.double().t()).view(x.shape[0], BA["nv"] // BA["vpg"], 2, BA["vpg"])
    beta = torch.sigmoid(acc[:, :, 0, :].reshape(-1, BA["nv"]))
    gate = -torch.exp(a_log.double()) * torch.nn.functional.softplus(
        acc[:, :, 1, :].reshape(-1, BA["nv"]) + dt_bias.double())
    ref = torch.cat([gate, beta], dim=1)
    err = ((out.double() - ref).norm() / ref.norm()).item()
    return err, err < 2e-2 and not torch.isnan(out).any().item()


def fp8_check(torch, out, x):
    q, scale = out
    deq = q.view(x.shape[0], -1, GROUP).double() * scale.double().unsqueeze(-1)
    ref = x.view(x.shape[0], -1, GROUP).double()
    err = ((deq - ref).norm() / ref.norm()).item()
    return err, err < 0.07 and not torch.isnan(deq).any().item()  # e4m3: 3 mantissa bits


def silu_check(torch, out, gate, up):
    """fp8_check against h = silu(gate) * up in float64."""
    g = gate.double()
    return fp8_check(torch, out, g * torch.sigmoid(g) * up.double())


def time_runs(torch, runs, launch, spacer):
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(CHUNK)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(CHUNK)]
    us, done = [], 0
    while done < runs:
        chunk = min(CHUNK, runs - done)
        spacer()
        for i in range(chunk):
            starts[i].record()
            launch(done + i)
            ends[i].record()
        torch.cuda.synchronize()
        us += [starts[i].elapsed_time(ends[i]) * 1000.0 for i in range(chunk)]
        done += chunk
    return us


def measure(args, result, save):
    """Fills `result` in place and calls save() after each case, so a kill keeps every row."""
    try:
        import torch
    except ImportError as error:
        result["skipped"] = f"torch is not importable: {error}"
        return
    if not torch.cuda.is_available():
        result.update(skipped="torch sees no CUDA device", torch=torch.__version__)
        return
    dev = torch.device("cuda")
    props = torch.cuda.get_device_properties(dev)
    result.update(torch=torch.__version__, device=props.name, sm_count=props.multi_processor_count,
                  l2_bytes=getattr(props, "L2_cache_size", None), cases=[], skipped_cases=[])
    gen = torch.Generator(device=dev).manual_seed(7)
    spacer_src = torch.randn(SPACER_BYTES // 4, device=dev, generator=gen)
    spacer_dst = torch.empty_like(spacer_src)

    def spacer():
        spacer_dst.copy_(spacer_src)

    big = torch.randn(1 << 28, device=dev, generator=gen)  # 1 GiB fp32
    big_dst = torch.empty_like(big)
    time_runs(torch, 2, lambda i: big_dst.copy_(big), spacer)
    copy_us = statistics.median(time_runs(torch, 20, lambda i: big_dst.copy_(big), spacer))
    ceiling = 2 * big.numel() * 4 / (copy_us * 1e-6)
    result["ceiling"] = dict(bytes_read_plus_written=2 * big.numel() * 4, median_us=copy_us, bytes_per_s=ceiling)
    del big, big_dst
    print_head(result)
    save()

    makers = {"ssm_ba_gates": ba_peer, "fp8_act_quant": fp8_peer, "silu_mul_fp8_quant": silu_peer}
    peers = {op: [("torch_eager", make(torch))] for op, make in makers.items()}
    if not args.no_compile:
        for op, make in makers.items():
            peers[op].append(("torch_compile", torch.compile(make(torch), dynamic=True)))
    rotate = args.rotate_mib << 20
    slowest = {}  # per peer: torch.compile's first cases include compiling, eager's never do
    for case in plan(args.m):
        m, k = case["m"], case["k"]
        sets = max(2, min(4096, -(-rotate // case["bytes"])))
        if case["op"] == "ssm_ba_gates":
            x = torch.randn(m, k, device=dev, generator=gen).to(torch.bfloat16)
            w = (torch.randn(BA["n"], k, device=dev, generator=gen) * 0.05).to(torch.bfloat16)
            a_log = torch.rand(BA["nv"], device=dev, generator=gen) * 2 - 1
            dt_bias = torch.rand(BA["nv"], device=dev, generator=gen) * 2 - 1
            inputs = [(x.clone(), w.clone(), a_log.clone(), dt_bias.clone()) for _ in range(sets)]
            check = lambda out, s: ba_check(torch, out, *inputs[s])  # noqa: E731
        elif case["op"] == "silu_mul_fp8_quant":
            gate_up = torch.randn(m, 2 * k, device=dev, generator=gen).mul_(2).to(torch.bfloat16)
            inputs = []
            for _ in range(sets):
                copy = gate_up.clone()
                inputs.append((copy[:, :k], copy[:, k:]))  # the two halves of one [M, 2K] row
            check = lambda out, s: silu_check(torch, out, *inputs[s])  # noqa: E731
        else:
            x = torch.randn(m, k, device=dev, generator=gen).mul_(4).to(torch.bfloat16)
            inputs = [(x.clone(),) for _ in range(sets)]
            check = lambda out, s: fp8_check(torch, out, *inputs[s])  # noqa: E731
        for name, fn in peers[case["op"]]:
            row = dict(case, peer=name, input_sets=sets)
            if not budget_allows(time.monotonic() - START, slowest.get(name, 0.0), args.time_budget_s):
                result["skipped_cases"].append(dict(row, reason="time budget spent"))
                continue
            case_start = time.monotonic()
            try:
                t0 = time.monotonic()
                out = fn(*inputs[0])
                torch.cuda.synchronize()
                row["first_call_s"] = time.monotonic() - t0  # compile time for torch.compile
                row["rel_err"], row["ok"] = check(out, 0)
                time_runs(torch, args.warmup, lambda i: fn(*inputs[i % sets]), spacer)
                us = time_runs(torch, args.repeats, lambda i: fn(*inputs[i % sets]), spacer)
                row["median_us"], row["min_us"] = statistics.median(us), min(us)
                row["ceiling_fraction"] = case["bytes"] / (row["median_us"] * 1e-6) / ceiling
            except Exception as error:  # a peer that fails is data, not the end of the run
                row["error"] = f"{type(error).__name__}: {error}"[:500]
            slowest[name] = max(slowest.get(name, 0.0), time.monotonic() - case_start)
            result["cases"].append(row)
            print_row(row)
            save()
        del inputs
        torch.cuda.empty_cache()


def print_head(result):
    c = result["ceiling"]
    print(f"peers.py: torch {result['torch']} on {result['device']}; copy ceiling {c['bytes_per_s'] / 1e9:.1f} GB/s")
    print(f"{'op':<14} {'peer':<14} {'M':>5} {'K':>6} {'median us':>10} {'%ceil':>6} {'rel_err':>9}  note",
          flush=True)


def print_row(r):
    us = f"{r['median_us']:.2f}" if "median_us" in r else "-"
    frac = f"{100 * r['ceiling_fraction']:.1f}" if "ceiling_fraction" in r else "-"
    err = f"{r['rel_err']:.2e}" if "rel_err" in r else "-"
    note = r.get("error", "" if r.get("ok", False) else "CHECK FAILED")
    print(f"{r['op']:<14} {r['peer']:<14} {r['m']:>5} {r['k']:>6} {us:>10} {frac:>6} {err:>9}  {note}", flush=True)


def print_tail(result):
    if "skipped" in result:
        print(f"peers.py: skipped: {result['skipped']}")
    for r in result.get("skipped_cases", []):
        print(f"skipped {r['op']} {r['peer']} M={r['m']} K={r['k']}: {r['reason']}")
    if "stopped" in result:
        print(f"peers.py: stopped by {result['stopped']} after {len(result.get('cases', []))} cases")


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    payload = dict(tool="peers.py", args=vars(args), plan=plan(args.m))
    if args.dry_run:
        payload["dry_run"] = True
        write(args.json, payload)
        print(f"peers.py --dry-run: {len(payload['plan'])} cases planned, "
              f"{'no JSON' if not args.json else 'JSON at ' + args.json}; torch not imported")
        return 0
    payload["dry_run"] = False
    signal.signal(signal.SIGTERM, on_sigterm)
    status = 0
    try:
        measure(args, payload, lambda: write(args.json, payload))
    except Stopped:
        payload["stopped"] = "SIGTERM"
        status = 128 + signal.SIGTERM
    payload["seconds"] = round(time.monotonic() - START, 1)
    write(args.json, payload)
    print_tail(payload)
    return status


if __name__ == "__main__":
    sys.exit(main())
