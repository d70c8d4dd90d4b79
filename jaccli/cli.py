"""The jaccli command line: parse, call the library, render. No math here."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Callable

import click

from jaccli import __version__

from .commands.failures import BadUsage
from .commands.options import function_options, matrix_options, output_options, vector_options
from .commands.settings import Output, Settings

SAFETY = """\
FUNC is path.py (its function f, or its only public function) or path.py:name. It is your own
code: jaccli runs the file with your rights, like `python path.py`, so never point it at files you
do not trust. -e EXPR is safe on untrusted text: the expression is checked and evaluated without
running any code.

INPUT is a .npy file (loaded without pickles), an .npz (arrays bound by key), a .csv or .txt
file, or a literal such as 0.5 or "[1, 2, 3]". Inputs bind to the function's parameters in
order; name=SOURCE binds by name.
"""

EXIT_CODES = """\
\b
Exit status:
  0  success
  1  a check you asked for failed (--strict)
  2  usage error: bad option, index, file, or inputs that do not fit the function
  3  the function failed: it raised, returned a non-array, or used an unsupported operation
  4  resource limit: the result exceeds --max-memory, or the disk is full
"""


class JaccliGroup(click.Group):
    """Keeps the raw arguments, for the "argv" stored with results."""

    def main(self, args: Any = None, prog_name: str | None = None, **extra: Any) -> Any:
        obj = extra.setdefault("obj", {})
        if isinstance(obj, dict):
            obj.setdefault("argv", list(sys.argv[1:] if args is None else args))
        return super().main(args, prog_name, **extra)


def _print_version(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    # From the installed metadata: importing NumPy would cost more than the rest of this command.
    from importlib.metadata import PackageNotFoundError, version

    try:
        numpy_version = version("numpy")
    except PackageNotFoundError:  # pragma: no cover - numpy is a dependency
        numpy_version = "not installed"
    click.echo(f"jaccli {__version__}\nnumpy {numpy_version}\npython {sys.version.split()[0]}")
    ctx.exit()


@click.group(cls=JaccliGroup, epilog=EXIT_CODES, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--version", is_flag=True, expose_value=False, is_eager=True, callback=_print_version,
              help="Print the versions of jaccli, NumPy and Python, and exit.")
@click.option("--debug", is_flag=True, envvar="JACCLI_DEBUG", help="Show full tracebacks of errors.")
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """Jacobians, Hessians, gradients and their products for plain NumPy functions.

    \b
      jaccli jacobian model.py x.npy                 the Jacobian df_dx, as a table
      jaccli hessian loss.py w.npy X.csv --wrt w -o H.npy
      jaccli jacobian -e "sin(x) * y" x=0.5 y="[1, 2]"
      jaccli vjp model.py x.npy --vector v.npy

    Only the rows and columns you ask for (--rows, --cols) are computed. Results go to stdout
    (a table on a terminal, plain numbers in pipes, --format json for one report object) or to
    a file with -o. Diagnostics go to stderr.

    A FUNC file is your own code and runs with your rights; -e EXPR is safe on untrusted text.
    See `jaccli COMMAND --help` and `man jaccli`.
    """
    ctx.ensure_object(dict)["debug"] = debug


Decorator = Callable[[Callable[..., Any]], Any]


def _command(name: str, short: str, summary: str, *decorators: Decorator) -> Decorator:
    """A subcommand with the shared options (FUNC and inputs first, output last), help text and epilog."""
    def wrap(f: Callable[..., Any]) -> Any:
        for decorator in reversed((function_options,) + decorators + (output_options,)):
            f = decorator(f)
        return cli.command(name, help=f"{summary}\n\n{SAFETY}", short_help=short, epilog=EXIT_CODES,
                           context_settings={"help_option_names": ["-h", "--help"]})(click.pass_context(f))
    return wrap


def _split_args(args: tuple[str, ...], expression: str | None) -> tuple[str | None, tuple[str, ...]]:
    if expression is not None:
        return None, args
    if not args:
        raise BadUsage("give FUNC (a .py file) and its INPUTs, or -e EXPR; see --help")
    return args[0], args[1:]


def _invoke(ctx: click.Context, command: str, args: tuple[str, ...], expression: str | None, wrt: str | None,
            dtype: str | None, output: str | None, fmt: str | None, precision: int | None, heatmap: bool,
            no_color: bool, stats: bool, quiet: bool, debug: bool, **shape: Any) -> None:
    """The common "run and report" path of every command."""
    func, sources = _split_args(args, expression)
    settings = Settings(dtype=dtype, **shape)
    out = Output(path=Path(output) if output else None, format=fmt, precision=precision, heatmap=heatmap,
                 color=not no_color, stats=stats, quiet=quiet)
    root = ctx.find_root().obj or {}
    from .commands.run import run  # NumPy and the engine load here, not for --help or --version

    run(command, func=func, expression=expression, sources=sources, wrt=wrt, settings=settings, out=out,
        argv=root.get("argv", []), debug=debug or bool(root.get("debug")))


@_command("jacobian", "The Jacobian, or selected rows and columns of it.",
          "Jacobian of FUNC at the INPUTs: blocks df_dx of shape out.shape + in.shape.",
          matrix_options)
def jacobian(ctx: click.Context, **kw: Any) -> None:
    _invoke(ctx, "jacobian", **kw)


@_command("hessian", "The Hessian of a scalar function, or parts of it.",
          "Hessian of a scalar FUNC at the INPUTs: blocks d2f_dx_dy of shape x.shape + y.shape.",
          matrix_options)
def hessian(ctx: click.Context, **kw: Any) -> None:
    _invoke(ctx, "hessian", **kw)


@_command("grad", "The gradient of a scalar function.",
          "Gradient of a scalar FUNC at the INPUTs: blocks df_dx shaped like x.")
def grad(ctx: click.Context, **kw: Any) -> None:
    _invoke(ctx, "grad", **kw)


@_command("jvp", "Jacobian-vector product J v.",
          "Jacobian-vector product J v (one forward sweep, no matrix formed): jvp_f shaped like f.",
          vector_options)
def jvp(ctx: click.Context, **kw: Any) -> None:
    _invoke(ctx, "jvp", **kw)


@_command("vjp", "Vector-Jacobian product v^T J.",
          "Vector-Jacobian product v^T J (one reverse sweep, no matrix formed): vjp_x shaped like x.",
          vector_options)
def vjp(ctx: click.Context, **kw: Any) -> None:
    _invoke(ctx, "vjp", **kw)


@_command("hvp", "Hessian-vector product H v.",
          "Hessian-vector product H v of a scalar FUNC (no matrix formed): hvp_x shaped like x.",
          vector_options)
def hvp(ctx: click.Context, **kw: Any) -> None:
    _invoke(ctx, "hvp", **kw)


def main(argv: list[str] | None = None) -> Any:
    """Console-script entry point: ``jaccli = "jaccli.cli:main"``."""
    return cli.main(argv, prog_name="jaccli")


if __name__ == "__main__":  # pragma: no cover
    main()
