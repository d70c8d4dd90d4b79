"""The library: public functions, lazy Jacobian and Hessian objects, and their evaluation."""
