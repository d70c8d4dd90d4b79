"""--color auto|always|never, --no-color, NO_COLOR and FORCE_COLOR: on a pseudo-terminal, in pipes and in process."""

from __future__ import annotations

import subprocess
import sys

import pytest

from jaccli.cli.main import cli

from .test_cli import invoke, make_runner, sample
from .test_cli_subprocess import JACCLI, _on_a_terminal, clean_env

ESC = "\x1b["
ROBOT = [sample("robot_arm.py"), sample("robot_arm_q.npy")]

# Every command, with arguments that succeed; each prints a view for people on a terminal.
COMMANDS = {
    "jacobian": ["jacobian", *ROBOT],
    "hessian": ["hessian", "-e", "sum(x ** 3)", "[1, 2]"],
    "grad": ["grad", "-e", "sum(x ** 3)", "[1, 2]"],
    "jvp": ["jvp", "-e", "x ** 2", "[1, 2]", "--vector", "[1, 0]"],
    "vjp": ["vjp", "-e", "x ** 2", "[1, 2]", "--vector", "[1, 0]"],
    "hvp": ["hvp", "-e", "sum(x ** 3)", "[1, 2]", "--vector", "[1, 0]"],
    "check": ["check", "-e", "sin(x)", "[1, 2]"],
    "info": ["info", "-e", "sin(x)", "[1, 2]"],
    "sparsity": ["sparsity", "-e", "sin(x)", "[1, 2]"],
    "ops": ["ops", "--family", "linalg"],
}


def test_every_command_takes_color_and_no_color():
    assert set(COMMANDS) == set(cli.commands)
    for name, command in cli.commands.items():
        options = {opt for param in command.params for opt in param.opts}
        assert {"--color", "--no-color"} <= options, name


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_color_always_colours_a_pipe_and_never_does_not(name):
    runner = make_runner()
    always = invoke(runner, *COMMANDS[name], "--color", "always")
    assert always.exit_code == 0, always.stderr
    assert ESC in always.stdout
    for off in (["--color", "never"], ["--no-color"], []):
        plain = invoke(runner, *COMMANDS[name], *off, env={"FORCE_COLOR": "1"} if off else None)
        assert plain.exit_code == 0 and ESC not in plain.stdout, (off, plain.stdout)


@pytest.mark.parametrize("env, args, coloured", [
    ({"FORCE_COLOR": "1"}, [], True),            # forced colour reaches a pipe, as rich reads FORCE_COLOR
    ({"FORCE_COLOR": ""}, [], False),            # empty: not set
    ({"NO_COLOR": "1", "FORCE_COLOR": "1"}, [], False),  # NO_COLOR turns colour off first (clig.dev)
    ({"NO_COLOR": "1"}, ["--color", "always"], True),  # the command line beats the environment
    ({"FORCE_COLOR": "1"}, ["--color", "never"], False),
    ({"FORCE_COLOR": "1"}, ["--color", "AUTO"], True),
])
def test_the_environment_decides_only_under_color_auto(env, args, coloured):
    result = invoke(make_runner(), *COMMANDS["jacobian"], *args, env=env)
    assert result.exit_code == 0, result.stderr
    assert (ESC in result.stdout) is coloured
    # Coloured output is the terminal's view (the table); otherwise a pipe gets plain numbers.
    assert ("df_dq  shape=(3, 3)" in result.stdout) is coloured


def test_a_bad_color_value_is_a_usage_error():
    result = invoke(make_runner(), *COMMANDS["jacobian"], "--color", "sometimes")
    assert result.exit_code == 2 and "'sometimes' is not one of 'auto', 'always', 'never'" in result.stderr


@pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pseudo-terminal")
@pytest.mark.parametrize("args, env, coloured", [
    ([], {}, True),
    (["--color", "never"], {}, False),
    (["--no-color"], {}, False),
    ([], {"NO_COLOR": "1"}, False),
    (["--color", "always"], {"NO_COLOR": "1"}, True),
])
def test_on_a_terminal(tmp_path, args, env, coloured):
    shown = _on_a_terminal(["check", "-e", "sin(x)", "[1, 2]", *args], tmp_path, **env)
    assert "passed" in shown and (ESC in shown) is coloured


@pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX shell")
def test_color_always_piped_through_cat_keeps_its_escape_codes(tmp_path):
    command = " ".join(f"'{a}'" for a in JACCLI + COMMANDS["jacobian"])
    piped = subprocess.run(f"{command} --color always | cat", shell=True, cwd=tmp_path, capture_output=True,
                           text=True, env=clean_env(), timeout=60)
    assert piped.returncode == 0 and ESC in piped.stdout and "df_dq" in piped.stdout
    plain = subprocess.run(f"{command} | cat", shell=True, cwd=tmp_path, capture_output=True, text=True,
                           env=clean_env(), timeout=60)
    assert plain.returncode == 0 and ESC not in plain.stdout and "df_dq" not in plain.stdout
