"""The list of methods timed on each instance: NumPy floors, jaccli, and the anchor libraries.

A method is built for one instance into a `Prepared` whose `run()` computes the whole result
(the array is checked against the closed form before any timing counts).
"""
from __future__ import annotations

import importlib
import traceback
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from benchmarks import anchors, floors
from benchmarks.anchors import Unavailable
from benchmarks.instances import Instance

# families, in table order; "jaccli full" only exists for P5 (the full Jacobian, then sliced)
FLOOR, LOOP, BATCHED = "floor", "hand loop", "hand batched"
# P5 only: f evaluated, then the rows in closed form (the least a lazy J, which runs f, can cost)
F_THEN_ROWS = "f, then floor rows"
JACCLI, JACCLI_FULL = "jaccli", "jaccli full"
# f wrapped in jaccli.record_once: recorded by the verified first call, replayed afterwards
JACCLI_ONCE = "jaccli record_once"


@dataclass
class Prepared:
    run: Callable[[], object]
    compile_s: float | None = None
    note: str = ""


@dataclass(frozen=True)
class Method:
    name: str      # unique display name
    lib: str       # "numpy" | "jaccli" | "torch" | "jax" | "autograd"
    family: str    # column it belongs to in the summary table

    def build(self, inst: Instance) -> Prepared:
        if self.lib == "numpy":
            maker = {FLOOR: floors.closed_form, LOOP: floors.hand_loop,
                     BATCHED: floors.hand_batched, F_THEN_ROWS: floors.f_then_rows}[self.family]
            note = floors.mode_note(inst) if self.family in (LOOP, BATCHED) else ""
            return Prepared(maker(inst), note=note)
        if self.lib == "jaccli":
            return Prepared(jaccli_run(inst, full=self.family == JACCLI_FULL, once=self.family == JACCLI_ONCE),
                            note="f recorded once, then replayed" if self.family == JACCLI_ONCE else "")
        run, compile_s = anchors.build(self.lib, inst, self.name)
        return Prepared(run, compile_s)


# ----------------------------------------------------------------------------------------------
# jaccli (library API, in process)
# ----------------------------------------------------------------------------------------------
_JACCLI: list = []


def import_jaccli():
    """The jaccli module, or Unavailable("not importable: ...") while the engine is not there."""
    if not _JACCLI:
        try:
            mod = importlib.import_module("jaccli")
            missing = [a for a in ("jacobian", "hessian") if not hasattr(mod, a)]
            if missing:
                raise ImportError(f"jaccli has no {', '.join(missing)}")
            _JACCLI.append(mod)
        except Exception as exc:   # any failure while importing a work in progress
            last = traceback.format_exception_only(type(exc), exc)[-1].strip()
            _JACCLI.append(Unavailable(f"not importable: {last}"))
    if isinstance(_JACCLI[0], Unavailable):
        raise _JACCLI[0]
    return _JACCLI[0]


def jaccli_run(inst: Instance, full: bool, once: bool = False, jaccli: Any = None) -> Callable[[], np.ndarray]:
    """Each call includes construction: f is recorded (or, with `once`, replayed) and swept on every call.
    `jaccli`: the package to call (benchmarks.ab's other revision), this tree's by default."""
    jaccli = jaccli or import_jaccli()
    f, x = inst.f, inst.x
    if once:
        f = jaccli.record_once(f)
    if inst.kind == "hess":
        return lambda: np.asarray(jaccli.hessian(f, x))
    if inst.kind == "batch":
        return lambda: np.asarray(jaccli.jacobian(f, x, batch_axis=0))
    if inst.kind == "rows":
        r = inst.rows
        if full:
            return lambda: np.asarray(jaccli.jacobian(f, x, mode="auto"))[:r]
        return lambda: np.asarray(jaccli.jacobian(f, x, mode="auto").matrix[0:r])
    return lambda: np.asarray(jaccli.jacobian(f, x, mode="auto"))


# ----------------------------------------------------------------------------------------------
# registry
# ----------------------------------------------------------------------------------------------
def family_of(lib: str, name: str) -> str:
    if lib == "jax":
        return "jax jit" if name.startswith("jax.jit(") else "jax eager"
    return {"torch": "torch", "autograd": "HIPS autograd"}[lib]


def methods_for(inst: Instance, libs: tuple[str, ...] = ("numpy", "jaccli") + anchors.ANCHOR_LIBS
                ) -> list[Method]:
    """Every method that applies to `inst`, whether or not its library is installed."""
    out: list[Method] = []
    if "numpy" in libs:
        out += [Method(FLOOR, "numpy", FLOOR), Method(LOOP, "numpy", LOOP),
                Method(BATCHED, "numpy", BATCHED)]
        if inst.kind == "rows":
            out.append(Method(F_THEN_ROWS, "numpy", F_THEN_ROWS))
    if "jaccli" in libs:
        out.append(Method("jaccli", "jaccli", JACCLI))
        out.append(Method("jaccli record_once", "jaccli", JACCLI_ONCE))
        if inst.kind == "rows":
            out.append(Method("jaccli full J, then rows", "jaccli", JACCLI_FULL))
    for lib in anchors.ANCHOR_LIBS:
        if lib in libs:
            out += [Method(n, lib, family_of(lib, n)) for n in anchors.method_names(lib, inst.kind)]
    return out


def find(inst: Instance, name: str) -> Method:
    for m in methods_for(inst):
        if m.name == name:
            return m
    raise KeyError(f"no method {name!r} for {inst.iid}")


def library_status(libs: tuple[str, ...]) -> dict[str, str]:
    """'ok', 'not selected (--libs)' or why a library is unavailable, for the report header."""
    status = {}
    for lib in ("jaccli",) + anchors.ANCHOR_LIBS:
        if lib not in libs:
            status[lib] = "not selected (--libs)"
            continue
        try:
            import_jaccli() if lib == "jaccli" else anchors.import_lib(lib)
            status[lib] = "ok"
        except Unavailable as exc:
            status[lib] = str(exc)
    return status
