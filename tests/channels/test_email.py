"""The email: its subject, plain text and HTML, escaped."""

from pulse.notifications.channels import email
from tests.channels import INCIDENT, NOTICE, URL, replace


def test_email_render():
    mail = email.render(NOTICE)
    assert mail.subject == "[Acme] Public API: major outage"
    assert mail.text == (
        "Public API: major outage\n\n"
        "3 checks in a row failed: connection refused.\n\n"
        "Component: Public API\n"
        "Status: Operational → Major outage\n"
        "Since: 2026-12-01 14:03 UTC\n"
        "Organization: Acme\n\n"
        f"View: {URL}\n\n"
        "-- \nSent by Pulse\n"
    )
    assert mail.html.startswith("<!DOCTYPE html>")
    assert "<style" not in mail.html and "<link" not in mail.html and "<img" not in mail.html
    assert "border-left:4px solid #E01E5A" in mail.html
    assert "<strong>Major outage</strong> since 2026-12-01 14:03 UTC" in mail.html
    assert f'<a href="{URL}"' in mail.html


def test_email_without_url_has_no_button():
    mail = email.render(INCIDENT)
    assert "<a " not in mail.html
    assert "View" not in mail.text
    assert "Status:" not in mail.text and "Component:" not in mail.text
    assert "<strong>Warning</strong> since" in mail.html


def test_email_escapes_html():
    notice = replace(title="<script>alert(1)</script>", summary="a & b\n<b>c</b>", organization='"Acme"')
    mail = email.render(notice)
    assert "<script>" not in mail.html and "<b>" not in mail.html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in mail.html
    assert "a &amp; b<br>&lt;b&gt;c&lt;/b&gt;" in mail.html
    assert "&quot;Acme&quot;" in mail.html
    assert mail.subject == '["Acme"] <script>alert(1)</script>'  # a subject is plain text


def test_email_subject_is_one_line():
    assert (
        email.render(replace(title="Public API:\r\nBcc: x@evil.test")).subject == "[Acme] Public API: Bcc: x@evil.test"
    )
