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
from tests.test_replay import softmax_ce, softmax_hessian
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
    assert [s[0] for s in got] == [3, 4, 5, 6]
    assert [s[3] for s in got] == [((0, 0, None),), ((1, 0, None),), ((0, 4, None), (1, 0, None)), ((0, 3, None),)]
    # (result 3 was an array of its own, the reshape of a product: now a view of loaded 0, so it is copied)
    assert got[-1][1] is np.ndarray.copy and results == [("slot", 5, None), ("slot", 6, None)]


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


def test_a_steady_softmax_hessian_program_makes_no_copy_that_changes_no_number():
    # issue 44, item 4 (P6): a third of its sweep's steps gave back what they were given: a chain of four
    # reshapes, a gather of every position in order, a concatenation of one piece and one with an empty one
    from jaccli.engine.rules.indexing import gather
    from jaccli.engine.rules.joining import concat

    g = jaccli.record_once(softmax_ce)
    for z in np.random.default_rng(11).normal(size=(9, 40)):
        H = np.asarray(jaccli.hessian(g, z))
        np.testing.assert_array_equal(H, H.T)
        np.testing.assert_allclose(H, np.asarray(jaccli.hessian(softmax_ce, z)), rtol=1e-14, atol=1e-17)
        np.testing.assert_allclose(H, softmax_hessian(z), rtol=1e-12, atol=1e-15)
    fn = _program(g).fn
    assert [_calls_of(fn, p.impl) for p in (gather, concat)] == [0, 0]
    from jaccli.replay.guards import same
    assert _calls_of(fn, same) == 0  # (its factor's check gives np.True_: compared by identity, 3 us)
    from jaccli.engine.rules.reductions import max_
    from jaccli.engine.rules.shape import broadcast_to
    run = next(iter(g._cache.values()))._forward[0].run
    assert _calls_of(run, max_.impl) == _calls_of(run, broadcast_to.impl) == 0  # (NumPy's wrappers: 1 and 1.8 us)
    from jaccli.engine.rules.indexing import get_basic
    assert _calls_of(run, get_basic.impl) == 0  # (z[3]: one entry, NumPy's scalar, by operator.getitem)
    assert _calls_of(fn, reshape.impl) + _calls_of(fn, np.ndarray.reshape) == 4  # (before: 6, and 2 gathers, 3 joins)
    # its sum of an (n, 1) block over the axis of one entry is NumPy's reduction, not the primitive's Python
    # function around it; a factor's checks finite and nonzero are one all_hold, not two calls (the nonzero one
    # gives np.True_ for a NumPy scalar): the predicates are read as all_hold's arguments only
    from jaccli.engine import all_finite as _all_finite, no_zero as _no_zero
    from jaccli.engine.rules.reductions import sum_
    from jaccli.replay.guards import all_hold
    from jaccli.replay.program_passes import _REDUCED
    assert _calls_of(fn, sum_.impl) == 0 and _calls_of(fn, _REDUCED["np.sum"]) == 1
    assert _calls_of(fn, all_hold) == 2 and _calls_of(fn, _all_finite) == _calls_of(fn, _no_zero) == 2


def test_reshape_chains_gathers_in_order_and_joins_of_one_piece_are_reshapes_or_nothing():
    from jaccli.engine.rules.indexing import gather
    from jaccli.engine.rules.joining import concat

    meta = {0: ((6,), F64), 1: ((6, 1), F64), 2: ((6, 1, 1), F64), 3: ((2, 3), F64), 4: ((6, 1), F64),
            5: ((6, 0), F64), 6: ((6, 1), F64), 7: ((6, 1), F64), 8: ((6, 1), F64)}
    steps = [_step(1, reshape.impl, ("slot", 0), (6, 1)),
             _step(2, reshape.impl, ("slot", 1), (6, 1, 1)),
             _step(3, reshape.impl, ("slot", 2), (2, 3)),
             _step(4, gather.impl, ("slot", 0), np.arange(6).reshape(6, 1)),
             _step(5, gather.impl, ("slot", 0), np.zeros((6, 0), dtype=np.int64)),
             _step(6, np.negative, ("slot", 4)),
             _step(7, concat.impl, ("slot", 5), ("slot", 6)),
             _step(8, concat.impl, ("slot", 7))]
    for st, axis in ((6, 1), (7, 1)):
        steps[st] = steps[st][:4] + ({"axis": axis},) + steps[st][5:]
    prims = {1: reshape, 2: reshape, 3: reshape, 4: gather, 5: gather, 7: concat, 8: concat}
    loads = {0: ("vals", 0)}
    got, results = without_reshapes(steps, [("slot", 3, None), ("slot", 8, None)], meta, prims, loads)
    # 3 is x reshaped at once (a view of loaded x, as it was); 4 is x reshaped, 6 its negative, and the
    # joins give 6 itself (an array of its own, as the join's was); the empty gather is gone
    assert [(s[0], s[1], s[2][1:], s[3]) for s in got] == [
        (3, np.ndarray.reshape, ((2, 3),), ((0, 0, None),)),
        (4, np.ndarray.reshape, ((6, 1),), ((0, 0, None),)),
        (6, np.negative, (), ((0, 4, None),))]
    assert results == [("slot", 3, None), ("slot", 6, None)] and loads == {0: ("vals", 0)}
    x = np.arange(6.0)
    assert np.shares_memory(x.reshape(2, 3), x)


def test_a_result_made_afresh_stays_an_array_of_its_own():
    from jaccli.engine.rules.joining import concat

    meta = {0: ((3,), F64), 1: ((3,), F64), 2: ((1, 3), F64), 3: ((3,), F64), 4: ((3,), F64)}
    steps = [_step(1, concat.impl, ("slot", 0)), _step(2, reshape.impl, ("slot", 1), (1, 3)),
             _step(3, np.negative, ("slot", 0)), _step(4, concat.impl, ("slot", 3))]
    for st in (0, 3):
        steps[st] = steps[st][:4] + ({"axis": 0},) + steps[st][5:]
    prims = {1: concat, 2: reshape, 4: concat}
    got, results = without_reshapes(steps, [("slot", 2, None), ("slot", 3, None), ("slot", 4, None)], meta, prims)
    # 2 was a view of a join's copy: a reshape of loaded 0 now, copied; 3 and 4 were two arrays: still two
    assert [s[0] for s in got] == [2, 3, 4, 5]  # (4: a slot no step makes any more)
    assert [s[1] for s in got] == [np.ndarray.reshape, np.negative, np.ndarray.copy, np.ndarray.copy]
    assert [s[3] for s in got[2:]] == [((0, 2, None),), ((0, 3, None),)]
    assert results == [("slot", 4, None), ("slot", 3, None), ("slot", 5, None)]


def test_a_value_the_replay_finds_finite_is_not_checked_again_by_the_program(recwarn):
    # issue 44, item 4: P6's exponentials were checked for finiteness by its replay and by its sweep on every call
    from jaccli.replay.guards import found_finite

    g = jaccli.record_once(lambda z: np.log(np.sum(np.exp(z))) - z[3])
    z = np.linspace(-1, 1, 6)
    for k in range(8):
        np.asarray(jaccli.hessian(g, z + 0.01 * k))
    rec = next(iter(g._cache.values()))
    prog, finite = _program(g), found_finite(rec.guards)
    assert finite
    vals = list(rec.replay((z,)).trace.values())
    seeds = next(s for s in rec.structure.values() if type(s).__name__ == "Steady").ran[2]
    assert prog.run(vals, seeds) is not None
    for slot in finite:  # (the program runs on a replay's values only, which the replay checked)
        vals[slot] = np.where(np.arange(np.size(vals[slot])) == 1, np.inf, vals[slot]).reshape(np.shape(vals[slot]))
    assert prog.run(vals, seeds) is not None
    # ... and a point where one is not finite fails the replay's guard: f is recorded afresh, as a plain call
    y = z.copy()
    y[2] = 800.0
    with pytest.warns(RuntimeWarning, match="overflow"):
        H = np.asarray(jaccli.hessian(g, y))
    np.testing.assert_array_equal(H, np.asarray(jaccli.hessian(g.__wrapped__, y)))
    assert g.misses == 1


def test_a_guard_that_expects_a_numpy_bool_is_checked_as_same_checks_it():
    from jaccli.replay.codegen import compile_steps

    for expected, holds, fails in ((np.True_, np.float64(1.0), np.float64(-1.0)), (np.False_, np.float64(-1.0), np.float64(1.0))):
        steps = [(-1, lambda v: v > 0, (None,), ((0, 0, None),), {}, None, expected)]
        run = compile_steps(steps, {0: ("vals", 0)}, [("slot", 0, None)])
        assert run([holds]) == [holds] and run([fails]) is None
        assert run([float(holds)]) is None  # (a Python bool is not NumPy's, as for `same`)


def test_a_replays_broadcast_is_numpys():
    from jaccli.replay.program_passes import _broadcast, _broadcast_strides

    for x, shape in ((np.array([2.0]), (1, 5)), (np.arange(6.0).reshape(2, 1, 3), (4, 2, 5, 3)),
                     (np.arange(3, dtype=np.float32), (2, 3)), (np.ones((2, 3)), (2, 3))):
        want, got = np.broadcast_to(x, shape), _broadcast(x, shape, _broadcast_strides(x, shape), x.strides)
        assert got.shape == want.shape and got.strides == want.strides and got.dtype == want.dtype
        assert not got.flags.writeable and np.shares_memory(got, x)
        np.testing.assert_array_equal(got, want)
    laid_out = np.arange(6.0).reshape(2, 3)
    y = np.arange(12.0).reshape(2, 6)[:, ::2]  # (not laid out as recorded: NumPy's broadcast_to makes it)
    got = _broadcast(y, (4, 2, 3), _broadcast_strides(laid_out, (4, 2, 3)), laid_out.strides)
    np.testing.assert_array_equal(got, np.broadcast_to(y, (4, 2, 3)))
    assert got.strides == np.broadcast_to(y, (4, 2, 3)).strides


def test_a_sweeps_reductions_are_numpys_own_calls():
    from jaccli.engine.rules.reductions import max_, min_, sum_
    from jaccli.replay.program_passes import direct_calls

    x = np.random.default_rng(4).standard_normal((3, 4))
    x[0, 1] = -0.0
    for prim in (sum_, max_, min_):
        for axes, keepdims in (((1,), False), ((0, 1), True)):
            steps = [_step(1, prim.impl, ("slot", 0), axes, keepdims)]
            (step,) = direct_calls(steps, {0: ((3, 4), F64)}, {1: prim})
            assert step[1] is not prim.impl
            got = step[1](*((x,) + step[2][1:]))
            want = prim.impl(x, axes, keepdims)
            assert got.shape == want.shape and np.array_equal(got.view(np.int64), want.view(np.int64))
            # (maybe a NumPy scalar, or a value without notes: as it was)
            assert direct_calls(steps, {0: ((), F64)}, {1: prim}) == steps == direct_calls(steps, {}, {1: prim})
