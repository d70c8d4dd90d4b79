"""jaccli's fallbacks for NumPy's private names: with each private name hidden, the same results."""

from __future__ import annotations

import functools
import os
import pickle
import subprocess
import sys

import numpy as np
import pytest

import jaccli
from jaccli.engine.rules import fft as fft_rules, piecewise, products
from jaccli.engine.rules._util import loop_dtypes

pytestmark = pytest.mark.xdist_group("test_numpy_private_fallbacks")  # (pytest -n: one worker)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Run in a fresh interpreter: every private name that jaccli reads at import is hidden while jaccli and
# all its modules are imported (so each takes its ImportError/getattr branch), then put back for NumPy's own use.
HIDDEN_RUN = r"""
import importlib, pickle, pkgutil, sys, types, warnings
import numpy as np, numpy.fft
hidden = {"numpy._core._ufunc_config": ("_extobj_contextvar", "_make_extobj"), "numpy._core.multiarray":
          ("count_nonzero",), "numpy._core.umath": ("clip",), "numpy.fft": ("_pocketfft_umath",)}
kept = dict(sys.modules)
for name, names in hidden.items():  # (NumPy's own functions keep the real modules: their globals)
    module = types.ModuleType(name)
    module.__dict__.update({k: v for k, v in vars(kept[name]).items() if k not in names})
    sys.modules[name] = module
    parent, _, leaf = name.rpartition(".")
    setattr(sys.modules[parent], leaf, module)
sys.modules["numpy.fft._pocketfft_umath"] = None  # (an import of it fails, as where it does not exist)
with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)  # (np.core's, on the way to its fallback)
    import jaccli
    for info in pkgutil.walk_packages(jaccli.__path__, "jaccli."):
        importlib.import_module(info.name)
for name in list(hidden) + ["numpy.fft._pocketfft_umath"]:
    sys.modules[name] = kept[name]
    parent, _, leaf = name.rpartition(".")
    setattr(sys.modules[parent], leaf, kept[name])
from jaccli.engine import guards as engine_guards
from jaccli.engine.rules import _util, fft, piecewise
from jaccli.replay import codegen, guards as replay_guards, ones_seeded
taken = {"engine_guards": engine_guards._EXTOBJ is None and engine_guards._MAKE_EXTOBJ is None,
         "replay_guards": replay_guards._EXTOBJ is None and replay_guards.leave_state is None
                          and codegen.leave_state is None,
         "count": replay_guards._COUNT is np.count_nonzero and ones_seeded._COUNT is np.count_nonzero
                  and _util._COUNT is np.count_nonzero,
         "clip": isinstance(piecewise._CLIP, piecewise._PublicClip), "fft": fft._pfu is None}
from tests.test_numpy_private_fallbacks import results
sys.stdout.buffer.write(pickle.dumps((taken, results())))
"""


def _outcome(call):
    """call()'s result as arrays, or the type of what it raised."""
    try:
        value = call()
    except Exception as exc:  # noqa: BLE001 - the outcome is what is compared
        return type(exc).__name__
    return np.asarray(value) if not isinstance(value, tuple) else tuple(np.asarray(v) for v in value)


def _under_ignore(y):
    with np.errstate(divide="ignore", invalid="ignore"):  # (a state of f's own: a replay re-enters it)
        r = np.log(y) * y
    return np.where(np.isfinite(r), r, 0.0) + np.sqrt(np.abs(y))


def _replays(f, points):
    g = jaccli.record_once(f)
    out = [_outcome(lambda: jaccli.jacobian(g, x)) for x in points]
    return out, g.records, g.replays


def results() -> dict:
    """Representative calls of each function that reads a private name (or its fallback)."""
    x = np.array([0.3, 1.5, 2.0, 0.7])
    z = np.array([0.0, 4.0, 1.0, 2.0])
    out = {}
    for mode in ("forward", "reverse"):
        with np.errstate(divide="raise"):
            out["raise", mode] = _outcome(lambda: jaccli.jacobian(lambda y: np.log(y) * y, x, mode=mode))
            out["raise at 0", mode] = _outcome(lambda: jaccli.jacobian(lambda y: np.log(y) * y, z, mode=mode))
        with np.errstate(divide="ignore"):
            out["0*inf", mode] = _outcome(lambda: jaccli.jacobian(lambda y: y * np.sqrt(y), z, mode=mode))
        out["sqrt at 0", mode] = _outcome(lambda: jaccli.jacobian(np.sqrt, z, mode=mode))
        out["clip", mode] = _outcome(lambda: jaccli.jacobian(lambda y: np.clip(y, 0.5, 1.6), x, mode=mode))
        out["clip dtype", mode] = _outcome(
            lambda: jaccli.jacobian(lambda y: np.clip(y, np.float32(0.5), 1.6, dtype=np.float32), x, mode=mode))
        out["clip casting", mode] = _outcome(
            lambda: jaccli.jacobian(lambda y: np.clip(y, 0.5, 1.6, casting="no", dtype=np.float32), x, mode=mode))
        out["linalg", mode] = _outcome(lambda: jaccli.jacobian(
            lambda y: np.linalg.trace(np.linalg.matmul(y.reshape(2, 2), np.linalg.matrix_transpose(y.reshape(2, 2))))
            + np.linalg.diagonal(y.reshape(2, 2)), x, mode=mode))
        out["fft", mode] = _outcome(lambda: jaccli.jacobian(
            lambda y: np.abs(np.fft.fft(y)) + np.fft.irfft(np.fft.rfft(y) * np.arange(1.0, 4.0), n=4)
            + np.fft.ifftn(np.fft.fftn(y.reshape(2, 2), norm="ortho")).real.ravel(), x, mode=mode))
    out["hessian"] = _outcome(lambda: jaccli.hessian(lambda y: np.sum(np.clip(y, 0.5, 1.6) ** 3 * np.log(y)), x))
    # record_once: a state of f's own, finite guards (sqrt'(0) is not finite: recorded afresh), a branch
    out["replays"] = _replays(_under_ignore, [x, x + 1.0, z, x * 2.0])
    out["replays sqrt"] = _replays(lambda y: np.sqrt(y) * np.clip(y, 0.5, 1.6), [x, x + 1.0, z, x])
    with np.errstate(divide="raise"):
        out["replays raise"] = _replays(lambda y: np.log(y) * y, [x, x + 1.0, z, x])
    out["clip loops"] = [_outcome(lambda: loop_dtypes(piecewise._CLIP, args, {}))
                         for args in [(2.0, np.zeros(1, np.float32), np.zeros(1, np.float32)),
                                      (np.zeros(1, np.float16), 1, 2.5), (np.zeros(1, np.int32), np.float32(1), 3)]]
    return out


def _same(a, b, where=""):
    if isinstance(a, (list, tuple)):
        assert type(a) is type(b) and len(a) == len(b), where
        for u, v in zip(a, b):
            _same(u, v, where)
    elif isinstance(a, np.ndarray):
        assert isinstance(b, np.ndarray) and a.dtype == b.dtype and a.shape == b.shape, where
        assert a.tolist() == b.tolist() if a.dtype == object else np.array_equal(a, b, equal_nan=True), where
    else:
        assert a == b, where


@pytest.fixture(scope="module")
def hidden_run():
    done = subprocess.run([sys.executable, "-c", HIDDEN_RUN], cwd=ROOT, capture_output=True, check=False)
    assert done.returncode == 0, done.stderr.decode()
    return pickle.loads(done.stdout)


def test_with_every_private_name_hidden_jaccli_imports_and_takes_each_fallback(hidden_run):
    taken, _ = hidden_run
    assert taken == {"engine_guards": True, "replay_guards": True, "count": True, "clip": True, "fft": True}


def test_the_fallbacks_give_the_private_paths_results_to_the_bit(hidden_run):
    _, hidden = hidden_run
    here = results()
    assert here.keys() == hidden.keys()
    for key in here:
        _same(here[key], hidden[key], str(key))
    # (the calls do what they are there for: a raise under divide="raise", a replay, a fresh recording)
    assert here["raise at 0", "reverse"] == "FloatingPointError"
    assert all(here[key][2] >= 1 for key in ("replays", "replays sqrt", "replays raise"))
    assert here["replays"][1] > 1 and here["replays raise"][0][2] == "FloatingPointError"


@pytest.mark.filterwarnings("ignore:Casting complex values")  # (a complex bound in a real loop: both warn)
def test_np_clip_in_the_place_of_its_private_ufunc_picks_the_same_loops():
    stand_ins = [np.zeros(1, np.float32), np.zeros((1, 1), np.float16), np.zeros(1), np.zeros(1, np.int16),
                 np.float32(1.0), 2.0, 3, 1j]
    public = piecewise._PublicClip()
    for a in stand_ins:
        for lo in stand_ins:
            for hi in stand_ins:
                if not any(isinstance(v, np.ndarray) for v in (a, lo, hi)):
                    continue  # (the handler's call has a traced operand: its stand-in is an array)
                for kw in ({}, {"dtype": np.float64}, {"dtype": np.float32, "casting": "unsafe"}, {"casting": "no"}):
                    with np.errstate(all="ignore"):
                        _same(_outcome(lambda: loop_dtypes(piecewise._CLIP, (a, lo, hi), kw)),
                              _outcome(lambda: loop_dtypes(public, (a, lo, hi), kw)), f"{a!r} {lo!r} {hi!r} {kw}")


def test_numpy_body_falls_back_to_what_functools_wraps_gives():
    for name in products._LINALG_DUPLICATES:
        fn = getattr(np.linalg, name)
        wrapped = functools.wraps(fn._implementation)(lambda *a, **k: None)  # (no _implementation)
        assert not hasattr(wrapped, "_implementation")
        assert products.numpy_body(wrapped) is products.numpy_body(fn) is fn._implementation
    assert products.numpy_body(lambda: None) is None


def test_fft_rules_with_the_public_empty_like_give_the_same_bits(monkeypatch):
    x = np.linspace(0.1, 1.0, 6)
    f = lambda y: np.abs(np.fft.fft(y)) + np.fft.irfft(np.fft.rfft(y), n=6) + np.fft.ifft(y).imag  # noqa: E731
    private = [np.asarray(jaccli.jacobian(f, x, mode=m)) for m in ("forward", "reverse")]
    assert fft_rules._pfu is not None and fft_rules._empty_like is not np.empty_like
    monkeypatch.setattr(fft_rules, "_empty_like", np.empty_like)  # (what its getattr gives without _implementation)
    for m, J in zip(("forward", "reverse"), private):
        _same(np.asarray(jaccli.jacobian(f, x, mode=m)), J, m)
