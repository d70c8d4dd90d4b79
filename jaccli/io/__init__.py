"""Input and output: user functions, input arrays, index specs, writers, atomic files and streamed results."""
