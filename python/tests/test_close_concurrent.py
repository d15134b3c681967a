"""Runtime.close() on one thread while others run ops on the host backend: the calls in flight
finish with their right result, the ones that start later raise metrale.ClosedError, and the
interpreter never crashes (each round a fresh runtime; 200 rounds)."""

from __future__ import annotations

import threading

import numpy as np
from conftest import POISON_U8, bf16_bits, fp8_reference

import metrale

ROUNDS = 200
THREADS = 3


def caller(rt, x, want_q, want_scales, started, outcomes):
    """Calls until the runtime refuses; every result that came back must match the reference."""
    ok = 0
    started.release()
    while True:
        q = np.full(x.shape, POISON_U8, np.uint8)
        scales = np.full((x.shape[0], x.shape[1] // 128), np.nan, np.float32)
        try:
            rt.ops.fp8_act_quant(x, q=q, scales=scales)
        except metrale.ClosedError as error:
            outcomes.append(("closed", ok, str(error)))
            return
        except Exception as error:  # noqa: BLE001 - any other failure is the test's finding
            outcomes.append(("error", ok, repr(error)))
            return
        if not (np.array_equal(q, want_q) and np.array_equal(scales, want_scales)):
            outcomes.append(("wrong", ok, ""))
            return
        ok += 1


def test_close_while_threads_run_ops():
    rng = np.random.default_rng(20261203)
    x = bf16_bits(rng.uniform(-4, 4, (4, 256)))
    want_q, want_scales = fp8_reference(x)
    for round_ in range(ROUNDS):
        rt = metrale.Runtime("host", target="hopper", verify=False, host_worker_threads=1)
        started = threading.Semaphore(0)
        outcomes: list[tuple[str, int, str]] = []
        threads = [
            threading.Thread(target=caller, args=(rt, x, want_q, want_scales, started, outcomes))
            for _ in range(THREADS)
        ]
        for thread in threads:
            thread.start()
        for _ in threads:
            started.acquire()
        rt.close()
        for thread in threads:
            thread.join(timeout=60)
            assert not thread.is_alive(), f"round {round_}: a caller hung after close"
        assert rt.closed
        assert len(outcomes) == THREADS
        for kind, ok, message in outcomes:
            assert kind == "closed", f"round {round_}: {kind} after {ok} good calls: {message}"
            assert "this Runtime is closed" in message
        rt.close()  # a second close does nothing
