"""-e expressions have a bounded cost: sizes and work told from shapes before each operation, and a time limit."""

from __future__ import annotations

import ast
import subprocess
import time
import tracemalloc

import numpy as np
import pytest

from jaccli.errors import UsageError
from jaccli.expr import cost, evaluation
from jaccli.expr.budget import Budget
from jaccli.expr.expression import compile_expression

from .test_cli_subprocess import JACCLI, clean_env

X = np.array([0.5, 1.0, 1.5])


def nested(function: str, inner: str, times: int, extra: str) -> str:
    text = inner
    for _ in range(times):
        text = f"{function}({text}, {extra})"
    return text


DIAG = "sum(diag(x, 15000))"
KRON = f"sum({nested('kron', 'x', 16, 'x')})"
MATMUL = f"sum({nested('matmul', 'diag(x, 5000) + 1.0', 4, 'diag(x, 5000) + 1.0')})"
SMALLER_MATMUL = f"sum({nested('matmul', 'diag(x, 2000) + 1.0', 4, 'diag(x, 2000) + 1.0')})"


@pytest.mark.parametrize(("text", "named"), [(DIAG, "diag(x, 15000)"), (KRON, "kron(...)"), (MATMUL, "diag(x, 5000)"),
                                             (SMALLER_MATMUL, "matmul(diag(x, 2000) + 1.0, diag(x, 2000) + 1.0)")])
def test_the_issues_expressions_are_refused_before_the_costly_operation_runs(text, named, monkeypatch):
    """Not timed (the machine is shared): every operation is guarded, and reaching one that the meter
    has not let through first fails the test; what each operation made and the work let through are
    counted against the budget."""
    f = compile_expression(text)
    budget = f.budget
    evaluating: list[ast.AST] = []  # the nodes being evaluated, innermost last
    let_through: dict[ast.AST, int] = {}  # node -> the work the meter charged for it before it ran
    made: list[int] = []  # elements of each array an operation made
    real_evaluate, real_charge, real_call_cost = evaluation.evaluate, cost.Meter.charge, evaluation.call_cost

    def tracked(node, *rest):
        evaluating.append(node)
        try:
            return real_evaluate(node, *rest)
        finally:
            evaluating.pop()

    def charge(meter, node, spent):
        real_charge(meter, node, spent)
        let_through[node] = spent[1]

    def guarded(operation):
        def run(*args, **kwargs):
            node = evaluating[-1]
            if node not in let_through:
                raise AssertionError(f"{ast.unparse(node)} ran before the meter let it through")
            value = operation(*args, **kwargs)
            made.append(int(np.size(value)))
            return value

        run.__wrapped__ = operation
        return run

    monkeypatch.setattr(evaluation, "evaluate", tracked)  # (the recursion goes through the module's name too)
    monkeypatch.setattr(cost.Meter, "charge", charge)
    monkeypatch.setattr(evaluation, "BINARY", {op: guarded(run) for op, run in evaluation.BINARY.items()})
    # An operation's cost is looked up by the function itself: the guard's, by what it guards.
    monkeypatch.setattr(evaluation, "call_cost", lambda run, *rest: real_call_cost(getattr(run, "__wrapped__", run),
                                                                                    *rest))
    calls = [node for node in ast.walk(f._body) if isinstance(node, ast.Call)]
    monkeypatch.setattr(f, "_resolved", {**f._resolved, **{node: guarded(f._resolved[node]) for node in calls}})
    tracemalloc.start()
    try:
        with pytest.raises(UsageError) as refused:
            f(X)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert str(refused.value).startswith(f"expression: {named} would ")  # told from shapes, not from the clock
    assert "\n" not in str(refused.value)
    assert max(made, default=0) <= budget.max_elements  # no array beyond the budget was made
    assert sum(let_through.values()) <= budget.max_work  # nor more work done than it allows
    assert peak < 200 * 2**20, peak


@pytest.mark.parametrize("text", [DIAG, KRON, SMALLER_MATMUL])
def test_the_command_line_refuses_them_with_exit_2_and_one_line(tmp_path, text):
    # (no wall-clock bound here: a process's start under load is no measure of the refusal, which the test
    # above shows comes from the shapes, before any array beyond the budget is made)
    done = subprocess.run([*JACCLI, "jacobian", "-e", text, "x=[0.5, 1.0, 1.5]"], capture_output=True, text=True,
                          timeout=60, cwd=tmp_path, env=clean_env())
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "expression: " in done.stderr
    assert "--expr-max-" in done.stderr


def test_the_work_of_the_matmul_operator_counts(tmp_path):
    f = compile_expression("sum((diag(x, 1200) + 1.0) @ (diag(x, 1200) + 1.0))")
    with pytest.raises(UsageError):
        f(X)


def test_the_limits_are_options_of_the_command_line(tmp_path):
    def run(*options: str) -> subprocess.CompletedProcess:
        return subprocess.run([*JACCLI, "grad", "-e", "sum(diag(x, 1000))", "x=[0.5, 1.0, 1.5]", *options],
                              capture_output=True, text=True, timeout=60, cwd=tmp_path, env=clean_env())

    assert run().returncode == 0
    refused = run("--expr-max-elements", "1e6")
    assert refused.returncode == 2 and "more than the 1,000,000 an expression may" in refused.stderr
    assert run("--expr-max-elements", "1e6", "--expr-max-elements", "inf").returncode == 0
    refused = run("--expr-max-work", "1000")
    assert refused.returncode == 2 and "--expr-max-work" in refused.stderr


def test_a_budget_given_to_compile_expression():
    f = compile_expression("sum(outer(x, x))", budget=Budget(max_elements=8))
    with pytest.raises(UsageError):
        f(X)
    assert float(compile_expression("sum(outer(x, x))", budget=Budget(max_elements=9))(X)) == pytest.approx(9.0)


def test_options_given_by_keyword_are_counted_as_well():
    with pytest.raises(UsageError):
        compile_expression("sum(diag(x, k=20000))")(X)
    assert cost.call_cost(np.linalg.qr, [np.ones((5, 2))], {"mode": "complete"}) == ((25, 50), True)


def test_the_evaluation_has_a_time_limit(monkeypatch):
    f = compile_expression("sin(x) + cos(x) + exp(x)", budget=Budget(seconds=5.0))
    clock = iter([100.0, 101.0, 106.0, 107.0, 108.0])  # the start, then before each operation
    monkeypatch.setattr(cost.time, "monotonic", lambda: next(clock))
    with pytest.raises(UsageError):
        f(X)


@pytest.mark.parametrize(("text", "args"), [
    ("diag(a, 2)", [(4,)]), ("diag(a, k=3)", [(4,)]), ("diag(a)", [(4, 3)]), ("linalg.svd(a, full_matrices=True)", [(2, 5)]), ("tril(a)", [(5,)]), ("triu(a, 1)", [(4, 3)]),
    ("kron(a, b)", [(2, 3), (4,)]), ("outer(a, b)", [(2, 3), (4,)]), ("matmul(a, b)", [(2, 4, 3), (3, 5)]),
    ("a @ b", [(3,), (3, 2)]), ("dot(a, b)", [(2, 4, 3), (5, 3, 2)]), ("dot(a, b)", [(4, 3), (3,)]),
    ("inner(a, b)", [(2, 3), (4, 3)]), ("tensordot(a, b)", [(2, 4, 3), (4, 3, 5)]),
    ("tensordot(a, b, 0)", [(2, 3), (4,)]), ("tensordot(a, b, ([0], [1]))", [(3, 2), (4, 3)]),
    ("einsum('ij,jk->ik', a, b)", [(2, 3), (3, 4)]), ("einsum('i,j', a, b)", [(2,), (5,)]),
    ("einsum('...i,...i->...', a, b)", [(4, 3), (4, 3)]), ("linalg.svd(a)", [(2, 5)]),
    ("linalg.qr(a, mode='complete')", [(5, 2)]), ("linalg.inv(a)", [(2, 3, 3)]), ("stack([a, b])", [(3,), (3,)]),
    ("concatenate((a, b))", [(3,), (4,)]), ("reshape(a, (3, 1)) * b", [(3,), (4,)]), ("where(a > 0, a, b)", [(4, 1), (3,)]),
])  # fmt: skip
def test_the_estimate_is_at_least_what_numpy_makes(text, args):
    rng = np.random.default_rng(0)
    arrays = [rng.normal(size=shape) for shape in args]
    made: list[int] = []
    real_charge = cost.Meter.charge

    def charge(self, what, estimate):
        made.append(estimate[0])
        return real_charge(self, what, estimate)

    f = compile_expression(text)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(cost.Meter, "charge", charge)
        result = f(*arrays)
    outputs = result if isinstance(result, tuple) else (result,)
    assert max(made) >= max(np.size(out) for out in outputs), (made, [np.shape(out) for out in outputs])
