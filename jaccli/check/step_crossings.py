"""What each finite-difference step crosses: f recorded at x +- h e_c, per column and per sample."""

from __future__ import annotations

from typing import Callable

import numpy as np

from .branch_changes import Crossed, crossings, merge_flags
from jaccli.engine import Recording, peek
from .finite_differences import fd_step
from .kink_reach import RowReach, kink_rows, sample_reach
from .kinks import Kink, find_kinks, kinked_nodes, op_at, registry_notes
from .sample_groups import bit_groups, decode_samples

__all__ = ["StepCrossings"]


class StepCrossings:
    """Per input element c: what a finite-difference step along c crosses (recorded at x +- h e_c).

    f is recorded with float64 inputs, as the finite differences see it; `kinks` are those at x. A step
    also crosses the kinks near x that it moves an element of a kinked op's output across (`near`).
    With batch, a step moves element c of every sample at once, as the finite differences do;
    `samples` tells which samples it crosses what in. `recordings` counts the recordings of f.
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
        self.groups = bit_groups(self.B) if batch and self.B > 1 else None
        self.cache: dict[tuple[int, int], Crossed] = {}
        self.split: dict[tuple[int, int, bytes], tuple[dict, dict, dict]] = {}
        self.reach: dict[int, np.ndarray] = {}  # node index -> `sample_reach` of its output
        self.structural: dict[int, np.ndarray] = {}  # ... and its structural `sample_reach`
        self.kinked: list[int] | None = None  # `kinked_nodes`, found with the first step
        self.near_reach: dict[tuple[int, bytes], tuple[dict[int, np.ndarray], RowReach]] = {}
        self.recordings = 1

    def _step(self, j: int, c: int, which: np.ndarray | None) -> Crossed:
        """`crossings` of the steps +h and -h along element c of input j, ORed; with `which`, only the
        samples it marks move."""
        k = self.wrt_idx[j]
        x = np.asarray(self.args[k])
        flat = x.reshape((x.shape[0], -1) if self.batch else (-1,))
        at = (Ellipsis, c) if which is None else (which, c)
        out = Crossed()
        if self.kinked is None:
            self.kinked = kinked_nodes(self.base)
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
                every = Crossed({index: np.ones(int(mask.sum()), dtype=bool) for index, mask in self.masks.items()})
                every.add_jump(f"f raises within the step ({type(exc).__name__})", np.array(True))
                out.update(every)
                continue
            out.update(crossings(self.base, rec, self.masks, constants=self.severed is None,
                                 kinked=self.kinked))
        return out

    def _crossed(self, j: int, c: int) -> Crossed:
        key = (j, int(c))
        if key not in self.cache:
            self.cache[key] = self._step(j, int(c), None)
        return self.cache[key]

    def __call__(self, j: int, c: int) -> tuple[dict[int, np.ndarray], list[str]]:
        """What the step along element c of input j crosses: kink node index -> which of its kink
        elements the step moves off the kink (for the kinks it crosses); descriptions of the jumps."""
        crossed = self._crossed(j, c)
        return crossed.kinks, list(crossed.jumps)

    def near(self, j: int, c: int) -> dict[int, np.ndarray]:
        """The kinks near x that the step along element c of input j crosses: node index -> which
        elements of the op's output (in its shape) it moves across their kink."""
        return self._crossed(j, c).near

    def near_rows(self, i: int, rows: np.ndarray) -> tuple[dict[int, np.ndarray], RowReach]:
        """Which of `rows` of output i reach the elements of kinked ops that the steps so far move
        across a kink near x (`kink_rows`): the elements as masks by node index, and the RowReach
        (its kink elements are those of the masks). One reverse sweep of the rows, again only when
        a later step crosses other elements."""
        crossed: dict[int, np.ndarray] = {}
        for seen in self.cache.values():
            for index, flags in seen.near.items():
                merge_flags(crossed, index, flags)
        key = (i, np.asarray(rows).tobytes())
        known = self.near_reach.get(key)
        if known is None or any(index not in known[0] or (flags & ~known[0][index]).any()
                                for index, flags in crossed.items()):
            kinks = [self._near_kink(index, flags) for index, flags in crossed.items()]
            known = self.near_reach[key] = (crossed, kink_rows(self.base, i, rows, kinks, self.batch))
        return known

    def _near_kink(self, index: int, mask: np.ndarray) -> Kink:
        node = self.base.trace.nodes[index]
        return Kink(node.prim.name, None, None, int(mask.sum()), index, registry_notes(node.prim.name), mask)

    def describe_near(self, index: int) -> str:
        return (f"{op_at(self.base.trace.nodes[index])}: the step crosses a kink near x (not at x), so finite "
                "differences mix the derivatives of both sides; check at a point farther from the kink")

    def samples(self, j: int, c: int, among: np.ndarray | None = None) -> tuple[dict[int, np.ndarray],
                                                                             dict[str, np.ndarray],
                                                                             dict[int, np.ndarray]]:
        """In which samples the step crosses what: kink node index (description of a jump, node index
        of a kink near x) -> (B,) boolean, the samples in which the step along element c of input j
        crosses that kink (jump, kink near x); B = 1 without batch.

        With batch, a kink element that the step moves off the kink, or an element of an op's output
        that a jump changes, belongs to the samples whose outputs reach it with a nonzero cotangent
        (`sample_reach`: reverse sweeps, about one for the whole check, however many samples sit at
        kinks or jumps). What cannot be placed so (control flow, an element that no output reaches
        with a nonzero cotangent...) is found from the steps of sample groups (`bit_groups`), taken
        only then: 2 * ceil(log2 n) + 1 more steps for n samples, and one more per sample when several
        cross what the groups cannot tell apart (control flow: `_group_steps`). `among`
        ((B,) boolean) limits this to the samples it marks; the others come out False.
        """
        crossed = self._crossed(j, c)
        if self.groups is None or not (crossed.kinks or crossed.jumps or crossed.near):
            one = np.ones(self.B, dtype=bool)
            return ({index: one for index in crossed.kinks}, {text: one for text in crossed.jumps},
                    {index: one for index in crossed.near})
        keep = np.ones(self.B, dtype=bool) if among is None else np.asarray(among, dtype=bool)
        key = (j, int(c), keep.tobytes())
        if key not in self.split:
            found = ({index: self._reached({index: self._kink_elements(index, flags)})
                      for index, flags in crossed.kinks.items()},
                     {text: self._reached(crossed.placed[text]) for text in crossed.jumps},
                     {index: self._reached({index: flags}) for index, flags in crossed.near.items()})
            rest = Crossed({index: crossed.kinks[index] for index, s in found[0].items() if s is None},
                           {text: crossed.jumps[text] for text, s in found[1].items() if s is None},
                           near={index: crossed.near[index] for index, s in found[2].items() if s is None})
            if rest.kinks or rest.jumps or rest.near:
                for told, by_steps in zip(found, self._group_steps(j, int(c), rest, np.flatnonzero(keep))):
                    told.update(by_steps)
            self.split[key] = tuple({name: s & keep for name, s in told.items()} for told in found)
        return self.split[key]

    def _kink_elements(self, index: int, flags: np.ndarray) -> np.ndarray:
        """The kink elements that `flags` (over ``mask[mask]``) mark, as flags over the op's output."""
        mask = self.masks[index]
        out = np.zeros(mask.shape, dtype=bool)
        out[mask] = flags
        return out

    def _reached(self, placed: dict[int, np.ndarray] | None) -> np.ndarray | None:
        """(B,) boolean: the samples whose outputs reach the elements `placed` marks (node index ->
        flags that broadcast to its output); None when some element is reached by none of them with a
        nonzero cotangent, yet some output reads it (a zero derivative at x: its jump may still show).
        An element that no output reads at all (a sorted entry sliced off) changes nothing."""
        if placed is None:
            return None
        out = np.zeros(self.B, dtype=bool)
        for index, flags in placed.items():
            flat = np.broadcast_to(flags, np.shape(peek(self.base.trace.nodes[index].value))).reshape(-1)
            seen = self._reach(self.reach, index, False)[:, flat]
            unseen = ~seen.any(axis=0)
            if unseen.any():
                if self._reach(self.structural, index, True)[:, np.flatnonzero(flat)[unseen]].any():
                    return None
                seen = seen[:, ~unseen]
            out |= decode_samples(seen, self.groups, np.zeros(seen.shape[1], dtype=np.int64), 1)[:, 0]
        return out

    def _reach(self, known: dict[int, np.ndarray], index: int, structural: bool) -> np.ndarray:
        """`sample_reach` of node `index`'s output, kept in `known`."""
        if index not in known:
            # with every op that the steps so far name: one sweep then serves the columns to come
            wanted = {index, *self.masks}
            for crossed in self.cache.values():
                wanted.update(i for where in crossed.placed.values() if where for i in where)
                wanted.update(crossed.near)
            known.update(sample_reach(self.base, wanted - set(known), self.groups, structural))
        return known[index]

    def _group_steps(self, j: int, c: int, rest: Crossed, who: np.ndarray) -> tuple[dict, dict, dict]:
        """`samples` of the kinks, jumps and kinks near x of `rest`, among the samples `who`, from the
        steps of groups of them (`bit_groups`), and one step of all the other samples: what only that
        one crosses belongs to the others, and what none crosses needs several samples to move at once.

        The groups spell the sample of what one sample crosses. What several cross at once and the
        groups cannot tell apart (control flow in more than one sample: one flag for the whole
        value) is taken by the step of each sample it may belong to (`_one_by_one`), so that a
        sample that crosses nothing is never excused with them."""
        kinds = ("kinks", "jumps", "near")
        result = tuple({name: np.zeros(self.B, dtype=bool) for name in getattr(rest, kind)} for kind in kinds)
        if not len(who):
            return result
        local = bit_groups(len(who))
        steps = [self._step_of(j, c, who[g]) for g in local]
        others = self._step_of(j, c, np.setdiff1d(np.arange(self.B), who))
        for kind, out in zip(kinds, result):
            every = getattr(rest, kind)
            told, unsure = self._whose(every, [getattr(st, kind) for st in steps], local, getattr(others, kind))
            for name, flags in told.items():
                out[name][who[flags]] = True
                if name in unsure:
                    out[name][:] = self._one_by_one(j, c, kind, name, who[flags])
        return result

    def _one_by_one(self, j: int, c: int, kind: str, name: object, candidates: np.ndarray) -> np.ndarray:
        """(B,) boolean: the `candidates` whose own step crosses `name` (a kink index in ``kind="kinks"``,
        a jump's description in ``"jumps"``, a node index in ``"near"``); all of those whose own steps do
        not when they cross it together (it needs several samples to move at once), or when none crosses
        it alone."""
        out = np.zeros(self.B, dtype=bool)
        for s in candidates:
            out[s] = name in getattr(self._step_of(j, c, np.array([s])), kind)
        rest = candidates[~out[candidates]]
        if len(rest) and (not out.any() or name in getattr(self._step_of(j, c, rest), kind)):
            out[rest] = True
        return out

    def _step_of(self, j: int, c: int, samples: np.ndarray) -> Crossed:
        """What the step along element c of input j crosses when only `samples` move."""
        which = np.zeros(self.B, dtype=bool)
        which[samples] = True
        return self._step(j, c, which) if which.any() else Crossed()

    @staticmethod
    def _whose(every: dict, by_group: list[dict], groups: np.ndarray, others: dict) -> tuple[dict, set]:
        """Name -> (len(who),) boolean: the samples the groups' steps name (`decode_samples`); and the
        names of which something crossed is not pinned to one sample (seen by both groups of a bit)."""
        out, unsure = {}, set()
        for name, flags in every.items():
            seen = [g.get(name) for g in by_group]
            other = others.get(name)
            if any(s is not None and s.shape != flags.shape for s in (*seen, other)):  # one flag for the whole value
                flags = np.array(flags.any())
                seen = [None if s is None else np.array(s.any()) for s in seen]
                other = None if other is None else np.array(other.any())
            rows = np.stack([np.zeros(flags.size, dtype=bool) if s is None else s.reshape(-1) for s in seen])
            alone = flags if other is None else flags & ~other  # not the others' own
            out[name] = decode_samples(rows, groups, np.zeros(flags.size, dtype=int), 1, every=alone.reshape(-1))[:, 0]
            on, off = rows[0::2], rows[1::2]
            if (((on | off).any(axis=0) | alone.reshape(-1)) & ~(on ^ off).all(axis=0)).any():
                unsure.add(name)
        return out, unsure

    def describe(self, index: int) -> str:
        kink = next(k for k in self.kinks if k.node_index == index)
        return f"{kink.op} at {kink.site}: evaluated at a kink ({kink.notes or 'convention'})"

