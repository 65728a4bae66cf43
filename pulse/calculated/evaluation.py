"""Evaluating a parsed formula (`pulse.calculated.formula`) with mathjs's rules.

Values are IEEE doubles, as in JavaScript, or booleans, which count as 1 and 0 in arithmetic
(`true + 1` is 2). Where a condition is expected, 0 and NaN are false, any other number true.
Comparisons and logic give booleans (`2 and 3` is `true`). mathjs's rules:

- Comparisons are tolerant: `a == b` when |a - b| <= max(1e-12 * max(|a|, |b|), 1e-15), mathjs's
  default `relTol` and `absTol`, so `0.1 + 0.2 == 0.3`; `<` and `>` hold only for numbers not equal
  in that sense, `<=` and `>=` also for equal ones. An infinity equals only itself, NaN nothing.
- `round` rounds half away from zero (`round(-2.5)` is -3) on the shortest decimal form of the
  number (`round(1.005, 2)` is 1.01), after rounding it to 12 decimals when that moves it no more
  than the tolerance (`round(2.4999999999999996)` is 3). `floor`, `ceil` and `fix` give that rounded
  integer when the number is within the tolerance of it (`floor(0.9999999999999999)` is 1); to `n`
  decimals they work on `x * 10^n`.
- `x mod y` is `x - y * floor(x / y)` with that `floor`: it has the sign of `y` (`-7 mod 3` is 2,
  `7 mod -3` is -2), and `x mod 0` is `x`.
- `min` and `max` keep the first of values equal within the tolerance (`max(1, 1 + 1e-13)` is 1),
  as given (`max(true, 0)` is `true`); a NaN makes them NaN. `hypot` scales the squares by the
  largest value so far, with the tolerance (`hypot(1e-16)` is 0).
- `x ^ y` is JavaScript's `Math.pow` (`1 ^ (1/0)` is NaN), `sign` its `Math.sign`.

`1/0` is Infinity and `0/0` is NaN, and they go on through the formula by IEEE rules (`1 / (1/0)`
is 0, `1/0 > 5` is true). A result that is Infinity or NaN is no value, `Result(value=None,
reason=...)`, the reason naming the first operation whose operands were finite and whose result was
not: "division by zero (char 7)", "overflow" (`9^9^9^9`, `exp(1000)`), "logarithm of zero", "zero
to a negative power", "not a number". Unlike mathjs, which goes on with complex numbers, the square
root of a negative number, the logarithm of a negative number or NaN, or a negative number to a
fractional power (`(-8)^(1/3)`) is no value at once ("complex number: ..."), as is what mathjs
throws an error for (`round(x, n)` with an `n` out of range). A result of -0 is 0.

Evaluation walks the tree. An arithmetic operation (`+ - * / ^`, unary minus, `abs`, `sqrt`, `exp`,
`log`, `log10`, `log(x, base)`) is handed to numexpr as one of the fixed expressions in `_NUMEXPR`
(`a + b`, `a ** b`, ...) with its operands' values in `local_dict` and `global_dict={}`: numexpr
compiles with Python's `eval` behind a regex (CVE-2023-39631), so it never sees a user's text nor
folds a user's constant, and it gives IEEE results (Infinity, NaN) where Python raises, as
JavaScript does. The rest is computed here, with mathjs's rules. Results are mathjs's exactly,
except that the last binary digit of `exp`, `log`, `log10`, `log2`, `cbrt` and `^` (with a fraction)
may differ from Node's: JavaScript leaves it to each engine, and here it comes from the C library
(`cbrt` correctly rounded, so that `cbrt(27)` is 3).
"""

from __future__ import annotations

import dataclasses
import decimal
import math
import numbers
from collections.abc import Callable, Mapping
from fractions import Fraction

from pulse.calculated.formula import (
    MAX_DECIMALS,
    Compare,
    Constant,
    Formula,
    FormulaError,
    Node,
    Operation,
    Value,
    Variable,
    walk,
)

REL_TOL, ABS_TOL = 1e-12, 1e-15  # mathjs's default relTol and absTol
TOLERANCE_DECIMALS = 12  # the decimals of REL_TOL, to which mathjs rounds first


@dataclasses.dataclass(frozen=True)
class Result:
    """A formula's value: a number or a boolean; or None, with the reason."""

    value: float | bool | None
    reason: str | None = None


def evaluate(formula: Formula, values: Mapping[str, float]) -> Result:
    """The formula's value for the variables' values (other names in `values` are ignored).

    Never raises for any number; raises `FormulaError` for a variable with no value or not a number.
    """
    given: dict[str, float] = {}
    for name in formula.variables:
        value = values.get(name)
        if not isinstance(value, numbers.Real):
            first = next(n for n in walk(formula.tree) if isinstance(n, Variable) and n.name == name)
            reason = f"no value for {name}" if value is None else f"{name} is a {type(value).__name__}, not a number"
            raise FormulaError(formula.text, reason, first.position)
        given[name] = float(value)
    run = _Evaluation(given)
    try:
        result = run.value(formula.tree)
    except _NoValueError as e:
        return Result(None, str(e))
    if isinstance(result, bool):
        return Result(result)
    if not math.isfinite(result):
        return Result(None, _why(formula.tree, run.seen))
    return Result(result + 0.0)  # -0.0 + 0.0 is 0.0


class _NoValueError(Exception):
    """Ends an evaluation with no value: a complex number, or an error in mathjs."""


_NUMEXPR = {
    "+": "a + b",
    "-": "a - b",
    "*": "a * b",
    "/": "a / b",
    "^": "a ** b",
    "negate": "-a",
    "abs": "abs(a)",
    "sqrt": "sqrt(a)",
    "exp": "exp(a)",
    "log": "log(a)",
    "log10": "log10(a)",
    "log base": "log(a) / log(b)",
}


def _numexpr(operation: str, a: float, b: float = 0.0) -> float:
    # Imported at the first operation: numexpr brings numpy, a tenth of every worker's start-up,
    # and most processes that import this module (pulse apply's validation) never evaluate.
    import numexpr

    return float(numexpr.evaluate(_NUMEXPR[operation], local_dict={"a": a, "b": b}, global_dict={}))


class _Evaluation:
    def __init__(self, values: dict[str, float]) -> None:
        self.values = values
        self.seen: dict[int, Value] = {}  # id(node): its value, to explain a result that is not finite

    def value(self, node: Node) -> Value:
        value = self.compute(node)
        self.seen[id(node)] = value
        return value

    def compute(self, node: Node) -> Value:
        if isinstance(node, Constant):
            return node.value
        if isinstance(node, Variable):
            return self.values[node.name]
        if isinstance(node, Compare):
            left = self.value(node.operands[0])
            for operator, operand in zip(node.operators, node.operands[1:], strict=True):
                right = self.value(operand)
                if not _COMPARE[operator](left, right):
                    return False
                left = right
            return True
        name, operands = node.name, node.operands
        if name == "?":
            return self.value(operands[1] if _truthy(self.value(operands[0])) else operands[2])
        if name == "and":  # the right side only when the left one does not decide, as mathjs
            return _truthy(self.value(operands[0])) and _truthy(self.value(operands[1]))
        if name == "or":
            return _truthy(self.value(operands[0])) or _truthy(self.value(operands[1]))
        values = [self.value(operand) for operand in operands]
        if name in ("not", "xor"):
            return not _truthy(values[0]) if name == "not" else _truthy(values[0]) != _truthy(values[1])
        if name in ("min", "max"):
            return _extreme(values, _COMPARE["<" if name == "min" else ">"])
        function = _FUNCTIONS.get(name)
        if function is None:
            return _numexpr(name, *map(float, values))
        try:
            return function(*map(float, values))
        except _NoValueError as e:
            raise _NoValueError(f"{e} (char {node.position})") from None


def _why(node: Node, seen: dict[int, Value]) -> str:
    """Why a node's value is not finite: the first operation whose operands were and whose value was not."""
    operands = [operand for operand in getattr(node, "operands", ()) if id(operand) in seen]
    if isinstance(node, Operation) and node.name == "?":
        operands = operands[1:]  # the test only chose the branch
    for operand in operands:
        if not math.isfinite(seen[id(operand)]):
            return _why(operand, seen)
    value, values = seen[id(node)], [seen[id(operand)] for operand in operands]
    if isinstance(node, Variable):
        return f"{node.name} is {value}"
    name = node.name if isinstance(node, Operation) else ""
    if name == "/" and values[1] == 0:
        reason = "division by zero"
    elif name in ("^", "pow") and values[0] == 0:
        reason = "zero to a negative power"
    elif name in ("log", "log10", "log2") and values[0] == 0:
        reason = "logarithm of zero"
    elif name == "log" and values[1:] == [1]:
        reason = "logarithm in base 1"
    else:
        reason = "not a number" if math.isnan(value) else "overflow"
    return f"{reason} (char {node.position})"


# mathjs's rules.


def _truthy(value: Value) -> bool:
    return value == value and value != 0  # NaN is false, as in JavaScript


def _nearly_equal(a: float, b: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return False
    if math.isinf(a) or math.isinf(b):
        return a == b
    return abs(a - b) <= max(REL_TOL * max(abs(a), abs(b)), ABS_TOL)


_COMPARE: dict[str, Callable[[float, float], bool]] = {
    "==": _nearly_equal,
    "!=": lambda a, b: not _nearly_equal(a, b),
    "<": lambda a, b: a < b and not _nearly_equal(a, b),
    ">": lambda a, b: a > b and not _nearly_equal(a, b),
    "<=": lambda a, b: a <= b or _nearly_equal(a, b),
    ">=": lambda a, b: a >= b or _nearly_equal(a, b),
}


def _extreme(values: list[Value], better: Callable[[float, float], bool]) -> Value:
    """mathjs's min or max: a NaN, else the first value that no later one beats beyond the tolerance."""
    best = values[0]
    for value in values[1:]:
        if math.isnan(value) or better(value, best):
            best = value
    return best


def _is_integer(x: float) -> bool:
    return math.isfinite(x) and x == math.floor(x)


def _real(x: float, what: str) -> float:
    if x < 0:
        raise _NoValueError(f"complex number: {what} of a negative number")
    return x


def _logarithm(x: float) -> float:
    """An argument of log, log10 or log2: mathjs takes NaN, as negative numbers, to complex numbers."""
    if math.isnan(x):
        raise _NoValueError("complex number: logarithm of NaN")
    return _real(x, "logarithm")


def _log(x: float, base: float | None = None) -> float:
    if base is None:
        return _numexpr("log", _logarithm(x))
    return _numexpr("log base", _logarithm(x), _logarithm(base))


def _pow(x: float, y: float) -> float:
    if x < 0 and not _is_integer(y):
        if (x * x < 1 and y == math.inf) or (x * x > 1 and y == -math.inf):
            return 0.0
        raise _NoValueError("complex number: a negative number to a fractional power")
    if x == 1 and not math.isfinite(y):
        return math.nan  # as Math.pow; C's pow gives 1
    return _numexpr("^", x, y)


def _decimals(n: float) -> int:
    if not _is_integer(n) or not 0 <= n <= MAX_DECIMALS:
        raise _NoValueError(f"the number of decimals must be an integer from 0 to {MAX_DECIMALS}")
    return int(n)


_WIDE = decimal.Context(prec=40)  # 16 digits before the point and 15 after fit


def _round(x: float, n: float = 0) -> float:
    """mathjs's round: half away from zero, on the shortest decimal form, snapped to 12 decimals first."""
    decimals = _decimals(n)
    if decimals < TOLERANCE_DECIMALS:
        near = _round_half_away(x, TOLERANCE_DECIMALS)
        x = near if _nearly_equal(x, near) else x
    return _round_half_away(x, decimals)


def _round_half_away(x: float, decimals: int) -> float:
    if not math.isfinite(x) or abs(x) >= 2**52:  # such a double is already an integer
        return x
    step = decimal.Decimal(1).scaleb(-decimals)
    return float(decimal.Decimal(repr(x)).quantize(step, rounding=decimal.ROUND_HALF_UP, context=_WIDE))


def _whole(x: float, n: float | None, direction: Callable[[float], int]) -> float:
    """mathjs's floor or ceil: the rounded integer when x is within the tolerance of it and not of the other."""
    if n is not None:
        shift = 10.0 ** _decimals(n)
        return _whole(x * shift, None, direction) / shift
    whole = math.copysign(direction(x), x) if math.isfinite(x) else x  # ceil(-0.5) is -0, as in JavaScript
    near = _round(x)
    if whole != near and _nearly_equal(x, near) and not _nearly_equal(x, whole):
        return near
    return whole


def _floor(x: float, n: float | None = None) -> float:
    return _whole(x, n, math.floor)


def _ceil(x: float, n: float | None = None) -> float:
    return _whole(x, n, math.ceil)


def _cbrt(x: float) -> float:
    """The cube root, correctly rounded: exact for a cube (C's cbrt(27) is 3.0000000000000004)."""
    root = math.cbrt(x)
    if root == 0 or not math.isfinite(root):
        return root
    cube = Fraction(x)
    for neighbour in (math.nextafter(root, -math.inf), math.nextafter(root, math.inf)):
        if abs(Fraction(neighbour) ** 3 - cube) < abs(Fraction(root) ** 3 - cube):
            root = neighbour
    return root


def _hypot(*args: float) -> float:
    """mathjs's hypot: the squares scaled by the largest value so far, compared with the tolerance."""
    total = largest = 0.0
    for arg in args:
        value = abs(arg)
        if _COMPARE["<"](largest, value):
            total = total * ((largest / value) * (largest / value)) + 1
            largest = value
        elif value > 0 and not _nearly_equal(value, 0):
            total += (value / largest) * (value / largest)
        else:
            total += value
    return largest * math.sqrt(total)


_FUNCTIONS: dict[str, Callable[..., float]] = {  # the operations not handed straight to numexpr
    "^": _pow,
    "pow": _pow,
    "mod": lambda x, y: x if y == 0 else x - y * _floor(x / y),
    "plus": lambda x: x,
    "sqrt": lambda x: _numexpr("sqrt", _real(x, "square root")),
    "cbrt": _cbrt,
    "log": _log,
    "log10": lambda x: _numexpr("log10", _logarithm(x)),
    "log2": lambda x: -math.inf if _logarithm(x) == 0 else math.log2(x),  # C's log2, as Math.log2
    "round": _round,
    "floor": _floor,
    "ceil": _ceil,
    "fix": lambda x, n=None: _floor(x, n) if x > 0 else _ceil(x, n),
    "sign": lambda x: 1.0 if x > 0 else -1.0 if x < 0 else x,
    "hypot": _hypot,
}
