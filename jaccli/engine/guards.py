"""Guards: the plain results a recording baked in, and NumPy's error state each operation ran under."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np


# NumPy's floating-point error state (np.errstate) decides whether an operation warns or raises,
# never its result. A replay re-runs each operation under the state it was recorded under: the
# state is noted for the operations recorded under a state other than the trace's own.
_EXTOBJ = getattr(getattr(getattr(np, "_core", None), "_ufunc_config", None), "_extobj_contextvar", None)
if _EXTOBJ is not None:
    def errstate_token() -> Any:
        return _EXTOBJ.get()  # the same object until an errstate context changes it

    def same_errstate(a: Any, b: Any) -> bool:
        return a is b
else:  # pragma: no cover - NumPy < 2
    def errstate_token() -> Any:
        return tuple(sorted(np.geterr().items()))

    def same_errstate(a: Any, b: Any) -> bool:
        return a == b


# A sweep runs with every floating-point warning off (user_sites.attributed_to): np.errstate(all="ignore")'s
# state, made once per error state around it (np.errstate's object and its state cost ~1 us a sweep).
_MAKE_EXTOBJ = getattr(getattr(getattr(np, "_core", None), "_ufunc_config", None), "_make_extobj", None)
_QUIET: tuple = (object(), None)  # the last error state a sweep was entered from, and its quiet form
if _EXTOBJ is not None and _MAKE_EXTOBJ is not None:
    def quiet() -> Any:
        """Enter np.errstate(all="ignore"); returns what `unquiet` takes to leave it."""
        global _QUIET
        outer = _EXTOBJ.get()
        cached = _QUIET  # one read: another thread may replace the pair meanwhile, never half of it
        if cached[0] is not outer:
            cached = _QUIET = (outer, _MAKE_EXTOBJ(all="ignore"))
        return _EXTOBJ.set(cached[1])

    def unquiet(token: Any) -> None:
        _EXTOBJ.reset(token)
else:  # pragma: no cover - NumPy < 2
    def quiet() -> Any:
        state = np.errstate(all="ignore")
        state.__enter__()
        return state

    def unquiet(token: Any) -> None:
        token.__exit__(None, None, None)


_GETERR: tuple = (object(), None)  # the last error state seen, and its np.geterr()
_STATES: dict = {}  # np.geterr()'s items -> the one dict that stands for them


def current_errstate() -> dict:
    """np.geterr(), one dict per distinct error state: the operations recorded under equal states
    share it (every sweep's, with the warnings off), so a replay sees where the state changes by
    identity (recording.ErrstateRun), and it is built once per state change, not per operation."""
    global _GETERR
    token = errstate_token()
    cached = _GETERR  # one read: another thread may replace the pair meanwhile, never half of it
    if not same_errstate(token, cached[0]):
        state = np.geterr()
        cached = _GETERR = (token, _STATES.setdefault(tuple(sorted(state.items())), state))
    return cached[1]


class Raised:
    """fn as a guard of an operation that raised: returns the exception's type (None if it did not)."""

    __slots__ = ("fn",)

    def __init__(self, fn: Callable) -> None:
        self.fn = fn

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        try:
            self.fn(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - the outcome is what is compared
            return type(exc)
        return None


def _frozen(value: Any) -> Any:
    """A guard's expected value, copied where the caller could still change it in place."""
    if isinstance(value, np.ndarray):
        return value.copy()
    if isinstance(value, (tuple, list)):
        return type(value)(_frozen(v) for v in value)
    return value


class Guard:
    """A plain result that was computed from traced values while recording (a mask, a branch).

    The recording baked it in as a constant, so a replay of the recording at new inputs is the
    same computation only if `fn` over the replayed values still gives `expected`. `refs` are
    ``(argument position, node, output index)``: where the traced values go in `args`.
    """

    __slots__ = ("pos", "fn", "args", "kwargs", "refs", "expected", "errstate")

    def __init__(self, pos: int, fn: Callable, args: tuple, kwargs: dict, refs: tuple, expected: Any,
                 errstate: dict | None) -> None:
        self.pos = pos  # number of nodes recorded before it: every ref is among them
        self.fn = fn
        self.args = args
        self.kwargs = kwargs
        self.refs = refs
        self.expected = _frozen(expected)
        self.errstate = errstate  # np.geterr() when it differed from the trace's, else None
