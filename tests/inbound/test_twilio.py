"""Twilio's webhook signature as Twilio computes it (its published test vectors), and TwiML answers."""

import base64
import hashlib
import hmac

import pytest

from pulse.inbound import twilio

# Twilio's published test vector (twilio-python, tests/unit/test_request_validator.py).
TOKEN = "12345"
URL = "https://mycompany.com/myapp.php?foo=1&bar=2"
PARAMS = {
    "CallSid": ["CA1234567890ABCDE"],
    "Caller": ["+14158675309"],
    "Digits": ["1234"],
    "From": ["+14158675309"],
    "To": ["+18005551212"],
}
SIGNED = "RSOYDt4T1cUTdK1PDd93/VVr8B8="  # over URL as it is
SIGNED_WITH_PORT = "kvajT1Ptam85bY51eRf/AJRuM3w="  # over URL with :443


def test_it_computes_twilios_published_signatures():
    assert twilio.signature(TOKEN, URL, PARAMS) == SIGNED
    assert twilio.signature(TOKEN, URL.replace(".com/", ".com:443/"), PARAMS) == SIGNED_WITH_PORT


def test_repeated_values_are_sorted_once_each():
    """twilio-python's vector for a name given several times: values sorted, duplicates once."""
    params = {"Sid": ["CA123"], "SidAccount": ["AC123"], "Digits": ["5678", "1234", "1234"]}
    assert twilio.signature(TOKEN, URL, params) == "IK+Dwps556ElfBT0I3Rgjkr1wJU="


@pytest.mark.parametrize(
    ("url", "given"),
    [
        (URL, SIGNED),
        (URL, SIGNED_WITH_PORT),  # Twilio signed with the default port: accepted
        (URL.replace(".com/", ".com:443/"), SIGNED),  # and the other way round
        (URL.replace(".com/", ".com:1234/"), SIGNED),  # any explicit port is also tried without
    ],
)
def test_a_signature_with_or_without_the_port_is_valid(url, given):
    assert twilio.valid(TOKEN, url, PARAMS, given)


@pytest.mark.parametrize(
    ("token", "url", "params", "given"),
    [
        ("54321", URL, PARAMS, SIGNED),  # another account's token
        (TOKEN, URL.replace("https:", "http:"), PARAMS, SIGNED),  # another URL
        (TOKEN, URL + "&baz=3", PARAMS, SIGNED),
        (TOKEN, URL, {**PARAMS, "Digits": ["1235"]}, SIGNED),  # a changed value
        (TOKEN, URL, {**PARAMS, "ToCity": [""]}, SIGNED),  # a blank value counts
        (TOKEN, URL, PARAMS, ""),
        (TOKEN, URL, PARAMS, SIGNED.lower()),
        (TOKEN, URL, PARAMS, "é" + SIGNED[1:]),  # not ASCII: no error, no match
    ],
)
def test_anything_else_is_not(token, url, params, given):
    assert not twilio.valid(token, url, params, given)


def test_names_are_sorted_by_code_point():
    """Upper case before lower case, as Python's ``sorted`` and Twilio's "Unix-style" sort have it."""
    signed = hmac.new(TOKEN.encode(), (URL + "B1a3b2").encode(), hashlib.sha1).digest()
    assert twilio.signature(TOKEN, URL, {"b": ["2"], "B": ["1"], "a": ["3"]}) == base64.b64encode(signed).decode()


@pytest.mark.parametrize(
    ("url", "with_port", "without_port"),
    [
        ("https://h.example/sms", "https://h.example:443/sms", "https://h.example/sms"),
        ("http://h.example/sms?x=1", "http://h.example:80/sms?x=1", "http://h.example/sms?x=1"),
        ("https://h.example:8443/sms", "https://h.example:8443/sms", "https://h.example/sms"),
    ],
)
def test_ports(url, with_port, without_port):
    assert (twilio.with_port(url), twilio.without_port(url)) == (with_port, without_port)


def test_twiml_answers_a_message_escaped_or_none():
    said = twilio.twiml("Alert 1 <acknowledged> & done\x00")
    assert said.media_type == "application/xml" and said.headers["content-type"] == "application/xml"
    assert said.body == (
        b'<?xml version="1.0" encoding="UTF-8"?>'
        b"<Response><Message>Alert 1 &lt;acknowledged&gt; &amp; done</Message></Response>"
    )
    assert twilio.twiml(None).body == b'<?xml version="1.0" encoding="UTF-8"?><Response/>'
