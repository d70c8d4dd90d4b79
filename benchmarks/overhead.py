"""Where jaccli's fixed per-call cost goes: recording + one sweep against hand-written NumPy.

Run from the repository root: ``python -m benchmarks.overhead``. It prints, for the P2 shapes,
one VJP through jaccli (f recorded, one reverse sweep) against f plus its hand-written VJP, and
for P5 the pieces that 10 lazy rows are made of. Best of five rounds; run it on an idle machine.
These are diagnostics for the notes on the performance targets, not the benchmark itself.
"""

from __future__ import annotations

import time

import numpy as np

import jaccli
from jaccli.engine.recording import Recording
from jaccli.evaluator import Evaluator

from . import problems as P


def best_us(fn, loops: int = 200, rounds: int = 5) -> float:
    for _ in range(20):
        fn()
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(loops):
            fn()
        times.append((time.perf_counter() - start) / loops * 1e6)
    return min(times)


def vjp_overhead() -> None:
    print("recording + one VJP, against f + its hand-written VJP (target: at most 3x)")
    for iid in ("P2-n100-m100", "P2-n1000-m1000", "P2-n4000-m50", "P2-n50-m4000"):
        x, (W1, b1, W2, b2) = P.data(iid)
        f = P.f_numpy(iid)
        v = np.random.default_rng(0).standard_normal(W2.shape[0])

        def hand():
            h = np.tanh(W1 @ x + b1)
            return W2 @ h + b2, ((v @ W2) * (1 - h * h)) @ W1

        t_hand, t_jaccli = best_us(hand), best_us(lambda: jaccli.vjp(f, x, v))
        print(f"  {iid:16s} hand {t_hand:8.0f} us   jaccli {t_jaccli:8.0f} us   ratio {t_jaccli / t_hand:5.2f}")


def p5_breakdown() -> None:
    iid = "P5-rows10-of-P2-n1000-m1000"
    x, (W1, b1, W2, b2) = P.data(iid)
    f = P.f_numpy(iid)
    h = np.tanh(W1 @ x + b1)
    rec = Recording(f, (x,), (0,))
    seed = Evaluator(rec)._row_seed(0, np.arange(10))
    rows = {
        "plain f": lambda: f(x),
        "the 10-row product alone": lambda: (W2[:10] * (1 - h * h)) @ W1,
        "hand-written 10 rows (incl. the hidden layer)": lambda: (W2[:10] * (1 - np.tanh(W1 @ x + b1) ** 2)) @ W1,
        "jaccli: record f": lambda: Recording(f, (x,), (0,)),
        "jaccli: one reverse sweep of 10 rows": lambda: rec.vjp([seed], structured=True),
        "jaccli: P5 (jacobian(f, x).matrix[0:10])": lambda: jaccli.jacobian(f, x).matrix[0:10],
    }
    full = best_us(lambda: np.asarray(jaccli.jacobian(f, x)), loops=20)
    print(f"P5 pieces, against the full Jacobian ({full:.0f} us; target: P5 at most 5% of it)")
    for name, fn in rows.items():
        t = best_us(fn)
        print(f"  {name:48s} {t:8.0f} us  {100 * t / full:5.1f}%")


if __name__ == "__main__":
    vjp_overhead()
    p5_breakdown()
