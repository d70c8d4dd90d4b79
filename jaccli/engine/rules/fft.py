"""Rules for np.fft: the complex, real-to-complex and complex-to-real transforms, and the shifts.

Each transform is linear: its forward rule is the same transform of the tangent, and its reverse
rule the transpose (JAX's pairing Re(sum(g * t)), no conjugate). The DFT matrix is symmetric, so
the transpose of fftn is fftn, with the same norm, after undoing the zero-padding or cropping of
s=. A block of K seeds is one transform call: the seed's block axis is a leading axis that the
transform's axes skip. fft, fft2, ifft... and hfft/ihfft are written with the three primitives.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from ..facts import HEAVIER_IN_REVERSE, REAL_COTANGENTS, SAMPLE_RULES, STRUCTURES
from ..registry import family, primitive, register_derived
from ..seeds import SparseBlock, dense
from ..structure import Dense
from ..tape import is_complex
from ._util import axis_index, dtype_of, shape_of

family("fft")


# NumPy's transforms are a Python wrapper (argument checks, the norm's factor, the output's
# allocation, for n-d a loop over the axes) around one pocketfft ufunc call per axis: about half of
# a call's time at n = 256, and a spectral f's replay and sweep make one call per transform. On
# float64 and complex128 arrays the primitives call NumPy 2's ufuncs (numpy.fft._pocketfft_umath,
# private) as its wrapper does, axis by axis in its order, so the results are NumPy's to the bit
# (tests/test_fft_calls.py); on other inputs, or where the module is missing, NumPy's functions.
try:
    from numpy.fft import _pocketfft_umath as _pfu
except ImportError:  # NumPy 1.x
    _pfu = None
_FAST = (np.dtype(np.float64), np.dtype(np.complex128))


def _fast(x) -> bool:
    return _pfu is not None and type(x) is np.ndarray and x.dtype in _FAST


def _private_ufuncs_agree() -> bool:
    """Whether this NumPy's private ufuncs still compute what its public functions do, on small
    arrays of each kind of transform (a later NumPy may change them; then its functions serve)."""
    try:
        for n in (5, 6):
            x = np.linspace(0.25, 2.0, 2 * n).reshape(2, n)
            z = x + 1j * x[::-1]
            if not (np.array_equal(_r2c(x, None, (1,), "ortho"), np.fft.rfftn(x, axes=(1,), norm="ortho"))
                    and np.array_equal(_c2c(z, None, (0, 1), None, True), np.fft.ifftn(z, axes=(0, 1)))
                    and np.array_equal(_c2r(z, (2, n), (0, 1), "forward"),
                                       np.fft.irfftn(z, s=(2, n), axes=(0, 1), norm="forward"))):
                return False
    except Exception:  # noqa: BLE001 - any failure of a private interface means: do not use it
        return False
    return True


def _factor(n, norm, forward):
    """The factor NumPy's transform of n points applies: 1, 1/n or 1/sqrt(n), by norm and direction."""
    norm = norm if forward else _swap(norm)
    if norm is None or norm == "backward":
        return 1.0
    return 1.0 / math.sqrt(n) if norm == "ortho" else 1.0 / n


def _lengths_of(x, s, axes, real_out=False):
    """s, or (s=None) x's lengths along axes as NumPy reads them (irfftn: 2 (m - 1) on the last)."""
    if s is not None:
        return s
    s = tuple(x.shape[a] for a in axes)
    return s[:-1] + (2 * (s[-1] - 1),) if real_out else s


# NumPy's empty_like itself, without the dispatch of np.empty_like (x is a plain array here: _fast)
_empty_like = getattr(np.empty_like, "_implementation", np.empty_like)


def _call(ufunc, x, n, axis, norm, forward, n_out, dtype):
    out = _empty_like(x, shape=x.shape[:axis] + (n_out,) + x.shape[axis + 1:], dtype=dtype)
    return ufunc(x, _factor(n, norm, forward), axes=[(axis,), (), (axis,)], out=out)


def _c2c(x, s, axes, norm, inverse):
    if not _fast(x):
        return (np.fft.ifftn if inverse else np.fft.fftn)(x, s=s, axes=axes, norm=norm)
    ufunc = _pfu.ifft if inverse else _pfu.fft
    for n, axis in zip(reversed(_lengths_of(x, s, axes)), reversed(axes)):
        x = _call(ufunc, x, n, axis, norm, not inverse, n, np.complex128)
    return x


def _r2c(x, s, axes, norm):
    if not (_fast(x) and x.dtype == np.float64):
        return np.fft.rfftn(x, s=s, axes=axes, norm=norm)
    s = _lengths_of(x, s, axes)
    n = s[-1]
    x = _call(_pfu.rfft_n_odd if n % 2 else _pfu.rfft_n_even, x, n, axes[-1], norm, True, n // 2 + 1,
              np.complex128)
    return _c2c(x, s[:-1], axes[:-1], norm, False) if len(axes) > 1 else x


def _c2r(x, s, axes, norm):
    if not _fast(x):
        return np.fft.irfftn(x, s=s, axes=axes, norm=norm)
    s = _lengths_of(x, s, axes, real_out=True)
    for n, axis in zip(s[:-1], axes[:-1]):
        x = _call(_pfu.ifft, x, n, axis, norm, False, n, np.complex128)
    return _call(_pfu.irfft, x, s[-1], axes[-1], norm, False, s[-1], np.float64)


fftn = primitive("np.fft.fftn", _c2c)
rfftn = primitive("np.fft.rfftn", _r2c)
irfftn = primitive("np.fft.irfftn", _c2r)


def _up(axes):
    return (axes[0] + 1,) if len(axes) == 1 else tuple([a + 1 for a in axes])


def _resize(g, lengths, axes):
    """g cut or zero-padded along each of `axes` to `lengths`: the transpose of s='s padding or
    cropping of the argument (pad and crop are each other's transposes)."""
    for a, n in zip(axes, lengths):
        have = shape_of(g)[a]
        if have > n:
            g = g[(slice(None),) * a + (slice(0, n),)]
        elif have < n:
            widths = [(0, 0)] * len(shape_of(g))
            widths[a] = (0, n - have)
            g = np.pad(g, widths)
    return g


def _lengths(x, axes):
    return _lengths_at(shape_of(x), axes)


def _lengths_at(shape, axes):
    return (shape[axes[0]],) if len(axes) == 1 else tuple([shape[a] for a in axes])


def _c2c_vjp(ans, x, s, axes, norm, inverse):
    lengths, up = _lengths(x, axes), _up(axes)
    return lambda g: _resize(fftn(g, None, up, norm, inverse), lengths, up)


@functools.lru_cache(maxsize=64)
def _half_weights(n, trailing, inner, outer):
    """Weights along a half-spectrum axis followed by `trailing` axes: `outer` on the first entry
    and, n even, the last (the entries a real signal's spectrum holds once), `inner` on the others.
    (Read-only: one array per shape, shared by every call.)"""
    half = n // 2 + 1
    weight = np.full(half, inner)
    weight[0] = outer
    if n % 2 == 0:
        weight[-1] = outer
    weight = weight.reshape((half,) + (1,) * trailing)
    weight.flags.writeable = False
    return weight


@functools.lru_cache(maxsize=64)
def _conjugating_weights(n, inner, outer):
    """_half_weights(n, 0, inner, outer) for the float64 view of a complex128 spectrum (real and
    imaginary parts interleaved), with the imaginary parts' sign flipped: one multiplication by
    it conjugates and weights the spectrum in one pass. (Read-only, shared as _half_weights.)"""
    pairs = np.repeat(_half_weights(n, 0, inner, outer), 2)
    pairs[1::2] *= -1
    pairs.flags.writeable = False
    return pairs


def _conjugated_weighted(h, n, trailing, inner, outer, in_place=False):
    """conj(h) * _half_weights(n, trailing, inner, outer): for a complex128 h whose half-spectrum
    axis is its last, contiguous one, one pass over its float64 view, written into h itself with
    `in_place` (an array of the caller's own); else NumPy's conjugate and product, a new array."""
    if trailing == 0 and type(h) is np.ndarray and h.dtype == np.complex128 and h.ndim and h.strides[-1] == 16:
        out = h if in_place else _empty_like(h)
        np.multiply(h.view(np.float64), _conjugating_weights(n, inner, outer), out=out.view(np.float64))
        return out
    return np.conjugate(h) * _half_weights(n, trailing, inner, outer)


# The transposes are primitives of their own, each one call in a sweep (and one step in a compiled
# sweep's program) where their NumPy form is three: a transform, a conjugate and the weights. The
# transpose of rfftn's transpose is rfftn. (Conjugating rfftn's output in place once made glibc
# hand the KS Jacobian's 0.5 MB blocks back to the system at each call, 800 page faults a call:
# the heap's thresholds are raised since, engine/heap.py, and the page faults do not depend on
# the order of a call's allocations any more.)

def _r2c_t(g, s, axes, norm, lengths):
    # rfftn is the full transform's first n//2 + 1 entries on the last axis; its transpose is the
    # real part of the full transform of g padded with zeros, which is irfftn of conj(g) with the
    # middle entries halved (irfftn counts them twice), at the opposite norm: half the work, no pad.
    g = dense(g)
    h = _conjugated_weighted(g, s[-1], len(shape_of(g)) - 1 - axes[-1], 0.5, 1.0)
    return _resize(_c2r(h, s, axes, _swap(norm)), lengths, axes)


def _c2r_t(g, s, axes, norm, lengths):
    # irfft(y) = (Re y_0 + 2 Re sum_k y_k w^-jk [+ Re y_n/2 (-1)^j]) / n: the transpose is the
    # inverse transform of g, its first n//2 + 1 entries, doubled but for the first and (n even)
    # last; for a real g that is the conjugate of rfftn(g) at the opposite norm. (A seed block of
    # the Jacobian is one-hot: dense first, for the transform's fast path.) The transform's output
    # is this call's own array: conjugated and weighted in place.
    g = dense(g)
    h = _r2c(g, s, axes, _swap(norm))
    return _resize(_conjugated_weighted(h, s[-1], len(shape_of(g)) - 1 - axes[-1], 2.0, 1.0, in_place=True), lengths,
                   axes)


rfftn_t = primitive("np.fft.rfftn transpose", _r2c_t)
irfftn_t = primitive("np.fft.irfftn transpose", _c2r_t)


def _plain_first(prim):
    """prim(g, ...), straight to its implementation for a plain array g: what the primitive's call comes to
    for plain arguments, without looking for traced ones (a rule's call in every sweep); a traced or
    structured g takes the primitive."""
    def call(g, *rest):
        return prim.impl(g, *rest) if type(g) is np.ndarray else prim(g, *rest)
    return call


_rfftn_t, _irfftn_t = _plain_first(rfftn_t), _plain_first(irfftn_t)


# A transform along the last axis of a 1-D or n-D value, no s= padding or cropping (a spectral f's rfft
# and irfft): its reverse rule for a plain block is _r2c_t's or _c2r_t's steps inline, the same ufunc
# calls on the same arguments (the same numbers to the bit), without their dozen Python calls.

def _r2c_vjp(ans, x, s, axes, norm):
    return _r2c_rule(shape_of(x), s, axes, norm)


def _c2r_vjp(ans, x, s, axes, norm):
    return _c2r_rule(shape_of(x), dtype_of(x).kind != "c", s, axes, norm)


# The rules read the argument's shape (and kind) and the transform's arguments only: one rule serves
# every node of one such signature, made once (a plain call's sweep makes each of its rules, ~2 us a node).
@functools.lru_cache(maxsize=256)
def _r2c_rule(shape, s, axes, norm):
    lengths, up = _lengths_at(shape, axes), _up(axes)
    axis = up[0]
    if _pfu is None or len(axes) != 1 or axis != len(shape) or lengths != s:
        return lambda g: _rfftn_t(g, s, up, norm, lengths)
    n = s[0]
    weights, factor, irfft, where = _conjugating_weights(n, 0.5, 1.0), _factor(n, _swap(norm), False), _pfu.irfft, \
        [up, (), up]

    def rule(g):
        if type(g) is np.ndarray and g.dtype == np.complex128 and g.ndim == axis + 1 and g.strides[-1] == 16:
            h = _empty_like(g)
            np.multiply(g.view(np.float64), weights, out=h.view(np.float64))
            return irfft(h, factor, axes=where, out=_empty_like(h, shape=h.shape[:-1] + (n,), dtype=np.float64))
        return _rfftn_t(g, s, up, norm, lengths)
    return rule


@functools.lru_cache(maxsize=256)
def _c2r_rule(shape, real, s, axes, norm):
    lengths, up = _lengths_at(shape, axes), _up(axes)
    if real:  # NumPy sees a real x as complex: its cotangent is the real part (as JAX's)
        return lambda g: np.real(_irfftn_t(g, s, up, norm, lengths))
    axis, n = up[0], s[-1]
    if _pfu is None or len(axes) != 1 or axis != len(shape) or lengths[0] != n // 2 + 1:
        return lambda g: _irfftn_t(g, s, up, norm, lengths)
    half, factor, rfft, where = n // 2 + 1, _factor(n, _swap(norm), True), \
        _pfu.rfft_n_odd if n % 2 else _pfu.rfft_n_even, [up, (), up]

    def rule(g):
        if type(g) is np.ndarray and g.dtype == np.float64 and g.ndim == axis + 1:
            h = rfft(g, factor, axes=where, out=_empty_like(g, shape=g.shape[:-1] + (half,), dtype=np.complex128))
            return _conjugated_weighted(h, n, 0, 2.0, 1.0, in_place=True)
        return _irfftn_t(g, s, up, norm, lengths)
    return rule


# A Jacobian's full block of one-hot seeds over a 1-D value is the identity: the first reverse
# rule of an f that ends in irfft (a spectral residual), or the first forward rule of one that
# starts with rfft, transforms the same matrix at every call, 70 us of the KS residual's 0.65 ms
# Jacobian at n = 256. It is kept, read-only (the sweeps never write into a rule's result), for a
# few shapes up to _IDENTITY_KEPT entries: 2 MB of complex128 each at most.
_IDENTITY_KEPT = 1 << 17


def _identity_size(g):
    """K where g is the block of the K one-hot seeds e_0 ... e_{K-1} over a vector of K entries, else None."""
    if type(g) is not SparseBlock or g.u is not None or len(g.shape) != 2 or g.shape[0] != g.shape[1] \
            or g.idx.shape != (g.shape[0], 1) or type(g.val) is not np.ndarray or g.val.dtype != np.float64:
        return None
    k = g.shape[0]
    return k if np.array_equal(g.idx[:, 0], np.arange(k)) and bool((g.val == 1.0).all()) else None


@functools.lru_cache(maxsize=4)
def _transformed_identity(impl, k, args):
    out = impl(np.eye(k), *args)
    out.flags.writeable = False
    return out


def _on_identity(impl):
    """A primitive's rule for a seed block (Primitive.sparse): the kept transform of the identity,
    else NotImplemented (the block is made dense and transformed)."""
    def on_block(g, *args):
        k = _identity_size(g)
        if k is None or k * (k // 2 + 1) > _IDENTITY_KEPT:
            return NotImplemented
        return _transformed_identity(impl, k, args)
    return on_block


irfftn_t.sparse = _on_identity(_c2r_t)
rfftn.sparse = _on_identity(_r2c)

fftn.defvjp(_c2c_vjp)
fftn.defjvp(lambda ans, x, s, axes, norm, inverse: (lambda t: fftn(t, s, _up(axes), norm, inverse)))
rfftn.defvjp(_r2c_vjp)
rfftn.defjvp(lambda ans, x, s, axes, norm: (lambda t: rfftn(t, s, _up(axes), norm)))
irfftn.defvjp(_c2r_vjp)
irfftn.defjvp(lambda ans, x, s, axes, norm: (lambda t: irfftn(t, s, _up(axes), norm)))
# A real g (np.real's cotangent, which sends a real g back as it is) gets the real part: rfftn_t's result is
# real, so tape.real_cotangent, which looks for a complex result, does not take it (a Hessian through
# rfft(x).real reverse over reverse summed Re(A^T A) for Re(A)^T Re(A))
rfftn_t.defvjp(lambda ans, g, s, axes, norm, lengths: (lambda h: rfftn(h, s, _up(axes), norm)) if is_complex(g)
               else (lambda h: np.real(rfftn(h, s, _up(axes), norm))))
rfftn_t.defjvp(lambda ans, g, s, axes, norm, lengths: (lambda t: rfftn_t(t, s, _up(axes), norm, lengths)))
irfftn_t.defvjp(lambda ans, g, s, axes, norm, lengths: (lambda h: irfftn(h, s, _up(axes), norm)))
irfftn_t.defjvp(lambda ans, g, s, axes, norm, lengths: (lambda t: irfftn_t(t, s, _up(axes), norm, lengths)))


def _samples_apart(node, B):
    """Samples on axis 0 stay apart when the transform's axes leave axis 0 alone."""
    return 0 not in node.args[2] and np.shape(node.args[0])[:1] == (B,) and np.shape(node.value)[:1] == (B,)


for _prim in (fftn, rfftn, irfftn, rfftn_t, irfftn_t):
    STRUCTURES[_prim] = Dense()
    SAMPLE_RULES[_prim] = _samples_apart
    # Linear: the rules read the argument's shape and dtype, never its values (nor the result's), so
    # a plain argument is not held read-only while f runs, and a traced one stays free for in-place updates.
    _prim.value_free = True
del _prim
REAL_COTANGENTS.add(rfftn)  # (its rules end in an irfftn: a real argument's cotangent is real already)
HEAVIER_IN_REVERSE.update((rfftn, irfftn))  # (KS residual, n = 4096: a forward Jacobian ~2x cheaper)


# ---------------------------------------------------------------------------
# NumPy's functions, in the primitives' canonical arguments (explicit s and non-negative axes)
# ---------------------------------------------------------------------------
_NORMS = (None, "backward", "ortho", "forward")


def _canonical(a, s, axes, norm, real_out=False):
    """(s, axes) as explicit tuples, as NumPy reads them: axes default to the last len(s) axes (all
    when s is None too); s defaults to a's lengths (for irfftn, 2 (m - 1) on the last axis)."""
    if norm not in _NORMS:
        raise ValueError(f'Invalid norm value {norm}; should be "backward", "ortho" or "forward".')
    shape = shape_of(a)
    if axes is None:
        axes = tuple(range(len(shape) - (len(shape) if s is None else len(s)), len(shape)))
    axes = tuple(axis_index(ax, len(shape)) for ax in axes)
    if s is None:
        s = [shape[ax] for ax in axes]
        if real_out and s:
            s[-1] = 2 * (s[-1] - 1)
    s = tuple(int(n) for n in s)
    if len(s) != len(axes):
        raise ValueError("Shape and axes have different lengths.")
    if any(n < 1 for n in s):
        raise ValueError(f"Invalid number of FFT data points ({min(s)}) specified.")
    return s, axes


def _canonical_one(a, n, axis, norm, real_out=False):
    """_canonical(a, None or (n,), (axis,), norm, real_out) for the one-axis functions (fft, rfft,
    irfft, ...), which a spectral f calls a few times per recording, without its loops."""
    if norm not in _NORMS:
        raise ValueError(f'Invalid norm value {norm}; should be "backward", "ortho" or "forward".')
    shape = shape_of(a)
    axis = axis_index(axis, len(shape))
    if n is None:
        n = 2 * (shape[axis] - 1) if real_out else shape[axis]
    n = int(n)
    if n < 1:
        raise ValueError(f"Invalid number of FFT data points ({n}) specified.")
    return (n,), (axis,)


_OPPOSITE = {None: "forward", "backward": "forward", "forward": "backward", "ortho": "ortho"}


def _swap(norm):
    """The norm of the opposite direction (hfft is irfft of the conjugate with it)."""
    return _OPPOSITE[norm]


def _c2c_call(inverse):
    def nd(a, s=None, axes=None, norm=None, out=None):
        return fftn(a, *_canonical(a, s, axes, norm), norm, inverse)
    return nd


def _rfftn(a, s=None, axes=None, norm=None, out=None):
    return rfftn(a, *_canonical(a, s, axes, norm), norm)


def _irfftn(a, s=None, axes=None, norm=None, out=None):
    return irfftn(a, *_canonical(a, s, axes, norm, real_out=True), norm)


_fftn, _ifftn = _c2c_call(False), _c2c_call(True)


def _c2c_one(inverse):
    def one(a, n=None, axis=-1, norm=None, out=None):
        return fftn(a, *_canonical_one(a, n, axis, norm), norm, inverse)
    return one


def _rfft(a, n=None, axis=-1, norm=None, out=None):
    return rfftn(a, *_canonical_one(a, n, axis, norm), norm)


def _irfft(a, n=None, axis=-1, norm=None, out=None):
    return irfftn(a, *_canonical_one(a, n, axis, norm, real_out=True), norm)


def _hfft(a, n=None, axis=-1, norm=None, out=None):
    return _irfft(np.conjugate(a), n, axis, norm=_swap(norm))


def _ihfft(a, n=None, axis=-1, norm=None, out=None):
    return np.conjugate(_rfft(a, n, axis, norm=_swap(norm)))


_NOTES = "linear: the same transform forward, its transpose (JAX's pairing, no conjugate) in reverse"
register_derived(np.fft.fftn, _fftn, uses=(fftn,), notes=_NOTES)
register_derived(np.fft.ifftn, _ifftn, uses=(fftn,), notes=_NOTES)
register_derived(np.fft.fft2, lambda a, s=None, axes=(-2, -1), norm=None, out=None: _fftn(a, s, axes, norm),
                 uses=(fftn,), notes=_NOTES)
register_derived(np.fft.ifft2, lambda a, s=None, axes=(-2, -1), norm=None, out=None: _ifftn(a, s, axes, norm),
                 uses=(fftn,), notes=_NOTES)
register_derived(np.fft.fft, _c2c_one(False), uses=(fftn,), notes=_NOTES)
register_derived(np.fft.ifft, _c2c_one(True), uses=(fftn,), notes=_NOTES)
register_derived(np.fft.rfftn, _rfftn, uses=(rfftn,), notes=_NOTES + "; of real inputs")
register_derived(np.fft.irfftn, _irfftn, uses=(irfftn,),
                 notes=_NOTES + "; as NumPy's, the imaginary parts of the first (and, n even, last) entries are unused")
register_derived(np.fft.rfft2, lambda a, s=None, axes=(-2, -1), norm=None, out=None: _rfftn(a, s, axes, norm),
                 uses=(rfftn,), notes=_NOTES + "; of real inputs")
register_derived(np.fft.irfft2, lambda a, s=None, axes=(-2, -1), norm=None, out=None: _irfftn(a, s, axes, norm),
                 uses=(irfftn,), notes=_NOTES)
register_derived(np.fft.rfft, _rfft, uses=(rfftn,), notes=_NOTES + "; of real inputs")
register_derived(np.fft.irfft, _irfft, uses=(irfftn,), notes=_NOTES)
register_derived(np.fft.hfft, _hfft, uses=(irfftn,), notes="irfft of the conjugate, as NumPy's")
register_derived(np.fft.ihfft, _ihfft, uses=(rfftn,), notes="the conjugate of rfft, as NumPy's")


def _shift(a, axes, sign):
    shape = shape_of(a)
    axes = tuple(range(len(shape))) if axes is None else (axes,) if isinstance(axes, (int, np.integer)) else axes
    return np.roll(a, [sign * (shape[ax] // 2) for ax in axes], tuple(axes))


register_derived(np.fft.fftshift, lambda x, axes=None: _shift(x, axes, 1), notes="moves entries (np.roll)")
register_derived(np.fft.ifftshift, lambda x, axes=None: _shift(x, axes, -1), notes="moves entries (np.roll)")


# (at the end: the transforms call helpers defined throughout the module)
if _pfu is not None and not _private_ufuncs_agree():
    _pfu = None
