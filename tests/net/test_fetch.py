"""`pulse.net.exchange` against real local servers: answers, timeouts, redirects, the address guard, TLS."""

import base64
import contextlib
import gzip
import socket
import ssl
import threading
import time
import zlib
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

import pulse
from pulse.net import MAX_BODY, AddressPolicy, AddressRefused, Request, dial, fetch
from tests.conftest import expires_in_ms
from tests.support.target import HTTPTarget, closed_port

DEFAULT = AddressPolicy()


@pytest.fixture
def target():
    with HTTPTarget() as server:
        yield server


def get(url: str, policy: AddressPolicy = DEFAULT, *, method: str = "GET", **fields):
    """``fetch`` of ``Request(method, url, **fields)``."""
    return fetch(Request(method=method, url=url, **fields), policy)


@contextlib.contextmanager
def raw_server(answer: bytes, *, trickle_s: float = 0.0) -> Iterator[int]:
    """A server on 127.0.0.1 for answers no HTTP server would send: it reads one request head,
    sends ``answer`` (a byte every ``trickle_s`` seconds if set) and closes. Yields its port."""
    stop = threading.Event()
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(5)

    def serve() -> None:
        with contextlib.suppress(OSError), listener.accept()[0] as conn:
            conn.settimeout(5)
            received = b""
            while b"\r\n\r\n" not in received and (chunk := conn.recv(4096)):
                received += chunk
            for i in range(0, len(answer), 1 if trickle_s else len(answer)):
                conn.sendall(answer[i : i + 1] if trickle_s else answer)
                if trickle_s and stop.wait(trickle_s):
                    return

    thread = threading.Thread(target=serve, name="raw-server", daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        stop.set()
        thread.join(5)
        listener.close()


# --- answers -----------------------------------------------------------------------------------


def test_it_returns_status_and_body(target):
    target.answer("/health", body=b"all good")

    response, error = get(target.url("/health"))

    assert error is None
    assert response.status == 200
    assert response.body == b"all good"
    assert response.connected is True
    assert response.ip == "127.0.0.1"
    assert response.certificate_expiration_ms is None
    assert 0 < response.response_time_ms < 5000


def test_it_reports_5xx_without_error(target):
    target.answer("/", status=503, body=b"down")

    response, error = get(target.url())

    assert error is None
    assert (response.status, response.body) == (503, b"down")


def test_it_truncates_the_body_at_1_mib(target):
    target.answer("/big", body=b"x" * (MAX_BODY * 3))

    response, error = get(target.url("/big"))

    assert error is None
    assert response.status == 200
    assert len(response.body) == MAX_BODY


def test_it_reads_a_chunked_body(target):
    target.answer("/chunked", body=b"y" * 100_000, chunked=True)

    response, error = get(target.url("/chunked"))

    assert (response.status, response.body, error) == (200, b"y" * 100_000, None)


def test_it_decodes_a_gzipped_body(target):
    target.answer("/gz", body=gzip.compress(b"hello " * 1000), headers={"Content-Encoding": "gzip"})

    response, error = get(target.url("/gz"))

    assert error is None
    assert response.body == b"hello " * 1000


def test_it_reports_a_body_it_cannot_decode(target):
    target.answer("/gz", body=b"not gzip", headers={"Content-Encoding": "gzip"})

    response, error = get(target.url("/gz"))

    assert error == "cannot decode the body from 127.0.0.1"
    assert (response.status, response.body) == (200, b"")


@pytest.mark.parametrize("wrapped", [True, False], ids=["zlib", "raw"])
def test_it_decodes_a_deflated_body(target, wrapped):
    deflated = zlib.compress(b"hello " * 1000)
    target.answer("/deflate", body=deflated if wrapped else deflated[2:-4], headers={"Content-Encoding": "deflate"})

    response, error = get(target.url("/deflate"))

    assert (response.body, error) == (b"hello " * 1000, None)


def test_it_truncates_a_decoded_body_at_1_mib(target):
    target.answer("/bomb", body=gzip.compress(b"\0" * (MAX_BODY * 4)), headers={"Content-Encoding": "gzip"})

    response, error = get(target.url("/bomb"))

    assert (response.status, len(response.body), error) == (200, MAX_BODY, None)


def test_it_reports_a_body_cut_short():
    with raw_server(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc") as port:
        response, error = get(f"http://127.0.0.1:{port}/")

    assert error == "connection to 127.0.0.1 closed before a complete response"
    assert (response.status, response.body) == (200, b"")


def test_it_answers_head_without_body(target):
    target.answer("/", body=b"ignored")

    response, error = get(target.url(), method="HEAD")

    assert (response.status, response.body, error) == (200, b"", None)
    assert target.received[0].method == "HEAD"


def test_response_time_includes_the_wait_for_the_answer(target):
    target.answer("/slow", delay_s=0.3)

    response, error = get(target.url("/slow"))

    assert error is None
    assert response.response_time_ms >= 300


def test_it_sends_headers_and_body(target):
    target.answer("/hook", status=201)

    response, error = get(
        target.url("/hook?x=1"),
        method="post",
        headers={"X-Token": "abc", "Content-Type": "application/json"},
        body='{"name": "café"}',
    )

    assert (response.status, error) == (201, None)
    (received,) = target.received
    assert received.method == "POST"
    assert received.path == "/hook?x=1"
    assert received.headers["x-token"] == "abc"
    assert received.headers["content-type"] == "application/json"
    assert received.headers["user-agent"] == f"Pulse/{pulse.__version__} (uptime check)"
    assert received.body == '{"name": "café"}'.encode()


def test_it_sends_host_and_closes_the_connection(target):
    get(target.url("/"))

    headers = target.received[0].headers
    assert headers["host"] == f"127.0.0.1:{target.port}"
    assert headers["connection"] == "close"
    assert headers["accept-encoding"] == "gzip, deflate"


def test_it_sends_the_urls_credentials_as_basic_auth(target):
    get(f"http://us%40er:s3cret@127.0.0.1:{target.port}/")

    assert target.received[0].headers["authorization"] == "Basic " + base64.b64encode(b"us@er:s3cret").decode()


def test_it_normalises_the_path_as_requests_did(target):
    get(target.url("/a/../b c/%7euser?q=é"))

    assert target.received[0].path == "/b%20c/~user?q=%C3%A9"


def test_a_user_agent_of_the_target_replaces_pulses(target):
    get(target.url(), headers={"user-agent": "Custom/1.0"})

    assert target.received[0].headers["user-agent"] == "Custom/1.0"


def test_it_checks_from_many_threads_at_once(target):
    for i in range(16):
        target.answer(f"/{i}", status=500 + i, body=str(i).encode(), delay_s=0.05)

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda i: get(target.url(f"/{i}")), range(16)))

    assert [(r.status, r.body, e) for r, e in results] == [(500 + i, str(i).encode(), None) for i in range(16)]
    assert target.connections == 16  # a fresh connection per check


# --- timeouts ----------------------------------------------------------------------------------


def test_it_times_out_waiting_for_the_answer(target):
    target.answer("/stuck", delay_s=30)
    started = time.monotonic()

    response, error = get(target.url("/stuck"), timeout_s=0.5)

    assert error == "timed out after 0.5 s"
    assert response.status is None
    assert response.connected is True
    assert time.monotonic() - started < 2


@pytest.mark.parametrize("chunked", [False, True])
def test_it_cuts_a_trickling_body_at_the_deadline(target, chunked):
    # One byte every 50 ms: no single read times out, only the deadline of the whole check can.
    target.answer("/trickle", body=b"x" * 1000, trickle_s=0.05, chunked=chunked)
    started = time.monotonic()

    response, error = get(target.url("/trickle"), timeout_s=1.0)

    elapsed = time.monotonic() - started
    assert error == "timed out after 1.0 s"
    assert response.status == 200
    assert response.body == b""
    assert 1.0 <= elapsed < 1.5


def test_the_deadline_covers_a_trickling_response_head():
    # One byte every 50 ms: no single read times out, only the deadline of the whole check can.
    head = b"HTTP/1.1 200 OK\r\nX-Slow: " + b"x" * 100 + b"\r\nContent-Length: 0\r\n\r\n"
    started = time.monotonic()

    with raw_server(head, trickle_s=0.05) as port:
        response, error = get(f"http://127.0.0.1:{port}/", timeout_s=0.5)

    assert error == "timed out after 0.5 s"
    assert (response.status, response.connected) == (None, True)
    assert time.monotonic() - started < 1


# --- network errors ----------------------------------------------------------------------------


def test_it_reports_connection_refused():
    response, error = get(f"http://127.0.0.1:{closed_port()}/")

    assert error == "connection refused by 127.0.0.1"
    assert response.status is None
    assert response.connected is False
    assert response.ip == "127.0.0.1"


def test_it_reports_a_dns_failure():
    response, error = get("http://pulse-test.invalid/")

    assert error == "cannot resolve host pulse-test.invalid"
    assert (response.status, response.connected, response.ip) == (None, False, None)


@pytest.mark.parametrize(
    "url",
    [
        "ftp://example.com/",
        "example.com/health",
        "http://",
        "http://exa mple.com/",
        "http://[::1/",
        "http://127.0.0.1:99999/",
    ],
)
def test_it_reports_an_invalid_url(url):
    response, error = get(url)

    assert error is not None
    assert error.startswith("invalid URL"), error
    assert response.status is None


def test_it_reports_an_invalid_header():
    response, error = get("http://127.0.0.1/", headers={"X-Injected": "a\r\nHost: elsewhere"})

    assert (response.status, error) == (None, "invalid header")


@pytest.mark.parametrize(
    ("headers", "reason"),
    [
        ({"X-Price": "5 €"}, "invalid header: its value is not Latin-1 text"),
        ({"X-Naïve": "1"}, "invalid header"),
        ({"X-Line": "a\n"}, "invalid header"),
        ({"X-Lead": " a"}, "invalid header"),
        ({"X-Escape": "a\x1b[2Jb"}, "invalid header"),
        ({"X-Nul": "a\x00b"}, "invalid header"),
    ],
)
def test_it_reports_a_header_it_cannot_send(headers, reason):
    response, error = get("http://127.0.0.1/", headers=headers)

    assert (response.status, error) == (None, reason)


def test_it_reports_an_unsupported_method():
    _, error = get("http://127.0.0.1/", method="TRACE")

    assert error == "unsupported method 'TRACE'"


@pytest.mark.parametrize(
    "url",
    [
        "http://user:s3cret@127.0.0.1:{closed}/path?token=t0ken",
        "http://user:s3cret@pulse-test.invalid/path?token=t0ken",
        "http://user:s3cret@169.254.169.254/path?token=t0ken",
        "http://user:s3cret@127.0.0.1:{port}/stuck?token=t0ken",
    ],
)
def test_error_texts_carry_no_credentials_or_query(target, url):
    target.answer("/stuck", delay_s=30)

    _, error = get(url.format(closed=closed_port(), port=target.port), timeout_s=0.3)

    assert error
    assert "s3cret" not in error
    assert "t0ken" not in error
    assert "user" not in error


# --- redirects ---------------------------------------------------------------------------------


def test_it_follows_five_redirects(target):
    target.answer("/final", body=b"arrived")
    first = target.chain(5, "/final")

    response, error = get(target.url(first))

    assert (response.status, response.body, error) == (200, b"arrived", None)
    assert [r.path for r in target.received] == [f"/hop/{i}" for i in range(5)] + ["/final"]


def test_it_stops_after_five_redirects(target):
    target.answer("/final", body=b"arrived")
    first = target.chain(6, "/final")

    _, error = get(target.url(first))

    assert error == "too many redirects (more than 5)"
    assert "/final" not in [r.path for r in target.received]


def test_it_does_not_read_a_redirects_body(target):
    target.answer("/final", body=b"arrived")
    target.answer("/moved", status=301, headers={"Location": "/final"}, body=b"x" * 1000, trickle_s=0.05)
    started = time.monotonic()

    response, error = get(target.url("/moved"))

    assert (response.status, error) == (200, None)
    assert time.monotonic() - started < 1


@pytest.mark.parametrize("location", ["ftp://example.com/file", "http://[broken/"])
def test_it_reports_a_redirect_to_an_invalid_url(target, location):
    target.redirect("/go", location)

    response, error = get(target.url("/go"))

    assert error is not None
    assert error.startswith("invalid URL"), error
    assert response.status is None


def test_the_deadline_covers_every_redirect_hop(target):
    target.answer("/a", status=302, headers={"Location": "/b"}, delay_s=0.4)
    target.answer("/b", status=302, headers={"Location": "/c"}, delay_s=0.4)
    target.answer("/c", body=b"late", delay_s=0.4)
    started = time.monotonic()

    _, error = get(target.url("/a"), timeout_s=1.0)

    assert error == "timed out after 1.0 s"
    assert time.monotonic() - started < 1.5


@pytest.mark.parametrize(
    ("status", "method", "then"),
    [(301, "POST", "GET"), (302, "PUT", "GET"), (303, "POST", "GET"), (307, "POST", "POST"), (308, "PUT", "PUT")],
)
def test_a_redirect_keeps_or_drops_the_method_and_body(target, status, method, then):
    target.redirect("/go", "/final", status=status)
    target.answer("/final", body=b"done")

    response, error = get(target.url("/go"), method=method, body="data", headers={"Content-Type": "text/plain"})

    assert (response.body, error) == (b"done", None)
    _, second = target.received
    kept = status in (307, 308)
    assert second.method == then
    assert second.body == (b"data" if kept else b"")
    assert ("content-type" in second.headers) is kept


def test_it_sends_cookies_set_by_a_redirect(target):
    target.answer("/login", status=302, headers={"Location": "/home", "Set-Cookie": "session=abc; Path=/"})
    target.answer("/home", body=b"home")

    response, error = get(target.url("/login"))

    assert (response.body, error) == (b"home", None)
    assert target.received[1].headers["cookie"] == "session=abc"


def test_it_drops_credentials_on_a_redirect_to_another_host(target):
    target.redirect("/go", f"http://localhost:{target.port}/final")
    target.redirect("/same", "/final")
    target.answer("/final", body=b"done")

    get(f"http://user:s3cret@127.0.0.1:{target.port}/same")
    get(f"http://user:s3cret@127.0.0.1:{target.port}/go")

    assert [("authorization" in r.headers) for r in target.received] == [True, True, True, False]


@pytest.mark.parametrize("forward", [False, True])
def test_configured_headers_stay_with_their_origin_unless_forwarded(target, forward):
    target.redirect("/go", f"http://localhost:{target.port}/final")  # another origin: another host
    target.redirect("/same", "/final")
    target.answer("/final", body=b"done")
    headers = {"X-Api-Key": "k-123", "Accept": "application/json", "User-Agent": "probe/1"}

    get(target.url("/same"), headers=headers, forward_headers=forward)
    get(target.url("/go"), headers=headers, forward_headers=forward)

    assert [r.headers.get("x-api-key") for r in target.received] == [
        "k-123",
        "k-123",
        "k-123",
        "k-123" if forward else None,
    ]
    assert all(
        r.headers["accept"] == "application/json" and r.headers["user-agent"] == "probe/1" for r in target.received
    )


# --- the address guard -------------------------------------------------------------------------


def test_it_refuses_loopback_when_private_addresses_are_not_allowed(target):
    response, error = get(target.url(), AddressPolicy(allow_private=False))

    assert error == "refused: 127.0.0.1 is a loopback address (allow it with PULSE_ALLOW_PRIVATE_TARGETS)"
    assert (response.status, response.connected, response.ip) == (None, False, "127.0.0.1")
    assert target.connections == 0


def test_it_names_the_host_it_refuses():
    _, error = get("http://localhost:9/", AddressPolicy(allow_private=False))

    assert error is not None
    assert error.startswith("refused: localhost (")
    assert "is a loopback address" in error


def test_it_refuses_the_metadata_address_without_sending_anything():
    started = time.monotonic()

    response, error = get("http://169.254.169.254/latest/meta-data/", timeout_s=10)

    assert time.monotonic() - started < 1  # no connection attempt: it would wait for the timeout
    assert error == (
        "refused: 169.254.169.254 is a link-local/cloud-metadata address (allow it with PULSE_ALLOW_LINK_LOCAL_TARGETS)"
    )
    assert (response.status, response.connected, response.ip) == (None, False, "169.254.169.254")


def test_it_refuses_a_redirect_to_a_refused_address(target):
    target.redirect("/go", "http://169.254.169.254/latest/meta-data/")

    response, error = get(target.url("/go"))

    assert error is not None
    assert error.startswith("refused: 169.254.169.254 is a link-local/cloud-metadata address")
    assert (response.status, response.connected, response.ip) == (None, False, "169.254.169.254")


def test_ip_is_the_address_connected_to(target):
    # localhost may resolve to ::1 first, where nothing listens: the peer is the address that answered.
    target.answer("/", body=b"ok")

    response, error = get(f"http://localhost:{target.port}/")

    assert (response.status, error, response.ip) == (200, None, "127.0.0.1")


LINK_LOCAL = "link-local/cloud-metadata"


@pytest.mark.parametrize(
    ("ip", "policy", "refused_as"),
    [
        ("93.184.215.14", AddressPolicy(allow_private=False), None),
        ("2606:4700:4700::1111", AddressPolicy(allow_private=False), None),
        ("127.0.0.1", DEFAULT, None),
        ("127.0.0.1", AddressPolicy(allow_private=False), "a loopback address"),
        ("::1", AddressPolicy(allow_private=False), "a loopback address"),
        ("::ffff:127.0.0.1", AddressPolicy(allow_private=False), "a loopback address"),
        ("10.1.2.3", AddressPolicy(allow_private=False), "a private address"),
        ("172.16.0.1", AddressPolicy(allow_private=False), "a private address"),
        ("192.168.1.1", AddressPolicy(allow_private=False), "a private address"),
        ("fd12:3456::1", AddressPolicy(allow_private=False), "a private address"),
        ("100.64.0.1", AddressPolicy(allow_private=False), "a shared (CGNAT) address"),
        ("0.0.0.0", AddressPolicy(allow_private=False), "an unspecified (this host) address"),
        ("::", AddressPolicy(allow_private=False), "an unspecified (this host) address"),
        ("10.1.2.3", DEFAULT, None),
        ("169.254.169.254", DEFAULT, LINK_LOCAL),
        ("169.254.10.20", DEFAULT, LINK_LOCAL),
        ("::ffff:169.254.169.254", DEFAULT, LINK_LOCAL),
        ("fe80::1", DEFAULT, LINK_LOCAL),
        ("fd00:ec2::254", DEFAULT, LINK_LOCAL),
        ("100.100.100.200", DEFAULT, LINK_LOCAL),
        ("192.0.0.192", DEFAULT, LINK_LOCAL),
        ("168.63.129.16", DEFAULT, LINK_LOCAL),
        ("169.254.169.254", AddressPolicy(allow_link_local=True), None),
        ("169.254.169.254", AddressPolicy(allow_private=False, allow_link_local=True), None),
        ("fd00:ec2::254", AddressPolicy(allow_private=False, allow_link_local=True), None),
    ],
)
def test_the_policy_classifies_addresses(ip, policy, refused_as):
    if refused_as is None:
        policy.enforce("h", ip)
        return
    with pytest.raises(AddressRefused) as refused:
        policy.enforce("h", ip)
    assert f"is {refused_as}" in str(refused.value) or f"is a {refused_as}" in str(refused.value)


# --- TLS ---------------------------------------------------------------------------------------


def test_it_checks_https_and_measures_the_certificate(tls_target, certificates):
    tls_target.answer("/", body=b"secure")

    response, error = get(tls_target.url(), verify=(certificates / "ca.pem").read_text())

    assert (response.status, response.body, error) == (200, b"secure", None)
    assert response.connected is True
    assert response.ip == "127.0.0.1"
    assert response.certificate_expiration_ms == pytest.approx(expires_in_ms(certificates / "server.pem"), abs=60_000)


def test_it_reports_a_tls_error_from_a_plain_http_server(target):
    response, error = get(target.url().replace("http:", "https:"))

    assert error == "TLS error with 127.0.0.1: wrong version number"
    assert (response.status, response.connected) == (None, False)


def test_it_times_out_a_tls_handshake_that_never_comes():
    with socket.create_server(("127.0.0.1", 0)) as listener:  # accepted by the kernel, never answered
        response, error = get(f"https://127.0.0.1:{listener.getsockname()[1]}/", timeout_s=0.5)

    assert error is not None
    assert error.startswith("timed out after 0.5 s"), error
    assert (response.status, response.connected) == (None, False)


def test_it_reports_an_untrusted_certificate(tls_target):
    response, error = get(tls_target.url())

    assert error is not None
    assert error.startswith("TLS error with 127.0.0.1: certificate verify failed ("), error
    assert (response.status, response.connected, response.certificate_expiration_ms) == (None, False, None)
    assert response.ip == "127.0.0.1"
    assert tls_target.received == []


def test_it_checks_https_without_verification_when_told(tls_target):
    tls_target.answer("/", body=b"secure")

    response, error = get(tls_target.url(), verify=False)

    assert (response.status, response.body, error) == (200, b"secure", None)
    assert response.certificate_expiration_ms is None


def test_it_makes_a_tls_context_once_per_ca(tls_target, certificates, monkeypatch):
    made = []
    create = ssl.create_default_context
    monkeypatch.setattr(ssl, "create_default_context", lambda *a, **kw: made.append(kw) or create(*a, **kw))
    monkeypatch.setattr(dial, "_contexts", {})  # as in a new process, whatever ran before
    pem = (certificates / "ca.pem").read_text()

    # a text of its own each time, as each check reads its component's row
    results = [get(tls_target.url(), verify=pem.encode().decode()) for _ in range(3)]

    assert [(r.status, e) for r, e in results] == [(404, None)] * 3
    assert made == [{"cadata": pem}]


def test_the_contexts_of_cas_are_bounded_the_first_made_going_first(certificates, monkeypatch):
    monkeypatch.setattr(dial, "_contexts", {})
    monkeypatch.setattr(dial, "MAX_CA_CONTEXTS", 2)
    pem = (certificates / "ca.pem").read_text()
    cas = [pem, pem + "\n", pem + "\n\n"]  # three texts of one CA: three contexts
    system = dial.context(True)

    first, second, third = (dial.context(ca) for ca in cas)

    assert dial.context(True) is system  # the system's is never dropped
    assert dial.context(cas[1]) is second and dial.context(cas[2]) is third
    assert dial.context(cas[0]) is not first  # dropped for the third, made again
