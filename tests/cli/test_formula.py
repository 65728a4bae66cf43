"""`pulse formula eval`, run as a user runs it: values, no value, refusals, exit codes."""

import json

import pytest

from tests.support.cli import pulse


@pytest.mark.parametrize(
    ("args", "printed"),
    [
        (["--", "-2^2"], "-4"),  # `--` ends the options: a formula may start with -
        (["0.1 + 0.2 == 0.3"], "true"),
        (["--var", "errors=5", "--var", "requests=200", "errors / requests * 100"], "2.5"),
        (["round(-2.5) + 7 mod -3"], "-5"),
    ],
)
def test_it_prints_the_value(args, printed):
    result = pulse("formula", "eval", *args)

    assert (result.returncode, result.stdout.strip(), result.stderr) == (0, printed, "")


def test_json_gives_the_value_and_the_reason_for_none():
    value = pulse("formula", "eval", "--json", "--var", "x=2", "x ^ 10")
    none = pulse("formula", "eval", "--json", "--var", "x=0", "1 / x")

    assert (value.returncode, json.loads(value.stdout)) == (0, {"value": 1024, "reason": None})
    assert (none.returncode, json.loads(none.stdout)) == (1, {"value": None, "reason": "division by zero (char 3)"})


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (["__import__('os').system('touch /tmp/pwned')"], "names may not contain __ (char 1)"),
        (["2x"], "missing operator before 'x' (no implicit multiplication: write *) (char 2)"),
        (["errors / requests"], "no value for errors (char 1)"),
        (["sum(1, 2)"], "unknown function sum"),
    ],
)
def test_an_invalid_formula_or_a_missing_variable_exits_2_naming_the_place(args, error):
    result = pulse("formula", "eval", *args)

    assert result.returncode == 2 and result.stdout == ""
    assert error in result.stderr and "Traceback" not in result.stderr, result.stderr


def test_a_variable_that_is_not_a_number_is_a_usage_error():
    result = pulse("formula", "eval", "--var", "x=ten", "x")

    assert result.returncode == 2 and "'x=ten' is not NAME=NUMBER" in result.stderr
