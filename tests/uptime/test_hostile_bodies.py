"""Conditions against hostile bodies: the time to evaluate grows in proportion to the body, never
faster, whatever the body and the condition (measured as the growth between two sizes)."""

import time

import pytest

from pulse.net import Response
from pulse.uptime.conditions import WILD_PART_MAX, ConditionError, evaluate, parse

GROWTH = 8  # the larger body is this many times the smaller
LINEAR = 3 * GROWTH  # a ratio above this is super-linear (quadratic would be 64)
FLOOR_S = 0.0005  # below this, a measurement is timer noise
ROUNDS = 3


def seconds(condition, body):
    """The fastest of three evaluations, each on a fresh response (nothing cached)."""
    parsed = parse(condition)
    best = float("inf")
    for _ in range(3):
        response = Response(body=body)
        started = time.perf_counter()
        evaluate(parsed, response)
        best = min(best, time.perf_counter() - started)
    return best


def assert_linear(condition, make, small):
    """The growth, measured up to `ROUNDS` times: a machine busy with other work (a CI run beside)
    can stretch one measurement past the bound, but not every one; a super-linear evaluation fails
    them all."""
    measured = []
    for _ in range(ROUNDS):
        took_small = max(seconds(condition, make(small)), FLOOR_S)
        took_large = seconds(condition, make(small * GROWTH))
        if took_large < LINEAR * took_small:
            return
        measured.append(f"{took_small:.4f} s, then {took_large:.4f} s")
    raise AssertionError(f"{condition}: " + "; ".join(measured))


@pytest.mark.parametrize(
    ("condition", "make"),
    [
        ("[BODY] < 5", lambda n: b"1" * n + b"x"),
        ("[BODY].a > 1", lambda n: b'{"a": "' + b"1" * n + b'x"}'),
        ("[BODY] >= 1.5", lambda n: b"-" + b"1" * n + b".5e"),
        ("[BODY] < 48h", lambda n: b"1" * n + b"h1"),
    ],
    ids=["digits", "json-digits", "decimal", "duration"],
)
def test_a_number_read_from_a_run_of_digits_takes_one_pass(condition, make):
    """A run of digits that is not quite a number used to be re-split every possible way."""
    assert_linear(condition, make, small=2_000)


@pytest.mark.parametrize(
    ("condition", "make"),
    [
        ("[BODY] < 5", lambda n: b"1" * n + b"x"),
        ("[BODY] == 12", lambda n: b"1" * n),
        ("len([BODY]) > 5", lambda n: b"[" + b"1," * n + b"1]"),
        ("[BODY].a == x", lambda n: b'{"a": "' + b"x" * n + b'"}'),
        ("[BODY] == any(a, b)", lambda n: b"a" * n),
        ("[BODY] == pat(*" + "?" * (WILD_PART_MAX - 1) + "b*)", lambda n: b"a" * n),
        ("[BODY] == pat(*" + "a?" * (WILD_PART_MAX // 2 - 1) + "ab*)", lambda n: b"a" * n),
        ("[BODY] == pat(*" + "[^b]" * (WILD_PART_MAX - 1) + "b*)", lambda n: b"a" * n),
        ("[BODY] == pat(" + "*a" * 300 + "*b)", lambda n: b"a" * n),
        ("[BODY] == pat(*" + "a" * 900 + "b*)", lambda n: b"a" * n),
        ("[BODY] == pat(" + ("*?" + "a" * 30) * 25 + "*b)", lambda n: b"a" * n),
    ],
    ids=["number", "equal", "len", "json", "any", "wildcards", "alternating", "classes", "stars", "plain", "parts"],
)
def test_every_kind_of_condition_grows_linearly_up_to_the_body_cap(condition, make):
    assert_linear(condition, make, small=128 * 1024)


def test_a_pattern_part_with_wildcards_is_bounded_at_parse_time():
    parse("[BODY] == pat(*" + "?" * WILD_PART_MAX + "*)")
    parse("[BODY] == pat(*" + "a" * 900 + "*)")  # plain characters are searched in one pass
    with pytest.raises(ConditionError, match=f"may be at most {WILD_PART_MAX} characters long"):
        parse("[BODY] == pat(*" + "?" * (WILD_PART_MAX + 1) + "*)")
    with pytest.raises(ConditionError, match=f"may be at most {WILD_PART_MAX} characters long"):
        parse("[BODY] == pat(" + "a" * WILD_PART_MAX + "[ab]*)")
