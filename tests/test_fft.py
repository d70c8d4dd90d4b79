"""np.fft in whole functions: a spectral derivative against its closed form, an FFT convolution's
adjoint, both modes, blocks of seeds as one batched transform."""

from __future__ import annotations

import subprocess
import sys
import types
import warnings

import numpy as np
import pytest

import jaccli
from jaccli.engine.recording import Recording
from tests.helpers import central_diff


def _spectral_derivative(u):
    n = u.shape[-1]
    k = 2 * np.pi * np.fft.rfftfreq(n, d=2 * np.pi / n)
    return np.fft.irfft(1j * k * np.fft.rfft(u), n)


@pytest.mark.parametrize("mode", ["reverse", "forward"])
def test_the_jacobian_of_a_spectral_derivative_is_the_differentiation_matrix(mode):
    # d/du of D(u) is D itself; D applied to sin(m x) is m cos(m x) (m below the Nyquist frequency)
    n = 16
    x = 2 * np.pi * np.arange(n) / n
    J = np.asarray(jaccli.jacobian(_spectral_derivative, np.sin(x), mode=mode))
    for m in (1, 3, 7):
        np.testing.assert_allclose(J @ np.sin(m * x), m * np.cos(m * x), atol=1e-12)
    # and of a nonlinear residual u u' (Burgers): J = diag(u') + diag(u) D
    u = np.cos(x) + 0.3 * np.sin(2 * x)
    J = np.asarray(jaccli.jacobian(lambda u: u * _spectral_derivative(u), u, mode=mode))
    D = np.asarray(jaccli.jacobian(_spectral_derivative, u))
    np.testing.assert_allclose(J, np.diag(D @ u) + u[:, None] * D, atol=1e-12)


def test_an_fft_convolution_and_its_adjoint(rng):
    # circular convolution with a kernel h: its vjp is the correlation with h (the adjoint), its
    # Jacobian the circulant matrix of h
    n = 12
    h, u, v = rng.standard_normal((3, n))

    def conv(u):
        return np.fft.irfft(np.fft.rfft(u) * np.fft.rfft(h), n)

    circulant = np.stack([np.roll(h, j) for j in range(n)], axis=1)
    np.testing.assert_allclose(np.asarray(jaccli.jacobian(conv, u, mode="forward")), circulant, atol=1e-12)
    _, vjp = jaccli.vjp(conv, u, v)
    np.testing.assert_allclose(vjp, circulant.T @ v, atol=1e-12)
    _, jvp = jaccli.jvp(conv, u, v)
    np.testing.assert_allclose(jvp, circulant @ v, atol=1e-12)


def test_a_real_to_complex_transform_has_a_complex_jacobian():
    # real in, complex out: d Re + i d Im, the DFT matrix's first rows
    n = 6
    u = np.arange(n, dtype=float)
    dft = np.exp(-2j * np.pi * np.outer(np.arange(n), np.arange(n)) / n)
    for mode in ("reverse", "forward"):
        np.testing.assert_allclose(np.asarray(jaccli.jacobian(np.fft.rfft, u, mode=mode)), dft[: n // 2 + 1],
                                   atol=1e-12)
        np.testing.assert_allclose(np.asarray(jaccli.jacobian(np.fft.fft, u, mode=mode)), dft, atol=1e-12)


def test_a_holomorphic_fft_has_the_dft_matrix_as_its_jacobian(rng):
    n = 5
    z = rng.standard_normal(n) + 1j * rng.standard_normal(n)
    dft = np.exp(-2j * np.pi * np.outer(np.arange(n), np.arange(n)) / n)
    np.testing.assert_allclose(jaccli.jacobian(np.fft.fft, z, holomorphic=True), dft, atol=1e-12)
    np.testing.assert_allclose(jaccli.jacobian(np.fft.ifft, z, holomorphic=True), np.conj(dft) / n, atol=1e-12)


def test_a_hessian_through_ffts_matches_central_differences(rng):
    u = rng.standard_normal(8)

    def energy(u):
        return np.sum(_spectral_derivative(u ** 2) ** 2) + np.sum(np.abs(np.fft.fft(u)) ** 3)

    H = np.asarray(jaccli.hessian(energy, u))
    g = lambda u: jaccli.grad(energy, u)  # noqa: E731
    np.testing.assert_allclose(H, central_diff(g, u, h=1e-5), rtol=1e-6, atol=1e-6)


def test_a_block_of_seeds_is_one_batched_transform_and_equals_single_seeds(rng, monkeypatch):
    u = rng.standard_normal(10)
    rec = Recording(lambda u: _spectral_derivative(u * u), (u,), (0,))
    from jaccli.engine.rules import fft as rules

    calls = []
    real = rules._pfu  # NumPy's pocketfft ufuncs, one call an axis (the rules call them inline too)
    counted = types.SimpleNamespace(**{
        name: lambda x, *a, _real=getattr(real, name), **kw: calls.append(np.shape(x)) or _real(x, *a, **kw)
        for name in ("fft", "ifft", "rfft_n_even", "rfft_n_odd", "irfft")})
    monkeypatch.setattr(rules, "_pfu", counted)
    vs = rng.standard_normal((4, 10))
    block = np.asarray(rec.vjp([vs])[0])
    ts = rng.standard_normal((4, 10))
    tblock = np.asarray(rec.jvp([ts])[0])
    assert len(calls) == 4 and all(shape[0] == 4 for shape in calls), calls  # one call per transform, of all 4 seeds
    for k in range(4):
        np.testing.assert_allclose(block[k], np.asarray(rec.vjp([vs[k:k + 1]])[0])[0], rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(tblock[k], np.asarray(rec.jvp([ts[k:k + 1]])[0])[0], rtol=1e-12, atol=1e-12)


def test_fftfreq_and_rfftfreq_are_constants_inside_f():
    u = np.linspace(0.0, 1.0, 8)
    J = np.asarray(jaccli.jacobian(lambda u: u * np.fft.fftfreq(8, d=0.5) + np.fft.rfftfreq(8).sum(), u))
    np.testing.assert_allclose(J, np.diag(np.fft.fftfreq(8, d=0.5)))


def test_fft_shifts_move_entries_and_transforms_are_dense_in_sparsity_detection():
    u = np.arange(5.0)
    J = np.asarray(jaccli.jacobian(np.fft.fftshift, u))
    np.testing.assert_array_equal(J, np.eye(5)[np.fft.fftshift(np.arange(5))])
    assert jaccli.sparsity(lambda u: np.fft.ifftshift(u) * 2.0, u).nnz == 5
    assert jaccli.sparsity(lambda u: np.fft.irfft(np.fft.rfft(u) * 2.0, 5), u).nnz == 25


def test_a_bad_norm_is_numpys_error():
    with pytest.raises(ValueError, match="Invalid norm value"):
        jaccli.jacobian(lambda u: np.fft.irfft(np.fft.rfft(u, norm="unitary")), np.ones(4))


@pytest.mark.parametrize("ufuncs", ["numpy's ufuncs", "numpy's functions"])
def test_the_transforms_give_numpys_results_to_the_bit(rng, monkeypatch, ufuncs):
    # the primitives call NumPy's pocketfft ufuncs directly on float64/complex128 (NumPy >= 2), and
    # NumPy's functions otherwise: either way, NumPy's results and dtypes
    from jaccli.engine.rules import fft as rules

    if ufuncs == "numpy's functions":
        monkeypatch.setattr(rules, "_pfu", None)
    x = rng.standard_normal((3, 4, 6))
    z = x + 1j * rng.standard_normal((3, 4, 6))
    cases = [(None, (2,)), (None, (0, 1)), ((6,), (2,)), ((5,), (2,)), ((9,), (-1,)), ((4, 6), (1, 2)),
             ((3, 7), (0, 2)), ((2, 3, 4), (0, 1, 2)), ((4,), (1,)), ((5, 3), (2, 0))]
    for s, axes in cases:
        axes = tuple(a % 3 for a in axes)
        for norm in (None, "backward", "ortho", "forward"):
            for a in (x, z, np.asfortranarray(z), x.astype(np.float32), z.astype(np.complex64)):
                for got, want in ((rules._c2c(a, s, axes, norm, False), np.fft.fftn(a, s, axes, norm)),
                                  (rules._c2c(a, s, axes, norm, True), np.fft.ifftn(a, s, axes, norm)),
                                  (rules._c2r(a, s, axes, norm), np.fft.irfftn(a, s, axes, norm))):
                    assert got.dtype == want.dtype and got.shape == want.shape
                    np.testing.assert_array_equal(got, want)
                if not np.iscomplexobj(a):
                    got, want = rules._r2c(a, s, axes, norm), np.fft.rfftn(a, s, axes, norm)
                    assert got.dtype == want.dtype
                    np.testing.assert_array_equal(got, want)


def test_numpys_private_ufuncs_are_used_only_while_they_agree_with_its_functions(monkeypatch):
    # the private interface is checked once at import; a NumPy whose ufuncs changed gets its functions
    from jaccli.engine.rules import fft as rules

    if int(np.__version__.split(".")[0]) >= 2:
        assert rules._pfu is not None and rules._private_ufuncs_agree()
        real = rules._pfu

        class Shifted:  # every transform off by one ulp-sized amount: no longer NumPy's to the bit
            def __getattr__(self, name):
                ufunc = getattr(real, name)
                return lambda *a, **kw: ufunc(*a, **kw) * (1 + 2 ** -40)

        class Changed:  # a signature that no longer takes these arguments
            def __getattr__(self, name):
                def call(*a, **kw):
                    raise TypeError("unexpected keyword argument 'axes'")
                return call

        for stub in (Shifted(), Changed()):
            monkeypatch.setattr(rules, "_pfu", stub)
            assert not rules._private_ufuncs_agree()


@pytest.mark.parametrize("mode", ["forward", "reverse"])
def test_hessians_through_the_transposes_match_central_differences_of_the_gradient(rng, mode):
    # the cotangents reaching rfft's and irfft's transposes depend on u, so the Hessian takes the
    # transposes' own rules: forward over reverse their forward rules, reverse over reverse their
    # transposes (rfft and irfft again)
    u = rng.standard_normal(7)

    def energy(u):
        return np.sum(np.fft.irfft(np.fft.rfft(u * u, n=9) ** 2, 8, norm="forward") ** 2)

    H = np.asarray(jaccli.hessian(energy, u, mode=mode))
    np.testing.assert_allclose(H, central_diff(lambda u: jaccli.grad(energy, u), u, h=1e-5), rtol=1e-6, atol=1e-6)


def _ks(u):
    # the Kuramoto-Sivashinsky residual of benchmarks/spectral.py, n points on [0, 32 pi)
    n = u.shape[-1]
    k = np.fft.rfftfreq(n, d=32 * np.pi / n) * 2 * np.pi
    return np.fft.irfft((k ** 2 - k ** 4) * np.fft.rfft(u) - 0.5j * k * np.fft.rfft(u * u), n=n)


def test_products_of_a_replayed_spectral_function_are_the_jacobians_rows_and_columns(rng):
    # record_once's replays, at new points, in the form a loop of products takes (float64 vectors
    # of the output's shape: no conversion, the compiled sweep's program): v^T J and J t against
    # the Jacobian of a fresh recording and against central differences, several points and vectors
    n = 16
    once = jaccli.record_once(_ks)
    pairing = jaccli.record_once(lambda u, w: _ks(u) @ w)  # (w: compared at each call, not differentiated)
    w = rng.standard_normal(n)
    for _ in range(4):
        u, v, t = rng.standard_normal((3, n))
        J = np.asarray(jaccli.jacobian(_ks, u))
        np.testing.assert_allclose(J, central_diff(_ks, u), rtol=1e-6, atol=1e-6)
        value, vjp = jaccli.vjp(once, u, v)
        np.testing.assert_array_equal(value, _ks(u))
        np.testing.assert_allclose(vjp, v @ J, rtol=1e-12, atol=1e-12)
        assert vjp.dtype == np.float64 and vjp.shape == (n,)
        np.testing.assert_allclose(jaccli.jvp(once, u, t)[1], J @ t, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(jaccli.grad(pairing, (u, w), wrt=0), w @ J, rtol=1e-12, atol=1e-12)
    assert once.replays >= 6 and pairing.replays >= 3


def test_products_of_replayed_complex_spectra_follow_jaxs_conventions(rng):
    # real in, complex out: v^T J is Re(c J) for a complex cotangent c; holomorphic: c J, J t
    n = 8
    real_in = jaccli.record_once(lambda u: np.fft.rfft(u * u))
    holomorphic = jaccli.record_once(lambda z: np.fft.fft(z * z))
    for _ in range(3):
        u = rng.standard_normal(n)
        c = rng.standard_normal(n // 2 + 1) + 1j * rng.standard_normal(n // 2 + 1)
        J = np.asarray(jaccli.jacobian(lambda u: np.fft.rfft(u * u), u))
        got = jaccli.vjp(real_in, u, c)[1]
        assert got.dtype == np.float64
        np.testing.assert_allclose(got, np.real(c @ J), rtol=1e-12, atol=1e-12)
        z = u + 1j * rng.standard_normal(n)
        w = rng.standard_normal(n) + 1j * rng.standard_normal(n)
        Jz = np.asarray(jaccli.jacobian(lambda z: np.fft.fft(z * z), z, holomorphic=True))
        fd = central_diff(lambda x: np.fft.fft((x + 1j * z.imag) ** 2), z.real)  # d/dx = f'(z) for holomorphic f
        np.testing.assert_allclose(Jz, fd, rtol=1e-6, atol=1e-6)
        got = jaccli.vjp(holomorphic, z, w)[1]
        assert got.dtype == np.complex128
        np.testing.assert_allclose(got, w @ Jz, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(jaccli.jvp(holomorphic, z, w)[1], Jz @ w, rtol=1e-12, atol=1e-12)
    assert real_in.replays >= 2 and holomorphic.replays >= 4


def test_a_large_square_jacobian_through_real_ffts_is_swept_forward_by_auto(rng, monkeypatch):
    # rfft's and irfft's transposes conjugate and weight the spectrum besides transforming it: with
    # as many rows as columns, in a block too large for the caches (made small here), mode="auto"
    # takes columns (forward), and gets what reverse gets; a square Jacobian without them, or a
    # smaller one, still takes rows
    from jaccli.api import evaluator

    u = rng.standard_normal(12)
    J = jaccli.jacobian(_ks, u)
    np.asarray(J)
    assert J.rows_evaluated == 12 and J.cols_evaluated == 0
    monkeypatch.setattr(evaluator, "FORWARD_ON_A_TIE_FROM", 144)
    J = jaccli.jacobian(_ks, u)
    dense = np.asarray(J)
    assert J.cols_evaluated == 12 and J.rows_evaluated == 0
    np.testing.assert_allclose(dense, np.asarray(jaccli.jacobian(_ks, u, mode="reverse")), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(dense, central_diff(_ks, u), rtol=1e-6, atol=1e-6)
    once = jaccli.record_once(_ks)
    for _ in range(3):
        J = jaccli.jacobian(once, u)
        np.testing.assert_allclose(np.asarray(J), dense, rtol=1e-12, atol=1e-12)
        assert J.cols_evaluated == 12 and J.rows_evaluated == 0
    J = jaccli.jacobian(lambda u: np.fft.fft(u).real * u, u)  # (fft's transpose is one transform too)
    np.asarray(J)
    assert J.rows_evaluated == 12 and J.cols_evaluated == 0


def test_the_transposes_conjugate_and_weight_in_one_pass_as_numpy_would(rng):
    # conj(h) * weights, one multiplication over the float64 view of a complex128 spectrum whose
    # half-spectrum axis is the last: NumPy's values to the bit, in every layout and for both weights
    from jaccli.engine.rules import fft as rules

    z = rng.standard_normal((3, 5, 9)) + 1j * rng.standard_normal((3, 5, 9))
    for h in (z, np.asfortranarray(z), z[:, ::2], z[..., :7], z.astype(np.complex64), z[0, 0]):
        for n, inner, outer in ((2 * (h.shape[-1] - 1), 2.0, 1.0), (2 * h.shape[-1] - 1, 0.5, 1.0)):
            want = np.conjugate(h) * rules._half_weights(n, 0, inner, outer)
            got = rules._conjugated_weighted(h, n, 0, inner, outer)
            assert got.dtype == want.dtype and got is not h
            np.testing.assert_array_equal(got, want)
            own = h.copy()
            got = rules._conjugated_weighted(own, n, 0, inner, outer, in_place=True)
            assert (got is own) == (h.dtype == np.complex128)  # (a complex64 h: NumPy's product, complex128)
            np.testing.assert_array_equal(got, want)
    # a half-spectrum axis followed by others: NumPy's conjugate and product
    want = np.conjugate(z) * rules._half_weights(8, 1, 2.0, 1.0)
    np.testing.assert_array_equal(rules._conjugated_weighted(z, 8, 1, 2.0, 1.0), want)


def test_a_jacobians_one_hot_seeds_reach_the_transforms_own_path(monkeypatch):
    # irfft's transpose at f's output gets the Jacobian's one-hot seed block (structured above
    # DENSE_SEED_ELEMENTS entries): made dense first, it is transformed by the primitives' own calls
    # (NumPy's function would densify it through its dispatch, then wrap its own calls)
    from jaccli.api.sweep_seeds import DENSE_SEED_ELEMENTS

    n = 144
    assert n * n > DENSE_SEED_ELEMENTS
    x = 2 * np.pi * np.arange(n) / n
    want = np.asarray(jaccli.jacobian(_spectral_derivative, np.sin(x), mode="reverse"))
    calls = []
    real = np.fft.rfftn
    monkeypatch.setattr(np.fft, "rfftn", lambda *a, **kw: calls.append(type(a[0])) or real(*a, **kw))
    J = np.asarray(jaccli.jacobian(_spectral_derivative, np.sin(x), mode="reverse"))
    assert calls == []
    np.testing.assert_array_equal(J, want)
    for m in (1, 3, 7):
        np.testing.assert_allclose(J @ np.sin(m * x), m * np.cos(m * x), atol=1e-12)


def test_the_one_axis_functions_read_their_arguments_as_the_n_d_ones_do():
    # fft, ifft, rfft, irfft, hfft, ihfft take (n, axis) through a one-axis form of _canonical:
    # the same (s, axes), the same errors; and NumPy's values inside f
    from jaccli.engine.rules import fft as rules

    a = np.ones((3, 6))
    for n in (None, 1, 4, 7, 0, -2, 5.0):
        for axis in (-1, 0, 1, -2, 2, -3):
            for norm in (None, "ortho", "forward", "backward", "unitary"):
                for real_out in (False, True):
                    outcomes = []
                    for read in (lambda: rules._canonical_one(a, n, axis, norm, real_out),
                                 lambda: rules._canonical(a, None if n is None else (n,), (axis,), norm, real_out)):
                        try:
                            outcomes.append(read())
                        except Exception as e:  # noqa: BLE001 - the errors must be the same too
                            outcomes.append((type(e), str(e)))
                    assert outcomes[0] == outcomes[1], (n, axis, norm, real_out, outcomes)
    x = np.linspace(0.2, 1.4, 8)
    for fn in (np.fft.fft, np.fft.ifft, np.fft.rfft, np.fft.hfft, np.fft.ihfft):
        for kw in ({}, {"n": 6}, {"n": 11, "norm": "ortho"}, {"axis": 0, "norm": "forward"}):
            g = lambda x: np.real(fn(x + 0j if fn is np.fft.hfft else x, **kw))  # noqa: E731 (hfft: of a spectrum)
            value, _ = jaccli.vjp(g, x, np.ones(np.shape(g(x))))
            np.testing.assert_array_equal(value, g(x))
    np.testing.assert_array_equal(jaccli.vjp(lambda x: np.fft.irfft(x + 0j, 9), x, np.ones(9))[0], np.fft.irfft(x, 9))


@pytest.mark.parametrize("mode", ["reverse", "forward"])
def test_the_identity_seed_blocks_transform_is_kept_across_calls(monkeypatch, mode):
    # the first rule meets the Jacobian's full block of one-hot seeds (irfft's transpose at f's
    # output in reverse, rfft at its input forward): transformed once, kept read-only, and the
    # Jacobians are those of the block transformed afresh, to the bit, at every call
    from jaccli.engine.rules import fft as rules

    n = 144
    k = np.arange(n // 2 + 1) * 0.25
    f = lambda u: np.fft.irfft(np.fft.rfft(u * u) * (1j * k) - np.fft.rfft(u) * k ** 2, n)  # noqa: E731
    u = np.cos(2 * np.pi * np.arange(n) / n) + 0.5
    rules._transformed_identity.cache_clear()
    monkeypatch.setattr(rules, "_IDENTITY_KEPT", 0)  # (the block transformed at each call)
    want = np.asarray(jaccli.jacobian(f, u, mode=mode))
    monkeypatch.undo()
    for call in range(3):
        J = np.asarray(jaccli.jacobian(f, u, mode=mode))
        np.testing.assert_array_equal(J, want)
    info = rules._transformed_identity.cache_info()
    assert (info.misses, info.hits) == (1, 2), info  # transformed in the first call, then taken
    # blocks of fewer seeds (chunks of rows or columns) are no identity: transformed as they come
    np.testing.assert_allclose(np.asarray(jaccli.jacobian(f, u, mode=mode, chunk_size=50)), want, rtol=1e-13, atol=1e-13)
    assert rules._transformed_identity.cache_info().misses == 1
    np.testing.assert_allclose(want, central_diff(f, u), atol=1e-6)


@pytest.mark.parametrize("name", ["irfft", "hfft", "irfftn", "irfft2"])
def test_the_complex_to_real_transforms_of_a_real_input_give_a_real_cotangent_without_a_warning(name, rng):
    # NumPy sees a real x as complex; the cotangent of a real input is the real part (JAX's), taken
    # by the rule rather than by a cast that warns ("Casting complex values to real discards ...").
    fn = getattr(np.fft, name)
    f = (lambda a: fn(a.reshape(2, 4))) if name == "irfft2" else fn
    x = rng.standard_normal(8)
    v = rng.standard_normal(np.shape(f(x)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _, g = jaccli.vjp(f, x, v)
    assert g.dtype == np.float64
    np.testing.assert_allclose(g, central_diff(lambda a: np.sum(f(a) * v), x), rtol=1e-7, atol=1e-8)


def _filtered_then_pinned(x):
    # the transforms' results are written into afterwards: y[0] = ..., z[1:3] = ...
    y = np.fft.irfft(np.fft.rfft(x) * np.arange(1.0, 5.0), 6)
    y[0] = x[1] ** 2
    z = np.fft.fft(y)
    z[1:3] = x[2] * z[1:3]
    return np.real(z * np.conj(z))


@pytest.mark.parametrize("mode", ["reverse", "forward"])
def test_a_write_into_a_transforms_result_is_made_in_place_and_differentiates(mode, rng):
    # the transforms' rules read shapes only (value-free primitives): their results are memory a later
    # write may take, as an addition's is, and the derivative through the write is the same
    x = rng.standard_normal(6)
    rec = Recording(_filtered_then_pinned, (x,), (0,))
    written = [n for n in rec.trace.nodes if n.prim.name == "assign"]
    assert [n.in_place for n in written] == [True, False]  # (z[1:3] itself is read by the product: kept)
    J = np.asarray(jaccli.jacobian(_filtered_then_pinned, x, mode=mode))
    np.testing.assert_allclose(J, central_diff(_filtered_then_pinned, x), rtol=1e-7, atol=1e-8)


def test_a_sweep_runs_with_warnings_off_and_leaves_the_callers_error_state_as_it_was():
    # sqrt'(0) = inf in the rule: neither a warning nor, under all="raise", an error; the caller's
    # state after the call is the one before it, each of two states in turn
    for state in ({"all": "raise"}, {"divide": "warn", "invalid": "ignore"}, {"all": "raise"}):
        with np.errstate(**state):
            before = np.geterr()
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                _, g = jaccli.vjp(np.sqrt, np.array([0.0, 4.0]), np.array([1.0, 1.0]))
            assert np.geterr() == before
        np.testing.assert_array_equal(g, [np.inf, 0.25])


@pytest.mark.parametrize("norm", [None, "ortho", "forward"])
@pytest.mark.parametrize("n", [6, 7])
@pytest.mark.parametrize("shape, axis", [((None,), 0), ((3, None), 1), ((None, 3), 0)], ids=["1d", "last", "first"])
def test_rfft_and_irfft_reverse_rules_give_their_transposes_bits(rng, norm, n, shape, axis):
    # the rules of a transform along the last axis take its steps inline (rules/fft.py): the same numbers
    # as the transposes' primitives, for blocks of every layout
    from jaccli.engine.rules import fft as rules

    x = rng.standard_normal(tuple(n if d is None else d for d in shape))
    s, axes = (n,), (axis,)
    spectrum = rules._r2c(x, s, axes, norm)
    value = rules._c2r(spectrum, s, axes, norm)
    for order in ("C", "F"):
        g = np.asarray(rng.standard_normal((3,) + spectrum.shape) + 1j * rng.standard_normal((3,) + spectrum.shape),
                       order=order)
        got = rules._r2c_vjp(spectrum, x, s, axes, norm)(g)
        want = rules.rfftn_t.impl(g, s, rules._up(axes), norm, rules._lengths(x, axes))
        assert got.dtype == want.dtype and got.shape == want.shape and np.array_equal(got, want)
        h = np.asarray(rng.standard_normal((3,) + value.shape), order=order)
        got = rules._c2r_vjp(value, spectrum, s, axes, norm)(h)
        want = rules.irfftn_t.impl(h, s, rules._up(axes), norm, rules._lengths(spectrum, axes))
        assert got.dtype == want.dtype and got.shape == want.shape and np.array_equal(got, want)
    # and both are transposes: <g, rfft(x)> = <rfft's rule(g), x> for a real pairing
    g = rng.standard_normal((1,) + spectrum.shape) + 1j * rng.standard_normal((1,) + spectrum.shape)
    assert np.isclose(np.real(np.sum(g[0] * spectrum)), np.sum(rules._r2c_vjp(spectrum, x, s, axes, norm)(g)[0] * x))


def test_np_fft_rules_load_when_f_first_transforms(tmp_path):
    # np.fft's rules wait for numpy.fft (NumPy 2 loads it at the first use of np.fft), so that a process
    # whose f never transforms loads neither; an f that first reaches np.fft while it is being recorded,
    # in a fresh process, is differentiated as before, in both modes.
    code = """if True:
        import sys
        import numpy as np
        import jaccli
        fresh = "numpy.fft" not in sys.modules and "jaccli.engine.rules.fft" not in sys.modules
        f = lambda u: np.fft.irfft(1j * np.arange(5) * np.fft.rfft(u), n=8) * u
        x = np.linspace(0.1, 0.9, 8)
        rows = np.asarray(jaccli.jacobian(f, x, mode="reverse"))
        cols = np.asarray(jaccli.jacobian(f, x, mode="forward"))
        e = 1e-6
        ref = np.stack([(f(x + e * d) - f(x - e * d)) / (2 * e) for d in np.eye(8)], axis=1)
        print(fresh or np.__version__ < "2", float(np.abs(rows - ref).max()), float(np.abs(cols - ref).max()))
    """
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    fresh, err_rows, err_cols = done.stdout.split()
    assert fresh == "True" and float(err_rows) < 1e-7 and float(err_cols) < 1e-7


def test_a_plain_vjps_transform_rules_are_made_once_per_signature_and_send_real_cotangents(rng):
    # A plain call's sweep makes each node's rule: the transforms' rules read only the argument's shape
    # and the transform's arguments, so two calls (and two nodes of one signature) share one rule, and
    # rfft's rule (an irfft) is taken as it is, not wrapped to take the real part of a real cotangent.
    from benchmarks.spectral import ks_data, ks_residual

    u, v, k = ks_data(32)
    f = lambda u: ks_residual(u, k)  # noqa: E731
    rules = []
    for _ in range(2):
        rec = Recording(f, (u,), (0,))
        (back,) = rec.vjp([v[None]])
        rules.append({(n.index, n.prim.name): n._vjps[0] for n in rec.trace.nodes if n._vjps and 0 in n._vjps})
        e = 1e-6
        ref = np.array([(f(u + e * d) - f(u - e * d)) / (2 * e) for d in np.eye(32)]) @ v
        np.testing.assert_allclose(back[0], ref, atol=1e-7)
    transforms = [key for key in rules[0] if key[1].startswith("np.fft.")]
    assert len(transforms) == 3  # rfft(u), rfft(u * u), irfft
    assert all(rules[0][key] is rules[1][key] for key in transforms)
    rffts = [rules[0][key] for key in transforms if key[1] == "np.fft.rfftn"]
    assert rffts[0] is rffts[1] and rffts[0].__name__ == "rule"  # (real_cotangent's wrapper is real_rule)


_REAL_PARTS = {  # f(x) = sum(Re(T x) ** 2) for a real-linear T: its Hessian is 2 Re(A)^T Re(A), A the matrix of T
    "rfft": (lambda x: np.fft.rfft(x), (6,)),
    "rfft odd": (lambda x: np.fft.rfft(x), (5,)),
    "rfft ortho, n=8": (lambda x: np.fft.rfft(x, n=8, norm="ortho"), (6,)),
    "ihfft": (lambda x: np.fft.ihfft(x), (7,)),
    "rfft2": (lambda x: np.fft.rfft2(x), (3, 4)),
    "rfftn, real of its real part": (lambda x: np.real(np.fft.rfftn(x, axes=(0,))), (4, 2)),
}


@pytest.mark.parametrize("name", list(_REAL_PARTS))
def test_second_derivatives_through_the_real_part_of_a_real_transform_are_its_closed_form(rng, name):
    # np.real sends its real cotangent back to rfft's rule as it is: rfft's transpose then has a real argument,
    # whose cotangent (an rfft of the second sweep's seeds) must be real too; kept complex, it summed
    # Re(A^T A) = Re(A)^T Re(A) - Im(A)^T Im(A) in every reverse-over-reverse way, and in the derivatives of a
    # create_graph gradient
    transform, shape = _REAL_PARTS[name]
    size = int(np.prod(shape))
    A = np.stack([transform(e.reshape(shape)).ravel() for e in np.eye(size)], axis=1)
    expected = (2 * A.real.T @ A.real).reshape(shape + shape)

    def f(x):
        return np.sum(np.real(transform(x)) ** 2)

    x = rng.standard_normal(shape)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (a complex block cast to a real store warned, ComplexWarning)
        for mode in ("reverse", "forward"):
            np.testing.assert_allclose(np.asarray(jaccli.hessian(f, x, mode=mode)), expected, atol=1e-12)
            graph = jaccli.jacobian(lambda x: jaccli.grad(f, x, create_graph=True), x, mode=mode)
            np.testing.assert_allclose(np.asarray(graph), expected, atol=1e-12)
        rows = np.stack([jaccli.vhp(f, x, e.reshape(shape))[1] for e in np.eye(size)])
        np.testing.assert_allclose(rows.reshape(shape + shape), expected, atol=1e-12)


def test_the_hessian_of_a_nonlinear_real_part_of_rfft_matches_central_differences_of_the_gradient(rng):
    u = rng.standard_normal(7)

    def f(u):
        return np.sum(np.fft.rfft(np.sin(u)).real ** 2 * np.arange(1, 5)) + np.sum(np.real(np.fft.rfft(u)) * u[:4])

    reference = central_diff(lambda u: jaccli.grad(f, u), u, h=1e-5)
    for mode in ("reverse", "forward"):
        np.testing.assert_allclose(np.asarray(jaccli.hessian(f, u, mode=mode)), reference, rtol=1e-6, atol=1e-6)
