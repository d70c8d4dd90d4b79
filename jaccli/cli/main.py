"""The jaccli command line: parse, call the library, render. No math here."""

from __future__ import annotations

import contextlib
import gc
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Callable

import click

from jaccli import __version__
from jaccli.io.atomic import recording_renames

from .commands.failures import (BadUsage, CliError, NoCommand, Terminated, after_writing, interrupted, stream_error,
    to_stdout, with_json)
from .commands.options import (check_nonfinite_options, check_options, check_sparse_options, color_options,
    function_options,
    info_options, keywords, matrix_options, nonfinite_options, output_options, parallel_options, plot_option,
    report_options, sparse_options, sparsity_options, sparsity_outputs, vector_options)
from .commands.help_text import SAFETY, SAFETY_LINE, examples as _examples, write_statuses
from .commands.settings import Output, Settings
from .stop_signals import unwind_on_termination

# click wraps help at 80 columns unless told otherwise; a wider terminal gets lines up to this width.
HELP_WIDTH = 100
CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": HELP_WIDTH}


def _negative_number(error: click.UsageError) -> str | None:
    """The negative number that click took for an unknown option (``-1.5`` read as ``-1``), or None."""
    # Only commands with INPUT arguments (not the group, not ops) could have meant a number.
    if not isinstance(error, click.NoSuchOption) or error.ctx is None \
            or not any(p.name == "args" for p in error.ctx.command.params):
        return None
    argv = (error.ctx.find_root().obj or {}).get("argv", [])
    for arg in argv[:argv.index("--")] if "--" in argv else argv:
        if isinstance(arg, str) and arg.startswith(error.option_name):
            try:
                float(arg)
            except ValueError:
                continue
            return arg
    return None


def usage_line(error: click.UsageError) -> str:
    """click's usage error as one line, with where to find help: ``<message> (see 'jaccli jacobian --help')``."""
    message = " ".join(error.format_message().split())
    number = _negative_number(error)
    if number is not None:
        message = (f"{number} reads as an option; to give a negative number as an input, write it as "
                   f"NAME={number} (e.g. x={number}), or put -- after the options and before the inputs")
    if error.ctx is None:
        return message
    return f"{message} (see '{error.ctx.command_path} --help')"


# click 8.2+ raises this usage error to print the help when `jaccli` runs alone; 8.1 exits instead.
_NO_ARGS_IS_HELP = getattr(click.exceptions, "NoArgsIsHelpError", ())


@contextlib.contextmanager
def _one_line_usage_errors() -> Iterator[None]:
    """click's usage errors (bad option value, unknown option or command) print one `Error: ...` line, exit 2.

    click would print its usage, a hint and a blank line first. Running `jaccli` alone still
    prints the help (on stderr, exit 2, as click 8.2+ does).
    """
    try:
        yield
    except _NO_ARGS_IS_HELP as error:
        raise NoCommand(error.ctx) from None
    except click.UsageError as error:
        raise BadUsage(usage_line(error)) from None


class _ShortOptionsFirst(click.Command):
    """A command whose parser takes a two-character argument that names a short option (-o) as that option.

    click's parser tries every option as a long one first; for -o it builds a NoSuchOption, only to catch
    it, whose "did you mean" list imports difflib: ~1.3 ms of a `jaccli jacobian f.py x.npy -o J.npy`
    process. The result is click's own (no long option has a one-dash two-character name). Where a click
    parser lacks these internals, it parses as it is.
    """

    def make_parser(self, ctx: click.Context) -> Any:
        parser = super().make_parser(ctx)
        process, short = getattr(parser, "_process_opts", None), getattr(parser, "_short_opt", None)
        if process is None or not isinstance(short, dict) or not hasattr(parser, "_match_short_opt"):
            return parser

        def process_opts(arg: str, state: Any) -> None:
            if len(arg) == 2 and arg in short:
                parser._match_short_opt(arg, state)
            else:
                process(arg, state)
        parser._process_opts = process_opts
        return parser


class JaccliGroup(click.Group):
    """Keeps the raw arguments, for the "argv" stored with results; reports errors in one line.

    Every parse error of the group and of its commands passes through `make_context` (the
    group's options, --help and --version) or `invoke` (the command's name, options and run), so
    both make click's usage errors one line; both also flush stdout, so that a full disk or a
    closed pipe there is reported by its exit code, not by a traceback or click's exit 1. A
    command's errors are also one JSON object on stdout under --format json (`with_json`).
    """

    command_class = _ShortOptionsFirst

    def main(self, args: Any = None, prog_name: str | None = None, **extra: Any) -> Any:
        obj = extra.setdefault("obj", {})
        if isinstance(obj, dict):
            obj.setdefault("argv", list(sys.argv[1:] if args is None else args))
        try:
            return super().main(args, prog_name, **extra)
        except OSError as error:
            # What jaccli prints is reported by to_stdout, to_stderr and CliError.show; only click's
            # own writes to stderr (such as its "Aborted!" after a Ctrl-C) could get here.
            raise SystemExit(stream_error("stderr", error).exit_code) from None

    def make_context(self, info_name: str | None, args: list[str], parent: click.Context | None = None,
                     **extra: Any) -> click.Context:
        with _one_line_usage_errors(), to_stdout():
            return super().make_context(info_name, args, parent, **extra)

    def invoke(self, ctx: click.Context) -> Any:
        # A signal outside the command's own run (as numpy loads, or once the run has returned) is an
        # interruption too, not click's "Aborted!" and exit 1. Any error once -o's file is in place says so.
        argv = ctx.obj.get("argv", []) if isinstance(ctx.obj, dict) else []
        with recording_renames() as written:
            try:
                with _one_line_usage_errors(), to_stdout():
                    return super().invoke(ctx)
            except Terminated as error:
                raise with_json(interrupted(error, written), argv, ctx) from None
            except CliError as error:
                raise with_json(after_writing(error, written), argv, ctx) from None

    def format_epilog(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        formatter.write_paragraph()
        with formatter.indentation():
            formatter.write_text(SAFETY)
        with formatter.section("Exit status"):
            write_statuses(formatter)


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


@click.group(cls=JaccliGroup, context_settings=CONTEXT)
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

    See `jaccli COMMAND --help` and `man jaccli`.
    """
    ctx.ensure_object(dict)["debug"] = debug


Decorator = Callable[[Callable[..., Any]], Any]


def _command(name: str, short: str, summary: str, examples: list[tuple[str, str]], *decorators: Decorator,
             outputs: Decorator = output_options) -> Decorator:
    """A subcommand with the shared options (FUNC and inputs first, output last), help text and examples."""
    def wrap(f: Callable[..., Any]) -> Any:
        for decorator in reversed((function_options,) + decorators + (outputs,)):
            f = decorator(f)
        return cli.command(name, help=f"{summary}\n\n{SAFETY_LINE}", short_help=short, epilog=_examples(examples),
                           context_settings=CONTEXT)(click.pass_context(f))
    return wrap


def _color(color: str, no_color: bool) -> str:
    """--color's choice; --no-color is --color never."""
    return "never" if no_color else color.lower()


def _split_args(args: tuple[str, ...], expression: str | None) -> tuple[str | None, tuple[str, ...]]:
    if expression is not None:
        return None, args
    if not args:
        raise BadUsage("give FUNC (a .py file) and its INPUTs, or -e EXPR; see --help")
    return args[0], args[1:]


def _invoke(ctx: click.Context, command: str, args: tuple[str, ...], expression: str | None, wrt: str | None,
            fmt: str | None, color: str, no_color: bool, quiet: bool, debug: bool, output: str | None = None,
            precision: int | None = None, heatmap: bool = False, stats: bool = False, plot: str | None = None,
            sparse: bool = False, pattern: str | None = None, recovery: str = "auto",
            output_format: str | None = None, **settings: Any) -> None:
    """The common "run and report" path of every command that differentiates FUNC."""
    func, sources = _split_args(args, expression)
    if pattern is not None and not sparse:
        raise BadUsage("--pattern is the pattern of --sparse; give --sparse too")
    if recovery != "auto" and not (sparse and command == "hessian"):
        raise BadUsage("--recovery is how a sparse Hessian is read back; use it with hessian --sparse")
    if settings.get("mode") == "bidirectional" and not sparse:
        raise BadUsage("--mode bidirectional colours a sparse result; give --sparse too, or use forward or reverse")
    if output is not None and not output.strip():
        raise BadUsage("-o: the path is empty (an unset variable?); give a file such as J.npy, or leave out -o "
                       "for stdout")
    if plot is not None and not plot.strip():
        raise BadUsage("--plot: the path is empty (an unset variable?); give a file such as J.png, or leave out "
                       "--plot")
    out = Output(path=Path(output) if output else None, format=fmt, precision=precision, heatmap=heatmap,
                 color=_color(color, no_color), stats=stats, quiet=quiet, plot=Path(plot) if plot else None,
                 file_format=output_format)
    root = ctx.find_root().obj or {}
    debug = debug or bool(root.get("debug"))
    # NumPy and the engine load here, not for --help or --version.
    if command == "info":
        from .commands.info import info

        _started()
        info(func=func, expression=expression, sources=sources, wrt=wrt, settings=Settings(**settings), out=out,
             argv=root.get("argv", []), debug=debug)
        return
    if sparse:
        _started()
        if command == "check":
            from .commands.sparse_results import check_sparse_command

            check_sparse_command(func=func, expression=expression, sources=sources, wrt=wrt,
                                 settings=Settings(**settings), out=out, debug=debug, argv=root.get("argv", []))
        else:
            from .commands.sparse_results import run_sparse

            run_sparse(command, func=func, expression=expression, sources=sources, wrt=wrt,
                       settings=Settings(**settings), out=out, argv=root.get("argv", []), debug=debug,
                       pattern=pattern, recovery=recovery)
        return
    from .commands.run import run

    _started()
    run(command, func=func, expression=expression, sources=sources, wrt=wrt, settings=Settings(**settings),
        out=out, argv=root.get("argv", []), debug=debug)


@_command("jacobian", "The Jacobian, or selected rows and columns of it.",
          "Jacobian of FUNC at the INPUTs: blocks df_dx of shape out.shape + in.shape.",
          [("jaccli jacobian model.py x.npy", "the whole Jacobian, as a table"),
           ("jaccli jacobian model.py x.npy --rows 0:4 -o J.npy", "rows 0 to 3 only, to a file"),
           ('jaccli jacobian -e "sin(x) * y" x=0.5 y="[1, 2]"', "an expression: no file runs")],
          matrix_options, sparse_options, nonfinite_options, plot_option, parallel_options)
def jacobian(ctx: click.Context, **kw: Any) -> None:
    _invoke(ctx, "jacobian", **kw)


@_command("hessian", "The Hessian of a scalar function, or parts of it.",
          "Hessian of a scalar FUNC at the INPUTs: blocks d2f_dx_dy of shape x.shape + y.shape.",
          [("jaccli hessian loss.py w.npy X.csv --wrt w -o H.npy", "w's Hessian; X is data"),
           ('jaccli hessian -e "sum(x ** 4)" "[1, 2, 3]" --sparse', "by colouring, as COO triplets")],
          matrix_options, sparse_options, nonfinite_options, plot_option, parallel_options)
def hessian(ctx: click.Context, **kw: Any) -> None:
    _invoke(ctx, "hessian", **kw)


@_command("grad", "The gradient of a scalar function.",
          "Gradient of a scalar FUNC at the INPUTs: blocks df_dx shaped like x.",
          [("jaccli grad loss.py w.npy X.csv y.txt --wrt w", "the gradient in w"),
           ('jaccli grad -e "sum(sin(x))" "[0.5, 1]" --format json', "one JSON report")],
          nonfinite_options)
def grad(ctx: click.Context, **kw: Any) -> None:
    _invoke(ctx, "grad", **kw)


@_command("jvp", "Jacobian-vector product J v.",
          "Jacobian-vector product J v (one forward sweep, no matrix formed): jvp_f shaped like f.",
          [("jaccli jvp model.py x.npy --vector v.npy", "J v"),
           ('jaccli jvp -e "x ** 2" "[1, 2]" --vector "[1, 0]"', "the first column of J")],
          vector_options, nonfinite_options)
def jvp(ctx: click.Context, **kw: Any) -> None:
    _invoke(ctx, "jvp", **kw)


@_command("vjp", "Vector-Jacobian product v^T J.",
          "Vector-Jacobian product v^T J (one reverse sweep, no matrix formed): vjp_x shaped like x.",
          [("jaccli vjp model.py x.npy --vector v.npy", "v^T J"),
           ('jaccli vjp -e "x ** 2" "[1, 2]" --vector "[1, 0]"', "the first row of J")],
          vector_options, nonfinite_options)
def vjp(ctx: click.Context, **kw: Any) -> None:
    _invoke(ctx, "vjp", **kw)


@_command("hvp", "Hessian-vector product H v.",
          "Hessian-vector product H v of a scalar FUNC (no matrix formed): hvp_x shaped like x.",
          [("jaccli hvp loss.py w.npy --vector v.npy", "H v"),
           ('jaccli hvp -e "sum(x ** 3)" "[1, 2]" --vector "[1, 0]"', "the first column of H")],
          vector_options, nonfinite_options)
def hvp(ctx: click.Context, **kw: Any) -> None:
    _invoke(ctx, "hvp", **kw)


@_command("check", "Verify the derivative against forward mode and finite differences.",
          "Check the Jacobian (--order 1) or the Hessian (--order 2) of FUNC at the INPUTs: reverse mode "
          "against forward mode, and both against central finite differences in float64. Prints the verdict "
          "and the worst entries; exits 1 on failure, 5 when inconclusive (finite differences cannot resolve an "
          "entry where AD differs). A mismatch where f is kinked (abs at 0, a max tie: one-sided differences "
          "disagree) is convention-dependent, not a failure.",
          [("jaccli check model.py x.npy", "the verdict, the worst entries"),
           ("jaccli check loss.py w.npy --order 2 --rows 0:10", "ten rows of the Hessian"),
           ("jaccli check model.py x.npy --format json | jq .passed", "the verdict, for scripts")],
          check_options, check_nonfinite_options, check_sparse_options, plot_option, outputs=report_options)
def check(ctx: click.Context, **kw: Any) -> None:
    _invoke(ctx, "check", **kw)


@_command("info", "Shapes, sizes, operations and the evaluation plan, without differentiating.",
          "What FUNC is at the INPUTs, without computing any derivative: inputs, outputs, the Jacobian "
          "(--order 1) or Hessian (--order 2) blocks with their sizes, the operations recorded, and the sweeps "
          "that jacobian (hessian) would run.",
          [("jaccli info model.py x.npy", "shapes, sizes and the plan"),
           ("jaccli info loss.py w.npy --order 2 --format json", "the Hessian's, as JSON")],
          info_options, outputs=report_options)
def info(ctx: click.Context, **kw: Any) -> None:
    _invoke(ctx, "info", **kw)


@_command("sparsity", "The sparsity pattern of the Jacobian or Hessian, and its colouring.",
          "The sparsity pattern of FUNC's Jacobian (or, with --hessian, of a scalar FUNC's Hessian) at the "
          "INPUTs, from the recorded operations: nnz, bandwidths, colourings and the sweeps they take, and a "
          "spy view on a terminal. Needs scipy: pip install 'jaccli[sparse]'.",
          [("jaccli sparsity model.py x.npy -o P.npz", "save the pattern"),
           ("jaccli jacobian model.py x.npy --sparse --pattern P.npz -o J.npz", "reused")],
          sparsity_options, outputs=sparsity_outputs)
def sparsity(ctx: click.Context, args: tuple[str, ...], expression: str | None, wrt: str | None, dtype: str | None,
             hessian: bool, mode: str, recovery: str, output: str | None, plot: str | None, fmt: str | None,
             color: str, no_color: bool, quiet: bool, debug: bool) -> None:
    func, sources = _split_args(args, expression)
    if recovery != "auto" and not hessian:
        raise BadUsage("--recovery is how a sparse Hessian is read back; give --hessian too")
    out = Output(path=Path(output) if output else None, format=fmt, color=_color(color, no_color), quiet=quiet,
                 plot=Path(plot) if plot else None)
    root = ctx.find_root().obj or {}
    from .commands.sparsity_report import sparsity_command

    _started()
    sparsity_command(func=func, expression=expression, sources=sources, wrt=wrt, dtype=dtype, hessian=hessian,
                     mode=mode, recovery=recovery, out=out, debug=debug or bool(root.get("debug")),
                     argv=root.get("argv", []))


def _families(ctx: click.Context, param: click.Parameter, value: str | None) -> list[str] | None:
    if value is None:
        return None
    from jaccli.api.ops_table import ops_table

    known = sorted({row["family"] for row in ops_table()})
    asked = [v.strip().lower() for v in value.split(",") if v.strip()]
    unknown = [v for v in asked if v not in known]
    if unknown or not asked:
        raise click.BadParameter(f"{value!r}: families are {', '.join(known)}", ctx, param)
    return asked


@cli.command("ops", short_help="The supported NumPy functions and what each supports.",
             epilog=_examples([("jaccli ops", "every supported function"),
                               ("jaccli ops det sin", "those whose name or family holds det or sin"),
                               ("jaccli ops --family linalg --format json", "one family, as JSON")]),
             context_settings=CONTEXT)
@click.argument("names", nargs=-1, metavar="[NAME]...")
@click.option("--family", metavar="NAMES", callback=_families,
              help="Only these families (comma-separated), e.g. elementwise,linalg.")
@click.option("--format", "fmt", type=keywords("table", "text", "json"),
              help="Stdout format: table on a terminal, else text; json: one report object.")
@color_options
@click.pass_context
def ops(ctx: click.Context, names: tuple[str, ...], family: list[str] | None, fmt: str | None, color: str,
        no_color: bool) -> None:
    """Every NumPy function, method and operator jaccli differentiates, from its registry: family, kind,
    reverse and forward rules, highest order, and the convention at non-differentiable points. Each NAME
    keeps the rows whose name or family holds it (sin, np.linalg, det). Anything not listed is refused
    with exit status 3 (exit statuses: jaccli --help).
    """
    from .commands.info import show_ops

    root = ctx.find_root().obj or {}
    show_ops(family, fmt, _color(color, no_color), root.get("argv", []), names)


def main(argv: list[str] | None = None) -> Any:
    """The command line in this process (the console script, `jaccli.cli.main`, runs it under crash_watch)."""
    from .commands import streams

    unwind_on_termination()
    _hold_collector()
    try:
        with streams.standard_streams():
            return cli.main(argv, prog_name="jaccli")
    finally:
        _started(freeze=False)  # (a run that ended before the user's code, on a usage error: nothing to freeze)


class _StartUp:
    collector_held = False


def _hold_collector() -> None:
    """Keep Python's cyclic garbage collector off while jaccli starts up (until `_started`).

    Importing NumPy, click and jaccli allocates ~25,000 objects that live as long as the process and
    make no garbage; the collections those allocations trigger walk them again and again (~6 ms of a
    run), and the one at exit once more. A collector that was off stays off.
    """
    if gc.isenabled():
        gc.disable()
        _StartUp.collector_held = True


def _started(freeze: bool = True) -> None:
    """The imports are done and the user's code comes next: what start-up made goes to the collector's
    permanent generation (gc.freeze: never walked again, nor at exit), and the collector held by
    `_hold_collector` runs as usual again (once; later calls do nothing)."""
    if _StartUp.collector_held:
        _StartUp.collector_held = False
        if freeze:
            gc.freeze()
        gc.enable()


if __name__ == "__main__":  # pragma: no cover
    main()
