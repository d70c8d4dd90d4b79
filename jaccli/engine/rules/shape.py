"""Rules for functions that move elements without arithmetic: reshape, transpose, broadcast, squeeze."""

from __future__ import annotations

import numpy as np

from ..registry import family, primitive, register, register_derived, register_primitive
from ._util import norm_axes

family("shape")


def _k(g):
    return np.shape(g)[0]


# ---------------------------------------------------------------------------
# reshape (ravel, flatten, expand_dims and squeeze are reshapes too)
# ---------------------------------------------------------------------------
def _reshape_impl(x, shape):
    return np.reshape(x, shape)


reshape = primitive("reshape", _reshape_impl)


def _reshape_rule(to_shape_of):
    def maker(ans, x, shape):
        target = np.shape(ans) if to_shape_of == "ans" else np.shape(x)
        return lambda g: np.reshape(g, (_k(g),) + tuple(target))
    return maker


reshape.defvjp(_reshape_rule("x"))
reshape.defjvp(_reshape_rule("ans"))


def _reshape_handler(a, newshape=None, order="C", *, shape=None, copy=None):
    if shape is None:
        shape = newshape
    if order not in ("C", "A"):
        from ...errors import UnsupportedOperationError
        raise UnsupportedOperationError(f"np.reshape with order={order!r} is not supported by jaccli; "
                                        "use the default order='C'")
    if isinstance(shape, (int, np.integer)):
        shape = (int(shape),)
    shape = tuple(int(s) for s in shape)
    if np.shape(a) == shape:
        return a
    return reshape(a, shape)


register(np.reshape, _reshape_handler, prims=(reshape,))
register_derived(np.ravel, lambda a, order="C": _reshape_handler(a, (-1,), order), uses=(reshape,))


def _expand_dims(a, axis):
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    shape = np.expand_dims(np.empty(np.shape(a), dtype=bool), axes).shape
    return _reshape_handler(a, shape)


def _squeeze(a, axis=None):
    shape = np.squeeze(np.empty(np.shape(a), dtype=bool), axis=axis).shape
    return _reshape_handler(a, shape)


register_derived(np.expand_dims, _expand_dims, uses=(reshape,))
register_derived(np.squeeze, _squeeze, uses=(reshape,))
register_derived(np.atleast_1d, lambda *arys: _atleast(1, arys), uses=(reshape,))
register_derived(np.atleast_2d, lambda *arys: _atleast(2, arys), uses=(reshape,))


def _atleast(n, arys):
    out = []
    for a in arys:
        shape = np.shape(a)
        if len(shape) < n:
            shape = (1,) * (n - len(shape)) + shape if n == 1 or len(shape) == 0 else (1,) + shape
            a = _reshape_handler(a, shape)
        out.append(a)
    return out[0] if len(out) == 1 else out


# ---------------------------------------------------------------------------
# transpose (swapaxes and moveaxis are transposes)
# ---------------------------------------------------------------------------
def _transpose_impl(x, axes):
    return np.transpose(x, axes)


transpose = primitive("transpose", _transpose_impl)


def _transpose_vjp(ans, x, axes):
    inverse = tuple(int(i) + 1 for i in np.argsort(axes))
    return lambda g: np.transpose(g, (0,) + inverse)


def _transpose_jvp(ans, x, axes):
    forward = (0,) + tuple(a + 1 for a in axes)
    return lambda t: np.transpose(t, forward)


transpose.defvjp(_transpose_vjp)
transpose.defjvp(_transpose_jvp)


def _transpose_handler(a, axes=None):
    nd = np.ndim(a)
    if axes is None:
        axes = tuple(range(nd))[::-1]
    axes = tuple(int(ax) % nd for ax in axes)
    if axes == tuple(range(nd)):
        return a
    return transpose(a, axes)


def _swapaxes(a, axis1, axis2):
    nd = np.ndim(a)
    axes = list(range(nd))
    i, j = axis1 % nd, axis2 % nd
    axes[i], axes[j] = axes[j], axes[i]
    return _transpose_handler(a, tuple(axes))


def _moveaxis(a, source, destination):
    nd = np.ndim(a)
    src = norm_axes(source, nd) if not isinstance(source, (int, np.integer)) else (int(source) % nd,)
    src = tuple(int(s) % nd for s in (source if isinstance(source, (tuple, list)) else (source,)))
    dst = tuple(int(d) % nd for d in (destination if isinstance(destination, (tuple, list)) else (destination,)))
    order = [n for n in range(nd) if n not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return _transpose_handler(a, tuple(order))


register(np.transpose, _transpose_handler, prims=(transpose,))
register_derived(np.swapaxes, _swapaxes, uses=(transpose,))
register_derived(np.moveaxis, _moveaxis, uses=(transpose,))
register_derived(np.permute_dims, _transpose_handler, uses=(transpose,)) if hasattr(np, "permute_dims") else None
register_derived(np.matrix_transpose, lambda x: _swapaxes(x, -1, -2), uses=(transpose,)) \
    if hasattr(np, "matrix_transpose") else None

# ---------------------------------------------------------------------------
# broadcast_to: its reverse rule sums over the broadcast axes
# ---------------------------------------------------------------------------


def _broadcast_impl(x, shape):
    return np.broadcast_to(x, shape)


broadcast_to = primitive("broadcast_to", _broadcast_impl)


def _broadcast_vjp(ans, x, shape):
    from ._util import unbroadcast

    xshape = np.shape(x)
    return lambda g: unbroadcast(g, xshape)


def _broadcast_jvp(ans, x, shape):
    from ._util import expand

    xshape = np.shape(x)
    return lambda t: expand(t, xshape, tuple(shape))


broadcast_to.defvjp(_broadcast_vjp)
broadcast_to.defjvp(_broadcast_jvp)


def _broadcast_handler(array, shape, subok=False):
    shape = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(s) for s in shape)
    if np.shape(array) == shape:
        return array
    return broadcast_to(array, shape)


register(np.broadcast_to, _broadcast_handler, prims=(broadcast_to,))


def _broadcast_arrays(*args, subok=False):
    shape = np.broadcast_shapes(*(np.shape(a) for a in args))
    return [_broadcast_handler(a, shape) for a in args]


register_derived(np.broadcast_arrays, _broadcast_arrays, uses=(broadcast_to,))
