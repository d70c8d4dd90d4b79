"""jaccli: Jacobians and Hessians of plain NumPy functions, lazily, from its own AD engine."""

from .api import grad, hessian, hvp, jacobian, jvp, vjp
from .lazy import Hessian, Jacobian

__version__ = "0.1.0"
__all__ = ["jacobian", "hessian", "vjp", "jvp", "hvp", "grad", "Jacobian", "Hessian", "__version__"]
