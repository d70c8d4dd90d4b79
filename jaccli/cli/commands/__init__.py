"""The command line's helpers: shared options, the run-and-report path, error translation."""
