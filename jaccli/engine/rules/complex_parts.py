"""Rules for the parts of complex numbers: np.real, np.imag, np.conjugate, and np.abs and np.angle
composed of them.

Conventions are JAX's: a tangent of a complex value is a complex number (d Re + i d Im); a cotangent
g pairs with a tangent t as Re(sum(g * t)), so a holomorphic function's reverse rule is g * f'(z), as
for real numbers, and a real argument of a complex result gets the real part of its cotangent
(tape.real_cotangent). See docs/complex.md.
"""

from __future__ import annotations

import numpy as np

from ...errors import UnsupportedOperationError
from ..user_sites import user_site
from ..facts import KINK_CROSSINGS, NO_KINK, SAMPLE_RULES
from ..registry import family, primitive, register, register_derived
from ..sample_independence import elementwise as samples_apart
from ..tape import ELEMENTWISE, is_complex
from ..tracer import Tracer, guarded
from ._util import dtype_of, in_dtype, loop_dtypes
from .elementwise import absolute, arctan2, hypot, multiply

family("complex")


def _part(name: str, impl, vjp, jvp):
    prim = primitive(name, impl)
    prim.structure = ELEMENTWISE
    prim.defvjp(lambda ans, z: vjp)
    prim.defjvp(lambda ans, z: jvp)
    KINK_CROSSINGS[prim] = NO_KINK
    SAMPLE_RULES[prim] = samples_apart
    return prim


# Copies, not NumPy's views into z's memory: a write into one would change z behind the recording.
# real: t -> Re t, whose transpose sends a real g back as the complex g + 0i.
real_part = _part("np.real", lambda z: np.real(z).copy(), lambda g: g, lambda t: np.real(t))
# imag: t -> Im t = Re(-i t), so g goes back as -i g.
imag_part = _part("np.imag", lambda z: np.imag(z).copy(), lambda g: -1j * g, lambda t: np.imag(t))
# conj: t -> conj(t), and Re(g conj(t)) = Re(conj(g) t): g goes back conjugated.
conj = _part("np.conjugate", np.conjugate, lambda g: np.conjugate(g), lambda t: np.conjugate(t))


def _real(val):
    return real_part(val) if is_complex(val) else val


def _imag(val):
    return imag_part(val) if is_complex(val) else np.zeros_like(val)


def _keywords_refused(name: str, kw: dict) -> None:
    """A complex value's rule takes the plain call only: its keywords' loops are NumPy's real ones."""
    given = [k for k, v in kw.items() if v is not None]
    if given:
        raise UnsupportedOperationError(f"{name} of complex values with {', '.join(given)}= is not supported by jaccli; "
                                        f"call it without them", user_site(2))


def _conjugate(x, out=None, **kw):
    if is_complex(x):
        _keywords_refused("np.conjugate", dict(kw, out=out))
        return conj(x)
    taken = in_dtype(x, loop_dtypes(np.conjugate, (x,), kw)[0])
    return np.copy(x) if taken is x else taken  # a new array, as NumPy's


def _angle(z, deg=False):
    if is_complex(z):
        angle = arctan2(imag_part(z), real_part(z))
        return angle * (180.0 / np.pi) if deg else angle
    # 0 or pi by the sign bit (as arctan2(0, z)); constants of z's dtype, connected to z
    return np.where(guarded(np.signbit, z), np.full_like(z, 180.0 if deg else np.pi), np.zeros_like(z))


def _absolute(x, *args, **kw):
    value = x._value if type(x) is Tracer else x  # (np.abs is common: the float array's test comes first)
    if (value.dtype.kind == "c") if type(value) is np.ndarray else is_complex(value):
        _keywords_refused("np.abs", dict(kw, out=args[0] if args else None))
        return hypot(real_part(x), imag_part(x))  # |z|, with hypot's subgradient 0 at z = 0
    return absolute(x, *args, **kw)


def _real_if_close(a, tol=100):
    if not is_complex(a):
        return a  # NumPy returns a real array as it is
    if tol > 1:
        tol = np.finfo(dtype_of(a)).eps * tol
    # which branch NumPy takes is a constant of the recording (a replay checks it still holds)
    return real_part(a) if guarded(lambda v: bool(np.all(np.abs(np.imag(v)) < tol)), a) else a


register_derived(np.real_if_close, _real_if_close, uses=(real_part,),
                 notes="the real part where every imaginary part is below tol (NumPy's test, a constant of the "
                       "recording); else the array itself")
register_derived(np.real, _real, uses=(real_part,), notes="of complex values: the real part; of real ones: the identity")
register_derived(np.imag, _imag, uses=(imag_part,),
                 notes="of complex values: the imaginary part; of real ones: zeros, derivative 0")
register_derived(np.conjugate, _conjugate, uses=(conj,), notes="of real values: the identity")
register_derived(np.angle, _angle, uses=(arctan2, real_part, imag_part, multiply),
                 notes="of complex values: arctan2(imag, real); of real ones: 0 or pi (180) by the sign bit, "
                       "derivative 0")
register_derived(np.absolute, _absolute, uses=(absolute, hypot, real_part, imag_part),
                 notes="abs'(0) = 0 (the subgradient of least norm); of complex values: hypot(real, imag)")
if np.abs is not np.absolute:
    register(np.abs, _absolute, prims=(absolute, hypot, real_part, imag_part), kind="derived", name="np.abs")
