"""What each finite-difference step crosses: f recorded at x +- h e_c, per column and per sample."""

from __future__ import annotations

from typing import Callable

import numpy as np

from .branches import crossings, merge_flags
from .engine.recording import Recording
from .finite_diff import fd_step
from .kinks import find_kinks
from .sample_groups import bit_groups, decode_samples

__all__ = ["StepCrossings"]


class StepCrossings:
    """Per input element c: what a finite-difference step along c crosses (recorded at x +- h e_c).

    f is recorded with float64 inputs, as the finite differences see it; `kinks` are those at x.
    With batch, a step moves element c of every sample at once, as the finite differences do;
    `samples` tells which samples' own steps cross what.
    """

    def __init__(self, f: Callable, args: tuple, wrt_idx: tuple, batch: bool) -> None:
        self.f, self.args, self.wrt_idx, self.batch = f, args, wrt_idx, batch
        with np.errstate(all="ignore"):
            self.base = Recording(f, args, wrt_idx)
        # where f takes a derivative without create_graph (a constant to AD, not to finite differences)
        self.severed = self.base.trace.severed
        self.kinks = find_kinks(self.base)
        self.masks = {k.node_index: k.mask for k in self.kinks}
        self.B = int(np.shape(args[wrt_idx[0]])[0]) if batch and wrt_idx else 1
        self.cache: dict[tuple[int, int], tuple[dict, dict]] = {}
        self.split: dict[tuple[int, int], tuple[dict, dict]] = {}
        self.recordings = 1

    def _step(self, j: int, c: int, which: np.ndarray | None) -> tuple[dict, dict]:
        """`crossings` of the steps +h and -h along element c of input j, ORed; with `which`, only the
        samples it marks move."""
        k = self.wrt_idx[j]
        x = np.asarray(self.args[k])
        flat = x.reshape((x.shape[0], -1) if self.batch else (-1,))
        at = (Ellipsis, c) if which is None else (which, c)
        crossed: dict[int, np.ndarray] = {}
        changes: dict[str, np.ndarray] = {}
        for sign in (1.0, -1.0):
            moved = flat.copy()
            moved[at] = flat[at] + sign * fd_step(flat[at])
            args = list(self.args)
            args[k] = moved.reshape(x.shape)
            self.recordings += 1
            try:
                with np.errstate(all="ignore"):
                    rec = Recording(self.f, args, self.wrt_idx)
            except Exception as exc:  # noqa: BLE001 - f itself failing within the step is a jump too
                for index, mask in self.masks.items():
                    merge_flags(crossed, index, np.ones(int(mask.sum()), dtype=bool))
                merge_flags(changes, f"f raises within the step ({type(exc).__name__})", np.array(True))
                continue
            cr, ch = crossings(self.base, rec, self.masks, constants=self.severed is None)
            for index, flags in cr.items():
                merge_flags(crossed, index, flags)
            for text, flags in ch.items():
                merge_flags(changes, text, flags)
        return crossed, changes

    def __call__(self, j: int, c: int) -> tuple[dict[int, np.ndarray], list[str]]:
        """What the step along element c of input j crosses: kink node index -> which of its kink
        elements the step moves off the kink (for the kinks it crosses); descriptions of the jumps."""
        key = (j, int(c))
        if key not in self.cache:
            self.cache[key] = self._step(j, int(c), None)
        crossed, changes = self.cache[key]
        return crossed, list(changes)

    def samples(self, j: int, c: int, among: np.ndarray | None = None) -> tuple[dict[int, np.ndarray],
                                                                             dict[str, np.ndarray]]:
        """Whose steps cross what: kink node index (description of a jump) -> (B,) boolean, the samples
        whose own step along element c of input j crosses that kink (jump); B = 1 without batch.

        With batch, found from the steps of sample groups (`bit_groups`), taken only when the step
        of every sample crosses something: 2 * ceil(log2 n) more steps for n samples, one for one.
        `among` ((B,) boolean) limits this to the samples it marks; the others come out False.
        """
        crossed, changes = self.cache[(j, int(c))] if (j, int(c)) in self.cache else self._cached(j, c)
        if not self.batch or self.B == 1 or not (crossed or changes):
            one = np.ones(self.B, dtype=bool)
            return {index: one for index in crossed}, {text: one for text in changes}
        who = np.flatnonzero(np.ones(self.B, dtype=bool) if among is None else among)
        key = (j, int(c), who.tobytes())
        if key not in self.split:
            if len(who) <= 1:
                local = np.ones((1, len(who)), dtype=bool)
            else:
                local = bit_groups(len(who))
            steps = []
            for g in local:
                which = np.zeros(self.B, dtype=bool)
                which[who[g]] = True
                steps.append(self._step(j, int(c), which) if which.any() else ({}, {}))
            if len(who) <= 1:  # one sample: what its own step crosses is its own
                told = ({index: np.ones(len(who), dtype=bool) for index in steps[0][0]},
                        {text: np.ones(len(who), dtype=bool) for text in steps[0][1]})
            else:
                told = (self._whose(crossed, [st[0] for st in steps], local),
                        self._whose(changes, [st[1] for st in steps], local))
            result: tuple[dict, dict] = ({}, {})
            for part, out in zip(told, result):
                for name, flags in part.items():
                    out[name] = np.zeros(self.B, dtype=bool)
                    out[name][who] = flags
            self.split[key] = result
        return self.split[key]

    def _cached(self, j: int, c: int) -> tuple[dict, dict]:
        self(j, c)
        return self.cache[(j, int(c))]

    @staticmethod
    def _whose(every: dict, by_group: list[dict], groups: np.ndarray) -> dict:
        out = {}
        for name, flags in every.items():
            seen = [g.get(name) for g in by_group]
            if any(s is not None and s.shape != flags.shape for s in seen):  # one flag for the whole value
                flags = np.array(flags.any())
                seen = [None if s is None else np.array(s.any()) for s in seen]
            rows = np.stack([np.zeros(flags.size, dtype=bool) if s is None else s.reshape(-1) for s in seen])
            out[name] = decode_samples(rows, groups, np.zeros(flags.size, dtype=int), 1, every=flags.reshape(-1))[:, 0]
        return out

    def describe(self, index: int) -> str:
        kink = next(k for k in self.kinks if k.node_index == index)
        return f"{kink.op} at {kink.site}: evaluated at a kink ({kink.notes or 'convention'})"

