"""One table, one check, every primitive: rules against central differences, to any order."""

from __future__ import annotations

import importlib
import pickle
import pkgutil
import warnings

import numpy as np
import pytest

import jaccli
import tests.rule_cases as rule_cases
from jaccli.engine.structure import structure_of
from jaccli.engine.recording import Recording
from jaccli.api.recorded_functions import gradient_recording
from jaccli.engine import facts, take_second_order_forms
from jaccli.engine import ELEMENTWISE
from jaccli.engine.registry import PRIMITIVES, REGISTRY
from jaccli.engine.rules import every_rule

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
        if np.isrealobj(inner.outputs[0]):  # a Hessian's gradient, with its second-order forms (abs one-sided)
            hess = gradient_recording(lambda *a, v=v: np.sum(v * case.fn(*a)), case.args, case.wrt, False, False)
            used.update(node.prim.name for node in hess.trace.nodes)
        if np.isrealobj(inner.outputs[0]) and any(n.prim in facts.CREATE_GRAPH_FORMS for n in inner.trace.nodes):
            used.update(_create_graph_forms_used(case, v, inner))
    missing = sorted(name for name, p in PRIMITIVES.items() if not p.nondiff and name not in used)
    assert not missing, f"primitives no table row reaches: {missing}"


def _create_graph_forms_used(case, v, inner) -> set:
    """The primitives a create_graph gradient of <v, fn> records when an enclosing level differentiates
    it: its forms (on its own recording, here `inner`'s) and what their rules record (on the outer one)."""
    take_second_order_forms(inner.trace, create_graph=True)

    def gradient(*args):
        inputs = args if len(case.args) > 1 else args[0]
        return jaccli.vjp(lambda *a: np.sum(v * case.fn(*a)), inputs, np.ones(()), wrt=case.wrt,
                          create_graph=True)[1]
    outer = Recording(gradient, case.args, case.wrt)
    return {node.prim.name for node in inner.trace.nodes + outer.trace.nodes}


def _every_primitive() -> list:
    every_rule()  # SciPy's primitives too (made when a recording first meets scipy.special, .stats, ...)
    return list(PRIMITIVES.values())


def test_every_primitive_declares_how_samples_pass_through_it():
    missing = sorted(p.name for p in _every_primitive() if p not in facts.SAMPLE_RULES)
    assert not missing, f"primitives without a rule or NOT_SEPARABLE in facts.SAMPLE_RULES: {missing}"


def test_every_primitive_has_a_structure():
    missing = sorted(p.name for p in _every_primitive() if structure_of(p) is None)
    assert not missing, f"primitives without a structure in facts.STRUCTURES: {missing}"
    assert set(facts.STRUCTURES) <= set(_every_primitive())


def test_every_elementwise_primitive_declares_its_kink_or_none_and_every_kink_its_crossing():
    prims = _every_primitive()
    missing = sorted(p.name for p in prims if p.structure == ELEMENTWISE and p not in facts.KINK_CROSSINGS)
    assert not missing, f"elementwise primitives without a crossing or NO_KINK in facts.KINK_CROSSINGS: {missing}"
    uncrossed = sorted(p.name for p in prims if p.kink is not None and facts.KINK_CROSSINGS.get(p) is None)
    assert not uncrossed, f"primitives with a kink but no crossing: {uncrossed}"
    maskless = sorted(p.name for p, crossed in facts.KINK_CROSSINGS.items() if crossed is not None and p.kink is None)
    assert not maskless, f"primitives with a crossing but no kink: {maskless}"


def test_the_fact_tables_name_registered_primitives_and_known_forms_only():
    prims = set(_every_primitive())
    for table in (facts.SAMPLE_RULES, facts.KINK_CROSSINGS, facts.SHIFT_FORMS,
                  facts.MATRIX_PRODUCTS, facts.HEAVIER_IN_REVERSE, facts.CONDITION_ARGUMENTS):
        assert set(table) <= prims
    assert set(facts.SHIFT_FORMS.values()) <= facts.FORMS


def test_expressions_call_only_functions_jaccli_differentiates():
    targets = {id(entry.target) for entry in REGISTRY.values()}
    refused = sorted(name for name, function in facts.EXPRESSION_FUNCTIONS.items() if id(function) not in targets)
    assert not refused, f"-e functions without rules: {refused}"


def test_sinc_derivatives_near_0_are_accurate_to_rounding():
    # The closed form (cos(pi x) - sinc(x)) / x cancels near 0.
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
    import jaccli

    x1, x2 = np.array([0.0, 1.0, -2.0, 0.0]), np.array([0.5, 0.2, 0.3, -0.7])
    want = np.heaviside(x1, x2, **kw)
    value, grad = jaccli.vjp(lambda v: np.heaviside(x1, v, **kw), x2, np.ones(4))
    assert value.dtype == want.dtype
    np.testing.assert_array_equal(value, want)
    np.testing.assert_allclose(grad, [1.0, 0.0, 0.0, 1.0])  # x2 itself where x1 == 0
    with pytest.raises(TypeError):  # float64 x2 into a float32 loop, as NumPy refuses it
        jaccli.vjp(lambda v: np.heaviside(x1.astype(np.float32), v, dtype=np.float32, casting="safe"), x2, np.ones(4))


# The rules composed of other operations (and ufunc.outer, the gufuncs), each with the ufunc whose
# kwargs it takes; inputs away from their kinks by more than the difference step.
_SIGNS = np.array([1.0, -1.0, -0.0, 2.0])
_MATRIX = np.arange(16.0).reshape(4, 4) / 7
_COMPOSED = {
    "copysign": (np.copysign, lambda v, **kw: np.copysign(v, _SIGNS, **kw)),
    "copysign-sign": (np.copysign, lambda v, **kw: np.copysign(1.5, v, **kw)),
    "divmod": (np.divmod, lambda v, **kw: np.stack(np.divmod(v, 0.75, **kw))),
    "modf": (np.modf, lambda v, **kw: np.stack(np.modf(v, **kw))),
    "ldexp": (np.ldexp, lambda v, **kw: np.ldexp(v, np.array([2, -3, 0, 5]), **kw)),
    "frexp": (np.frexp, lambda v, **kw: np.frexp(v, **kw)[0]),
    "conjugate": (np.conjugate, lambda v, **kw: np.conjugate(v, **kw)),
    "heaviside": (np.heaviside, lambda v, **kw: np.heaviside(np.array([0.0, 1.0, -2.0, 0.0]), v, **kw)),
    "multiply.outer": (np.multiply, lambda v, **kw: np.multiply.outer(v, _SIGNS, **kw)),
    "vecdot": (np.vecdot, lambda v, **kw: np.vecdot(_MATRIX, v, **kw)),
    "matvec": (np.matvec, lambda v, **kw: np.matvec(_MATRIX, v, **kw)),
}
_UFUNC_KWARGS = {
    "none": lambda uf: {}, "dtype32": lambda uf: {"dtype": np.float32}, "dtype64": lambda uf: {"dtype": np.float64},
    "signature32": lambda uf: {"signature": (None,) * uf.nin + (np.float32,) * uf.nout},
    "safe": lambda uf: {"casting": "safe"}, "safe32": lambda uf: {"dtype": np.float32, "casting": "safe"},
    "no": lambda uf: {"casting": "no"},
}


def _as_numpy_does(fn, x, exact):
    """fn(traced x): NumPy's value, dtype and errors (exactly, or to rounding), derivatives as
    central differences of NumPy's own fn in x's dtype."""
    import jaccli
    from tests.helpers import central_diff

    try:
        want = fn(x)
    except TypeError as refusal:  # NumPy's own error, and only it
        with pytest.raises(type(refusal)) as error:
            jaccli.jacobian(fn, x)
        assert str(error.value) == str(refusal)
        return
    value, _ = jaccli.vjp(fn, x, np.ones(want.shape))
    assert value.dtype == want.dtype
    if exact:
        np.testing.assert_array_equal(value, want)
    else:  # a sum: NumPy's to rounding
        np.testing.assert_allclose(value, want, rtol=4 * np.finfo(np.result_type(want, np.float16)).eps)
    J = np.asarray(jaccli.jacobian(fn, x))
    fd = central_diff(lambda v: fn(v.astype(x.dtype)).astype(np.float64), x, h=1e-2)
    np.testing.assert_allclose(J, fd, rtol=1e-4, atol=1e-4)


_X = np.array([0.4, -1.3, 2.6, -0.2])


@pytest.mark.parametrize("in_dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kwargs", _UFUNC_KWARGS)
@pytest.mark.parametrize("name", _COMPOSED)
def test_composed_ufuncs_take_their_kwargs_as_numpy_does(name, kwargs, in_dtype):
    ufunc, fn = _COMPOSED[name]
    kw = _UFUNC_KWARGS[kwargs](ufunc)
    _as_numpy_does(lambda v: fn(v, **kw), _X.astype(in_dtype), exact=ufunc.signature is None)  # gufuncs: einsums


_METHODS = {
    "maximum.reduce": lambda v, **kw: np.maximum.reduce(v, **kw),
    "minimum.reduce": lambda v, **kw: np.minimum.reduce(v, **kw),
    "logaddexp.reduce": lambda v, **kw: np.logaddexp.reduce(v, **kw),
    "logaddexp2.reduce": lambda v, **kw: np.logaddexp2.reduce(v, **kw),
    "maximum.accumulate": lambda v, **kw: np.maximum.accumulate(v, **kw),
    "minimum.accumulate": lambda v, **kw: np.minimum.accumulate(v, **kw),
    "add.reduceat": lambda v, **kw: np.add.reduceat(v, [0, 2, 1], **kw),
}


@pytest.mark.parametrize("in_dtype", [np.float32, np.float64])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, bool])
@pytest.mark.parametrize("name", _METHODS)
def test_ufunc_methods_compute_in_their_dtype_as_numpy_does(name, dtype, in_dtype):
    fn = _METHODS[name]
    _as_numpy_does(lambda v: fn(v, dtype=dtype), _X.astype(in_dtype), exact="max" in name or "min" in name)


def test_composed_ufuncs_refuse_a_where_mask():
    # NumPy leaves the masked-out entries undefined; the composed rules computed them all, silently
    import jaccli
    from jaccli.errors import UnsupportedOperationError

    x = np.array([0.4, -1.3, 2.6, -0.2])
    for name in ("copysign", "copysign-sign", "divmod", "modf", "frexp", "conjugate", "heaviside"):
        fn = _COMPOSED[name][1]
        with pytest.raises(UnsupportedOperationError):
            jaccli.jacobian(lambda v: fn(v, where=np.array([True, False, True, True])), x)


def test_ldexp_and_frexp_scale_exactly_over_the_whole_exponent_range():
    # A factor 2**x2 made alone overflows (2**130 in float32) or underflows where the scaled value
    # does not.
    import jaccli

    for dtype in (np.float32, np.float64):
        tiny = np.finfo(dtype).smallest_subnormal
        x = np.array([1e-30, 3 * tiny, -tiny, 2.5], dtype=dtype)
        e = np.array([130, 200, -2, -140])
        value, grad = jaccli.vjp(lambda v: np.ldexp(v, e), x, np.ones(4, dtype))
        np.testing.assert_array_equal(value, np.ldexp(x, e))
        with np.errstate(over="ignore"):  # (the reference's own overflow: 2**x2 is inf beyond the dtype)
            np.testing.assert_array_equal(grad, np.ldexp(np.ones(4, dtype), e))
        (mantissa, exponent), grad = jaccli.vjp(lambda v: np.frexp(v), x, (np.ones(4, dtype), np.zeros(4)))
        np.testing.assert_array_equal(mantissa, np.frexp(x)[0])
        np.testing.assert_array_equal(exponent, np.frexp(x)[1])
        with np.errstate(over="ignore"):
            np.testing.assert_array_equal(grad, np.ldexp(np.ones(4, dtype), -np.frexp(x)[1]))


def test_modf_of_inf_has_numpys_fraction():
    # NumPy's fractional part at +-inf is 0.
    import jaccli
    from tests.helpers import central_diff

    x = np.array([np.inf, -np.inf, np.nan, -2.5, 3.25])
    for dtype in (np.float32, np.float64):
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # NumPy's modf warns of nothing here: neither may its rule
            (fraction, whole), grad = jaccli.vjp(np.modf, x.astype(dtype), (np.ones(5, dtype), np.zeros(5, dtype)))
        for got, want in zip((fraction, whole), np.modf(x.astype(dtype))):
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got, want)
        finite_differences = np.diag(central_diff(lambda v: np.modf(v)[0], x, h=1e-3))
        np.testing.assert_allclose(grad[[0, 1, 3, 4]], finite_differences[[0, 1, 3, 4]], rtol=1e-6)


def test_modf_has_numpys_sign_of_zero_and_derivatives_one_and_zero():
    # NumPy's fraction at a negative integer (and at -inf) is -0.0.
    import jaccli

    x = np.array([0.0, -0.0, 2.0, -2.0, 7.0, -7.0, np.inf, -np.inf, np.nan, -2.5, 0.75, -0.25])
    finite = np.isfinite(x)
    for dtype in (np.float32, np.float64):
        xd = x.astype(dtype)
        want = np.modf(xd)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # NumPy's modf warns of nothing here: neither may its rule
            (fraction, whole), grad = jaccli.vjp(np.modf, xd, (np.ones(12, dtype), np.zeros(12, dtype)))
            _, grad_whole = jaccli.vjp(np.modf, xd, (np.zeros(12, dtype), np.ones(12, dtype)))
            _, (t_fraction, t_whole) = jaccli.jvp(np.modf, xd, np.ones(12, dtype))
            H = np.asarray(jaccli.hessian(lambda v: np.sum(np.modf(v)[0] ** 3), xd))
        for got, expected in zip((fraction, whole), want):
            assert got.dtype == expected.dtype
            np.testing.assert_array_equal(got, expected)
            np.testing.assert_array_equal(np.signbit(got), np.signbit(expected))
        np.testing.assert_array_equal(grad[finite], 1.0)
        np.testing.assert_array_equal(t_fraction[finite], 1.0)
        np.testing.assert_array_equal(grad_whole, 0.0)
        np.testing.assert_array_equal(t_whole, 0.0)
        # d2/dx2 frac**3 = 6 frac, in x's dtype
        np.testing.assert_allclose(np.diag(H)[finite], 6 * want[0][finite], rtol=1e-6)


def test_conjugate_of_a_traced_array_is_a_new_array():
    import jaccli

    def f(x):
        y = np.conjugate(x)
        y[0] = 5.0
        return x + y

    x = np.array([1.0, 2.0])
    value, grad = jaccli.vjp(f, x, np.ones(2))
    np.testing.assert_array_equal(value, f(x.copy()))
    np.testing.assert_array_equal(grad, [1.0, 2.0])


def _multiply_at(a, idx, b):
    out = a * 1.0
    np.multiply.at(out, idx, b)
    return out


@pytest.mark.parametrize("a_dtype", [np.float32, np.float64])
@pytest.mark.parametrize("b", [np.array([0.7, -1.3, 2.9, 0.0, 1.1, -0.6, 3.7]), 1.7, np.float32(-2.3), 3],
                         ids=["float64-array", "python-float", "float32-scalar", "python-int"])
def test_multiply_at_has_numpys_values_in_numpys_order(b, a_dtype):
    # NumPy multiplies one factor at a time, in index order, casting each product back to a's dtype
    # (a Python number made an array first).
    import jaccli

    idx = np.array([0, 2, 0, 3, 0, 2, 5])
    a = np.array([1 / 3, -2.6, 1 / 7, 0.9, 4.1, 1e-3], dtype=a_dtype)
    want = _multiply_at(a, idx, b)
    got, _ = jaccli.vjp(lambda v: _multiply_at(v, idx, b), a, np.ones(6, a_dtype))
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


def test_multiply_at_derivatives_are_products_of_the_other_factors_with_zeros_present():
    # d out[i] / d b_k = a[i] * (the product of i's other factors); d out[i] / d a[i] = their product.
    # Element 0 has two zero factors, element 2 one: no division may turn these into NaN or 0 / 0.
    import jaccli

    idx = np.array([0, 2, 0, 3, 0, 2, 2])
    a = np.array([1.5, -0.4, 0.8, 2.0, 0.6])
    b = np.array([0.0, 1.3, 0.0, -0.7, 2.5, 0.0, 1.9])
    ja = np.asarray(jaccli.jacobian(lambda x: _multiply_at(x, idx, b), a))
    jb = np.asarray(jaccli.jacobian(lambda y: _multiply_at(a + 0.0 * y[0], idx, y), b))  # (a traced target)
    want_a, want_b = np.eye(5), np.zeros((5, 7))
    for i in set(idx):
        ks = np.flatnonzero(idx == i)
        want_a[i, i] = np.prod(b[ks])
        for k in ks:
            want_b[i, k] = a[i] * np.prod(b[ks[ks != k]])
    np.testing.assert_array_equal(ja, want_a)
    np.testing.assert_allclose(jb, want_b, rtol=1e-15)
    # second order, element 2 (factors b_1, b_5 = 0, b_6): d2 / d b_j d b_k = a[2] * the third factor
    H = np.asarray(jaccli.hessian(lambda y: _multiply_at(a + 0.0 * y[0], idx, y)[2], b))
    want_h = np.zeros((7, 7))
    for j, k, m in ((1, 5, 6), (1, 6, 5), (5, 6, 1)):
        want_h[j, k] = want_h[k, j] = a[2] * b[m]
    np.testing.assert_allclose(H, want_h, rtol=1e-15)


def test_multiply_at_refuses_what_numpy_refuses_and_a_plain_target():
    import jaccli
    from jaccli.errors import TracingError
    from tests.helpers import refused_as_numpy_refuses

    x = np.array([0.5, 1.5, -2.0])
    traced = lambda f, v: np.asarray(jaccli.jacobian(f, v))  # noqa: E731
    refused_as_numpy_refuses(lambda v: _multiply_at(v, [0, 3], 2.0), x, traced, errors=IndexError)
    refused_as_numpy_refuses(lambda v: _multiply_at(v, [0, 1], np.ones(3)), x, traced)
    refused_as_numpy_refuses(lambda v: np.multiply.at(v * 1.0, [0]), x, traced)
    with pytest.raises(TracingError):
        traced(lambda v: _multiply_at(np.ones(3), [0, 0], v), x)


@pytest.mark.parametrize("zero", [0.0, 0, np.float64(0.0), np.float32(0.0)])
def test_dividing_by_a_python_or_numpy_zero_differentiates_to_numpys_quotient_not_a_zerodivisionerror(zero):
    # d(v / c)/dv = 1 / c, which NumPy gives as inf for c = 0 (Python's 1.0 / 0.0 raises instead)
    x = np.array([1.0, -2.0, 0.0])
    with np.errstate(divide="ignore", invalid="ignore"):
        want = np.true_divide(1.0, np.float64(zero)) * np.ones(3)
        np.testing.assert_array_equal(jaccli.jvp(lambda v: v / zero, x, np.ones(3))[1], want)
        np.testing.assert_array_equal(jaccli.vjp(lambda v: v / zero, x, np.ones(3))[1], want)
        np.testing.assert_array_equal(np.diagonal(np.asarray(jaccli.jacobian(lambda v: v / zero, x, mode="forward"))), want)



def test_structures_are_immutable_values():
    # What the frozen dataclasses they were gave: equal by class and fields, hashable, immutable, their repr.
    from jaccli.engine import structure as st

    assert st.Reduces(axes_at=2) == st.Reduces(2, 0) and st.Reduces() != st.Reduces(arg=1)
    assert st.Normalizes(1) != st.Reduces(1) and st.Dense() == st.Dense() and st.Dense() != st.Moves()
    assert len({st.Cumulates(1), st.Cumulates(axis_at=1), st.Cumulates(2)}) == 2
    assert repr(st.Reduces(2)) == "Reduces(axes_at=2, arg=0)" and repr(st.Elementwise()) == "Elementwise()"
    assert pickle.loads(pickle.dumps(st.Normalizes(3))) == st.Normalizes(3)
    with pytest.raises(AttributeError):
        st.Reduces().axes_at = 3
    with pytest.raises(AttributeError):
        st.Dense().kind = "moves"
