"""A recording whose steps repeat (a Python loop) is compiled as a loop: its compiled forms keep
code of one iteration, not of every one (issue 44), and give the plain call's derivatives."""

import sys
import types
from typing import Any, Callable

import numpy as np
import pytest

import jaccli
from jaccli.replay import codegen, compiled_sweeps, replay_trace


def rk4_lv(steps: int, h: float = 0.01):
    def rhs(z):
        return np.stack([1.5 * z[0] - z[0] * z[1], -3.0 * z[1] + z[0] * z[1]])

    def run(z):
        for _ in range(steps):
            k1 = rhs(z)
            k2 = rhs(z + h / 2 * k1)
            k3 = rhs(z + h / 2 * k2)
            k4 = rhs(z + h * k3)
            z = z + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        return z
    return run


def rk4_lv_tangent(z, steps: int, h: float = 0.01):
    """rk4_lv(steps)'s Jacobian d z(T) / d z0 in closed form: RK4 on the variational equation M' = J(z) M."""
    def rhs(u):
        return np.array([1.5 * u[0] - u[0] * u[1], -3.0 * u[1] + u[0] * u[1]])

    def jac(u):
        return np.array([[1.5 - u[1], -u[0]], [u[1], -3.0 + u[0]]])
    M = np.eye(2)
    for _ in range(steps):
        k1, A1 = rhs(z), jac(z) @ M
        k2, A2 = rhs(z + h / 2 * k1), jac(z + h / 2 * k1) @ (M + h / 2 * A1)
        k3, A3 = rhs(z + h / 2 * k2), jac(z + h / 2 * k2) @ (M + h / 2 * A2)
        k4, A4 = rhs(z + h * k3), jac(z + h * k3) @ (M + h * A3)
        z = z + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        M = M + h / 6 * (A1 + 2 * A2 + 2 * A3 + A4)
    return M


def _footprint(fn: Callable) -> int:
    """Bytes a compiled form keeps: the code of the functions compile_steps wrote (theirs alone, each
    once), the constants it named for them (arrays, tuples, numbers...), not objects shared with the
    rest of the process (NumPy's functions, jaccli's). Counted from the objects, not by tracemalloc:
    that also counts what the interpreter's own caches keep while compiling, which depends on what ran
    in the process before (the test failed after other test files, 18.9 KB against 27.9 KB)."""
    seen: set[int] = set()
    total = 0

    def add(o: Any) -> None:
        nonlocal total
        if id(o) in seen:
            return
        seen.add(id(o))
        if isinstance(o, types.CodeType):
            total += sys.getsizeof(o) + sum(sys.getsizeof(getattr(o, a)) for a in (
                "co_code", "co_linetable", "co_exceptiontable", "co_names", "co_varnames", "co_consts"))
            for c in o.co_consts:
                add(c)
        elif isinstance(o, types.FunctionType):
            if o.__code__.co_filename.startswith("<jaccli"):
                add(o.__code__)
        elif isinstance(o, np.ndarray):
            total += o.nbytes
        elif isinstance(o, (tuple, list, set, frozenset)):
            total += sys.getsizeof(o)
            for x in o:
                add(x)
        elif isinstance(o, dict):
            total += sys.getsizeof(o)
            for k, x in o.items():
                add(k)
                add(x)
        elif isinstance(o, (int, float, complex, str, bytes, slice, np.generic)):
            total += sys.getsizeof(o)

    total += sys.getsizeof(fn.__globals__)
    for name, value in fn.__globals__.items():
        if name != "__builtins__":
            add(name)
            add(value)
    return total


def _kept_by_compiling(steps: int) -> dict[str, int]:
    """Bytes each compiled form (the forward replay, the sweep) keeps, over record_once's replays."""
    kept: dict[str, int] = {}

    def measured(compile_steps):
        def run(steps_, loads, results, name="steps"):
            fn = compile_steps(steps_, loads, results, name)
            kept[name] = _footprint(fn)
            return fn
        return run

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(replay_trace, "compile_steps", measured(replay_trace.compile_steps))
        mp.setattr(compiled_sweeps, "compile_steps", measured(compiled_sweeps.compile_steps))
        f = rk4_lv(steps)
        once = jaccli.record_once(f)
        for k in range(6):
            z = np.array([1.0, 1.5]) * (1 + 0.01 * k)
            np.testing.assert_allclose(np.asarray(jaccli.jacobian(once, z)), rk4_lv_tangent(z, steps), rtol=1e-12)
    return kept


def test_a_loop_s_compiled_forms_do_not_grow_with_its_iterations():
    short, long = _kept_by_compiling(40), _kept_by_compiling(160)
    assert set(short) == set(long) == {"replay", "sweep"}
    for name in short:  # written out line by line, 160 iterations kept 4x the code of 40
        assert long[name] < 1.3 * short[name], (name, short[name], long[name])


def damped(steps: int):
    def run(z):  # guards in the loop: the signs abs reads, whether sqrt's factor is finite
        for _ in range(steps):
            z = z - 0.01 * np.abs(z) * z / np.sqrt(1.0 + z * z) + 0.002 * z[::-1]
        return z
    return run


@pytest.mark.parametrize("make, steps", [(rk4_lv, 6), (rk4_lv, 40), (damped, 300)])
def test_compiled_loops_give_the_plain_call_s_derivatives_at_new_points(make, steps):
    f = make(steps)
    once = jaccli.record_once(f)
    for k in range(8):
        z = np.array([1.0, 1.5]) * (1 + 0.05 * k) * (-1 if k == 6 else 1)  # (a sign flips: a guard fails)
        np.testing.assert_allclose(np.asarray(jaccli.jacobian(once, z)), np.asarray(jaccli.jacobian(f, z)),
                                   rtol=1e-12, atol=1e-12)
        u = np.array([0.3, -1.0])
        np.testing.assert_allclose(jaccli.vjp(once, z, u), jaccli.vjp(f, z, u), rtol=1e-12, atol=1e-12)


def test_the_steps_of_a_loop_share_their_equal_argument_tuples(monkeypatch):
    # issue 44: a 60-step RK4 loop records ~2400 operations with a handful of different argument
    # lists (None where a value is filled in, a float, an index): one tuple each, not one per step
    kept = []
    monkeypatch.setattr(compiled_sweeps.Traced, "compiled", _spy(compiled_sweeps.Traced.compiled, kept))
    # (the process's cache of shared tuples, of its own: filled by earlier tests to within a few keys of its
    # bound, it was cleared midway through this loop's steps, which then kept two tuples for a key)
    monkeypatch.setattr(codegen, "_SHARED", {})
    g = jaccli.record_once(rk4_lv(60))
    z = np.array([1.0, 1.5])
    for k in range(5):  # the recording, then the replays: the third traces the sweep, the fourth compiles it
        np.asarray(jaccli.jacobian(g, z * (1 + 0.01 * k)))
    [traced] = kept
    args = [st[2] for st in traced.steps if codegen.args_key(st[2]) is not None]  # (no arrays)
    assert len(args) > 2000
    assert len({id(a) for a in args}) == len({codegen.args_key(a) for a in args}) < 40
    assert codegen.args_key([1]) != codegen.args_key([1.0]) != codegen.args_key([True])
    assert codegen.args_key([-0.0]) != codegen.args_key([0.0])
    assert codegen.args_key([(1,)]) is not None and codegen.args_key([(True,)]) is None


def _spy(method, kept):
    def spied(self):
        kept.append(self)
        return method(self)
    return spied


def test_each_shared_argument_tuple_is_described_once_not_once_a_step(monkeypatch):
    # (the descriptions step_loops.find compares: made per step, they were half of compiling a
    # 200-step RK4's sweep, itself a plain call's time on the replay that compiles it, issue 44)
    from jaccli.replay import step_loops

    keyed, real = [], step_loops._key
    monkeypatch.setattr(step_loops, "_key", lambda a, ints=None: keyed.append(a) or real(a, ints))
    found, find = [], step_loops.find
    monkeypatch.setattr(step_loops, "find", lambda steps, *rest: found.append(len(steps)) or find(steps, *rest))
    monkeypatch.setattr(codegen, "_SHARED", {})  # (the shared tuples' cache, of its own: as above)
    g = jaccli.record_once(rk4_lv(60))
    z = np.array([1.0, 1.5])
    for k in range(5):  # the recording, then the replays: the second compiles the forward, the fourth the sweep
        got = np.asarray(jaccli.jacobian(g, z * (1 + 0.01 * k)))
        np.testing.assert_allclose(got, np.asarray(jaccli.jacobian(rk4_lv(60), z * (1 + 0.01 * k))), rtol=1e-12)
    assert len(found) == 2 and min(found) > 2000
    assert len(keyed) < 0.5 * sum(found)  # (several keys a step, when made per step: 41,080 for these 10,142)
