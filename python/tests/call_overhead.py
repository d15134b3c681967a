"""Per-call cost of one op call from Python on the host backend (M = 1, K = 128 FP8 quant):
rt.raw.run (the C ABI, names and values prepared), rt.run with outputs passed, rt.run that
allocates them, rt.ops.NAME and the thin wrapper; with torch importable, rt.run on CPU tensors and
the torch custom op (metrale.torch.register). Not a test (timings vary by machine): run
  PYTHONPATH=build/python python3 python/tests/call_overhead.py [calls]
"""

from __future__ import annotations

import sys
import timeit

import numpy as np

import metrale


def main() -> None:
    calls = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
    x = (np.random.default_rng(1).standard_normal((1, 128), dtype=np.float32).view(np.uint32) >> 16).astype(np.uint16)
    q = np.empty((1, 128), np.uint8)
    scales = np.empty((1, 1), np.float32)
    ptr = lambda a: a.__array_interface__["data"][0]  # noqa: E731
    with metrale.Runtime("host", host_worker_threads=1) as rt:
        names = ("x", "q", "scales", "m", "k")
        values = (ptr(x), ptr(q), ptr(scales), 1, 128)
        ways = {
            "rt.raw.run (C ABI, prepared)": lambda: rt.raw.run("fp8_act_quant", None, names, values, 0),
            "rt.run, outputs passed": lambda: rt.run("fp8_act_quant", x=x, q=q, scales=scales),
            "rt.run, outputs allocated": lambda: rt.run("fp8_act_quant", x=x),
            "rt.ops.fp8_act_quant": lambda: rt.ops.fp8_act_quant(x=x, q=q, scales=scales),
            "rt.ops.fp8_act_quant, x by position": lambda: rt.ops.fp8_act_quant(x, q=q, scales=scales),
        }
        try:
            import torch

            from metrale import torch as metrale_torch
        except ImportError:
            torch = None
        if torch is not None:
            metrale_torch.register(rt)
            tx = torch.from_numpy(x.view(np.int16)).view(torch.bfloat16)
            tq, tscales = torch.empty((1, 128), dtype=torch.float8_e4m3fn), torch.empty((1, 1))
            op = torch.ops.metrale.fp8_act_quant
            ways["rt.run, torch tensors passed"] = lambda: rt.run("fp8_act_quant", x=tx, q=tq, scales=tscales)
            ways["rt.run, torch outputs allocated"] = lambda: rt.run("fp8_act_quant", x=tx)
            ways["torch.ops.metrale.fp8_act_quant"] = lambda: op(tx)
            ways["torch.ops...fp8_act_quant.default"] = lambda: op.default(tx)
        for way in ways.values():
            way()  # first calls: kernels loaded, log slots said
        base = None
        for label, way in ways.items():
            best = min(timeit.repeat(way, number=calls, repeat=5)) / calls * 1e6
            base = best if base is None else base
            print(f"{label:32s} {best:7.2f} us/call  (+{best - base:5.2f} us over the C ABI)")


if __name__ == "__main__":
    main()
