"""One table, one check, every primitive: rules against central differences, to any order."""

from __future__ import annotations

import importlib
import pkgutil

import numpy as np
import pytest

import tests.rule_cases as rule_cases
from jaccli.engine.recording import Recording
from jaccli.engine.registry import PRIMITIVES, REGISTRY

CASES = []
for _info in pkgutil.iter_modules(rule_cases.__path__):
    CASES.extend(importlib.import_module(f"tests.rule_cases.{_info.name}").CASES)

H = 1e-6


def _perturbed(case, us, h):
    args = list(case.args)
    for j, u in zip(case.wrt, us):
        args[j] = args[j] + h * u
    return args


def _fd(fun, case, us):
    """Central difference of fun along the directions us (one per differentiated input)."""
    plus = fun(*_perturbed(case, us, H))
    minus = fun(*_perturbed(case, us, -H))
    return (np.asarray(plus) - np.asarray(minus)) / (2 * H)


def _directions(case, rng):
    return [rng.standard_normal(np.shape(case.args[j])) for j in case.wrt]


def _grad_fn(fun, case, v):
    """x -> gradient of <v, fun(x)>, itself recorded when x is traced (the rule of the rule)."""
    def grad(*args):
        rec = Recording(fun, args, case.wrt)
        out = rec.vjp([np.asarray(v)[None]])
        parts = [np.zeros((1,) + np.shape(case.args[j])) if g is None else g for j, g in zip(case.wrt, out)]
        return np.concatenate([np.reshape(g, (-1,)) for g in parts])
    return grad


def _check_first_order(fun, case, rng, rtol, atol):
    rec = Recording(fun, case.args, case.wrt)
    out = np.asarray(rec.outputs[0])
    us = _directions(case, rng)
    fd = _fd(fun, case, us)
    # a row outside its function's domain would compare NaN with NaN, which assert_allclose passes
    assert np.isfinite(fd).all(), f"{case}: the finite differences are not finite at the row's inputs"
    # forward: J u
    jv = rec.jvp([u[None] for u in us])[0]
    jv = np.zeros_like(fd) if jv is None else np.asarray(jv)[0]
    np.testing.assert_allclose(jv, fd, rtol=rtol, atol=atol, err_msg=f"{case}: forward rule")
    # reverse: <v, J u> == <J^T v, u>
    v = rng.standard_normal(out.shape)
    vj = rec.vjp([v[None]])
    lhs = sum(0.0 if g is None else float(np.sum(np.asarray(g)[0] * u)) for g, u in zip(vj, us))
    np.testing.assert_allclose(lhs, float(np.sum(v * fd)), rtol=rtol, atol=atol, err_msg=f"{case}: reverse rule")
    return rec, out


def _check_blocks(case, rec, out, rng):
    k = 3
    vs = rng.standard_normal((k,) + out.shape)
    block = rec.vjp([vs])
    for i in range(k):
        single = rec.vjp([vs[i:i + 1]])
        for b, s in zip(block, single):
            if b is None:
                assert s is None
                continue
            np.testing.assert_allclose(np.asarray(b)[i], np.asarray(s)[0], rtol=1e-12, atol=1e-12,
                                       err_msg=f"{case}: reverse block of {k} != {k} single seeds")
    ts = [rng.standard_normal((k,) + np.shape(case.args[j])) for j in case.wrt]
    block = rec.jvp(ts)[0]
    for i in range(k):
        single = rec.jvp([t[i:i + 1] for t in ts])[0]
        np.testing.assert_allclose(np.asarray(block)[i], np.asarray(single)[0], rtol=1e-12, atol=1e-12,
                                   err_msg=f"{case}: forward block of {k} != {k} single seeds")


@pytest.mark.parametrize("case", CASES, ids=str)
def test_rule_matches_central_differences(case, rng):
    rec, out = _check_first_order(case.fn, case, rng, case.rtol, case.atol)
    _check_blocks(case, rec, out, rng)


@pytest.mark.parametrize("case", [c for c in CASES if c.order >= 2], ids=str)
def test_rule_of_the_rule_matches_central_differences(case, rng):
    v = rng.standard_normal(np.shape(case.fn(*case.args)))
    grad = _grad_fn(case.fn, case, v)
    us = _directions(case, rng)
    fd = _fd(grad, case, us)
    rec = Recording(grad, case.args, case.wrt)
    tol = dict(rtol=max(case.rtol, 1e-5), atol=max(case.atol, 1e-6))
    hv = rec.jvp([u[None] for u in us])[0]  # forward over reverse
    hv = np.zeros_like(fd) if hv is None else np.asarray(hv)[0]
    np.testing.assert_allclose(hv, fd, err_msg=f"{case}: forward-over-reverse", **tol)
    w = rng.standard_normal(fd.shape)
    wh = rec.vjp([w[None]])  # reverse over reverse
    lhs = sum(0.0 if g is None else float(np.sum(np.asarray(g)[0] * u)) for g, u in zip(wh, us))
    np.testing.assert_allclose(lhs, float(np.sum(w * fd)), err_msg=f"{case}: reverse-over-reverse", **tol)


@pytest.mark.parametrize("case", [c for c in CASES if c.order >= 3], ids=str)
def test_third_derivative_matches_central_differences(case, rng):
    v = rng.standard_normal(np.shape(case.fn(*case.args)))
    grad = _grad_fn(case.fn, case, v)
    u1 = _directions(case, rng)

    def hvp(*args):
        rec = Recording(grad, args, case.wrt)
        hv = rec.jvp([u[None] for u in u1])[0]
        return np.zeros(sum(np.size(case.args[j]) for j in case.wrt)) if hv is None else hv[0]

    us = _directions(case, rng)
    fd = _fd(hvp, case, us)
    rec = Recording(hvp, case.args, case.wrt)
    third = rec.jvp([u[None] for u in us])[0]
    third = np.zeros_like(fd) if third is None else np.asarray(third)[0]
    np.testing.assert_allclose(third, fd, rtol=1e-4, atol=1e-5, err_msg=f"{case}: third derivative")


def _differentiable_entries():
    return sorted(name for name, e in REGISTRY.items() if e.kind != "nondiff")


def test_every_registered_function_has_a_table_row():
    covered = {name for case in CASES for name in case.names}
    missing = [name for name in _differentiable_entries() if name not in covered]
    assert not missing, f"registered functions without a row in tests/rule_cases: {missing}"


def test_every_primitive_is_exercised_by_the_table(rng):
    used = set()
    for case in CASES:
        v = np.ones(np.shape(case.fn(*case.args)))
        rec = Recording(_grad_fn(case.fn, case, v), case.args, case.wrt)
        used.update(node.prim.name for node in rec.trace.nodes)
        inner = Recording(case.fn, case.args, case.wrt)
        used.update(node.prim.name for node in inner.trace.nodes)
    missing = sorted(name for name, p in PRIMITIVES.items() if not p.nondiff and name not in used)
    assert not missing, f"primitives no table row reaches: {missing}"


def test_sinc_derivatives_near_0_are_accurate_to_rounding():
    # Before: the closed form (cos(pi x) - sinc(x)) / x cancels near 0: sinc'' came out 0 at x = 0
    # and -5.4 at 1e-8 (-pi^2/3 = -3.29), sinc' 33% off at 1e-8.
    import math

    import jaccli

    x = np.array([0.0, 1e-10, -1e-8, 1e-6, -1e-3, 0.02, 0.0999, 0.1, -0.1001, 0.3])
    k = np.arange(1, 25)[:, None]  # the Taylor series, a reference independent of the rule's 7 terms
    coef = (-1.0) ** k * np.pi ** (2 * k) / np.array([float(math.factorial(2 * int(i) + 1)) for i in k.ravel()])[:, None]
    d1 = np.sum(coef * 2 * k * x ** (2 * k - 1), axis=0)
    d2 = np.sum(coef * 2 * k * (2 * k - 1) * x ** (2 * k - 2), axis=0)
    np.testing.assert_allclose(np.diag(np.asarray(jaccli.jacobian(np.sinc, x))), d1, rtol=1e-13, atol=1e-300)
    np.testing.assert_allclose(np.diag(np.asarray(jaccli.hessian(lambda x: np.sinc(x).sum(), x))), d2, rtol=1e-13)


@pytest.mark.parametrize("kw", [{"dtype": np.float32}, {"signature": (None, None, np.float32)}, {}],
                         ids=["dtype", "signature", "none"])
def test_heaviside_of_a_traced_x2_has_numpys_dtype_for_its_kwargs(kw):
    # Before: dtype= reached only the step, and np.where promoted it with x2: float64, not float32
    import jaccli

    x1, x2 = np.array([0.0, 1.0, -2.0, 0.0]), np.array([0.5, 0.2, 0.3, -0.7])
    want = np.heaviside(x1, x2, **kw)
    value, grad = jaccli.vjp(lambda v: np.heaviside(x1, v, **kw), x2, np.ones(4))
    assert value.dtype == want.dtype
    np.testing.assert_array_equal(value, want)
    np.testing.assert_allclose(grad, [1.0, 0.0, 0.0, 1.0])  # x2 itself where x1 == 0
    with pytest.raises(TypeError):  # float64 x2 into a float32 loop, as NumPy refuses it
        jaccli.vjp(lambda v: np.heaviside(x1.astype(np.float32), v, dtype=np.float32, casting="safe"), x2, np.ones(4))
