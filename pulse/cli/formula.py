"""`pulse formula eval`: try a calculated-metric formula before putting it in a file."""

from __future__ import annotations

import json
import sys

import click

from pulse.cli.output import echo


def _variable(_ctx: click.Context, _param: click.Parameter, given: tuple[str, ...]) -> dict[str, float]:
    values = {}
    for item in given:
        name, equals, text = item.partition("=")
        try:
            values[name.strip()] = float(text)
        except ValueError:
            equals = ""
        if not equals or not name.strip():
            raise click.BadParameter(f"{item!r} is not NAME=NUMBER", param_hint="--var")
    return values


def shown(value: float | bool | None) -> float | int | bool | None:
    """A result as mathjs prints it: integers without a decimal point."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return int(value)
    return value


@click.group()
def formula() -> None:
    """Calculated-metric formulas (mathjs syntax)."""


@formula.command("eval")
@click.option("--var", "values", multiple=True, callback=_variable, metavar="NAME=VALUE", help="A variable's value.")
@click.option("--json", "as_json", is_flag=True, help='Print {"value": ..., "reason": ...}.')
@click.argument("text", metavar="FORMULA")
def evaluate_now(values: dict[str, float], as_json: bool, text: str) -> None:
    """Evaluate FORMULA with the variables' values and print its value, a number or true/false.
    Put `--` before a formula that starts with `-` (`pulse formula eval -- -2^2`).

    Exit 0 with a value, 1 when it has none (a division by zero, an overflow: the reason is
    printed), 2 for a formula that is not valid or a variable without a value (the position and
    the reason on stderr)."""
    from pulse.calculated.evaluation import evaluate
    from pulse.calculated.formula import parse

    result = evaluate(parse(text), values)  # a FormulaError is a ConfigError: exit 2, with its position
    value = shown(result.value)
    if as_json:
        echo(json.dumps({"value": value, "reason": result.reason}))
    elif result.value is None:
        echo(f"no value: {result.reason}")
    else:
        echo(json.dumps(value))  # true, false, -4, 0.30000000000000004
    sys.exit(0 if result.value is not None else 1)


COMMANDS = [formula]
