"""A component's own CA (`pulse.uptime.kinds.ca`): an https, a tcp-with-TLS and a tls check of
real local servers whose certificates a CA made here signed, trusted through ``ca_file`` or an
inline ``ca`` (from the environment too) applied with ``pulse apply``, checked through the batch
path; the refusals at apply; and ``pulse check --ca-file``."""

import json
from datetime import UTC, datetime

import pytest
import yaml

from actors.uptime import checks
from pulse import configfile
from pulse.errors import ConfigError
from pulse.locations.wire import Check
from pulse.models import Component, UptimeCheck
from pulse.net import AddressPolicy, dial
from pulse.uptime import record
from tests.support.certs import Authority
from tests.support.cli import pulse
from tests.support.scripted import ScriptedServer
from tests.support.target import HTTPTarget
from tests.support.tcpserver import TCPServer

SLOT = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
UNTRUSTED = "[CERTIFICATE_VALID] (false: unable to get local issuer certificate) == true"


@pytest.fixture
def authority(tmp_path):
    return Authority(tmp_path)


@pytest.fixture
def stranger(tmp_path):
    """Another CA, which signed none of the servers' certificates."""
    (tmp_path / "stranger").mkdir()
    return Authority(tmp_path / "stranger", name="Another CA")


@pytest.fixture
def servers(authority):
    """An https server, a tcp server with TLS on connect (echo) and a bare TLS server, each
    presenting a certificate for localhost that the test CA signed."""
    context = authority.server(["localhost"], days=90)
    with (
        HTTPTarget(tls=context) as https,
        TCPServer("echo", tls=context) as tcp,
        ScriptedServer((), tls=context) as tls,
    ):
        https.answer("/health", body=b"ok")
        yield {"https": https.port, "tcp": tcp.port, "tls": tls.port}


def components(ports, trust):
    """One component of each kind on the servers, each trusting ``trust`` (its CA fields)."""
    return [
        {"key": "web", "name": "Web", "url": f"https://localhost:{ports['https']}/health", **trust},
        {"key": "db", "name": "DB", "kind": "tcp", "host": "localhost", "port": ports["tcp"], "tls": True, **trust},
        {"key": "cert", "name": "Cert", "kind": "tls", "host": "localhost", "port": ports["tls"], **trust},
    ]


def document(*listed):
    return yaml.safe_dump({"organizations": [{"slug": "acme", "name": "Acme", "components": list(listed)}]})


def check_all():
    """Check every component once through the batch path: each one's check row, by key."""
    ids = {c.id: c.key for c in Component.select()}
    checks.fn([[component_id, SLOT.isoformat()] for component_id in ids])
    return {ids[row.component_id]: row for row in UptimeCheck.select()}


def test_each_kind_trusts_its_ca_from_a_file_or_inline_through_pulse_apply_and_the_batch_path(
    database, rabbit, authority, servers, tmp_path, monkeypatch
):
    pem = authority.pem.read_text()
    system, from_file, inline, from_env = (
        components(servers, {}),
        components(servers, {"ca_file": str(authority.pem)}),
        components(servers, {"ca": pem}),
        components(servers, {"ca": "${ACME_CA}"}),
    )
    listed = [
        {**component, "key": f"{component['key']}-{how}"}
        for how, made in [("system", system), ("file", from_file), ("inline", inline), ("env", from_env)]
        for component in made
    ]
    path = tmp_path / "pulse.yaml"
    path.write_text(document(*listed))

    applied = pulse("apply", "-f", str(path), ACME_CA=pem)
    assert applied.returncode == 0, applied.stderr
    monkeypatch.setattr(dial, "_contexts", {})  # as in a fresh worker process
    rows = check_all()

    for key in ("web-system", "db-system"):
        assert rows[key].success is False
        assert rows[key].error.startswith("TLS error with localhost: certificate verify failed"), rows[key].error
    assert (rows["cert-system"].error, rows["cert-system"].condition_results[0]["resolved"]) == (None, UNTRUSTED)
    for how in ("file", "inline", "env"):
        for kind in ("web", "db", "cert"):
            row = rows[f"{kind}-{how}"]
            assert (row.success, row.error) == (True, None), (kind, how, row.error, row.condition_results)
    # The certificates are stored, not the path: a worker elsewhere needs no file.
    assert Component.get(Component.key == "web-file").target == {"ca": pem}
    assert Component.get(Component.key == "db-env").target["ca"] == pem
    assert Component.get(Component.key == "cert-inline").target["ca"] == pem
    # One context for the CA, nine components: one with http's ALPN, one without.
    assert sorted((key[1] or "") for key in dial._contexts if key[0] == pem) == ["", "http/1.1"]


def test_a_ca_that_did_not_sign_the_certificate_is_not_trusted(database, servers, stranger):
    listed = components(servers, {"ca_file": str(stranger.pem)})
    configfile.apply(configfile.load(document(*listed)))

    found = {key: load(key).run(AddressPolicy()) for key in ("web", "db", "cert")}

    for key in ("web", "db"):
        assert found[key].error.startswith("TLS error with localhost: certificate verify failed"), found[key].error
    assert found["cert"].reason == UNTRUSTED


def test_the_host_name_is_still_checked(database, authority, tmp_path):
    context = authority.server(["mail.acme.example"], days=90)
    with HTTPTarget(tls=context) as https, ScriptedServer((), tls=context) as tls:
        web, _, cert = components({"https": https.port, "tcp": 1, "tls": tls.port}, {"ca": authority.pem.read_text()})
        configfile.apply(configfile.load(document(web, cert)))
        web, cert = load("web").run(AddressPolicy()), load("cert").run(AddressPolicy())

    mismatch = "Hostname mismatch, certificate is not valid for 'localhost'"
    assert mismatch in web.error
    assert cert.reason == f"[CERTIFICATE_VALID] (false: {mismatch}) == true"


def test_a_location_s_worker_gets_the_ca_with_the_check(database, authority, servers):
    configfile.apply(configfile.load(document(*components(servers, {"ca_file": str(authority.pem)}))))

    for key in ("web", "db", "cert"):
        loaded = load(key)
        sent = json.loads(json.dumps(Check(loaded.component.id, SLOT, loaded.kind, loaded.stored, []).as_json()))
        result = Check.of_json(sent).run(AddressPolicy())
        assert (result.success, result.error) == (True, None), (key, result.reason)


def load(key):
    return record.load(Component.get(Component.key == key).id, SLOT)


# Refusals at apply


def one(component):
    return document({"key": "api", "name": "API", **component})


PLACE = "organizations[0].components[0]"
HTTPS = {"url": "https://api.acme.example/"}
TCP = {"kind": "tcp", "host": "db.internal", "port": 5432, "tls": True}
TLS = {"kind": "tls", "host": "mail.acme.example"}


@pytest.fixture
def files(tmp_path, authority):
    _, key = authority.leaf(["localhost"], days=30)
    truncated = tmp_path / "truncated.pem"
    truncated.write_text(authority.pem.read_text()[:200] + "\n-----END CERTIFICATE-----\n")
    (tmp_path / "directory").mkdir()
    return {
        "ca": str(authority.pem),
        "key": str(key),
        "truncated": str(truncated),
        "directory": str(tmp_path / "directory"),
    }


@pytest.mark.parametrize(
    ("component", "problem"),
    [
        ({**HTTPS, "ca_file": "/no/such/ca.pem"}, "ca_file cannot be read (No such file or directory)"),
        ({**TCP, "ca_file": "{directory}"}, "ca_file cannot be read (Is a directory)"),
        ({**TLS, "ca_file": "{key}"}, "ca_file holds no PEM certificate"),
        ({**TLS, "ca_file": "{truncated}"}, "ca_file holds a certificate that cannot be parsed"),
        ({**HTTPS, "ca": "not a certificate"}, "ca holds no PEM certificate"),
        ({**HTTPS, "ca": "{key_text}"}, "ca holds no PEM certificate"),
        ({**HTTPS, "ca": "{ca_text}", "ca_file": "{ca}"}, "give ca or ca_file, not both"),
        ({**TCP, "verify": False, "ca_file": "{ca}"}, "ca_file goes with verify: true (verify: false accepts any"),
        ({**TCP, "tls": False, "ca": "{ca_text}"}, "ca goes with tls: true"),
        ({"url": "http://api.acme.example/", "ca_file": "{ca}"}, "ca_file goes with an https:// url"),
        ({"kind": "dns", "query": "acme.example", "ca": "{ca_text}"}, "ca is a field of http, tcp or tls checks"),
        ({"kind": "icmp", "host": "gw.internal", "ca_file": "{ca}"}, "ca_file is a field of http, tcp or tls checks"),
        ({"type": "metric", "ca_file": "{ca}"}, "only an endpoint has a ca or ca_file"),
    ],
)
def test_a_bad_ca_is_refused_at_apply_naming_its_place_and_reason(files, component, problem):
    texts = {**files, "ca_text": open(files["ca"]).read(), "key_text": open(files["key"]).read()}
    component = {name: value.format(**texts) if isinstance(value, str) else value for name, value in component.items()}

    with pytest.raises(ConfigError) as refused:
        configfile.load(one(component))

    assert f"{PLACE}: {problem}" in str(refused.value)
    assert "-----" not in str(refused.value)  # no PEM repeated, of a certificate or a key


def test_a_ca_from_the_environment_is_refused_with_its_reason_and_never_repeated(monkeypatch, files):
    monkeypatch.setenv("ACME_CA", open(files["key"]).read())  # a private key given by mistake

    with pytest.raises(ConfigError) as refused:
        configfile.load(one({**HTTPS, "ca": "${ACME_CA}"}))

    assert str(refused.value) == f"{PLACE}: ca holds no PEM certificate"


# pulse check --ca-file


def test_pulse_check_ca_file_trusts_the_ca_in_place_of_the_system_s(authority, stranger, servers):
    targets = [
        ("--url", f"https://localhost:{servers['https']}/health"),
        ("--tcp", f"localhost:{servers['tcp']}", "--tls"),
        ("--cert", f"localhost:{servers['tls']}"),
    ]

    untrusted = [pulse("check", *target, "--json") for target in targets]
    trusted = [pulse("check", *target, "--ca-file", str(authority.pem), "--json") for target in targets]
    # the system's store (SSL_CERT_FILE) trusts the servers' CA, --ca-file another one: not trusted
    store = {"SSL_CERT_FILE": str(authority.pem)}
    replaced = [pulse("check", *target, "--ca-file", str(stranger.pem), "--json", **store) for target in targets]

    for result in trusted:
        assert result.returncode == 0, result.stdout + result.stderr
    for results in (untrusted, replaced):
        assert [r.returncode for r in results] == [1, 1, 1]
        reports = [json.loads(r.stdout) for r in results]
        assert "certificate verify failed" in reports[0]["error"] and "certificate verify failed" in reports[1]["error"]
        assert reports[2]["conditions"][0]["resolved"] == UNTRUSTED


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        (("--url", "http://localhost:1/", "--ca-file", "{ca}"), "--ca-file goes with an https:// URL"),
        (("--tcp", "localhost:1", "--ca-file", "{ca}"), "--ca-file goes with --tls"),
        (("--dns", "acme.example", "--ca-file", "{ca}"), "--ca-file goes with --url, --tcp or --cert"),
        (("acme/api", "--ca-file", "{ca}"), "--ca-file goes with --url, --tcp or --cert"),
        (
            ("--cert", "localhost:1", "--ca-file", "/no/such.pem"),
            "--ca-file cannot be read (No such file or directory)",
        ),
        (("--cert", "localhost:1", "--ca-file", "{key}"), "--ca-file holds no PEM certificate"),
    ],
)
def test_pulse_check_refuses_a_bad_ca_file(files, arguments, problem):
    refused = pulse("check", *(argument.format(**files) for argument in arguments))

    assert (refused.returncode, refused.stdout) == (2, "")
    assert refused.stderr.startswith(f"pulse: {problem}"), refused.stderr
