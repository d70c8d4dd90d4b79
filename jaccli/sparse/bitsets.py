"""Per-vertex sets of used colours as rows of 64-bit words, with the vectorised 'smallest colour not in the set'."""
import numpy as np

_ONE = np.uint64(1)


class ColorSets:
    """One bit set of colours per vertex (a row of uint64 words), grown by 64 colours whenever a colour needs it."""

    def __init__(self, size):
        self.words = np.zeros((size, 1), dtype=np.uint64)

    def union_of(self, members, lengths):
        """For each segment of `members` (consecutive runs of the given non-zero lengths), the union of their sets."""
        starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
        return np.bitwise_or.reduceat(self.words[members], starts, axis=0)

    def add(self, members, colors):
        """Put colors[k] into the set of members[k]; no member may appear twice in one call."""
        word = colors >> 6
        needed = int(word.max()) + 1 if len(word) else 0
        if needed > self.words.shape[1]:
            grown = np.zeros((self.words.shape[0], needed), dtype=np.uint64)
            grown[:, :self.words.shape[1]] = self.words
            self.words = grown
        flat = self.words.reshape(-1)
        # one word per set is the common case (under 64 colours): members index the words directly
        where = members if self.words.shape[1] == 1 else np.asarray(members, dtype=np.int64) * self.words.shape[1] + word
        flat[where] |= _ONE << (colors & 63).astype(np.uint64)


def smallest_missing(sets):
    """The smallest colour absent from each row of uint64 words (64 * width when all are present)."""
    result = np.full(len(sets), 64 * sets.shape[1], dtype=np.int64)
    todo = np.ones(len(sets), dtype=bool)
    for word in range(sets.shape[1]):
        free = ~sets[:, word]
        here = todo & (free != 0)
        low = free[here] & (~free[here] + _ONE)
        result[here] = 64 * word + np.log2(low.astype(np.float64)).astype(np.int64)
        todo &= ~here
        if not todo.any():
            break
    return result


def first_fit(sets, members, lengths):
    """The smallest colour in none of the sets of each segment of members: one greedy step for many vertices."""
    return smallest_missing(sets.union_of(members, lengths))
