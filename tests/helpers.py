"""Independent references and small test doubles shared by the test modules."""

from __future__ import annotations

import numpy as np


def central_diff(f, x, h=1e-6):
    """Dense out.shape + in.shape Jacobian of f at x by central differences (float64)."""
    x = np.asarray(x, dtype=float)
    cols = []
    for k in range(x.size):
        e = np.zeros(x.size)
        e[k] = h
        e = e.reshape(x.shape)
        cols.append((np.asarray(f(x + e)) - np.asarray(f(x - e))) / (2 * h))
    return np.stack(cols, axis=-1).reshape(np.shape(f(x)) + x.shape)


def rosenbrock(x):
    """The Rosenbrock function of P3."""
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def rosen_hess(x):
    """Closed-form Hessian of `rosenbrock` (tridiagonal)."""
    n = x.size
    H = np.zeros((n, n))
    i = np.arange(n - 1)
    H[i, i] += 1200 * x[:-1] ** 2 - 400 * x[1:] + 2
    H[i + 1, i + 1] += 200
    H[i, i + 1] = H[i + 1, i] = -400 * x[:-1]
    return H


def refused_as_numpy_refuses(call, x, traced, errors=ValueError):
    """call(x) raises one of `errors` in NumPy; traced(call, x) raises the same type with NumPy's message."""
    import pytest

    with pytest.raises(errors) as numpy_error:
        call(x)
    with pytest.raises(type(numpy_error.value)) as traced_error:
        traced(call, x)
    assert str(traced_error.value) == str(numpy_error.value)


def break_sin_away_from_zero(monkeypatch):
    """A wrong rule for np.sin in both modes, right at 0 only: d sin(x) = cos(x) * (1 + x)."""
    from jaccli.engine.registry import PRIMITIVES

    monkeypatch.setitem(PRIMITIVES["np.sin"].vjps, 0, lambda ans, x, **kw: (lambda g: g * np.cos(x) * (1.0 + x)))
    monkeypatch.setitem(PRIMITIVES["np.sin"].jvps, 0, lambda ans, x, **kw: (lambda t: t * np.cos(x) * (1.0 + x)))


def scale_recovered_column(monkeypatch, column: int, factor: float = 1.5):
    """Sparse recovery that scales the entries of one column: values wrong where J v and v^T J can tell."""
    from jaccli.sparse.recovery import Plan

    recover = Plan.recover

    def wrong(self, *products):
        J = recover(self, *products)
        J.data[J.indices == column] *= factor
        return J

    monkeypatch.setattr(Plan, "recover", wrong)


def invoke_recording_error(runner, command, args, **kw):
    """runner.invoke(command, args), with `result.error` the CliError that the command line showed (or None)."""
    from jaccli.cli.commands.failures import CliError

    shown = []
    show = CliError.show

    def recording(self, file=None):
        shown.append(self)
        return show(self, file)

    CliError.show = recording
    try:
        result = runner.invoke(command, args, catch_exceptions=False, **kw)
    finally:
        CliError.show = show
    result.error = shown[-1] if shown else None
    return result


def assert_error(result, kind: str, code: int) -> str:
    """jaccli failed as it does for users: exit `code`, one `Error: ...` line on stderr, of an error of `kind`;
    stdout empty, or (--format json) that error as one JSON object. Returns the message after "Error: ".

    The wording of messages is pinned in test_error_messages.py, not here.
    """
    import json

    assert result.exit_code == code, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
    message = lines[0][len("Error: "):]
    if result.error is not None:
        assert result.error.kind == kind, result.error.kind
    if result.stdout:
        assert json.loads(result.stdout) == {"schema": 1, "error": {"kind": kind, "message": message,
                                                                    "exit_code": code}}, result.stdout
    return message


class Recorder:
    """An observer that keeps what it is told: ("start", phase, total), n for advance(n), "finish"."""

    def __init__(self) -> None:
        self.events: list = []

    def start(self, phase, total):
        self.events.append(("start", phase, total))

    def advance(self, n):
        self.events.append(n)

    def finish(self):
        self.events.append("finish")

    def totals(self) -> list:
        """The events with each run of advances summed: the phases and the work reported in each, without
        the block sizes, which follow how long the first block took (progress.blocks) on the machine."""
        out: list = []
        for e in self.events:
            if isinstance(e, int) and out and isinstance(out[-1], int):
                out[-1] += e
            else:
                out.append(e)
        return out

    def phase(self, name: str) -> list:
        """The events of the first phase called `name`, from its start to its finish."""
        at = next(k for k, e in enumerate(self.events) if isinstance(e, tuple) and e[1] == name)
        return self.events[at:self.events.index("finish", at) + 1]


def densified_blocks(monkeypatch) -> list:
    """The shapes of the structured seed blocks made dense from now on in this test (SparseBlock.todense
    counted, still called): tests that a sweep keeps its blocks structured, or densifies them once."""
    from jaccli.engine import seeds

    made: list = []
    todense = seeds.SparseBlock.todense

    def counted(block, *order):
        made.append(block.shape)
        return todense(block, *order)

    monkeypatch.setattr(seeds.SparseBlock, "todense", counted)
    return made


def constructions(monkeypatch, cls: type) -> list:
    """One entry per instance of `cls` made from now on in this test (its __init__ counted, still called)."""
    made: list = []
    init = cls.__init__

    def counted(self, *args, **kwargs):
        made.append(1)
        init(self, *args, **kwargs)

    monkeypatch.setattr(cls, "__init__", counted)
    return made
