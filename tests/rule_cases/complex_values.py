"""Rows with complex values: each complex input is written z = x + 1j*y of two real inputs, and a
complex result is returned as its real and imaginary parts, so that the table's checks (central
differences, first and second order, blocks of seeds) run along real and imaginary directions alike."""

import warnings

import numpy as np

from . import Case, pos, r


def parts(w):
    """A complex result as real numbers: its real and imaginary parts stacked on a new first axis."""
    return np.stack([np.real(w), np.imag(w)])


def of_z(fn):
    """fn of one complex array z, as a function of x and y (z = x + iy) with a real result."""
    return lambda x, y: parts(fn(x + 1j * y))


def of_zw(fn):
    """fn of two complex arrays, as a function of their four real parts."""
    return lambda x, y, u, v: parts(fn(x + 1j * y, u + 1j * v))


def cwc(n):
    """Real and imaginary parts of a well-conditioned complex n x n matrix."""
    return r(n, n) + n * np.eye(n), r(n, n)


def _real_cast(x, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # NumPy's ComplexWarning: the imaginary part is dropped
        return np.sin((x + 1j * y).astype(np.float64))


_Z = (r(3, 2), r(3, 2))
_W = (r(3, 2, lo=0.3, hi=1.2), r(3, 2, lo=0.3, hi=1.2))  # away from log's and sqrt's branch cut
_XY = (0, 1)
_ALL = (0, 1, 2, 3)

CASES = [
    # the parts of complex numbers
    Case("np.real", lambda x, y: np.real((x + 1j * y) ** 2), _Z, wrt=_XY, id="complex-real"),
    Case("np.imag", lambda x, y: np.imag((x + 1j * y) ** 2), _Z, wrt=_XY, id="complex-imag"),
    Case("np.conjugate", of_z(lambda z: np.conj(z) * z * z), _Z, wrt=_XY, id="complex-conj"),
    Case("np.angle", lambda x, y: np.angle(x + 1j * y), _W, wrt=_XY, id="complex-angle"),
    Case("np.angle", lambda x, y: np.angle(x + 1j * y, deg=True), _W, wrt=_XY, id="complex-angle-deg"),
    Case("np.absolute", lambda x, y: np.abs((x + 1j * y) ** 3), _W, wrt=_XY, id="complex-abs"),
    Case("np.abs", lambda x, y: abs(x + 1j * y), _W, wrt=_XY, id="complex-abs-operator"),
    Case("x.astype()", lambda x: parts(x.astype(complex) * (1 + 2j)), (r(4),), id="complex-astype-complex"),
    Case("x.astype()", _real_cast, _Z, wrt=_XY, id="complex-astype-real-drops-imag"),
    Case("np.real", lambda x: np.real(np.exp(1j * x)) + np.imag(np.exp(1j * x) * x), (r(4),),
         id="complex-real-through-complex"),
    Case("np.real_if_close", lambda x: np.real_if_close(np.exp(1j * x) * np.exp(-1j * x) * x), (r(4),),
         id="complex-real-if-close"),
    Case("np.real_if_close", of_z(lambda z: np.real_if_close(z * z)), _Z, wrt=_XY, id="complex-real-if-close-not"),
    # arithmetic, with complex constants and real arguments mixed in
    Case("np.multiply", of_zw(lambda z, w: z * w * (2 - 1j)), _Z + _Z, wrt=_ALL, id="complex-multiply"),
    Case("np.multiply", lambda x, y: parts(1j * x * y), _Z, wrt=_XY, id="complex-1j-times-real"),
    Case("np.add", of_zw(lambda z, w: z + w + 1j), _Z + _Z, wrt=_ALL, id="complex-add"),
    Case("np.subtract", of_zw(lambda z, w: z - 2j * w), _Z + _Z, wrt=_ALL, id="complex-subtract"),
    Case("np.negative", of_z(lambda z: -z), _Z, wrt=_XY, id="complex-negative"),
    Case("np.true_divide", of_zw(lambda z, w: z / w), _Z + _W, wrt=_ALL, id="complex-divide"),
    Case("np.square", of_z(np.square), _Z, wrt=_XY, id="complex-square"),
    Case("np.reciprocal", of_z(np.reciprocal), _W, wrt=_XY, id="complex-reciprocal"),
    Case("np.power", of_zw(lambda z, w: z ** w), _W + _Z, wrt=_ALL, id="complex-power"),
    Case("np.power", of_z(lambda z: z ** 3), _Z, wrt=_XY, id="complex-power-int"),
    Case("np.power", lambda x, y: parts((x + 1j * y) ** 0.5), _W, wrt=_XY, id="complex-power-half"),
    # exp, log, sqrt, trigonometric and hyperbolic functions
    Case("np.exp", of_z(np.exp), _Z, wrt=_XY, id="complex-exp"),
    Case("np.log", of_z(np.log), _W, wrt=_XY, id="complex-log"),
    Case("np.sqrt", of_z(np.sqrt), _W, wrt=_XY, id="complex-sqrt"),
    Case("np.sin", of_z(np.sin), _Z, wrt=_XY, id="complex-sin"),
    Case("np.cos", of_z(np.cos), _Z, wrt=_XY, id="complex-cos"),
    Case("np.tan", of_z(np.tan), _Z, wrt=_XY, id="complex-tan"),
    Case("np.sinh", of_z(np.sinh), _Z, wrt=_XY, id="complex-sinh"),
    Case("np.cosh", of_z(np.cosh), _Z, wrt=_XY, id="complex-cosh"),
    Case("np.tanh", of_z(np.tanh), _Z, wrt=_XY, id="complex-tanh"),
    Case("np.arcsin", of_z(np.arcsin), (r(3, lo=-0.5, hi=0.5), r(3, lo=0.2, hi=0.6)), wrt=_XY, id="complex-arcsin"),
    Case("np.arccos", of_z(np.arccos), (r(3, lo=-0.5, hi=0.5), r(3, lo=0.2, hi=0.6)), wrt=_XY, id="complex-arccos"),
    Case("np.arctan", of_z(np.arctan), (r(3, lo=-0.5, hi=0.5), r(3, lo=0.2, hi=0.6)), wrt=_XY, id="complex-arctan"),
    Case("np.arcsinh", of_z(np.arcsinh), (r(3), r(3, lo=0.2, hi=0.6)), wrt=_XY, id="complex-arcsinh"),
    Case("np.arctanh", of_z(np.arctanh), (r(3, lo=-0.5, hi=0.5), r(3, lo=0.2, hi=0.6)), wrt=_XY, id="complex-arctanh"),
    Case("np.expm1", of_z(np.expm1), _Z, wrt=_XY, id="complex-expm1"),
    Case("np.log1p", of_z(np.log1p), _W, wrt=_XY, id="complex-log1p"),
    # reductions
    Case("np.sum", of_z(lambda z: np.sum(z * z, axis=0)), _Z, wrt=_XY, id="complex-sum"),
    Case("np.mean", of_z(lambda z: np.mean(z * z, axis=1)), _Z, wrt=_XY, id="complex-mean"),
    Case("np.prod", of_z(lambda z: np.prod(z, axis=0)), _Z, wrt=_XY, id="complex-prod"),
    Case("np.cumsum", of_z(lambda z: np.cumsum(z * z, axis=0)), _Z, wrt=_XY, id="complex-cumsum"),
    # linear algebra
    Case("np.matmul", of_zw(lambda a, b: a @ b), (r(3, 4), r(3, 4), r(4, 2), r(4, 2)), wrt=_ALL,
         id="complex-matmul"),
    Case("np.dot", of_zw(np.dot), (r(3, 4), r(3, 4), r(4), r(4)), wrt=_ALL, id="complex-dot"),
    Case("np.einsum", of_zw(lambda a, b: np.einsum("ij,jk->ik", a, b)), (r(3, 4), r(3, 4), r(4, 2), r(4, 2)),
         wrt=_ALL, id="complex-einsum"),
    Case("np.linalg.solve", of_zw(lambda a, b: np.linalg.solve(a, b)), cwc(3) + (r(3, 2), r(3, 2)), wrt=_ALL,
         id="complex-solve"),
    Case("np.linalg.inv", of_z(np.linalg.inv), cwc(3), wrt=_XY, id="complex-inv"),
    Case("np.linalg.det", of_z(np.linalg.det), cwc(3), wrt=_XY, id="complex-det"),
    Case("np.linalg.det", lambda x, y: np.abs(np.linalg.det(x + 1j * y)) ** 2, cwc(3), wrt=_XY,
         id="complex-det-modulus"),
    Case("np.linalg.slogdet", lambda x, y: np.linalg.slogdet(x + 1j * y)[1], cwc(3), wrt=_XY, id="complex-slogdet"),
    Case("np.linalg.slogdet", of_z(lambda a: np.linalg.slogdet(a)[0]), cwc(3), wrt=_XY, id="complex-slogdet-sign"),
    # functions whose complex forms differ from their real rules (rules/complex_forms.py)
    Case("np.linalg.norm", lambda x, y: np.linalg.norm(x + 1j * y), _Z, wrt=_XY, id="complex-norm"),
    Case("np.linalg.norm", lambda x, y: np.linalg.norm(x + 1j * y, ord=3, axis=0), _Z, wrt=_XY, id="complex-norm-p"),
    Case("np.linalg.norm", lambda x, y: np.linalg.norm(x + 1j * y, ord=np.inf), _Z, wrt=_XY, id="complex-norm-inf"),
    Case("np.var", lambda x, y: np.var(x + 1j * y, axis=0, ddof=1), _Z, wrt=_XY, id="complex-var"),
    Case("np.std", lambda x, y: np.std(x + 1j * y), _Z, wrt=_XY, id="complex-std"),
    Case("np.nanvar", lambda x, y: np.nanvar(x + 1j * y, axis=1), _Z, wrt=_XY, id="complex-nanvar"),
    Case("np.nanstd", lambda x, y: np.nanstd(x + 1j * y), _Z, wrt=_XY, id="complex-nanstd"),
    Case("np.vdot", of_zw(np.vdot), _Z + _Z, wrt=_ALL, id="complex-vdot"),
    Case("np.sign", of_z(lambda z: np.sign(z) * z), _W, wrt=_XY, id="complex-sign"),
    # shapes and indexing carry complex values as they are
    Case("x[i]", of_z(lambda z: z[1:, ::-1] * z[0]), _Z, wrt=_XY, id="complex-getitem"),
    Case("np.concatenate", of_z(lambda z: np.concatenate([z, 2j * z])), _Z, wrt=_XY, id="complex-concatenate"),
    Case("np.where", of_z(lambda z: np.where(np.real(z) > 0, z * z, 1j * z)), _Z, wrt=_XY, id="complex-where"),
    Case("np.exp", lambda x: np.sum(np.abs(np.exp(2j * np.pi * x) + x) ** 2), (pos(4),), order=3,
         id="complex-real-to-real-third-order"),
]
if hasattr(np, "vecdot"):  # NumPy >= 2.0
    CASES += [
        Case("np.vecdot", of_zw(np.vecdot), _Z + _Z, wrt=_ALL, id="complex-vecdot"),
        Case("np.linalg.vecdot", of_zw(np.linalg.vecdot), _Z + _Z, wrt=_ALL, id="complex-linalg-vecdot"),
        Case("np.linalg.vector_norm", lambda x, y: np.linalg.vector_norm(x + 1j * y, ord=3), _Z, wrt=_XY,
             id="complex-vector-norm"),
        Case("np.linalg.matrix_norm", lambda x, y: np.linalg.matrix_norm(x + 1j * y, ord=1), _Z, wrt=_XY,
             id="complex-matrix-norm"),
    ]
