"""Option types and the option groups shared by commands, as decorators."""

from __future__ import annotations

import math
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


def _expr_limit(field: str) -> Callable[[click.Context, click.Parameter, float], None]:
    """A callback that makes the option's value that field of the budget of -e expressions; every run sets it,
    to the default when the option is not given."""
    def set_limit(ctx: click.Context, param: click.Parameter, value: float) -> None:
        import dataclasses

        from jaccli.expr.budget import default_budget, set_default_budget

        whole = field != "seconds" and value != math.inf  # counts read as counts in messages: 10,000,000
        set_default_budget(dataclasses.replace(default_budget(), **{field: int(value) if whole else value}))
    return set_limit


_EXPR_LIMITS = "an operation beyond it is refused before it runs (exit 2); inf for no limit"

function_options = _stack(
    click.argument("args", nargs=-1, metavar="FUNC INPUT...", type=SourceType()),
    click.option("-e", "--expr", "expression", metavar="EXPR",
                 help="A NumPy expression in place of FUNC, e.g. 'sin(x) * y'; its names are its inputs. "
                      "Checked and evaluated without running code: safe on untrusted text."),
    click.option("--wrt", metavar="NAMES", help="Inputs to differentiate, by name or position (x,y or 0,1); "
                 "the others are data. Default: all given inputs."),
    click.option("--dtype", type=keywords("float64", "float32"),
                 help="Cast the inputs (differentiated ones and floating-point data) before differentiating; "
                      "values too large for float32 become inf, with a warning."),
    click.option("--expr-max-elements", type=click.FloatRange(min=1), default=1e7, show_default="1e7", metavar="N",
                 expose_value=False, callback=_expr_limit("max_elements"),
                 help=f"Elements of any one array an -e expression makes; {_EXPR_LIMITS}."),
    click.option("--expr-max-work", type=click.FloatRange(min=1), default=1e9, show_default="1e9", metavar="N",
                 expose_value=False, callback=_expr_limit("max_work"),
                 help=f"Multiply-adds of all of an -e expression's operations, each evaluation; {_EXPR_LIMITS}."),
    click.option("--expr-timeout", type=click.FloatRange(min=0, min_open=True), default=10.0, show_default="10",
                 metavar="SECONDS", expose_value=False, callback=_expr_limit("seconds"),
                 help="Seconds an evaluation of an -e expression may take (exit 2 beyond)."),
)

_rows = click.option("--rows", metavar="SPEC", help="Rows of the flattened [M, N] matrix to compute: i, a:b, "
                     "a:b:c, i,j,k, ... or @file.npy; only these are evaluated.")
_cols = click.option("--cols", metavar="SPEC", help="Columns of the flattened matrix to compute, as --rows.")
_batch = click.option("--batch-axis", type=int, callback=_batch_axis, metavar="0",
                      help="Per-sample derivatives along axis 0 of inputs and outputs: [B, M, N] blocks.")
_strict = click.option("--strict", is_flag=True, help="Fail (exit 1) when an output does not depend on a "
                       "differentiated input at all, naming both.")
_order = click.option("--order", type=click.IntRange(1, 2), default=1, show_default=True, metavar="1|2",
                      help="1: the Jacobian; 2: the Hessian of a scalar function.")

# The defaults follow the result's dtype (jaccli.check.verification.DEFAULT_TOLERANCES); shown in --help and the man page.
TOLERANCE_HELP = "default: 1e-5 and 1e-7 for float64 results, 2e-3 and 1e-4 for float32"

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


tolerance_options = _stack(
    click.option("--rtol", type=Tolerance(), metavar="R",
                 help=f"Relative tolerance: an entry passes when |a - b| <= atol + rtol |b| ({TOLERANCE_HELP})."),
    click.option("--atol", type=Tolerance(), metavar="A", help="Absolute tolerance, as --rtol."),
)

nonfinite_options = _stack(
    click.option("--fail-on-nonfinite", is_flag=True,
                 help="Fail (exit 1) when the result holds NaN or inf; the -o file is then not written."),
)

# check has no -o: its result is the verdict.
check_nonfinite_options = _stack(
    click.option("--fail-on-nonfinite", is_flag=True,
                 help="Fail (exit 1) when the checked derivative holds NaN or inf."),
)

matrix_options = _stack(
    _rows, _cols, _batch,
    click.option("--mode", type=keywords("auto", "reverse", "forward", "bidirectional"), default="auto",
                 show_default=True, help="Sweeps: reverse computes rows, forward computes columns; auto picks the "
                 "fewer. With --sparse, it forces the side of the colouring (bidirectional: both)."),
    click.option("--chunk-size", type=ChunkSize(), default="auto", show_default=True,
                 help="Seeds per sweep, or auto to fit the memory budget."),
    _strict,
    click.option("--max-memory", type=ByteSize(), default=str(DEFAULT_MAX_MEMORY), show_default="1GiB",
                 help="Largest result held in memory; larger results are streamed to -o FILE.npy, "
                      "or refused (exit 4)."),
    click.option("--compare", metavar="REF", type=SourceType(),
                 help="Compare the result with a stored one (.npy: the one block; .npz: by block key) and "
                      "fail (exit 1) beyond --rtol/--atol. The reference is the full block, or the [R, C] "
                      "selection with --rows/--cols."),
    tolerance_options,
)

check_options = _stack(_order, _rows, _cols, _batch, tolerance_options, _strict)

info_options = _stack(_order, _batch)

vector_options = _stack(
    click.option("--vector", "vectors", multiple=True, required=True, metavar="V",
                 help="The vector: a file or literal like an INPUT; name=SOURCE or an .npz for several "
                      "inputs (jvp, hvp) or outputs (vjp: f0=, f1=). Repeatable."),
)

color_options = _stack(
    click.option("--color", type=keywords("auto", "always", "never"), default="auto", show_default=True,
                 help="Colours and tables on stdout: auto on a terminal (off when NO_COLOR is set, on when "
                      "FORCE_COLOR is); always also in a pipe (| less -R)."),
    click.option("--no-color", is_flag=True, help="Same as --color never."),
)

output_options = _stack(
    click.option("-o", "--output", type=click.Path(dir_okay=False, writable=False), metavar="PATH",
                 help="Write the result to PATH: .npy (one block), .npz, .csv, .txt or .json, by extension; "
                      "written atomically."),
    click.option("--format", "fmt", type=keywords("table", "text", "csv", "json"),
                 help="Stdout format. Default: table on a terminal, text otherwise; json prints one "
                      "report object."),
    click.option("--precision", type=click.IntRange(1, 17), metavar="N",
                 help="Significant digits in table, text and csv output (default 6) and in .csv/.txt files "
                      "(default exact); JSON keeps every digit."),
    click.option("--heatmap", is_flag=True, help="Colour table cells by magnitude, then show the whole "
                 "matrix pooled to the terminal: sign by colour, log10 |value| by intensity, with a legend."),
    color_options,
    click.option("--stats", is_flag=True, help="Print rows and columns evaluated, sweeps, chunk size and "
                 "timings to stderr."),
    click.option("-q", "--quiet", is_flag=True, help="No warnings, notes or progress bars on stderr (errors still print)."),
    click.option("--debug", is_flag=True, envvar="JACCLI_DEBUG",
                 help="Show the full traceback of an error."),
)

plot_option = click.option(
    "--plot", type=click.Path(dir_okay=False), metavar="FILE",
    help="Draw the whole matrix to FILE (.png, .svg or .pdf) as a signed log-scale heatmap "
         "(check: the error). Needs pip install 'jaccli[plot]'.")

# check and info print a report, not a result: no -o, no csv.
report_options = _stack(
    click.option("--format", "fmt", type=keywords("table", "text", "json"),
                 help="Stdout format. Default: table on a terminal, text otherwise; json prints one "
                      "report object."),
    color_options,
    click.option("-q", "--quiet", is_flag=True, help="No warnings, notes or progress bars on stderr (errors still print)."),
    click.option("--debug", is_flag=True, envvar="JACCLI_DEBUG",
                 help="Show the full traceback of an error."),
)

sparse_options = _stack(
    click.option("--sparse", is_flag=True,
                 help="Detect the sparsity pattern, colour it and compute in one sweep per colour: a sparse "
                      "result, written to .npz (scipy.sparse.save_npz), .mtx (Matrix Market) or .json (COO), "
                      "shown as COO triplets. Needs scipy: pip install 'jaccli[sparse]'."),
    click.option("--pattern", metavar="P.npz", type=SourceType(),
                 help="With --sparse: reuse a pattern saved by `jaccli sparsity ... -o P.npz`; refused when it "
                      "does not fit this point (shape, function, control path)."),
    click.option("--recovery", type=keywords("auto", "direct", "substitution"), default="auto", show_default=True,
                 help="How a sparse Hessian is read back from its sweeps: direct (star colouring, exact), substitution "
                      "(acyclic colouring: fewer sweeps, values to rounding), or auto (substitution when the sweeps "
                      "it saves are worth its colouring time)."),
)

check_sparse_options = _stack(
    click.option("--sparse", is_flag=True,
                 help="Check the sparse result: J v against one JVP and v^T J against one VJP for random v; "
                      "lists the rows and columns that disagree."),
)

sparsity_options = _stack(
    click.option("--hessian", is_flag=True, help="The pattern of the Hessian of a scalar FUNC (symmetric colouring)."),
    click.option("--mode", type=keywords("auto", "forward", "reverse", "bidirectional"), default="auto",
                 show_default=True, help="The side of the colouring: auto takes the fewest sweeps."),
    click.option("--recovery", type=keywords("auto", "direct", "substitution"), default="auto", show_default=True,
                 help="How a sparse Hessian is read back from its sweeps: direct (star colouring, exact), substitution "
                      "(acyclic colouring: fewer sweeps, values to rounding), or auto (substitution when the sweeps "
                      "it saves are worth its colouring time)."),
)

# sparsity prints a report; its -o saves the pattern.
sparsity_outputs = _stack(
    click.option("-o", "--output", type=click.Path(dir_okay=False, writable=False), metavar="P.npz",
                 help="Save the pattern and its plan to P.npz, for --pattern; written atomically."),
    click.option("--plot", type=click.Path(dir_okay=False), metavar="FILE",
                 help="Draw the pattern to FILE (.png, .svg or .pdf) as a spy plot coloured by colour group. "
                      "Needs pip install 'jaccli[plot]'."),
    report_options,
)
