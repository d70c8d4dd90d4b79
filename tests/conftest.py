"""Shared fixtures: seeded generators, user modules written to files, the command line's signal handlers; and
the suite's one setting of pytest-xdist (below)."""

import importlib.util
import sys
import textwrap

import numpy as np
import pytest


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    """A worker that crashes ends the run at once, reported as the test it ran, unless --max-worker-restart says
    otherwise: under --dist loadgroup a replaced worker can leave the run waiting for ever at its end
    (pytest-dev/pytest-xdist#1378, open: the dead worker's finished groups come back as empty work)."""
    if getattr(config.option, "maxworkerrestart", "") is None:
        config.option.maxworkerrestart = "0"


@pytest.fixture
def rng():
    return np.random.default_rng(20261121)


@pytest.fixture
def user_module(tmp_path, monkeypatch):
    """Write source to a real module file, import it, and return the module."""
    def load(source: str, name: str = "user_functions"):
        path = tmp_path / f"{name}.py"
        path.write_text(textwrap.dedent(source))
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        monkeypatch.setitem(sys.modules, name, module)
        spec.loader.exec_module(module)
        return module
    return load


@pytest.fixture
def signal_handlers():
    """The command line's signal handlers (cli.main's), as in a real run; Python's own are put back after."""
    import signal

    from jaccli.cli.stop_signals import unwind_on_termination

    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    # as a command typed at a terminal starts, even where the suite runs with them ignored (a background
    # job of a shell without job control ignores SIGINT, and the command line keeps an ignored signal so)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)
    unwind_on_termination()
    yield
    for sig, handler in saved.items():
        signal.signal(sig, handler)
