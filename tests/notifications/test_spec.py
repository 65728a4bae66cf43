"""`pulse apply` with channels and subscribers: validated with the rest, upserted, pruned."""

import pytest

from pulse import configfile
from pulse.errors import ConfigError
from pulse.models import Component, NotificationChannel, Organization, Subscriber
from pulse.notifications.channels import CHANNELS, SUBSCRIBER_KINDS

P256DH = "BNcRdreALRFXTkOOUHK1EtK2wtaz5Ry4YfYCA_0QTpQtUbVlUls0VJXg7A8u-Ts1XbjhazAkj7I99e8QcYP7DkM"
AUTH = "tBHItJI5svbpez7KI4CCXg"

FILE = """
organizations:
  - slug: acme
    name: Acme
    components:
      - {key: api, name: Public API, url: "https://api.acme.example/health"}
      - {key: www, name: Website, url: "https://www.acme.example/"}
    channels:
      - key: ops-slack
        type: slack
        url: ${SLACK_URL}
        events: [incident.opened, incident.resolved]
        components: [api]
      - {key: mail, type: email, to: [ops@acme.example, cto@acme.example]}
      - {key: pager, type: sms, to: "+15551234567"}
      - {key: audit, type: webhook, url: "https://hooks.acme.example/pulse", secret: "0123456789abcdef"}
    subscribers:
      - {email: alice@acme.example, components: [www]}
      - {phone: "+15557654321", events: [incident.opened]}
      - {webhook: "https://bob.example/hook", secret: "fedcba9876543210"}
      - push: {endpoint: "https://push.example/sub/1", keys: {p256dh: %s, auth: %s}}
""" % (P256DH, AUTH)  # noqa: UP031 - the braces of YAML flow mappings


def apply(text, prune=False):
    return configfile.apply(configfile.load(text), prune=prune)


def test_channels_and_subscribers_are_applied_with_their_filters(database, monkeypatch):
    monkeypatch.setenv("SLACK_URL", "https://hooks.slack.example/services/T1/B2/secret")

    report = apply(FILE)

    assert (report.channels, report.subscribers) == (4, 4)
    api = Component.get(Component.key == "api")
    www = Component.get(Component.key == "www")
    channels = {c.key: c for c in NotificationChannel.select()}
    slack = channels["ops-slack"]
    assert (slack.type, slack.settings, slack.events, slack.component_ids) == (
        "slack",
        {"url": "https://hooks.slack.example/services/T1/B2/secret"},
        ["incident.opened", "incident.resolved"],
        [api.id],
    )
    assert channels["mail"].settings == {"to": ["ops@acme.example", "cto@acme.example"]}
    assert channels["pager"].settings == {"to": "+15551234567"}
    assert channels["audit"].settings == {"url": "https://hooks.acme.example/pulse", "secret": "0123456789abcdef"}
    subscribers = {(s.kind, s.address): s for s in Subscriber.select()}
    assert subscribers["email", "alice@acme.example"].component_ids == [www.id]
    assert subscribers["sms", "+15557654321"].events == ["incident.opened"]
    assert subscribers["webhook", "https://bob.example/hook"].settings == {"secret": "fedcba9876543210"}
    assert subscribers["push", "https://push.example/sub/1"].settings == {"keys": {"p256dh": P256DH, "auth": AUTH}}


def test_applying_twice_keeps_the_rows_and_prune_removes_the_unnamed(database, monkeypatch):
    monkeypatch.setenv("SLACK_URL", "https://hooks.slack.example/services/T1/B2/secret")
    apply(FILE)
    ids = sorted(c.id for c in NotificationChannel.select()) + sorted(s.id for s in Subscriber.select())

    apply(FILE)
    assert sorted(c.id for c in NotificationChannel.select()) + sorted(s.id for s in Subscriber.select()) == ids

    smaller = FILE.replace('      - {key: pager, type: sms, to: "+15551234567"}\n', "").replace(
        '      - {phone: "+15557654321", events: [incident.opened]}\n', ""
    )
    apply(smaller)  # without --prune nothing goes
    assert (NotificationChannel.select().count(), Subscriber.select().count()) == (4, 4)
    report = apply(smaller, prune=True)
    assert (report.channels_deleted, report.subscribers_deleted) == (1, 1)
    assert not NotificationChannel.select().where(NotificationChannel.key == "pager").exists()
    assert not Subscriber.select().where(Subscriber.kind == "sms").exists()


def organization(channels="", subscribers=""):
    return (
        "organizations:\n  - slug: acme\n    name: Acme\n    components:\n"
        '      - {key: api, name: API, url: "https://api.acme.example/"}\n'
        + (f"    channels:\n{channels}" if channels else "")
        + (f"    subscribers:\n{subscribers}" if subscribers else "")
    )


@pytest.mark.parametrize(
    ("channels", "subscribers", "problem"),
    [
        ("      - {key: s, type: slack}\n", "", "organizations[0].channels[0]: a slack channel needs url"),
        (
            '      - {key: s, type: slack, url: "https://x.example/", to: a@b.example}\n',
            "",
            "organizations[0].channels[0]: a slack channel does not take to",
        ),
        ('      - {key: s, type: slack, url: "ftp://x.example/"}\n', "", "must be an http:// or https:// URL"),
        ("      - {key: s, type: pigeon, url: x}\n", "", "organizations[0].channels[0].type: Input should be"),
        ("      - {key: m, type: email, to: [not-an-address]}\n", "", "'not-an-address' is not an email address"),
        ("      - {key: m, type: email, to: []}\n", "", "an email channel needs 1 to 50 addresses"),
        ('      - {key: p, type: sms, to: "555-1234"}\n', "", "is not a phone number in E.164 form"),
        (
            '      - {key: w, type: webhook, url: "https://x.example/", secret: short}\n',
            "",
            "organizations[0].channels[0].secret: String should have at least 16 characters",
        ),
        (
            '      - {key: s, type: slack, url: "https://x.example/", events: [component.exploded]}\n',
            "",
            "unknown event type 'component.exploded'",
        ),
        (
            '      - {key: s, type: slack, url: "https://x.example/", components: [nope]}\n',
            "",
            "channels or subscribers name components this organization does not have: ['nope']",
        ),
        (
            '      - {key: s, type: slack, url: "https://x.example/"}\n'
            '      - {key: s, type: discord, url: "https://y.example/"}\n',
            "",
            "channel key 's' appears twice",
        ),
        ("", "      - {email: a@b.example, phone: '+15551234567'}\n", "exactly one of email, phone, webhook or push"),
        ("", "      - {email: a@b.example, secret: 0123456789abcdef}\n", "only a webhook subscriber takes a secret"),
        ("", "      - {email: a@b.example}\n      - {email: a@b.example}\n", "subscriber 'email a@b.example' appears"),
        ("", "      - {push: {endpoint: 'https://p.example/1', keys: {p256dh: x, auth: y}}}\n", "p256dh"),
        ("", "      - {phone: '+15551234567', color: red}\n", "organizations[0].subscribers[0].color: unknown field"),
    ],
)
def test_an_invalid_channel_or_subscriber_is_rejected_by_name(database, channels, subscribers, problem):
    with pytest.raises(ConfigError) as raised:
        configfile.load(organization(channels, subscribers))
    assert problem in str(raised.value)


def test_a_refusal_keeps_its_reason_and_leaves_a_secret_out(monkeypatch):
    """The reason names the channel's kind, slack, a word of its URL too: shown by the file, it
    is no secret (the formulas' and durations' tests show a reason holding a word only the
    environment gave left out)."""
    monkeypatch.setenv("ADV_SLACK_URL", "https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXX")
    with pytest.raises(ConfigError) as raised:
        configfile.load(organization('      - {key: s, type: slack, url: "${ADV_SLACK_URL}", to: a@b.example}\n'))
    assert str(raised.value) == "organizations[0].channels[0]: a slack channel does not take to"


def test_a_missing_environment_variable_is_named_with_its_place(monkeypatch):
    monkeypatch.delenv("NOT_SET_ANYWHERE", raising=False)
    with pytest.raises(ConfigError) as raised:
        configfile.load(organization('      - {key: s, type: slack, url: "${NOT_SET_ANYWHERE}"}\n'))
    assert str(raised.value) == (
        "organizations[0].channels[0].url: the environment variable NOT_SET_ANYWHERE is not set"
    )


def test_a_rejected_secret_url_is_never_echoed(monkeypatch):
    monkeypatch.setenv("HOOK", "https://hooks.example/T0/B0/s3cr3t-token#%zz:bad")
    channels = '      - {key: s, type: slack, url: "${HOOK}"}\n      - {key: w, type: webhook, url: "s3cr3t-token"}\n'
    with pytest.raises(ConfigError) as raised:
        configfile.load(organization(channels))
    assert "s3cr3t" not in str(raised.value)
    assert "organizations[0].channels[1].url" in str(raised.value)


def test_an_invalid_file_changes_nothing(database, monkeypatch):
    monkeypatch.setenv("SLACK_URL", "https://hooks.slack.example/services/T1/B2/secret")
    apply(FILE)
    before = [(c.key, c.settings) for c in NotificationChannel.select().order_by(NotificationChannel.key)]
    with pytest.raises(ConfigError):
        apply(FILE.replace("to: [ops@acme.example, cto@acme.example]", "to: [nobody]"))
    assert [(c.key, c.settings) for c in NotificationChannel.select().order_by(NotificationChannel.key)] == before


def test_the_database_takes_every_kind_the_channels_registry_offers(database):
    """A kind added to `CHANNELS` without the migration widening the database's CHECKs fails here."""
    organization = Organization.create(slug="acme", name="Acme")
    for kind in CHANNELS:
        NotificationChannel.create(organization=organization, key=kind, type=kind)
    for field, channel in SUBSCRIBER_KINDS.items():
        Subscriber.create(organization=organization, kind=channel.kind, address=f"the {field} address")
    assert NotificationChannel.select().count() == len(CHANNELS) == 7
    assert sorted(s.kind for s in Subscriber.select()) == ["email", "push", "sms", "webhook"]
