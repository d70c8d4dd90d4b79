"""A compiled sweep leaves out the steps that give back a value unchanged (issue 44, item 4: P3-n100's
sweep reshaped its cotangents to the shape they had, six Python calls per call): reshapes to a value's own
shape, products by a constant of ones; never where the program writes into its arguments or hands the
value out, and always with the usual sweep's results."""

from __future__ import annotations

import dis

import numpy as np
import pytest

import jaccli
from jaccli.engine import WRITES_ARGUMENT
from jaccli.engine.rules.shape import reshape
from jaccli.replay.codegen import STEP
from jaccli.replay.program_passes import without_reshapes
from tests.helpers import rosen_hess, rosenbrock
from tests.test_ones_seeded import _program


def _calls_of(fn, target) -> int:
    names = {name for name, v in fn.__globals__.items() if v is target}
    return sum(1 for i in dis.get_instructions(fn) if i.opname == "LOAD_GLOBAL" and i.argval in names)


def test_a_steady_hessian_program_reshapes_nothing_to_its_own_shape_and_joins_its_entries_once():
    from jaccli.engine.rules.joining import concat
    from jaccli.replay.program_passes import _joined

    g = jaccli.record_once(rosenbrock)
    xs = np.random.default_rng(3).uniform(-1, 1, (10, 40))
    x, H = [(x, np.asarray(jaccli.hessian(g, x))) for x in xs][-1]  # (compiled over the first calls)
    np.testing.assert_allclose(H, rosen_hess(x), rtol=1e-13, atol=1e-12)
    np.testing.assert_array_equal(H, np.asarray(jaccli.hessian(rosenbrock, x)))
    # (before: 6 reshapes of the cotangents; the one left changes a (1, n - 1) row to (n - 1,), by NumPy itself)
    assert _calls_of(_program(g).fn, reshape.impl) == 0 and _calls_of(_program(g).fn, np.ndarray.reshape) == 1
    # (before: the entries joined in three concatenations, each copying what the one before made; the other
    # one joins their first column; each without its primitive's Python function)
    assert _calls_of(_program(g).fn, concat.impl) == 0 and _calls_of(_program(g).fn, _joined) == 2


class _Slot:
    def __init__(self, k):
        self.k = k


def _step(k, fn, *args):
    args = [_Slot(a[1]) if type(a) is tuple and a[:1] == ("slot",) else a for a in args]
    fills = tuple((i, a.k, None) for i, a in enumerate(args) if type(a) is _Slot)
    return (k, fn, tuple(None if type(a) is _Slot else a for a in args), fills, {}, None, STEP)


F64 = np.dtype(np.float64)


def test_reshapes_to_the_same_shape_and_products_by_ones_are_left_out():
    meta = {0: ((3,), F64), 1: ((3,), F64), 2: ((3,), F64), 3: ((1, 3), F64), 4: ((3,), F64), 5: ((3,), F64)}
    steps = [_step(1, reshape.impl, ("slot", 0), (-1,)),
             _step(2, np.multiply, np.ones(3), ("slot", 1)),
             _step(3, reshape.impl, ("slot", 2), (1, 3)),  # (another shape: kept)
             _step(4, np.multiply, 2.0, ("slot", 2)),
             _step(5, np.add, ("slot", 4), ("slot", 1))]
    prims = {1: reshape, 3: reshape}
    got, results = without_reshapes(steps, [("slot", 5, None), ("slot", 3, None)], meta, prims)
    assert [s[0] for s in got] == [3, 4, 5]
    assert [s[3] for s in got] == [((0, 0, None),), ((1, 0, None),), ((0, 4, None), (1, 0, None))]
    assert results == [("slot", 5, None), ("slot", 3, None)]


def test_nothing_is_left_out_where_the_program_writes_in_place_or_hands_the_value_out():
    meta = {0: ((3,), F64), 1: ((3,), F64), 2: ((3,), F64)}
    steps = [_step(1, reshape.impl, ("slot", 0), (-1,)), _step(2, np.negative, ("slot", 1))]
    prims = {1: reshape}
    assert without_reshapes(steps, [("slot", 1, None)], meta, prims)[0] == steps  # (a result: a view stays a view)
    writer = next(iter(WRITES_ARGUMENT))
    assert without_reshapes(steps, [("slot", 2, None)], meta, {**prims, 2: writer})[0] == steps
    # a float32 value times float64 ones is float64: kept
    meta32 = {**meta, 0: ((3,), np.dtype(np.float32))}
    kept = [_step(1, np.multiply, ("slot", 0), np.ones(3)), _step(2, np.negative, ("slot", 1))]
    assert without_reshapes(kept, [("slot", 2, None)], meta32, {})[0] == kept


def test_a_small_forward_replay_calls_numpy_itself_where_the_recording_shows_what_to_call():
    from jaccli.engine.rules.indexing import get_basic, scatter_basic, scatter_into
    from jaccli.engine.rules.reductions import sum_

    g = jaccli.record_once(rosenbrock)
    xs = np.random.default_rng(5).uniform(-1, 1, (6, 30)).astype(np.float32)
    for x in xs:
        H = np.asarray(jaccli.hessian(g, x))
        P = np.asarray(jaccli.hessian(rosenbrock, x))
        np.testing.assert_array_equal(H, P)
        assert H.dtype == P.dtype == np.float32
    run = next(iter(g._cache.values()))._forward[0].run
    # (before: 3 x[i], 2 scatter-adds, a scatter into zeros and a sum, each through its primitive's Python function)
    assert [_calls_of(run, p.impl) for p in (get_basic, scatter_into, scatter_basic, sum_)] == [0, 0, 0, 0]


@pytest.mark.parametrize("dtype, order", [(np.float32, "C"), (np.float64, "F"), (np.complex128, "C")])
def test_the_scatter_of_a_replay_is_its_primitives(dtype, order):
    from jaccli.engine.rules.indexing import scatter_basic
    from jaccli.replay.program_passes import _scattered

    v, idx = np.arange(6, dtype=dtype).reshape(2, 3), (slice(1, 4),)
    if v.dtype.kind == "c":
        v += 1j
    want = scatter_basic.impl(v, idx, (5,))
    got = _scattered(v, (Ellipsis,) + idx, want.shape, want.dtype, order)
    assert got.dtype == want.dtype and got.shape == (2, 5) and got.flags[order + "_CONTIGUOUS"]
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("acc_dtype, v_dtype", [(np.float32, np.float64), (np.float64, np.float32), (np.int64, np.float32)])
def test_the_scatter_add_of_a_replay_is_its_primitives(acc_dtype, v_dtype):
    from jaccli.engine.rules.indexing import scatter_into
    from jaccli.replay.program_passes import _added_at

    acc, v, idx = np.arange(12, dtype=acc_dtype).reshape(3, 4), np.full((3, 2), 0.1, dtype=v_dtype), (slice(1, 3),)
    want = scatter_into.impl(acc, v, idx)
    got = _added_at(acc, v, (Ellipsis,) + idx, np.result_type(acc, v))
    assert got.dtype == want.dtype and got.flags.c_contiguous == want.flags.c_contiguous
    np.testing.assert_array_equal(got, want)
    assert acc[0, 0] == 0 and acc[2, 3] == 11  # (a copy: acc as it was)


def test_a_program_that_changes_no_error_state_keeps_none_and_one_that_does_leaves_it_as_it_was():
    g = jaccli.record_once(lambda x: np.sin(x) * np.exp(x) + x ** 2)
    xs = np.random.default_rng(7).uniform(-1, 1, (9, 8))
    before = np.geterr()
    with np.errstate(over="raise"):
        J = [np.asarray(jaccli.jacobian(g, x)) for x in xs][-1]
        assert np.geterr()["over"] == "raise"
    assert np.geterr() == before
    np.testing.assert_array_equal(J, np.asarray(jaccli.jacobian(g.__wrapped__, xs[-1])))
    replay = next(iter(g._cache.values()))._forward[0].run
    assert "_Run" not in replay.__code__.co_names  # (before: made, and closed, on every call)
    # (the sweep's steps run with the warnings off, entered and left by a token kept in a local: no ErrstateRun)
    assert "_enter" in _program(g).fn.__code__.co_names and "_Run" not in _program(g).fn.__code__.co_names


def test_a_long_sweep_keeps_no_notes_of_its_values_and_is_not_simplified(monkeypatch):
    # (issue 44.1: the notes of a 200-step RK4's traced sweep, one per value, held 2 MB more at once than
    # its replay otherwise holds: past _META_UP_TO values a sweep keeps none, and its program runs as traced)
    from jaccli.replay import compiled_sweeps

    monkeypatch.setattr(compiled_sweeps, "_META_UP_TO", 3)
    seen, real = [], compiled_sweeps.simplified
    monkeypatch.setattr(compiled_sweeps, "simplified", lambda steps, loads, results, ones, nodes, prims: (
        seen.append(nodes.meta), real(steps, loads, results, ones, nodes, prims))[1])
    g = jaccli.record_once(rosenbrock)
    for x in np.random.default_rng(4).uniform(-1, 1, (8, 30)):
        np.testing.assert_allclose(np.asarray(jaccli.hessian(g, x)), rosen_hess(x), rtol=1e-12, atol=1e-12)
    assert seen and all(meta is None for meta in seen)


def test_joins_read_by_a_join_along_the_same_axis_alone_become_part_of_it():
    from jaccli.engine.rules.joining import concat
    from jaccli.replay.program_passes import joins_flattened

    def join(k, *args, axis=0):
        step = _step(k, concat.impl, *args)
        return step[:4] + ({"axis": axis},) + step[5:]

    meta = {k: ((2,), F64) for k in range(6)}
    c = np.ones(2)
    steps = [join(2, ("slot", 0), c), join(3, ("slot", 2), ("slot", 1)), join(4, c, ("slot", 3), ("slot", 0))]
    prims = {2: concat, 3: concat, 4: concat}
    got = joins_flattened(steps, [("slot", 4, None)], meta, prims)
    assert [s[0] for s in got] == [4]
    assert got[0][2][0] is c and got[0][2][2] is c and got[0][3] == ((1, 0, None), (3, 1, None), (4, 0, None))
    vals = {0: np.array([1.0, 2.0]), 1: np.array([3.0, 4.0])}

    def run(steps):
        for k, fn, args, fills, kwargs, *_ in steps:
            args = list(args)
            for i, slot, _ in fills:
                args[i] = vals[slot]
            vals[k] = fn(*args, **kwargs)
        return vals[4]
    np.testing.assert_array_equal(run(got), run(steps))
    # kept: a join that another step reads too, or that is handed out, one along another axis, pieces of two dtypes
    kept = joins_flattened(steps, [("slot", 4, None), ("slot", 3, None)], meta, prims)
    assert [s[0] for s in kept] == [3, 4] and kept[1] == steps[2]
    negated = _step(5, np.negative, ("slot", 2))
    kept = joins_flattened(steps + [negated], [("slot", 4, None)], meta, prims)
    assert [s[0] for s in kept] == [2, 4, 5] and kept[0] == steps[0] and kept[2] == negated
    other = steps[:2] + [join(4, c, ("slot", 3), ("slot", 0), axis=-1)]
    kept = joins_flattened(other, [("slot", 4, None)], meta, prims)
    assert [s[0] for s in kept] == [3, 4] and kept[1] == other[2]
    mixed = {**meta, 1: ((2,), np.dtype(np.float32))}
    assert joins_flattened(steps, [("slot", 4, None)], mixed, prims) == steps


def test_a_programs_gathers_reshapes_and_joins_call_numpy_itself_and_give_the_same():
    from jaccli.engine.rules.indexing import _ROTATE_FROM, gather
    from jaccli.engine.rules.joining import concat
    from jaccli.replay.program_passes import _TAKE_BELOW, _joined, direct_calls

    def run(steps, vals):
        vals = dict(vals)
        for k, fn, args, fills, kwargs, *_ in steps:
            args = list(args)
            for i, slot, _ in fills:
                args[i] = vals[slot]
            vals[k] = fn(*args, **kwargs)
        return vals

    flat = np.array([[2, 0], [1, 1]])
    flat.flags.writeable = False
    steps = [_step(1, gather.impl, ("slot", 0), flat), _step(2, reshape.impl, ("slot", 1), (-1,)),
             _step(3, concat.impl, ("slot", 2), np.zeros(1), ("slot", 2))]
    steps[2] = steps[2][:4] + ({"axis": 0},) + steps[2][5:]
    prims = {1: gather, 2: reshape, 3: concat}
    x = np.array([[1.0, 2.0, 3.0]] * 2)
    meta = {0: (x.shape, F64), 1: ((2, 2, 2), F64), 2: ((8,), F64)}
    got = direct_calls(steps, meta, prims)
    assert [s[1] for s in got] == [np.ndarray.take, np.ndarray.reshape, _joined]
    want = run(steps, {0: x})
    for k, v in run(got, {0: x}).items():
        np.testing.assert_array_equal(v, want[k])
        assert v.shape == want[k].shape and v.dtype == want[k].dtype
    # a gather from a value as large as rules/indexing.py's rotation, or of a value without notes: as it was
    assert _TAKE_BELOW <= _ROTATE_FROM
    assert direct_calls(steps[:1], {0: ((2, _TAKE_BELOW), F64)}, prims) == steps[:1]
    assert direct_calls(steps, {}, prims) == steps
    assert direct_calls(steps[1:2], {1: ((), F64)}, prims) == steps[1:2]  # (maybe a NumPy scalar: no ndarray.reshape)
