"""The JSON reader of inbound bodies (`pulse.inbound.jsonbody`): what PostgreSQL would refuse is
refused with its problem and path named, or, for texts, kept with U+FFFD in place of the character."""

import json

import pytest

from pulse.inbound.jsonbody import MAX_DEPTH, BodyError, loads, storable
from tests.support.hostile import DEEP


def test_a_sender_body_is_read_as_it_came():
    body = {"a": [1, 2.5, "x", None, True, {"b": "é 😀"}], "c": 10**50}
    assert loads(json.dumps(body).encode()) == (body, 0)


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (b'{"a": {"b": [1, NaN]}}', "$.a.b[1] is not a finite number"),
        (b'{"values": {"B": Infinity}}', "$.values.B is not a finite number"),
        (b"-Infinity", "$ is not a finite number"),
        (b'{"x": 1e400}', "$.x is not a finite number"),
        (b'{"odd key": [NaN]}', '$["odd key"][0] is not a finite number'),
        (b"[" * (MAX_DEPTH + 1) + b"]" * (MAX_DEPTH + 1), f"$[0]{'[0]' * (MAX_DEPTH - 1)} nests more than"),
        (DEEP, f"the body is nested more than {MAX_DEPTH} levels deep"),
        (b'{"a": 1', "the body is not JSON: Expecting ',' delimiter (line 1, column 8)"),
        (b'{"a": "\xff"}', "the body is not UTF-8 (byte 0xff at offset 7)"),
        (b"\xef\xbb\xbf{}", "the body is not JSON: Unexpected UTF-8 BOM"),
        (b"1" * 5000, "an integer of over 4,300 digits"),
    ],
)
def test_what_postgresql_refuses_is_refused_naming_the_problem(body, problem):
    with pytest.raises(BodyError) as refused:
        loads(body)
    assert problem in str(refused.value)


def test_nesting_up_to_the_bound_is_read():
    body = b"[" * MAX_DEPTH + b"]" * MAX_DEPTH
    assert loads(body)[1] == 0


def test_nul_and_lone_surrogates_are_replaced_and_counted_in_keys_and_values():
    body = rb'{"a\u0000": ["x\u0000y", {"k": "\ud800\udc00 \udfff \ud83d\ude00"}], "n": "\ud800"}'
    value, replaced = loads(body)
    assert value == {"a\ufffd": ["x\ufffdy", {"k": "\U00010000 \ufffd 😀"}], "n": "\ufffd"}
    assert replaced == 4


def test_storable_leaves_other_text_alone():
    assert storable("plain") == ("plain", 0)
    assert storable("é\x00\ud800") == ("é\ufffd\ufffd", 2)
