"""A gradient that is differentiated again (every Hessian and hvp) takes its own conventions at kinks.

A derivative of first order takes abs'(0) = 0, the subgradient of least norm. A Hessian differentiates
the gradient once more, and the chain rule multiplies abs's slope at 0 by itself there: |u| ** 2 at
u = 0 is 2 |u| sign(u), whose derivative 2 sign(u) ** 2 is 0 with sign(0) = 0, though the function is
u ** 2, smooth with second derivative 2. The recording of such a gradient therefore takes the slope
one-sided at 0, +1 as from the right, in every factor alike (the primal's abs and the slope in the
gradient's rule): sign(0) ** 2 -> 1, |u| ** 2 and |u| * |u| get 2, |u| ** 3 gets 0, |u| itself 0 (a
genuine kink, which `jaccli check` excuses). facts.SECOND_ORDER_FORMS names the primitives that do so.
"""

from __future__ import annotations

from .facts import SAME_FIRST_ORDER, SECOND_ORDER_FORMS
from .tape import Trace


def take_second_order_forms(trace: Trace, same_first_order: bool = False) -> None:
    """Give the nodes recorded on `trace` so far the primitives of their second-order forms, before the
    gradient's own sweep is recorded from their rules (their values stay: the forms compute the same).

    same_first_order: only the forms whose first derivatives are the primitive's own everywhere (hypot's
    and norm's, which differ in their second derivatives at 0 alone), for a derivative whose values an
    enclosing differentiation sees and differentiates (create_graph): abs's one-sided slope would change
    the values (|u| at 0) that the user gets.
    """
    if not SECOND_ORDER_FORMS:
        return
    for node in trace.nodes:
        form = SECOND_ORDER_FORMS.get(node.prim)
        if form is not None and (not same_first_order or form in SAME_FIRST_ORDER):
            node.prim = form
            node._vjps = node._jvps = None
