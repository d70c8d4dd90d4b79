"""The signals that stop jaccli (Ctrl-C, SIGTERM, SIGHUP): raised as Terminated, once, so that the run unwinds and
cleans up as it does for Ctrl-C, and reported in one line with 128 + the signal's number."""

from __future__ import annotations

from typing import Any


def unwind_on_termination() -> None:
    """SIGTERM and SIGHUP raise Terminated, so that cleanup runs as for Ctrl-C (Python's default dies at once).

    Ctrl-C (SIGINT) raises it too, in place of Python's plain KeyboardInterrupt: a KeyboardInterrupt
    that the user's function raises itself is then told apart, as its failure (exit 3).

    Only the first signal raises; the run is stopping from then on, and any later one is ignored. The
    same request often comes twice: GNU timeout signals jaccli, which passes it on to the command's
    process, then signals the process group, and a CI runner may do the same. Raised again inside the
    unwinding, it broke it: click's "Aborted!" and exit 1, a traceback, two Error lines, or a Dask
    client left waiting on a lock it held. A time window cannot tell a repeat from a new request: a
    signal taken by another thread runs its handler only when the main thread next runs Python code,
    seconds later if it sleeps in the user's cleanup. To stop at once: Ctrl-\\ (SIGQUIT) or kill -9.
    """
    import signal

    from jaccli.io.atomic import hold_back
    from .commands.failures import Terminated

    stopping: list[int] = []  # the signal the run is stopping for

    def stop(signum: int, frame: Any) -> None:
        if stopping:
            return
        stopping.append(signum)
        interruption = Terminated(signum, signal.Signals(signum).name)
        # Raised at once, or, while a temporary file is being made, as soon as its name is kept for cleanup.
        if not hold_back(interruption):
            raise interruption

    # A signal ignored at start stays ignored: SIGINT for a background job, SIGHUP under nohup,
    # SIGTERM when the parent asked so. Only SIGINT with Python's own handler is taken over.
    interrupt = signal.SIGINT if signal.getsignal(signal.SIGINT) is signal.default_int_handler else None
    for sig in (interrupt, getattr(signal, "SIGTERM", None), getattr(signal, "SIGHUP", None)):
        if sig is not None and signal.getsignal(sig) is not signal.SIG_IGN:
            try:
                signal.signal(sig, stop)
            except (ValueError, OSError):  # not the main thread, or not allowed here: keep the default
                pass

