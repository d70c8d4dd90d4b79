"""Parallel and distributed evaluation on Dask: blocks of sweeps on workers that record f once each.

Nothing here imports Dask until a cluster is used: `jaccli` and its CLI runs without --workers or
--scheduler never load it. The pieces: `payload` (f, its inputs and options, as they travel to the
workers), `worker` (the tasks, with a worker-local cache of recordings), `remote_sweeps` (the client
side that sends an evaluator's sweeps to the workers and hands back their results in order),
`cluster` (starting a LocalCluster or connecting to a scheduler), `dask_arrays` (J.to_dask()) and
`zarr_chunks` (-o J.zarr, its chunks written by the workers).
"""
