"""Option types and the option groups shared by commands, as decorators."""

from __future__ import annotations

import math
import os
import sys
from typing import TYPE_CHECKING, Any, Callable

import click

if TYPE_CHECKING:
    from click.shell_completion import CompletionItem

from jaccli.io.byte_sizes import parse_size
from .settings import DEFAULT_MAX_MEMORY


class SourceType(click.ParamType):
    """FUNC and INPUT arguments: any text (a file, file.py:name, name=SOURCE, a literal); completes files."""

    name = "source"

    def shell_complete(self, ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
        from click.shell_completion import CompletionItem

        return [CompletionItem(incomplete, type="file")]


class ChunkSize(click.ParamType):
    """A positive int or 'auto', in any case: --help shows the metavar as N|AUTO."""

    name = "N|auto"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int | str:
        if isinstance(value, int):
            return value
        if str(value).strip().lower() == "auto":
            return "auto"
        try:
            n = int(value)
        except ValueError:
            self.fail(f"{value!r} is not a positive integer or 'auto'", param, ctx)
        if n <= 0:
            self.fail(f"{n} is not positive; give a number of seeds per sweep, or 'auto'", param, ctx)
        return n


def keywords(*values: str) -> click.Choice:
    """One of `values`, in any case (as --chunk-size takes auto); click passes on the value as listed."""
    return click.Choice(values, case_sensitive=False)


class ByteSize(click.ParamType):
    """A size in bytes: 1073741824, 512MiB, 2G, 1.5GB."""

    name = "SIZE"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int):
            return value
        try:
            return parse_size(value)
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


def _batch_axis(ctx: click.Context, param: click.Parameter, value: int | None) -> int | None:
    if value is not None and value != 0:
        raise click.BadParameter(f"{value}: only axis 0 is supported; move the batch axis to the front", ctx, param)
    return value


Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]


def _stack(*decorators: Decorator) -> Decorator:
    def apply(f: Callable[..., Any]) -> Callable[..., Any]:
        for decorator in reversed(decorators):
            f = decorator(f)
        return f
    return apply


_BUDGET_MODULE = f"{__name__.partition('.')[0]}.expr.budget"  # (this package's own name, as recorded_functions')


class Limit(click.FloatRange):
    """A number in range, inf for no limit; NaN refused (it would pass every comparison with a count)."""

    def convert(self, value: Any, param: Any, ctx: Any) -> Any:
        number = super().convert(value, param, ctx)
        if math.isnan(number):
            self.fail(f"{value!r} is not a number; give a number, or inf for no limit", param, ctx)
        return number


def _expr_limit(field: str) -> Callable[[click.Context, click.Parameter, float], None]:
    """A callback that makes the option's value that field of the budget of -e expressions; every run sets it,
    to the default when the option is not given."""
    def set_limit(ctx: click.Context, param: click.Parameter, value: float) -> None:
        import dataclasses

        if _BUDGET_MODULE not in sys.modules and \
                ctx.get_parameter_source(param.name) is click.core.ParameterSource.DEFAULT:
            return  # (no budget was set in this process: the default, which the options' defaults are, holds)
        from jaccli.expr.budget import default_budget, set_default_budget

        whole = field != "seconds" and value != math.inf  # counts read as counts in messages: 10,000,000
        set_default_budget(dataclasses.replace(default_budget(), **{field: int(value) if whole else value}))
    return set_limit


function_options = _stack(
    click.argument("args", nargs=-1, metavar="FUNC INPUT...", type=SourceType()),
    click.option("-e", "--expr", "expression", metavar="EXPR",
                 help="A NumPy expression in place of FUNC, e.g. 'sin(x) * y'; runs no code."),
    click.option("--wrt", metavar="NAMES", help="Inputs to differentiate (x,y or 0,1); the others are data."),
    click.option("--dtype", type=keywords("float64", "float32"),
                 help="Cast the floating-point inputs first."),
    click.option("--expr-max-elements", type=Limit(min=1), default=1e7, show_default="1e7", metavar="N",
                 expose_value=False, callback=_expr_limit("max_elements"),
                 help="Elements of any array an -e expression makes."),
    click.option("--expr-max-work", type=Limit(min=1), default=1e9, show_default="1e9", metavar="N",
                 expose_value=False, callback=_expr_limit("max_work"),
                 help="Multiply-adds of an -e expression's evaluation."),
    click.option("--expr-timeout", type=Limit(min=0, min_open=True), default=10.0, show_default="10",
                 metavar="SECONDS", expose_value=False, callback=_expr_limit("seconds"),
                 help="Seconds an -e expression's evaluation may take."),
)

_rows = click.option("--rows", metavar="SPEC", help="Rows of the flattened [M, N] matrix: i, a:b, a:b:c, i,j,k "
                     "or @file.npy.")
_cols = click.option("--cols", metavar="SPEC", help="Columns of the flattened matrix, as --rows.")
_batch = click.option("--batch-axis", type=int, callback=_batch_axis, metavar="0",
                      help="Per-sample derivatives along axis 0: [B, M, N] blocks.")
_strict = click.option("--strict", is_flag=True, help="Fail (exit 1) when an output does not depend on an input.")
_order = click.option("--order", type=click.IntRange(1, 2), default=1, metavar="1|2",
                      help="1: the Jacobian (default); 2: the Hessian.")

class Tolerance(click.FloatRange):
    """A finite number >= 0: NaN would pass every comparison (every test against it is false)."""

    name = "tolerance"

    def __init__(self) -> None:
        super().__init__(min=0)

    def convert(self, value: Any, param: Any, ctx: Any) -> Any:
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number; give a tolerance such as 1e-6", param, ctx)
        return number


# The defaults follow the result's dtype (jaccli.check.verification.DEFAULT_TOLERANCES), as --rtol's and --atol's
# help and the man page say.
tolerance_options = _stack(
    click.option("--rtol", type=Tolerance(), metavar="R",
                 help="Passes when |a - b| <= atol + rtol |b| (default 1e-5; float32 2e-3)."),
    click.option("--atol", type=Tolerance(), metavar="A", help="Absolute tolerance (default 1e-7; float32 1e-4)."),
)

nonfinite_options = _stack(
    click.option("--fail-on-nonfinite", is_flag=True,
                 help="Fail (exit 1) when the result holds NaN or inf."),
)

# check has no -o: its result is the verdict.
check_nonfinite_options = _stack(
    click.option("--fail-on-nonfinite", is_flag=True,
                 help="Fail (exit 1) when the derivative holds NaN or inf."),
)

matrix_options = _stack(
    _rows, _cols, _batch,
    click.option("--mode", type=keywords("auto", "reverse", "forward", "bidirectional"), default="auto",
                 metavar="MODE", help="reverse (rows), forward (columns), auto (the fewer); bidirectional."),
    click.option("--chunk-size", type=ChunkSize(), default="auto",
                 help="Seeds per sweep, or auto (default) to fit the memory budget."),
    _strict,
    click.option("--max-memory", type=ByteSize(), default=str(DEFAULT_MAX_MEMORY),
                 help="Largest result held (default 1GiB); more streams to -o .npy."),
    click.option("--compare", metavar="REF", type=SourceType(),
                 help="Fail (exit 1) unless equal to a stored result (.npy, .npz)."),
    tolerance_options,
)

check_options = _stack(_order, _rows, _cols, _batch, tolerance_options, _strict)

info_options = _stack(_order, _batch)

vector_options = _stack(
    click.option("--vector", "vectors", multiple=True, required=True, metavar="V",
                 help="The vector, as an INPUT; name=SOURCE or .npz for several. Repeatable."),
)

color_options = _stack(
    click.option("--color", type=keywords("auto", "always", "never"), default="auto", metavar="WHEN",
                 help="auto (terminal, NO_COLOR, FORCE_COLOR), always (pipes too), never."),
    click.option("--no-color", is_flag=True, help="Same as --color never."),
)

output_options = _stack(
    click.option("-o", "--output", type=click.Path(dir_okay=True, writable=False), metavar="PATH",
                 help="Write the result to .npy, .npz, .csv, .txt, .json, .zarr, atomically."),
    click.option("--output-format", type=keywords("npy", "npz", "csv", "txt", "json"), metavar="FORMAT",
                 help="npy, npz, csv, txt or json: -o's format whatever its name (-o /dev/stdout, a named pipe)."),
    click.option("--format", "fmt", type=keywords("table", "text", "csv", "json"), metavar="FORMAT",
                 help="table (on a terminal), text (in a pipe), csv, json (one object)."),
    click.option("--precision", type=click.IntRange(1, 17), metavar="N",
                 help="Digits in the table (default 6); text, csv, JSON keep every digit."),
    click.option("--heatmap", is_flag=True, help="Colour cells by magnitude; draw the whole matrix."),
    color_options,
    click.option("--stats", is_flag=True, help="Rows, columns, sweeps, timings on stderr; the table's full header."),
    click.option("-q", "--quiet", is_flag=True, help="No warnings, notes or progress bars on stderr."),
    click.option("--debug", is_flag=True, envvar="JACCLI_DEBUG", help="Full tracebacks of errors."),
)

plot_option = click.option(
    "--plot", type=click.Path(dir_okay=False), metavar="FILE",
    help="Draw the matrix (check: the error) to .png, .svg or .pdf; jaccli[plot].")

# check and info print a report, not a result: no -o, no csv.
report_options = _stack(
    click.option("--format", "fmt", type=keywords("table", "text", "json"), metavar="FORMAT",
                 help="table (on a terminal), text (in a pipe), json (one object)."),
    color_options,
    click.option("-q", "--quiet", is_flag=True, help="No warnings, notes or progress bars on stderr."),
    click.option("--debug", is_flag=True, envvar="JACCLI_DEBUG", help="Full tracebacks of errors."),
)

sparse_options = _stack(
    click.option("--sparse", is_flag=True,
                 help="A sparse result, a sweep per colour (.npz, .mtx, .json); jaccli[sparse]."),
    click.option("--pattern", metavar="P.npz", type=SourceType(),
                 help="With --sparse: reuse a pattern saved by jaccli sparsity -o P.npz."),
    click.option("--recovery", type=keywords("auto", "direct", "substitution"), default="auto", metavar="HOW",
                 help="A sparse Hessian read back: direct (exact), substitution (fewer sweeps), auto."),
)

parallel_options = _stack(
    click.option("--workers", type=click.IntRange(min=1), metavar="N",
                 help="Compute the blocks of sweeps on a local Dask cluster of N single-threaded worker processes, "
                      "started and stopped by jaccli (small work stays in this process). Needs "
                      "pip install 'jaccli[dask]'."),
    click.option("--scheduler", metavar="ADDRESS", callback=lambda ctx, param, value: _scheduler(value),
                 help="The same on a running Dask scheduler's workers (tcp://host:8786; default: "
                      "$DASK_SCHEDULER_ADDRESS); the function file, its modules and inputs go with the tasks."),
)


def _scheduler(address: str | None) -> str | None:
    """--scheduler, else Dask's DASK_SCHEDULER_ADDRESS (read without importing Dask)."""
    if address is not None or "DASK_SCHEDULER_ADDRESS" not in os.environ:
        return address
    from jaccli.parallel.cluster import environment_address

    return environment_address()

check_sparse_options = _stack(
    click.option("--sparse", is_flag=True,
                 help="Check the sparse result against one JVP and one VJP."),
)

sparsity_options = _stack(
    click.option("--hessian", is_flag=True, help="The pattern of the Hessian of a scalar FUNC."),
    click.option("--mode", type=keywords("auto", "forward", "reverse", "bidirectional"), default="auto",
                 metavar="MODE", help="The side of the colouring: forward, reverse, bidirectional, auto."),
    click.option("--recovery", type=keywords("auto", "direct", "substitution"), default="auto", metavar="HOW",
                 help="A sparse Hessian read back: direct (exact), substitution (fewer sweeps), auto."),
)

# sparsity prints a report; its -o saves the pattern.
sparsity_outputs = _stack(
    click.option("-o", "--output", type=click.Path(dir_okay=False, writable=False), metavar="P.npz",
                 help="Save the pattern and its plan, for --pattern."),
    click.option("--plot", type=click.Path(dir_okay=False), metavar="FILE",
                 help="Draw a spy plot to .png, .svg or .pdf; jaccli[plot]."),
    report_options,
)
