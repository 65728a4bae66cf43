"""Calculated-metric formulas in mathjs syntax: `errors / requests * 100`, `max(a, b) > 5 ? 1 : 0`.

ReliaPulse evaluates its formulas with mathjs; a formula copied from there gives the same number
here. `parse` turns the text into a small tree once and refuses anything outside the numeric subset
below; `pulse.calculated.evaluation` computes the tree for the variables' values, without `eval`,
with mathjs's rules for values (tolerant comparisons, rounding, modulo, no value). The semantics are
mathjs's (its documentation pages "Expression syntax" and "Operators"; src/expression/parse.js,
src/function/ and src/utils/number.js in josdejong/mathjs); where Pulse deliberately differs, the
text says "Unlike mathjs".

Syntax, from the loosest binding to the tightest, as in mathjs:

- `a ? b : c`, right-associative (`a ? b : c ? d : e` is `a ? b : (c ? d : e)`); only the chosen
  branch is evaluated. A conditional in the true branch needs parentheses, as mathjs requires.
- `or`, then `xor`, then `and`; `and` and `or` skip their right side when the left one decides.
- `==`, `!=`, `<`, `>`, `<=`, `>=`, chained: `a < b <= c` is `a < b and b <= c`, `b` evaluated once.
- `+`, `-`; then `*`, `/` and modulo, written `%` or `mod`.
- unary `-`, `+` and `not`. `not` binds as tightly as unary minus: `not x > 5` is `(not x) > 5`,
  which is always false; write `not (x > 5)`.
- `^`, right-associative (`2^3^2` is 512), tighter than a unary operator on its left (`-2^2` is
  -4) and taking one on its right (`2^-3` is 0.125).
- numbers (`12`, `1.5`, `.5`, `2.`, `1e3`, `2.5E-3`), `true`, `false`, variables, function calls and
  parentheses, with spaces or tabs between any two of them.

Variables are names of ASCII letters, digits and `_`, starting with a letter or `_`, without `__`,
other than the words above and the functions' names. `Formula.variables` lists those a formula
uses; the evaluation needs a number for each. Unlike mathjs, `pi`, `e` and mathjs's other constants are
not built in: such a name is a variable like any other.

Functions: `abs`, `sqrt`, `cbrt`, `exp`, `log`, `log10`, `log2`, `sign` of one argument;
`log(x, base)`, `pow(x, y)` (as `x ^ y`), `mod(x, y)`; `round`, `floor`, `ceil`, `fix` (towards zero)
of `x`, or of `x, n` for `n` decimals (an integer from 0 to 15); `min`, `max`, `hypot` of one or more.
`parse` refuses, with the position (counted from 1, as mathjs's "(char N)") and the reason: the
rest of mathjs, that is implicit multiplication (`2x`, `2(x + 1)`, `(a)(b)`), `%` as a percentage
(mathjs reads `x%` as `x / 100` when no operand follows, and `100 + 10%` as 110: write `/ 100`),
units and `to`/`in`, strings, matrices and indexes, objects, properties `.`, assignment `=`, several
expressions (`;`, line breaks), comments `#`, factorial `!`, bitwise operators, `??`, hexadecimal,
binary and octal numbers, `Infinity`, `NaN`, `null`, `undefined` and functions not listed above;
Python's `**` and `//`; numbers beyond 1.8e308. A formula has at most 1,000 characters and 100
nodes (numbers, variables, operators, calls), nested at most 50 deep (parentheses, arguments, unary
operators, powers, conditional branches): a longer one is refused at once, a deeper one in time
linear in its length, before any deep recursion.

"""

from __future__ import annotations

import dataclasses
import functools
import math
import re
from collections.abc import Callable, Iterator
from typing import TypeAlias

from pulse.errors import ConfigError

MAX_LENGTH = 1000  # characters
MAX_NODES = 100  # numbers, variables, operators and calls
MAX_DEPTH = 50  # nesting of parentheses, arguments, unary operators, powers and conditional branches
MAX_DECIMALS = 15  # of round, floor, ceil and fix

# name: (fewest, most) arguments, None for no limit
FUNCTIONS: dict[str, tuple[int, int | None]] = dict.fromkeys(("abs", "sqrt", "cbrt", "exp", "log10", "log2"), (1, 1))
FUNCTIONS.update(dict.fromkeys(("log", "round", "floor", "ceil", "fix"), (1, 2)))
FUNCTIONS.update(sign=(1, 1), pow=(2, 2), mod=(2, 2), min=(1, None), max=(1, None), hypot=(1, None))
KEYWORDS = ("and", "or", "xor", "not", "mod")
CONSTANTS = {"true": True, "false": False}
_COMPARISON = 4  # the level of ==, !=, <, >, <=, >=
_LEVELS = {"or": 1, "xor": 2, "and": 3, "+": 5, "-": 5, "*": 6, "/": 6, "%": 6, "mod": 6}  # binary operators
_LEVELS.update(dict.fromkeys(("==", "!=", "<", ">", "<=", ">="), _COMPARISON))
_OPERAND_STARTS = ("(", "-", "+", "not", "mod")  # the operators that may start an operand

_REFUSED = {  # text that is not in the language, and why
    "**": "** is Python's: write ^ for a power",
    "//": "// is Python's: write floor(a / b)",
    "&&": "&& is not mathjs: write and",
    "||": "|| is not mathjs: write or",
    "=": "assignment is not supported: write == to compare",
    "!": "factorial ! is not supported",
    ".": "properties (.) are not supported",
    ";": "a formula is one expression: ; is not supported",
    "#": "comments are not supported",
    "??": "?? is not supported",
}
_REFUSED.update(dict.fromkeys(("<<", ">>", "&", "|", "~"), "bitwise operators are not supported: use and, or, not"))
_REFUSED.update(dict.fromkeys("'\"", "strings are not supported"))
_REFUSED.update(dict.fromkeys("[]", "matrices and indexes are not supported"))
_REFUSED.update(dict.fromkeys("{}", "objects are not supported"))
_REFUSED.update(dict.fromkeys("\r\n", "line breaks are not allowed"))
_MATHJS_ONLY = {  # names mathjs reads as something this language does not have
    "to": "units are not supported",
    "in": "units are not supported",
    **{name: f"{name} is not supported" for name in ("Infinity", "NaN", "null", "undefined")},
}
_TOKEN = re.compile(
    r"(?P<number>(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?)"
    r"|(?P<name>[A-Za-z_][A-Za-z0-9_]*)"
    r"|(?P<op>==|!=|<=|>=|[-+*/%^(),<>?:])"
)


class FormulaError(ConfigError, ValueError):
    """A formula that cannot be parsed, or a variable without a number at evaluation.

    `str(e)` is "<the formula>: <the reason> (char <position>)", the position counted from 1.
    """

    def __init__(self, text: str, reason: str, position: int) -> None:
        self.text = text
        self.reason = reason
        self.position = position
        shown = text if len(text) <= MAX_LENGTH else text[:80] + "..."
        super().__init__(f"{shown}: {reason} (char {position})")

    def __reduce__(self) -> tuple[type[FormulaError], tuple[str, str, int]]:
        return type(self), (self.text, self.reason, self.position)


class _ParseError(Exception):
    def __init__(self, position: int, reason: str) -> None:
        super().__init__(reason)
        self.position = position


# The tree. A node's position is that of its operator, its function's name, or its first character.


@dataclasses.dataclass(frozen=True)
class Constant:
    position: int
    value: float | bool


@dataclasses.dataclass(frozen=True)
class Variable:
    position: int
    name: str


@dataclasses.dataclass(frozen=True)
class Operation:
    """An operator or a function applied to its operands.

    `name` is a function's name, a binary operator (`+ - * / ^ mod and or xor`), `?` for the
    conditional (test, then, otherwise), or `negate`, `plus` or `not` for a unary operator.
    """

    position: int
    name: str
    operands: tuple[Node, ...]


@dataclasses.dataclass(frozen=True)
class Compare:
    """A chain of comparisons: `operands[0] operators[0] operands[1] operators[1] ...`."""

    position: int
    operators: tuple[str, ...]
    operands: tuple[Node, ...]


Node: TypeAlias = Constant | Variable | Operation | Compare
Value: TypeAlias = float | bool


def walk(node: Node) -> Iterator[Node]:
    """Every node of a tree, each before its operands."""
    yield node
    for operand in getattr(node, "operands", ()):
        yield from walk(operand)


@dataclasses.dataclass(frozen=True)
class Formula:
    """A parsed formula. Build it with `parse`."""

    text: str
    tree: Node
    variables: tuple[str, ...]  # the names of the variables it uses, in order of first use


# Parsing.


@functools.lru_cache(maxsize=1024)
def parse(text: str) -> Formula:
    """Parse a formula such as `errors / requests * 100`. Raises `FormulaError` with the reason.

    Results are cached by text: a formula stored as text can be parsed on every evaluation.
    """
    try:
        if len(text) > MAX_LENGTH:
            raise _ParseError(MAX_LENGTH + 1, f"longer than {MAX_LENGTH} characters")
        parser = _Parser(_tokenize(text))
        if parser.token.kind == "end":
            raise _ParseError(1, "empty formula")
        tree = parser.conditional()
        parser.expect("", "an operator or the end")
    except _ParseError as e:
        raise FormulaError(text, str(e), e.position) from None
    names = (node.name for node in walk(tree) if isinstance(node, Variable))
    return Formula(text=text, tree=tree, variables=tuple(dict.fromkeys(names)))


@dataclasses.dataclass(frozen=True)
class _Token:
    kind: str  # "number", "name", "op" (keywords too) or "end"
    text: str
    position: int


def _tokenize(text: str) -> list[_Token]:
    tokens = []
    i = _skip_spaces(text, 0)
    while i < len(text):
        refused = _REFUSED.get(text[i : i + 2])
        found = None if refused else _TOKEN.match(text, i)
        if found is None:
            raise _ParseError(i + 1, refused or _REFUSED.get(text[i], f"unexpected character {text[i]!r}"))
        kind, word, end = str(found.lastgroup), found.group(), found.end()
        if kind == "number" and word == "0" and text[end : end + 1] in ("x", "b", "o"):
            raise _ParseError(i + 1, "hexadecimal, binary and octal numbers are not supported")
        if kind == "name" and "__" in word:
            raise _ParseError(i + 1, f"{word}: names may not contain __")
        tokens.append(_Token("op" if word in KEYWORDS else kind, word, i + 1))
        i = _skip_spaces(text, end)
    return [*tokens, _Token("end", "", len(text) + 1)]


def _skip_spaces(text: str, i: int) -> int:
    while i < len(text) and text[i] in " \t\u00a0":
        i += 1
    return i


class _Parser:
    """Recursive descent over mathjs's precedence levels; `nested` bounds the depth of recursion."""

    def __init__(self, tokens: list[_Token]) -> None:
        self.tokens = tokens
        self.index = self.depth = self.nodes = 0

    @property
    def token(self) -> _Token:
        return self.tokens[self.index]

    def advance(self) -> _Token:
        self.index += 1
        return self.tokens[self.index - 1]

    def expect(self, text: str, expected: str) -> None:
        """Move past `text` ("" for the end), or refuse the token found there."""
        if self.token.text != text:
            raise self.unexpected(expected)
        self.index += 1

    def unexpected(self, expected: str) -> _ParseError:
        token = self.token
        if token.kind == "end":
            return _ParseError(token.position, f"unexpected end: expected {expected}")
        if token.text in _MATHJS_ONLY:
            return _ParseError(token.position, _MATHJS_ONLY[token.text])
        if token.kind in ("number", "name") or token.text == "(":
            reason = f"missing operator before {token.text!r} (no implicit multiplication: write *)"
            return _ParseError(token.position, reason)
        return _ParseError(token.position, f"expected {expected}, found {token.text!r}")

    def node(self, node: Node) -> Node:
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise _ParseError(node.position, f"more than {MAX_NODES} numbers, variables, operators and calls")
        return node

    def nested(self, parse: Callable[[], Node], position: int) -> Node:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise _ParseError(position, f"nested more than {MAX_DEPTH} deep")
        node = parse()
        self.depth -= 1
        return node

    def conditional(self) -> Node:
        test = self.binary(1)
        if self.token.text != "?":
            return test
        position = self.advance().position
        then = self.nested(lambda: self.binary(1), position)
        if self.token.text == "?":  # mathjs reads `a ? b ? c : d : e` as a range `d : e` and fails
            raise _ParseError(self.token.position, "a conditional inside a true branch needs parentheses")
        self.expect(":", "the ':' of the conditional")
        otherwise = self.nested(self.conditional, position)
        return self.node(Operation(position, "?", (test, then, otherwise)))

    def binary(self, lowest: int) -> Node:
        """Operators of level `lowest` and above, left-associative; comparisons chain."""
        left = self.unary()
        while self.token.kind == "op" and _LEVELS.get(self.token.text, 0) >= lowest:
            operator = self.advance()
            level = _LEVELS[operator.text]
            following = self.token
            percentage = following.kind not in ("number", "name") and following.text not in _OPERAND_STARTS
            if operator.text == "%" and percentage:
                raise _ParseError(operator.position, "% as a percentage is not supported: write / 100")
            if level != _COMPARISON:
                name = "mod" if operator.text == "%" else operator.text
                left = self.node(Operation(operator.position, name, (left, self.binary(level + 1))))
                continue
            operators, operands = [operator.text], [left, self.binary(level + 1)]
            while self.token.kind == "op" and _LEVELS.get(self.token.text) == _COMPARISON:
                operators.append(self.advance().text)
                operands.append(self.binary(level + 1))
            left = self.node(Compare(operator.position, tuple(operators), tuple(operands)))
        return left

    def unary(self) -> Node:
        if self.token.kind == "op" and self.token.text in ("-", "+", "not"):
            operator = self.advance()
            operand = self.nested(self.unary, operator.position)
            name = {"-": "negate", "+": "plus"}.get(operator.text, operator.text)
            return self.node(Operation(operator.position, name, (operand,)))
        base = self.primary()
        if self.token.text != "^":
            return base
        position = self.advance().position
        return self.node(Operation(position, "^", (base, self.nested(self.unary, position))))

    def primary(self) -> Node:
        token = self.token
        if token.kind == "number" and math.isinf(float(token.text)):
            raise _ParseError(token.position, f"the number {token.text} is too large")
        if token.kind == "number":
            return self.node(Constant(self.advance().position, float(token.text)))
        if token.text == "(":
            inner = self.nested(self.conditional, self.advance().position)
            self.expect(")", "')'")
            return inner
        if token.kind != "name" and token.text != "mod":
            raise self.unexpected("a number, a variable, a function or '('")
        name = self.advance().text
        if self.token.text == "(":
            return self.call(token)
        if name in CONSTANTS:
            return self.node(Constant(token.position, CONSTANTS[name]))
        if name in _MATHJS_ONLY:
            raise _ParseError(token.position, _MATHJS_ONLY[name])
        if name in FUNCTIONS:
            raise _ParseError(token.position, f"{name} is a function: write {name}(...)")
        return self.node(Variable(token.position, name))

    def call(self, function: _Token) -> Node:
        name, position = function.text, function.position
        if name not in FUNCTIONS:
            raise _ParseError(position, f"unknown function {name}: the functions are {', '.join(FUNCTIONS)}")
        opening = self.advance().position
        args = [] if self.token.text == ")" else [self.nested(self.conditional, opening)]
        while args and self.token.text == ",":
            self.advance()
            args.append(self.nested(self.conditional, opening))
        self.expect(")", "',' or ')'")
        fewest, most = FUNCTIONS[name]
        if len(args) < fewest or (most is not None and len(args) > most):
            takes = f"{fewest} or more" if most is None else " or ".join(map(str, range(fewest, most + 1)))
            noun = "argument" if most == 1 else "arguments"
            raise _ParseError(position, f"{name} takes {takes} {noun}, not {len(args)}")
        if name in ("round", "floor", "ceil", "fix") and len(args) == 2 and isinstance(args[1], Constant):
            n = args[1].value
            if not (math.isfinite(n) and n == int(n) and 0 <= n <= MAX_DECIMALS):
                reason = f"{name}: the number of decimals must be an integer from 0 to {MAX_DECIMALS}"
                raise _ParseError(args[1].position, reason)
        return self.node(Operation(position, name, tuple(args)))
