"""Colouring and recovery for sparse Jacobians and Hessians: from a sparsity pattern (scipy.sparse) to a plan of few
compressed sweeps, and from the compressed products back to a CSR matrix. Uses numpy and scipy.sparse only."""
from .acyclic import best_acyclic, greedy_acyclic
from .coloring import ORDERINGS, best_columns, best_rows, greedy_columns, greedy_rows, improve
from .plans import bidirectional_plan, hessian_plan, jacobian_plan
from .recovery import MODES, Plan, seed_matrix
from .star import best_star, greedy_star, is_star_coloring, symmetric_pattern

__all__ = ["ORDERINGS", "MODES", "Plan", "best_acyclic", "best_columns", "best_rows", "best_star",
           "bidirectional_plan", "greedy_acyclic", "greedy_columns", "greedy_rows", "greedy_star", "hessian_plan",
           "improve", "is_star_coloring", "jacobian_plan", "seed_matrix", "symmetric_pattern"]
