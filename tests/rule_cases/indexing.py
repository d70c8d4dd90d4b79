"""Rows for the indexing family: x[idx], x[idx] = v, np.take and np.take_along_axis."""

import numpy as np

from . import Case, r

MASK = np.array([[True, False, True, False], [False, False, True, True], [True, True, False, False]])


def _rows_loop(x):
    total = np.zeros_like(x[0])
    for row in x:
        total = total + row ** 2
    return total * len(x)


def _set_basic(x, v):
    y = x.copy()
    y[0] = v ** 2
    y[1:, ::2] = 0.5
    return y * x


def _set_broadcast(x, v):
    y = np.ones_like(x)
    y[1:] = v
    y[:, -1] = x[:, 0]
    return np.sin(y)


def _set_mask_scaled(x):
    y = x.copy()
    y[y > 0] *= 2
    return y ** 2


def _set_mask_values(x, v):
    y = x * 1.0
    y[MASK] = v
    return y * x


def _set_repeated(x, v):
    y = x.copy()
    y[[0, 2, 0, 1]] = v  # position 0 is written twice: the last write (v[2]) wins
    return y ** 2


def _set_fancy_2d(x):
    y = x.copy()
    y[[0, 2], [1, 3]] = x[[1, 1], [0, 2]] ** 2
    y[..., 0] += x[:, 1]
    return y * x


def _set_in_place_ops(x):
    y = x.copy()
    y += x ** 2
    y[0] -= 1.5 * y[1]
    y[:, 1:] /= 2.0
    return y



_MASK = np.array([[True, False, True, False], [False, True, False, True], [True, True, False, False]])


def _written(write):
    """f(x, v): a traced array made from x, written into in place by NumPy's function, then used."""
    def f(x, v):
        a = x * 1.5
        write(a, v)
        return np.sin(a)
    return f

CASES = [
    # reading: basic indices are views
    Case("x[idx]", lambda x: x[1] ** 3, (r(3, 4),), order=3, id="getitem-int"),
    Case("x[idx]", lambda x: x[-1, -2] * x[0, 0], (r(3, 4),), id="getitem-negative-ints"),
    Case("x[idx]", lambda x: x[::2, 1:] ** 2, (r(3, 4),), id="getitem-step-slice"),
    Case("x[idx]", lambda x: x[::-1, -1:0:-2] ** 2, (r(3, 4),), id="getitem-negative-steps"),
    Case("x[idx]", lambda x: np.sin(x[..., 1]), (r(2, 3, 4),), id="getitem-ellipsis"),
    Case("x[idx]", lambda x: x[None, :, 1, np.newaxis] ** 2, (r(3, 4),), id="getitem-newaxis"),
    Case("x[idx]", _rows_loop, (r(3, 4),), id="getitem-iterate-rows-len"),
    # reading: advanced indices are one gather
    Case("x[idx]", lambda x: x[np.array([0, 2])] ** 2, (r(3, 4),), id="getitem-int-array"),
    Case("x[idx]", lambda x: x[[0, 2], [1, 3]] ** 2, (r(3, 4),), id="getitem-lists"),
    Case("x[idx]", lambda x: np.sin(x[[0, 0, 2, 0]]), (r(3, 2),), order=3, id="getitem-repeated-accumulate"),
    Case("x[idx]", lambda x: x[MASK] ** 2, (r(3, 4),), id="getitem-bool-mask"),
    Case("x[idx]", lambda x: np.sin(x[x > 0]), (r(3, 4),), id="getitem-bool-mask-from-values"),
    Case("x[idx]", lambda x: x[:, [0, 2, 2], 1:3] ** 2, (r(2, 3, 4),), id="getitem-advanced-and-basic"),
    Case("x[idx]", lambda x: x[[0, 1], :, [1, 3]] ** 2, (r(2, 3, 4),), id="getitem-advanced-non-adjacent"),
    Case("x[idx]", lambda x: x[1:, np.array([[0, 1], [2, 0]])] ** 2, (r(3, 3),), id="getitem-2d-index-array"),
    # writing: a functional update
    Case("x[idx] = v", _set_basic, (r(3, 4), r(4)), wrt=(0, 1), order=3, id="setitem-basic"),
    Case("x[idx] = v", _set_broadcast, (r(3, 4), r(4)), wrt=(0, 1), id="setitem-broadcast"),
    Case("x[idx] = v", _set_mask_scaled, (r(3, 4),), id="setitem-mask-in-place-multiply"),
    Case("x[idx] = v", _set_mask_values, (r(3, 4), r(6)), wrt=(0, 1), id="setitem-mask-values"),
    Case("x[idx] = v", _set_repeated, (r(3), r(4)), wrt=(0, 1), id="setitem-repeated-last-wins"),
    Case("x[idx] = v", _set_fancy_2d, (r(3, 4),), id="setitem-fancy-2d"),
    Case("x[idx] = v", _set_in_place_ops, (r(3, 4),), id="setitem-in-place-operators"),
    # take
    Case("np.take", lambda x: np.take(x, [5, -1, 5]) ** 2, (r(3, 4),), id="take-axis-none"),
    Case("np.take", lambda x: np.sin(np.take(x, [[0, 2], [2, 2]], axis=1)), (r(3, 4),), id="take-axis"),
    Case("np.take", lambda x: x.take(1, axis=-1) ** 2, (r(3, 4),), id="take-scalar-method"),
    Case("np.take", lambda x: np.take(x, [4, -5, 1], axis=0, mode="wrap") ** 2, (r(3, 2),), id="take-wrap"),
    Case("np.take", lambda x: np.take(x, [7, -2, 1], mode="clip") * x, (r(3),), id="take-clip"),
    Case("np.take_along_axis", lambda x: np.take_along_axis(x, np.argsort(x, axis=1), axis=1) ** 2,
         (r(3, 4),)),
    Case("np.take_along_axis", lambda x: np.take_along_axis(x, np.array([[0, 0], [2, 1]]), axis=0) ** 2,
         (r(3, 2),), id="take_along_axis-repeated"),
    Case("np.take_along_axis", lambda x: np.sin(np.take_along_axis(x, np.array([5, 0, 5]), axis=None)),
         (r(2, 3),), id="take_along_axis-axis-none"),
    Case("np.delete", lambda x: np.delete(x, [0, 2], axis=1) ** 2, (r(3, 4),)),
    Case("np.delete", lambda x: np.sin(np.delete(x, slice(1, 3))), (r(2, 3),), id="delete-flat-slice"),
    Case("np.insert", lambda x, v: np.insert(x, [1, 3], v, axis=1) ** 2, (r(3, 4), r(3, 1)), wrt=(0, 1)),
    Case("np.insert", lambda x: np.insert(x, 2, x[:2] * 3.0) ** 2, (r(5),), id="insert-own-values"),
    Case("np.compress", lambda x: np.compress(x[0] > 0, x, axis=1) ** 2, (np.array([[0.5, -0.2, 0.9], [0.3, 0.4, -0.7]]),)),
    Case("np.extract", lambda x: np.extract(x > 0, x) ** 3, (np.array([[0.5, -0.2], [0.3, -0.9]]),)),
    Case("np.resize", lambda x: np.resize(x, (3, 3)) ** 2, (r(4),)),
    Case("np.choose", lambda x, y: np.choose([[0, 1, 0], [1, 1, 0]], [x, y ** 2]), (r(2, 3), r(3)), wrt=(0, 1)),
    Case("np.put", _written(lambda a, v: np.put(a, [0, 5, 7, 11, 0], v ** 2)), (r(3, 4), r(3)), wrt=(0, 1)),
    Case("np.putmask", _written(lambda a, v: np.putmask(a, _MASK, v * 3.0)), (r(3, 4), r(3)), wrt=(0, 1)),
    Case("np.place", _written(lambda a, v: np.place(a, _MASK, v * 3.0)), (r(3, 4), r(3)), wrt=(0, 1)),
    Case("np.fill_diagonal", _written(lambda a, v: np.fill_diagonal(a, v)), (r(3, 4), r(2)), wrt=(0, 1)),
    Case("np.copyto", _written(lambda a, v: np.copyto(a, v ** 2, where=_MASK)), (r(3, 4), r(4)), wrt=(0, 1)),
    Case("np.put_along_axis", _written(lambda a, v: np.put_along_axis(a, np.array([[1], [3], [0]]), v, axis=1)),
         (r(3, 4), r(3, 1)), wrt=(0, 1)),
    Case(("np.add.at", "np.subtract.at"), _written(lambda a, v: (np.add.at(a, ([0, 2, 0], [1, 3, 1]), v ** 2),
                                                               np.subtract.at(a, [1, 1], v[0]))),
         (r(3, 4), r(3)), wrt=(0, 1), id="add.at-subtract.at"),
    # repeated indices with a zero factor and a zero entry of a (own inputs: the r() stream stays as it was)
    Case("np.multiply.at", _written(lambda a, v: (np.multiply.at(a, ([0, 2, 0, 0, 1], [1, 3, 1, 1, 0]), v),
                                                  np.multiply.at(a, [2, 2], v[4] ** 2))),
         (np.array([[0.3, -0.7, 0.5, 0.0], [1.1, 0.4, -0.9, 0.6], [-0.2, 0.8, 0.0, -1.3]]),
          np.array([0.0, 0.9, -1.4, 0.7, 1.2])), wrt=(0, 1), id="multiply.at-repeated-with-zeros"),
    Case("np.bincount", lambda w: np.bincount(np.array([0, 3, 0, 1, 3]), weights=w ** 2, minlength=5), (r(5),)),
    Case(("np.putmask", "np.put_along_axis"),
         _written(lambda a, v: (np.putmask(a, mask=_MASK, values=v), np.put_along_axis(
             a, indices=np.array([[0], [2], [1]]), values=v[:, None] ** 2, axis=1))),
         (r(3, 4), r(3)), wrt=(0, 1), id="in-place-writers-by-keyword"),
]
