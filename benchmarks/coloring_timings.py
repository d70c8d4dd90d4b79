"""Colour counts and wall times of jaccli.sparse's default column colouring and Hessian star colouring on the
stencils, bands and other patterns of issue 38 (run: python -m benchmarks.coloring_timings [--large])."""
import sys
import time

import numpy as np
import scipy.sparse as sp

from tests.sparse_helpers import arrowhead, banded, stencil5


def brusselator(N):
    """Two species on a periodic N x N grid (u then v): each equation couples its species' 5 points and the other
    species at the same point."""
    s = stencil5(N, periodic=True)
    eye = sp.eye_array(N * N, dtype=bool)
    return sp.csr_array(sp.block_array([[s, eye], [eye, s]]))


def patterns(large):
    yield "tridiagonal n=2000", banded(2000, 1, 1)
    yield "band b=2 n=2000", banded(2000, 2, 2)
    yield "5-point N=100", stencil5(100)
    yield "torus N=32", stencil5(32, periodic=True)
    yield "Brusselator N=32", brusselator(32)
    yield "arrowhead n=1e3", arrowhead(1000)
    yield "random 2000x2000 d=0.002", sp.random_array((2000, 2000), density=0.002, rng=np.random.default_rng(0),
                                                      format="csr") != 0
    if large:
        yield "5-point N=1000", stencil5(1000)
        yield "Brusselator N=256", brusselator(256)


def main():
    large = "--large" in sys.argv
    t = time.perf_counter()
    import jaccli.sparse as js
    print(f"import jaccli.sparse: {time.perf_counter() - t:.3f} s; scipy.optimize loaded: "
          f"{'scipy.optimize' in sys.modules}")
    from jaccli.sparse.greedy import num_colors
    for name, p in patterns(large):
        natural = num_colors(js.greedy_columns(p, "natural"))
        t = time.perf_counter()
        colors, tried = js.best_columns(p)
        t_col = time.perf_counter() - t
        line = f"{name:28s} natural {natural:4d}  best {num_colors(colors):4d} in {t_col:6.3f} s"
        if p.shape[0] == p.shape[1] and not name.startswith("arrow"):
            t = time.perf_counter()
            star, _ = js.best_star(p)
            line += f"  star {num_colors(star):3d} in {time.perf_counter() - t:6.3f} s"
        print(line, "  scipy.optimize loaded" if "scipy.optimize" in sys.modules else "")


if __name__ == "__main__":
    main()
