"""The formula language of calculated metrics: mathjs's numeric subset. Pure: no database, no broker.

Expected values are mathjs's (its documented semantics and its unit tests: parse.test.js,
round.test.js, mod.test.js, floor.test.js), as `math.evaluate(text, VARIABLES)` gives them.
"""

import builtins
import math
import pickle
import time

import numexpr
import pytest

from pulse.calculated import evaluation
from pulse.calculated.evaluation import Result, evaluate
from pulse.calculated.formula import FormulaError, parse
from pulse.errors import ConfigError

VARIABLES = {"x": 2.0, "y": 3.0, "z": -4.0, "zero": 0.0, "errors": 5.0, "requests": 200.0}

# (formula, mathjs's value): a float, or a bool for comparisons and logic
VALUES = [
    # arithmetic, precedence, associativity
    ("1 + 2 * 3", 7.0),
    ("(1 + 2) * 3", 9.0),
    ("10 - 4 - 3", 3.0),
    ("12 / 3 / 2", 2.0),
    ("2 * 3 / 4", 1.5),
    ("1e3 + .5", 1000.5),
    ("2. * 1E-3", 0.002),
    ("2.5e+2", 250.0),
    ("0.1 + 0.2", 0.30000000000000004),
    ("errors / requests * 100", 2.5),
    ("-x", -2.0),
    ("--x", 2.0),
    ("+x", 2.0),
    ("x - -y", 5.0),
    ("x\t*\u00a0y", 6.0),
    # power: right-associative, tighter than unary minus on its left, taking one on its right
    ("-2^2", -4.0),
    ("(-2)^2", 4.0),
    ("2^3^2", 512.0),
    ("(2^3)^2", 64.0),
    ("2^-3", 0.125),
    ("2^-3^2", 0.001953125),
    ("-2^-2", -0.25),
    ("2 * 3^2", 18.0),
    ("8 / 2^2", 2.0),
    ("x^y", 8.0),
    ("pow(2, 10)", 1024.0),
    ("4^0.5", 2.0),
    ("(-8)^3", -512.0),
    ("0.5^(1/0)", 0.0),
    ("2^(-1/0)", 0.0),
    ("(-0.5)^(1/0)", 0.0),
    # modulo: the sign of the divisor, x mod 0 is x, tolerant floor, % followed by an operand
    ("7 % 3", 1.0),
    ("-7 % 3", 2.0),
    ("7 mod -3", -2.0),
    ("-7 mod -3", -1.0),
    ("mod(-10, 4)", 2.0),
    ("mod(10, -4)", -2.0),
    ("5 mod 0", 5.0),
    ("-5 % 0", -5.0),
    ("5.5 mod 2", 1.5),
    ("mod(0.15, 0.05)", -2.7755575615628914e-17),
    ("3%-100", -97.0),
    ("3%+100", 3.0),
    ("10 % 3 * 2", 2.0),
    ("10 / 2 % 3", 2.0),
    ("2 + 7 mod 4", 5.0),
    # round: half away from zero, on the shortest decimal form, snapped to 12 decimals first
    ("round(2.5)", 3.0),
    ("round(-2.5)", -3.0),
    ("round(0.5)", 1.0),
    ("round(-0.5)", -1.0),
    ("round(2.4)", 2.0),
    ("round(1.005, 2)", 1.01),
    ("round(2.675, 2)", 2.68),
    ("round(-1.45, 1)", -1.5),
    ("round(1234.5678, 2)", 1234.57),
    ("round(2.4999999999999996)", 3.0),
    ("round(0.145 * 100)", 15.0),
    ("round(6.999999999999998, 14)", 7.0),
    ("round(6.999999999999998, 15)", 6.999999999999998),
    ("round(3.14159, 3)", 3.142),
    ("round(x / y, 4)", 0.6667),
    # floor, ceil, fix: tolerant
    ("floor(2.7)", 2.0),
    ("floor(-2.5)", -3.0),
    ("floor(0.9999999999999999)", 1.0),
    ("floor(7.999999999999999)", 8.0),
    ("ceil(2.1)", 3.0),
    ("ceil(-2.1)", -2.0),
    ("ceil(3.0000000000000004)", 3.0),
    ("floor(1.2345, 2)", 1.23),
    ("ceil(1.2345, 2)", 1.24),
    ("fix(2.7)", 2.0),
    ("fix(-2.7)", -2.0),
    ("fix(-2.75, 1)", -2.7),
    # the other functions
    ("abs(-3.5)", 3.5),
    ("sqrt(16)", 4.0),
    ("sqrt(2)", 1.4142135623730951),
    ("cbrt(27)", 3.0),
    ("cbrt(-8)", -2.0),
    ("exp(0)", 1.0),
    ("log(exp(2))", 2.0),
    ("log(8, 2)", 3.0),
    ("log(1000, 10)", 2.9999999999999996),
    ("log10(1000)", 3.0),
    ("log2(8)", 3.0),
    ("log2(0.25)", -2.0),
    ("sign(-3)", -1.0),
    ("sign(0)", 0.0),
    ("sign(x)", 1.0),
    ("min(3, 1, 2)", 1.0),
    ("max(3, 1, 2)", 3.0),
    ("max(x, y, z)", 3.0),
    ("min(x, y, z)", -4.0),
    ("max(5)", 5.0),
    ("max(1, 1 + 1e-13) - 1", 0.0),
    ("min(1 + 1e-13, 1) - 1", 9.992007221626409e-14),
    ("max(true, 0)", True),
    ("hypot(3, 4)", 5.0),
    ("hypot(-5, 12)", 13.0),
    ("hypot(1, 2, 2)", 3.0),
    ("hypot(1e-16)", 0.0),
    # comparisons: tolerant, chained
    ("0.1 + 0.2 == 0.3", True),
    ("0.1 * 3 != 0.3", False),
    ("1 == 1 + 1e-13", True),
    ("1 < 1 + 1e-13", False),
    ("1 <= 1 - 1e-13", True),
    ("1 > 1 - 1e-13", False),
    ("2 >= 3", False),
    ("1 < 2 < 3", True),
    ("3 > 2 > 1", True),
    ("2 < 3 > 4", False),
    ("1 < 3 < 2", False),
    ("2 < 4 > 3 <= 5 >= 5", True),
    ("x < y < z", False),
    ("true == 1", True),
    ("0/0 == 0/0", False),
    ("1/0 == 1/0", True),
    ("1/0 > 1e308", True),
    ("-1/0 < 0", True),
    # logic: booleans, not binds as tightly as unary minus
    ("not 3 > 2", False),
    ("not (3 < 2)", True),
    ("not 0", True),
    ("not not 2", True),
    ("not (0/0)", True),
    ("4 * not 2", 0.0),
    ("10 + not not 3", 11.0),
    ("not 3^2", False),
    ("2^not 2", 1.0),
    ("2 and 3", True),
    ("2 and 0", False),
    ("0 or 0", False),
    ("0 or 5", True),
    ("2 xor 6", False),
    ("2 xor 0", True),
    ("true xor false", True),
    ("true and false or true", True),
    ("1 or 0 and 0", True),
    ("1 xor 1 and 0", True),
    ("true + 1", 2.0),
    ("(2 > 1) * 10", 10.0),
    # the conditional: right-associative, only the chosen branch evaluated
    ("x > 1 ? 10 : 20", 10.0),
    ("x > 5 ? 10 : 20", 20.0),
    ("2 > 0 ? 1 : 2 < 0 ? -1 : 0", 1.0),
    ("-2 > 0 ? 1 : -2 < 0 ? -1 : 0", -1.0),
    ("0 > 0 ? 1 : 0 < 0 ? -1 : 0", 0.0),
    ("(2 > 0 ? 1 : 2 < 0) ? -1 : 0", -1.0),
    ("x ? (y ? 1 : 2) : 3", 1.0),
    ("x ? 1 : y ? 2 : 3", 1.0),
    ("3 ? 2 + 4 : 2 - 1", 6.0),
    ("zero ? 1 : 2", 2.0),
    ("0/0 ? 1 : 2", 2.0),
    ("2 > 1 ? true : false", True),
    ("zero > 0 ? errors / zero : 0", 0.0),
    ("false and sqrt(-1) > 0", False),
    ("true or sqrt(-1) > 0", True),
    ("1 < 0 < sqrt(-1)", False),
    ("zero ? sqrt(-1) : 1", 1.0),
    # Infinity on the way, a finite result
    ("1/(1/0)", 0.0),
    ("exp(-1/0)", 0.0),
    ("sign(1/0)", 1.0),
    ("min(1/0, 5)", 5.0),
    # minus zero on the way, as in JavaScript
    ("1/ceil(-0.5) < 0", True),
    ("1/fix(-0.5) < 0", True),
    ("1/round(-0.4) < 0", True),
    ("1/(-0 mod 3) > 0", True),
    # variables
    ("x * y + z", 2.0),
    ("(errors / requests) * 100 > 2 ? 1 : 0", 1.0),
]


def value(text):
    return evaluate(parse(text), VARIABLES)


@pytest.mark.parametrize(("text", "expected"), VALUES)
def test_it_gives_mathjs_results(text, expected):
    result = value(text)
    assert result == Result(expected)
    assert type(result.value) is type(expected)


# (formula, the reason it has no value)
NO_VALUE = [
    ("1/0", "division by zero (char 2)"),
    ("0/0", "division by zero (char 2)"),
    ("-1/0", "division by zero (char 3)"),
    ("errors / zero * 100", "division by zero (char 8)"),
    ("x / (y - 3)", "division by zero (char 3)"),
    ("(1/0) - (1/0)", "division by zero (char 3)"),
    ("1/(1/0) + 0/0", "division by zero (char 12)"),
    ("x > 0 ? 1/0 : 0", "division by zero (char 10)"),
    ("max(0/0, 1)", "division by zero (char 6)"),
    ("1^(1/0)", "division by zero (char 5)"),
    ("9^9^9^9", "overflow (char 4)"),
    ("exp(1000)", "overflow (char 1)"),
    ("1e308 * 10", "overflow (char 7)"),
    ("floor(1e300, 15)", "overflow (char 1)"),
    ("0^-1", "zero to a negative power (char 2)"),
    ("pow(0, -2)", "zero to a negative power (char 1)"),
    ("log(0)", "logarithm of zero (char 1)"),
    ("log10(zero)", "logarithm of zero (char 1)"),
    ("log2(0)", "logarithm of zero (char 1)"),
    ("log(5, 1)", "logarithm in base 1 (char 1)"),
    ("sqrt(-4)", "complex number: square root of a negative number (char 1)"),
    ("sqrt(z) > 0", "complex number: square root of a negative number (char 1)"),
    ("log(-1)", "complex number: logarithm of a negative number (char 1)"),
    ("log(8, -2)", "complex number: logarithm of a negative number (char 1)"),
    ("log10(0/0) xor true", "complex number: logarithm of NaN (char 1)"),
    ("(-8)^(1/3)", "complex number: a negative number to a fractional power (char 5)"),
    ("pow(z, 0.5)", "complex number: a negative number to a fractional power (char 1)"),
    ("round(1, x - 3)", "the number of decimals must be an integer from 0 to 15 (char 1)"),
    ("floor(x, 0.5 * y)", "the number of decimals must be an integer from 0 to 15 (char 1)"),
]


@pytest.mark.parametrize(("text", "reason"), NO_VALUE)
def test_infinity_nan_and_complex_numbers_are_no_value_with_the_reason(text, reason):
    assert value(text) == Result(None, reason)


def test_a_variable_that_is_not_finite_is_the_reason():
    assert evaluate(parse("x * 2 + 1"), {"x": math.nan}) == Result(None, "x is nan")
    assert evaluate(parse("1 / x"), {"x": math.inf}) == Result(0.0)


def test_minus_zero_is_zero():
    for text in ("-0", "round(-0.4)", "-1/(1/0)", "0 * -1"):
        result = value(text)
        assert result == Result(0.0)
        assert math.copysign(1, result.value) == 1


def test_it_lists_the_variables_in_order_of_first_use():
    assert parse("b + a * b - c1_ / _d").variables == ("b", "a", "c1_", "_d")
    assert parse("1 + 2").variables == ()
    assert parse("e ^ 2 + pi").variables == ("e", "pi")  # not mathjs's constants


def test_a_missing_variable_is_an_error_naming_it():
    with pytest.raises(FormulaError, match=r"^x \+ y: no value for y \(char 5\)$") as caught:
        evaluate(parse("x + y"), {"x": 1.0})
    assert caught.value.position == 5


def test_a_variable_that_is_not_a_number_is_an_error():
    with pytest.raises(FormulaError, match=r"x is a str, not a number \(char 1\)"):
        evaluate(parse("x + 1"), {"x": "1"})


def test_other_values_are_ignored_and_integers_are_numbers():
    assert evaluate(parse("x + 1"), {"x": 1, "unused": 5.0}) == Result(2.0)


def test_numexpr_only_ever_compiles_its_fixed_expressions(monkeypatch):
    calls = []
    real = numexpr.evaluate

    def recording(expression, local_dict=None, global_dict=None, **kwargs):
        calls.append((expression, set(local_dict), global_dict))
        return real(expression, local_dict=local_dict, global_dict=global_dict, **kwargs)

    monkeypatch.setattr(numexpr, "evaluate", recording)
    for text, _ in VALUES + NO_VALUE:
        value(text)
    assert {expression for expression, _, _ in calls} <= set(evaluation._NUMEXPR.values())
    assert all(names == {"a", "b"} and global_dict == {} for _, names, global_dict in calls)
    assert len(calls) > 100


def test_user_constants_reach_numexpr_as_values_not_text(monkeypatch):
    calls = []
    monkeypatch.setattr(numexpr, "evaluate", lambda expression, **kw: calls.append((expression, kw)) or 0.0)
    value("0.1 + 0.2")
    assert calls == [("a + b", {"local_dict": {"a": 0.1, "b": 0.2}, "global_dict": {}})]


# (formula, position, reason): refused by parse, nothing evaluated
HOSTILE = [
    ("__import__('os').system('x')", 1, "names may not contain __"),
    ("__builtins__", 1, "names may not contain __"),
    ("a__b + 1", 1, "names may not contain __"),
    ("x.__class__", 2, "properties (.) are not supported"),
    ("x.real", 2, "properties (.) are not supported"),
    ("x[0]", 2, "matrices and indexes are not supported"),
    ("[1, 2]", 1, "matrices and indexes are not supported"),
    ("{a: 1}", 1, "objects are not supported"),
    ("lambda: 1", 7, "expected an operator or the end, found ':'"),
    ("'abc'", 1, "strings are not supported"),
    ('"abc" + 1', 1, "strings are not supported"),
    ("eval('1')", 6, "strings are not supported"),
    ("exit()", 1, "unknown function exit"),
    ("sin(x)", 1, "unknown function sin"),
    ("SQRT(4)", 1, "unknown function SQRT"),
    ("x(2)", 1, "unknown function x"),
    ("1 if 1 else 2", 3, "missing operator before 'if'"),
    ("2 ** 3", 3, "** is Python's: write ^ for a power"),
    ("7 // 2", 3, "// is Python's: write floor(a / b)"),
    ("a @ b", 3, "unexpected character '@'"),
    ("1; 2", 2, "; is not supported"),
    ("1\n+ 2", 2, "line breaks are not allowed"),
    ("(1\r\n+ 2)", 3, "line breaks are not allowed"),
    ("x = 1", 3, "assignment is not supported"),
    ("f(x) = x", 6, "assignment is not supported"),
    ("5!", 2, "factorial ! is not supported"),
    ("x & y", 3, "bitwise operators are not supported"),
    ("1 << 2", 3, "bitwise operators are not supported"),
    ("x && y", 3, "&& is not mathjs"),
    ("x ?? 1", 3, "?? is not supported"),
    ("# comment", 1, "comments are not supported"),
    ("2x", 2, "missing operator before 'x' (no implicit multiplication: write *)"),
    ("2 (x + 1)", 3, "missing operator before '('"),
    ("(1)(2)", 4, "missing operator before '('"),
    ("5 cm", 3, "missing operator before 'cm'"),
    ("5 to cm", 3, "units are not supported"),
    ("50%", 3, "% as a percentage is not supported: write / 100"),
    ("100 + 10%", 9, "% as a percentage is not supported"),
    ("0x1F", 1, "hexadecimal, binary and octal numbers are not supported"),
    ("Infinity", 1, "Infinity is not supported"),
    ("NaN + 1", 1, "NaN is not supported"),
    ("sqrt", 1, "sqrt is a function: write sqrt(...)"),
    ("sqrt(1, 2)", 1, "sqrt takes 1 argument, not 2"),
    ("min()", 1, "min takes 1 or more arguments, not 0"),
    ("log(1, 2, 3)", 1, "log takes 1 or 2 arguments, not 3"),
    ("round(x, 16)", 10, "round: the number of decimals must be an integer from 0 to 15"),
    ("1e400", 1, "the number 1e400 is too large"),
    ("π * 2", 1, "unexpected character 'π'"),
    ("$x", 1, "unexpected character '$'"),
    ("", 1, "empty formula"),
    ("1 +", 4, "unexpected end"),
    ("(1", 3, "unexpected end: expected ')'"),
    ("a ? b", 6, "unexpected end: expected the ':' of the conditional"),
    ("1 : 2", 3, "expected an operator or the end, found ':'"),
    ("x ? y ? 1 : 2 : 3", 7, "a conditional inside a true branch needs parentheses"),
    ("and 1", 1, "expected a number, a variable, a function or '(', found 'and'"),
    ("1" * 1001, 1001, "longer than 1000 characters"),
    ("1+" * 50_000 + "1", 1001, "longer than 1000 characters"),
    ("(" * 10_000 + "1" + ")" * 10_000, 1001, "longer than 1000 characters"),
    ("(" * 499 + "1" + ")" * 499, 51, "nested more than 50 deep"),
    ("-" * 999 + "1", 51, "nested more than 50 deep"),
    ("not " * 249 + "1", 201, "nested more than 50 deep"),
    ("2^" * 499 + "2", 102, "nested more than 50 deep"),
    ("sqrt(" * 166 + "1" + ")" * 166, 255, "nested more than 50 deep"),
    ("1?1:" * 249 + "1", 201, "more than 100 numbers, variables, operators and calls"),
    ("1+" * 499 + "1", 100, "more than 100 numbers, variables, operators and calls"),
    ("max(" + ", ".join(["x"] * 120) + ")", 305, "more than 100 numbers, variables, operators and calls"),
]


def recorder(calls, name, real):
    def record(*args, **kwargs):
        calls.append(name)
        return real(*args, **kwargs)

    return record


@pytest.fixture
def nothing_runs(monkeypatch):
    """Records every call to numexpr.evaluate, eval, exec and compile."""
    calls = []
    for owner, name in [(numexpr, "evaluate"), (builtins, "eval"), (builtins, "exec"), (builtins, "compile")]:
        monkeypatch.setattr(owner, name, recorder(calls, name, getattr(owner, name)))
    return calls


def short(text):
    return repr(text)[:40] if isinstance(text, str) else None


@pytest.mark.parametrize(("text", "position", "reason"), HOSTILE, ids=short)
def test_it_refuses_with_the_position_and_the_reason_and_runs_nothing(text, position, reason, nothing_runs):
    started = time.perf_counter()
    with pytest.raises(FormulaError) as caught:
        evaluate(parse(text), VARIABLES)
    took, ran = time.perf_counter() - started, list(nothing_runs)
    assert reason in caught.value.reason
    assert caught.value.position == position
    assert str(caught.value).endswith(f": {caught.value.reason} (char {position})")
    assert ran == []
    assert took < 1.0


def test_nothing_runs_sees_an_evaluation(nothing_runs):
    value("x + 1")
    assert "evaluate" in nothing_runs


GROWTH = 8  # the larger input is this many times the smaller
LINEAR = 3 * GROWTH  # a ratio above this is super-linear (quadratic would be 64)
FLOOR_S = 0.0005  # below this, a measurement is timer noise


def seconds_to_refuse(text):
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        with pytest.raises(FormulaError):
            parse(text)
        best = min(best, time.perf_counter() - started)
    return best


@pytest.mark.parametrize(
    "make",
    [lambda n: "1+" * n + "1", lambda n: "(" * n + "1" + ")" * n, lambda n: "-" * n + "1", lambda n: "x" * n],
    ids=["long", "deep", "unary", "name"],
)
def test_refusing_a_huge_formula_takes_no_longer_for_a_larger_one(make):
    small = max(seconds_to_refuse(make(12_500)), FLOOR_S)
    large = seconds_to_refuse(make(12_500 * GROWTH))
    assert large < LINEAR * small, f"{small:.6f} s, then {large:.6f} s"


def test_towers_of_powers_end_quickly_with_no_value():
    started = time.perf_counter()
    assert value("9^9^9^9^9^9^9^9^9^9").reason == "overflow (char 16)"
    assert value("-(9^9^9)^9^9 * 0").reason == "overflow (char 4)"
    assert time.perf_counter() - started < 1.0


def test_a_formula_of_1000_characters_is_fine():
    text = " " * 995 + "x + 1"
    assert len(text) == 1000
    assert evaluate(parse(text), VARIABLES) == Result(3.0)


def test_a_formula_may_nest_50_deep():
    assert value("(" * 50 + "x" + ")" * 50) == Result(2.0)
    assert value("-" * 50 + "x") == Result(2.0)


def test_parsing_is_cached_by_text():
    assert parse("x + 1") is parse("x + 1")


def test_a_formula_error_is_a_value_error_and_a_config_error():
    assert issubclass(FormulaError, ValueError)
    assert issubclass(FormulaError, ConfigError)


def test_a_formula_error_survives_pickling():
    error = pickle.loads(pickle.dumps(FormulaError("2x", "missing operator", 2)))
    assert (error.text, error.reason, error.position, str(error)) == (
        "2x",
        "missing operator",
        2,
        "2x: missing operator (char 2)",
    )


def test_a_long_formula_is_cut_in_the_message():
    with pytest.raises(FormulaError) as caught:
        parse("x" * 5000)
    assert len(str(caught.value)) < 200
