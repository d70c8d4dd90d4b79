"""The exact words of the library's errors: every call below fails with its class, kind and message.

The library's tests assert an error's class (and kind); what its message says, word for word, is pinned
here only. The command line's messages are in test_error_messages.py. Messages of NumPy or Python that
jaccli passes on as they are stay beside the tests that compare them with NumPy's.
"""

from __future__ import annotations

import os
import pickle
import re
import socket
from pathlib import Path
from typing import Any, Callable, NamedTuple

import numpy as np
import pytest
import scipy.linalg
import scipy.sparse
import scipy.special as sp
import scipy.stats

import jaccli
from jaccli.api.sparse import PatternMismatch
from jaccli.cli.render.terminal import RenderBlock
from jaccli.check.verification import check_derivative, compare_arrays
from jaccli.engine import Recording
from jaccli.errors import (BatchMixingError, ResourceLimitError, StrictModeError, TracingError,
                           UnsupportedOperationError, UsageError, UserFunctionError)
from jaccli.expr import cost
from jaccli.expr.budget import Budget
from jaccli.expr.expression import compile_expression
from jaccli.io.user_functions import bind_inputs, load_array, load_function, parse_index_spec
from jaccli.parallel.payload import CannotSend
from jaccli.io.writers import META_KEY, NpyStreamWriter, format_text, write_blocks
from jaccli.sparse import Plan, hessian_plan, jacobian_plan

from .test_api import _STRICT_GRAPH, _STRICT_PRODUCTS, A2, B2, _strict_call, weighted
from .test_lazy import X6, tall
from .test_rules import _COMPOSED, _multiply_at
from .sparse_helpers import banded, stencil5
from .test_output_targets import FifoReader
from .test_render import render
from .test_sparsity import bratu
from .test_tracing import VIEW_WRITES, VIEWS_LEFT_BEHIND


class Call(NamedTuple):
    """A call of the library (given the test's directory) and the error it raises: its class, its kind
    (None: a plain Python exception, no kind) and its message; in `message` {tmp} is the directory, {any}
    any text (NumPy's or Python's words, which jaccli passes on but does not choose)."""

    id: str
    call: Callable[[Path], Any]
    error: type[BaseException]
    kind: str | None
    message: str


X3 = np.array([0.3, -0.5, 1.2])
X23 = np.arange(1.0, 7.0).reshape(2, 3)
XB = np.array([[1.0, 2.0, 3.0], [3.0, 4.0, 3.0]])


def _mix(X):
    return np.stack([X[0] * X[1], 2 * X[1]])  # sample 0 uses sample 1


# ---------------------------------------------------------------- the public functions (test_api)
API = [
    Call('vjp-v-none', lambda tmp: jaccli.vjp(lambda x: x ** 2, X3),
         ValueError, None,
         'The vector v can only be None if the output of the user-provided function is a single array with a '
         'single element.'),
    Call('jvp-v-none', lambda tmp: jaccli.jvp(lambda x: x ** 2, X3),
         ValueError, None,
         'The vector v can only be None if the input of the user-provided function is a single array with a '
         'single element.'),
    Call('hvp-v-none', lambda tmp: jaccli.hvp(lambda x: (x ** 3).sum(), X3),
         ValueError, None,
         'The vector v can only be None if the input of the user-provided function is a single array with a '
         'single element.'),
    Call('vjp-v-size', lambda tmp: jaccli.vjp(lambda x: x ** 2, X3, np.ones(4)),
         ValueError, None,
         "v has invalid size: should be (3,) but got (4,) (the output's shape; a flat v of 3 entries is also "
         'read, row-major, and axes of length 1 may be added or left out).'),
    Call('jvp-v-size', lambda tmp: jaccli.jvp(lambda x: x ** 2, X3, np.ones(2)),
         ValueError, None,
         "v has invalid size: should be (3,) but got (2,) (the input's shape; a flat v of 3 entries is also "
         'read, row-major, and axes of length 1 may be added or left out).'),
    Call('hvp-v-size', lambda tmp: jaccli.hvp(lambda x: (x ** 3).sum(), X3, np.ones(5)),
         ValueError, None,
         "v has invalid size: should be (3,) but got (5,) (the input's shape; a flat v of 3 entries is also "
         'read, row-major, and axes of length 1 may be added or left out).'),
    Call('jvp-v-length', lambda tmp: jaccli.jvp(lambda x, y: x * y, (X3, X3), (X3, X3, X3)),
         ValueError, None,
         'v is a tuple of invalid length: should be 2 but got 3.'),
    Call('vjp-v-entry-size', lambda tmp: jaccli.vjp(lambda x: (x, x.sum()), X3, (np.ones(3), np.ones(2))),
         ValueError, None,
         "Entry 1 in v has invalid size: should be () but got (2,) (the output's shape; a flat v of 1 entry "
         'is also read, row-major, and axes of length 1 may be added or left out).'),
    Call('vjp-v-transposed',
         lambda tmp: jaccli.vjp(lambda X: X * np.arange(6.0).reshape(2, 3), X23, np.arange(6.0).reshape(3, 2)),
         ValueError, None,
         "v has invalid size: should be (2, 3) but got (3, 2) (the output's shape; a flat v of 6 entries is "
         'also read, row-major, and axes of length 1 may be added or left out).'),
    Call('vjp-v-complex',
         lambda tmp: jaccli.vjp(lambda X: X * np.arange(6.0).reshape(2, 3), X23, np.ones((2, 3)) * 1j),
         ValueError, None,
         "v is complex but the output it goes with is real: give a real v (as JAX, a vector has its output's "
         'dtype; docs/complex.md)'),
    Call('vjp-v-other-shape',
         lambda tmp: jaccli.vjp(lambda z: z * np.array([1.0, 2.0, 3.0]) + z[0] ** 2, X3, np.ones((2, 3))),
         ValueError, None,
         "v has invalid size: should be (3,) but got (2, 3) (the output's shape; a flat v of 3 entries is "
         'also read, row-major, and axes of length 1 may be added or left out).'),
    Call('jvp-v-transposed',
         lambda tmp: jaccli.jvp(lambda X: X * np.arange(6.0).reshape(2, 3), X23, np.arange(6.0).reshape(3, 2)),
         ValueError, None,
         "v has invalid size: should be (2, 3) but got (3, 2) (the input's shape; a flat v of 6 entries is "
         'also read, row-major, and axes of length 1 may be added or left out).'),
    Call('jvp-v-complex',
         lambda tmp: jaccli.jvp(lambda X: X * np.arange(6.0).reshape(2, 3), X23, np.ones((2, 3)) * 1j),
         ValueError, None,
         "v is complex but the input it goes with is real: give a real v (as JAX, a vector has its input's "
         'dtype; docs/complex.md)'),
    Call('jvp-v-other-shape',
         lambda tmp: jaccli.jvp(lambda z: z * np.array([1.0, 2.0, 3.0]) + z[0] ** 2, X3, np.ones((2, 3))),
         ValueError, None,
         "v has invalid size: should be (3,) but got (2, 3) (the input's shape; a flat v of 3 entries is also "
         'read, row-major, and axes of length 1 may be added or left out).'),
    Call('hvp-v-transposed', lambda tmp: jaccli.hvp(lambda X: (X ** 3).sum(), X23, np.arange(6.0).reshape(3, 2)),
         ValueError, None,
         "v has invalid size: should be (2, 3) but got (3, 2) (the input's shape; a flat v of 6 entries is "
         'also read, row-major, and axes of length 1 may be added or left out).'),
    Call('hvp-v-complex', lambda tmp: jaccli.hvp(lambda X: (X ** 3).sum(), X23, np.ones((2, 3)) * 1j),
         ValueError, None,
         "v is complex but the input it goes with is real: give a real v (as JAX, a vector has its input's "
         'dtype; docs/complex.md)'),
    Call('hvp-v-other-shape', lambda tmp: jaccli.hvp(lambda z: (z ** 3).sum(), X3, np.ones((2, 3))),
         ValueError, None,
         "v has invalid size: should be (3,) but got (2, 3) (the input's shape; a flat v of 3 entries is also "
         'read, row-major, and axes of length 1 may be added or left out).'),
    Call('jacobian-input-masked',
         lambda tmp: jaccli.jacobian(lambda a: a * 2, np.ma.array([1.0, 2.0, 100.0], mask=[False, False, True])),
         TypeError, None,
         'a masked array is not supported as an input to differentiate: jaccli would see the masked entries '
         'too; pass x.filled(value) or x.compressed(), or the mask as data'),
    Call('vjp-input-masked',
         lambda tmp: jaccli.vjp(lambda a: a.sum(), np.ma.array([1.0, 2.0, 100.0], mask=[False, False, True])),
         TypeError, None,
         'a masked array is not supported as an input to differentiate: jaccli would see the masked entries '
         'too; pass x.filled(value) or x.compressed(), or the mask as data'),
    Call('jacobian-input-None', lambda tmp: jaccli.jacobian(lambda a: a * 2, None),
         TypeError, None,
         'an input to differentiate is None, not real numbers; pass an array of floats (np.asarray(x, '
         'dtype=float) converts numbers held as objects or strings)'),
    Call('vjp-input-None', lambda tmp: jaccli.vjp(lambda a: a.sum(), None),
         TypeError, None,
         'an input to differentiate is None, not real numbers; pass an array of floats (np.asarray(x, '
         'dtype=float) converts numbers held as objects or strings)'),
    Call('jacobian-input-object', lambda tmp: jaccli.jacobian(lambda a: a * 2, np.array([1.0, None])),
         TypeError, None,
         'an input to differentiate is an array of dtype object, not real numbers; pass an array of floats '
         '(np.asarray(x, dtype=float) converts numbers held as objects or strings)'),
    Call('vjp-input-object', lambda tmp: jaccli.vjp(lambda a: a.sum(), np.array([1.0, None])),
         TypeError, None,
         'an input to differentiate is an array of dtype object, not real numbers; pass an array of floats '
         '(np.asarray(x, dtype=float) converts numbers held as objects or strings)'),
    Call('jacobian-input-datetime64',
         lambda tmp: jaccli.jacobian(lambda a: a * 2, np.array(["2020-01-01"], dtype="datetime64[D]")),
         TypeError, None,
         'an input to differentiate is an array of dtype datetime64[D], not real numbers; pass an array of '
         'floats (np.asarray(x, dtype=float) converts numbers held as objects or strings)'),
    Call('vjp-input-datetime64',
         lambda tmp: jaccli.vjp(lambda a: a.sum(), np.array(["2020-01-01"], dtype="datetime64[D]")),
         TypeError, None,
         'an input to differentiate is an array of dtype datetime64[D], not real numbers; pass an array of '
         'floats (np.asarray(x, dtype=float) converts numbers held as objects or strings)'),
    Call('jacobian-input-str', lambda tmp: jaccli.jacobian(lambda a: a * 2, np.array(["1.5"])),
         TypeError, None,
         'an input to differentiate is an array of dtype <U3, not real numbers; pass an array of floats '
         '(np.asarray(x, dtype=float) converts numbers held as objects or strings)'),
    Call('vjp-input-str', lambda tmp: jaccli.vjp(lambda a: a.sum(), np.array(["1.5"])),
         TypeError, None,
         'an input to differentiate is an array of dtype <U3, not real numbers; pass an array of floats '
         '(np.asarray(x, dtype=float) converts numbers held as objects or strings)'),
    Call('vjp-v-masked',
         lambda tmp: jaccli.vjp(lambda a: a * 2, np.array([0.3, 0.7]), np.ma.array([1.0, 2.0], mask=[False, True])),
         TypeError, None,
         'a masked array is not supported as the vector v: jaccli would see the masked entries too; pass '
         'x.filled(value) or x.compressed(), or the mask as data'),
    Call('vjp-v-str', lambda tmp: jaccli.vjp(lambda a: a * 2, np.array([0.3, 0.7]), np.array(["1", "2"])),
         TypeError, None,
         'the vector v is an array of dtype <U1, not real numbers; pass an array of floats (np.asarray(x, '
         'dtype=float) converts numbers held as objects or strings)'),
    Call('vjp-v-object', lambda tmp: jaccli.vjp(lambda a: a * 2, np.array([0.3, 0.7]), np.array([1.0, None])),
         TypeError, None,
         'the vector v is an array of dtype object, not real numbers; pass an array of floats (np.asarray(x, '
         'dtype=float) converts numbers held as objects or strings)'),
    Call('vjp-v-datetime64',
         lambda tmp: jaccli.vjp(lambda a: a * 2, np.array([0.3, 0.7]), np.array(["2020-01-01", "2020-01-02"], dtype="datetime64[D]")),
         TypeError, None,
         'the vector v is an array of dtype datetime64[D], not real numbers; pass an array of floats '
         '(np.asarray(x, dtype=float) converts numbers held as objects or strings)'),
    Call('jvp-v-masked',
         lambda tmp: jaccli.jvp(lambda a: a * 2, np.array([0.3, 0.7]), np.ma.array([1.0, 2.0], mask=[False, True])),
         TypeError, None,
         'a masked array is not supported as the vector v: jaccli would see the masked entries too; pass '
         'x.filled(value) or x.compressed(), or the mask as data'),
    Call('jvp-v-str', lambda tmp: jaccli.jvp(lambda a: a * 2, np.array([0.3, 0.7]), np.array(["1", "2"])),
         TypeError, None,
         'the vector v is an array of dtype <U1, not real numbers; pass an array of floats (np.asarray(x, '
         'dtype=float) converts numbers held as objects or strings)'),
    Call('jvp-v-object', lambda tmp: jaccli.jvp(lambda a: a * 2, np.array([0.3, 0.7]), np.array([1.0, None])),
         TypeError, None,
         'the vector v is an array of dtype object, not real numbers; pass an array of floats (np.asarray(x, '
         'dtype=float) converts numbers held as objects or strings)'),
    Call('jvp-v-datetime64',
         lambda tmp: jaccli.jvp(lambda a: a * 2, np.array([0.3, 0.7]), np.array(["2020-01-01", "2020-01-02"], dtype="datetime64[D]")),
         TypeError, None,
         'the vector v is an array of dtype datetime64[D], not real numbers; pass an array of floats '
         '(np.asarray(x, dtype=float) converts numbers held as objects or strings)'),
    Call('hvp-v-masked',
         lambda tmp: jaccli.hvp(lambda a: (a ** 3).sum(), np.array([0.3, 0.7]), np.ma.array([1.0, 2.0], mask=[False, True])),
         TypeError, None,
         'a masked array is not supported as the vector v: jaccli would see the masked entries too; pass '
         'x.filled(value) or x.compressed(), or the mask as data'),
    Call('hvp-v-str', lambda tmp: jaccli.hvp(lambda a: (a ** 3).sum(), np.array([0.3, 0.7]), np.array(["1", "2"])),
         TypeError, None,
         'the vector v is an array of dtype <U1, not real numbers; pass an array of floats (np.asarray(x, '
         'dtype=float) converts numbers held as objects or strings)'),
    Call('hvp-v-object',
         lambda tmp: jaccli.hvp(lambda a: (a ** 3).sum(), np.array([0.3, 0.7]), np.array([1.0, None])),
         TypeError, None,
         'the vector v is an array of dtype object, not real numbers; pass an array of floats (np.asarray(x, '
         'dtype=float) converts numbers held as objects or strings)'),
    Call('hvp-v-datetime64',
         lambda tmp: jaccli.hvp(lambda a: (a ** 3).sum(), np.array([0.3, 0.7]), np.array(["2020-01-01", "2020-01-02"], dtype="datetime64[D]")),
         TypeError, None,
         'the vector v is an array of dtype datetime64[D], not real numbers; pass an array of floats '
         '(np.asarray(x, dtype=float) converts numbers held as objects or strings)'),
    Call('vhp-v-masked',
         lambda tmp: jaccli.vhp(lambda a: (a ** 3).sum(), np.array([0.3, 0.7]), np.ma.array([1.0, 2.0], mask=[False, True])),
         TypeError, None,
         'a masked array is not supported as the vector v: jaccli would see the masked entries too; pass '
         'x.filled(value) or x.compressed(), or the mask as data'),
    Call('vhp-v-str', lambda tmp: jaccli.vhp(lambda a: (a ** 3).sum(), np.array([0.3, 0.7]), np.array(["1", "2"])),
         TypeError, None,
         'the vector v is an array of dtype <U1, not real numbers; pass an array of floats (np.asarray(x, '
         'dtype=float) converts numbers held as objects or strings)'),
    Call('vhp-v-object',
         lambda tmp: jaccli.vhp(lambda a: (a ** 3).sum(), np.array([0.3, 0.7]), np.array([1.0, None])),
         TypeError, None,
         'the vector v is an array of dtype object, not real numbers; pass an array of floats (np.asarray(x, '
         'dtype=float) converts numbers held as objects or strings)'),
    Call('vhp-v-datetime64',
         lambda tmp: jaccli.vhp(lambda a: (a ** 3).sum(), np.array([0.3, 0.7]), np.array(["2020-01-01", "2020-01-02"], dtype="datetime64[D]")),
         TypeError, None,
         'the vector v is an array of dtype datetime64[D], not real numbers; pass an array of floats '
         '(np.asarray(x, dtype=float) converts numbers held as objects or strings)'),
    Call('vjp-v-entry-masked',
         lambda tmp: jaccli.vjp(lambda a: (a, a * 2), np.array([0.3, 0.7]), (np.ones(2), np.ma.array([1.0, 2.0], mask=[0, 1]))),
         TypeError, None,
         'a masked array is not supported as entry 1 in the vector v: jaccli would see the masked entries '
         'too; pass x.filled(value) or x.compressed(), or the mask as data'),
    Call('wrt-no-name', lambda tmp: jaccli.jacobian(weighted, (X3, X3, X3), wrt='w'),
         ValueError, None,
         "wrt: the function has no input named 'w'; its inputs are x, y, z"),
    Call('wrt-twice-name', lambda tmp: jaccli.jacobian(weighted, (X3, X3, X3), wrt=(0, 'x')),
         ValueError, None,
         "wrt: input 'x' is listed twice"),
    Call('wrt-twice-negative', lambda tmp: jaccli.jacobian(weighted, (X3, X3, X3), wrt=(2, -1)),
         ValueError, None,
         "wrt: input 'z' is listed twice"),
    Call('wrt-out-of-range', lambda tmp: jaccli.jacobian(weighted, (X3, X3, X3), wrt=3),
         ValueError, None,
         'wrt: input 3 is out of range for 3 input(s)'),
    Call('wrt-empty', lambda tmp: jaccli.jacobian(weighted, (X3, X3, X3), wrt=()),
         ValueError, None,
         'wrt must name at least one input'),
    Call('hessian-wrt-no-name',
         lambda tmp: jaccli.hessian(lambda x, y, z: (weighted(x, y, z) ** 2).sum(), (X3, X3, X3), wrt='q'),
         ValueError, None,
         "wrt: the function has no input named 'q'; its inputs are x, y, z"),
    Call('grad-wrt-no-name', lambda tmp: jaccli.grad(lambda x, y, z: weighted(x, y, z).sum(), (X3, X3, X3), wrt='q'),
         ValueError, None,
         "wrt: the function has no input named 'q'; its inputs are x, y, z"),
    Call('wrt-type-0.0', lambda tmp: jaccli.jacobian(weighted, (X3, X3, X3), wrt=0.0),
         TypeError, None,
         'wrt must be an int, a name, or a sequence of them, not float'),
    Call('wrt-type-{0}', lambda tmp: jaccli.jacobian(weighted, (X3, X3, X3), wrt={0}),
         TypeError, None,
         'wrt must be an int, a name, or a sequence of them, not set'),
    Call('wrt-type-type(None)', lambda tmp: jaccli.jacobian(weighted, (X3, X3, X3), wrt=type(None)),
         TypeError, None,
         'wrt must be an int, a name, or a sequence of them, not type'),
    Call('wrt-type-[0, 1.0]', lambda tmp: jaccli.jacobian(weighted, (X3, X3, X3), wrt=[0, 1.0]),
         TypeError, None,
         'wrt must be an int, a name, or a sequence of them, not float'),
    Call('strict-jacobian', lambda tmp: jaccli.jacobian(lambda a, b: 2 * b, (X3, X3), strict=True),
         StrictModeError, 'check_failed',
         "Output 0 of the user-provided function is independent of input 0 ('a'): no path in the recorded "
         'computation leads from it to the output. This is not allowed in strict mode.'),
    Call('strict-hessian', lambda tmp: jaccli.hessian(lambda x: (2 * x).sum(), X3, strict=True),
         StrictModeError, 'check_failed',
         "While computing the hessian, found that the gradient with respect to input 0 ('x') is independent "
         "of input 0 ('x'): no path in the recorded computation. This is not allowed in strict mode; the "
         'function must be twice differentiable with a gradient that depends on the inputs.'),
    Call('strict-create-graph-0-jacobian', lambda tmp: _strict_call(*_STRICT_GRAPH[0][:3], create_graph=True),
         StrictModeError, 'check_failed',
         'With create_graph=True, the jacobian of output 0 of the user-provided function with respect to '
         "input 0 ('a') is independent of the inputs: no path in the recorded derivative leads from an input "
         'to it (a linear function such as 3 * a has a constant jacobian). This is not allowed in strict mode '
         'when create_graph=True; pass create_graph=False or strict=False.'),
    Call('strict-create-graph-1-jacobian', lambda tmp: _strict_call(*_STRICT_GRAPH[1][:3], create_graph=True),
         StrictModeError, 'check_failed',
         'With create_graph=True, the jacobian of output 0 of the user-provided function with respect to '
         "input 0 ('a') is independent of the inputs: no path in the recorded derivative leads from an input "
         'to it (a linear function such as 3 * a has a constant jacobian). This is not allowed in strict mode '
         'when create_graph=True; pass create_graph=False or strict=False.'),
    Call('strict-create-graph-2-jacobian', lambda tmp: _strict_call(*_STRICT_GRAPH[2][:3], create_graph=True),
         StrictModeError, 'check_failed',
         'With create_graph=True, the jacobian of output 0 of the user-provided function with respect to '
         "input 0 ('a') is independent of the inputs: no path in the recorded derivative leads from an input "
         'to it (a linear function such as 3 * a has a constant jacobian). This is not allowed in strict mode '
         'when create_graph=True; pass create_graph=False or strict=False.'),
    Call('strict-create-graph-3-jacobian', lambda tmp: _strict_call(*_STRICT_GRAPH[3][:3], create_graph=True),
         StrictModeError, 'check_failed',
         'With create_graph=True, the jacobian of output 0 of the user-provided function with respect to '
         "input 0 ('a') is independent of the inputs: no path in the recorded derivative leads from an input "
         'to it (a linear function such as 3 * a has a constant jacobian). This is not allowed in strict mode '
         'when create_graph=True; pass create_graph=False or strict=False.'),
    Call('strict-create-graph-4-jacobian', lambda tmp: _strict_call(*_STRICT_GRAPH[4][:3], create_graph=True),
         StrictModeError, 'check_failed',
         'With create_graph=True, the jacobian of output 1 of the user-provided function with respect to '
         "input 0 ('a') is independent of the inputs: no path in the recorded derivative leads from an input "
         'to it (a linear function such as 3 * a has a constant jacobian). This is not allowed in strict mode '
         'when create_graph=True; pass create_graph=False or strict=False.'),
    Call('strict-create-graph-9-hessian', lambda tmp: _strict_call(*_STRICT_GRAPH[9][:3], create_graph=True),
         StrictModeError, 'check_failed',
         "With create_graph=True, the hessian block of inputs 0 ('a') and 0 ('a') is independent of the "
         'inputs: no path in the recorded derivative leads from an input to it (a quadratic function such as '
         'a @ a or a * b has a constant hessian). This is not allowed in strict mode when create_graph=True; '
         'pass create_graph=False or strict=False.'),
    Call('strict-create-graph-10-hessian', lambda tmp: _strict_call(*_STRICT_GRAPH[10][:3], create_graph=True),
         StrictModeError, 'check_failed',
         "With create_graph=True, the hessian block of inputs 0 ('a') and 0 ('a') is independent of the "
         'inputs: no path in the recorded derivative leads from an input to it (a quadratic function such as '
         'a @ a or a * b has a constant hessian). This is not allowed in strict mode when create_graph=True; '
         'pass create_graph=False or strict=False.'),
    Call('strict-create-graph-11-hessian', lambda tmp: _strict_call(*_STRICT_GRAPH[11][:3], create_graph=True),
         StrictModeError, 'check_failed',
         "With create_graph=True, the hessian block of inputs 0 ('a') and 0 ('a') is independent of the "
         'inputs: no path in the recorded derivative leads from an input to it (a quadratic function such as '
         'a @ a or a * b has a constant hessian). This is not allowed in strict mode when create_graph=True; '
         'pass create_graph=False or strict=False.'),
    Call('strict-create-graph-12-hessian', lambda tmp: _strict_call(*_STRICT_GRAPH[12][:3], create_graph=True),
         StrictModeError, 'check_failed',
         "With create_graph=True, the hessian block of inputs 0 ('a') and 0 ('a') is independent of the "
         'inputs: no path in the recorded derivative leads from an input to it (a quadratic function such as '
         'a @ a or a * b has a constant hessian). This is not allowed in strict mode when create_graph=True; '
         'pass create_graph=False or strict=False.'),
    Call('strict-create-graph-16-vjp', lambda tmp: _strict_call(*_STRICT_GRAPH[16][:3], create_graph=True),
         StrictModeError, 'check_failed',
         "With create_graph=True, the vector-jacobian product with respect to input 0 ('a') is independent of "
         'the inputs: no path in the recorded derivative leads from an input to it (a linear function such as '
         '3 * a has a constant jacobian). This is not allowed in strict mode when create_graph=True; pass '
         'create_graph=False or strict=False.'),
    Call('strict-create-graph-17-vjp', lambda tmp: _strict_call(*_STRICT_GRAPH[17][:3], create_graph=True),
         StrictModeError, 'check_failed',
         "With create_graph=True, the vector-jacobian product with respect to input 0 ('a') is independent of "
         'the inputs: no path in the recorded derivative leads from an input to it (a linear function such as '
         '3 * a has a constant jacobian). This is not allowed in strict mode when create_graph=True; pass '
         'create_graph=False or strict=False.'),
    Call('strict-create-graph-19-jvp', lambda tmp: _strict_call(*_STRICT_GRAPH[19][:3], create_graph=True),
         StrictModeError, 'check_failed',
         'With create_graph=True, the jacobian-vector product for output 0 is independent of the inputs: no '
         'path in the recorded derivative leads from an input to it (a linear function such as 3 * a has a '
         'constant jacobian). This is not allowed in strict mode when create_graph=True; pass '
         'create_graph=False or strict=False.'),
    Call('strict-create-graph-21-hvp', lambda tmp: _strict_call(*_STRICT_GRAPH[21][:3], create_graph=True),
         StrictModeError, 'check_failed',
         "With create_graph=True, the hessian-vector product with respect to input 0 ('a') is independent of "
         'the inputs: no path in the recorded derivative leads from an input to it (a quadratic function such '
         'as a @ a or a * b has a constant hessian). This is not allowed in strict mode when '
         'create_graph=True; pass create_graph=False or strict=False.'),
    Call('strict-create-graph-22-hvp', lambda tmp: _strict_call(*_STRICT_GRAPH[22][:3], create_graph=True),
         StrictModeError, 'check_failed',
         "With create_graph=True, the hessian-vector product with respect to input 0 ('a') is independent of "
         'the inputs: no path in the recorded derivative leads from an input to it (a quadratic function such '
         'as a @ a or a * b has a constant hessian). This is not allowed in strict mode when '
         'create_graph=True; pass create_graph=False or strict=False.'),
    Call('strict-create-graph-24-vhp', lambda tmp: _strict_call(*_STRICT_GRAPH[24][:3], create_graph=True),
         StrictModeError, 'check_failed',
         "With create_graph=True, the vector-hessian product with respect to input 0 ('a') is independent of "
         'the inputs: no path in the recorded derivative leads from an input to it (a quadratic function such '
         'as a @ a or a * b has a constant hessian). This is not allowed in strict mode when '
         'create_graph=True; pass create_graph=False or strict=False.'),
    Call('strict-create-graph-under-outer',
         lambda tmp: jaccli.jacobian(lambda w: jaccli.jacobian(lambda y: 3 * y + w, np.array([1.0, -2.0]), strict=True, create_graph=True), np.array([0.5, 1.5])),
         StrictModeError, 'check_failed',
         'With create_graph=True, the jacobian of output 0 of the user-provided function with respect to '
         "input 0 ('y') is independent of the inputs: no path in the recorded derivative leads from an input "
         'to it (a linear function such as 3 * a has a constant jacobian). This is not allowed in strict mode '
         'when create_graph=True; pass create_graph=False or strict=False.'),
    Call('strict-create-graph-per-sample-jacobian',
         lambda tmp: jaccli.jacobian(lambda X: 3 * X, X23, batch_axis=0, strict=True, create_graph=True),
         StrictModeError, 'check_failed',
         'With create_graph=True, the jacobian of output 0 of the user-provided function with respect to '
         "input 0 ('X') is independent of the inputs: no path in the recorded derivative leads from an input "
         'to it (a linear function such as 3 * a has a constant jacobian). This is not allowed in strict mode '
         'when create_graph=True; pass create_graph=False or strict=False.'),
    Call('strict-create-graph-per-sample-hessian',
         lambda tmp: jaccli.hessian(lambda X: (X * X).sum(axis=1), X23, batch_axis=0, strict=True, create_graph=True),
         StrictModeError, 'check_failed',
         "With create_graph=True, the hessian block of inputs 0 ('X') and 0 ('X') is independent of the "
         'inputs: no path in the recorded derivative leads from an input to it (a quadratic function such as '
         'a @ a or a * b has a constant hessian). This is not allowed in strict mode when create_graph=True; '
         'pass create_graph=False or strict=False.'),
    Call('strict-vjp-0', lambda tmp: jaccli.vjp(_STRICT_PRODUCTS[0][1], (A2, B2), np.ones(2), strict=True),
         StrictModeError, 'check_failed',
         "The output of the user-provided function is independent of input 0 ('a'): no path in the recorded "
         'computation leads from it to an output. This is not allowed in strict mode.'),
    Call('strict-jvp-1',
         lambda tmp: jaccli.jvp(_STRICT_PRODUCTS[1][1], (A2, B2), (np.ones(2), np.ones(2)), strict=True),
         StrictModeError, 'check_failed',
         "The output of the user-provided function is independent of input 0 ('a'): no path in the recorded "
         'computation leads from it to an output. This is not allowed in strict mode.'),
    Call('strict-vjp-2', lambda tmp: jaccli.vjp(_STRICT_PRODUCTS[2][1], (A2, B2), np.ones(2), strict=True),
         StrictModeError, 'check_failed',
         'Output 0 of the user-provided function does not depend on any differentiated input: no path in the '
         'recorded computation. The outputs must be computed in a differentiable manner from the input when '
         'running in strict mode.'),
    Call('strict-jvp-3',
         lambda tmp: jaccli.jvp(_STRICT_PRODUCTS[3][1], (A2, B2), (np.ones(2), np.ones(2)), strict=True),
         StrictModeError, 'check_failed',
         'Output 1 of the user-provided function does not depend on any differentiated input: no path in the '
         'recorded computation. The outputs must be computed in a differentiable manner from the input when '
         'running in strict mode.'),
    Call('strict-hvp-4',
         lambda tmp: jaccli.hvp(_STRICT_PRODUCTS[4][1], (A2, B2), (np.ones(2), np.ones(2)), strict=True),
         StrictModeError, 'check_failed',
         "The output of the user-provided function is independent of input 1 ('b'): no path in the recorded "
         'computation leads from it to an output. This is not allowed in strict mode.'),
    Call('strict-vhp-5',
         lambda tmp: jaccli.vhp(_STRICT_PRODUCTS[5][1], (A2, B2), (np.ones(2), np.ones(2)), strict=True),
         StrictModeError, 'check_failed',
         "The output of the user-provided function is independent of input 1 ('b'): no path in the recorded "
         'computation leads from it to an output. This is not allowed in strict mode.'),
    Call('strict-hvp-6',
         lambda tmp: jaccli.hvp(_STRICT_PRODUCTS[6][1], (A2, B2), (np.ones(2), np.ones(2)), strict=True),
         StrictModeError, 'check_failed',
         "While computing the hessian, found that the gradient with respect to input 0 ('a') is independent "
         'of the inputs: no path in the recorded computation. This is not allowed in strict mode; the '
         'function must be twice differentiable with a gradient that depends on the inputs (a linear function '
         'has a constant one).'),
    Call('strict-vhp-7',
         lambda tmp: jaccli.vhp(_STRICT_PRODUCTS[7][1], (A2, B2), (np.ones(2), np.ones(2)), strict=True),
         StrictModeError, 'check_failed',
         "While computing the hessian, found that the gradient with respect to input 0 ('a') is independent "
         'of the inputs: no path in the recorded computation. This is not allowed in strict mode; the '
         'function must be twice differentiable with a gradient that depends on the inputs (a linear function '
         'has a constant one).'),
    Call('batch-mixing-create-graph-jacobian',
         lambda tmp: jaccli.vjp(lambda X: jaccli.jacobian(_mix, X, batch_axis=0, create_graph=True), XB, np.ones((2, 3, 3))),
         BatchMixingError, 'batch_mixing',
         'batch_axis=0: the function mixes samples: output 0 of sample 0 depends on input 0 of sample 1, so '
         'per-sample derivatives are not defined; compute the full Jacobian without batch_axis (Paddle would '
         'silently return summed cross-sample terms here)'),
    Call('batch-mixing-create-graph-hessian',
         lambda tmp: jaccli.vjp(lambda X: jaccli.hessian(lambda X: (X[0] * X[1]).sum() + 0 * X.sum(axis=1), X, batch_axis=0, create_graph=True), XB, np.ones((2, 3, 3))),
         BatchMixingError, 'batch_mixing',
         'batch_axis=0: the function mixes samples: output 0 of sample 0 depends on input 0 of sample 1, so '
         'per-sample derivatives are not defined; compute the full Jacobian without batch_axis (Paddle would '
         'silently return summed cross-sample terms here)'),
    Call('batch-axis-0d-create-graph',
         lambda tmp: jaccli.vjp(lambda X: jaccli.jacobian(lambda y: y.sum(), X, batch_axis=0, create_graph=True), XB, np.ones((2, 3, 3))),
         ValueError, None,
         'batch_axis=0 needs every differentiated input and every output to have a batch axis 0; a 0-d array '
         'has none'),
    Call('strict-under-create-graph-jacobian',
         lambda tmp: jaccli.jacobian(lambda x: jaccli.jacobian(lambda a, b: b * 2, (x, x), strict=True, create_graph=True)[0], np.ones(2)),
         StrictModeError, 'check_failed',
         "Output 0 of the user-provided function is independent of input 0 ('a'): no path in the recorded "
         'computation leads from it to the output. This is not allowed in strict mode.'),
    Call('strict-under-create-graph-hessian',
         lambda tmp: jaccli.jacobian(lambda x: jaccli.hessian(lambda a, b: (a * b.sum()).sum(), (x, x), strict=True, create_graph=True)[0][0], np.ones(2)),
         StrictModeError, 'check_failed',
         "While computing the hessian, found that the gradient with respect to input 0 ('a') is independent "
         "of input 0 ('a'): no path in the recorded computation. This is not allowed in strict mode; the "
         'function must be twice differentiable with a gradient that depends on the inputs.'),
    Call('hessian-tuple-output', lambda tmp: jaccli.hessian(lambda x: ((x ** 2).sum(), x.sum()), X3),
         ValueError, None,
         'hessian needs a function with a single scalar output, but f returns a tuple of 2 arrays; return one '
         'of them'),
    Call('jacobian-batch-axis-1', lambda tmp: jaccli.jacobian(lambda x: (x ** 2).sum(), X23, batch_axis=1),
         ValueError, None,
         'batch_axis should be None or 0, but got 1.'),
    Call('hessian-batch-axis-1', lambda tmp: jaccli.hessian(lambda x: (x ** 2).sum(), X23, batch_axis=1),
         ValueError, None,
         'batch_axis should be None or 0, but got 1.'),
    Call('jacobian-batch-axis--1', lambda tmp: jaccli.jacobian(lambda x: (x ** 2).sum(), X23, batch_axis=-1),
         ValueError, None,
         'batch_axis should be None or 0, but got -1.'),
    Call('hessian-batch-axis--1', lambda tmp: jaccli.hessian(lambda x: (x ** 2).sum(), X23, batch_axis=-1),
         ValueError, None,
         'batch_axis should be None or 0, but got -1.'),
    Call("jacobian-batch-axis-'0'", lambda tmp: jaccli.jacobian(lambda x: (x ** 2).sum(), X23, batch_axis='0'),
         ValueError, None,
         "batch_axis should be None or 0, but got '0'."),
    Call("hessian-batch-axis-'0'", lambda tmp: jaccli.hessian(lambda x: (x ** 2).sum(), X23, batch_axis='0'),
         ValueError, None,
         "batch_axis should be None or 0, but got '0'."),
    Call('jacobian-batch-axis-True', lambda tmp: jaccli.jacobian(lambda x: (x ** 2).sum(), X23, batch_axis=True),
         ValueError, None,
         'batch_axis should be None or 0, but got True.'),
    Call('hessian-batch-axis-True', lambda tmp: jaccli.hessian(lambda x: (x ** 2).sum(), X23, batch_axis=True),
         ValueError, None,
         'batch_axis should be None or 0, but got True.'),
    Call('jacobian-batch-axis-0.5', lambda tmp: jaccli.jacobian(lambda x: (x ** 2).sum(), X23, batch_axis=0.5),
         ValueError, None,
         'batch_axis should be None or 0, but got 0.5.'),
    Call('hessian-batch-axis-0.5', lambda tmp: jaccli.hessian(lambda x: (x ** 2).sum(), X23, batch_axis=0.5),
         ValueError, None,
         'batch_axis should be None or 0, but got 0.5.'),
    Call('batch-sizes',
         lambda tmp: jaccli.jacobian(lambda x, y: (x ** 2, y ** 2), (np.ones((3, 2)), np.ones((4, 2))), batch_axis=0),
         ValueError, None,
         'batch_axis=0: inconsistent batch sizes [3, 4] on axis 0 of the inputs and outputs; every one must '
         'have the same number of samples'),
    Call('batch-axis-0d-output', lambda tmp: jaccli.jacobian(lambda x: x.sum(), np.ones((3, 2)), batch_axis=0),
         ValueError, None,
         'batch_axis=0 needs every differentiated input and every output to have a batch axis 0; a 0-d array '
         'has none'),
    Call('batch-mixing',
         lambda tmp: np.asarray(jaccli.jacobian(lambda X: X * X.sum(0), np.arange(1.0, 13.0).reshape(4, 3), batch_axis=0)),
         BatchMixingError, 'batch_mixing',
         'batch_axis=0: the function mixes samples: output 0 of sample 0 depends on input 0 of sample 1, so '
         'per-sample derivatives are not defined; compute the full Jacobian without batch_axis (Paddle would '
         'silently return summed cross-sample terms here)'),
    Call('jacobian-chunk-size-0', lambda tmp: jaccli.jacobian(lambda x: (x ** 2).sum(), X3, chunk_size=0),
         ValueError, None,
         'chunk_size should be greater than 0, but got 0.'),
    Call('hessian-chunk-size-0', lambda tmp: jaccli.hessian(lambda x: (x ** 2).sum(), X3, chunk_size=0),
         ValueError, None,
         'chunk_size should be greater than 0, but got 0.'),
    Call('jacobian-chunk-size--1', lambda tmp: jaccli.jacobian(lambda x: (x ** 2).sum(), X3, chunk_size=-1),
         ValueError, None,
         'chunk_size should be greater than 0, but got -1.'),
    Call('hessian-chunk-size--1', lambda tmp: jaccli.hessian(lambda x: (x ** 2).sum(), X3, chunk_size=-1),
         ValueError, None,
         'chunk_size should be greater than 0, but got -1.'),
    Call('mode', lambda tmp: jaccli.jacobian(lambda x: x, np.ones(2), mode='sideways'),
         ValueError, None,
         "mode should be one of 'auto', 'reverse', 'forward', but got 'sideways'"),
    Call('grad-vector-output', lambda tmp: jaccli.grad(lambda x: x ** 2, X3),
         ValueError, None,
         'grad needs a function with one scalar output, but f returns shape (3,); use jacobian for vector '
         'outputs, or reduce the output (e.g. .sum())'),
    Call('jacobian-empty-tuple', lambda tmp: jaccli.jacobian(lambda x: (), np.ones(2)),
         UserFunctionError, 'function_failed',
         'the function returned an empty tuple, which has nothing to differentiate; return a NumPy array (or '
         'a tuple of arrays)'),
    Call('hessian-empty-tuple', lambda tmp: jaccli.hessian(lambda x: (), np.ones(2)),
         UserFunctionError, 'function_failed',
         'the function returned an empty tuple, which has nothing to differentiate; return a NumPy array (or '
         'a tuple of arrays)'),
    Call('grad-empty-tuple', lambda tmp: jaccli.grad(lambda x: (), np.ones(2)),
         UserFunctionError, 'function_failed',
         'the function returned an empty tuple, which has nothing to differentiate; return a NumPy array (or '
         'a tuple of arrays)'),
    Call('jvp-empty-tuple', lambda tmp: jaccli.jvp(lambda x: (), np.ones(2), np.ones(2)),
         UserFunctionError, 'function_failed',
         'the function returned an empty tuple, which has nothing to differentiate; return a NumPy array (or '
         'a tuple of arrays)'),
    Call('vjp-empty-tuple', lambda tmp: jaccli.vjp(lambda x: (), np.ones(2), ()),
         UserFunctionError, 'function_failed',
         'the function returned an empty tuple, which has nothing to differentiate; return a NumPy array (or '
         'a tuple of arrays)'),
    Call('hvp-empty-tuple', lambda tmp: jaccli.hvp(lambda x: (), np.ones(2), np.ones(2)),
         UserFunctionError, 'function_failed',
         'the function returned an empty tuple, which has nothing to differentiate; return a NumPy array (or '
         'a tuple of arrays)'),
    Call('record_once-empty-tuple', lambda tmp: jaccli.jacobian(jaccli.record_once(lambda x: ()), np.ones(2)),
         UserFunctionError, 'function_failed',
         'the function returned an empty tuple, which has nothing to differentiate; return a NumPy array (or '
         'a tuple of arrays)'),
    Call('hessian-vector-output', lambda tmp: jaccli.hessian(lambda x: x ** 2, np.ones(3)),
         ValueError, None,
         'hessian needs a scalar output, but f returns shape (3,); pick one element (e.g. lambda x: f(x)[0]) '
         'or reduce it (.sum()), or use batch_axis=0 for per-sample Hessians'),
    Call('hvp-vector-output', lambda tmp: jaccli.hvp(lambda x: x ** 2, np.ones(3), np.ones(3)),
         ValueError, None,
         'hvp needs a scalar output, but f returns shape (3,); pick one element (e.g. lambda x: f(x)[0]) or '
         'reduce it (.sum())'),
    Call('vhp-vector-output', lambda tmp: jaccli.vhp(lambda x: x ** 2, np.ones(3), np.ones(3)),
         ValueError, None,
         'vhp needs a scalar output, but f returns shape (3,); pick one element (e.g. lambda x: f(x)[0]) or '
         'reduce it (.sum())'),

    Call('hessian-batch-axis-vector-per-sample',
         lambda tmp: jaccli.hessian(lambda x: x * x, np.ones((3, 3)), batch_axis=0),
         ValueError, None,
         'hessian with batch_axis=0 needs one scalar per sample (an output of shape (B,) or (B, 1)), but f '
         'returns shape (3, 3)'),
    Call('hessian-batch-axis-2', lambda tmp: jaccli.hessian(lambda x: (x * x).sum(), np.ones(3), batch_axis=2),
         ValueError, None,
         'batch_axis should be None or 0, but got 2.'),
    Call('complex-in-and-out-not-holomorphic', lambda tmp: jaccli.jacobian(lambda z: z ** 2, np.array([1 + 1j, 2 - 1j])),
         UnsupportedOperationError, 'unsupported_operation',
         'jacobian of a function with complex inputs and complex outputs needs holomorphic=True (for a holomorphic '
         "f, as JAX's); otherwise differentiate the real and imaginary parts of the output, or use "
         'jaccli.jvp/jaccli.vjp (docs/complex.md)'),
    Call('holomorphic-real-input', lambda tmp: jaccli.jacobian(lambda z: z ** 2, np.ones(2), holomorphic=True),
         UnsupportedOperationError, 'unsupported_operation',
         "jacobian with holomorphic=True needs complex inputs, as JAX's; give them a complex dtype "
         '(x.astype(complex)), or leave holomorphic out (docs/complex.md)'),
    Call('holomorphic-real-output',
         lambda tmp: jaccli.jacobian(lambda z: np.abs(z), np.array([1 + 1j, 2 - 1j]), holomorphic=True),
         UnsupportedOperationError, 'unsupported_operation',
         "jacobian with holomorphic=True needs complex outputs, as JAX's; give them a complex dtype "
         '(x.astype(complex)), or leave holomorphic out (docs/complex.md)'),
    Call('hessian-holomorphic-real-output',
         lambda tmp: jaccli.hessian(lambda z: np.abs(z).sum(), np.array([1 + 1j, 2 - 1j]), holomorphic=True),
         UnsupportedOperationError, 'unsupported_operation',
         "hessian with holomorphic=True needs complex outputs, as JAX's; give them a complex dtype "
         '(x.astype(complex)), or leave holomorphic out (docs/complex.md)'),
    Call('vjp-holomorphic-real-input', lambda tmp: jaccli.vjp(lambda z: z * 1j, np.ones(2), np.ones(2), holomorphic=True),
         UnsupportedOperationError, 'unsupported_operation',
         "vjp with holomorphic=True needs complex inputs, as JAX's; give them a complex dtype "
         '(x.astype(complex)), or leave holomorphic out (docs/complex.md)'),
    Call('hessian-complex-input', lambda tmp: jaccli.hessian(lambda z: np.abs(z).sum(), np.array([1 + 1j, 2 - 1j])),
         UnsupportedOperationError, 'unsupported_operation',
         'hessian of a function of complex inputs needs holomorphic=True (for a holomorphic f), or the real and '
         "imaginary parts passed as real inputs, as JAX's jacfwd (docs/complex.md)"),
    Call('hvp-complex-input',
         lambda tmp: jaccli.hvp(lambda z: np.abs(z).sum(), np.array([1 + 1j, 2 - 1j]), np.ones(2)),
         UnsupportedOperationError, 'unsupported_operation',
         "hvp of a function of complex inputs needs the real and imaginary parts passed as real inputs, as JAX's "
         'jacfwd (docs/complex.md)'),
    Call('hessian-complex-value', lambda tmp: jaccli.hessian(lambda x: np.exp(1j * x).sum(), np.ones(2)),
         UnsupportedOperationError, 'unsupported_operation',
         'hessian needs a real-valued f, but f returns complex values: differentiate np.real(f) or np.abs(f) ** 2, '
         'or pass holomorphic=True for a holomorphic f of complex inputs (docs/complex.md)'),
    Call('eigh-of-complex', lambda tmp: jaccli.jacobian(lambda x: np.linalg.eigh(x * (1 + 1j))[0], np.eye(2)),
         UnsupportedOperationError, 'unsupported_operation',
         "{site}: np.linalg.eigh of complex values is not supported by jaccli; its rules are those of real matrices: "
         'see docs/complex.md for what takes complex values'),
    Call('norm-2-of-complex', lambda tmp: jaccli.jacobian(lambda x: np.linalg.norm(x * 1j, 2), np.eye(2)),
         UnsupportedOperationError, 'unsupported_operation',
         "{site}: np.linalg.norm(..., ord=2) of complex values is not supported by jaccli; its rules are those of real "
         'matrices: see docs/complex.md for what takes complex values'),
    Call('abs-of-complex-with-where',
         lambda tmp: jaccli.jacobian(lambda x: np.abs(x * 1j, where=x > 0), np.ones(2)),
         UnsupportedOperationError, 'unsupported_operation',
         '{site}: np.abs of complex values with where= is not supported by jaccli; call it without them'),
    Call('sign-of-complex-with-keywords',
         lambda tmp: jaccli.jacobian(lambda x: np.sign(x * 1j, dtype=complex), np.ones(2)),
         UnsupportedOperationError, 'unsupported_operation',
         '{site}: np.sign of complex values with keywords is not supported by jaccli; call it without them'),
    Call('grad-complex-value', lambda tmp: jaccli.grad(lambda x: np.exp(1j * x).sum(), np.ones(2)),
         UnsupportedOperationError, 'unsupported_operation',
         'grad needs a real-valued f, but f returns complex values: differentiate np.real(f) or np.abs(f) ** 2, '
         'or pass holomorphic=True for a holomorphic f of complex inputs (docs/complex.md)'),
    Call('wrt-negative-out-of-range', lambda tmp: jaccli.jacobian(lambda x: x * x, np.ones(3), wrt=-2),
         ValueError, None,
         'wrt: input -2 is out of range for 1 input(s)'),
    Call('record-once-not-a-function', lambda tmp: jaccli.record_once(3),
         TypeError, None,
         'record_once needs a function, not int'),
    Call('record-once-max-signatures--1', lambda tmp: jaccli.record_once(np.sin, max_signatures=-1),
         ValueError, None,
         'max_signatures should be a positive int, but got -1'),
    Call('record-once-max-signatures-0', lambda tmp: jaccli.record_once(np.sin, max_signatures=0),
         ValueError, None,
         'max_signatures should be a positive int, but got 0'),
    Call('record-once-max-signatures-2.5', lambda tmp: jaccli.record_once(np.sin, max_signatures=2.5),
         ValueError, None,
         'max_signatures should be a positive int, but got 2.5'),
    Call('record-once-max-signatures-True', lambda tmp: jaccli.record_once(np.sin, max_signatures=True),
         ValueError, None,
         'max_signatures should be a positive int, but got True'),
    Call("record-once-max-signatures-'8'", lambda tmp: jaccli.record_once(np.sin, max_signatures='8'),
         ValueError, None,
         "max_signatures should be a positive int, but got '8'"),
]


def _on(J, change):
    return change(J)


# ---------------------------------------------------------------- lazy Jacobians and Hessians (test_lazy)
LAZY = [
    Call('lazy-sort', lambda tmp: _on(jaccli.jacobian(tall, X6), lambda J: J.sort()),
         TypeError, None,
         'a lazy Jacobian is read-only: J.sort() would change its entries; do it on a copy, A = np.array(J) '
         '(or J.copy())'),
    Call('lazy-fill', lambda tmp: _on(jaccli.jacobian(tall, X6), lambda J: J.fill(0.0)),
         TypeError, None,
         'a lazy Jacobian is read-only: J.fill() would change its entries; do it on a copy, A = np.array(J) '
         '(or J.copy())'),
    Call('lazy-resize', lambda tmp: _on(jaccli.jacobian(tall, X6), lambda J: J.resize(60)),
         TypeError, None,
         'a lazy Jacobian is read-only: J.resize() would change its entries; do it on a copy, A = np.array(J) '
         '(or J.copy())'),
    Call('lazy-put', lambda tmp: _on(jaccli.jacobian(tall, X6), lambda J: J.put([0], [1.0])),
         TypeError, None,
         'a lazy Jacobian is read-only: J.put() would change its entries; do it on a copy, A = np.array(J) '
         '(or J.copy())'),
    Call('lazy-partition', lambda tmp: _on(jaccli.jacobian(tall, X6), lambda J: J.partition(2)),
         TypeError, None,
         'a lazy Jacobian is read-only: J.partition() would change its entries; do it on a copy, A = '
         'np.array(J) (or J.copy())'),
    Call('lazy-setflags', lambda tmp: _on(jaccli.jacobian(tall, X6), lambda J: J.setflags(write=True)),
         TypeError, None,
         'a lazy Jacobian is read-only: J.setflags() would change its entries; do it on a copy, A = '
         'np.array(J) (or J.copy())'),
    Call('lazy-setitem', lambda tmp: _on(jaccli.jacobian(tall, X6), lambda J: J.__setitem__((0, 0), 1.0)),
         TypeError, None,
         'a lazy Jacobian is read-only: J[idx] = value would change its entries; do it on a copy, A = '
         'np.array(J) (or J.copy())'),
    Call('lazy-round', lambda tmp: round(jaccli.jacobian(tall, X6)),
         TypeError, None,
         'round() of a Jacobian of shape (10, 6) has no single value; round its entries with '
         'J.round(decimals) or np.round(J, decimals)'),
    Call('matrix-evaluate-row-4', lambda tmp: jaccli.jacobian(np.sin, np.arange(1.0, 5.0)).matrix.evaluate([4]),
         IndexError, None,
         'row 4 is out of bounds for a matrix with 4 rows'),
    Call('matrix-stream-row-4', lambda tmp: next(jaccli.jacobian(np.sin, np.arange(1.0, 5.0)).matrix.stream([4])),
         IndexError, None,
         'row 4 is out of bounds for a matrix with 4 rows'),
    Call('matrix-evaluate-row--5', lambda tmp: jaccli.jacobian(np.sin, np.arange(1.0, 5.0)).matrix.evaluate([-5]),
         IndexError, None,
         'row -5 is out of bounds for a matrix with 4 rows'),
    Call('matrix-stream-row--5', lambda tmp: next(jaccli.jacobian(np.sin, np.arange(1.0, 5.0)).matrix.stream([-5])),
         IndexError, None,
         'row -5 is out of bounds for a matrix with 4 rows'),
    Call('matrix-evaluate-row-float', lambda tmp: jaccli.jacobian(np.sin, np.arange(1.0, 5.0)).matrix.evaluate([0.5]),
         IndexError, None,
         'row positions must be integers, not float64'),
    Call('matrix-stream-row-float',
         lambda tmp: next(jaccli.jacobian(np.sin, np.arange(1.0, 5.0)).matrix.stream([0.5])),
         IndexError, None,
         'row positions must be integers, not float64'),
    Call('matrix-evaluate-row-bool', lambda tmp: jaccli.jacobian(np.sin, np.arange(1.0, 5.0)).matrix.evaluate([True]),
         IndexError, None,
         'row positions must be integers, not bool'),
    Call('matrix-stream-row-bool',
         lambda tmp: next(jaccli.jacobian(np.sin, np.arange(1.0, 5.0)).matrix.stream([True])),
         IndexError, None,
         'row positions must be integers, not bool'),
    Call('lazy-pickle', lambda tmp: pickle.dumps(jaccli.jacobian(lambda x: np.sin(x) * x[0], np.array([1.0, 2.0]))),
         TypeError, None,
         'a lazy Jacobian holds the recording of f and cannot be pickled; pickle np.asarray(J) (computes '
         'every entry) or the part you need, J[idx]'),
    Call('lazy-iterate-0d-jacobian', lambda tmp: list(jaccli.jacobian(lambda s: s ** 2, np.array(3.0))),
         TypeError, None,
         'iteration over a 0-d Jacobian'),
    Call('lazy-iterate-0d-hessian', lambda tmp: list(jaccli.hessian(lambda s: s ** 3, np.array(2.0))),
         TypeError, None,
         'iteration over a 0-d Hessian'),
    Call('lazy-in-place-+=', lambda tmp: exec('J += value', {'J': jaccli.jacobian(tall, X6), 'value': 1.0}),
         TypeError, None,
         'a lazy Jacobian is read-only: J += value would change its entries; for a new array write '
         'np.asarray(J) + value, or change a copy: A = np.array(J); A += value'),
    Call('lazy-matrix-in-place-+=',
         lambda tmp: exec('J += value', {'J': jaccli.jacobian(tall, X6).matrix, 'value': 1.0}),
         TypeError, None,
         'a lazy MatrixView is read-only: J += value would change its entries; for a new array write '
         'np.asarray(J) + value, or change a copy: A = np.array(J); A += value'),
    Call('lazy-in-place--=', lambda tmp: exec('J -= value', {'J': jaccli.jacobian(tall, X6), 'value': 1.0}),
         TypeError, None,
         'a lazy Jacobian is read-only: J -= value would change its entries; for a new array write '
         'np.asarray(J) - value, or change a copy: A = np.array(J); A -= value'),
    Call('lazy-matrix-in-place--=',
         lambda tmp: exec('J -= value', {'J': jaccli.jacobian(tall, X6).matrix, 'value': 1.0}),
         TypeError, None,
         'a lazy MatrixView is read-only: J -= value would change its entries; for a new array write '
         'np.asarray(J) - value, or change a copy: A = np.array(J); A -= value'),
    Call('lazy-in-place-*=', lambda tmp: exec('J *= value', {'J': jaccli.jacobian(tall, X6), 'value': 1.0}),
         TypeError, None,
         'a lazy Jacobian is read-only: J *= value would change its entries; for a new array write '
         'np.asarray(J) * value, or change a copy: A = np.array(J); A *= value'),
    Call('lazy-matrix-in-place-*=',
         lambda tmp: exec('J *= value', {'J': jaccli.jacobian(tall, X6).matrix, 'value': 1.0}),
         TypeError, None,
         'a lazy MatrixView is read-only: J *= value would change its entries; for a new array write '
         'np.asarray(J) * value, or change a copy: A = np.array(J); A *= value'),
    Call('lazy-in-place-/=', lambda tmp: exec('J /= value', {'J': jaccli.jacobian(tall, X6), 'value': 1.0}),
         TypeError, None,
         'a lazy Jacobian is read-only: J /= value would change its entries; for a new array write '
         'np.asarray(J) / value, or change a copy: A = np.array(J); A /= value'),
    Call('lazy-matrix-in-place-/=',
         lambda tmp: exec('J /= value', {'J': jaccli.jacobian(tall, X6).matrix, 'value': 1.0}),
         TypeError, None,
         'a lazy MatrixView is read-only: J /= value would change its entries; for a new array write '
         'np.asarray(J) / value, or change a copy: A = np.array(J); A /= value'),
    Call('lazy-in-place-//=', lambda tmp: exec('J //= value', {'J': jaccli.jacobian(tall, X6), 'value': 1.0}),
         TypeError, None,
         'a lazy Jacobian is read-only: J //= value would change its entries; for a new array write '
         'np.asarray(J) // value, or change a copy: A = np.array(J); A //= value'),
    Call('lazy-matrix-in-place-//=',
         lambda tmp: exec('J //= value', {'J': jaccli.jacobian(tall, X6).matrix, 'value': 1.0}),
         TypeError, None,
         'a lazy MatrixView is read-only: J //= value would change its entries; for a new array write '
         'np.asarray(J) // value, or change a copy: A = np.array(J); A //= value'),
    Call('lazy-in-place-%=', lambda tmp: exec('J %= value', {'J': jaccli.jacobian(tall, X6), 'value': 1.0}),
         TypeError, None,
         'a lazy Jacobian is read-only: J %= value would change its entries; for a new array write '
         'np.asarray(J) % value, or change a copy: A = np.array(J); A %= value'),
    Call('lazy-matrix-in-place-%=',
         lambda tmp: exec('J %= value', {'J': jaccli.jacobian(tall, X6).matrix, 'value': 1.0}),
         TypeError, None,
         'a lazy MatrixView is read-only: J %= value would change its entries; for a new array write '
         'np.asarray(J) % value, or change a copy: A = np.array(J); A %= value'),
    Call('lazy-in-place-**=', lambda tmp: exec('J **= value', {'J': jaccli.jacobian(tall, X6), 'value': 1.0}),
         TypeError, None,
         'a lazy Jacobian is read-only: J **= value would change its entries; for a new array write '
         'np.asarray(J) ** value, or change a copy: A = np.array(J); A **= value'),
    Call('lazy-matrix-in-place-**=',
         lambda tmp: exec('J **= value', {'J': jaccli.jacobian(tall, X6).matrix, 'value': 1.0}),
         TypeError, None,
         'a lazy MatrixView is read-only: J **= value would change its entries; for a new array write '
         'np.asarray(J) ** value, or change a copy: A = np.array(J); A **= value'),
    Call('lazy-in-place-@=',
         lambda tmp: exec('J @= value', {'J': jaccli.jacobian(tall, X6), 'value': np.ones((6, 6))}),
         TypeError, None,
         'a lazy Jacobian is read-only: J @= value would change its entries; for a new array write '
         'np.asarray(J) @ value, or change a copy: A = np.array(J); A @= value'),
    Call('lazy-matrix-in-place-@=',
         lambda tmp: exec('J @= value', {'J': jaccli.jacobian(tall, X6).matrix, 'value': np.ones((6, 6))}),
         TypeError, None,
         'a lazy MatrixView is read-only: J @= value would change its entries; for a new array write '
         'np.asarray(J) @ value, or change a copy: A = np.array(J); A @= value'),
    Call('lazy-out', lambda tmp: np.add(np.ones((10, 6)), 1.0, out=jaccli.jacobian(tall, X6)),
         TypeError, None,
         'a lazy Jacobian is read-only: np.add(..., out=J) would change its entries; do it on a copy, A = '
         'np.array(J) (or J.copy())'),
    Call('lazy-matrix-out', lambda tmp: np.add(np.ones((10, 6)), 1.0, out=jaccli.jacobian(tall, X6).matrix),
         TypeError, None,
         'a lazy MatrixView is read-only: np.add(..., out=J) would change its entries; do it on a copy, A = '
         'np.array(J) (or J.copy())'),
    Call('matrix-setitem', lambda tmp: _on(jaccli.jacobian(tall, X6).matrix, lambda M: M.__setitem__((0, 0), 1.0)),
         TypeError, None,
         'a lazy MatrixView is read-only: J[idx] = value would change its entries; do it on a copy, A = '
         'np.array(J) (or J.copy())'),
    Call('matrix-sort', lambda tmp: jaccli.jacobian(tall, X6).matrix.sort(),
         TypeError, None,
         'a lazy MatrixView is read-only: J.sort() would change its entries; do it on a copy, A = np.array(J) '
         '(or J.copy())'),

]

# ---------------------------------------------------------------- tracing f (test_tracing); {site} is a file:line
_READ_ONLY = np.arange(3.0)
_READ_ONLY.flags.writeable = False


def _writes_read_only(x):
    y = x * np.ones(3)
    getattr(_READ_ONLY, "__setitem__")(0, 1.0)  # read-only by the caller, while jaccli holds another array
    return y


def _changes_c(x):
    c = np.array([1.0, 2.0, 3.0])
    y = np.sum(x * x * c)
    c *= 2.0
    return y


def _changes_c_after_use(x):
    c = np.ones(3)
    y = x + c
    c[:] = 7.0
    return np.sum(y * y)


def _chained_update(x):
    Z = np.zeros((2, 3)) * x[0]
    Z[0][1] += x[0]
    return Z


def _returns_x_changed_through_a_view(x):
    y = x[:2]
    y *= 2.0
    return x


def _left_behind(name):
    _, use, take_then_write = VIEWS_LEFT_BEHIND[name]

    def f(x):
        Z = np.ones((2, 3)) * x[0]
        view = take_then_write(x, Z)
        return view if use == "return" else np.sum(view) * Z[0, 0]
    return f


def _writes_out(write):
    def f(x):
        buf = np.zeros(3)
        write(x, buf)
        return buf * x
    return f


OUT_WRITES = {"sum-keyword": lambda x, buf: np.sum(x, keepdims=True, out=buf[:1]),
              "clip-positional": lambda x, buf: np.clip(x, 0.0, 1.0, buf),
              "mean": lambda x, buf: np.mean(x, axis=0, out=buf[0]),
              "cumsum": lambda x, buf: np.cumsum(x, out=buf)}
METHODS = {"compress": lambda x: x.compress([True, False, True]), "searchsorted": lambda x: x + x.searchsorted(2.0),
           "resize": lambda x: x.resize(6), "flags": lambda x: x * x.flags.writeable, "view": lambda x: x.view()}


def _strided_cubes(x):
    return np.sum(np.lib.stride_tricks.as_strided(x, shape=(2, 2), strides=(8, 8)) ** 3)


def _traced_arange(x):
    return np.arange(0.0, x[0], 0.5) * 1.0


X013 = np.array([0.1, 0.2, 0.3])
TRACING = [
    Call('read-only-while-held', lambda tmp: Recording(_writes_read_only, [np.ones(3)], [0]),
         TracingError, 'escaped_tracing',
         '{site}: an array is changed in place, and it is read-only after f handed it to a NumPy operation on '
         'traced values; jaccli keeps such arrays for the derivative (as PyTorch keeps saved tensors), so '
         'they stay read-only while f runs (unless the array was read-only already); change a copy instead (a '
         '= a.copy() before the change), or make a new array'),
    Call('changed-in-place-hessian', lambda tmp: np.asarray(jaccli.hessian(_changes_c, np.ones(3))),
         TracingError, 'escaped_tracing',
         "{site}: 'c' is changed in place after f handed it to a NumPy operation on traced values; jaccli "
         'keeps such arrays for the derivative (as PyTorch keeps saved tensors), so they stay read-only while '
         'f runs; change a copy instead (c = c.copy() before the change)'),
    Call('changed-in-place-replay', lambda tmp: jaccli.grad(jaccli.record_once(_changes_c_after_use), np.zeros(3)),
         TracingError, 'escaped_tracing',
         "{site}: 'c' is changed in place after f handed it to a NumPy operation on traced values; jaccli "
         'keeps such arrays for the derivative (as PyTorch keeps saved tensors), so they stay read-only while '
         'f runs; change a copy instead (c = c.copy() before the change)'),
    Call('view-write-chained index', lambda tmp: Recording(VIEW_WRITES['chained index'][1], [X013], [0]),
         TracingError, 'escaped_tracing',
         '{site}: an array is changed here through a view of it (like Z[0][1] = v, or row = Z[1]; row += v), '
         'and f returns it; jaccli does not carry such writes back to the array: write into it with one index '
         '(Z[0, 1] = v, Z[1] += v), or copy the view first (row = Z[1].copy())'),
    Call('view-write-reshape view', lambda tmp: Recording(VIEW_WRITES['reshape view'][1], [X013], [0]),
         TracingError, 'escaped_tracing',
         '{site}: an array is changed here through a view of it (like Z[0][1] = v, or row = Z[1]; row += v), '
         'and f returns it; jaccli does not carry such writes back to the array: write into it with one index '
         '(Z[0, 1] = v, Z[1] += v), or copy the view first (row = Z[1].copy())'),
    Call('view-write-row view, in place', lambda tmp: Recording(VIEW_WRITES['row view, in place'][1], [X013], [0]),
         TracingError, 'escaped_tracing',
         '{site}: an array is changed here through a view of it (like Z[0][1] = v, or row = Z[1]; row += v), '
         'and f returns it; jaccli does not carry such writes back to the array: write into it with one index '
         '(Z[0, 1] = v, Z[1] += v), or copy the view first (row = Z[1].copy())'),
    Call('view-write-transpose view', lambda tmp: Recording(VIEW_WRITES['transpose view'][1], [X013], [0]),
         TracingError, 'escaped_tracing',
         '{site}: an array is changed here through a view of it (like Z[0][1] = v, or row = Z[1]; row += v), '
         'and f returns it; jaccli does not carry such writes back to the array: write into it with one index '
         '(Z[0, 1] = v, Z[1] += v), or copy the view first (row = Z[1].copy())'),
    Call('view-write-used-afterwards-chained index',
         lambda tmp: np.asarray(jaccli.hessian(lambda x: np.sum(VIEW_WRITES['chained index'][1](x) ** 2), X013)),
         TracingError, 'escaped_tracing',
         '{site}: an array is changed here through a view of it (like Z[0][1] = v, or row = Z[1]; row += v), '
         'and it is used afterwards at {site}; jaccli does not carry such writes back to the array: write '
         'into it with one index (Z[0, 1] = v, Z[1] += v), or copy the view first (row = Z[1].copy())'),
    Call('view-write-used-afterwards-reshape view',
         lambda tmp: np.asarray(jaccli.hessian(lambda x: np.sum(VIEW_WRITES['reshape view'][1](x) ** 2), X013)),
         TracingError, 'escaped_tracing',
         '{site}: an array is changed here through a view of it (like Z[0][1] = v, or row = Z[1]; row += v), '
         'and it is used afterwards at {site}; jaccli does not carry such writes back to the array: write '
         'into it with one index (Z[0, 1] = v, Z[1] += v), or copy the view first (row = Z[1].copy())'),
    Call('view-write-used-afterwards-row view, in place',
         lambda tmp: np.asarray(jaccli.hessian(lambda x: np.sum(VIEW_WRITES['row view, in place'][1](x) ** 2), X013)),
         TracingError, 'escaped_tracing',
         '{site}: an array is changed here through a view of it (like Z[0][1] = v, or row = Z[1]; row += v), '
         'and it is used afterwards at {site}; jaccli does not carry such writes back to the array: write '
         'into it with one index (Z[0, 1] = v, Z[1] += v), or copy the view first (row = Z[1].copy())'),
    Call('view-write-used-afterwards-transpose view',
         lambda tmp: np.asarray(jaccli.hessian(lambda x: np.sum(VIEW_WRITES['transpose view'][1](x) ** 2), X013)),
         TracingError, 'escaped_tracing',
         '{site}: an array is changed here through a view of it (like Z[0][1] = v, or row = Z[1]; row += v), '
         'and it is used afterwards at {site}; jaccli does not carry such writes back to the array: write '
         'into it with one index (Z[0, 1] = v, Z[1] += v), or copy the view first (row = Z[1].copy())'),
    Call('chained-update', lambda tmp: Recording(_chained_update, [X013], [0]),
         TracingError, 'escaped_tracing',
         '{site}: an array is changed here through a view of it (like Z[0][1] = v, or row = Z[1]; row += v), '
         'and f returns it; jaccli does not carry such writes back to the array: write into it with one index '
         '(Z[0, 1] = v, Z[1] += v), or copy the view first (row = Z[1].copy())'),
    Call('view-changes-x', lambda tmp: Recording(_returns_x_changed_through_a_view, [X013], [0]),
         TracingError, 'escaped_tracing',
         '{site}: an array is changed here through a view of it (like Z[0][1] = v, or row = Z[1]; row += v), '
         'and f returns it; jaccli does not carry such writes back to the array: write into it with one index '
         '(Z[0, 1] = v, Z[1] += v), or copy the view first (row = Z[1].copy())'),
    Call('view-left-behind-advanced index', lambda tmp: Recording(_left_behind('advanced index'), [X013], [0]),
         TracingError, 'escaped_tracing',
         '{site}: an array is changed here, but a view of it taken before (like row = Z[1]; Z[1, 0] = v) '
         'keeps its old values in jaccli, and it is used afterwards at {site}: take the view after the write, '
         'or copy it before (row = Z[1].copy()) if the old values are meant'),
    Call('view-left-behind-row, then one entry',
         lambda tmp: Recording(_left_behind('row, then one entry'), [X013], [0]),
         TracingError, 'escaped_tracing',
         '{site}: an array is changed here, but a view of it taken before (like row = Z[1]; Z[1, 0] = v) '
         'keeps its old values in jaccli, and it is used afterwards at {site}: take the view after the write, '
         'or copy it before (row = Z[1].copy()) if the old values are meant'),
    Call('view-left-behind-sibling view, in place',
         lambda tmp: Recording(_left_behind('sibling view, in place'), [X013], [0]),
         TracingError, 'escaped_tracing',
         '{site}: an array is changed here, but a view of it taken before (like row = Z[1]; Z[1, 0] = v) '
         'keeps its old values in jaccli, and it is used afterwards at {site}: take the view after the write, '
         'or copy it before (row = Z[1].copy()) if the old values are meant'),
    Call('view-left-behind-transpose, then a row',
         lambda tmp: Recording(_left_behind('transpose, then a row'), [X013], [0]),
         TracingError, 'escaped_tracing',
         '{site}: an array is changed here, but a view of it taken before (like row = Z[1]; Z[1, 0] = v) '
         'keeps its old values in jaccli, and f returns it: take the view after the write, or copy it before '
         '(row = Z[1].copy()) if the old values are meant'),
    Call('view-left-behind-whole array, in place',
         lambda tmp: Recording(_left_behind('whole array, in place'), [X013], [0]),
         TracingError, 'escaped_tracing',
         '{site}: an array is changed here, but a view of it taken before (like row = Z[1]; Z[1, 0] = v) '
         'keeps its old values in jaccli, and it is used afterwards at {site}: take the view after the write, '
         'or copy it before (row = Z[1].copy()) if the old values are meant'),
    Call('view-left-behind-hessian-advanced index',
         lambda tmp: np.asarray(jaccli.hessian(lambda x: np.sum(_left_behind('advanced index')(x) ** 2), X013)),
         TracingError, 'escaped_tracing',
         '{site}: an array is changed here, but a view of it taken before (like row = Z[1]; Z[1, 0] = v) '
         'keeps its old values in jaccli, and it is used afterwards at {site}: take the view after the write, '
         'or copy it before (row = Z[1].copy()) if the old values are meant'),
    Call('view-left-behind-hessian-row, then one entry',
         lambda tmp: np.asarray(jaccli.hessian(lambda x: np.sum(_left_behind('row, then one entry')(x) ** 2), X013)),
         TracingError, 'escaped_tracing',
         '{site}: an array is changed here, but a view of it taken before (like row = Z[1]; Z[1, 0] = v) '
         'keeps its old values in jaccli, and it is used afterwards at {site}: take the view after the write, '
         'or copy it before (row = Z[1].copy()) if the old values are meant'),
    Call('view-left-behind-hessian-sibling view, in place',
         lambda tmp: np.asarray(jaccli.hessian(lambda x: np.sum(_left_behind('sibling view, in place')(x) ** 2), X013)),
         TracingError, 'escaped_tracing',
         '{site}: an array is changed here, but a view of it taken before (like row = Z[1]; Z[1, 0] = v) '
         'keeps its old values in jaccli, and it is used afterwards at {site}: take the view after the write, '
         'or copy it before (row = Z[1].copy()) if the old values are meant'),
    Call('view-left-behind-hessian-transpose, then a row',
         lambda tmp: np.asarray(jaccli.hessian(lambda x: np.sum(_left_behind('transpose, then a row')(x) ** 2), X013)),
         TracingError, 'escaped_tracing',
         '{site}: an array is changed here, but a view of it taken before (like row = Z[1]; Z[1, 0] = v) '
         'keeps its old values in jaccli, and it is used afterwards at {site}: take the view after the write, '
         'or copy it before (row = Z[1].copy()) if the old values are meant'),
    Call('view-left-behind-hessian-whole array, in place',
         lambda tmp: np.asarray(jaccli.hessian(lambda x: np.sum(_left_behind('whole array, in place')(x) ** 2), X013)),
         TracingError, 'escaped_tracing',
         '{site}: an array is changed here, but a view of it taken before (like row = Z[1]; Z[1, 0] = v) '
         'keeps its old values in jaccli, and it is used afterwards at {site}: take the view after the write, '
         'or copy it before (row = Z[1].copy()) if the old values are meant'),
    Call('out-sum-keyword',
         lambda tmp: Recording(_writes_out(OUT_WRITES['sum-keyword']), [np.array([0.3, 1.2, -0.7])], [0]),
         TracingError, 'escaped_tracing',
         '{site}: np.sum(..., out=...) writes into an existing array; write `y = np.sum(...)` instead'),
    Call('out-clip-positional',
         lambda tmp: Recording(_writes_out(OUT_WRITES['clip-positional']), [np.array([0.3, 1.2, -0.7])], [0]),
         TracingError, 'escaped_tracing',
         '{site}: np.clip(..., out=...) writes into an existing array; write `y = np.clip(...)` instead'),
    Call('out-mean', lambda tmp: Recording(_writes_out(OUT_WRITES['mean']), [np.array([0.3, 1.2, -0.7])], [0]),
         TracingError, 'escaped_tracing',
         '{site}: np.mean(..., out=...) writes into an existing array; write `y = np.mean(...)` instead'),
    Call('out-cumsum', lambda tmp: Recording(_writes_out(OUT_WRITES['cumsum']), [np.array([0.3, 1.2, -0.7])], [0]),
         TracingError, 'escaped_tracing',
         '{site}: np.cumsum(..., out=...) writes into an existing array; write `y = np.cumsum(...)` instead'),
    Call('method-compress', lambda tmp: jaccli.jacobian(METHODS['compress'], np.array([1.0, 2.0, 3.0])),
         UnsupportedOperationError, 'unsupported_operation',
         '{site}: x.compress of a traced array is not supported by jaccli; np.compress is: write '
         'np.compress(...) instead'),
    Call('method-searchsorted', lambda tmp: jaccli.jacobian(METHODS['searchsorted'], np.array([1.0, 2.0, 3.0])),
         UnsupportedOperationError, 'unsupported_operation',
         '{site}: x.searchsorted of a traced array is not supported by jaccli; np.searchsorted is: write '
         'np.searchsorted(...) instead'),
    Call('method-resize', lambda tmp: jaccli.jacobian(METHODS['resize'], np.array([1.0, 2.0, 3.0])),
         UnsupportedOperationError, 'unsupported_operation',
         "{site}: x.resize of a traced array is not supported by jaccli; see 'jaccli ops' for what is"),
    Call('method-flags', lambda tmp: jaccli.jacobian(METHODS['flags'], np.array([1.0, 2.0, 3.0])),
         UnsupportedOperationError, 'unsupported_operation',
         "{site}: x.flags of a traced array is not supported by jaccli; see 'jaccli ops' for what is"),
    Call('method-view', lambda tmp: jaccli.jacobian(METHODS['view'], np.array([1.0, 2.0, 3.0])),
         UnsupportedOperationError, 'unsupported_operation',
         "{site}: x.view of a traced array is not supported by jaccli; see 'jaccli ops' for what is"),
    Call('as-strided-hessian', lambda tmp: jaccli.hessian(_strided_cubes, X013)[0],
         TracingError, 'escaped_tracing',
         "{site}: np.lib.stride_tricks.as_strided reads a traced array's memory outside jaccli's recording, "
         'so it cannot be differentiated; use np.lib.stride_tricks.sliding_window_view for windows, or '
         'indexing (x[::2], x[i:j], x[idx]) for other views'),
    Call('arange-traced-bound', lambda tmp: jaccli.jacobian(_traced_arange, np.array([2.0])),
         UnsupportedOperationError, 'unsupported_operation',
         '{site}: np.arange with a traced start, stop or step is not supported by jaccli: its length would '
         'depend on the input; take the bounds from plain values, or write start + step * np.arange(n) with a '
         'plain n (or np.linspace(start, stop, n))'),
]

# ---------------------------------------------------------------- NumPy's variants jaccli refuses (test_numerics)
XP, FP = np.linspace(-3.0, 3.0, 8), np.cos(np.arange(8.0))
X7 = np.linspace(-1.0, 1.0, 7)
NUMERICS = [
    Call("quantile-nearest", lambda tmp: Recording(lambda x: np.quantile(x, 0.5, method="nearest"), (X7,), (0,)),
         UnsupportedOperationError, "unsupported_operation",
         "{site}: np.quantile with method='nearest' is not supported by jaccli; only method='linear' is; see "
         "'jaccli ops'"),
    Call("percentile-lower", lambda tmp: Recording(lambda x: np.percentile(x, 50, method="lower"), (X7,), (0,)),
         UnsupportedOperationError, "unsupported_operation",
         "{site}: np.percentile with method='lower' is not supported by jaccli; only method='linear' is; see "
         "'jaccli ops'"),
    Call("quantile-weights",
         lambda tmp: Recording(lambda x: np.quantile(x, 0.5, method="inverted_cdf", weights=np.ones(7)), (X7,), (0,)),
         UnsupportedOperationError, "unsupported_operation",
         '{site}: np.quantile with weights is not supported by jaccli'),
    Call("interp-traced-period", lambda tmp: Recording(lambda x: np.interp(x, XP, FP, period=x[0] + 2.0), (X7,), (0,)),
         UnsupportedOperationError, "unsupported_operation",
         '{site}: np.interp with a traced period is not supported by jaccli; pass the period as a plain number'),
    Call("interp-complex", lambda tmp: Recording(lambda x: np.interp(x, XP, FP + 1j), (X7,), (0,)),
         UnsupportedOperationError, "unsupported_operation",
         '{site}: np.interp with complex fp is not supported by jaccli; interpolate the real and imaginary '
         'parts separately'),
    Call("convolve-complex", lambda tmp: Recording(lambda x: np.convolve(x, [1.0, 1j]), (X7,), (0,)),
         UnsupportedOperationError, "unsupported_operation",
         '{site}: np.convolve of complex arrays is not supported by jaccli; split them into real and '
         'imaginary parts'),
    Call("polyval-poly1d", lambda tmp: Recording(lambda x: np.polyval(x, np.poly1d([1.0, 2.0])), (X7,), (0,)),
         UnsupportedOperationError, "unsupported_operation",
         '{site}: np.polyval of a np.poly1d x (a composition of polynomials) is not supported by jaccli; '
         'evaluate at an array of points'),
    Call("median-out", lambda tmp: Recording(lambda x: np.median(x, out=np.empty(())), (X7,), (0,)),
         TracingError, "escaped_tracing",
         '{site}: np.median(..., out=...) writes into an existing array; write `y = np.median(...)` instead'),
    Call("percentile-out", lambda tmp: Recording(lambda x: np.percentile(x, 50, out=np.empty(())), (X7,), (0,)),
         TracingError, "escaped_tracing",
         '{site}: np.percentile(..., out=...) writes into an existing array; write `y = np.percentile(...)` '
         'instead'),
]

# ---------------------------------------------------------------- rules that refuse (test_rules, test_scipy_special)
X4 = np.array([0.4, -1.3, 2.6, -0.2])


def _written_into_a_row_view(v):
    R = np.zeros((2, 4))
    row = R[0]
    row[1] = v[0]
    return R


def _solved_by_odeint(v):
    from scipy.integrate import odeint

    return odeint(lambda y, t: -v[0] * y, np.ones(1), [0.0, 1.0])
WHERE = np.array([True, False, True, True])
X12 = np.array([1.5, 2.5])
RULES = [
    Call("composed-where-copysign", lambda tmp: jaccli.jacobian(lambda v: _COMPOSED["copysign"][1](v, where=WHERE), X4),
         UnsupportedOperationError, "unsupported_operation",
         '{site}: np.copysign with where= is not supported by jaccli (NumPy leaves the entries outside the '
         'mask undefined without out=); write np.where(mask, np.copysign(...), fill)'),
    Call("composed-where-copysign-sign", lambda tmp: jaccli.jacobian(lambda v: _COMPOSED["copysign-sign"][1](v, where=WHERE), X4),
         UnsupportedOperationError, "unsupported_operation",
         '{site}: np.copysign with where= is not supported by jaccli (NumPy leaves the entries outside the '
         'mask undefined without out=); write np.where(mask, np.copysign(...), fill)'),
    Call("composed-where-divmod", lambda tmp: jaccli.jacobian(lambda v: _COMPOSED["divmod"][1](v, where=WHERE), X4),
         UnsupportedOperationError, "unsupported_operation",
         '{site}: np.divmod with where= is not supported by jaccli (NumPy leaves the entries outside the mask '
         'undefined without out=); write np.where(mask, np.divmod(...), fill)'),
    Call("composed-where-modf", lambda tmp: jaccli.jacobian(lambda v: _COMPOSED["modf"][1](v, where=WHERE), X4),
         UnsupportedOperationError, "unsupported_operation",
         '{site}: np.modf with where= is not supported by jaccli (NumPy leaves the entries outside the mask '
         'undefined without out=); write np.where(mask, np.modf(...), fill)'),
    Call("composed-where-frexp", lambda tmp: jaccli.jacobian(lambda v: _COMPOSED["frexp"][1](v, where=WHERE), X4),
         UnsupportedOperationError, "unsupported_operation",
         '{site}: np.frexp with where= is not supported by jaccli (NumPy leaves the entries outside the mask '
         'undefined without out=); write np.where(mask, np.frexp(...), fill)'),
    Call("composed-where-conjugate", lambda tmp: jaccli.jacobian(lambda v: _COMPOSED["conjugate"][1](v, where=WHERE), X4),
         UnsupportedOperationError, "unsupported_operation",
         '{site}: np.conjugate with where= is not supported by jaccli (NumPy leaves the entries outside the '
         'mask undefined without out=); write np.where(mask, np.conjugate(...), fill)'),
    Call("composed-where-heaviside", lambda tmp: jaccli.jacobian(lambda v: _COMPOSED["heaviside"][1](v, where=WHERE), X4),
         UnsupportedOperationError, "unsupported_operation",
         '{site}: np.heaviside with where= is not supported by jaccli (NumPy leaves the entries outside the '
         'mask undefined without out=); write np.where(mask, np.heaviside(...), fill)'),
    Call("multiply-at-plain-target",
         lambda tmp: np.asarray(jaccli.jacobian(lambda v: _multiply_at(np.ones(3), [0, 0], v), np.array([0.5, 1.5, -2.0]))),
         TracingError, "escaped_tracing",
         '{site}: np.multiply.at writes a traced value into a plain NumPy array, which takes it out of '
         "jaccli's recording; start from a traced array instead (out = np.zeros_like(x), then "
         'np.multiply.at(out, idx, v))'),
    Call("traced-write-into-a-view-of-a-made-array", lambda tmp: jaccli.jacobian(_written_into_a_row_view, X4),
         TracingError, "escaped_tracing",
         "{site}: a traced value is written into a view of an array (like row = r[0]; row[1] = v, or r.T[0] = v), "
         "which jaccli does not carry back to the array; write into the array itself with one index (r[0, 1] = v)"),
    Call("installed-package-converts", lambda tmp: jaccli.jacobian(_solved_by_odeint, X4),
         TracingError, "escaped_tracing",
         "{site}: scipy.integrate.odeint, an installed package's function, converts f's traced values to plain "
         "NumPy arrays: this takes them out of jaccli's recording, so their derivative is lost; write what "
         "scipy.integrate.odeint computes with NumPy in your own code (f's module or a module of yours it imports, "
         "where jaccli records it), or call it on plain values only"),
    Call("float-of-a-traced-value", lambda tmp: jaccli.jacobian(lambda v: v * float(v[0]), X4),
         TracingError, "escaped_tracing",
         "{site}: float() takes a traced value out of jaccli's recording, so its derivative is lost; keep values as "
         "arrays and use NumPy functions (np.sin, not math.sin); for a count or an index (a loop bound, a table's "
         "row), int(x[0]) is taken as a constant"),
    Call("scipy-zetac", lambda tmp: Recording(lambda x: sp.zetac(x), (X12,), (0,)),
         UnsupportedOperationError, "unsupported_operation",
         "{site}: scipy.special.zetac is not supported by jaccli; write it with NumPy functions; see 'jaccli "
         "ops'"),
    Call("scipy-polygamma-traced-order", lambda tmp: Recording(lambda x: sp.polygamma(x, x), (X12,), (0,)),
         UnsupportedOperationError, "unsupported_operation",
         "scipy.special.polygamma: the order n must be a plain integer (it has no derivative); see 'jaccli "
         "ops'"),
    Call("scipy-iv-order-reverse",
         lambda tmp: np.asarray(jaccli.jacobian(lambda v: sp.iv(v, 1.5), X12, mode="reverse")),
         UnsupportedOperationError, "unsupported_operation",
         "{site}: scipy.special.iv has no reverse-mode derivative with respect to its argument 0; see 'jaccli "
         "ops' for what each function supports"),
    Call("scipy-iv-order-forward",
         lambda tmp: np.asarray(jaccli.jacobian(lambda v: sp.iv(v, 1.5), X12, mode="forward")),
         UnsupportedOperationError, "unsupported_operation",
         "{site}: scipy.special.iv has no forward-mode derivative with respect to its argument 0; see 'jaccli "
         "ops' for what each function supports"),
    Call("scipy-gammainc-shape", lambda tmp: np.asarray(jaccli.jacobian(lambda a: sp.gammainc(a, 1.5), np.array([1.2, 2.5]))),
         UnsupportedOperationError, "unsupported_operation",
         '{site}: scipy.special.gammainc has no forward-mode derivative with respect to its argument 0; see '
         "'jaccli ops' for what each function supports"),
    Call("scipy-betainc-shape",
         lambda tmp: np.asarray(jaccli.jacobian(lambda a: sp.betainc(a, 2.0, 0.3), np.array([1.2, 2.5]))),
         UnsupportedOperationError, "unsupported_operation",
         '{site}: scipy.special.betainc has no forward-mode derivative with respect to its argument 0; see '
         "'jaccli ops' for what each function supports"),
    Call("scipy-boxcox-shape", lambda tmp: np.asarray(jaccli.jacobian(lambda lam: sp.boxcox(1.5, lam), np.array([1.2, 2.5]))),
         UnsupportedOperationError, "unsupported_operation",
         '{site}: scipy.special.boxcox has no forward-mode derivative with respect to its argument 1; see '
         "'jaccli ops' for what each function supports"),
    Call("scipy-stats-cdf-shape", lambda tmp: jaccli.jacobian(lambda a: scipy.stats.gamma.cdf(1.5, a), X12),
         UnsupportedOperationError, "unsupported_operation",
         "{site}: scipy.stats.gamma.cdf has no derivative with respect to its shape parameter a in jaccli: SciPy's "
         "incomplete gamma and beta functions have none in it; pass it as a plain value (the logpdf differentiates "
         "in every parameter)"),
    Call("scipy-stats-binom-n", lambda tmp: jaccli.jacobian(lambda n: scipy.stats.binom.logpmf(2, n, 0.3), X12 + 5.0),
         UnsupportedOperationError, "unsupported_operation",
         "{site}: scipy.stats.binom.logpmf has no derivative with respect to its shape parameter n in jaccli: it is "
         "an integer; pass it as a plain value"),
    Call("scipy-stats-poisson-k", lambda tmp: jaccli.jacobian(lambda k: scipy.stats.poisson.pmf(k, 2.0), X12),
         UnsupportedOperationError, "unsupported_operation",
         "{site}: scipy.stats.poisson.pmf: k is an integer, with no derivative; pass it as a plain value"),
    Call("scipy-stats-frozen-rvs", lambda tmp: jaccli.jacobian(lambda m: scipy.stats.norm(m).rvs(), X12),
         UnsupportedOperationError, "unsupported_operation",
         "{site}: scipy.stats.norm(...).rvs with traced parameters is not differentiable in jaccli; supported: "
         "logpdf, pdf, cdf, logcdf, sf, logsf; see 'jaccli ops'"),
    Call("scipy-sqrtm-complex", lambda tmp: jaccli.jacobian(lambda a: scipy.linalg.sqrtm(-a), np.eye(2)),
         UnsupportedOperationError, "unsupported_operation",
         "{site}: scipy.linalg.sqrtm of this matrix is complex (it has negative or complex eigenvalues); jaccli "
         "differentiates real square roots only: pass a matrix whose eigenvalues are positive"),
    Call("np-r-directive", lambda tmp: jaccli.jacobian(lambda x: np.r_["0,2", x, x], X12),
         UnsupportedOperationError, "unsupported_operation",
         "{site}: np.r_[...] with a directive string and traced values is not supported by jaccli; write "
         "np.concatenate([...], axis=...) or np.stack([...], axis=...)"),
    Call("np-c-traced-range", lambda tmp: jaccli.jacobian(lambda x: np.c_[x, 0:x[0]], X12),
         UnsupportedOperationError, "unsupported_operation",
         "{site}: np.c_[...] with a traced bound and traced values is not supported by jaccli; write "
         "np.concatenate([...], axis=...) or np.stack([...], axis=...)"),
]


# ---------------------------------------------------------------- user functions, input arrays, binding (test_loaders)
def _write(tmp, name, text):
    (tmp / name).write_text(text)
    return str(tmp / name)


def _saved(tmp, name, *arrays, **named):
    path = tmp / name
    (np.savez if name.endswith(".npz") else np.save)(path, *arrays, **named)
    return str(path)


def _cut(tmp, name, keep):
    _saved(tmp, "full" + name[-4:], *([np.arange(10.0)] if name.endswith(".npy") else []),
           **({"a": np.arange(50.0), "b": np.ones(3)} if name.endswith(".npz") else {}))
    (tmp / name).write_bytes((tmp / ("full" + name[-4:])).read_bytes()[:keep])
    return str(tmp / name)


def _broken_npy(tmp, in_npz):
    header = b"{'descr': '<f8', 'fortran_order': False}".ljust(117) + b"\n"
    data = b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header
    if not in_npz:
        (tmp / "x.npy").write_bytes(data)
        return str(tmp / "x.npy")
    import zipfile

    with zipfile.ZipFile(tmp / "a.npz", "w") as archive:
        archive.writestr("x.npy", data)
    return str(tmp / "a.npz")


def _sibling_broken(tmp):
    _write(tmp, "broken_helper.py", "X = 1 / 0\n")
    return _write(tmp, "m.py", "\nimport broken_helper\ndef f(x): pass\n")


def _pickle_npy(tmp):
    (tmp / "x.npy").write_bytes(pickle.dumps([1, 2]))
    return str(tmp / "x.npy")


def two_inputs(x, y):
    return x


def with_default(x, y, scale=1.0):
    return x


def one(x):
    return x


def none():
    return 0


LOADERS = [
    Call("load-function-none", lambda tmp: load_function(_write(tmp, "x.py", "import numpy as np\nA = 1\n")),
         UsageError, "usage",
         '{tmp}/x.py defines no functions; write def f(...) in it or pick a callable with {tmp}/x.py:NAME'),
    Call("load-function-not-callable", lambda tmp: load_function(_write(tmp, "m.py", "SCALE = 3\ndef f(x): pass\n") + ":SCALE"),
         UsageError, "usage",
         '{tmp}/m.py:SCALE is not a function (it has type int); its public functions are f'),
    Call("load-function-bad-name", lambda tmp: load_function(_write(tmp, "m.py", "def f(x): pass\n") + ":1x"),
         UsageError, "usage",
         "bad function name '1x' in '{tmp}/m.py:1x'; FUNC is path.py or path.py:name"),
    Call("load-function-exec-syntax-error", lambda tmp: load_function(_write(tmp, "m.py", "\nexec('1 +')\ndef f(x): pass\n")),
         UserFunctionError, "function_failed",
         '{tmp}/m.py:2: running {tmp}/m.py failed: SyntaxError: {any}'),
    Call("load-function-failing-import",
         lambda tmp: load_function(_write(tmp, "m.py", "import numpy\nimport no_such_module_jaccli\ndef f(x): pass\n")),
         UserFunctionError, "function_failed",
         '{tmp}/m.py:2: running {tmp}/m.py failed: ModuleNotFoundError: No module named '
         "'no_such_module_jaccli'"),
    Call("load-function-sibling-fails", lambda tmp: load_function(_sibling_broken(tmp)),
         UserFunctionError, "function_failed",
         '{tmp}/m.py:2: running {tmp}/m.py failed: ZeroDivisionError: division by zero'),
    Call("load-function-system-exit", lambda tmp: load_function(_write(tmp, "m.py", "import sys\nsys.exit(3)\n")),
         UserFunctionError, "function_failed",
         '{tmp}/m.py:2: running {tmp}/m.py failed: SystemExit: 3'),
    Call("load-function-raises", lambda tmp: load_function(_write(tmp, "m.py", "raise RuntimeError('boom')\n")),
         UserFunctionError, "function_failed",
         '{tmp}/m.py:1: running {tmp}/m.py failed: RuntimeError: boom'),
    Call("literal-power", lambda tmp: load_array("[2 ** 70]"), UsageError, "usage",
         "cannot read input '[2 ** 70]': binop expressions are not numbers; give a number, a list of numbers "
         'or a file (.npy, .npz, .csv, .txt, .dat)'),
    Call("literal-ragged", lambda tmp: load_array("[1, [2, 3]]"), UsageError, "usage",
         "cannot read input '[1, [2, 3]]': it is a ragged list (rows of different lengths)"),
    Call("literal-ragged-rows", lambda tmp: load_array("[[1, 2], [3]]"), UsageError, "usage",
         "cannot read input '[[1, 2], [3]]': it is a ragged list (rows of different lengths)"),
    Call("literal-string", lambda tmp: load_array("'abc'"), UsageError, "usage",
         'cannot read input "\'abc\'": \'abc\' is not a number; give a number, a list of numbers or a file (.npy, '
         '.npz, .csv, .txt, .dat)'),
    Call("literal-dict", lambda tmp: load_array("{'a': 1}"), UsageError, "usage",
         'cannot read input "{\'a\': 1}": dict expressions are not numbers; give a number, a list of numbers or '
         'a file (.npy, .npz, .csv, .txt, .dat)'),
    Call("literal-complex", lambda tmp: load_array("1+2j"), UsageError, "usage",
         "cannot read input '1+2j': complex inputs are not supported; give a number, a list of numbers or a "
         'file (.npy, .npz, .csv, .txt, .dat)'),
    Call("literal-complex-list", lambda tmp: load_array("[2j]"), UsageError, "usage",
         "cannot read input '[2j]': complex inputs are not supported; give a number, a list of numbers or a "
         'file (.npy, .npz, .csv, .txt, .dat)'),
    Call("literal-bool", lambda tmp: load_array("[True, 1]"), UsageError, "usage",
         "cannot read input '[True, 1]': True is not a number; give a number, a list of numbers or a file "
         '(.npy, .npz, .csv, .txt, .dat)'),
    Call("literal-name", lambda tmp: load_array("foo"), UsageError, "usage",
         "cannot read input 'foo': foo is not a number; give a number, a list of numbers or a file (.npy, "
         '.npz, .csv, .txt, .dat)'),
    Call("literal-call", lambda tmp: load_array("__import__('os')"), UsageError, "usage",
         'cannot read input "__import__(\'os\')": call expressions are not numbers; give a number, a list of '
         'numbers or a file (.npy, .npz, .csv, .txt, .dat)'),
    Call("literal-unclosed", lambda tmp: load_array("[1, 2"), UsageError, "usage",
         "cannot read input '[1, 2': not a number or list of numbers; give a number, a list of numbers or a "
         'file (.npy, .npz, .csv, .txt, .dat)'),
    Call("literal-signed-list", lambda tmp: load_array("-[1]"), UsageError, "usage",
         "cannot read input '-[1]': a sign applies to numbers, not to lists; give a number, a list of numbers "
         'or a file (.npy, .npz, .csv, .txt, .dat)'),
    Call("literal-empty", lambda tmp: load_array(""), UsageError, "usage",
         'empty input; give a file (.npy, .npz, .csv, .txt, .dat) or a number or list'),
    Call("input-file-json", lambda tmp: load_array(_write(tmp, "x.json", "[1, 2]")), UsageError, "usage",
         'cannot read input file {tmp}/x.json: jaccli reads .npy, .npz, .csv, .txt, .dat files'),
    Call("input-file-devnull", lambda tmp: load_array("/dev/null"), UsageError, "usage",
         'cannot read input file /dev/null: jaccli reads .npy, .npz, .csv, .txt, .dat files'),
    Call("input-file-stdin", lambda tmp: load_array("/dev/stdin"), UsageError, "usage",
         'cannot read input file /dev/stdin: jaccli reads .npy, .npz, .csv, .txt, .dat files'),
    Call("input-file-directory", lambda tmp: ((tmp / "d.npy").mkdir(), load_array(str(tmp / "d.npy"))),
         UsageError, "usage",
         'input {tmp}/d.npy is a directory, not a file'),
    Call("npy-empty", lambda tmp: load_array(_cut(tmp, "cut.npy", 0)), UsageError, "usage",
         '{tmp}/cut.npy is not a valid .npy file ({any})'),
    Call("npy-broken-header", lambda tmp: load_array(_broken_npy(tmp, False)), UsageError, "usage",
         '{tmp}/x.npy is not a valid .npy file ({any})'),
    Call("npz-member-broken-header", lambda tmp: load_array(_broken_npy(tmp, True)), UsageError, "usage",
         "{tmp}/a.npz: member 'x.npy' is not a valid .npy array ({any}); save the archive again"),
    Call("npy-truncated", lambda tmp: load_array(_cut(tmp, "cut.npy", -8)), UsageError, "usage",
         '{tmp}/cut.npy is not a valid .npy file: it is truncated (its header promises 80 bytes of data, the '
         'file holds 72)'),
    Call("npy-pickle", lambda tmp: load_array(_pickle_npy(tmp)), UsageError, "usage",
         '{tmp}/x.npy is not a valid .npy file ({any})'),
    Call("npy-complex", lambda tmp: load_array(_saved(tmp, "x.npy", np.array([1 + 2j]))), UsageError, "usage",
         '{tmp}/x.npy holds complex numbers: complex inputs are not supported'),
    Call("npy-strings", lambda tmp: load_array(_saved(tmp, "x.npy", np.array(["a", "b"]))), UsageError, "usage",
         '{tmp}/x.npy holds <U1 values, not numbers; save a numeric array'),
    Call("npy-structured", lambda tmp: load_array(_saved(tmp, "x.npy", np.zeros(2, dtype=[("a", "f8"), ("b", "i4")]))),
         UsageError, "usage",
         '{tmp}/x.npy is a structured array (named fields); save a plain numeric array'),
    Call("npy-dates", lambda tmp: load_array(_saved(tmp, "x.npy", np.array(["2024-01-01"], dtype="datetime64[D]"))),
         UsageError, "usage",
         '{tmp}/x.npy holds datetime64[D] values, not numbers; save a numeric array'),
    Call("npz-objects",
         lambda tmp: load_array(_saved(tmp, "in.npz", good=np.ones(2), bad=np.array([None, 1], dtype=object))),
         UsageError, "usage",
         "{tmp}/in.npz: array 'bad' holds Python objects (a pickled object array); jaccli loads .npz files "
         'with allow_pickle=False for safety: save numeric arrays instead'),
    Call("npz-complex", lambda tmp: load_array(_saved(tmp, "in.npz", x=np.ones(2), z=np.array([1 + 2j]))),
         UsageError, "usage",
         "{tmp}/in.npz: array 'z' holds complex numbers: complex inputs are not supported"),
    Call("npz-truncated", lambda tmp: load_array(_cut(tmp, "cut.npz", 10)), UsageError, "usage",
         '{tmp}/cut.npz is not a valid .npz file (not a zip archive; truncated or corrupt?)'),
    Call("npz-empty", lambda tmp: load_array(_saved(tmp, "e.npz")), UsageError, "usage",
         '{tmp}/e.npz holds no arrays'),
    Call("bind-positional-reaches-named", lambda tmp: bind_inputs(with_default, ["x=1", "2", "3"]), UsageError, "usage",
         "input for parameter 'x' of with_default given twice (2 positionally and x=1); positional inputs "
         'bind to the first parameters (x, y, scale) in order: give them before naming later ones, or name '
         'every input'),
    Call("bind-named-twice", lambda tmp: bind_inputs(two_inputs, ["x=1", "x=2"]), UsageError, "usage",
         "input for parameter 'x' of two_inputs given twice (x=1 and x=2)"),
    Call("bind-several-missing", lambda tmp: bind_inputs(two_inputs, []), UsageError, "usage",
         "missing input for parameters 'x', 'y' of two_inputs: give them positionally or as x=SOURCE"),
    Call("bind-one-input", lambda tmp: bind_inputs(one, ["1", "2"]), UsageError, "usage",
         'one takes 1 input (x) but 2 were given'),
    Call("bind-no-inputs", lambda tmp: bind_inputs(none, ["1"]), UsageError, "usage",
         'none takes no inputs but 1 was given'),
    Call("bind-empty-source", lambda tmp: bind_inputs(two_inputs, ["x=", "1"]), UsageError, "usage",
         "empty source in 'x='; give x=FILE or x=VALUE"),
    Call("bind-loaded-function", lambda tmp: bind_inputs(load_function(_write(tmp, "m.py", "def energy(q, k): return q\n")),
                                                         ["1", "2", "3"]),
         UsageError, "usage",
         'energy takes 2 inputs (q, k) but 3 were given'),
    Call("bind-npz-arr0-twice", lambda tmp: bind_inputs(two_inputs, [_saved(tmp, "twice.npz", np.zeros(3), x=np.ones(2))]),
         UsageError, "usage",
         "input for parameter 'x' of two_inputs given twice ({tmp}/twice.npz[arr_0] positionally and "
         '{tmp}/twice.npz[x]); positional inputs bind to the first parameters (x, y) in order: give them '
         'before naming later ones, or name every input'),
    Call("bind-npz-keys-not-parameters",
         lambda tmp: bind_inputs(two_inputs, [_saved(tmp, "in.npz", x=np.ones(1), w=np.ones(1), b=np.ones(1))]),
         UsageError, "usage",
         '{tmp}/in.npz holds arrays w, b that are not parameters of two_inputs; its parameters are x, y'),
    Call("bind-npz-key-and-named", lambda tmp: bind_inputs(two_inputs, ["x=1", _saved(tmp, "in.npz", x=np.ones(1), y=np.ones(1))]),
         UsageError, "usage",
         "input for parameter 'x' of two_inputs given twice (x=1 and {tmp}/in.npz[x])"),
    Call("bind-named-npz-no-match",
         lambda tmp: bind_inputs(two_inputs, ["y=" + _saved(tmp, "in.npz", a=np.zeros(1), b=np.zeros(1)), "1"]),
         UsageError, "usage",
         "{tmp}/in.npz holds 2 arrays (a, b) and none is called 'y'; use a .npz with one array or with an "
         'array named y'),
    Call("bind-missing-file", lambda tmp: bind_inputs(two_inputs, ["x=nowhere/x.npy", "1"]), UsageError, "usage",
         'input file not found: nowhere/x.npy'),
    Call("index-file-mask-length", lambda tmp: parse_index_spec("@" + _saved(tmp, "r.npy", np.array([True, False])), 5),
         UsageError, "usage",
         '--rows @{tmp}/r.npy: the mask in {tmp}/r.npy has 2 entries but there are 5 rows'),
    Call("index-file-out-of-range", lambda tmp: parse_index_spec("@" + _saved(tmp, "r.npy", np.array([0, 5])), 5),
         UsageError, "usage",
         '--rows @{tmp}/r.npy: index 5 in {tmp}/r.npy is out of range for 5 rows'),
    Call("index-file-2d", lambda tmp: parse_index_spec("@" + _saved(tmp, "r.npy", np.array([[0, 1]])), 5),
         UsageError, "usage",
         '--rows @{tmp}/r.npy: index file {tmp}/r.npy holds a 2-D array; it must be 1-D'),
    Call("index-file-floats", lambda tmp: parse_index_spec("@" + _saved(tmp, "r.npy", np.array([0.5])), 5),
         UsageError, "usage",
         '--rows @{tmp}/r.npy: index file {tmp}/r.npy holds non-integer values'),
    Call("index-file-missing", lambda tmp: parse_index_spec(f"@{tmp / 'none.npy'}", 5), UsageError, "usage",
         'input file not found: {tmp}/none.npy'),
    Call("index-file-npz", lambda tmp: parse_index_spec("@" + _saved(tmp, "r.npz", a=np.arange(2)), 5),
         UsageError, "usage",
         '--rows @{tmp}/r.npz: an index file holds one array; use .npy, not .npz'),
    Call("index-file-no-name", lambda tmp: parse_index_spec("@", 5), UsageError, "usage",
         "--rows @: give a file after '@', e.g. @rows.npy"),
]


# ---------------------------------------------------------------- writing results (test_writers)
def _stream(tmp, shape, *writes, row_axis=0, commit=False, abort=False):
    out = NpyStreamWriter(tmp / "J.npy", shape, row_axis=row_axis)
    if abort:
        out.abort()
    for start, block in writes:
        out.write(start, block)
    if commit:
        out.commit()


def _write_into_a_directory(tmp, name):
    (tmp / name).mkdir()
    return write_blocks(tmp / name, {"J": np.eye(2)})


WRITERS = [
    Call("write-npz-meta-name", lambda tmp: write_blocks(tmp / "J.npz", {META_KEY: np.eye(2)}), UsageError, "usage",
         "cannot write {tmp}/J.npz: the block name '__meta__' is reserved for metadata"),
    Call("write-meta-not-json", lambda tmp: write_blocks(tmp / "J.npz", {"J": np.eye(2)}, {"x": object()}),
         TypeError, None,
         'cannot write a object value as JSON'),
    Call("write-csv-three-axes", lambda tmp: write_blocks(tmp / "J.csv", {"J": np.zeros((2, 2, 2))}), UsageError, "usage",
         'cannot write {tmp}/J.csv: block of shape (2, 2, 2) has 3 axes; a .csv file holds a matrix, so pass '
         'its 2-D [M, N] form'),
    Call("write-csv-two-blocks", lambda tmp: write_blocks(tmp / "J.csv", {"a": np.eye(2), "b": np.eye(2)}),
         UsageError, "usage",
         '{tmp}/J.csv holds 2 blocks (a, b); a .csv file holds one array: use .npz or .json'),
    Call("write-unknown-format", lambda tmp: write_blocks(tmp / "J.mat", {"J": np.eye(2)}), UsageError, "usage",
         "cannot write {tmp}/J.mat: unknown format '.mat'; use one of .npy, .npz, .csv, .txt, .json, .zarr"),
    Call("write-no-suffix", lambda tmp: write_blocks(tmp / "J", {"J": np.eye(2)}), UsageError, "usage",
         "cannot write {tmp}/J: unknown format '(no extension)'; use one of .npy, .npz, .csv, .txt, .json, .zarr"),
    Call("write-into-a-directory", lambda tmp: _write_into_a_directory(tmp, "J.npy"), UsageError, "usage",
         'cannot write {tmp}/J.npy: it is a directory; write to a regular file (or a character device or a '
         'named pipe)'),
    Call("write-no-blocks", lambda tmp: write_blocks(tmp / "J.npz", {}), UsageError, "usage",
         'nothing to write to {tmp}/J.npz: the result has no blocks'),
    Call("format-text-three-axes", lambda tmp: format_text(np.zeros((1, 1, 1)), 6, " "), ValueError, None,
         'format_text takes at most 2-D arrays, got shape (1, 1, 1)'),
    Call("format-text-precision", lambda tmp: format_text(np.zeros(2), 0, " "), ValueError, None,
         'precision must be at least 1, got 0'),
    Call("format-text-complex", lambda tmp: format_text(np.array([1 + 2j]), 6, " "), ValueError, None,
         'format_text writes real numbers, not complex128 values'),
    Call("stream-axis-1-block", lambda tmp: _stream(tmp, (3, 4, 2), (0, np.ones((2, 1, 2))), row_axis=1),
         ValueError, None,
         'block of shape (2, 1, 2) does not fit rows of shape (2,) for each of the 3 entries along axis 0, as '
         'a block of shape (3, k, 2)'),
    Call("stream-axis-1-outside", lambda tmp: _stream(tmp, (3, 4, 2), (3, np.ones((3, 2, 2))), row_axis=1),
         ValueError, None,
         'rows 3:5 are outside the 4 rows of {tmp}/J.npy'),
    Call("stream-rows-missing", lambda tmp: _stream(tmp, (4, 3), (1, np.ones((2, 3))), commit=True), ValueError, None,
         '2 of 4 rows of {tmp}/J.npy were never written'),
    Call("stream-write-after-abort", lambda tmp: _stream(tmp, (2, 2), (0, np.ones((1, 2))), abort=True), ValueError, None,
         'the stream to {tmp}/J.npy is already committed or aborted'),
    Call("stream-commit-after-abort", lambda tmp: _stream(tmp, (2, 2), abort=True, commit=True), ValueError, None,
         'the stream to {tmp}/J.npy is already committed or aborted'),
    Call("stream-rows-past-the-end", lambda tmp: _stream(tmp, (4, 2), (3, np.ones((2, 2)))), ValueError, None,
         'rows 3:5 are outside the 4 rows of {tmp}/J.npy'),
    Call("stream-rows-before-the-start", lambda tmp: _stream(tmp, (4, 2), (-1, np.ones((1, 2)))), ValueError, None,
         'rows -1:0 are outside the 4 rows of {tmp}/J.npy'),
    Call("stream-block-too-wide", lambda tmp: _stream(tmp, (4, 2), (0, np.ones((2, 3)))), ValueError, None,
         'block of shape (2, 3) does not fit rows of shape (2,)'),
    Call("stream-to-npz", lambda tmp: NpyStreamWriter(tmp / "J.npz", (2, 2)), UsageError, "usage",
         'cannot stream to {tmp}/J.npz: streamed results are written as .npy'),
    Call("stream-0d", lambda tmp: NpyStreamWriter(tmp / "J.npy", ()), UsageError, "usage",
         'cannot stream to {tmp}/J.npy: a 0-D result has no rows'),
    Call("stream-missing-directory", lambda tmp: NpyStreamWriter(tmp / "no" / "J.npy", (2, 2)), UsageError, "usage",
         'cannot write {tmp}/no/J.npy: directory {tmp}/no does not exist'),
]


# ---------------------------------------------------------------- sparse plans recovering a derivative (test_recovery)
def _star_refused():
    p = stencil5(4)
    checker = (np.add.outer(np.arange(4), np.arange(4)).ravel() % 2).astype(np.int64)
    return Plan("symmetric", scipy.sparse.csr_array(p + scipy.sparse.eye_array(16, dtype=bool)), column_colors=checker)


RECOVERY = [
    Call("recover-product-shape", lambda tmp: jacobian_plan(banded(10, 1, 1), "forward").recover(np.zeros((10, 4))),
         ValueError, None,
         'the forward product must have shape (10, 3), got (10, 4)'),
    Call("recover-product-count",
         lambda tmp: jacobian_plan(banded(10, 1, 1), "forward").recover(np.zeros((10, 3)), np.zeros((1, 10))),
         ValueError, None,
         'a forward plan recovers from 1 product(s), got 2'),
    Call("plan-mode", lambda tmp: Plan("sideways", banded(10, 1, 1)), ValueError, None,
         "mode must be one of forward, reverse, bidirectional, symmetric, got 'sideways'"),
    Call("recover-not-star", lambda tmp: _star_refused().recover(np.zeros((16, 2))), ValueError, None,
         'the colouring does not allow direct recovery (it is not a star colouring)'),
    Call("recover-substitution-shape",
         lambda tmp: hessian_plan(banded(500, 1, 1), recovery="substitution").recover(np.zeros((500, 3))), ValueError, None,
         'the forward product must have shape (500, 2), got (500, 3)'),
]


# ---------------------------------------------------------------- expressions and their budget (test_expr, test_expr_budget)
XE = np.array([0.5, 1.0, 1.5])


def _out_of_time():
    from unittest import mock

    f = compile_expression("sin(x) + cos(x) + exp(x)", budget=Budget(seconds=5.0))
    clock = iter([100.0, 101.0, 106.0, 107.0, 108.0])
    with mock.patch.object(cost.time, "monotonic", lambda: next(clock)):
        return f(XE)


EXPRESSIONS = [
    Call("expr-matmul-work", lambda tmp: compile_expression("sum((diag(x, 1200) + 1.0) @ (diag(x, 1200) + 1.0))")(XE),
         UsageError, "usage",
         'expression: (diag(x, 1200) + 1.0) @ (diag(x, 1200) + 1.0) would bring the work to 1,746,781,263 '
         'operations, more than the 1,000,000,000 an expression may (--expr-max-work)'),
    Call("expr-elements-budget", lambda tmp: compile_expression("sum(outer(x, x))", budget=Budget(max_elements=8))(XE),
         UsageError, "usage",
         'expression: outer(x, x) would make an array of 9 elements, more than the 8 an expression may '
         '(--expr-max-elements)'),
    Call("expr-elements-keyword", lambda tmp: compile_expression("sum(diag(x, k=20000))")(XE), UsageError, "usage",
         'expression: diag(x, k=20000) would make an array of 400,120,009 elements, more than the 10,000,000 '
         'an expression may (--expr-max-elements)'),
    Call("expr-time-limit", lambda tmp: _out_of_time(), UsageError, "usage",
         'expression: still evaluating at sin(x) after 5 s, the time an expression may take (--expr-timeout)'),
    Call("expr-function-not-allowed", lambda tmp: compile_expression("sin(x)", allowed_functions={"sq": np.square}),
         UsageError, "usage",
         "expression: 'sin' is not an allowed function; allowed functions (optionally prefixed with np.): sq"),
    Call("expr-allowed-name-dunder", lambda tmp: compile_expression("x", allowed_functions={"__import__": __import__}),
         ValueError, None,
         "allowed function name '__import__' must be dotted identifiers without '__'"),
    Call("expr-linalg-did-you-mean", lambda tmp: compile_expression("np.norm(x)"), UsageError, "usage",
         "expression: 'np.norm' is not an allowed function (did you mean 'linalg.norm'?); allowed functions "
         "(optionally prefixed with np.): abs, absolute, {any}"),
]


# ---------------------------------------------------------------- sparse derivatives (test_sparsity)
SPARSITY = [
    Call("sparsity-other-shapes", lambda tmp: jaccli.sparse_jacobian(bratu, np.ones(25), sparsity=jaccli.sparsity(bratu, np.ones(16))),
         PatternMismatch, "usage",
         'the pattern given is for outputs [(16,)] and inputs [(16,)], not [(25,)] and [(25,)]'),
    Call("sparsity-jacobian-for-hessian",
         lambda tmp: jaccli.sparse_hessian(lambda x: np.sum(bratu(x)), np.ones(16), sparsity=jaccli.sparsity(bratu, np.ones(16))),
         PatternMismatch, "usage",
         "the pattern given is a Jacobian's, not a Hessian's"),
]


# ---------------------------------------------------------------- devices, pipes and other targets (test_output_targets)
def _fifo_stream(tmp, *, commit):
    os.mkfifo(tmp / "J.npy")
    reader = FifoReader(tmp / "J.npy")
    out = NpyStreamWriter(tmp / "J.npy", (3, 2))
    try:
        out.write(1, np.ones((1, 2)))
        if commit:
            out.commit()
        else:
            out.write(0, np.ones((1, 2)))
    finally:
        out.commit(allow_partial=True)
        reader.received()


def _at_a_socket(tmp, write):
    with socket.socket(socket.AF_UNIX) as holder:
        holder.bind(str(tmp / "J.npy"))
        write(tmp / "J.npy")


TARGETS = [
    Call("stream-device-rewrite", lambda tmp: _fifo_stream(tmp, commit=False), ValueError, None,
         'rows from 0 on cannot be written to {tmp}/J.npy: a device or a pipe is written from start to end, '
         'and 2 rows were written already'),
    Call("stream-device-rows-missing", lambda tmp: _fifo_stream(tmp, commit=True), ValueError, None,
         '2 of 3 rows of {tmp}/J.npy were never written'),
    Call("stream-batched-into-fifo", lambda tmp: (os.mkfifo(tmp / "J.npy"), NpyStreamWriter(tmp / "J.npy", (2, 3, 4), row_axis=1)),
         UsageError, "usage",
         'cannot stream to {tmp}/J.npy: a device or a pipe takes the file from start to end, and a batched '
         'result is computed a block of rows of every sample at a time; write it to a regular file'),
    Call("write-to-a-socket", lambda tmp: _at_a_socket(tmp, lambda target: write_blocks(target, {"J": np.eye(2)})),
         UsageError, "usage",
         'cannot write {tmp}/J.npy: it is a socket; write to a regular file (or a character device or a named '
         'pipe)'),
    Call("stream-to-a-socket", lambda tmp: _at_a_socket(tmp, lambda target: NpyStreamWriter(target, (2, 2))),
         UsageError, "usage",
         'cannot write {tmp}/J.npy: it is a socket; write to a regular file (or a character device or a named '
         'pipe)'),
    Call("stream-into-a-directory", lambda tmp: ((tmp / "J.npy").mkdir(), NpyStreamWriter(tmp / "J.npy", (2, 2))),
         UsageError, "usage",
         'cannot write {tmp}/J.npy: it is a directory; write to a regular file (or a character device or a '
         'named pipe)'),
]


# ---------------------------------------------------------------- checks, stores, linear algebra (test_checks, test_partial_store, ...)
def _whole_block_without_memory(hessian: bool = False):
    from unittest import mock

    from jaccli.api import block_stores

    def no_memory(shape, dtype):
        raise MemoryError

    with mock.patch.object(block_stores, "DENSE_STORE_LIMIT", 0), mock.patch.object(block_stores, "_reserve", no_memory):
        if hessian:
            return np.asarray(jaccli.hessian(lambda x: np.sum(np.sin(x) * x), np.linspace(0.1, 1.0, 6)))
        return np.asarray(jaccli.jacobian(lambda x: np.sin(x) * x.sum(), np.linspace(0.1, 1.0, 6)))


MISC = [
    Call("compare-shapes", lambda tmp: compare_arrays(np.zeros((2, 3)), np.zeros((3, 2))), UsageError, "usage",
         'cannot compare: the computed result has shape (2, 3) but the reference has shape (3, 2); give a '
         'reference of the same shape as the selected slice'),
    Call("check-rows-out-of-range", lambda tmp: check_derivative(np.sin, np.zeros(3), rows=[5]), UsageError, "usage",
         'rows index 5 is out of range for 3 rows'),
    Call("whole-block-without-memory", lambda tmp: _whole_block_without_memory(), ResourceLimitError, "resource_limit",
         'the whole Jacobian block is (6, 6) (0.0 GiB) and does not fit in memory; ask for some rows (J[a:b], '
         '--rows) or stream it to a .npy file (-o J.npy)'),
    Call("whole-hessian-block-without-memory", lambda tmp: _whole_block_without_memory(hessian=True),
         ResourceLimitError, "resource_limit",
         'the whole Hessian block is (6, 6) (0.0 GiB) and does not fit in memory; ask for some rows (J[a:b], '
         '--rows) or stream it to a .npy file (-o J.npy)'),
    Call("qr-wide", lambda tmp: Recording(lambda y: np.linalg.qr(y)[0], (np.ones((2, 3)) + np.eye(2, 3),), (0,)),
         UnsupportedOperationError, "unsupported_operation",
         "{site}: np.linalg.qr(mode='reduced') of a 2x3 matrix is not differentiable in jaccli; supported: "
         "mode='reduced' or 'r' for square or tall (m >= n) full-rank matrices"),
]


# ---------------------------------------------------------------- the programming errors of the terminal rendering and of the README figures
def _readme_figures():
    from benchmarks import readme_figures

    return readme_figures


TOOLS = [
    Call("render-row-labels", lambda tmp: render([RenderBlock("J", np.zeros((3, 2)), row_labels=["a", "b"])]),
         ValueError, None,
         'block J: 2 row labels for 3 rows'),
    Call("render-three-axes", lambda tmp: RenderBlock("J", np.zeros((2, 2, 2))), ValueError, None,
         'block J: matrix must be 0-D, 1-D or 2-D, not (2, 2, 2)'),
    Call("readme-no-figures-block", lambda tmp: _readme_figures().replace_block("no markers", "NEW"), ValueError, None,
         'no figures block (its BEGIN and END marker lines)'),
    Call("readme-no-section",
         lambda tmp: _readme_figures().render(_readme_figures().RESULTS.read_text(encoding="utf-8")
                                             .replace("## End to end", "## Something else")),
         ValueError, None,
         "benchmarks/RESULTS.md has no section 'End to end' with 1 tables"),
]


def _closes_over_a_file(tmp: Path) -> Any:
    handle = open(tmp / "log.txt", "w")
    J = jaccli.jacobian(lambda x: (handle.write(""), x * 2)[1], X3)
    try:
        return J.to_dask()
    finally:
        handle.close()


PARALLEL = [
    Call("to-dask-unpicklable", _closes_over_a_file, CannotSend, "usage",
         "<lambda> cannot be sent to Dask's workers: {any}; define it "
         "at the top level of a module and let it open files or load libraries itself, inside the function, rather "
         "than closing over them"),
]


CALLS = PARALLEL + API + LAZY + TRACING + NUMERICS + RULES + LOADERS + WRITERS + RECOVERY + EXPRESSIONS + SPARSITY + TARGETS + MISC + TOOLS


def _pattern(message: str, tmp: Path) -> str:
    places = {"{tmp}": re.escape(str(tmp)), "{any}": ".*", "{site}": r"\S+\.py:\d+"}
    return "".join(places.get(part, re.escape(part)) for part in re.split(r"(\{tmp\}|\{any\}|\{site\})", message))


def test_every_call_has_its_own_id():
    assert len({case.id for case in CALLS}) == len(CALLS)


@pytest.mark.parametrize("case", CALLS, ids=[case.id for case in CALLS])
def test_the_message_of_each_library_error(case, tmp_path):
    with pytest.raises(case.error) as info:
        case.call(tmp_path)
    assert type(info.value) is case.error
    assert getattr(info.value, "kind", None) == case.kind
    assert re.fullmatch(_pattern(case.message, tmp_path), str(info.value), re.S), str(info.value)
