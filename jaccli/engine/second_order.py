"""A gradient that is differentiated again (every Hessian and hvp) takes its own conventions at kinks.

A derivative of first order takes abs'(0) = 0, the subgradient of least norm. A Hessian differentiates
the gradient once more, and the chain rule multiplies abs's slope at 0 by itself there: |u| ** 2 at
u = 0 is 2 |u| sign(u), whose derivative 2 sign(u) ** 2 is 0 with sign(0) = 0, though the function is
u ** 2, smooth with second derivative 2. The recording of such a gradient therefore takes the slope
one-sided at 0, +1 as from the right, in every factor alike (the primal's abs and the slope in the
gradient's rule): sign(0) ** 2 -> 1, |u| ** 2 and |u| * |u| get 2, |u| ** 3 gets 0, |u| itself 0 (a
genuine kink, which `jaccli check` excuses). facts.SECOND_ORDER_FORMS names the primitives that do so.

A create_graph derivative that an enclosing level differentiates cannot do so: its values are the
user's (the one-sided slope would make |u|'s gradient 1 at 0). It keeps the first-order convention and
records facts.CREATE_GRAPH_FORMS instead, whose derivatives are NaN, reported, where a second
derivative through the convention has no value (abs: the slope sign(u)'s own derivative at 0).
"""

from __future__ import annotations

from .facts import CREATE_GRAPH_FORMS, SECOND_ORDER_FORMS
from .tape import Trace


def take_second_order_forms(trace: Trace, create_graph: bool = False) -> None:
    """Give the nodes recorded on `trace` so far the primitives of their second-order forms, before the
    gradient's own sweep is recorded from their rules (their values stay: the forms compute the same).

    create_graph: for a derivative whose values an enclosing differentiation sees and differentiates,
    the forms whose first derivatives are the primitive's own everywhere (CREATE_GRAPH_FORMS).
    """
    forms = CREATE_GRAPH_FORMS if create_graph else SECOND_ORDER_FORMS
    if not forms:
        return
    for node in trace.nodes:
        form = forms.get(node.prim)
        if form is not None:
            node.prim = form
            node._vjps = node._jvps = None
