"""Complex values through the public functions, by JAX's conventions (docs/complex.md), against
closed forms and central differences along real and imaginary directions."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import jaccli
from tests.helpers import central_diff
from tests.test_compositions import build, fd_jacobian, programs

X = np.array([0.3, -0.8, 1.4])
Z = np.array([0.3 + 0.2j, -0.5 + 1.1j, 0.9 - 0.4j])


@pytest.mark.parametrize("mode", ["reverse", "forward"])
def test_real_inputs_with_complex_outputs_give_d_re_plus_i_d_im(mode):
    J = jaccli.jacobian(lambda x: np.exp(1j * x) * x, X, mode=mode)
    assert J.dtype == complex
    np.testing.assert_allclose(J, np.diag(np.exp(1j * X) * (1 + 1j * X)), atol=1e-14)


def test_a_real_function_of_complex_inputs_has_jaxs_gradient_d_dx_minus_i_d_dy():
    # |z|^2 = x^2 + y^2: JAX's grad is 2x - 2iy = 2 conj(z) (its conjugate is the ascent direction)
    np.testing.assert_allclose(jaccli.grad(lambda z: np.sum(np.abs(z) ** 2), Z), 2 * np.conj(Z), atol=1e-14)
    f = lambda z: np.real(z * np.exp(z)) + np.angle(z)  # noqa: E731
    J = jaccli.jacobian(f, Z)
    dx = central_diff(lambda x: f(x + 1j * Z.imag), Z.real)
    dy = central_diff(lambda y: f(Z.real + 1j * y), Z.imag)
    np.testing.assert_allclose(J, dx - 1j * dy, rtol=1e-7, atol=1e-8)


def test_holomorphic_functions_give_f_prime_and_f_second():
    np.testing.assert_allclose(jaccli.jacobian(np.sin, Z, holomorphic=True), np.diag(np.cos(Z)), atol=1e-14)
    np.testing.assert_allclose(jaccli.grad(lambda z: np.sum(z ** 3), Z, holomorphic=True), 3 * Z ** 2, atol=1e-14)
    H = jaccli.hessian(lambda z: np.sum(np.exp(z) * z), Z, holomorphic=True)
    np.testing.assert_allclose(H, np.diag(np.exp(Z) * (Z + 2)), atol=1e-13)
    A = np.array([[2.0 + 1j, 0.5], [0.3j, 1.5 - 0.2j]])
    np.testing.assert_allclose(jaccli.jacobian(lambda z: np.linalg.solve(A, z), Z[:2], holomorphic=True),
                               np.linalg.inv(A), atol=1e-14)


def test_products_are_jaxs_pushforward_and_transpose():
    t = np.array([1 + 2j, -0.5j, 0.7])
    v = np.array([0.2 - 1j, 1.5, 1j])
    # holomorphic: J t = f' t and v^T J = v f' (a transpose, no conjugate)
    np.testing.assert_allclose(jaccli.jvp(np.exp, Z, t, holomorphic=True)[1], np.exp(Z) * t, atol=1e-14)
    np.testing.assert_allclose(jaccli.vjp(np.exp, Z, v, holomorphic=True)[1], np.exp(Z) * v, atol=1e-14)
    # conj(z) z = |z|^2, not holomorphic: d = conj(t) z + conj(z) t; its transpose pairs Re(v * d)
    _, d = jaccli.jvp(lambda z: np.conj(z) * z, Z, t)
    np.testing.assert_allclose(d, np.conj(t) * Z + np.conj(Z) * t, atol=1e-14)
    _, ct = jaccli.vjp(lambda z: np.conj(z) * np.exp(z), Z, v)
    u = np.array([0.4 - 0.3j, 1.1 + 0.2j, -0.6 + 0.9j])
    _, du = jaccli.jvp(lambda z: np.conj(z) * np.exp(z), Z, u)
    np.testing.assert_allclose(np.real(np.sum(ct * u)), np.real(np.sum(v * du)), rtol=1e-13)


def test_a_real_hessian_through_complex_values_matches_central_differences():
    def f(x):
        w = np.exp(2j * np.pi * x) * (1 + x ** 2) + np.linalg.det(np.outer(x, x) + 1j * np.eye(3))
        return np.sum(np.abs(w) ** 2) + np.real(np.prod(w))

    H = np.asarray(jaccli.hessian(f, X))
    np.testing.assert_allclose(H, central_diff(lambda x: jaccli.grad(f, x), X, h=1e-5), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(H, np.asarray(jaccli.hessian(f, X, mode="reverse")), rtol=1e-10, atol=1e-10)


def test_tuples_and_batches_mix_real_and_complex_blocks():
    def f(x, y):
        return np.exp(1j * x) * y, x * y

    J = jaccli.jacobian(f, (X, X[::-1]))
    np.testing.assert_allclose(J[0][0], np.diag(1j * np.exp(1j * X) * X[::-1]), atol=1e-14)
    np.testing.assert_allclose(J[0][1], np.diag(np.exp(1j * X)), atol=1e-14)
    np.testing.assert_allclose(J[1][0], np.diag(X[::-1]), atol=1e-14)
    B = np.arange(6.0).reshape(3, 2) / 5
    Jb = jaccli.jacobian(lambda b: np.exp(1j * b) * b[:, ::-1], B, batch_axis=0)
    assert Jb.shape == (3, 2, 2)
    full = jaccli.jacobian(lambda b: np.exp(1j * b) * b[:, ::-1], B)
    for i in range(3):
        np.testing.assert_allclose(Jb[i], full[i, :, i, :], atol=1e-14)


def test_complex_constants_reductions_and_casts_inside_f():
    c = np.array([1 - 2j, 0.5j, 3.0])

    def f(x):
        z = x.astype(complex) * c + 2j
        return np.real(np.mean(z * z) + np.sum(np.conj(z)) + np.prod(z[:2]))

    g = jaccli.grad(f, X)
    np.testing.assert_allclose(g, central_diff(f, X), rtol=1e-7, atol=1e-8)
    assert g.dtype == np.float64


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs(), st.integers(0, 2**31 - 1), st.sampled_from(["reverse", "forward"]))
def test_random_compositions_through_complex_values_match_central_differences(program, seed, mode):
    # the property tests' programs with complex inputs inside (hypot and logaddexp take real numbers only)
    sx, sy, steps = program
    steps = [(kind, un, bi if bi in ("add", "sub", "mul", "div") else "mul", red, k) for kind, un, bi, red, k in steps]
    rng = np.random.default_rng(seed)
    x, y = rng.uniform(-1, 1, sx), rng.uniform(-1, 1, sy)
    inner = build(steps)

    def f(x, y):
        return inner(x * (1 + 0.3j), y - 0.2j)

    jx, jy = jaccli.jacobian(f, (x, y), mode=mode)
    for j, J in enumerate((jx, jy)):
        fd = fd_jacobian(lambda *a: np.real(f(*a)), (x, y), j) + 1j * fd_jacobian(lambda *a: np.imag(f(*a)), (x, y), j)
        np.testing.assert_allclose(J, fd, rtol=1e-5, atol=1e-6)


def test_record_once_replays_functions_through_complex_values_as_plain_calls(rng):
    k = np.fft.rfftfreq(8, 1 / 8)

    def f(u):
        return np.fft.irfft(1j * k * np.fft.rfft(u * u), 8) + np.abs(np.exp(1j * u) * u) ** 2

    def g(z):
        return np.exp(z) * np.conj(z)

    once_f, once_g = jaccli.record_once(f), jaccli.record_once(g)
    for _ in range(3):
        u, v = rng.standard_normal((2, 8))
        for mode in ("reverse", "forward"):
            np.testing.assert_array_equal(np.asarray(jaccli.jacobian(once_f, u, mode=mode)),
                                          np.asarray(jaccli.jacobian(f, u, mode=mode)))
        np.testing.assert_array_equal(jaccli.vjp(once_f, u, v)[1], jaccli.vjp(f, u, v)[1])
        z, t = u[:4] + 1j * u[4:], v[:4] - 1j * v[4:]
        np.testing.assert_array_equal(jaccli.vjp(once_g, z, t)[1], jaccli.vjp(g, z, t)[1])
        np.testing.assert_array_equal(jaccli.jvp(once_g, z, t)[1], jaccli.jvp(g, z, t)[1])
    assert jaccli.jacobian(once_f, u).stats["path"] == "replay"


def test_a_subtracted_complex_cotangent_is_negated_bit_for_bit_in_both_modes():
    # subtract's rules negate complex128 blocks through their float64 view: NumPy's -g to the bit
    # (NaN, inf and signed zeros too), in every layout; and the Jacobians through a difference of
    # complex values agree with central differences
    from jaccli.engine.rules._util import negated

    z = np.array([[np.nan + 1j, -0.0 + 0j, np.inf - 2j], [1.5 - 0.0j, -np.inf + np.nan * 1j, 0.25 + 3j]])
    for g in (z, np.asfortranarray(z), z[:, ::2], z[0], z.astype(np.complex64), z.real):
        got = negated(g)
        assert got.dtype == g.dtype and got.shape == g.shape
        bits = lambda a: np.ascontiguousarray(a).view(np.uint8)  # noqa: E731
        np.testing.assert_array_equal(bits(got), bits(np.negative(g)))
    k = np.arange(5) + 0.5

    def f(x):  # a subtracted spectrum, real again at the end
        return np.fft.irfft(np.fft.rfft(x) * k - np.fft.rfft(x * x) * (0.5j * k), n=8)
    x = np.linspace(0.1, 0.9, 8)
    for mode in ("reverse", "forward"):
        np.testing.assert_allclose(jaccli.jacobian(f, x, mode=mode), central_diff(f, x), atol=1e-8)
