"""Rows for the shape family: reshapes, transposes, broadcasts, tile and repeat."""

import numpy as np

from . import Case, r


def _atleast_many(x, y):
    a, b = np.atleast_2d(x[0], y)
    return a * b


def _broadcast_arrays(x, y):
    a, b = np.broadcast_arrays(x, y)
    return np.sin(a) * b


CASES = [
    # reshape and its relatives
    Case("np.reshape", lambda x: x.reshape(2, 6) ** 3, (r(3, 4),), order=3, id="reshape-method-args"),
    Case("np.reshape", lambda x: np.sin(np.reshape(x, (-1, 2))), (r(3, 4),), id="reshape-minus-one"),
    Case("np.reshape", lambda x: x.reshape((2, 1, 3)) * x.reshape(3, 2)[:, :, None].T, (r(6),),
         id="reshape-tuple-and-chain"),
    Case("np.ravel", lambda x: np.ravel(x) ** 2, (r(2, 3, 2),)),
    Case("np.ravel", lambda x: x.ravel() * x.flatten()[::-1], (r(3, 4),), id="ravel-flatten-methods"),
    Case("np.expand_dims", lambda x: np.expand_dims(x, 1) * x, (r(3),)),
    Case("np.expand_dims", lambda x: np.sin(np.expand_dims(x, (0, -1))), (r(2, 3),), id="expand_dims-tuple"),
    Case("np.squeeze", lambda x: np.squeeze(x) ** 2, (r(1, 3, 1),)),
    Case("np.squeeze", lambda x: x.squeeze(axis=0) ** 2, (r(1, 3, 1),), id="squeeze-axis-method"),
    Case("np.atleast_1d", lambda x: np.atleast_1d(x) ** 2, (r(),), id="atleast_1d-0d"),
    Case("np.atleast_1d", lambda x: np.atleast_1d(x) ** 2, (r(3),), id="atleast_1d-1d"),
    Case("np.atleast_2d", lambda x: np.atleast_2d(x) * x[:, None], (r(3),)),
    Case("np.atleast_2d", _atleast_many, (r(3), r(3)), wrt=(0, 1), id="atleast_2d-several"),
    Case("np.atleast_3d", lambda x: np.atleast_3d(x) ** 2, (r(4),)),
    Case("np.atleast_3d", lambda x: np.atleast_3d(x) ** 2, (r(2, 3),), id="atleast_3d-2d"),
    # transposes
    Case("np.transpose", lambda x: np.sin(x.T @ x), (r(3, 2),), order=3, id="transpose-T"),
    Case("np.transpose", lambda x: np.transpose(x, (2, 0, 1)) ** 2, (r(2, 3, 4),), id="transpose-axes"),
    Case("np.transpose", lambda x: x.transpose(1, 0, 2) * x.transpose()[::-1].T, (r(2, 2, 3),),
         id="transpose-method"),
    Case("np.swapaxes", lambda x: np.sin(x.swapaxes(0, -1)), (r(2, 3, 4),)),
    Case("np.moveaxis", lambda x: np.moveaxis(x, 0, -1) ** 2, (r(2, 3, 4),)),
    Case("np.moveaxis", lambda x: np.moveaxis(x, (0, 1), (2, 0)) ** 2, (r(2, 3, 4),), id="moveaxis-tuple"),
    Case("np.permute_dims", lambda x: np.permute_dims(x, (1, 2, 0)) ** 2, (r(2, 3, 4),)),
    Case("np.matrix_transpose", lambda x: np.matrix_transpose(x) @ x, (r(2, 3, 2),)),
    # broadcasts
    Case("np.broadcast_to", lambda x: np.broadcast_to(x, (2, 3, 4)) ** 2, (r(3, 1),)),
    Case("np.broadcast_to", lambda x: np.sin(np.broadcast_to(x, (4, 2))), (r(),), id="broadcast_to-0d"),
    Case("np.broadcast_arrays", _broadcast_arrays, (r(3, 1), r(4)), wrt=(0, 1)),
    # tile and repeat
    Case("np.tile", lambda x: np.tile(x, 3) ** 3, (r(4),), order=3),
    Case("np.tile", lambda x: np.tile(x, (2, 1, 3)) ** 2, (r(3, 2),), id="tile-more-reps-than-dims"),
    Case("np.tile", lambda x: np.sin(np.tile(x, (2,))), (r(2, 3),), id="tile-fewer-reps-than-dims"),
    Case("np.tile", lambda x: np.tile(x, (1, 1)) * x, (r(2, 3),), id="tile-ones"),
    Case("np.repeat", lambda x: np.repeat(x, 2) ** 2, (r(2, 3),), id="repeat-axis-none"),
    Case("np.repeat", lambda x: x.repeat(3, axis=-1) ** 2, (r(2, 3),), id="repeat-axis-method"),
    Case("np.repeat", lambda x: np.repeat(x, [2, 0, 3], axis=1) ** 2, (r(2, 3),), id="repeat-per-element"),
    Case("np.repeat", lambda x: np.sin(np.repeat(x, [1, 2, 1, 3])), (r(2, 2),), id="repeat-per-element-flat"),
    Case("np.repeat", lambda x: np.repeat(x[None], 4) ** 2, (r(),), id="repeat-0d"),
    Case("np.rollaxis", lambda x: np.rollaxis(x, 2, 1) ** 2, (r(2, 3, 4),)),
    Case("np.meshgrid", lambda x, y: np.meshgrid(x, y)[0] * np.meshgrid(x, y, indexing="ij")[1].T ** 2
         + np.meshgrid(x, y, sparse=True)[1], (r(3), r(2)), wrt=(0, 1)),
    *([Case("np.unstack", lambda x: np.unstack(x, axis=1)[1] * np.unstack(x)[0][:, None], (r(3, 4),))]
      if hasattr(np, "unstack") else []),
]
