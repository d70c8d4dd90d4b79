"""Arrays f makes with NumPy (np.zeros(m), np.empty, np.ones, np.full, np.eye, np.array of numbers, ...)
and fills element by element, by slices, by masks or with `+=`: differentiated as written, in both
modes, in blocks of seeds, through record_once and sparsity detection, against closed forms."""

from __future__ import annotations

import numpy as np
import pytest

import jaccli
from jaccli.errors import TracingError
from tests.helpers import central_diff

T = np.linspace(0.1, 2.0, 7)  # m = 7 residuals of n = 2 or 3 parameters: m != n
Y = np.cos(T) + 0.1
X = np.array([1.3, 0.6, -0.4])


def exp_decay(x):
    r = np.zeros(len(T))
    for i in range(len(T)):
        r[i] = Y[i] - x[0] * np.exp(-x[1] * T[i])
    return r


def exp_decay_jacobian(x):
    e = np.exp(-x[1] * T)
    return np.stack([-e, x[0] * T * e, 0.0 * T], axis=1)


def slices(x):
    r = np.empty(len(T))
    r[:3] = x[0] * T[:3] ** 2
    r[3:] = x[1] * x[2] * T[3:]
    return r


def slices_jacobian(x):
    J = np.zeros((7, 3))
    J[:3, 0] = T[:3] ** 2
    J[3:, 1] = x[2] * T[3:]
    J[3:, 2] = x[1] * T[3:]
    return J


MASK = T > 0.9


def masks(x):
    r = np.ones(len(T))
    r[MASK] = x[0] * np.sin(T[MASK])
    r[~MASK] = x[1] ** 2
    return r


def masks_jacobian(x):
    J = np.zeros((7, 3))
    J[MASK, 0] = np.sin(T[MASK])
    J[~MASK, 1] = 2 * x[1]
    return J


def accumulated(x):
    R = np.zeros((len(T), 2))
    for i in range(len(T)):
        for j in range(2):
            R[i, j] += x[j] * T[i]
            R[i, j] += x[2] ** 2
    return R


def accumulated_jacobian(x):
    J = np.zeros((7, 2, 3))
    J[:, 0, 0] = T
    J[:, 1, 1] = T
    J[:, :, 2] = 2 * x[2]
    return J


def made_every_way(x):
    a = np.full(3, 2.0)
    a[1] = x[0]
    b = np.eye(3)
    b[0, 2] = x[1]
    c = np.array([1.0, 2.0, 3.0])
    c[2] = x[2] * x[0]
    d = np.arange(3).astype(float)
    d[0] = x[1] ** 3
    e = np.zeros_like(T)[:3]
    e = np.ones_like(T[:3])
    e[:] = x * 2.0
    g = np.empty((3,))
    g[...] = 1.0
    g[1] += x[2]
    return a + b @ c + d + e + g + np.identity(3)[0] + np.full_like(T[:3], 1.0)


def made_every_way_jacobian(x):
    # a + b @ c + d + e + g, each row by hand: b @ c = [c0 + x1 c2, c1, c2], c2 = x2 x0
    J = np.zeros((3, 3))
    J[1, 0] += 1.0                               # a
    J[0, 1] += x[2] * x[0]                       # b[0, 2] * c[2], by x1
    J[0, 2] += x[1] * x[0]; J[0, 0] += x[1] * x[2]
    J[2, 2] += x[0]; J[2, 0] += x[2]             # c[2]
    J[0, 1] += 3 * x[1] ** 2                     # d
    J += 2.0 * np.eye(3)                         # e
    J[1, 2] += 1.0                               # g
    return J


CASES = [(exp_decay, exp_decay_jacobian), (slices, slices_jacobian), (masks, masks_jacobian),
         (accumulated, accumulated_jacobian), (made_every_way, made_every_way_jacobian)]


@pytest.mark.parametrize("mode", ["reverse", "forward"])
@pytest.mark.parametrize("f, closed", CASES, ids=[f.__name__ for f, _ in CASES])
def test_arrays_made_with_numpy_and_filled_are_differentiated_as_written(f, closed, mode):
    for chunk in (1, 2, None):  # one seed at a time, and blocks of seeds
        J = np.asarray(jaccli.jacobian(f, X, mode=mode, chunk_size=chunk))
        np.testing.assert_allclose(J, closed(X), rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("f, closed", CASES, ids=[f.__name__ for f, _ in CASES])
def test_record_once_replays_the_writes_at_new_points(f, closed):
    rec = jaccli.record_once(f)
    for x in (X, X + 0.25, X * -1.5):
        np.testing.assert_allclose(np.asarray(jaccli.jacobian(rec, x)), closed(x), rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("f, closed", CASES, ids=[f.__name__ for f, _ in CASES])
def test_sparsity_detection_sees_through_the_writes(f, closed):
    J = jaccli.sparse_jacobian(f, X)
    blocks = J if isinstance(J, list) else [J]
    dense = np.asarray(blocks[0].todense()).reshape(closed(X).shape)
    np.testing.assert_allclose(dense, closed(X), rtol=1e-13, atol=1e-13)
    detected = jaccli.sparsity(f, X)
    truth = closed(X + np.array([0.1, 0.2, 0.3])) != 0  # nonzero at a generic point
    found = np.asarray(detected.pattern.todense()).reshape(truth.shape)
    np.testing.assert_array_equal(found, truth)  # the writes are moves: no entry missed, none added
    assert detected.dense_ops == []


def test_a_hessian_through_element_writes_is_the_closed_form():
    def loss(x):
        return 0.5 * np.sum(exp_decay(x) ** 2)

    e = np.exp(-X[1] * T)
    r = Y - X[0] * e
    J = exp_decay_jacobian(X)
    H = J.T @ J
    H[0, 1] += np.sum(r * T * e)       # second derivatives of r: d2r/dx0dx1 = T e, d2r/dx1^2 = -x0 T^2 e
    H[1, 0] += np.sum(r * T * e)
    H[1, 1] += np.sum(r * -X[0] * T ** 2 * e)
    for mode in ("forward", "reverse"):
        np.testing.assert_allclose(np.asarray(jaccli.hessian(loss, X, mode=mode)), H, rtol=1e-12, atol=1e-12)


def test_arrays_that_get_no_traced_value_stay_numpy_arrays():
    seen = {}

    def f(x):
        a = np.zeros(3)
        a[0] = 5.0
        seen["isinstance"] = isinstance(a, np.ndarray)
        seen["values"] = (a * 2.0).tolist()
        seen["asarray"] = type(np.asarray(a))
        return x * a[0]

    np.testing.assert_array_equal(np.asarray(jaccli.jacobian(f, X)), 5.0 * np.eye(3))
    assert seen == {"isinstance": True, "values": [10.0, 0.0, 0.0], "asarray": np.ndarray}
    assert type(np.zeros(3)) is np.ndarray  # outside f, NumPy's own


def test_a_written_array_whose_memory_is_read_directly_holds_nan_not_values_without_derivatives():
    import scipy.linalg  # its np.asarray_chkfinite reads the array's own memory, not the traced array

    def f(x):
        r = np.zeros(3)
        r[0] = x[0]
        return x * scipy.linalg.norm(r)

    with pytest.raises(ValueError, match="infs or NaNs"):
        jaccli.jacobian(f, X)


def test_an_installed_package_that_indexes_and_computes_with_numpy_is_recorded():
    from scipy.optimize import rosen  # np.asarray of the array hands it back: rosen's arithmetic is recorded

    def f(x):
        r = np.zeros(4)
        r[1:] = x
        return rosen(r)

    def rosen_grad(x):
        z = np.concatenate([[0.0], x])
        g = np.zeros(4)
        g[:-1] += -400 * z[:-1] * (z[1:] - z[:-1] ** 2) - 2 * (1 - z[:-1])
        g[1:] += 200 * (z[1:] - z[:-1] ** 2)
        return g[1:]

    np.testing.assert_allclose(np.asarray(jaccli.jacobian(f, X)), rosen_grad(X), rtol=1e-13)


def test_a_traced_write_into_a_view_of_a_made_array_says_to_write_into_the_array():
    def f(x):
        R = np.zeros((2, 3))
        row = R[0]
        row[1] = x[0]
        return R

    with pytest.raises(TracingError, match=r"row\[1\] = v.*write into the array itself with one index"):
        jaccli.jacobian(f, X)


def test_an_integer_array_takes_the_truncated_value_as_numpy_does_a_step_with_no_derivative():
    def f(x):
        k = np.zeros(3, dtype=int)
        k[0] = x[0] * 2.0  # 2.6 -> 2, as NumPy's cast
        return x * k[0]

    np.testing.assert_array_equal(np.asarray(jaccli.jacobian(f, X)), 2.0 * np.eye(3))


def test_int_of_a_traced_value_is_a_constant_loop_bound_or_table_index():
    table = np.arange(7.0) ** 2

    def f(x):
        i = int(x[0] * 2.0)                    # a table's row: 2
        s = table[i] + (x[0] * 2.0 - i) * (table[i + 1] - table[i])   # linear interpolation
        for _ in range(int(x[0])):             # a loop bound: once
            s = s + x[1] ** 2
        return s

    np.testing.assert_allclose(np.asarray(jaccli.jacobian(f, X)), [2.0 * 5.0, 2 * X[1], 0.0], rtol=1e-14)
    rec = jaccli.record_once(f)
    y = np.array([2.2, 0.5, 0.0])  # row 4, twice round the loop: recorded again, not the old constants
    np.testing.assert_allclose(np.asarray(jaccli.jacobian(rec, X)), [10.0, 2 * X[1], 0.0], rtol=1e-14)
    np.testing.assert_allclose(np.asarray(jaccli.jacobian(rec, y)), [2.0 * 9.0, 2 * 2 * y[1], 0.0], rtol=1e-14)


def test_float_of_a_traced_value_says_where_and_that_int_is_a_constant():
    def f(x):
        return x * float(x[0])

    with pytest.raises(TracingError, match=r"test_element_writes.py:\d+: float\(\) takes a traced value out.*"
                                           r"int\(x\[0\]\) is taken as a constant"):
        jaccli.jacobian(f, X)


def test_an_installed_packages_function_that_converts_is_named_with_what_to_do():
    from scipy.integrate import odeint

    def f(x):
        return odeint(lambda y, t: -x[0] * y, np.ones(1), [0.0, 1.0])

    with pytest.raises(TracingError, match=r"scipy.integrate.odeint, an installed package's function, converts f's "
                                           r"traced values.*write what scipy.integrate.odeint computes with NumPy"):
        jaccli.jacobian(f, X)


@pytest.mark.parametrize("kind", ["Polynomial", "Chebyshev", "Legendre", "Hermite"])
def test_numpy_polynomial_classes_evaluate_traced_points(kind):
    import numpy.polynomial as npp

    cls = getattr(npp, kind)
    p = cls([0.5, -1.0, 2.0, 0.25], domain=[-2.0, 3.0])
    dp = p.deriv()

    def f(x):
        return p(x) + npp.polynomial.polyval(x, [1.0, 2.0])

    np.testing.assert_allclose(np.asarray(jaccli.jacobian(f, X)), np.diag(dp(X) + 2.0), rtol=1e-13, atol=1e-13)


RESIDUALS_FILE = """import numpy as np

T = np.linspace(0.1, 2.0, 9)


def f(x):
    r = np.zeros(len(T) + len(x) - 1)     # m != n, filled element by element
    for i in range(len(T)):
        r[i] = np.cos(T[i]) - x[0] * np.exp(-x[1] * T[i])
    r[len(T):] = x[1:] - x[:-1] ** 2      # and by a slice
    return r
"""


@pytest.mark.parametrize("sparse", [False, True])
def test_the_command_line_differentiates_residuals_filled_into_np_zeros(tmp_path, sparse):
    import scipy.sparse as sp

    from .test_cli import invoke, make_runner, write

    x = np.linspace(0.5, 1.5, 6)
    np.save(tmp_path / "x.npy", x)
    out = tmp_path / ("J.npz" if sparse else "J.npy")
    result = invoke(make_runner(), "jacobian", write(tmp_path, "res.py", RESIDUALS_FILE), str(tmp_path / "x.npy"),
                    *(["--sparse"] if sparse else []), "-o", str(out))
    assert result.exit_code == 0, result.output
    J = sp.load_npz(out).toarray() if sparse else np.load(out)
    t = np.linspace(0.1, 2.0, 9)
    want = np.zeros((14, 6))
    want[:9, 0] = -np.exp(-x[1] * t)
    want[:9, 1] = x[0] * t * np.exp(-x[1] * t)
    for k in range(5):
        want[9 + k, k + 1] = 1.0
        want[9 + k, k] = -2.0 * x[k]
    np.testing.assert_allclose(J, want, rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("mode", ["reverse", "forward"])
def test_a_loop_of_writes_into_np_zeros_keeps_one_buffer_and_copies_no_seed_block_per_write(mode, monkeypatch):
    from jaccli.engine.rules import indexing

    m, n = 80, 5
    M = np.random.default_rng(3).standard_normal((m, m))  # makes every seed block dense
    x = np.random.default_rng(4).standard_normal(n)

    def f(x):
        r = np.zeros(m)
        for i in range(m):
            r[i] = x[i % n] ** 2 * (i + 1.0)
        return M @ r

    want = np.zeros((m, n))
    want[np.arange(m), np.arange(m) % n] = 2 * x[np.arange(m) % n] * (np.arange(m) + 1.0)
    copies = []
    impl = indexing.assign.impl
    monkeypatch.setattr(indexing.assign, "impl", lambda a, v, idx: copies.append(np.ndim(a)) or impl(a, v, idx))
    np.testing.assert_allclose(np.asarray(jaccli.jacobian(f, x, mode=mode)), M @ want, rtol=1e-12, atol=1e-12)
    assert sum(1 for d in copies if d == 1) <= 2, f"{len(copies)} copies of r for {m} writes"  # the recording
    assert sum(1 for d in copies if d > 1) <= 2, f"{len(copies)} copies of a seed block for {m} writes"


def test_in_place_operators_on_a_made_array_take_traced_and_plain_values():
    def f(x):
        r = np.ones(3)
        r *= 2.0          # plain: NumPy's own
        r += x            # traced: r now stands for 2 + x
        r[1] *= x[2]
        return r

    want = np.eye(3)
    want[1] = [0.0, X[2], 2.0 + X[1]]
    for mode in ("reverse", "forward"):
        np.testing.assert_allclose(np.asarray(jaccli.jacobian(f, X, mode=mode)), want, rtol=1e-14)


def test_an_array_used_by_a_recorded_operation_then_written_keeps_numpys_semantics():
    def f(x):
        w = np.full(3, 2.0)
        y = x * w         # holds w's values as they are now
        w[0] = x[1]       # a traced write: w becomes traced; y is unchanged, as in NumPy
        return y + w

    want = 2.0 * np.eye(3)
    want[0, 1] += 1.0
    np.testing.assert_allclose(np.asarray(jaccli.jacobian(f, X)), want, rtol=1e-14)


def _writer_cases():
    # NumPy's in-place writers as the first write of a traced value into an array f made (writing-functions.md
    # lists them): each was refused there, as if f had not made the array, until a traced r[i] = v came first
    mask = np.array([True, False, True, False, True, True])
    idx = np.array([0, 2, 2, 5])

    def add_at(x):
        y = np.zeros(6)
        np.add.at(y, idx, x[idx] * x[1])
        return y

    def multiply_at(x):
        y = np.ones(6)
        np.multiply.at(y, idx, x[idx])
        return y

    def put(x):
        y = np.full(6, 2.0)
        np.put(y, [1, 4], x[[3, 0]] ** 2)
        return y

    def putmask(x):
        y = np.zeros(6)
        np.putmask(y, mask, np.sin(x))
        return y

    def copyto(x):
        y = np.zeros(6)
        np.copyto(y, x * x[2], where=mask)
        return y

    def place(x):
        y = np.arange(6.0)
        np.place(y, mask, x[:4] * 3.0)
        return y

    def put_along_axis(x):
        y = np.zeros((2, 3))
        np.put_along_axis(y, np.array([[2], [0]]), x[[1, 4]].reshape(2, 1), axis=1)
        return y.ravel()

    def fill_diagonal(x):
        y = np.full((3, 3), 0.25)
        np.fill_diagonal(y, x[:3] * x[5])
        return y.ravel()

    def flat(x):
        y = np.zeros((2, 3))
        y.flat[[0, 4, 5]] = x[[5, 1, 2]]
        y.flat[1] = 7.0  # a plain value written through flat afterwards
        z = np.zeros(6)
        z.flat = x * x[0]  # (NumPy's z.flat[:] = v)
        return y.ravel() + y.flat[4] + z

    return [add_at, multiply_at, put, putmask, copyto, place, put_along_axis, fill_diagonal, flat]


@pytest.mark.parametrize("f", _writer_cases(), ids=lambda f: f.__name__)
def test_numpys_writers_take_a_traced_value_into_an_array_f_made(f):
    x = np.linspace(0.4, 1.6, 6)
    for mode in ("reverse", "forward"):
        np.testing.assert_allclose(np.asarray(jaccli.jacobian(f, x, mode=mode)), central_diff(f, x), rtol=1e-7,
                                   atol=1e-8)
    g = jaccli.record_once(f)
    for point in (x, x + 0.3):
        np.testing.assert_allclose(np.asarray(jaccli.jacobian(g, point)), central_diff(f, point), rtol=1e-7,
                                   atol=1e-8)


def test_numpys_writers_of_plain_values_leave_an_array_f_made_plain():
    def f(x):
        y = np.zeros((3, 3))
        np.fill_diagonal(y, 2.0)
        np.add.at(y, ([0, 0], [1, 1]), 1.5)
        y.flat[5] = 4.0
        w = np.zeros(2)
        w.flat = 1.0
        assert type(w).__name__ == "Fillable" and list(w) == [1.0, 1.0]
        assert type(y).__name__ == "Fillable" and y[0, 1] == 3.0 and list(y.flat[[4, 5]]) == [2.0, 4.0]
        return y @ x

    x = np.array([0.5, 1.0, 2.0])
    np.testing.assert_allclose(np.asarray(jaccli.jacobian(f, x)), [[2.0, 3.0, 0.0], [0.0, 2.0, 4.0], [0, 0, 2.0]])
