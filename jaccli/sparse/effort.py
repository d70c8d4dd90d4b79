"""What a colouring search is worth: a costly search step runs only when the sweeps it could save cost more.

Colouring is a means: a user waits for detection, colouring and the sweeps together. The cheap colourings
(natural, strided and largest-first distance-2 greedy, vectorised or compiled) always run; the sequential
ones (smallest-last and incidence-degree orderings, random-order rounds, iterated greedy, star and acyclic
colourings, substitution) cost microseconds per graph entry in Python and can take longer than all the
sweeps they save: a 100 x 100 stencil Hessian has 6 colours after 20 ms and 0.7-1.7 s of further search
finds no fewer, while its six sweeps take 20 ms. A step runs when its estimated seconds are below the
sweeps it could save at most (colours now minus the lower bound) times the estimated seconds of one
sweep. The estimates are fixed constants measured on the benchmark machine, so a plan never depends on
the machine's load: the same pattern and recording give the same colours everywhere. Without a sweep
estimate (``sweep_s=None``, the default of the colouring functions) every step runs.
"""

from __future__ import annotations

# Seconds per edge of the column-intersection graph (bounded by the sum over rows of nnz(row)**2) for one
# greedy colouring in each sequential ordering; measured on 5-point stencils of 10^4 and 9 * 10^4 columns.
# Natural, strided and largest-first orders (3-20 ns per edge, compiled) always run.
ORDERING_SECONDS_PER_EDGE = {"random": 5e-8, "smallest_last": 1.5e-6, "incidence_degree": 1.2e-6}
# One pass of iterated greedy, per edge bound.
IMPROVE_SECONDS_PER_EDGE = 1e-8
# One greedy star colouring steps from each vertex through its neighbours' neighbours: per unit of the sum of the
# squared degrees of the graph (~2 us per entry on bands of degree 2). One greedy acyclic colouring with the
# substitution tables it needs, per stored off-diagonal entry (measured on bands and stencils of 10^4 vertices).
STAR_SECONDS_PER_STEP = 1e-6
ACYCLIC_SECONDS_PER_ENTRY = 1.5e-5
# A search step estimated below this always runs (when it can save a sweep): nobody waits for it, and small
# problems get the fewest colours (an arrowhead Hessian of 30 variables: 2 sweeps, not 30).
AFFORDABLE_S = 0.01
# One compressed sweep (one colour of a block of seeds) per element of the recorded values: 3-30 ns measured
# on the Rosenbrock, Bratu and banded Hessians of the sparse benchmark; the low end, so that a search is run
# only when it clearly pays.
SWEEP_SECONDS_PER_ELEMENT = 5e-9


def worth(cost_s: float, colors: int, bound: int, sweep_s: float | None) -> bool:
    """Whether a search step of `cost_s` seconds may pay: it could save at most colors - bound sweeps."""
    if colors <= bound:
        return False
    return sweep_s is None or cost_s < max((colors - bound) * sweep_s, AFFORDABLE_S)


def sweep_seconds(recorded_elements: int) -> float:
    """The estimated seconds of one compressed sweep of a recording whose values hold this many elements."""
    return recorded_elements * SWEEP_SECONDS_PER_ELEMENT
