"""Where jaccli's fixed per-call cost goes: recording + one sweep against hand-written NumPy.

Run from the repository root: ``python -m benchmarks.overhead``. It prints, for the P2 shapes and
the scalar P3 and P6, one VJP through jaccli (f recorded, one reverse sweep; and a record_once
replay) and through the anchors, each against f plus its hand-written VJP, and
for P5 the pieces that 10 lazy rows are made of. Best of five rounds; run it on an idle machine.
These are diagnostics for the notes on the performance targets, not the benchmark itself.
"""

from __future__ import annotations

import time
from typing import Callable

import numpy as np

import jaccli
from jaccli.engine import Recording
from jaccli.api.evaluator import Evaluator

from . import anchors
from . import problems as P
from .instances import Instance, load


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


def _hand_vjp(inst: Instance) -> Callable[[np.ndarray], tuple]:
    """f and its VJP by hand, computed together (one plain evaluation plus the gradient)."""
    x = inst.x
    if inst.prob == "P2":
        W1, b1, W2, b2 = inst.params

        def p2(v):
            h = np.tanh(W1 @ x + b1)
            return W2 @ h + b2, ((v @ W2) * (1 - h * h)) @ W1
        return p2
    f, grad = {"P3": (P.f_p3, P.grad_p3), "P6": (P.f_p6, P.grad_p6)}[inst.prob]
    return lambda v: (f(x), v * grad(x))


def _anchor_vjps(inst: Instance) -> dict[str, Callable[[np.ndarray], object]]:
    """The same VJP through torch (autograd.grad) and HIPS autograd (make_vjp), where installed."""
    out = {}
    try:
        torch = anchors.import_lib("torch")
        tf = anchors.make_f(inst, torch, lambda z: torch.logsumexp(z, 0), torch.from_numpy)

        def torch_vjp(v):
            vt = torch.from_numpy(np.asarray(v, dtype=np.float64))
            xt = torch.from_numpy(inst.x).requires_grad_()
            y = tf(xt)
            return y.detach().numpy(), torch.autograd.grad(y, xt, vt)[0].numpy()
        out["torch"] = torch_vjp
    except anchors.Unavailable:
        pass
    try:
        ag = anchors.import_lib("autograd")
        af = anchors.make_f(inst, ag.numpy, ag.scipy.special.logsumexp, np.asarray)

        def autograd_vjp(v):
            back, y = ag.make_vjp(af)(inst.x)
            return y, back(v)
        out["autograd"] = autograd_vjp
    except anchors.Unavailable:
        pass
    return out


OVERHEAD_IIDS = ("P2-n100-m100", "P2-n1000-m1000", "P2-n4000-m50", "P2-n50-m4000", "P3-n100", "P3-n1000", "P6-n500")
WAYS = ("jaccli", "record_once", "torch", "autograd")


def vjp_ways(iid: str) -> tuple[Callable, dict[str, Callable], np.ndarray]:
    """(f + its hand-written VJP, the same VJP by each way in WAYS that is installed, the vector v),
    each a function of v, each checked against the hand-written one."""
    inst = load(iid)
    m = inst.params[2].shape[0] if inst.prob == "P2" else 1
    v = np.random.default_rng(0).standard_normal(m) if inst.prob == "P2" else np.float64(1.0)
    once = jaccli.record_once(inst.f)
    hand = _hand_vjp(inst)
    ways = {"jaccli": lambda v: jaccli.vjp(inst.f, inst.x, v), "record_once": lambda v: jaccli.vjp(once, inst.x, v),
            **_anchor_vjps(inst)}
    want = hand(v)[1]
    for way in ways.values():
        np.testing.assert_allclose(np.asarray(way(v)[1], dtype=float), want, rtol=1e-9, atol=1e-12)
    return hand, ways, v


def vjp_overhead() -> None:
    """#2's overhead bound: recording plus one sweep (one VJP; the gradient for scalar f) at most 3x
    one plain evaluation of f plus its hand-written VJP. With record_once the recording is a replay."""
    print("one VJP (f's value and v^T J), against f + its hand-written VJP (bound: 3x); best of 5 rounds")
    print(f"  {'instance':16s} {'hand':>8s} " + " ".join(f"{name:>16s}" for name in WAYS))
    for iid in OVERHEAD_IIDS:
        hand, ways, v = vjp_ways(iid)
        t_hand = best_us(lambda: hand(v))
        cells = []
        for name in WAYS:
            way = ways.get(name)
            if way is None:
                cells.append(f"{'n/a':>16s}")
                continue
            t = best_us(lambda: way(v))
            cells.append(f"{t:7.0f} us {t / t_hand:5.2f}x")
        print(f"  {iid:16s} {t_hand:5.0f} us " + " ".join(cells))


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
