"""Rows for the joining family: concatenate, stack and relatives, split, append and pad."""

import numpy as np

from . import Case, r


def _row_stack(arrays):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # an alias of np.vstack, deprecated in NumPy 2.0
        return np.row_stack(arrays)

CONST = np.array([[0.5, -1.0, 2.0]])


def _concat_some_constant(x, y):
    return np.concatenate([x ** 2, CONST, y], axis=0) * 3.0


def _split_sum(x):
    a, b, c = np.split(x, 3)
    return a * b + np.sin(c)


def _split_indices(x):
    parts = np.split(x, [1, -1], axis=-1)
    return np.concatenate([p ** 2 for p in parts[::-1]], axis=1)


def _split_out_of_range(x):
    head, middle, empty = np.split(x, [2, 9])
    return head.sum() * middle ** 2 + empty.sum()


def _array_split(x):
    return np.concatenate([np.sin(p) * len(p) for p in np.array_split(x, 3, axis=0)])


def _hvd_split(x):
    (left, right), (top, bottom) = np.hsplit(x, 2), np.vsplit(x, [1])
    return left * right + top.sum() * bottom[0, 0]


def _dsplit(x):
    a, b = np.dsplit(x, [1])
    return a * b[..., :1]


def _pad_traced_value(x):
    return np.pad(x ** 2, 1, constant_values=x[0, 0])


CASES = [
    Case("np.concatenate", lambda x, y: np.sin(np.concatenate([x, y])), (r(2, 3), r(4, 3)), wrt=(0, 1), order=3),
    Case("np.concatenate", lambda x, y: np.sin(np.concatenate((x, y), axis=-1)), (r(2, 3), r(2, 1)),
         wrt=(0, 1), id="concatenate-negative-axis"),
    Case("np.concatenate", lambda x, y: np.concatenate([x, y], axis=None) ** 2, (r(2, 2), r(3)), wrt=(0, 1),
         id="concatenate-axis-none"),
    Case("np.concatenate", _concat_some_constant, (r(2, 3), r(1, 3)), wrt=(0, 1), id="concatenate-with-constant"),
    Case("np.concatenate", _concat_some_constant, (r(2, 3), r(1, 3)), wrt=(1,),
         id="concatenate-one-input-differentiated"),
    Case("np.stack", lambda x, y: np.stack([x, y * x]) ** 2, (r(3), r(3)), wrt=(0, 1)),
    Case("np.stack", lambda x: np.stack([x, np.ones((2, 3)), np.sin(x)], axis=-1), (r(2, 3),),
         id="stack-axis-last-with-constant"),
    Case("np.hstack", lambda x, y: np.hstack([x, y, x]) ** 2, (r(3), r(2)), wrt=(0, 1)),
    Case("np.hstack", lambda x: np.hstack((x, np.zeros((2, 1)), x ** 2)), (r(2, 3),), id="hstack-2d"),
    Case("np.vstack", lambda x, y: np.vstack([x, y]) ** 2, (r(3), r(2, 3)), wrt=(0, 1)),
    Case("np.column_stack", lambda x, y: np.column_stack([x, y, x * y[:, 0]]) ** 2, (r(3), r(3, 2)), wrt=(0, 1)),
    Case("np.dstack", lambda x, y: np.sin(np.dstack([x, y])), (r(2, 3), r(2, 3)), wrt=(0, 1)),
    Case("np.dstack", lambda x: np.dstack([x, x ** 2]), (r(3),), id="dstack-1d"),
    Case("np.split", _split_sum, (r(6),), order=3),
    Case("np.split", _split_indices, (r(2, 5),), id="split-index-list-negative-axis"),
    Case("np.split", _split_out_of_range, (r(5),), id="split-index-out-of-range"),
    Case("np.split", lambda x: np.stack(np.split(x, 2, axis=1)) ** 2, (r(3, 4),), id="split-axis-1"),
    Case("np.array_split", _array_split, (r(7, 2),)),
    Case("np.array_split", lambda x: np.array_split(x, [1, 3], axis=1)[1] ** 2, (r(2, 4),),
         id="array_split-indices"),
    Case(("np.hsplit", "np.vsplit"), _hvd_split, (r(2, 4),), id="hsplit-vsplit"),
    Case("np.hsplit", lambda x: np.hsplit(x, [2])[1] ** 2, (r(5),), id="hsplit-1d"),
    Case("np.dsplit", _dsplit, (r(2, 2, 3),)),
    Case("np.append", lambda x: np.append(x, [1.0, 2.0]) ** 2, (r(2, 2),)),
    Case("np.append", lambda x, y: np.sin(np.append(x, y, axis=1)), (r(2, 2), r(2, 3)), wrt=(0, 1),
         id="append-axis"),
    Case("np.pad", lambda x: np.pad(x, 2) ** 3, (r(3),), order=3),
    Case("np.pad", lambda x: np.pad(np.sin(x), ((1, 0), (2, 3)), constant_values=1.5), (r(2, 3),),
         id="pad-pairs-constant"),
    Case("np.pad", lambda x: np.pad(x, (1, 2), mode="constant", constant_values=((1, 2), (3, 4))) * x.sum(),
         (r(2, 2),), id="pad-per-axis-values"),
    Case("np.pad", lambda x: np.pad(x, [(0, 0), (1, 1), (0, 2)]) ** 2, (r(2, 2, 2),), id="pad-3d"),
    Case("np.pad", _pad_traced_value, (r(2, 2),), id="pad-traced-constant"),
    Case("np.pad", lambda x: np.pad(x, {-1: (2, 0)}, constant_values=-1.0) ** 2, (r(2, 3),), id="pad-dict"),
    Case("np.pad", lambda x: np.pad(x, 2, mode="edge") ** 3, (r(2, 3),), order=3, id="pad-edge"),
    Case("np.pad", lambda x: np.sin(np.pad(x, ((1, 0), (0, 2)), mode="edge")), (r(3, 1),), id="pad-edge-pairs"),
    Case("np.pad", lambda x: np.pad(x, (1, 2), mode="reflect") ** 2, (r(3, 4),), id="pad-reflect"),
    Case("np.pad", lambda x: np.pad(x, (7, 5), mode="reflect", reflect_type="even") * np.arange(15.0), (r(3),),
         id="pad-reflect-wider-than-input"),
    Case("np.pad", lambda x: np.pad(x, ((2, 1), (0, 0)), mode="reflect") ** 2, (r(1, 3),),
         id="pad-reflect-singleton-axis"),
    Case("np.pad", lambda x: np.pad(x, [(1, 3)], mode="symmetric") ** 2, (r(2, 3),), id="pad-symmetric-one-pair"),
    Case("np.pad", lambda x: np.cos(np.pad(x, (4, 6), mode="symmetric", reflect_type="even")), (r(3),),
         id="pad-symmetric-wider-than-input"),
    Case("np.pad", lambda x: np.pad(x, (1, 2), mode="reflect", reflect_type="odd") ** 2, (r(3, 4),), order=3,
         id="pad-reflect-odd"),
    Case("np.pad", lambda x: np.pad(x, (7, 12), mode="reflect", reflect_type="odd") * np.arange(22.0), (r(3),),
         id="pad-reflect-odd-wider-than-input"),
    Case("np.pad", lambda x: np.cos(np.pad(x, {0: (5, 9)}, mode="symmetric", reflect_type="odd")), (r(2, 3),),
         order=3, id="pad-symmetric-odd-wider-than-input"),
    Case("np.pad", lambda x: np.pad(x, [(2, 1), (1, 3), (0, 4)], mode="symmetric", reflect_type="odd") ** 2,
         (r(1, 2, 3),), id="pad-symmetric-odd-3d-singleton-axis"),
    Case("np.pad", lambda x: np.pad(x, [(0, 0), (1, 1), (2, 0)], mode="wrap") * np.pad(x, 1, mode="symmetric")[1:3],
         (r(2, 2, 3),), id="pad-wrap-3d"),
    Case("np.pad", lambda x: np.pad(x, {0: 3}, mode="wrap") ** 2, (r(2, 3),), id="pad-wrap-dict"),
    Case("np.block", lambda x, y: np.block([[x, y], [y ** 2, 2.0 * x]]), (r(2, 2), r(2, 3)), wrt=(0, 1)),
    Case("np.block", lambda x: np.sin(np.block([x[0], 1.0, x])), (r(3),), id="block-1d"),
    Case("np.row_stack", lambda x, y: np.sin(np.vstack([x, y])) if not hasattr(np, "row_stack")
         else np.sin(_row_stack([x, y])), (r(3), r(2, 3)), wrt=(0, 1)),
]
