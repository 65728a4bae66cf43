"""Replies to SMS pages, through `pulse serve` on loopback and the real PostgreSQL: a page by SMS
asks for a reply code, a reply signed by Twilio with it, from the number paged, acknowledges the
alert for that person once; anything else (a bad signature, another number, an unknown, used or
code of an alert no longer escalating, a keyword) changes nothing, and the auth token reaches no log; a
number's wrong codes are counted for every process."""

import dataclasses
import logging
import re
import secrets
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from urllib.parse import urlencode

import pytest
import requests

from pulse import configfile
from pulse.db import db
from pulse.inbound import twilio
from pulse.models import (
    Component,
    Incident,
    Notification,
    OnCallAlert,
    OnCallReplyCode,
    OnCallReplyMiss,
    OnCallTimeline,
    Person,
    utcnow,
)
from pulse.notifications import delivery
from pulse.oncall import alerts, replies, smshook
from tests.oncall.test_spec import STEADY
from tests.support.serve import running
from tests.support.vendors import Vendors

PUBLIC = "https://hooks.acme.example"
CAROL = "+14155550102"  # paged at level 1, by SMS (and email, below)
ALICE = "+14155550100"  # a person of the organization, never paged here


@pytest.fixture
def server(config):
    settings = dataclasses.replace(config, serve_public_url=PUBLIC)
    with running(settings) as service:
        service.url = f"http://127.0.0.1:{service.port}{smshook.PATH}"
        service.settings = settings
        yield service


@pytest.fixture
def acme(database, server):
    configfile.apply(configfile.load(STEADY))
    Person.update(email="carol@acme.example").where(Person.key == "carol").execute()


def open_alert(settings, title="API down"):
    """A new incident's alert: carol is paged by SMS and by email. The incident is closed then (its
    alert stays open), so that the component may have another."""
    api = Component.get(Component.key == "api")
    incident = Incident.create(organization=api.organization_id, component=api, title=title, started_at=utcnow())
    alerts.open_alert(incident.id, utcnow(), settings)
    Incident.update(resolved_at=utcnow()).where(Incident.id == incident.id).execute()
    return OnCallAlert.get(OnCallAlert.incident == incident.id)


@pytest.fixture
def alert(acme, server):
    return open_alert(server.settings)


@pytest.fixture
def code(alert, server, vendors):
    """The code carol's page by SMS asks for, as the fake Twilio received it."""
    delivery.deliver(sms_page(alert).id, "m1", server.settings, at=None, final=False)
    [sent] = vendors.received("twilio")
    return re.search(r"Reply ([0-9]{6}) to acknowledge", sent.form["Body"])[1]


def form(body, sender=CAROL, sid=None, account=None, **extra):
    """Twilio's incoming-message fields, the blank ones included."""
    sid = sid or "SM" + secrets.token_hex(16)
    return {
        "ToCountry": "US", "ToState": "CA", "SmsMessageSid": sid, "NumMedia": "0", "ToCity": "", "FromZip": "",
        "SmsSid": sid, "FromState": "", "SmsStatus": "received", "FromCity": "", "Body": body, "FromCountry": "US",
        "To": "+15005550006", "ToZip": "", "NumSegments": "1", "MessageSid": sid,
        "AccountSid": account or Vendors.twilio_sid, "From": sender, "ApiVersion": "2010-04-01", **extra,
    }  # fmt: skip


def signed(server, fields, *, token=None, url=PUBLIC + smshook.PATH):
    """The headers of Twilio's POST of ``fields`` to ``url``, signed with ``token`` (default: the account's)."""
    signature = twilio.signature(token or server.settings.twilio_auth_token, url, {k: [v] for k, v in fields.items()})
    return {"Content-Type": "application/x-www-form-urlencoded", twilio.HEADER: signature}


def reply(server, fields, *, headers=None, **signing):
    """POST ``fields`` as Twilio does, signed (`signed`), with ``headers`` beside."""
    sent = {**signed(server, fields, **signing), **(headers or {})}
    return requests.post(server.url, data=urlencode(fields), headers=sent, timeout=10)


def message(answer):
    """The text of a TwiML answer's ``<Message>``."""
    assert answer.status_code == 200 and answer.headers["content-type"] == "application/xml", answer.text
    head, tail = '<?xml version="1.0" encoding="UTF-8"?><Response><Message>', "</Message></Response>"
    assert answer.text.startswith(head) and answer.text.endswith(tail), answer.text
    return answer.text[len(head) : -len(tail)]


def sms_page(alert):
    return Notification.get(Notification.event == alert.event_id, Notification.kind == "sms")


def unchanged(alert):
    """The alert is as paged: triggered, its pages by email pending, no acknowledgement on its timeline."""
    row = OnCallAlert.get_by_id(alert.id)
    assert (row.status, row.acknowledged_by) == ("triggered", None)
    assert Notification.get(Notification.kind == "email", Notification.event == alert.event_id).status == "pending"
    assert not OnCallTimeline.select().where(OnCallTimeline.kind == "acknowledged").exists()
    assert not OnCallReplyCode.select().where(OnCallReplyCode.used_at.is_null(False)).exists()
    return True


def test_a_page_by_sms_asks_for_a_code_and_the_reply_acknowledges(alert, code, server, vendors, caplog, capfd):
    caplog.set_level(logging.INFO)
    [sent] = vendors.received("twilio")
    assert sent.form["To"] == CAROL
    assert f"Reply {code} to acknowledge, or: pulse oncall ack {alert.id}" in sent.form["Body"]
    stored = OnCallReplyCode.get()
    assert (stored.alert_id, stored.person.key, stored.phone, stored.code) == (alert.id, "carol", CAROL, code)
    email = Notification.get(Notification.kind == "email")
    assert email.reply_code is None  # only a page by SMS asks for a reply

    answer = reply(server, form(f" {code} "))

    assert message(answer) == f"Alert {alert.id} acknowledged by carol: no one more is paged."
    row = OnCallAlert.get_by_id(alert.id)
    assert (row.status, row.acknowledged_by, row.acknowledged_via) == ("acknowledged", "carol", "sms")
    [step] = OnCallTimeline.select().where(OnCallTimeline.kind == "acknowledged")
    assert (step.person, step.note) == ("carol", "by carol (sms); 1 page(s) not sent yet were cancelled")
    assert Notification.get_by_id(email.id).status == "cancelled"
    logged = caplog.text + capfd.readouterr().err
    assert f"Alert {alert.id}: SMS reply of carol" in logged and "POST /sms/twilio 200" in logged
    assert server.settings.twilio_auth_token not in logged and code not in logged and CAROL not in logged


@pytest.mark.parametrize("said", ["ACK 482193", "#482193", "482193.", "ack482193!"])
def test_a_code_may_come_after_ack_or_hash(said):
    assert replies.parse(said) == "482193"


@pytest.mark.parametrize("said", ["4821", "48219", "4821930", "482193 thanks", "ok", "", "٤٨٢١٩٣"])
def test_other_texts_give_no_code(said):
    assert replies.parse(said) is None


@pytest.mark.parametrize(
    "signing",
    [
        {"token": "0" * 32},  # another token
        {"url": "http://127.0.0.1:8080/sms/twilio"},  # the address the service sees, not the public one
        {"url": PUBLIC + "/sms/twilio/"},
        {"headers": {twilio.HEADER: ""}},
        {"headers": {twilio.HEADER: "RSOYDt4T1cUTdK1PDd93/VVr8B8="}},
        {"headers": {twilio.RULE_HEADER: "key=KS1,algorithm=HMAC_SHA256"}},  # a Webhooks Rule's own key
    ],
)
def test_a_request_without_twilios_signature_is_refused_and_changes_nothing(alert, code, server, signing):
    answer = reply(server, form(code), **signing)
    assert answer.status_code == 403 and server.settings.twilio_auth_token not in answer.text
    assert unchanged(alert)


def test_a_changed_body_or_another_account_is_refused(alert, code, server):
    fields = form(code)
    headers = signed(server, fields)
    changed = requests.post(server.url, data=urlencode({**fields, "From": ALICE}), headers=headers, timeout=10)
    assert (changed.status_code, changed.text) == (403, "No valid X-Twilio-Signature.\n")
    blanks_dropped = urlencode({k: v for k, v in fields.items() if v})  # a proxy that drops blank fields
    assert requests.post(server.url, data=blanks_dropped, headers=headers, timeout=10).status_code == 403
    foreign = reply(server, form(code, account="AC" + "f" * 32))  # signed, but not ours
    assert (foreign.status_code, foreign.text) == (403, "A message to another Twilio account.\n")
    assert unchanged(alert)


@pytest.mark.parametrize("url", [PUBLIC + ":443" + smshook.PATH, PUBLIC + smshook.PATH])
def test_a_signature_with_or_without_the_default_port_is_taken(alert, code, server, url):
    assert message(reply(server, form(code), url=url)).startswith(f"Alert {alert.id} acknowledged by carol")


def test_a_query_string_is_signed_as_it_came(alert, code, server):
    fields = form(code)
    headers = signed(server, fields, url=PUBLIC + smshook.PATH + "?org=acme&x=%2F")
    answer = requests.post(server.url + "?org=acme&x=%2F", data=urlencode(fields), headers=headers, timeout=10)
    assert message(answer).startswith(f"Alert {alert.id} acknowledged")


def test_other_requests_are_refused(alert, code, server):
    assert requests.get(server.url, timeout=10).status_code == 405
    assert requests.post(server.url, json=form(code), timeout=10).status_code == 415
    fields = form(code, Padding="x" * smshook.MAX_BODY)
    assert reply(server, fields).status_code == 413
    assert reply(server, {k: v for k, v in form(code).items() if k != "MessageSid"}).status_code == 400
    assert unchanged(alert)


@pytest.mark.parametrize(
    ("sender", "said", "answered"),
    [
        (ALICE, "{code}", "No page sent to this number has the code {code}: nothing was acknowledged."),
        (CAROL, "{other}", "No page sent to this number has the code {other}: nothing was acknowledged."),
        (CAROL, "ok on it", "To acknowledge a page, reply with its 6-digit code alone."),
    ],
)
def test_a_reply_that_names_no_code_of_this_number_changes_nothing(alert, code, server, sender, said, answered):
    other = f"{(int(code) + 1) % 10**6:06d}"
    answer = reply(server, form(said.format(code=code, other=other), sender=sender))
    assert message(answer) == answered.format(code=code, other=other)
    assert unchanged(alert)


def test_a_code_of_a_resolved_alert_changes_nothing(alert, code, server):
    alerts.resolve(alert.id, "fixed", utcnow())
    assert message(reply(server, form(code))) == f"Alert {alert.id} is resolved already: nothing to acknowledge."
    assert OnCallAlert.get_by_id(alert.id).status == "resolved"
    assert not OnCallTimeline.select().where(OnCallTimeline.kind == "acknowledged").exists()
    assert OnCallReplyCode.get().used_at is None


def test_a_code_stops_working_when_its_alerts_escalation_is_exhausted(alert, code, server):
    OnCallAlert.update(status="exhausted", next_escalation_at=None).execute()  # as `alerts.escalate` leaves it
    answer = message(reply(server, form(code)))
    assert answer == (
        f"Alert {alert.id} is no longer escalating, so its code no longer works: "
        "acknowledge it with the link or pulse oncall ack."
    )
    assert OnCallAlert.get_by_id(alert.id).status == "exhausted"
    assert not OnCallReplyCode.select().where(OnCallReplyCode.used_at.is_null(False)).exists()


def test_a_code_lives_as_long_as_its_alert_escalates_past_a_day(alert, code, server):
    OnCallReplyCode.update(created_at=utcnow() - timedelta(days=3)).execute()
    assert message(reply(server, form(code))) == f"Alert {alert.id} acknowledged by carol: no one more is paged."


def test_a_number_that_is_no_longer_the_persons_changes_nothing(alert, code, server):
    Person.update(phone="+14155550199").where(Person.key == "carol").execute()
    assert message(reply(server, form(code))).startswith(f"No page sent to this number has the code {code}")
    assert unchanged(alert)


def test_a_code_is_refused_once_its_alert_is_acknowledged_by_someone_else(alert, code, server):
    alerts.acknowledge(alert.id, "dave", "cli", utcnow())
    assert message(reply(server, form(code))).startswith(f"Alert {alert.id} was acknowledged already, by dave at ")
    assert OnCallAlert.get_by_id(alert.id).acknowledged_by == "dave"
    assert [s.person for s in OnCallTimeline.select().where(OnCallTimeline.kind == "acknowledged")] == ["dave"]
    assert OnCallReplyCode.get().used_at is None  # not used: refused


@pytest.mark.parametrize("said", ["STOP", "stop ", "Start", "HELP", "unsubscribe", "YES"])
def test_keywords_are_never_an_acknowledgement(alert, code, server, said):
    answer = reply(server, form(said))
    assert answer.status_code == 200 and answer.headers["content-type"] == "application/xml"
    assert answer.text == '<?xml version="1.0" encoding="UTF-8"?><Response/>'
    assert unchanged(alert)


def test_the_same_message_twice_acknowledges_once_and_is_answered_the_same(alert, code, server):
    fields = form(code)
    first = message(reply(server, fields))
    assert message(reply(server, fields)) == first == f"Alert {alert.id} acknowledged by carol: no one more is paged."
    assert message(reply(server, form(code))) == f"The code {code} was used already: alert {alert.id} is acknowledged."
    assert OnCallTimeline.select().where(OnCallTimeline.kind == "acknowledged").count() == 1
    assert OnCallReplyCode.get().message_sid == fields["MessageSid"]


def test_the_same_message_at_once_acknowledges_once(alert, code, server):
    fields = form(code)
    with ThreadPoolExecutor(4) as pool:
        answers = [message(a) for a in pool.map(lambda _: reply(server, fields), range(4))]
    assert answers == [f"Alert {alert.id} acknowledged by carol: no one more is paged."] * 4
    assert OnCallTimeline.select().where(OnCallTimeline.kind == "acknowledged").count() == 1


def test_a_number_is_answered_429_past_its_burst(alert, code, server):
    other = f"{(int(code) + 1) % 10**6:06d}"
    for _ in range(smshook.BURST):
        assert reply(server, form(other)).status_code == 200
    refused = reply(server, form(code))
    assert refused.status_code == 429 and int(refused.headers["Retry-After"]) > 0
    assert unchanged(alert)
    assert reply(server, form(code, sender=ALICE)).status_code == 200  # another number has its own


def test_codes_are_unique_among_a_numbers_live_ones_and_freed_when_their_alert_stops_escalating(
    acme, server, monkeypatch, caplog
):
    monkeypatch.setattr(replies, "draw", lambda: secrets.choice(["111111", "222222"]))
    first, second = open_alert(server.settings, "one"), open_alert(server.settings, "two")
    assert sorted([sms_page(first).reply_code, sms_page(second).reply_code]) == ["111111", "222222"]

    third = open_alert(server.settings, "three")  # carol has no code left: her page asks for none
    assert (
        sms_page(third).reply_code is None
        and not OnCallReplyCode.select().where(OnCallReplyCode.alert == third.id).exists()
    )
    assert f"Alert {third.id}: no reply code left for a page by SMS" in caplog.text

    alerts.resolve(first.id, "fixed", utcnow())
    fourth = open_alert(server.settings, "four")
    assert sms_page(fourth).reply_code == sms_page(first).reply_code

    alerts.acknowledge(second.id, "carol", "cli", utcnow())
    fifth = open_alert(server.settings, "five")
    assert sms_page(fifth).reply_code == sms_page(second).reply_code


def test_pages_ask_for_no_code_when_replies_are_not_taken(acme, config):
    alert = open_alert(config)  # no PULSE_SERVE_PUBLIC_URL
    assert sms_page(alert).reply_code is None
    assert not OnCallReplyCode.select().exists()
    with running(config) as service:
        assert requests.post(f"http://127.0.0.1:{service.port}{smshook.PATH}", timeout=10).status_code == 404


def test_a_code_is_never_written_twice_for_a_page(acme, server):
    """An alert's first message delivered twice pages nothing more, and makes no second code."""
    alert = open_alert(server.settings)
    alerts.open_alert(alert.incident_id, utcnow(), server.settings)
    assert OnCallReplyCode.select().count() == 1
    assert db.execute_sql("SELECT count(*) FROM notification WHERE reply_code IS NOT NULL").fetchone()[0] == 1


@pytest.mark.parametrize(
    ("field", "value", "status", "acknowledged"),
    [("From", "+1415555\x000102", 200, False), ("Body", "\x00", 200, False),
     ("MessageSid", "SM\x00" + "0" * 32, 200, True), ("MessageSid", "SM" + "0" * 63, 400, False),
     ("AccountSid", "AC\x00", 403, False)],
)  # fmt: skip
def test_a_field_postgresql_refuses_is_never_a_500(alert, code, server, field, value, status, acknowledged):
    answer = reply(server, form(code, **{field: value}))  # signed as Twilio would sign it
    assert answer.status_code == status, answer.text
    assert OnCallAlert.get_by_id(alert.id).status == "acknowledged" if acknowledged else unchanged(alert)


def test_wrong_codes_are_counted_for_every_process_and_refuse_even_the_right_one(
    alert, code, server, monkeypatch, caplog
):
    """Two services, each with its own per-process limiter (`smshook.BURST` is 5), share the count."""
    monkeypatch.setattr(smshook, "MAX_MISSES", 3)
    wrong = [f"{(int(code) + n) % 10**6:06d}" for n in (1, 2, 3)]
    with running(server.settings) as elsewhere:
        elsewhere.url, elsewhere.settings = f"http://127.0.0.1:{elsewhere.port}{smshook.PATH}", server.settings
        for sent_to, said in [(server, wrong[0]), (elsewhere, wrong[1]), (server, wrong[2])]:
            assert message(reply(sent_to, form(said))).startswith(f"No page sent to this number has the code {said}")
        for sent_to in (server, elsewhere):
            refused = reply(sent_to, form(code))
            assert refused.status_code == 429, refused.text
            assert 86_000 < int(refused.headers["Retry-After"]) <= 86_400  # a day from the first wrong code
    assert unchanged(alert)
    assert (OnCallReplyMiss.get().phone, OnCallReplyMiss.get().misses) == (CAROL, 3)
    assert "answered 429: over the number's wrong codes (3 a day, counted by every process)" in caplog.text
    assert code not in caplog.text and CAROL not in caplog.text

    OnCallReplyMiss.update(since=utcnow() - smshook.MISS_WINDOW).execute()  # a day later
    assert message(reply(server, form(code))) == f"Alert {alert.id} acknowledged by carol: no one more is paged."


def test_wrong_codes_of_a_number_with_no_live_code_are_not_counted(alert, code, server, monkeypatch):
    monkeypatch.setattr(smshook, "MAX_MISSES", 1)
    alerts.acknowledge(alert.id, "dave", "cli", utcnow())
    for _ in range(2):
        assert message(reply(server, form("000000" if code != "000000" else "000001"))).startswith("No page sent")
    assert not OnCallReplyMiss.select().exists()
