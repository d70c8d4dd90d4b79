"""--workers and --scheduler: a run whose sweeps go to Dask's workers (jaccli.parallel), set up and torn down.

Without either option nothing here imports Dask.
"""

from __future__ import annotations

import contextlib
import dataclasses
from typing import Any, Iterator

import click

from jaccli.errors import UsageError

from .problem import Problem
from .settings import Output, Settings


@contextlib.contextmanager
def parallel_run(problem: Problem, settings: Settings, out: Output) -> Iterator[Any]:
    """The evaluators made inside send their sweeps to Dask (a `RemoteSweeps`, yielded), or None
    without --workers/--scheduler. The cluster jaccli started is stopped on the way out, whatever happens."""
    if settings.workers is None and settings.scheduler is None:
        yield None
        return
    from jaccli.parallel.cluster import FromEnvironment

    if settings.workers is not None and isinstance(settings.scheduler, FromEnvironment):
        settings = dataclasses.replace(settings, scheduler=None)  # --workers said where, the environment did not
    if settings.workers is not None and settings.scheduler is not None:
        raise UsageError("--workers starts a local Dask cluster and --scheduler uses a running one; give one of them")
    from jaccli.api.evaluator import REMOTE_SWEEPS
    from jaccli.parallel.cluster import Cluster, need_dask, not_an_address
    from jaccli.parallel.payload import Expression, source_files
    from jaccli.parallel.remote_sweeps import RemoteSweeps

    need_dask("--workers" if settings.workers is not None else "--scheduler")
    if str(settings.scheduler or "").startswith("inproc://"):  # (the library's Cluster takes one, in its process)
        raise not_an_address(settings.scheduler, "inproc:// reaches a scheduler inside one process only")
    if problem.is_expression:
        function: Any = Expression(problem.spec)
    else:
        assert problem.user_file is not None
        function = source_files(problem.user_file, problem.name, getattr(problem.func, "keywords", ()))
    cluster = Cluster(settings.workers, settings.scheduler,
                      say=(lambda line: None) if out.quiet else (lambda line: click.echo(line, err=True)))
    remote = RemoteSweeps(cluster, function)
    token = REMOTE_SWEEPS.set(remote)
    try:
        yield remote
    finally:
        REMOTE_SWEEPS.reset(token)
        cluster.close()
