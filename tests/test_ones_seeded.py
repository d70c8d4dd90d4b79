"""A compiled diagonal sweep drops its multiplications by the tangent of ones and the seed axis (issue 44,
item 4: P1-n100's program multiplied three factors by ones, and broadcast (1, n) against (n,) in each call):
the same results, to the bit where the usual sweep's are exact, and the usual way where it cannot."""

from __future__ import annotations

import dis

import numpy as np
import pytest

import jaccli
from jaccli.replay.codegen import STEP
from jaccli.replay.ones_seeded import ones_form, rewritten


def _program(g):
    """The compiled sweep a steady record_once call of g reruns (api's Steady)."""
    rec = next(iter(g._cache.values()))
    (steady,) = [v for k, v in rec.structure.items() if isinstance(k, tuple) and k[:1] == ("steady whole block",)]
    return steady.ran[1]


def _reads_seeds(prog) -> bool:
    return any(i.argval == "seeds" for i in dis.get_instructions(prog.fn) if i.opname.startswith("LOAD"))


def _steady(g, x, warm=8):
    for _ in range(warm):  # (a recording is compiled one step a call: replays.py)
        out = np.asarray(jaccli.jacobian(g, x))
    return out


CASES = [
    # f, its derivative (the diagonal), in closed form
    (lambda x: np.sin(x) * np.exp(x) + x ** 2, lambda x: np.exp(x) * (np.sin(x) + np.cos(x)) + 2.0 * x),
    (lambda x: 3.0 * x + np.tanh(x), lambda x: 3.0 + 1.0 - np.tanh(x) ** 2),
    (lambda x: np.exp(x) / (1.0 + x * x), lambda x: np.exp(x) / (1 + x * x) - np.exp(x) * 2 * x / (1 + x * x) ** 2),
]


@pytest.mark.parametrize("case", range(len(CASES)))
@pytest.mark.parametrize("shape", [(7,), (3, 4)])
def test_a_diagonal_program_never_reads_its_ones_and_gives_the_derivative(case, shape):
    f, df = CASES[case]
    g = jaccli.record_once(f)
    rng = np.random.default_rng(case)
    _steady(g, rng.uniform(-1, 1, shape))
    x = rng.uniform(-1, 1, shape)
    J = np.asarray(jaccli.jacobian(g, x))
    n = x.size
    assert J.shape == shape + shape
    np.testing.assert_allclose(J.reshape(n, n), np.diag(df(x).reshape(-1)), rtol=1e-12, atol=1e-12)
    assert g.replays >= 8 and g.records == 1
    assert not _reads_seeds(_program(g))  # (before: `v6 = seeds[0]`, and 3 multiplications by it)
    # a plain call's recording, swept as usual: the same numbers to the bit
    np.testing.assert_array_equal(J, np.asarray(jaccli.jacobian(f, x)))


def test_float32_keeps_its_dtype_and_mixed_constants_promote_as_recorded():
    g = jaccli.record_once(lambda x: np.sin(x) * np.float64(2.0) + x)
    h = jaccli.record_once(lambda x: np.sin(x) + x * x)
    for fn in (g, h):
        x32 = np.linspace(-1, 1, 5, dtype=np.float32)
        for _ in range(8):
            J = np.asarray(jaccli.jacobian(fn, x32))
        want = np.asarray(jaccli.jacobian(fn.__wrapped__, x32))
        assert J.dtype == want.dtype
        np.testing.assert_array_equal(J, want)


def test_non_finite_factors_take_the_usual_way():
    g = jaccli.record_once(lambda x: np.sqrt(x) * np.exp(x))
    _steady(g, np.array([1.0, 2.0, 3.0]))
    x = np.array([0.0, 2.0, np.inf])
    np.testing.assert_array_equal(np.asarray(jaccli.jacobian(g, x)), np.asarray(jaccli.jacobian(g.__wrapped__, x)))


def test_ones_form_is_read_only_ones_only():
    ones = np.ones((1, 3))
    assert not ones_form(ones)  # (writable: anyone may change it)
    ones.flags.writeable = False
    assert ones_form(ones)
    twos = np.full((1, 3), 2.0)
    twos.flags.writeable = False
    assert not ones_form(twos)


def _step(k, fn, *args):
    fills = tuple((i, a[1], None) for i, a in enumerate(args) if type(a) is tuple)
    return (k, fn, tuple(None if type(a) is tuple else a for a in args), fills, {}, _QUIET, STEP)


_QUIET = {"divide": "ignore", "over": "ignore", "under": "ignore", "invalid": "ignore"}  # (a sweep's error state)


def test_rewritten_drops_times_one_folds_constants_and_reshapes_results():
    ones = np.ones((1, 4))
    ones.flags.writeable = False
    f64 = np.dtype(np.float64)
    meta = {0: ((4,), f64), 1: ((1, 4), f64), 2: ((1, 4), f64), 3: ((1, 4), f64), 4: ((1, 4), f64), 5: ((1, 4), f64)}
    steps = [_step(2, np.multiply, ("slot", 1), ("slot", 0)),  # ones * x: x itself
             _step(3, np.multiply, ("slot", 1), 2.0),          # ones * 2: the constant 2, made now
             _step(4, np.multiply, ("slot", 3), ("slot", 0)),  # 2 * x: kept, without the seed axis
             _step(5, np.add, ("slot", 2), ("slot", 4))]
    loads = {0: ("vals", 0), 1: ("seeds", 0)}
    got = rewritten(steps, loads, [("slot", 5, None)], {1: ones}, meta)
    assert got is not None
    new_steps, new_loads, results = got
    assert new_loads == {0: ("vals", 0)}
    assert [s[1] for s in new_steps] == [np.multiply, np.add, np.ndarray.reshape]
    assert new_steps[0][2] == (np.float64(2.0), None) and type(new_steps[0][2][0]) is np.float64
    assert new_steps[-1][2] == (None, (1, 4)) and results == [("slot", 6, None)]


def test_rewritten_refuses_what_it_cannot_see_through():
    ones = np.ones((1, 4))
    ones.flags.writeable = False
    f64 = np.dtype(np.float64)
    meta = {0: ((4,), f64), 1: ((1, 4), f64), 2: ((1, 4), f64)}
    loads = {0: ("vals", 0), 1: ("seeds", 0)}
    # a result that would be the recording's own value, not a fresh array of the program's
    assert rewritten([_step(2, np.multiply, ("slot", 1), ("slot", 0))], loads, [("slot", 2, None)], {1: ones},
                     meta) is None
    # a step that is no ufunc (its result may depend on the seed axis)
    assert rewritten([_step(2, np.sum, ("slot", 1))], loads, [("slot", 2, None)], {1: ones}, meta) is None
    # a float32 value times float64 ones is float64: never the value itself
    meta32 = {**meta, 0: ((4,), np.dtype(np.float32))}
    got = rewritten([_step(2, np.multiply, ("slot", 1), ("slot", 0))], loads, [("slot", 2, None)], {1: ones}, meta32)
    assert got is not None and got[0][0][1] is np.multiply
