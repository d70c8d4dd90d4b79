"""A crash of the process (a segfault in a C extension f calls) said in one line with exit 3: a watching parent.

The command runs in a child process with `faulthandler` on, which prints Python's stack at the crash
to stderr; the parent only waits for it and passes its exit status on. When the child dies of SIGSEGV,
SIGBUS, SIGILL, SIGFPE or SIGABRT, the parent adds one `Error:` line and exits 3 (the function failed).

Why a parent, not faulthandler alone: a process that segfaults cannot choose its exit status (the
kernel ends it with the signal, 139 to the shell), and nothing written after the fault is safe. Why not
`multiprocessing` or a subprocess: one `os.fork()` before anything else runs costs about a millisecond
and keeps the child's memory, stdin, stdout and stderr as they are; the parent holds no lock and runs
no Python code but `sigwaitinfo`, `waitpid` and, on a crash, one write.

Signals: the parent blocks the ones that stop jaccli and reads them with `sigwaitinfo`. One sent to it
with kill(2) (`kill PID`, `timeout`, a CI runner cancelling) is passed to the child; one the kernel sends
(Ctrl-C, a hang-up of the terminal) reaches the child's process group directly, so it is not sent twice.
Where sigwaitinfo or fork is missing (Windows, macOS), jaccli runs as one process, with faulthandler.
"""

from __future__ import annotations

import faulthandler
import os
import signal

__all__ = ["run_watched"]

# The signals that end a process that crashed, and their names for the message.
_CRASHES = {signal.SIGSEGV: "segmentation fault", signal.SIGBUS: "bus error", signal.SIGILL: "illegal instruction",
            signal.SIGFPE: "floating-point exception", signal.SIGABRT: "abort"}
# The signals a user or a runner sends to stop jaccli: passed on to the child when sent to the parent.
_PASSED_ON = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)
_SI_USER = 0  # siginfo's si_code for a signal sent by kill(2) (the kernel's own, as Ctrl-C's, are above 0)
_PR_SET_PDEATHSIG = 1  # prctl(2): the signal the kernel sends this process when its parent dies


def run_watched(run: object) -> None:
    """Call `run()` (the command line) in a child process watched for crashes; exit as the child did.

    Runs `run()` in this process when the platform has no fork or sigwaitinfo, or when JACCLI_NO_WATCH is
    set (a debugger, a profiler).
    """
    try:
        faulthandler.enable()  # (in the child too: the stack of the crash on stderr)
    except (AttributeError, OSError, RuntimeError, ValueError):  # stderr closed or no file: no stack to print
        pass
    if not hasattr(os, "fork") or not hasattr(signal, "sigwaitinfo") or os.environ.get("JACCLI_NO_WATCH"):
        run()  # type: ignore[operator]
        return
    watched = set(_PASSED_ON) | {signal.SIGCHLD}
    # Blocked before the fork, so that none is lost between the fork and the parent's first wait.
    saved = signal.pthread_sigmask(signal.SIG_BLOCK, watched)
    parent = os.getpid()
    try:
        pid = os.fork()
    except OSError:  # no process left to make: run in this one
        signal.pthread_sigmask(signal.SIG_SETMASK, saved)
        run()  # type: ignore[operator]
        return
    if pid == 0:
        _end_with_parent(parent)
        signal.pthread_sigmask(signal.SIG_SETMASK, saved)
        try:
            run()  # type: ignore[operator]
        finally:
            _done()
        return
    os._exit(_wait(pid, watched))


def _done() -> None:
    """The command is done and the child exits: a signal to stop that comes now is ignored. At exit Python puts
    back the default action of the signals it handled, and one that came then (the copy the parent passed on of
    a signal the child had from its process group too, late on a busy machine) killed the child after it had
    reported the run: the parent then ended by the signal too, not with the status the child meant to give."""
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):  # (not SIGQUIT: Ctrl-\ still ends a stuck exit)
        try:
            signal.signal(signum, signal.SIG_IGN)
        except (OSError, ValueError):
            pass


def _end_with_parent(parent: int) -> None:
    """Have the kernel kill this child when the watching parent dies: SIGKILL to the parent (`kill -9 PID`, a
    runner's hard timeout) cannot be passed on, and the child would finish the command and write its file after
    the user killed jaccli. Linux's prctl(PR_SET_PDEATHSIG); elsewhere nothing (about 1.5 ms for ctypes)."""
    try:
        import ctypes

        if ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL) != 0:
            return
    except (OSError, AttributeError):  # no prctl: not Linux
        return
    if os.getppid() != parent:  # the parent died before the request took effect
        os._exit(128 + signal.SIGKILL)


def _wait(pid: int, watched: set) -> int:
    """Wait for the child `pid`, passing on the signals sent to this process; its exit status, as the shell's."""
    while True:
        info = signal.sigwaitinfo(watched)
        if info.si_signo != signal.SIGCHLD:
            if info.si_code == _SI_USER:
                try:
                    os.kill(pid, info.si_signo)
                except ProcessLookupError:
                    pass
            continue
        try:
            done, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return 70
        if done == 0:
            continue  # a SIGCHLD for a stop or a continue
        if os.WIFEXITED(status):
            return os.WEXITSTATUS(status)
        if not os.WIFSIGNALED(status):
            continue
        signum = os.WTERMSIG(status)
        name = _CRASHES.get(signum)
        if name is None:  # killed (SIGKILL, a signal it did not handle): end the same way
            signal.signal(signum, signal.SIG_DFL)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signum})
            os.kill(os.getpid(), signum)
            return 128 + signum
        try:
            article = "an" if name[0] in "aeiou" else "a"  # (an illegal instruction, an abort)
            os.write(2, (f"Error: jaccli crashed with {article} {name} ({signal.Signals(signum).name}) while it ran: "
                         "the function, or a C extension it calls, is the usual cause (Python's stack at the crash is "
                         "above)\n").encode())
        except OSError:
            pass
        return 3
