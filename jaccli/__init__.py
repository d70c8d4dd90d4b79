"""jaccli: Jacobians and Hessians of plain NumPy functions."""
__version__ = "0.1.0"
