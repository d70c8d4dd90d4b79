"""A record_once replay's glue (replay/record_once.py, replays.py, replay_trace.py): the objects a steady
call makes around its compiled forward replay, made field by field without the general paths, must
hold what those paths made: every field of a trace, the inputs and outputs as recorded, each check."""

from __future__ import annotations

import numpy as np
import pytest

import jaccli
from jaccli.engine import Trace
from jaccli.replay.replay_trace import ReplayTrace


def _steady(f, x, calls=4):
    g = jaccli.record_once(f)
    for k in range(calls):
        J = jaccli.jacobian(g, x + k)
        [np.asarray(b) for b in (J if isinstance(J, tuple) else (J,))]
    return g


def test_a_replay_trace_holds_every_field_of_a_trace_and_makes_its_nodes_only_when_read():
    g = _steady(lambda x: np.sin(x) * x, np.linspace(0.1, 1.0, 5))
    rec = g.replayed(("f",), np.linspace(0.2, 2.0, 5), "jacobian's checks passed")
    assert rec is not None and type(rec.trace) is ReplayTrace
    trace = rec.trace
    fresh = Trace()
    for name in Trace.__slots__:
        if name in ("nodes", "inputs"):
            continue
        getattr(trace, name)  # set by ReplayTrace.__init__ (an AttributeError otherwise)
        if name not in ("level", "shared_plans", "largest", "errstates", "cuts", "guards"):
            assert getattr(trace, name) == getattr(fresh, name), name
    assert trace._pending is not None  # (no node made by reading those)
    assert trace.level not in (fresh.level, g.replayed(("f",), np.ones(5), "jacobian's checks passed").trace.level)
    nodes = trace.nodes
    assert trace._pending is None and [n.value is v for n, v in zip(nodes, trace.values())] == [True] * len(nodes)
    assert trace.inputs[0] is nodes[0] and np.array_equal(nodes[0].value, np.linspace(0.2, 2.0, 5))


@pytest.mark.parametrize("case", ["one", "tuple", "item of a tuple", "constant"])
def test_a_replays_inputs_and_outputs_are_its_own_values(case):
    def f(x):
        if case == "one":
            return np.exp(x)
        if case == "tuple":
            return np.exp(x), x * 2.0
        if case == "item of a tuple":
            return np.linalg.eigh(np.outer(x, x) + np.eye(x.size))[0]
        return np.exp(x), np.arange(3.0)
    x0 = np.linspace(0.1, 0.5, 4)
    g = _steady(f, x0)
    for x in (np.linspace(-1.0, 1.0, 4), np.array([0.5, 0.25, 2.0, 3.0])):
        rec = g.replayed(("f",), x, "jacobian's checks passed")
        assert rec is not None
        assert rec.inputs[0] is not x and np.array_equal(rec.inputs[0], x)
        want = f(x)
        want = want if isinstance(want, tuple) else (want,)
        assert len(rec.outputs) == len(want)
        for got, w in zip(rec.outputs, want):
            assert type(got) is np.ndarray and np.array_equal(got, w)
        if case == "constant":  # (the caller's own copy of a constant output, each call)
            assert rec.outputs[1] is not g.replayed(("f",), x, "jacobian's checks passed").outputs[1]
        J = jaccli.jacobian(g, x)
        J = J if isinstance(J, tuple) else (J,)
        assert np.array_equal(np.asarray(J[0]), np.asarray(jaccli.jacobian(f, x) if case in ("one", "item of a tuple")
                                                          else jaccli.jacobian(f, x)[0]))


def test_a_steady_call_refuses_another_shape_dtype_or_error_state():
    g = _steady(lambda x: np.sin(x) * x, np.linspace(0.1, 1.0, 5))
    checked = "jacobian's checks passed"
    assert g.replayed(("f",), np.ones(5), checked) is not None
    assert g.replayed(("f",), np.ones(6), checked) is None  # (no recording of that shape)
    rec = next(iter(g._cache.values()))
    assert rec.replay((np.ones(6),)) is None
    assert rec.replay((np.ones(5, np.float32),)) is None
    assert rec.replay((np.ones(5), np.ones(5))) is None
    with np.errstate(over="raise"):
        assert g.replayed(("f",), np.ones(5), checked) is None
    assert g.replayed(("f",), np.ones(5), "hessian's checks passed") is None
    before = g.replays
    assert g.replayed(("f",), np.ones(5), checked) is not None and g.replays == before + 1
    assert len(g._cache) == 1


def test_a_programs_error_state_is_made_on_top_of_the_callers_whichever_was_entered_last():
    # guards._made keeps the last (caller's state, state, made) first: a change of the caller's state
    # between two programs (or a state dict of equal contents but another object) makes its own
    from jaccli.replay import guards
    if guards._EXTOBJ is None:  # pragma: no cover - NumPy < 2
        pytest.skip("NumPy < 2 enters np.errstate")
    state = {"over": "ignore", "invalid": "ignore"}
    for outer in ({}, {"divide": "raise"}, {}, {"divide": "raise", "under": "warn"}, {"divide": "raise"}):
        for s in (state, dict(state), state):
            with np.errstate(**outer):
                with np.errstate(**s):
                    want = np.geterr()
                token = guards.state_entered(s, None)
                try:
                    got = np.geterr()
                finally:
                    guards.leave_state(token)
                assert got == want and np.geterr() != want
