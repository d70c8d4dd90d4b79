"""Robertson's stiff chemical kinetics: A -> B (k1), 2B -> B + C (k2), B + C -> A + C (k3)."""

import numpy as np


def f(c, k):
    """Rates dc/dt (3,) for concentrations c (3,) of A, B, C and rate constants k (3,)."""
    r1 = k[0] * c[0]
    r2 = k[1] * c[1] ** 2
    r3 = k[2] * c[1] * c[2]
    return np.stack([-r1 + r3, r1 - r2 - r3, r2])
