"""The fake SMTP server: mail with and without a login, a wrong password, scripted failures, rate limit, a hang."""

from __future__ import annotations

import smtplib
import time
from email.message import EmailMessage

import pytest

from tests.support.vendors import Fail, Hang, Vendors


def message(to: str = "ops@example.com") -> EmailMessage:
    mail = EmailMessage()
    mail["From"], mail["To"], mail["Subject"] = "Pulse <alerts@pulse.example>", to, "API is down"
    mail.set_content("API answers 503 since 10:04.")
    return mail


def test_smtp_takes_mail_with_and_without_login(vendors: Vendors) -> None:
    with smtplib.SMTP(vendors.smtp_host, vendors.smtp_port, timeout=5) as client:
        client.login("pulse", "secret")
        client.send_message(message())
    with smtplib.SMTP(vendors.smtp_host, vendors.smtp_port, timeout=5) as client:
        client.send_message(message("a@example.com, b@example.com"))
    first, second = vendors.wait_received("smtp", 2, timeout=5)
    assert first.email is not None and first.email["Subject"] == "API is down"
    assert first.email.get_content().strip() == "API answers 503 since 10:04."
    assert (first.path, first.destination) == ("alerts@pulse.example", "ops@example.com")
    assert first.query == {"auth": "pulse"}
    assert first.headers["subject"] == "API is down"
    assert (second.destination, second.query) == ("a@example.com,b@example.com", {})


def test_smtp_refuses_a_wrong_password(vendors: Vendors) -> None:
    with smtplib.SMTP(vendors.smtp_host, vendors.smtp_port, timeout=5) as client:
        with pytest.raises(smtplib.SMTPAuthenticationError) as raised:
            client.login("pulse", "wrong")
    assert raised.value.smtp_code == 535


def test_smtp_scripted_failures_and_rate_limit(vendors: Vendors) -> None:
    vendors.script("smtp", Fail(550), Fail(451, b"4.7.0 Slow down"))
    vendors.limit("smtp", 0.5, 1)
    codes = []
    with smtplib.SMTP(vendors.smtp_host, vendors.smtp_port, timeout=5) as client:
        for _ in range(4):
            try:
                client.send_message(message())
                codes.append(250)
            except smtplib.SMTPDataError as error:
                codes.append(error.smtp_code)
    assert codes == [550, 451, 250, 451]
    assert len(vendors.attempts("smtp")) == 4
    assert len(vendors.received("smtp")) == 1


def test_smtp_hang_times_out_and_close_is_prompt() -> None:
    with Vendors() as vendors:
        vendors.script("smtp", Hang())
        client = smtplib.SMTP(vendors.smtp_host, vendors.smtp_port, timeout=0.3)
        with pytest.raises(smtplib.SMTPServerDisconnected, match="timed out"):
            client.send_message(message())
        client.close()
        started = time.monotonic()
    assert time.monotonic() - started < 1
    assert vendors.received("smtp") == []
    assert len(vendors.attempts("smtp")) == 1
