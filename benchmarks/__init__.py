"""Benchmarks of jaccli against hand-written NumPy floors and the anchor AD libraries (P1-P6)."""
