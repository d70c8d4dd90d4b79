"""Lazy Jacobian and Hessian objects: indexable like the dense arrays, computing only what is asked.

The objects are views on an `Evaluator` (jaccli/api/evaluator.py), which records f once and caches
the rows and columns it has computed; indexing maps a NumPy index onto the rows and columns it
touches, asks the evaluator for those, and reads the answer from its cache.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .block_indices import is_basic, is_full_index, selected, split_basic
from .evaluator import Evaluator
from .steady_calls import MadeOnRead


def _read_only(data: np.ndarray) -> np.ndarray:
    """`data` without a copy, read-only for good: a view whose memory comes from a read-only buffer.

    A plain read-only view is not enough: NumPy lets ``setflags(write=True)`` succeed on any view
    (J.T, np.asarray(J).ravel()) whose base chain ends at a writable array, and the cache is one.
    Here the chain ends at a read-only memoryview, so no view taken from it can be made writable.
    """
    return np.asarray(memoryview(data).toreadonly())


# ---------------------------------------------------------------------------
# The user-facing lazy objects
# ---------------------------------------------------------------------------
class _Block:
    """One lazy block (output i, input j) of an Evaluator, indexable like the dense array."""

    kind = "jacobian"
    _flat = False  # indexed as the block (out.shape + in.shape); a MatrixView: as its [M, N] matrix
    # A steady record_once call's block before its evaluator (api/steady_calls.py): `_ev` made on first read
    _deferred = None
    _ev = MadeOnRead()

    def __init__(self, ev: Evaluator, i: int, j: int, result_dtype: np.dtype) -> None:
        self._ev = ev
        self._i = i
        self._j = j
        self.dtype = np.dtype(result_dtype)
        batch = (ev.B,) if ev.batch else ()
        self.shape = batch + ev.out_feat[i] + ev.in_feat[j]
        self._matrix_shape = batch + (ev.M[i], ev.N[j])

    def __reduce__(self):
        raise TypeError(f"a lazy {type(self).__name__} holds the recording of f and cannot be pickled; pickle "
                        f"np.asarray(J) (computes every entry) or the part you need, J[idx]")

    def __copy__(self) -> "_Block":
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        return new

    def __deepcopy__(self, memo: dict) -> "_Block":
        # Entries once computed never change (Evaluator._keeping_known; in a PartialStore, to the last
        # bit only), and np.asarray(J) is read-only: sharing them is safe.
        return self.__copy__()

    # -- what has been done ----------------------------------------------------
    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def stats(self) -> dict:
        """Cost so far: rows and columns of this block evaluated, sweeps run by the whole call, and
        the path its sweeps took (jaccli.replay.PATHS): "recording" (f recorded, swept as usual),
        "sweep template" (a Hessian's inner gradient replayed), "replay" (record_once replayed f's
        recording, swept as usual), "compiled sweep" (a replay's sweeps ran compiled)."""
        ev = self._ev
        return {"rows_evaluated": int(ev.row_done[self._i].sum()),
                "cols_evaluated": int(ev.col_done[self._j].sum()),
                "sweeps": ev.sweeps, "seeds": ev.seeds_used, "path": ev.rec.path}

    @property
    def rows_evaluated(self) -> int:
        return self.stats["rows_evaluated"]

    @property
    def cols_evaluated(self) -> int:
        return self.stats["cols_evaluated"]

    @property
    def sweeps(self) -> int:
        return self._ev.sweeps

    @property
    def connected(self) -> bool:
        """Whether the output structurally depends on the input (a path in the recording)."""
        return self._ev.rec.connected(self._i, self._j)

    @property
    def cut_by(self) -> tuple[str, tuple | None] | None:
        """When no output depends on the input: the first operation that used the input with an
        integer or boolean result (x.astype(int), x > 0), as (op name, (file, line)); else None."""
        return self._ev.rec.cut(self._j)

    def to_dask(self, rows_per_chunk: int | None = None) -> Any:
        """A dask.array of this block's shape in chunks of rows computed on Dask's workers, where f
        (cloudpickled) is recorded once per worker; see docs/parallel.md. Needs jaccli[dask]."""
        from jaccli.parallel.dask_arrays import to_dask

        return to_dask(self, rows_per_chunk)

    @property
    def matrix(self) -> "MatrixView":
        """The flattened [M, N] (or [B, M, N]) view, with the same laziness and cache."""
        return MatrixView(self)

    # -- evaluation ---------------------------------------------------------------
    def _evaluate(self, idx: Any, flat: bool = False, mode: str | None = None) -> np.ndarray:
        """Entries ``dense[idx]`` of the block (``flat``: of its [M, N] matrix form)."""
        if idx is Ellipsis and mode is None and self._deferred is not None:
            full = self._deferred.whole()  # (np.asarray(J) of a steady call: no evaluator yet, maybe none at all)
            if full is not None:
                shape = self._matrix_shape if flat else self.shape
                return full.reshape(shape) if shape else full.reshape(shape)[idx]
        with self._ev.lock:  # one thread at a time fills the shared cache
            return self._evaluate_unlocked(idx, flat, mode)

    def _evaluate_unlocked(self, idx: Any, flat: bool, mode: str | None) -> np.ndarray:
        ev, i, j = self._ev, self._i, self._j
        if idx is Ellipsis:  # (np.asarray(J): the whole block, nothing else to work out)
            shape = self._matrix_shape if flat else self.shape
            full = ev.whole(i, j, mode).reshape(shape)  # (an ndarray: the dense store)
            return full if shape else full[idx]
        nb = 1 if ev.batch else 0
        out_shape = (ev.M[i],) if flat else ev.out_feat[i]
        in_shape = (ev.N[j],) if flat else ev.in_feat[j]
        shape = self._matrix_shape if flat else self.shape
        if is_full_index(idx):
            return ev.whole(i, j, mode).reshape(shape)[idx]
        # NumPy's own error messages for bad indices, from an array that owns no memory.
        probe = np.broadcast_to(np.empty((), dtype=bool), shape)[idx]
        key = idx if isinstance(idx, tuple) else (idx,)
        if is_basic(key):
            parts = split_basic(key, ([1] if nb else []) + [len(out_shape), len(in_shape)])
            rows = selected(ev.M[i], out_shape, parts[nb])
            cols = selected(ev.N[j], in_shape, parts[nb + 1])
            if nb and np.arange(ev.B)[parts[0]].size == 0:
                rows = rows[:0]  # no sample selected: nothing to evaluate
            ev.ensure(i, j, rows, cols, mode)
            if ev.partial(i, j):
                # Basic indexing keeps the axes in order: the selected rows x columns, reshaped.
                sub = ev.take(i, j, rows, cols)
                out = np.reshape(sub[parts[0]] if nb else sub, np.shape(probe))
                return out if isinstance(probe, np.ndarray) else out[()]  # a scalar where NumPy gives one
            return np.reshape(ev.entries(i, j), shape)[idx]
        # General index: which row and which column each selected entry comes from.
        lead = (1,) * nb
        rgrid = np.broadcast_to(np.arange(ev.M[i]).reshape(lead + out_shape + (1,) * len(in_shape)), shape)[idx]
        cgrid = np.broadcast_to(np.arange(ev.N[j]).reshape(lead + (1,) * len(out_shape) + in_shape), shape)[idx]
        ev.ensure(i, j, np.unique(rgrid), np.unique(cgrid), mode)
        bgrid = np.broadcast_to(np.arange(ev.B).reshape((-1,) + (1,) * (len(shape) - 1)), shape)[idx] \
            if nb else None
        if ev.partial(i, j):
            return ev.take_points(i, j, rgrid, cgrid, bgrid)
        store = ev.entries(i, j)
        return store[bgrid, rgrid, cgrid] if nb else store[rgrid, cgrid]

    def _finish(self, data: Any) -> Any:
        # Scalars stay scalars and 0-d arrays stay arrays, exactly as NumPy's indexing gives them.
        if isinstance(data, np.ndarray):
            return data if data.dtype == self.dtype else data.astype(self.dtype)
        return self.dtype.type(data)

    def __getitem__(self, idx: Any) -> Any:
        if self._deferred is not None and type(idx) is slice:  # (J[:10] of a steady call: its rows' program)
            out = self._deferred.rows(idx, self._flat, self.dtype)
            if out is not None:
                return out
        with self._ev.lock:
            out = self._finish(self._evaluate(idx, flat=self._flat))
            return out.copy() if self._ev.in_cache(self._i, self._j, out) else out

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        deferred = self._deferred
        if deferred is not None and dtype is None and not copy:  # (np.asarray(J) of a steady call: its store)
            full = deferred.whole()
            if full is not None and full.dtype == self.dtype:  # (what _evaluate and _finish give then, at once)
                return _read_only(full.reshape(self._matrix_shape if self._flat else self.shape))
        data = self._finish(self._evaluate(Ellipsis, flat=self._flat))
        if type(data) is not np.ndarray:
            data = np.asarray(data)
        if dtype is not None and data.dtype != np.dtype(dtype):
            return data.astype(dtype)
        if copy:
            return data.copy()
        # np.asarray(J) gives the cache itself, read-only; np.array(J) gives a copy.
        return _read_only(data)

    def numpy(self) -> np.ndarray:
        """The dense result (a copy)."""
        return np.array(self)

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d Jacobian")
        return self.shape[0]

    def __iter__(self) -> Any:
        if not self.shape:  # as NumPy (before: an empty loop, from J[0] raising IndexError)
            raise TypeError(f"iteration over a 0-d {type(self).__name__}")
        return self._rows()

    def _rows(self) -> Any:
        # A loop reads every row: all of them are computed at the first step, in the blocks of
        # sweeps np.asarray(J) uses (before: J[k] for each k, one sweep per row), and handed out
        # as np.asarray(J)'s rows are, read-only views of the cache.
        yield from self._dense()

    def __repr__(self) -> str:
        s = self.stats
        return (f"{type(self).__name__}(shape={self.shape}, dtype={self.dtype}, rows_evaluated="
                f"{s['rows_evaluated']}, cols_evaluated={s['cols_evaluated']}, sweeps={s['sweeps']})")

    # Arithmetic evaluates everything (like Paddle's), reflected operators included.
    def _dense(self) -> np.ndarray:
        return np.asarray(self)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        out = kwargs.get("out", ())
        if any(isinstance(o, _Block) for o in (out if isinstance(out, tuple) else (out,))):
            _refuse(self, f"np.{ufunc.__name__}(..., out=J)")
        inputs = tuple(np.asarray(a) if isinstance(a, _Block) else a for a in inputs)
        return getattr(ufunc, method)(*inputs, **kwargs)

    def __add__(self, o): return self._dense() + o
    def __radd__(self, o): return o + self._dense()
    def __sub__(self, o): return self._dense() - o
    def __rsub__(self, o): return o - self._dense()
    def __mul__(self, o): return self._dense() * o
    def __rmul__(self, o): return o * self._dense()
    def __truediv__(self, o): return self._dense() / o
    def __rtruediv__(self, o): return o / self._dense()
    def __pow__(self, o): return self._dense() ** o
    def __mod__(self, o): return self._dense() % o
    def __floordiv__(self, o): return self._dense() // o
    def __matmul__(self, o): return self._dense() @ np.asarray(o)
    def __rmatmul__(self, o): return np.asarray(o) @ self._dense()
    def __neg__(self): return -self._dense()
    def __eq__(self, o): return self._dense() == (np.asarray(o) if isinstance(o, _Block) else o)
    def __ne__(self, o): return self._dense() != (np.asarray(o) if isinstance(o, _Block) else o)
    def __lt__(self, o): return self._dense() < o
    def __le__(self, o): return self._dense() <= o
    def __gt__(self, o): return self._dense() > o
    def __ge__(self, o): return self._dense() >= o
    def __rpow__(self, o): return o ** self._dense()
    def __rmod__(self, o): return o % self._dense()
    def __rfloordiv__(self, o): return o // self._dense()
    def __divmod__(self, o): return divmod(self._dense(), o)
    def __rdivmod__(self, o): return divmod(o, self._dense())
    def __pos__(self): return +self._dense()
    def __abs__(self): return abs(self._dense())

    def __round__(self, ndigits: int | None = None) -> Any:
        # As round() of the entry J[()] for a 0-d block; NumPy's arrays have no round(), so a larger
        # block says where to go.
        if self.shape:
            raise TypeError(f"round() of a {type(self).__name__} of shape {self.shape} has no single value; "
                            f"round its entries with J.round(decimals) or np.round(J, decimals)")
        return round(self._dense()[()], ndigits)

    def __float__(self): return float(self._dense())
    def __int__(self): return int(self._dense())
    def __complex__(self): return complex(self._dense())
    def __bool__(self): return bool(self._dense())  # NumPy's rule: only one entry has a truth value
    def __contains__(self, o): return o in self._dense()
    __hash__ = object.__hash__

    def __format__(self, spec: str) -> str:
        # f"{J}" shows the lazy object and computes nothing; a format spec is for the entries.
        return format(self._dense(), spec) if spec else str(self)

    def __setitem__(self, idx: Any, value: Any) -> None:
        _refuse(self, "J[idx] = value")


# The read-only array API of the evaluated block, as Paddle delegates every attribute to its tensor
# (an explicit list: a probe such as hasattr(J, "x") must compute nothing). Each evaluates the whole
# block once, through the cache, and works on np.asarray(J): views (J.T, J.reshape(...)) are
# read-only like it, and J.copy() is the writable array.
_ARRAY_METHODS = ("all", "any", "argmax", "argmin", "argpartition", "argsort", "astype", "choose", "clip",
                  "compress", "conj", "conjugate", "copy", "cumprod", "cumsum", "diagonal", "dot", "flatten",
                  "item", "max", "mean", "min", "nonzero", "prod", "ravel", "repeat", "reshape", "round",
                  "searchsorted", "squeeze", "std", "sum", "swapaxes", "take", "tobytes", "tolist", "trace",
                  "transpose", "var", "view")
_ARRAY_PROPERTIES = ("T", "mT", "real", "imag", "flat")
# Methods that change an array in place: refused, since the entries handed out never change.
_MUTATING = ("fill", "itemset", "partition", "put", "resize", "setfield", "setflags", "sort")


def _refuse(block: _Block, what: str) -> None:
    name = type(block).__name__
    raise TypeError(f"a lazy {name} is read-only: {what} would change its entries; do it on a copy, "
                    f"A = np.array(J) (or J.copy())")


# In-place operators: refused, as NumPy refuses them on a read-only array. Without them Python
# would fall back on J = J + 1 and silently rebind J to a dense array.
_IN_PLACE = {"__iadd__": "+", "__isub__": "-", "__imul__": "*", "__itruediv__": "/", "__ifloordiv__": "//",
             "__imod__": "%", "__ipow__": "**", "__imatmul__": "@"}


def _refused_in_place(name: str, op: str) -> Any:
    def method(self: _Block, other: Any) -> None:
        raise TypeError(f"a lazy {type(self).__name__} is read-only: J {op}= value would change its entries; "
                        f"for a new array write np.asarray(J) {op} value, or change a copy: A = np.array(J); "
                        f"A {op}= value")
    method.__name__ = method.__qualname__ = name
    return method


def _delegated_method(name: str) -> Any:
    def method(self: _Block, *args: Any, **kwargs: Any) -> Any:
        return getattr(self._dense(), name)(*args, **kwargs)
    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"``np.asarray(J).{name}(...)``: computes the whole block (once, through the cache)."
    return method


def _delegated_property(name: str) -> property:
    return property(lambda self: getattr(self._dense(), name),
                    doc=f"``np.asarray(J).{name}``: computes the whole block (once, through the cache).")


def _refused_method(name: str) -> Any:
    def method(self: _Block, *args: Any, **kwargs: Any) -> None:
        _refuse(self, f"J.{name}()")
    method.__name__ = method.__qualname__ = name
    return method


for _name in _ARRAY_METHODS:
    if hasattr(np.ndarray, _name):  # (mT: NumPy 2)
        setattr(_Block, _name, _delegated_method(_name))
for _name in _ARRAY_PROPERTIES:
    if hasattr(np.ndarray, _name):
        setattr(_Block, _name, _delegated_property(_name))
for _name in _MUTATING:
    setattr(_Block, _name, _refused_method(_name))
for _name, _op in _IN_PLACE.items():
    setattr(_Block, _name, _refused_in_place(_name, _op))
del _name, _op
_Block.itemsize = property(lambda self: self.dtype.itemsize, doc="Bytes per entry (computes nothing).")
_Block.nbytes = property(lambda self: self.size * self.dtype.itemsize, doc="Bytes of the whole block, dense.")


class Jacobian(_Block):
    """A lazy Jacobian block: ``J.shape == out.shape + in.shape`` (``(B,) + ...`` when batched).

    ``J[idx]`` takes any NumPy index and returns exactly ``np.asarray(J)[idx]``, computing only
    the rows (output elements) or columns (input elements) the index touches, once.
    """


class Hessian(_Block):
    """A lazy Hessian block: ``H.shape == x_i.shape + x_j.shape``; rows are Hessian-vector products."""

    kind = "hessian"


class MatrixView(_Block):
    """``J.matrix``: the block as a flattened ``[M, N]`` (or ``[B, M, N]``) matrix, sharing J's cache.

    It acts as that evaluated matrix as J acts as its array: indexing computes only the rows and
    columns touched; operators, iteration and the read-only ndarray methods evaluate it whole,
    once; writes are refused.
    """

    _flat = True

    def __init__(self, block: _Block) -> None:
        self.__dict__.update(block.__dict__)  # the same evaluator, block and cache
        self._block = block
        self.kind = block.kind
        self.shape = block._matrix_shape

    def evaluate(self, rows: np.ndarray | None = None, cols: np.ndarray | None = None,
                 mode: str | None = None) -> np.ndarray:
        """The 2-D selection ``M[rows][:, cols]`` (batched: ``[:, rows][:, :, cols]``), computing only that."""
        b = self._block
        ev = b._ev
        rows = np.arange(ev.M[b._i]) if rows is None else _positions(rows, ev.M[b._i], "row")
        cols = np.arange(ev.N[b._j]) if cols is None else _positions(cols, ev.N[b._j], "column")
        with ev.lock:
            ev.ensure(b._i, b._j, rows, cols, mode)
            return b._finish(ev.take(b._i, b._j, rows, cols))

    def stream(self, rows: np.ndarray | None = None, cols: np.ndarray | None = None,
               chunk_size: int | None = None):
        """Yield ``(start, block)`` pieces of ``M[rows][:, cols]`` in row chunks, caching nothing.

        For results too large for memory: each piece is computed by one reverse sweep and
        dropped once the caller has written it. ``start`` is the piece's first position in `rows`.
        Progress is the caller's to report (NpyStreamWriter reports the rows it writes): a phase
        held open across the yields would take the caller's reports for its own.
        """
        b = self._block
        ev = b._ev
        rows = np.arange(ev.M[b._i]) if rows is None else _positions(rows, ev.M[b._i], "row")
        cols = None if cols is None else _positions(cols, ev.N[b._j], "column")
        k = chunk_size or ev.chunk(rows.size, ev.N[b._j] * (ev.B if ev.batch else 1))
        ev._check_batch()
        diagonal = ev.diagonal(b._i, b._j) if ev.mode == "auto" else None  # an explicit mode is obeyed
        starts = range(0, rows.size, k)
        if ev.remote is None or diagonal is not None:
            pieces = ((start, self._swept_rows(rows[start:start + k]) if diagonal is None
                       else self._diagonal_rows(rows[start:start + k], diagonal)) for start in starts)
        else:  # on Dask's workers, in the order they finish (a file takes its rows at any position)
            pieces = ev.remote.swept_rows(self, rows, starts, k)
        for start, piece in pieces:
            if cols is not None:
                piece = piece[..., cols]
            yield start, b._finish(piece)

    def _diagonal_rows(self, block: np.ndarray, diagonal: np.ndarray) -> np.ndarray:
        """Rows `block` of a diagonal block: no sweep of their own."""
        b = self._block
        piece = np.zeros((block.size, b._ev.N[b._j]), dtype=np.result_type(diagonal, b.dtype))
        piece[np.arange(block.size), block] = diagonal[block]
        return piece

    def _swept_rows(self, block: np.ndarray) -> np.ndarray:
        """Rows `block` by one reverse sweep, not cached."""
        b = self._block
        ev = b._ev
        seeds, alt = ev._seeds(ev._row_seed, b._i, block, ev.n_out)
        cts = ev.rec.vjp(seeds, program_seeds=alt)
        ev.counted("reverse", block.size)
        ct = cts[b._j]
        if ct is None:
            return np.zeros((block.size, ev.N[b._j]) if not ev.batch else (ev.B, block.size, ev.N[b._j]),
                            dtype=b.dtype)
        if ev.batch:
            return np.moveaxis(np.reshape(ct, (block.size, ev.B, ev.N[b._j])), 0, 1)
        return np.reshape(ct, (block.size, ev.N[b._j]))

    def __repr__(self) -> str:
        return f"MatrixView(shape={self.shape}, of={self._block!r})"


def _positions(idx: Any, size: int, what: str) -> np.ndarray:
    """Integer positions along an axis of `size`, negative ones counted from the end, as NumPy does."""
    pos = np.asarray(idx)
    if pos.dtype == bool or not (pos.size == 0 or np.issubdtype(pos.dtype, np.integer)):
        raise IndexError(f"{what} positions must be integers, not {pos.dtype}")
    pos = pos.astype(np.intp, copy=True).reshape(-1)
    bad = (pos < -size) | (pos >= size)
    if bad.any():
        raise IndexError(f"{what} {pos[bad][0]} is out of bounds for a matrix with {size} {what}s")
    pos[pos < 0] += size
    return pos
