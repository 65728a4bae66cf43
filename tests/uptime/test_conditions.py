"""The Gatus condition language: parsing, evaluation, JSON paths. Pure: no database, no broker."""

import dataclasses
import json
import pickle
from unittest import mock

import pytest

from pulse.errors import ConfigError
from pulse.net import Response
from pulse.uptime import conditions
from pulse.uptime.conditions import ConditionError, evaluate, extract, parse, parse_path

HOUR = 3_600_000  # milliseconds
DAY = 24 * HOUR

HTML = (
    b'<!DOCTYPE html><html lang="en"><head><meta http-equiv="Content-Type" content="text/html; charset=UTF-8" />'
    b'</head><body><div id="user">jane.doe</div></body></html>'
)
USER = b'{"user": {"firstName": "john", "lastName": "doe"}}'
APPS = b'{"data": [{"apps": [{"name":"app1"}, {"name":"app2"}, {"name":"app3"}]}]}'


def body(value: object) -> dict[str, bytes]:
    return {"body": json.dumps(value).encode()}


# (condition, response fields, success, resolved text or None when the row only checks success)
EVALUATIONS = [
    # [STATUS]
    ("[STATUS] == 200", {"status": 200}, True, "[STATUS] (200) == 200"),
    ("[STATUS] == 200", {"status": 500}, False, "[STATUS] (500) == 200"),
    ("[STATUS] != 200", {"status": 500}, True, "[STATUS] (500) != 200"),
    ("[STATUS] != 200", {"status": 200}, False, None),
    ("[STATUS] < 300", {"status": 201}, True, "[STATUS] (201) < 300"),
    ("[STATUS] < 300", {"status": 404}, False, "[STATUS] (404) < 300"),
    ("[STATUS] <= 299", {"status": 299}, True, None),
    ("[STATUS] <= 299", {"status": 301}, False, None),
    ("[STATUS] > 400", {"status": 400}, False, "[STATUS] (400) > 400"),
    ("[STATUS] > 400", {"status": 401}, True, None),
    ("[STATUS] >= 400", {"status": 400}, True, None),
    ("[STATUS] == 200", {}, False, "[STATUS] (0) == 200"),  # no HTTP response reads 0, as in Gatus
    ("[STATUS] == 0", {}, True, None),
    ("[status] == 200", {"status": 200}, True, "[status] (200) == 200"),  # names are case-insensitive
    ("200 == [STATUS]", {"status": 200}, True, "200 == [STATUS] (200)"),
    ("[STATUS]   ==   200", {"status": 200}, True, "[STATUS] (200) == 200"),
    ("[STATUS]\t==\n200", {"status": 200}, True, "[STATUS] (200) == 200"),
    ("  [STATUS] == 200  ", {"status": 200}, True, "[STATUS] (200) == 200"),
    ("[STATUS] == 0xC8", {"status": 200}, True, "[STATUS] (200) == 0xC8"),  # Go integer literals
    ("[STATUS] == 0310", {"status": 200}, True, None),  # a leading 0 is octal in Go
    ("[STATUS] == 2_00", {"status": 200}, True, None),
    ("[STATUS] == 200.0", {"status": 200}, False, None),  # not an integer: compared as text
    ("[STATUS] < 0x12C", {"status": 299}, True, "[STATUS] (299) < 0x12C (300)"),
    ("[STATUS] == pat(4*)", {"status": 404}, True, "[STATUS] (404) == pat(4*)"),
    ("[STATUS] == pat(4*)", {"status": 200}, False, "[STATUS] (200) == pat(4*)"),
    ("[STATUS] == pat(2??)", {"status": 204}, True, None),
    ("[STATUS] == pat(2??)", {"status": 20}, False, None),
    ("[STATUS] == pat(2[0-4]?)", {"status": 251}, False, None),
    ("[STATUS] != pat(5*)", {"status": 200}, True, None),
    ("[STATUS] == any(200, 429)", {"status": 429}, True, "[STATUS] (429) == any(200, 429)"),
    ("[STATUS] == any(200, 429)", {"status": 404}, False, "[STATUS] (404) == any(200, 429)"),
    ("[STATUS] != any(500, 502, 503)", {"status": 200}, True, None),
    ("[STATUS] != any(500, 502, 503)", {"status": 502}, False, None),
    ("len([STATUS]) == 3", {"status": 200}, True, "len([STATUS]) (3) == 3"),
    ("has([STATUS]) == true", {"status": 200}, True, None),
    ("[STATUS] == [BODY].status", {"status": 200, **body({"status": 200})}, True, None),
    # [RESPONSE_TIME], whole milliseconds
    ("[RESPONSE_TIME] < 500", {"response_time_ms": 50}, True, "[RESPONSE_TIME] (50) < 500"),
    ("[RESPONSE_TIME] < 500", {"response_time_ms": 750}, False, "[RESPONSE_TIME] (750) < 500"),
    ("[RESPONSE_TIME] <= 500", {"response_time_ms": 500}, True, None),
    ("[RESPONSE_TIME] <= 500", {"response_time_ms": 500.9}, True, "[RESPONSE_TIME] (500) <= 500"),
    ("[RESPONSE_TIME] >= 500", {"response_time_ms": 499}, False, "[RESPONSE_TIME] (499) >= 500"),
    ("[RESPONSE_TIME] < 250.5", {"response_time_ms": 250.9}, True, "[RESPONSE_TIME] (250) < 250.5"),
    ("[RESPONSE_TIME] > 0", {}, False, "[RESPONSE_TIME] (0) > 0"),
    ("[RESPONSE_TIME] < 1s", {"response_time_ms": 50}, True, "[RESPONSE_TIME] (50) < 1s"),
    ("[RESPONSE_TIME] > 1s", {"response_time_ms": 2000}, True, None),
    ("[RESPONSE_TIME] > 1s", {"response_time_ms": 1000}, False, None),
    ("[RESPONSE_TIME] < 1.5s", {"response_time_ms": 1499}, True, "[RESPONSE_TIME] (1499) < 1.5s"),
    ("[RESPONSE_TIME] < 500ms", {"response_time_ms": 499}, True, "[RESPONSE_TIME] (499) < 500ms"),
    ("[RESPONSE_TIME] < 1h30m", {"response_time_ms": 1000}, True, "[RESPONSE_TIME] (1000) < 1h30m"),
    ("[RESPONSE_TIME] < 90m", {"response_time_ms": 1000}, True, "[RESPONSE_TIME] (1000) < 90m (1h30m)"),
    ("[RESPONSE_TIME] < 1500us", {"response_time_ms": 1}, True, "[RESPONSE_TIME] (1) < 1500us (1.5ms)"),
    ("[RESPONSE_TIME] < 1500µs", {"response_time_ms": 2}, False, None),
    ("len([RESPONSE_TIME]) == 3", {"response_time_ms": 123.4}, True, None),
    # [CONNECTED]
    ("[CONNECTED] == true", {"connected": True}, True, "[CONNECTED] (true) == true"),
    ("[CONNECTED] == true", {"connected": False}, False, "[CONNECTED] (false) == true"),
    ("[CONNECTED] != false", {"connected": True}, True, None),
    # [IP]
    ("[IP] == 127.0.0.1", {"ip": "127.0.0.1"}, True, "[IP] (127.0.0.1) == 127.0.0.1"),
    ("[IP] == 127.0.0.1", {}, False, "[IP] () == 127.0.0.1"),
    ("[IP] == pat(10.*)", {"ip": "10.0.0.1"}, True, None),
    ("[IP] == pat(10.*)", {"ip": "255.255.255.255"}, False, "[IP] (255.255.255.255) == pat(10.*)"),
    ("[IP] == pat(192.168.[0-9].*)", {"ip": "192.168.4.20"}, True, None),
    ("[IP] == pat(192.168.[^0-4].*)", {"ip": "192.168.4.20"}, False, None),
    ("[IP] == pat(2001:db8::*)", {"ip": "2001:db8::1"}, True, None),
    ("[IP] == any(127.0.0.1, ::1)", {"ip": "::1"}, True, None),
    ("has([IP]) == false", {}, True, "has([IP]) (false) == false"),
    ("len([IP]) > 6", {"ip": "10.0.0.1"}, True, None),
    # [CERTIFICATE_EXPIRATION], milliseconds, shown as a duration beside <, <=, >, >=
    (
        "[CERTIFICATE_EXPIRATION] > 48h",
        {"certificate_expiration_ms": DAY},
        False,
        "[CERTIFICATE_EXPIRATION] (24h) > 48h",
    ),
    (
        "[CERTIFICATE_EXPIRATION] > 12h",
        {"certificate_expiration_ms": DAY},
        True,
        "[CERTIFICATE_EXPIRATION] (24h) > 12h",
    ),
    (
        "[CERTIFICATE_EXPIRATION] > 2419200000",
        {"certificate_expiration_ms": 14 * DAY},
        False,
        "[CERTIFICATE_EXPIRATION] (336h) > 2419200000",
    ),
    ("[CERTIFICATE_EXPIRATION] > 2419200000", {"certificate_expiration_ms": 60 * DAY}, True, None),
    ("[CERTIFICATE_EXPIRATION] == 0", {}, True, "[CERTIFICATE_EXPIRATION] (0) == 0"),  # plain HTTP
    ("[CERTIFICATE_EXPIRATION] > 48h", {}, False, "[CERTIFICATE_EXPIRATION] (0s) > 48h"),
    ("[CERTIFICATE_EXPIRATION] > 14d", {"certificate_expiration_ms": 15 * 86_400_000}, True, None),
    ("[CERTIFICATE_EXPIRATION] > 1d12h", {"certificate_expiration_ms": 30 * 3_600_000}, False, None),
    (
        "[CERTIFICATE_EXPIRATION] > 720h",
        {"certificate_expiration_ms": HOUR + 30 * 60_000 + 15_500},
        False,
        "[CERTIFICATE_EXPIRATION] (1h30m15s) > 720h",
    ),
    ("[CERTIFICATE_EXPIRATION] > 0", {"certificate_expiration_ms": -DAY}, False, "[CERTIFICATE_EXPIRATION] (-24h) > 0"),
    (
        "[CERTIFICATE_EXPIRATION] >= 1h0m15s",
        {"certificate_expiration_ms": HOUR + 15_000},
        True,
        "[CERTIFICATE_EXPIRATION] (1h0m15s) >= 1h0m15s",
    ),
    (
        "[CERTIFICATE_EXPIRATION] > 1.5h",
        {"certificate_expiration_ms": 2 * HOUR},
        True,
        "[CERTIFICATE_EXPIRATION] (2h) > 1.5h (1h30m)",
    ),
    ("[CERTIFICATE_EXPIRATION] == 86400000", {"certificate_expiration_ms": DAY}, True, None),
    # [BODY] as text, trimmed
    ("[BODY] == test", {"body": b"test"}, True, "[BODY] (test) == test"),
    ("[BODY] == test", {"body": b"  test\n"}, True, "[BODY] (test) == test"),
    ("[BODY] == 123", {"body": b"123"}, True, None),
    ("[BODY] < 124", {"body": b"123"}, True, "[BODY] (123) < 124"),
    ("[BODY] > 123", {"body": b"100"}, False, "[BODY] (100) > 123"),
    ("[BODY] > 5", {"body": b"UP"}, False, "[BODY] (0) > 5"),  # not a number: 0, as in Gatus
    ("[BODY] < 5", {"body": b"UP"}, True, "[BODY] (0) < 5"),
    ("[BODY] > 1m", {"body": b"5m"}, True, "[BODY] (300000) > 1m"),  # durations are read on both sides
    ("[BODY] == héllo", {"body": "héllo".encode()}, True, None),
    ("[BODY] == ok", {"body": b"ok\xff"}, False, "[BODY] (ok\ufffd) == ok"),  # invalid UTF-8 is replaced
    ("[BODY] == pat(*john*)", {"body": b'{"name": "john.doe"}'}, True, None),
    ("[BODY] == pat(*<h1>Example Domain</h1>*)", {"body": b"<html>\n<h1>Example Domain</h1>\n</html>"}, True, None),
    ("[BODY] == pat(*error*)", {"body": b"line one\nan error here\n"}, True, None),
    ("[BODY] != pat(*error*)", {"body": b"all good"}, True, None),
    ('[BODY] == pat(*<div id="user">john.doe</div>*)', {"body": HTML}, False, None),
    (
        '[BODY] == pat(*<div id="user">jane.doe</div>*)',
        {"body": HTML},
        True,
        '[BODY] (<!DOCTYPE html><html lang...(truncated)) == pat(*<div id="user">jane.doe</div>*)',
    ),
    ("len([BODY]) == 8", {"body": b"john.doe"}, True, "len([BODY]) (8) == 8"),
    ("len([BODY]) == 3", {"body": b'[{"id": 1}, {"id": 2}, {"id": 3}]'}, True, None),  # an array: its elements
    ("len([BODY]) == 20", {"body": b'{"name": "john.doe"}'}, True, None),  # otherwise its characters
    ("len([BODY]) == 3", {"body": b"[1, \n"}, True, None),  # starts like an array, is not JSON: trimmed text
    ("len([BODY]) == 0", {}, True, None),
    ("len([BODY]) == 5", {"body": "héllo\n".encode()}, True, None),  # characters, not bytes
    ("has([BODY]) == false", {"body": b"  \n"}, True, None),
    ("has([BODY]) == true", {"body": b"x"}, True, None),
    # [BODY] JSON paths
    ("[BODY].status == UP", body({"status": "UP"}), True, "[BODY].status (UP) == UP"),
    ("[BODY].status == UP", body({"status": "DOWN"}), False, "[BODY].status (DOWN) == UP"),
    ("[body].status == UP", body({"status": "UP"}), True, "[body].status (UP) == UP"),
    ("[BODY].data.name == john", body({"data": {"id": 1, "name": "john"}}), True, None),
    ("[BODY].data.name == john", body({"data": {"id": 1}}), False, "[BODY].data.name (INVALID) == john"),
    ("[BODY].data.id == 1", body({"data": {"id": 1}}), True, "[BODY].data.id (1) == 1"),
    ("[BODY].data[1].id == 2", body({"data": [{"id": 1}, {"id": 2}, {"id": 3}]}), True, None),
    ("[BODY][0].id == 1", body([{"id": 1}, {"id": 2}]), True, "[BODY][0].id (1) == 1"),
    ("[BODY].[0] == 1", body([1, 2]), True, None),  # Gatus also takes .[n]
    ("[BODY][3][2] == 7", body([[1, 2], [3, 4], [], [5, 6, 7]]), True, None),
    ("[BODY].data[1][1] == eeeee", body({"data": [["a", "b", "c"], ["d", "eeeee", "f"]]}), True, None),
    ("[BODY].data[0].apps[1].name == app2", {"body": APPS}, True, None),
    ("[BODY].data[0].apps[1].name == app2", body({"data": [{"apps": []}]}), False, None),
    ("[BODY].ids[5] == 1", body({"ids": [1, 2]}), False, "[BODY].ids[5] (INVALID) == 1"),
    ("[BODY][0].name == test", body({"statusCode": 500}), False, "[BODY][0].name (INVALID) == test"),
    ("[BODY].data == OK", body({"data": None}), False, "[BODY].data (INVALID) == OK"),  # null does not resolve
    ("[BODY].items[0] == OK", body({"items": [None, None]}), False, "[BODY].items[0] (INVALID) == OK"),
    ("[BODY].data == OK", {"body": b"null"}, False, "[BODY].data (INVALID) == OK"),
    ("[BODY].status == UP", {"body": b"not json"}, False, "[BODY].status (INVALID) == UP"),
    ("[BODY].status == UP", {}, False, "[BODY].status (INVALID) == UP"),
    ("[BODY].status == UP", {"body": b'{"status": "UP"'}, False, None),  # truncated JSON
    ("[BODY].v == 1", {"body": b'{"v": NaN}'}, False, None),  # not JSON, as in Go
    ("[BODY].data.name.invalid == x", body({"data": {"name": "john"}}), False, None),  # through a string
    ("[BODY].a.b == 5", body({"a": 5}), False, "[BODY].a.b (INVALID) == 5"),  # through a number
    ("[BODY].items.name == x", body({"items": [{"name": "x"}]}), False, None),  # through an array
    ("[BODY].missing != 1", body({}), False, "[BODY].missing (INVALID) != 1"),  # fails whatever the operator
    ("[BODY].missing < 5", body({}), False, "[BODY].missing (INVALID) < 5"),
    ("[BODY].missing == pat(*)", body({}), False, "[BODY].missing (INVALID) == pat(*)"),
    (
        "[BODY].balance > 100",
        body({"balance": "123.40000000000005"}),
        True,
        "[BODY].balance (123.40000000000005) > 100",
    ),
    ("[BODY].balance == 123.40000000000005", body({"balance": 123.40000000000005}), True, None),
    ("[BODY].ratio < 0.5", body({"ratio": 0.3}), True, "[BODY].ratio (0.3) < 0.5"),
    ("[BODY].ratio > 0.5", body({"ratio": 0.7}), True, None),
    ("[BODY].ratio > 0.5", body({"ratio": 0.5}), False, None),
    ("[BODY].latency_ms <= 250", body({"latency_ms": 250.0}), True, "[BODY].latency_ms (250) <= 250"),
    ("[BODY].count == 1000000", {"body": b'{"count": 1e6}'}, True, "[BODY].count (1000000) == 1000000"),
    ("[BODY].v == 1", {"body": b'{"v": 1.0}'}, True, None),
    ("[BODY].v == 1.0", {"body": b'{"v": 1.0}'}, False, "[BODY].v (1) == 1.0"),  # text, as in Gatus
    ("[BODY].big == 12345678901234567890", {"body": b'{"big": 12345678901234567890}'}, True, None),
    ("[BODY].n < -1", body({"n": -2}), True, None),
    ("[BODY].data == 0x1", body({"data": "0x1"}), True, None),
    ("[BODY].data == 1", body({"data": "0x1"}), True, None),
    ("[BODY].data == 15", body({"data": "0xF"}), True, None),
    ("[BODY].data == 2", body({"data": "0b0010"}), True, None),
    ("[BODY].data > 0", body({"data": "0o1"}), True, None),
    ("[BODY].ok == true", body({"ok": True}), True, "[BODY].ok (true) == true"),
    ("[BODY].ok == false", body({"ok": False}), True, None),
    ('[BODY].user == {"id":1,"name":"x"}', body({"user": {"name": "x", "id": 1}}), True, None),  # sorted, minified
    ('[BODY].tags == ["eu","prod"]', body({"tags": ["eu", "prod"]}), True, None),  # arrays read as JSON
    ("[BODY].tags == pat(*prod*)", body({"tags": ["eu", "prod"]}), True, None),
    ("[BODY].user.firstName != [BODY].user.lastName", {"body": USER}, True, None),
    (
        "[BODY].user.firstName == [BODY].user.lastName",
        {"body": USER},
        False,
        "[BODY].user.firstName (john) == [BODY].user.lastName (doe)",
    ),
    ("[BODY].name == café", body({"name": "café"}), True, None),
    ("[BODY].名前 == 太郎", {"body": '{"名前": "太郎"}'.encode()}, True, "[BODY].名前 (太郎) == 太郎"),
    ("[BODY].msg == pat(*ü*)", body({"msg": "grüß"}), True, None),
    ("[BODY].a-b.c_d == 1", body({"a-b": {"c_d": 1}}), True, None),
    ("[BODY].@odata == x", body({"@odata": "x"}), True, None),
    ("[BODY].name == pat(john*)", body({"name": "john.doe"}), True, "[BODY].name (john.doe) == pat(john*)"),
    ("[BODY].name == pat(bob*)", body({"name": "john.doe"}), False, "[BODY].name (john.doe) == pat(bob*)"),
    ("[BODY].path == pat(/api/*)", body({"path": "/api/v1/users"}), True, None),  # * also spans '/'
    ("[BODY].v == pat(v1.\\*)", body({"v": "v1.*"}), True, None),
    ("[BODY].v == pat(v1.\\*)", body({"v": "v1.2"}), False, None),
    ("[BODY].name == any(john.doe, jane.doe)", body({"name": "jane.doe"}), True, None),
    (
        "[BODY].name == any(john.doe, jane.doe)",
        body({"name": "bob"}),
        False,
        "[BODY].name (bob) == any(john.doe, jane.doe)",
    ),
    ("[BODY].id == any(1, 2)", body({"id": 2}), True, None),
    ("[BODY].id == any(1, 2)", body({"id": 3}), False, None),
    # len() and has() on JSON paths
    ("len([BODY].data) == 3", body({"data": [{"id": 1}, {"id": 2}, {"id": 3}]}), True, "len([BODY].data) (3) == 3"),
    ("len([BODY].data) == 8", body({"name": "john.doe"}), False, "len([BODY].data) (INVALID) == 8"),
    ("len([BODY].data.name) == john", body({"data": {"id": 1}}), False, "len([BODY].data.name) (INVALID) == john"),
    ("len([BODY].name) == 8", body({"name": "john.doe"}), True, None),
    ("len([BODY].name) == 4", body({"name": "café"}), True, None),  # characters, not bytes
    ("len([BODY].age) == 2", body({"age": 18}), True, None),
    ("len([BODY].adult) == 4", body({"adult": True}), True, None),
    ("len([BODY][0]) == 23", {"body": b'[{"age":18,"adult":true}]'}, True, None),  # an object: its JSON text
    ("len([BODY].obj) == 2", body({"obj": {}}), True, None),
    ("len([BODY].data) < 5", body({"data": [{"id": 1}]}), True, "len([BODY].data) (1) < 5"),
    ("3 <= len([BODY].items)", body({"items": [1, 2, 3]}), True, "3 <= len([BODY].items) (3)"),
    ("has([BODY].errors) == false", body({}), True, "has([BODY].errors) (false) == false"),
    ("has([BODY].errors) == false", body({"errors": ["1"]}), False, "has([BODY].errors) (true) == false"),
    ("has([BODY].users) == true", body({"users": []}), True, None),
    ("has([BODY].users[0].name) == true", body({"users": [{"name": "x"}]}), True, None),
    ("has([BODY].error) == false", body({"error": None}), True, None),
    ("has([BODY].status) == false", {"body": b"not json"}, True, None),
    ("has( [BODY].status ) == true", body({"status": 1}), True, None),
    # [DNS_RCODE], a dns check's
    ("[DNS_RCODE] == NOERROR", {"dns_rcode": "NOERROR"}, True, "[DNS_RCODE] (NOERROR) == NOERROR"),
    ("[dns_rcode] == NOERROR", {"dns_rcode": "NXDOMAIN"}, False, "[dns_rcode] (NXDOMAIN) == NOERROR"),
    ("[DNS_RCODE] == any(NOERROR, NXDOMAIN)", {"dns_rcode": "NXDOMAIN"}, True, None),
    ("has([DNS_RCODE]) == false", {}, True, None),  # no DNS reply
]


@pytest.mark.parametrize(("text", "fields", "success", "resolved"), EVALUATIONS)
def test_it_evaluates(text, fields, success, resolved):
    result = evaluate(parse(text), Response(**fields))
    assert result.success is success, result.resolved
    assert result.condition == text
    if resolved is not None:
        assert result.resolved == resolved


# (condition, words the reason contains)
INVALID = [
    ("", "empty condition"),
    ("   ", "empty condition"),
    ("[STATUS]", "no comparison operator"),
    ("[STATUS] =! 200", "no comparison operator (use ==, !=, <, <=, >, >=)"),
    ("[STATUS] ? 201", "no comparison operator"),
    ("[STATUS] = 200", "no comparison operator"),
    ("[STATUS] = = 201", "no comparison operator"),
    ("[STATUS] =< 200", "no comparison operator"),
    ("[STATUS] <> 200", "no comparison operator"),
    ("[STATUS] === 200", "no comparison operator"),
    ("[STATUS]==200", "with a space on each side"),
    ("[STATUS] ==200", "with a space on each side"),
    ("[STATUS] ==", "nothing on the right of =="),
    ("== 200", "nothing on the left of =="),
    ("[STATUS] == 200 == 300", "more than one comparison operator"),
    ("[STATUS] > 200 < 300", "more than one comparison operator"),
    ("[STATUS] == =! 200", "=! is not a comparison operator"),
    ("[STATUSS] == 200", "unknown placeholder [STATUSS]"),
    ("[FOO].bar == 1", "unknown placeholder [FOO]"),
    ("len([NOPE]) == 1", "unknown placeholder [NOPE]"),
    ("[DOMAIN_EXPIRATION] > 720h", "Pulse does not support"),
    ("[CONTEXT].id == 1", "Pulse does not support"),
    ("[STATUS].code == 200", "[STATUS] takes no JSON path"),
    ("STATUS == 200", "no placeholder"),
    ("raw == raw", "no placeholder"),
    ("foo([STATUS]) == 1", "unknown function foo()"),
    ("LEN([BODY]) == 1", "unknown function LEN()"),
    ("[BODY].v == v2(beta)", "unknown function v2()"),
    ("len(200) == 3", "len() takes a placeholder"),
    ("len() == 0", "len() takes a placeholder"),
    ("has(len([BODY])) == true", "has() takes a placeholder"),
    ("len([BODY]).x == 1", "unexpected text after the closing parenthesis of len()"),
    ("pat(2*) == any(200)", "pat() compares with a placeholder on the other side"),
    ("any(200, 201) < [STATUS]", "any() works only with == and !="),
    ("[STATUS] < pat(2*)", "pat() works only with == and !="),
    ("[STATUS] >= any(200, 201)", "any() works only with == and !="),
    ("[STATUS] == pat()", "pat() takes a pattern"),
    ("[STATUS] == any()", "any() takes values"),
    ("[STATUS] == any(200,,201)", "any() takes values"),
    ("[BODY] == pat([z-a])", "bad pattern: the range z-a is reversed"),
    ("[BODY] == pat([])", "bad pattern"),
    ("[BODY] == pat(a[-])", "bad pattern"),
    ("len([BODY].a == 1", "unbalanced parentheses"),
    ("[STATUS] == (200", "unbalanced parentheses"),
    ("[STATUS] == 200)", "unbalanced parentheses"),
    ("[BODY].a] == 1", "unbalanced brackets"),
    ("[BODY.a == 1", "unbalanced brackets"),
    ("len([BODY)] == 1", "unbalanced"),
    ("[BODY] == pat(abc\\)", "unbalanced parentheses"),
    ("[BODY]..a == 1", "malformed JSON path: an empty key between two dots"),
    ("[BODY].a[x] == 1", "malformed JSON path: an array index is a whole number"),
    ("[BODY].a[-1] == 1", "malformed JSON path: negative array index [-1]"),
    ("[BODY].a[] == 1", "malformed JSON path"),
    ("[BODY].a[1.5] == 1", "malformed JSON path"),
    ("[BODY]. == 1", "malformed JSON path: it ends with '.'"),
    ("[BODY].a. == 1", "malformed JSON path: it ends with '.'"),
    ("[BODY]a == 1", "malformed JSON path: expected '.' or '['"),
    ("[BODY].a[0]b == 1", "malformed JSON path: expected '.' or '['"),
    ("[BODY].a(b) == 1", "malformed JSON path"),
    ("[BODY].first name == x", "a key cannot contain spaces"),
    ("has([BODY].a[x]) == true", "malformed JSON path"),
    ("[CERTIFICATE_EXPIRATION] > 30days", "bad number or duration '30days'"),
    ("[CERTIFICATE_EXPIRATION] > 48hours", "bad number or duration '48hours'"),
    ("[CERTIFICATE_EXPIRATION] > 1h30", "bad number or duration"),
    ("[CERTIFICATE_EXPIRATION] > 99999999999h", "bad number or duration"),  # beyond Go's 292 years
    ("[RESPONSE_TIME] < potato", "'potato' is not a number or a duration"),
    ("[RESPONSE_TIME] < 1.2.3", "bad number or duration"),
    ("[RESPONSE_TIME] < NaN", "not a number or a duration"),
    ("has([BODY].a) > 0", "has() is true or false"),
    ("[CONNECTED] < 1", "[CONNECTED] is true or false"),
    ("[IP] > 10.0.0.0", "[IP] is an address"),
]


@pytest.mark.parametrize(("text", "reason"), INVALID)
def test_it_rejects(text, reason):
    with pytest.raises(ConditionError) as caught:
        parse(text)
    assert str(caught.value) == f"{text}: {caught.value.reason}"
    assert reason in caught.value.reason
    assert caught.value.text == text


def test_the_message_names_the_condition_and_the_reason():
    with pytest.raises(
        ConditionError, match=r"^\[STATUS\] =! 200: no comparison operator \(use ==, !=, <, <=, >, >=\)$"
    ):
        parse("[STATUS] =! 200")


@pytest.mark.parametrize("text", ["[STATUS] == " + "1" * 989, "x" * 5000])
def test_it_rejects_a_condition_over_1000_characters(text):
    with pytest.raises(ConditionError, match="longer than 1000 characters") as caught:
        parse(text)
    assert str(caught.value).startswith(text[:80])
    assert len(str(caught.value)) < 200


def test_a_condition_of_1000_characters_is_fine():
    text = "[STATUS] == " + "1" * 988
    assert len(text) == 1000
    assert parse(text).operator == "=="


def test_a_condition_error_is_a_value_error_and_a_config_error():
    with pytest.raises(ValueError):
        parse("[STATUS] = 200")
    assert issubclass(ConditionError, ConfigError)


def test_a_condition_error_survives_pickling():
    error = pickle.loads(pickle.dumps(ConditionError("[STATUS]", "no comparison operator")))
    assert (error.text, error.reason, str(error)) == (
        "[STATUS]",
        "no comparison operator",
        "[STATUS]: no comparison operator",
    )


@pytest.mark.parametrize(
    ("text", "placeholders", "response_time_only"),
    [
        ("[STATUS] == 200", {"[STATUS]"}, False),
        ("[RESPONSE_TIME] < 500", {"[RESPONSE_TIME]"}, True),
        ("1s > [response_time]", {"[RESPONSE_TIME]"}, True),
        ("len([RESPONSE_TIME]) < 4", {"[RESPONSE_TIME]"}, True),
        ("[RESPONSE_TIME] < [BODY].limit", {"[RESPONSE_TIME]", "[BODY]"}, False),
        ("[BODY].a[0].b == 1", {"[BODY]"}, False),
        ("len([BODY].items) > 0", {"[BODY]"}, False),
        ("has([BODY].error) == false", {"[BODY]"}, False),
        ("[BODY] == pat(*ok*)", {"[BODY]"}, False),
        ("[CERTIFICATE_EXPIRATION] > 48h", {"[CERTIFICATE_EXPIRATION]"}, False),
        ("[IP] == any(127.0.0.1, ::1)", {"[IP]"}, False),
        ("[CONNECTED] == true", {"[CONNECTED]"}, False),
    ],
)
def test_it_lists_the_placeholders_it_uses(text, placeholders, response_time_only):
    condition = parse(text)
    assert condition.placeholders == frozenset(placeholders)
    assert condition.response_time_only is response_time_only


def test_it_keeps_the_tree():
    condition = parse("len([BODY].data[0].items) >= 2")
    assert condition.operator == ">="
    assert condition.left == conditions.Placeholder(
        text="len([BODY].data[0].items)", name="[BODY]", path=("data", 0, "items"), function="len"
    )
    assert condition.right == conditions.Literal(text="2", number=2)
    assert parse("[CERTIFICATE_EXPIRATION] > 1h30m").right == conditions.Literal(
        text="1h30m", number=5_400_000, duration=True
    )
    assert parse("[STATUS] == any(200, 204)").right == conditions.AnyOf(text="any(200, 204)", values=("200", "204"))


def test_parsing_is_cached_by_text():
    assert parse("[STATUS] == 201") is parse("[STATUS] == 201")


def test_the_body_is_parsed_as_json_once_per_response():
    response = Response(status=200, body=b'{"status": "UP", "items": [1, 2], "db": {"latency_ms": 12}}')
    texts = ["[BODY].status == UP", "len([BODY].items) == 2", "has([BODY].db) == true", "[BODY].db.latency_ms < 50"]
    with mock.patch("pulse.uptime.conditions.json.loads", wraps=json.loads) as loads:
        results = [evaluate(parse(text), response) for text in texts]
        assert extract("[BODY].db.latency_ms", response) == 12
    assert all(result.success for result in results)
    assert loads.call_count == 1


def test_the_cache_does_not_change_what_a_response_equals():
    first, second = Response(status=200, body=b"{}"), Response(status=200, body=b"{}")
    evaluate(parse("has([BODY].a) == false"), first)
    assert first == second
    assert hash(first) == hash(second)
    assert "_cache" not in repr(first)


def test_a_non_json_body_is_only_decoded_for_paths():
    response = Response(status=200, body=b"<html>")
    with mock.patch("pulse.uptime.conditions.json.loads", wraps=json.loads) as loads:
        assert evaluate(parse("[STATUS] == 200"), response).success
        assert evaluate(parse("[BODY] == pat(<html*)"), response).success
        assert evaluate(parse("len([BODY]) == 6"), response).success
    assert loads.call_count == 0


def test_a_long_resolved_value_is_cut():
    result = evaluate(parse("[BODY] == short"), Response(body=b"x" * 300))
    assert result.resolved == "[BODY] (" + "x" * 200 + "...(truncated)) == short"


@pytest.mark.parametrize(
    "payload",
    [b"[" * 100_000, b'{"a":' * 50_000, b"\x00\x01\x02", b"\xef\xbb\xbf{}", b'{"a": Infinity}', b'{"a": 1e400}'],
)
def test_a_hostile_body_fails_the_path_without_raising(payload):
    result = evaluate(parse("[BODY].a == 1"), Response(body=payload))
    assert not result.success
    assert result.resolved == "[BODY].a (INVALID) == 1"


class _Counted:
    """A glob chunk that counts how often it is tried."""

    def __init__(self, pattern):
        self.pattern, self.tries = pattern, 0

    def match(self, *args):
        self.tries += 1
        return self.pattern.match(*args)

    def search(self, *args):
        self.tries += 1
        return self.pattern.search(*args)


@pytest.mark.parametrize("body", ["a" * 100_000, "a" * 100_000 + "b", "ab" * 50_000 + "c"])
def test_a_hostile_pattern_tries_each_of_its_pieces_once(body):
    """Backtracking over the `*`s would try the pieces again at every place: quadratic or worse in
    the body. Each piece is tried once, from where the previous one ended."""
    glob = parse("[BODY] == pat(" + "*a" * 20 + "*b)").right
    counted = dataclasses.replace(glob, chunks=tuple(_Counted(c) for c in glob.chunks))

    assert counted.matches(body) == body.endswith("b")
    assert sum(c.tries for c in counted.chunks) <= len(glob.chunks)


@pytest.mark.parametrize(
    ("glob", "value", "matches"),
    [
        ("*", "livingroom_123", True),
        ("**", "livingroom_123", True),
        ("living*", "livingroom_123", True),
        ("*living*", "livingroom_123", True),
        ("*123", "livingroom_123", True),
        ("*_*", "livingroom_123", True),
        ("living*_*3", "livingroom_123", True),
        ("living*room_*3", "livingroom_123", True),
        ("*vin*om*2*", "livingroom_123", True),
        ("livingroom_123", "livingroom_123", True),
        ("*livingroom_123*", "livingroom_123", True),
        ("*test*", "\\test", True),
        ("livingroom", "livingroom_123", False),
        ("livingroom123", "livingroom_123", False),
        ("*what*", "livingroom_123", False),
        ("*.*", "livingroom_123", False),
        ("room*123", "livingroom_123", False),
        ("ab*ab", "ab", False),
        ("ab*ab", "abab", True),
        ("a?c", "abc", True),
        ("a?c", "ac", False),
        ("a?c", "aéc", True),
        ("[abc]x", "bx", True),
        ("[^abc]x", "bx", False),
        ("[a-c][0-9]", "c7", True),
        ("[\\]]", "]", True),
        ("\\[x\\]", "[x]", True),
        ("\\*", "*", True),
        ("\\*", "x", False),
        ("*", "", True),
        ("a*", "", False),
        ("x*y", "x\ny", True),
    ],
)
def test_pat_matches_as_go_filepath_match(glob, value, matches):
    condition = parse(f"[BODY].v == pat({glob})")
    assert evaluate(condition, Response(**body({"v": value}))).success is matches


def test_a_result_converts_to_a_dict():
    result = evaluate(parse("[STATUS] == 200"), Response(status=503))
    assert result.as_dict() == {"condition": "[STATUS] == 200", "success": False, "resolved": "[STATUS] (503) == 200"}
    assert json.loads(json.dumps(result.as_dict())) == result.as_dict()


@pytest.mark.parametrize(
    ("path", "steps"),
    [
        ("[BODY]", ()),
        ("[BODY].a", ("a",)),
        ("[BODY].db.latency_ms", ("db", "latency_ms")),
        ("[BODY].a.b[0].c", ("a", "b", 0, "c")),
        ("[BODY][0].id", (0, "id")),
        ("[BODY][3][2]", (3, 2)),
        ("[BODY].data[1][1]", ("data", 1, 1)),
        ("[BODY].[0]", (0,)),
        ("[body].A", ("A",)),
        ("  [BODY].a  ", ("a",)),
        ("[BODY].名前", ("名前",)),
        ("[BODY].x-rate@1", ("x-rate@1",)),
    ],
)
def test_parse_path(path, steps):
    assert parse_path(path) == steps


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("", "starts with [BODY]"),
        ("db.latency_ms", "starts with [BODY]"),
        ("[STATUS]", "starts with [BODY]"),
        ("len([BODY].a)", "starts with [BODY]"),
        ("[BODY]..a", "an empty key between two dots"),
        ("[BODY].a[x]", "an array index is a whole number"),
        ("[BODY].a[-1]", "negative array index"),
        ("[BODY].a[", "an array index is a whole number"),
        ("[BODY].a]", "expected '.' or '['"),
        ("[BODY].", "it ends with '.'"),
        ("[BODY]a", "expected '.' or '['"),
        ("[BODY].a b", "a key cannot contain spaces"),
        ("[BODY]." + "a" * 1000, "longer than 1000 characters"),
    ],
)
def test_parse_path_rejects(path, reason):
    with pytest.raises(ConditionError) as caught:
        parse_path(path)
    assert reason in caught.value.reason
    assert str(caught.value).startswith(path[:80])


DOCUMENT = b'{"db": {"latency_ms": 12.5, "ok": true, "replicas": [{"lag": 3}, {"lag": 1.0}], "note": null}}'


@pytest.mark.parametrize(
    ("path", "payload", "value"),
    [
        ("[BODY].db.latency_ms", DOCUMENT, 12.5),
        ("[BODY].db.ok", DOCUMENT, True),
        ("[BODY].db.replicas[0].lag", DOCUMENT, 3),
        ("[BODY].db.replicas[1].lag", DOCUMENT, 1),
        ("[BODY].db.replicas", DOCUMENT, [{"lag": 3}, {"lag": 1}]),
        ("[BODY].db.replicas[2].lag", DOCUMENT, None),
        ("[BODY].db.note", DOCUMENT, None),
        ("[BODY].db.missing", DOCUMENT, None),
        ("[BODY].db.latency_ms.x", DOCUMENT, None),
        ("[BODY][1]", b"[10, 20]", 20),
        ("[BODY]", b'  {"a": 1}\n', {"a": 1}),
        ("[BODY].a", b"not json", None),
        ("[BODY]", b"not json", None),
        ("[BODY].a", b"", None),
        ("[BODY].név", '{"név": "Éva"}'.encode(), "Éva"),
    ],
)
def test_extract(path, payload, value):
    assert extract(path, payload) == value
    assert extract(path, Response(body=payload)) == value


def test_extract_rejects_a_malformed_path():
    with pytest.raises(ConditionError, match=r"^\[BODY\]\.\.a: malformed JSON path"):
        extract("[BODY]..a", b"{}")


@pytest.mark.parametrize(
    ("text", "status", "success", "resolved"),
    [
        ("any(200, 429) == [STATUS]", 429, True, "any(200, 429) == [STATUS] (429)"),
        ("any(200, 429) == [STATUS]", 500, False, "any(200, 429) == [STATUS] (500)"),
        ("any(200, 429) != [STATUS]", 429, False, "any(200, 429) != [STATUS] (429)"),
        ("pat(4*) == [STATUS]", 404, True, "pat(4*) == [STATUS] (404)"),
    ],
)
def test_pat_and_any_may_stand_on_the_left_as_in_gatus(text, status, success, resolved):
    result = evaluate(parse(text), Response(status=status))
    assert (result.success, result.resolved) == (success, resolved)
