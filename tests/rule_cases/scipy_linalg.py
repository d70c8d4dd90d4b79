"""Rows for scipy.linalg (expm, sqrtm, solve_triangular, cho_solve) and scipy.signal.convolve, installed when
SciPy is, as f's module would import them."""

import numpy as np
import scipy.linalg as sl
import scipy.signal as sg

from jaccli.engine.rules import every_rule

from . import Case

every_rule()  # SciPy's rules: what a recording does when f's module has imported scipy.linalg and scipy.signal

M = np.array([[0.3, -0.5, 0.2], [0.4, 0.1, -0.3], [-0.2, 0.6, 0.25]])
SPD = np.array([[2.0, 0.3, -0.2], [0.3, 1.5, 0.4], [-0.2, 0.4, 1.1]])
TRI = np.array([[1.5, 0.3, -0.4], [0.2, 2.0, 0.5], [-0.6, 0.7, 1.2]])  # both triangles set: one is read
B = np.array([[0.5, -1.0], [1.2, 0.3], [-0.7, 0.8]])
SIGNAL, KERNEL = np.array([0.3, -1.1, 0.8, 2.0, -0.4]), np.array([0.5, 1.5, -0.7])
IMAGE, PATCH = np.array([[0.3, -1.1, 0.8, 0.2], [2.0, -0.4, 0.6, 1.0], [0.1, 0.9, -0.3, 0.5]]), \
    np.array([[0.5, -0.2], [1.5, 0.4]])

CASES = [
    Case("scipy.linalg.expm", lambda a: sl.expm(a), (M,), order=3),
    Case("scipy.linalg.expm", lambda a: sl.expm(a), (np.stack([M, M.T * 0.5]),), id="expm-stack"),
    Case("scipy.linalg.sqrtm", lambda a: sl.sqrtm(a), (SPD + M * 0.3,)),
    Case("scipy.linalg.solve_triangular", lambda a, b: sl.solve_triangular(a, b, lower=True), (TRI, B), wrt=(0, 1)),
    Case("scipy.linalg.solve_triangular", lambda a, b: sl.solve_triangular(a, b, trans="T"), (TRI, B[:, 0]),
         wrt=(0, 1), id="solve_triangular-upper-T"),
    Case("scipy.linalg.solve_triangular", lambda a, b: sl.solve_triangular(a, b, lower=True, unit_diagonal=True, trans=1),
         (TRI, B), wrt=(0, 1), id="solve_triangular-unit"),
    Case("scipy.linalg.cho_solve", lambda c, b: sl.cho_solve((c, True), b), (TRI, B), wrt=(0, 1)),
    Case("scipy.linalg.cho_solve", lambda c, b: sl.cho_solve((c, False), b), (TRI, B[:, 1]), wrt=(0, 1),
         id="cho_solve-upper"),
    Case("scipy.signal.convolve", lambda a, b: sg.convolve(a, b), (SIGNAL, KERNEL), wrt=(0, 1), order=3),
    Case("scipy.signal.convolve", lambda a, b: sg.convolve(a, b, mode="same"), (SIGNAL, KERNEL), wrt=(0, 1),
         id="convolve-same"),
    Case("scipy.signal.convolve", lambda a, b: sg.convolve(b, a, mode="valid"), (SIGNAL, KERNEL), wrt=(0, 1),
         id="convolve-valid-swapped"),
    Case("scipy.signal.convolve", lambda a, b: sg.convolve(a, b, mode="same"), (IMAGE, PATCH), wrt=(0, 1),
         id="convolve-2d-same"),
    Case("scipy.signal.convolve", lambda a, b: sg.convolve(a, b, mode="valid"), (IMAGE, PATCH), wrt=(0, 1),
         id="convolve-2d-valid"),
]
