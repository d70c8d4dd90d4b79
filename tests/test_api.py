"""The public functions: products, return conventions, wrt, nesting, strict mode, create_graph,
whole Jacobians and Hessians of realistic functions against closed forms, and the errors' classes (their
words: test_library_error_messages.py)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

import jaccli
from tests.helpers import central_diff
from jaccli.engine.tracer import Tracer
from jaccli.errors import BatchMixingError, ConstantUnderOuterWarning, StrictModeError, UserFunctionError

EXACT = dict(rtol=1e-12, atol=1e-12)
CLOSED = dict(rtol=1e-10, atol=1e-10)  # closed forms evaluated in a different order
FD = dict(rtol=1e-6, atol=1e-7)


# ---------------------------------------------------------------------------
# vjp, jvp, hvp, grad: values and (value, product) conventions
# ---------------------------------------------------------------------------
def cubic(x):
    return x ** 3 + x.sum()


def test_vjp_returns_value_and_v_transpose_j(rng):
    x, v = rng.normal(size=4), rng.normal(size=4)
    value, prod = jaccli.vjp(cubic, x, v)
    assert_allclose(value, cubic(x), **EXACT)
    assert_allclose(prod, v * 3 * x ** 2 + v.sum(), **EXACT)
    assert prod.shape == x.shape


def test_vjp_over_tuple_inputs_and_outputs(rng):
    x, y = rng.normal(size=3), rng.normal(size=(2, 3))
    v0, v1 = rng.normal(size=3), rng.normal(size=())

    def f(x, y):
        return x * y.sum(0), (y ** 2).sum()

    value, (gx, gy) = jaccli.vjp(f, (x, y), (v0, v1))
    assert isinstance(value, tuple) and len(value) == 2
    assert_allclose(value[0], x * y.sum(0), **EXACT)
    assert_allclose(gx, v0 * y.sum(0), **EXACT)
    assert_allclose(gy, np.broadcast_to(v0 * x, (2, 3)) + 2 * v1 * y, **EXACT)


def test_jvp_returns_value_and_j_v(rng):
    x, v = rng.normal(size=4), rng.normal(size=4)
    value, prod = jaccli.jvp(cubic, x, v)
    assert_allclose(value, cubic(x), **EXACT)
    assert_allclose(prod, 3 * x ** 2 * v + v.sum(), **EXACT)


def test_jvp_with_tuple_outputs_gives_a_tuple_of_products(rng):
    x, y = rng.normal(size=3), rng.normal(size=3)
    vx, vy = rng.normal(size=3), rng.normal(size=3)
    value, (p0, p1) = jaccli.jvp(lambda x, y: (x * y, np.sin(x).sum()), (x, y), (vx, vy))
    assert_allclose(value[0], x * y, **EXACT)
    assert_allclose(p0, vx * y + x * vy, **EXACT)
    assert_allclose(p1, np.cos(x) @ vx, **EXACT)


def test_hvp_returns_value_and_h_v(rng):
    x, v = rng.normal(size=4), rng.normal(size=4)
    value, prod = jaccli.hvp(lambda x: (np.sin(x) * x).sum(), x, v)
    assert_allclose(value, (np.sin(x) * x).sum(), **EXACT)
    assert_allclose(prod, (2 * np.cos(x) - x * np.sin(x)) * v, **EXACT)


def test_hvp_over_tuple_inputs(rng):
    a, b, va, vb = (rng.normal(size=3) for _ in range(4))
    _, (pa, pb) = jaccli.hvp(lambda a, b: (a * a * b).sum(), (a, b), (va, vb))
    # H = [[diag(2b), diag(2a)], [diag(2a), 0]]
    assert_allclose(pa, 2 * b * va + 2 * a * vb, **EXACT)
    assert_allclose(pb, 2 * a * va, **EXACT)


def test_vhp_is_v_times_the_hessian_by_a_reverse_sweep(rng):
    a, b, va, vb = (rng.normal(size=3) for _ in range(4))
    f = lambda a, b: (a * a * b).sum() + np.sin(a[0]) * b[2]  # noqa: E731
    value, (pa, pb) = jaccli.vhp(f, (a, b), (va, vb))
    assert_allclose(value, f(a, b), **EXACT)
    # v^T H with H = [[diag(2b) - sin(a0) b2 e0 e0^T, diag(2a) + cos(a0) e0 e2^T], [its transpose, 0]]
    ea = 2 * b * va + 2 * a * vb
    ea[0] += -np.sin(a[0]) * b[2] * va[0] + np.cos(a[0]) * vb[2]
    eb = 2 * a * va
    eb[2] += np.cos(a[0]) * va[0]
    assert_allclose(pa, ea, **EXACT)
    assert_allclose(pb, eb, **EXACT)
    _, (ha, hb) = jaccli.hvp(f, (a, b), (va, vb))  # H is symmetric: the same numbers by a forward sweep
    assert_allclose((pa, pb), (ha, hb), rtol=1e-14, atol=1e-14)


def test_grad_is_shaped_like_the_input(rng):
    x = rng.normal(size=(2, 3))
    g = jaccli.grad(lambda x: (x ** 2).sum(), x)
    assert g.shape == (2, 3)
    assert_allclose(g, 2 * x, **EXACT)
    gx, gy = jaccli.grad(lambda x, y: (x * y).sum(), (x, 2 * x))
    assert_allclose(gx, 2 * x, **EXACT)
    assert_allclose(gy, x, **EXACT)
    assert_allclose(jaccli.grad(lambda x, y: (x * y).sum(), (x, 2 * x), wrt="y"), x, **EXACT)


def test_v_may_be_omitted_only_for_single_element_sides(rng):
    x = rng.normal(size=3)
    value, g = jaccli.vjp(lambda x: (x ** 2).sum(), x)
    assert_allclose(g, 2 * x, **EXACT)
    _, g = jaccli.vjp(lambda x: (x ** 2).sum().reshape(1), x)
    assert_allclose(g, 2 * x, **EXACT)
    with pytest.raises(ValueError):
        jaccli.vjp(lambda x: x ** 2, x)
    _, t = jaccli.jvp(lambda s: np.array([s, s ** 2]), np.array(3.0))
    assert_allclose(t, [1, 6], **EXACT)
    with pytest.raises(ValueError):
        jaccli.jvp(lambda x: x ** 2, x)
    _, h = jaccli.hvp(lambda s: s ** 3, np.array(2.0))
    assert_allclose(h, 12, **EXACT)
    with pytest.raises(ValueError):
        jaccli.hvp(lambda x: (x ** 3).sum(), x)


def test_v_of_the_wrong_size_or_length_is_rejected(rng):
    x = rng.normal(size=3)
    with pytest.raises(ValueError):
        jaccli.vjp(lambda x: x ** 2, x, np.ones(4))
    with pytest.raises(ValueError):
        jaccli.jvp(lambda x: x ** 2, x, np.ones(2))
    with pytest.raises(ValueError):
        jaccli.hvp(lambda x: (x ** 3).sum(), x, np.ones(5))
    with pytest.raises(ValueError):
        jaccli.jvp(lambda x, y: x * y, (x, x), (x, x, x))
    with pytest.raises(ValueError):
        jaccli.vjp(lambda x: (x, x.sum()), x, (np.ones(3), np.ones(2)))


@pytest.mark.parametrize("kind", ["vjp", "jvp", "hvp"])
def test_v_of_another_shape_is_refused_not_reshaped_but_a_flat_v_is_read_row_major(kind):
    X = np.arange(1.0, 7.0).reshape(2, 3)
    f = (lambda X: (X ** 3).sum()) if kind == "hvp" else (lambda X: X * np.arange(6.0).reshape(2, 3))
    fn = getattr(jaccli, kind)
    v = np.arange(6.0).reshape(3, 2)  # the right size, transposed: the entries would not match
    with pytest.raises(ValueError):
        fn(f, X, v)
    assert_array_equal(fn(f, X, v.ravel())[1], fn(f, X, v.reshape(2, 3))[1])
    with pytest.raises(ValueError):
        fn(f, X, np.ones((2, 3)) * 1j)
    # axes of length 1 added or left out pair no entries wrongly: reshaped
    assert_array_equal(fn(f, X, v.reshape(1, 2, 1, 3))[1], fn(f, X, v.reshape(2, 3))[1])


@pytest.mark.parametrize("kind", ["vjp", "jvp", "hvp"])
def test_v_with_axes_of_length_1_added_or_left_out_is_reshaped(kind):
    # The man page of --vector says a v is reshaped when the sizes match.
    x = np.array([0.5, -1.0, 2.0])
    f = (lambda z: (z ** 3).sum()) if kind == "hvp" else (lambda z: z * np.array([1.0, 2.0, 3.0]) + z[0] ** 2)
    fn = getattr(jaccli, kind)
    v = np.array([1.0, -2.0, 0.5])
    want = fn(f, x, v)[1]
    for shape in ((1, 3), (3, 1), (1, 1, 3)):
        got = fn(f, x, v.reshape(shape))[1]
        assert np.shape(got) == (3,)
        assert_array_equal(got, want)
    with pytest.raises(ValueError):
        fn(f, x, np.ones((2, 3)))


# ---------------------------------------------------------------------------
# wrt
# ---------------------------------------------------------------------------
def weighted(x, y, z):
    return x * y + z


@pytest.mark.parametrize("x", [
    np.ma.array([1.0, 2.0, 100.0], mask=[False, False, True]),
    None,
    np.array([1.0, None]),
    np.array(["2020-01-01"], dtype="datetime64[D]"),
    np.array(["1.5"]),
], ids=["masked", "None", "object", "datetime64", "str"])
def test_an_input_to_differentiate_that_is_not_real_numbers_is_refused(x):
    for call in (lambda: jaccli.jacobian(lambda a: a * 2, x), lambda: jaccli.vjp(lambda a: a.sum(), x)):
        with pytest.raises(TypeError):
            call()


@pytest.mark.parametrize("v", [
    np.ma.array([1.0, 2.0], mask=[False, True]),
    np.array(["1", "2"]),
    np.array([1.0, None]),
    np.array(["2020-01-01", "2020-01-02"], dtype="datetime64[D]"),
], ids=["masked", "str", "object", "datetime64"])
@pytest.mark.parametrize("kind", ["vjp", "jvp", "hvp", "vhp"])
def test_a_vector_v_that_is_not_real_numbers_is_refused_as_an_input_is(kind, v):
    f = (lambda a: (a ** 3).sum()) if kind in ("hvp", "vhp") else (lambda a: a * 2)
    with pytest.raises(TypeError):
        getattr(jaccli, kind)(f, np.array([0.3, 0.7]), v)


def test_an_entry_of_a_tuple_v_that_is_masked_is_refused_by_its_position():
    with pytest.raises(TypeError):
        jaccli.vjp(lambda a: (a, a * 2), np.array([0.3, 0.7]), (np.ones(2), np.ma.array([1.0, 2.0], mask=[0, 1])))


def test_integer_and_boolean_inputs_are_still_differentiated_as_float64():
    J = np.asarray(jaccli.jacobian(lambda a: a ** 2, np.array([1, 2])))
    np.testing.assert_array_equal(J, [[2.0, 0.0], [0.0, 4.0]])
    assert J.dtype == np.float64 and np.asarray(jaccli.jacobian(lambda a: a * 3, np.True_)).dtype == np.float64


def test_wrt_by_name_position_and_negative_position_agree(rng):
    x, y, z = (rng.normal(size=3) for _ in range(3))
    for wrt in ("y", 1, -2, np.int64(1)):
        J = jaccli.jacobian(weighted, (x, y, z), wrt=wrt)
        assert isinstance(J, jaccli.Jacobian)
        assert_allclose(np.asarray(J), np.diag(x), **EXACT)


def test_wrt_sequence_keeps_its_order_and_nests(rng):
    x, y, z = (rng.normal(size=3) for _ in range(3))
    Jz, Jx = jaccli.jacobian(weighted, (x, y, z), wrt=("z", "x"))
    assert_array_equal(np.asarray(Jz), np.eye(3))
    assert_allclose(np.asarray(Jx), np.diag(y), **EXACT)
    (J,) = jaccli.jacobian(weighted, (x, y, z), wrt=[2])
    assert_array_equal(np.asarray(J), np.eye(3))


def test_inputs_not_in_wrt_are_passed_as_plain_arrays(rng):
    x, y = rng.normal(size=3), rng.normal(size=3)
    seen = {}

    def f(x, y):
        seen["y"] = type(y)
        return x * y

    jaccli.jacobian(f, (x, y), wrt="x")
    assert seen["y"] is np.ndarray


def test_wrt_errors_name_the_problem(rng):
    x, y, z = (rng.normal(size=3) for _ in range(3))
    with pytest.raises(ValueError):
        jaccli.jacobian(weighted, (x, y, z), wrt="w")
    with pytest.raises(ValueError):
        jaccli.jacobian(weighted, (x, y, z), wrt=(0, "x"))
    with pytest.raises(ValueError):
        jaccli.jacobian(weighted, (x, y, z), wrt=(2, -1))
    with pytest.raises(ValueError):
        jaccli.jacobian(weighted, (x, y, z), wrt=3)
    with pytest.raises(ValueError):
        jaccli.jacobian(weighted, (x, y, z), wrt=())
    with pytest.raises(ValueError):
        jaccli.hessian(lambda x, y, z: (weighted(x, y, z) ** 2).sum(), (x, y, z), wrt="q")
    with pytest.raises(ValueError):
        jaccli.grad(lambda x, y, z: weighted(x, y, z).sum(), (x, y, z), wrt="q")
    for bad in (0.0, {0}, None.__class__):
        with pytest.raises(TypeError):
            jaccli.jacobian(weighted, (x, y, z), wrt=bad)
    with pytest.raises(TypeError):
        jaccli.jacobian(weighted, (x, y, z), wrt=[0, 1.0])


# ---------------------------------------------------------------------------
# Nesting
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("out_tuple", [False, True])
@pytest.mark.parametrize("in_tuple", [False, True])
def test_nesting_for_every_tuple_combination(rng, out_tuple, in_tuple):
    x, y = rng.normal(size=2), rng.normal(size=3)
    if in_tuple:
        inputs = (x, y)
        f = (lambda x, y: (x * y[0], y * x[1])) if out_tuple else (lambda x, y: x * y[0])
    else:
        inputs = x
        f = (lambda x: (x * 2, x.sum())) if out_tuple else (lambda x: x * 2)
    J = jaccli.jacobian(f, inputs)
    if out_tuple and in_tuple:
        assert isinstance(J, tuple) and all(isinstance(r, tuple) and len(r) == 2 for r in J)
        assert [[b.shape for b in r] for r in J] == [[(2, 2), (2, 3)], [(3, 2), (3, 3)]]
        assert_allclose(np.asarray(J[0][1]), np.outer(x, [1, 0, 0]), **EXACT)  # output outer, input inner
        assert_allclose(np.asarray(J[1][0]), np.outer(y, [0, 1]), **EXACT)
    elif out_tuple:
        assert isinstance(J, tuple) and len(J) == 2 and isinstance(J[0], jaccli.Jacobian)
        assert [b.shape for b in J] == [(2, 2), (2,)]
    elif in_tuple:
        assert isinstance(J, tuple) and len(J) == 2 and isinstance(J[0], jaccli.Jacobian)
        assert [b.shape for b in J] == [(2, 2), (2, 3)]
    else:
        assert isinstance(J, jaccli.Jacobian) and J.shape == (2, 2)


def test_one_tuples_and_lists_nest_like_tuples(rng):
    x = rng.normal(size=2)
    (J,) = jaccli.jacobian(lambda x: x * 2, (x,))
    assert J.shape == (2, 2)
    (J,) = jaccli.jacobian(lambda x: (x * 2,), x)
    assert J.shape == (2, 2)
    ((J,),) = jaccli.jacobian(lambda x: (x * 2,), [x])
    assert_array_equal(np.asarray(J), 2 * np.eye(2))


def test_hessian_nesting(rng):
    x, y = rng.normal(size=2), rng.normal(size=3)
    H = jaccli.hessian(lambda x: (x ** 4).sum(), x)
    assert isinstance(H, jaccli.Hessian) and H.shape == (2, 2)
    ((H,),) = jaccli.hessian(lambda x: (x ** 4).sum(), (x,))
    assert_allclose(np.asarray(H), np.diag(12 * x ** 2), **EXACT)
    H = jaccli.hessian(lambda x, y: (x ** 2).sum() * y.sum(), (x, y))
    assert [[b.shape for b in r] for r in H] == [[(2, 2), (2, 3)], [(3, 2), (3, 3)]]
    assert_allclose(np.asarray(H[0][1]), np.outer(2 * x, np.ones(3)), **EXACT)
    assert_allclose(np.asarray(H[1][0]), np.outer(np.ones(3), 2 * x), **EXACT)


# ---------------------------------------------------------------------------
# strict
# ---------------------------------------------------------------------------
def test_strict_message_names_the_output_and_the_input(rng):
    a, b = rng.normal(size=3), rng.normal(size=3)
    with pytest.raises(StrictModeError) as err:
        jaccli.jacobian(lambda a, b: (np.sin(a), 3 * b), (a, b), strict=True)
    msg = str(err.value)
    assert "Output 0" in msg and "input 1" in msg and "'b'" in msg


def test_strict_is_structural(rng):
    a, b = rng.normal(size=3), rng.normal(size=3)
    Ja, Jb = jaccli.jacobian(lambda a, b: a * 0 + b, (a, b), strict=True)
    assert_array_equal(np.asarray(Ja), np.zeros((3, 3)))
    assert_array_equal(np.asarray(Jb), np.eye(3))
    with pytest.raises(StrictModeError):
        jaccli.jacobian(lambda a, b: 2 * b, (a, b), strict=True)


def test_without_strict_independent_blocks_are_zero_and_not_connected(rng):
    a, b = rng.normal(size=3), rng.normal(size=2)
    Ja, Jb = jaccli.jacobian(lambda a, b: 2 * b, (a, b))
    assert_array_equal(np.asarray(Ja), np.zeros((2, 3)))
    assert not Ja.connected and Jb.connected


def test_strict_hessian(rng):
    x = rng.normal(size=3)
    with pytest.raises(StrictModeError):
        jaccli.hessian(lambda x: (2 * x).sum(), x, strict=True)
    H = jaccli.hessian(lambda x: (x ** 3).sum(), x, strict=True)
    assert_allclose(np.asarray(H), np.diag(6 * x), **EXACT)


A2, B2 = np.array([1.0, 2.0]), np.array([0.5, -1.0])
# strict=True, create_graph=True: a derivative block independent of the inputs is refused. What
# torch.autograd.functional 2.13 does on each was run: all agree but (a ** 2).sum(), whose Hessian
# torch lets through (its pow backward keeps a ** 0, structurally a function of a).
_STRICT_GRAPH = [
    ("jacobian", lambda a: 3 * a, (A2,), True),
    ("jacobian", lambda a: a.sum(), (A2,), True),
    ("jacobian", lambda a: a.copy(), (A2,), True),  # TC-18's third stage
    ("jacobian", lambda a, b: a + b * b, (A2, B2), True),
    ("jacobian", lambda a, b: (a * b, a + b), (A2, B2), True),
    ("jacobian", lambda a: np.stack([a[0] ** 2, a[1]]), (A2,), False),  # one row depends on a
    ("jacobian", lambda a, b: a * b, (A2, B2), False),  # d/da = b: depends on an input
    ("jacobian", np.sin, (A2,), False),
    ("jacobian", lambda a, b: a @ b, (A2, B2), False),
    ("hessian", lambda a: (a * a).sum(), (A2,), True),
    ("hessian", lambda a: (a ** 2).sum(), (A2,), True),  # torch: passes, see above
    ("hessian", lambda a: a @ a, (A2,), True),
    ("hessian", lambda a: a[0] * a[1], (A2,), True),
    ("hessian", lambda a: (a ** 3).sum(), (A2,), False),
    ("hessian", lambda a: np.sin(a).sum(), (A2,), False),
    ("hessian", lambda a, b: (a * a * b * b).sum(), (A2, B2), False),
    ("vjp", lambda a: 3 * a, (A2,), True),
    ("vjp", lambda a, b: a + b * b, (A2, B2), True),
    ("vjp", lambda a, b: a * b, (A2, B2), False),
    ("jvp", lambda a: 3 * a, (A2,), True),
    ("jvp", lambda a, b: a + b * b, (A2, B2), False),  # output 0 depends on b through b * b
    ("hvp", lambda a: (a * a).sum(), (A2,), True),
    ("hvp", lambda a, b: (a * b).sum(), (A2, B2), True),
    ("hvp", lambda a, b: (a * a * b).sum(), (A2, B2), False),
    ("vhp", lambda a: (a * a).sum(), (A2,), True),
    ("vhp", lambda a: (a ** 3).sum(), (A2,), False),
]


def _strict_call(kind, f, args, create_graph):
    inputs = args if len(args) > 1 else args[0]
    if kind in ("jacobian", "hessian"):
        out = getattr(jaccli, kind)(f, inputs, strict=True, create_graph=create_graph)
        return [np.asarray(b) for b in (out if isinstance(out, tuple) else (out,))] if kind == "jacobian" else out
    v = np.ones(2) if kind == "vjp" else (tuple(np.ones(2) for _ in args) if len(args) > 1 else np.ones(2))
    return getattr(jaccli, kind)(f, inputs, v, strict=True, create_graph=create_graph)


@pytest.mark.parametrize("case", range(len(_STRICT_GRAPH)))
def test_strict_with_create_graph_refuses_a_derivative_independent_of_the_inputs(case):
    kind, f, args, refused = _STRICT_GRAPH[case]
    _strict_call(kind, f, args, create_graph=False)  # strict alone accepts every one
    if not refused:
        _strict_call(kind, f, args, create_graph=True)
        return
    with pytest.raises(StrictModeError) as err:
        _strict_call(kind, f, args, create_graph=True)
    assert "not allowed in strict mode when create_graph=True" in str(err.value)
    assert "\n" not in str(err.value)


def test_strict_with_create_graph_under_an_outer_differentiation_counts_what_the_outer_one_traces():
    w, y = np.array([0.5, 1.5]), np.array([1.0, -2.0])
    # d/dy of y * w**2 is diag(w**2): independent of y but a function of w, as torch's requires_grad says
    T = np.asarray(jaccli.jacobian(lambda w: jaccli.jacobian(lambda y: y * w ** 2, y, strict=True,
                                                             create_graph=True), w))
    assert_allclose(T, np.einsum("ij,ik->ijk", np.eye(2), np.diag(2 * w)), **EXACT)
    T = np.asarray(jaccli.jacobian(lambda w: jaccli.hessian(lambda y: (y * y * w).sum(), y, strict=True,
                                                            create_graph=True), w))
    assert_allclose(T, np.einsum("ij,ik->ijk", np.eye(2), 2 * np.eye(2)), **EXACT)
    # a traced v makes the product a function of the outer variable too
    T = np.asarray(jaccli.jacobian(lambda v: jaccli.vjp(lambda y: 3 * y, y, v, strict=True, create_graph=True)[1],
                                   w))
    assert_allclose(T, 3 * np.eye(2), **EXACT)
    with pytest.raises(StrictModeError):
        jaccli.jacobian(lambda w: jaccli.jacobian(lambda y: 3 * y + w, y, strict=True, create_graph=True), w)


def test_strict_with_create_graph_per_sample():
    X = np.linspace(0.5, 2.0, 6).reshape(2, 3)
    with pytest.raises(StrictModeError):
        jaccli.jacobian(lambda X: 3 * X, X, batch_axis=0, strict=True, create_graph=True)
    with pytest.raises(StrictModeError):
        jaccli.hessian(lambda X: (X * X).sum(axis=1), X, batch_axis=0, strict=True, create_graph=True)
    H = jaccli.hessian(lambda X: (X ** 3).sum(axis=1), X, batch_axis=0, strict=True, create_graph=True)
    assert_allclose(np.asarray(H), np.einsum("bi,ij->bij", 6 * X, np.eye(3)), **EXACT)


# The products' strict mode without create_graph, as torch's (each outcome run on torch 2.13)
_STRICT_PRODUCTS = [
    ("vjp", lambda a, b: 3 * b, True),
    ("jvp", lambda a, b: 3 * b, True),
    ("vjp", lambda a, b: np.ones(2), True),
    ("jvp", lambda a, b: (a * b, np.ones(2)), True),
    ("hvp", lambda a, b: (a ** 3).sum(), True),
    ("vhp", lambda a, b: (a ** 3).sum(), True),
    ("hvp", lambda a, b: (3 * a).sum() + (b ** 2).sum(), True),
    ("vhp", lambda a, b: (3 * a).sum() + (b ** 2).sum(), True),
    ("hvp", lambda a, b: (a * b).sum(), False),
    ("vhp", lambda a, b: (a * 0 * b).sum(), False),  # structural: a path exists
    ("vjp", lambda a, b: a * 0 + b, False),
    ("jvp", lambda a, b: a + b, False),
]


@pytest.mark.parametrize("case", range(len(_STRICT_PRODUCTS)))
def test_strict_products_refuse_what_torch_refuses(case):
    kind, f, refused = _STRICT_PRODUCTS[case]
    v = np.ones(2) if kind == "vjp" else (np.ones(2), np.ones(2))
    getattr(jaccli, kind)(f, (A2, B2), v)  # without strict: zeros where independent
    if not refused:
        getattr(jaccli, kind)(f, (A2, B2), v, strict=True)
        return
    with pytest.raises(StrictModeError):
        getattr(jaccli, kind)(f, (A2, B2), v, strict=True)


def test_strict_products_give_the_same_values_as_without():
    x, v = np.array([0.3, -0.5, 1.2]), np.array([0.7, -1.1, 0.4])
    f = lambda x: np.sin(x) * x.sum()  # noqa: E731
    g = lambda x: (np.sin(x) * x.sum()).sum()  # noqa: E731
    for kind, fn in (("vjp", f), ("jvp", f), ("hvp", g), ("vhp", g)):
        for cg in (False, True):
            strict = getattr(jaccli, kind)(fn, x, v, strict=True, create_graph=cg)
            plain = getattr(jaccli, kind)(fn, x, v)
            assert_allclose(strict[1], plain[1], **EXACT)
            assert_allclose(strict[0], plain[0], **EXACT)


# ---------------------------------------------------------------------------
# create_graph: derivatives of derivatives
# ---------------------------------------------------------------------------
def sin_times_sum(x):
    return np.sin(x) * x.sum()


def test_jacobian_of_a_jacobian_with_create_graph(rng):
    x = rng.normal(size=3)
    kinds = []

    def inner(x):
        J = jaccli.jacobian(sin_times_sum, x, create_graph=True)
        kinds.append(type(J))
        return J

    T = np.asarray(jaccli.jacobian(inner, x))
    assert kinds == [Tracer]
    assert T.shape == (3, 3, 3)
    # J_ij = d_ij cos(x_i) S + sin(x_i); dJ_ij/dx_k = d_ij (d_ik (-sin(x_i) S) + cos(x_i)) + d_ik cos(x_i)
    S, n = x.sum(), 3
    d = np.eye(n)
    expected = (d[:, :, None] * (d[:, None, :] * (-np.sin(x) * S)[:, None, None] + np.cos(x)[:, None, None])
                + d[:, None, :] * np.cos(x)[:, None, None])
    assert_allclose(T, expected, **EXACT)
    Jfun = lambda x: np.asarray(jaccli.jacobian(sin_times_sum, x))  # noqa: E731
    assert_allclose(T, central_diff(Jfun, x), **FD)


@pytest.mark.parametrize("outer_mode", ["reverse", "forward"])
def test_jacobian_of_grad_with_create_graph_is_the_hessian(rng, outer_mode):
    x = rng.normal(size=4)

    def f(x):
        return (np.exp(x) * x).sum() + x[0] * x[3]

    H = np.asarray(jaccli.jacobian(lambda x: jaccli.grad(f, x, create_graph=True), x, mode=outer_mode))
    assert_allclose(H, np.asarray(jaccli.hessian(f, x)), **EXACT)
    expected = np.diag(np.exp(x) * (x + 2))
    expected[0, 3] = expected[3, 0] = 1
    assert_allclose(H, expected, **EXACT)


def test_without_create_graph_an_inner_result_is_a_constant_and_a_warning_says_so(rng):
    x = rng.normal(size=3)

    def inner(x):
        return jaccli.grad(lambda z: (z ** 3).sum(), x)  # the warning points here

    with pytest.warns(ConstantUnderOuterWarning, match="pass create_graph=True") as caught:
        T = np.asarray(jaccli.jacobian(inner, x))
    assert_array_equal(T, np.zeros((3, 3)))
    assert [w.filename for w in caught] == [__file__]
    assert caught[0].lineno == inner.__code__.co_firstlineno + 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        jaccli.jacobian(lambda x: jaccli.grad(lambda z: (z ** 3).sum(), x, create_graph=True), x)
        jaccli.grad(lambda z: (z ** 3).sum(), x)  # nothing encloses it


# f closes over w, a variable of the function being differentiated (not an input of the inner call)
_CLOSURES = {
    "jacobian": (lambda w, y: jaccli.jacobian(lambda y: y * w ** 2, y, create_graph=True),
                 lambda w, y: np.asarray(jaccli.jacobian(lambda y: y * w ** 2, y)),
                 lambda w, y: np.einsum("ij,ik->ijk", np.eye(y.size), np.diag(2 * w))),
    "hessian": (lambda w, y: jaccli.hessian(lambda y: (y ** 2 * w ** 2).sum(), y, create_graph=True),
                lambda w, y: np.asarray(jaccli.hessian(lambda y: (y ** 2 * w ** 2).sum(), y)),
                lambda w, y: np.einsum("ij,ik->ijk", np.eye(y.size), np.diag(4 * w))),
    "grad": (lambda w, y: jaccli.grad(lambda y: (y * w ** 2).sum(), y, create_graph=True),
             lambda w, y: jaccli.grad(lambda y: (y * w ** 2).sum(), y),
             lambda w, y: np.diag(2 * w)),
    "vjp": (lambda w, y: jaccli.vjp(lambda y: y * w ** 2, y, np.ones(y.size), create_graph=True)[1],
            lambda w, y: jaccli.vjp(lambda y: y * w ** 2, y, np.ones(y.size))[1],
            lambda w, y: np.diag(2 * w)),
}


@pytest.mark.parametrize("kind", sorted(_CLOSURES))
def test_a_closed_over_outer_variable_is_differentiated_only_with_create_graph(kind, rng):
    w, y = rng.normal(size=3), rng.normal(size=3)
    with_graph, without, expected = _CLOSURES[kind]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert_allclose(np.asarray(jaccli.jacobian(lambda w: with_graph(w, y), w)), expected(w, y), **EXACT)
    # torch's rule, as for a traced input: without create_graph the inner result is a constant
    with pytest.warns(ConstantUnderOuterWarning):
        assert_array_equal(np.asarray(jaccli.jacobian(lambda w: without(w, y), w)),
                           np.zeros(np.shape(expected(w, y))))


@pytest.mark.parametrize("inner", [lambda w, y: w ** 2 * y, lambda w, y: y * w ** 2,
                                   lambda w, y: np.where(y > -10, w ** 2, y) * np.where(y > -10, y, w)],
                         ids=["outer-first", "inner-first", "where-both-ways"])
def test_an_operation_on_two_levels_nests_whichever_argument_comes_first(inner, rng):
    # bind reads the arguments against the first one's level, again against a higher one found after it
    w, y = rng.normal(size=3), rng.normal(size=3)
    T = np.asarray(jaccli.jacobian(lambda w: jaccli.jacobian(lambda y: inner(w, y), y, create_graph=True), w))
    expected = np.einsum("ij,ik->ijk", np.eye(3), np.diag(2 * w))  # d/dw of diag(w ** 2)
    assert_allclose(T, expected, **EXACT)
    assert_allclose(T, central_diff(lambda w: np.asarray(jaccli.jacobian(lambda y: inner(w, y), y)), w), **FD)


# d/dv of a product at a fixed x: v -> (the product, its closed-form derivative in v)
def _sin_sum(x):
    return np.sin(x) * x.sum()


_X0 = np.array([0.3, -0.5, 1.2])
_J0 = np.diag(np.cos(_X0) * _X0.sum()) + np.sin(_X0)[:, None]  # d/dx of sin(x) * sum(x)
_H0 = np.diag(-np.sin(_X0) * _X0.sum()) + np.cos(_X0)[:, None] + np.cos(_X0)[None, :]  # of sum(sin(x)) sum(x)
_PRODUCTS = {
    "vjp": (lambda v, cg: jaccli.vjp(_sin_sum, _X0, v, create_graph=cg)[1], _J0.T),
    "jvp": (lambda v, cg: jaccli.jvp(_sin_sum, _X0, v, create_graph=cg)[1], _J0),
    "hvp": (lambda v, cg: jaccli.hvp(lambda z: _sin_sum(z).sum(), _X0, v, create_graph=cg)[1], _H0),
    "vhp": (lambda v, cg: jaccli.vhp(lambda z: _sin_sum(z).sum(), _X0, v, create_graph=cg)[1], _H0.T),
}


@pytest.mark.parametrize("kind", sorted(_PRODUCTS))
def test_a_product_is_differentiated_in_v_only_with_create_graph(kind):
    product, expected = _PRODUCTS[kind]
    v0 = np.array([0.7, -1.1, 0.4])
    assert_allclose(central_diff(lambda v: product(v, False), v0), expected, **FD)  # the closed form is right
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert_allclose(np.asarray(jaccli.jacobian(lambda v: product(v, True), v0)), expected, **EXACT)
    # torch's rule, as for a traced x: without create_graph the product is a constant in v
    with pytest.warns(ConstantUnderOuterWarning, match="pass create_graph=True") as caught:
        assert_array_equal(np.asarray(jaccli.jacobian(lambda v: product(v, False), v0)), np.zeros((3, 3)))
    assert len(caught) == 1 and caught[0].filename == __file__


def test_a_product_in_x_and_v_at_once_without_create_graph_is_a_constant_in_both():
    # not the derivative through v alone, which is neither torch's zero nor the true derivative
    x = np.array([0.3, -0.5, 1.2])
    with pytest.warns(ConstantUnderOuterWarning):
        assert_array_equal(np.asarray(jaccli.jacobian(lambda x: jaccli.vjp(_sin_sum, x, x)[1], x)), np.zeros((3, 3)))
    full = np.asarray(jaccli.jacobian(lambda x: jaccli.vjp(_sin_sum, x, x, create_graph=True)[1], x))
    assert_allclose(full, central_diff(lambda x: jaccli.vjp(_sin_sum, x, x)[1], x), **FD)


def test_batch_axis_under_create_graph_refuses_mixed_samples_and_bad_shapes():
    X = np.array([[1.0, 2.0, 3.0], [3.0, 4.0, 3.0]])
    mix = lambda X: np.stack([X[0] * X[1], 2 * X[1]])  # noqa: E731 - sample 0 uses sample 1
    with pytest.raises(BatchMixingError):
        jaccli.vjp(lambda X: jaccli.jacobian(mix, X, batch_axis=0, create_graph=True), X, np.ones((2, 3, 3)))
    with pytest.raises(BatchMixingError):
        jaccli.vjp(lambda X: jaccli.hessian(lambda X: (X[0] * X[1]).sum() + 0 * X.sum(axis=1), X, batch_axis=0,
                                            create_graph=True), X, np.ones((2, 3, 3)))
    with pytest.raises(ValueError):
        jaccli.vjp(lambda X: jaccli.jacobian(lambda y: y.sum(), X, batch_axis=0, create_graph=True), X,
                   np.ones((2, 3, 3)))
    # per-sample blocks that are right: d/dX of sum(diag(3 X_b^2)) = 6 X
    _, g = jaccli.vjp(lambda X: jaccli.jacobian(lambda X: X ** 3, X, batch_axis=0, create_graph=True), X,
                      np.ones((2, 3, 3)))
    assert_allclose(g, 6 * X, **EXACT)


@pytest.mark.parametrize("kind", ["jacobian", "hessian"])
def test_strict_holds_under_create_graph(kind):
    inner = (lambda x: jaccli.jacobian(lambda a, b: b * 2, (x, x), strict=True, create_graph=True)[0]) \
        if kind == "jacobian" else \
        (lambda x: jaccli.hessian(lambda a, b: (a * b.sum()).sum(), (x, x), strict=True, create_graph=True)[0][0])
    with pytest.raises(StrictModeError):
        jaccli.jacobian(inner, np.ones(2))


def test_third_derivative_through_hessian_with_create_graph(rng):
    x = rng.normal(size=3)
    inner = lambda x: jaccli.hessian(lambda z: (z ** 4).sum(), x, create_graph=True)  # noqa: E731
    T = np.asarray(jaccli.jacobian(inner, x))
    expected = np.zeros((3, 3, 3))
    expected[np.arange(3), np.arange(3), np.arange(3)] = 24 * x
    assert_allclose(T, expected, **EXACT)


def test_create_graph_products_are_differentiable(rng):
    x, v = rng.normal(size=3), rng.normal(size=3)
    # d/dx (J(x) v) for f = x**3: J v = 3 x**2 v -> diag(6 x v)
    T = np.asarray(jaccli.jacobian(lambda x: jaccli.jvp(lambda z: z ** 3, x, v, create_graph=True)[1], x))
    assert_allclose(T, np.diag(6 * x * v), **EXACT)
    T = np.asarray(jaccli.jacobian(lambda x: jaccli.vjp(lambda z: z ** 3, x, v, create_graph=True)[1], x))
    assert_allclose(T, np.diag(6 * x * v), **EXACT)


# ---------------------------------------------------------------------------
# Realistic whole Jacobians and Hessians against closed forms
# ---------------------------------------------------------------------------
def test_mlp_jacobian_wrt_input_and_weights(rng):
    N, Hd, O = 4, 6, 3
    W1, b1 = rng.normal(size=(Hd, N)), rng.normal(size=Hd)
    W2, b2 = rng.normal(size=(O, Hd)), rng.normal(size=O)
    x = rng.normal(size=N)

    def mlp(x, W1, b1, W2, b2):
        return W2 @ np.tanh(W1 @ x + b1) + b2

    t = np.tanh(W1 @ x + b1)
    Jx, JW1, Jb2 = jaccli.jacobian(mlp, (x, W1, b1, W2, b2), wrt=("x", "W1", "b2"))
    assert_allclose(np.asarray(Jx), W2 @ np.diag(1 - t ** 2) @ W1, **CLOSED)
    assert JW1.shape == (O, Hd, N)
    assert_allclose(np.asarray(JW1), (W2 * (1 - t ** 2))[:, :, None] * x[None, None, :], **CLOSED)
    assert_array_equal(np.asarray(Jb2), np.eye(O))


def test_batched_mlp_gives_per_sample_jacobians(rng):
    W1, b1 = rng.normal(size=(5, 3)), rng.normal(size=5)
    W2 = rng.normal(size=(2, 5))
    X = rng.normal(size=(4, 3))

    def mlp(X):
        return np.tanh(X @ W1.T + b1) @ W2.T

    J = jaccli.jacobian(mlp, X, batch_axis=0)
    assert J.shape == (4, 2, 3)
    T = np.tanh(X @ W1.T + b1)
    expected = np.stack([W2 @ np.diag(1 - t ** 2) @ W1 for t in T])
    assert_allclose(np.asarray(J), expected, **CLOSED)


def rosen(x):
    return (100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2).sum()


def rosen_hess_closed(x):
    H = np.diag(-400 * x[:-1], 1) + np.diag(-400 * x[:-1], -1)
    d = np.zeros_like(x)
    d[0] = 1200 * x[0] ** 2 - 400 * x[1] + 2
    d[-1] = 200
    d[1:-1] = 202 + 1200 * x[1:-1] ** 2 - 400 * x[2:]
    return H + np.diag(d)


def rosen_der_closed(x):
    xm, xm_m1, xm_p1 = x[1:-1], x[:-2], x[2:]
    der = np.zeros_like(x)
    der[1:-1] = 200 * (xm - xm_m1 ** 2) - 400 * (xm_p1 - xm ** 2) * xm - 2 * (1 - xm)
    der[0] = -400 * x[0] * (x[1] - x[0] ** 2) - 2 * (1 - x[0])
    der[-1] = 200 * (x[-1] - x[-2] ** 2)
    return der


@pytest.mark.parametrize("mode", ["forward", "reverse"])
def test_rosenbrock_hessian_is_the_tridiagonal_closed_form(rng, mode):
    x = rng.uniform(-1.5, 1.5, size=7)
    assert_allclose(jaccli.grad(rosen, x), rosen_der_closed(x), **CLOSED)
    H = jaccli.hessian(rosen, x, mode=mode)
    exact = rosen_hess_closed(x)
    assert_allclose(H[3], exact[3], **CLOSED)
    assert H.rows_evaluated == 1
    assert_allclose(np.asarray(H), exact, **CLOSED)
    assert_array_equal(np.triu(np.asarray(H), 2), 0)


def test_softmax_cross_entropy_hessian_is_diag_p_minus_ppt(rng):
    z = rng.normal(size=5)
    label = 2

    def loss(z):
        return np.log(np.sum(np.exp(z))) - z[label]

    p = np.exp(z) / np.exp(z).sum()
    assert_allclose(jaccli.grad(loss, z), p - np.eye(5)[label], **CLOSED)
    assert_allclose(np.asarray(jaccli.hessian(loss, z)), np.diag(p) - np.outer(p, p), **CLOSED)


def test_planar_robot_arm_jacobian(rng):
    lengths = np.array([1.0, 0.8, 0.5])
    theta = rng.uniform(-np.pi, np.pi, size=3)

    def end_effector(theta):
        phi = np.cumsum(theta)
        return np.stack([(lengths * np.cos(phi)).sum(), (lengths * np.sin(phi)).sum()])

    phi = np.cumsum(theta)
    expected = np.stack([[-(lengths * np.sin(phi))[j:].sum() for j in range(3)],
                         [(lengths * np.cos(phi))[j:].sum() for j in range(3)]])
    for mode in ("reverse", "forward"):
        assert_allclose(np.asarray(jaccli.jacobian(end_effector, theta, mode=mode)), expected, **CLOSED)


def test_lorenz96_jacobian_is_cyclic_banded(rng):
    n, F = 8, 8.0
    x = rng.normal(size=n)

    def lorenz96(x):
        return (np.roll(x, -1) - np.roll(x, 2)) * np.roll(x, 1) - x + F

    expected = np.zeros((n, n))
    for i in range(n):
        expected[i, (i + 1) % n] += x[(i - 1) % n]
        expected[i, (i - 2) % n] -= x[(i - 1) % n]
        expected[i, (i - 1) % n] += x[(i + 1) % n] - x[(i - 2) % n]
        expected[i, i] -= 1
    J = jaccli.jacobian(lorenz96, x)
    assert_allclose(J[5], expected[5], **CLOSED)
    assert J.rows_evaluated == 1
    assert_allclose(np.asarray(J), expected, **CLOSED)


def test_pde_residual_jacobian_is_tridiagonal(rng):
    n = 9
    h = 1.0 / (n + 1)
    u = rng.uniform(0, 1, size=n)
    s = rng.normal(size=n)

    def residual(u):
        up = np.pad(u, 1)  # Dirichlet zeros at both ends
        return (up[:-2] - 2 * up[1:-1] + up[2:]) / h ** 2 + u ** 3 - s

    expected = (np.diag(np.full(n - 1, 1 / h ** 2), 1) + np.diag(np.full(n - 1, 1 / h ** 2), -1)
                + np.diag(-2 / h ** 2 + 3 * u ** 2))
    J = jaccli.jacobian(residual, u, mode="reverse")
    assert_allclose(J[4], expected[4], **CLOSED)
    assert J.rows_evaluated == 1
    assert_allclose(np.asarray(J), expected, **CLOSED)
    assert_allclose(np.asarray(jaccli.jacobian(residual, u, mode="forward")), expected, **CLOSED)


def test_logdet_gradient_and_hessian(rng):
    R = rng.normal(size=(3, 3))
    A = R @ R.T + 3 * np.eye(3)

    def logdet(A):
        return np.linalg.slogdet(A)[1]

    Ainv = np.linalg.inv(A)
    assert_allclose(jaccli.grad(logdet, A), Ainv.T, **CLOSED)
    H = jaccli.hessian(logdet, A)
    assert H.shape == (3, 3, 3, 3)
    assert_allclose(np.asarray(H), -np.einsum("jk,li->ijkl", Ainv, Ainv), **CLOSED)


# ---------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------
def test_hessian_of_a_non_scalar_output_says_how_to_fix_it(rng):
    x = rng.normal(size=3)
    with pytest.raises(ValueError) as err:
        jaccli.hessian(lambda x: x ** 2, x)
    msg = str(err.value)
    assert "(3,)" in msg and "batch_axis" in msg and ("pick" in msg or "[0]" in msg)
    with pytest.raises(ValueError):
        jaccli.hessian(lambda x: ((x ** 2).sum(), x.sum()), x)


@pytest.mark.parametrize("batch_axis", [1, -1, "0", True, 0.5])
def test_bad_batch_axis_is_rejected(rng, batch_axis):
    x = rng.normal(size=(2, 3))
    for fn in (jaccli.jacobian, jaccli.hessian):
        with pytest.raises(ValueError):
            fn(lambda x: (x ** 2).sum(), x, batch_axis=batch_axis)


def test_index_out_of_range_raises_index_error_like_numpy(rng):
    J = jaccli.jacobian(lambda x: x ** 2, rng.normal(size=3))
    for idx in (3, -4, (0, 3), (0, 0, 0), [0, 5], np.array([True, False])):
        with pytest.raises(IndexError):
            J[idx]
        with pytest.raises(IndexError):
            np.zeros((3, 3))[idx]
    assert J.rows_evaluated == 0 and J.sweeps == 0
    H = jaccli.hessian(lambda x: (x ** 3).sum(), rng.normal(size=3))
    with pytest.raises(IndexError):
        H[3]


def test_inconsistent_batch_sizes_are_rejected(rng):
    with pytest.raises(ValueError):
        jaccli.jacobian(lambda x, y: (x ** 2, y ** 2), (rng.normal(size=(3, 2)), rng.normal(size=(4, 2))),
                        batch_axis=0)
    with pytest.raises(ValueError):
        jaccli.jacobian(lambda x: x.sum(), rng.normal(size=(3, 2)), batch_axis=0)


def test_batch_mixing_is_detected(rng):
    X = rng.normal(size=(4, 3))
    with pytest.raises(BatchMixingError):
        np.asarray(jaccli.jacobian(lambda X: X * X.sum(0), X, batch_axis=0))
    with pytest.raises(BatchMixingError):
        np.asarray(jaccli.hessian(lambda X: (X ** 2).sum(1) * X[0].sum(), X, batch_axis=0))


@pytest.mark.parametrize("chunk_size", [0, -1])
def test_nonpositive_chunk_size_is_rejected(rng, chunk_size):
    x = rng.normal(size=3)
    for fn in (jaccli.jacobian, jaccli.hessian):
        with pytest.raises(ValueError):
            fn(lambda x: (x ** 2).sum(), x, chunk_size=chunk_size)


def test_unknown_mode_is_rejected(rng):
    with pytest.raises(ValueError):
        jaccli.jacobian(lambda x: x, rng.normal(size=2), mode="sideways")


def test_grad_of_a_vector_output_is_rejected(rng):
    with pytest.raises(ValueError):
        jaccli.grad(lambda x: x ** 2, rng.normal(size=3))


@pytest.mark.parametrize("mode", ["forward", "reverse"])
def test_back_substitution_whose_last_step_is_an_empty_product(mode, rng):
    # x_i = (b_i - U[i, i+1:] @ x[i+1:]) / U[i, i]: for i = n-1 the product has an inner size of 0
    n = 4
    U = np.triu(rng.normal(size=(n, n))) + 3 * np.eye(n)

    def solve(b):
        x = np.zeros_like(b)
        for i in range(n - 1, -1, -1):
            x[i] = (b[i] - U[i, i + 1:] @ x[i + 1:]) / U[i, i]
        return x

    b, v = rng.normal(size=n), rng.normal(size=n)
    J = np.asarray(jaccli.jacobian(solve, b, mode=mode))
    assert_allclose(J, np.linalg.inv(U), rtol=1e-12, atol=1e-14)
    product = jaccli.jvp(solve, b, v)[1] if mode == "forward" else jaccli.vjp(solve, b, v)[1]
    assert_allclose(product, (np.linalg.inv(U) if mode == "forward" else np.linalg.inv(U).T) @ v, rtol=1e-12)

    def tails(x):  # x[i:] @ x[i:] for every i, the last one empty
        return np.stack([x[i:] @ x[i:] for i in range(n + 1)])

    expected = np.array([[2 * x if j >= i else 0.0 for j, x in enumerate(b)] for i in range(n + 1)])
    assert_allclose(np.asarray(jaccli.jacobian(tails, b, mode=mode)), expected, rtol=1e-14)
    product = jaccli.jvp(tails, b, v)[1] if mode == "forward" else jaccli.vjp(tails, b, np.ones(n + 1))[1]
    assert_allclose(product, expected @ v if mode == "forward" else expected.sum(axis=0), rtol=1e-14)


@pytest.mark.parametrize("call", [
    lambda f, x: jaccli.jacobian(f, x), lambda f, x: jaccli.hessian(f, x), lambda f, x: jaccli.grad(f, x),
    lambda f, x: jaccli.jvp(f, x, x), lambda f, x: jaccli.vjp(f, x, ()), lambda f, x: jaccli.hvp(f, x, x),
    lambda f, x: jaccli.jacobian(jaccli.record_once(f), x),
], ids=["jacobian", "hessian", "grad", "jvp", "vjp", "hvp", "record_once"])
def test_a_function_returning_an_empty_tuple_is_refused_by_every_entry_point(call):
    with pytest.raises(UserFunctionError):
        call(lambda x: (), np.ones(2))


@pytest.mark.parametrize("name", ["hessian", "hvp", "vhp"])
def test_a_vector_output_names_the_function_asking_and_only_hessian_offers_batch_axis(name):
    call = getattr(jaccli, name)
    args = (np.ones(3),) if name == "hessian" else (np.ones(3), np.ones(3))
    with pytest.raises(ValueError) as info:
        call(lambda x: x ** 2, *args)
    assert ("batch_axis" in str(info.value)) == (name == "hessian")


def test_a_data_input_refilled_in_place_leaves_lazy_results_at_the_point_they_were_made():
    w = np.array([0.5, -1.0])
    X = np.array([[1.0, 2.0], [3.0, 4.0]])
    X0 = X.copy()
    J = jaccli.jacobian(lambda w, X: np.tanh(X @ w), (w, X), wrt=0)
    H = jaccli.hessian(lambda w, X: np.sum(np.tanh(X @ w) ** 2), (w, X), wrt=0)
    X *= 2  # the next minibatch, written into the same buffer
    t = np.tanh(X0 @ w)
    assert_allclose(np.asarray(J), (1 - t ** 2)[:, None] * X0, rtol=1e-14)
    # d2/dw2 sum tanh(Xw)^2 = X^T diag(2 (1 - t^2)(1 - 3 t^2)) X
    assert_allclose(np.asarray(H), X0.T @ np.diag(2 * (1 - t ** 2) * (1 - 3 * t ** 2)) @ X0, rtol=1e-13)


@pytest.mark.parametrize("once", [False, True])
def test_hessian_of_one_input_among_several_is_one_block_of_its_dtype(once):
    f = lambda a, b: np.sum(a ** 2 * b.astype(np.float64) ** 3)  # noqa: E731
    g = jaccli.record_once(f) if once else f
    a = np.array([1.0, 2.0, 3.0])
    for k in range(3):
        b = np.array([0.5, -1.0, 2.0], dtype=np.float32) + np.float32(k)
        for wrt in (1, "b"):
            H = jaccli.hessian(g, (a, b), wrt=wrt)
            assert type(H) is jaccli.api.lazy.Hessian and H.shape == (3, 3) and H.dtype == np.float32
            assert_allclose(np.asarray(H), np.diag(6 * a ** 2 * b.astype(np.float64)), rtol=1e-6)
        (H0,), = jaccli.hessian(g, (a, b), wrt=(0,))  # (a sequence: nested as the inputs are)
        assert H0.dtype == np.float64
