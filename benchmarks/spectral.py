"""A spectral PDE residual (1-D Kuramoto-Sivashinsky, rfft): full Jacobian and one VJP, jaccli
against jax.jit and torch.func, steady state, in one run.

    python -m benchmarks.spectral [--n 256,4096] [--repeats 5]

R(u) = irfft((k^2 - k^4) rfft(u) - i k/2 rfft(u^2)): -u u_x - u_xx - u_xxxx on a periodic grid of
n points over [0, 32 pi). Real in, complex inside, real out. Every method's result is checked
against jaccli's before it is timed. Prints median seconds per call, wall-clock and the process's CPU time
(a sample loops a fast call for ~20 ms; the methods take turns, a sample each per round), and the
ratios jaccli / other of both: on a loaded machine the CPU times are the steadier.

`jaccli.vjp` returns f(u) and the product; so do torch.func.vjp and the "value and vjp" line of
jax.jit; its "vjp" line returns the product only, and XLA then leaves out the forward transforms.
"numpy hand vjp" is the least work: the same value and product written by hand in NumPy (two
batched transforms forward, two back), the floor for any tool that calls NumPy from Python.
"jax eager value and vjp" and "HIPS autograd vjp" are eager AD as torch.func.vjp is: what recording
the operations on each call costs elsewhere, beside jit's compiled function.
"""
from __future__ import annotations

import argparse
import itertools
import os
import statistics
import time

import numpy as np

LENGTH = 32 * np.pi


def ks_data(n: int):
    """u (a smooth periodic state plus noise, from a fresh default_rng(0)), v (a cotangent), k."""
    rng = np.random.default_rng(0)
    x = LENGTH * np.arange(n) / n
    u = np.cos(x / 16) * (1 + np.sin(x / 16)) + 0.01 * rng.standard_normal(n)
    v = rng.standard_normal(n)
    k = 2 * np.pi / LENGTH * np.arange(n // 2 + 1)
    return u, v, k


def ks_residual(u, k, xp=np, fft=np.fft):
    """The residual in any array library with NumPy's fft names (numpy, jax.numpy, torch)."""
    n = u.shape[-1]
    return fft.irfft((k ** 2 - k ** 4) * fft.rfft(u) - 0.5j * k * fft.rfft(u * u), n=n)


def _sample(fn, number: int) -> tuple[float, float]:
    """Seconds per call over `number` calls: wall-clock, and CPU time of the whole process (every
    thread: XLA's and torch's pools too)."""
    start, cpu = time.perf_counter(), time.process_time()
    for _ in range(number):
        fn()
    return (time.perf_counter() - start) / number, (time.process_time() - cpu) / number


def _timed(methods: dict, repeats: int) -> dict:
    """Each method's samples of (wall, CPU) seconds per call, one a round. The methods take turns,
    a sample each per round, so that a change in the machine's load meets them all alike."""
    numbers = {}
    for name, fn in methods.items():
        fn()  # warm: compilation, caches
        numbers[name] = max(1, int(0.02 / max(_sample(fn, 1)[0], 1e-7)))  # ~20 ms a sample: a 30 us call alone is noise
    times: dict = {name: [] for name in methods}
    for _ in range(repeats):
        for name, fn in methods.items():
            time.sleep(0.05)  # (the worker threads of the one before, torch's OpenMP pool, go idle: they spin a while)
            times[name].append(_sample(fn, numbers[name]))
    return times


def ratio(samples: dict, ours: str, other: str, part: int) -> float:
    """The median over rounds of ours / other within the round (0: wall, 1: CPU): paired, so that
    the load of the round cancels."""
    return statistics.median(a[part] / b[part] for a, b in zip(samples[ours], samples[other]))


def medians(samples: list) -> tuple[float, float]:
    return tuple(statistics.median(part) for part in zip(*samples))


def _moving(u):
    """u moved by a rounding-size step at each call: a replay cannot reuse an earlier call's result
    (seven points made beforehand, so that making them is not timed)."""
    return itertools.cycle([u * (1 + 1e-15 * k) for k in range(1, 8)])


def hand_vjp(k):
    """(R(u), v^T dR/du) written by hand in NumPy: R's transforms, then their transposes (for the
    real-valued adjoint, irfft's is rfft and rfft's is irfft, as the weights of the two cancel)."""
    linear, nonlinear = k ** 2 - k ** 4, -0.5j * k
    both = np.stack([linear, np.conj(nonlinear)])

    def vjp(u, v):
        n = u.shape[-1]
        spectra = np.fft.rfft(np.stack([u, u * u]))
        value = np.fft.irfft(linear * spectra[0] + nonlinear * spectra[1], n)
        back = np.fft.irfft(both * np.fft.rfft(v), n)
        return value, back[0] + 2 * u * back[1]
    return vjp


def _methods(n: int):
    import jaccli

    u, v, k = ks_data(n)
    f = lambda u: ks_residual(u, k)  # noqa: E731
    once = jaccli.record_once(f)  # steady state: f's recording replayed, as jit's compiled function
    moved = _moving(u)  # a new point at each call
    hand = hand_vjp(k)
    methods = {
        "jaccli jacobian": lambda: np.asarray(jaccli.jacobian(f, u)),
        "jaccli vjp": lambda: jaccli.vjp(f, u, v)[1],
        "jaccli once jacobian": lambda: np.asarray(jaccli.jacobian(once, next(moved))),
        "jaccli once vjp": lambda: jaccli.vjp(once, next(moved), v)[1],
        "numpy hand vjp": lambda: hand(next(moved), v)[1],
    }
    try:
        import jax
        import jax.numpy as jnp

        jax.config.update("jax_enable_x64", True)
        kj = jnp.asarray(k)
        fj = lambda u: ks_residual(u, kj, jnp, jnp.fft)  # noqa: E731
        jac = jax.jit(jax.jacrev(fj))
        vjp = jax.jit(lambda u, v: jax.vjp(fj, u)[1](v)[0])

        def value_and_vjp(u, v):
            value, back = jax.vjp(fj, u)
            return value, back(v)[0]
        both = jax.jit(value_and_vjp)
        uj, vj = jnp.asarray(u), jnp.asarray(v)
        methods["jax.jit jacrev"] = lambda: np.asarray(jac(uj).block_until_ready())
        methods["jax.jit vjp"] = lambda: np.asarray(vjp(uj, vj).block_until_ready())
        methods["jax.jit value and vjp"] = lambda: [np.asarray(a) for a in jax.block_until_ready(both(uj, vj))][1]
        methods["jax eager value and vjp"] = lambda: [np.asarray(a) for a in value_and_vjp(uj, vj)][1]
    except ImportError:
        pass
    try:
        import autograd
        import autograd.numpy as anp

        fa = lambda u: ks_residual(u, k, anp, anp.fft)  # noqa: E731

        def autograd_vjp():
            back, value = autograd.make_vjp(fa)(u)
            return back(v)
        methods["HIPS autograd vjp"] = autograd_vjp
    except ImportError:
        pass
    try:
        import torch
        import torch.func

        kt = torch.from_numpy(k)
        ft = lambda u: ks_residual(u, kt, torch, torch.fft)  # noqa: E731
        ut, vt = torch.from_numpy(u), torch.from_numpy(v)
        methods["torch.func jacrev"] = lambda: torch.func.jacrev(ft)(ut).numpy()
        methods["torch.func vjp"] = lambda: torch.func.vjp(ft, ut)[1](vt)[0].numpy()
    except ImportError:
        pass
    return methods


def run(sizes=(256, 4096), repeats: int = 5) -> dict:
    results = {}
    for n in sizes:
        methods = _methods(n)
        J = methods["jaccli jacobian"]()
        g = methods["jaccli vjp"]()
        for name, fn in methods.items():
            want = g if "vjp" in name else J
            np.testing.assert_allclose(fn(), want, rtol=1e-9, atol=1e-9 * np.abs(want).max(), err_msg=name)
        results[n] = _timed(methods, repeats)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", default="256,4096")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; "
          f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', 'unset')}")
    results = run(tuple(int(n) for n in args.n.split(",")), args.repeats)
    for n, times in results.items():
        print(f"\nKS residual, n = {n}: median seconds per call over {args.repeats} samples (steady state)")
        print(f"  {'':22s} {'wall':>10s} {'CPU':>10s}")
        for name, samples in times.items():
            wall, cpu = medians(samples)
            print(f"  {name:22s} {wall:10.6f} {cpu:10.6f}")
        print("  ratios, wall (CPU), the median of each round's:")
        for ours, others in RATIOS:
            for other in others:
                if ours in times and other in times:
                    wall, cpu = ratio(times, ours, other, 0), ratio(times, ours, other, 1)
                    print(f"  {ours} / {other} = {wall:.2f} ({cpu:.2f})")


# (ours, the lines it is compared with)
RATIOS = [("jaccli jacobian", ("jax.jit jacrev", "torch.func jacrev")),
          ("jaccli once jacobian", ("jax.jit jacrev", "torch.func jacrev")),
          ("jaccli vjp", ("jax.jit vjp", "jax.jit value and vjp", "torch.func vjp", "HIPS autograd vjp",
                          "jax eager value and vjp", "numpy hand vjp")),
          ("jaccli once vjp", ("jax.jit vjp", "jax.jit value and vjp", "torch.func vjp", "numpy hand vjp")),
          ("numpy hand vjp", ("jax.jit vjp",))]

if __name__ == "__main__":
    main()
