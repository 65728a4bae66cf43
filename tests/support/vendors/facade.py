"""`Vendors`: every fake behind one object, one HTTP server and one SMTP server; the names of the vendors and
their default rate limits."""

from __future__ import annotations

import email
import email.policy
import secrets
import socket
import threading
import time
from collections import deque
from collections.abc import Mapping
from email.message import EmailMessage
from types import TracebackType
from typing import Any, cast

from aiosmtpd.smtp import SMTP, AuthResult, Envelope, LoginPassword, Session

from tests.support.vendors.base import (
    Answer,
    Bucket,
    Fail,
    Fake,
    Forge,
    Hang,
    Quota,
    Received,
    Reply,
    Request,
    Server,
    text_reply,
)
from tests.support.vendors.discord import Discord
from tests.support.vendors.push import Push
from tests.support.vendors.resend import Resend
from tests.support.vendors.slack import Slack
from tests.support.vendors.smtp import SMTPController, SMTPHandler
from tests.support.vendors.teams import Teams
from tests.support.vendors.twilio import Twilio
from tests.support.vendors.webhook import Webhook

VENDORS = ("resend", "twilio", "slack", "discord", "teams", "webhook", "push", "smtp")

# (tokens per second, burst) per destination; 0 tokens per second means no limit.
DEFAULT_LIMITS: Mapping[str, tuple[float, int]] = {
    "resend": (2.0, 2),  # 2 req/s per team
    "twilio": (0.0, 0),
    "slack": (1.0, 1),  # about 1 message/s per hook
    "discord": (2.5, 5),  # 5 per 2 s per webhook
    "teams": (4.0, 4),  # 4 req/s per workflow
    "webhook": (0.0, 0),
    "push": (0.0, 0),
    "smtp": (0.0, 0),
}


class Vendors:
    """Fake Resend, Twilio, Slack, Discord, Teams, webhook receiver, Web Push and SMTP servers; a context manager.

    One ThreadingHTTPServer (127.0.0.1, a free port) serves the HTTP vendors under path prefixes, one aiosmtpd server
    (127.0.0.1, a free port, known after `start`) takes mail. `close` stops both promptly, even during a `Hang`.
    """

    resend_key = "re_test_123456789"
    twilio_sid = "AC" + "0123456789abcdef" * 2
    twilio_token = "fedcba9876543210" * 2
    twilio_from = "+15005550006"
    smtp_user = "pulse"
    smtp_password = "secret"

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._closing = threading.Event()
        self._attempts: dict[str, list[Received]] = {vendor: [] for vendor in VENDORS}
        self._received: dict[str, list[Received]] = {vendor: [] for vendor in VENDORS}
        self._scripts: dict[str, deque[Answer]] = {vendor: deque() for vendor in VENDORS}
        self._limits = dict(DEFAULT_LIMITS)
        self._delays: dict[str, float] = {}
        self._buckets: dict[tuple[str, str], Bucket] = {}
        self._connections: set[socket.socket] = set()
        self._resend, self._twilio, self._slack = Resend(self), Twilio(self), Slack(self)
        self._discord, self._teams = Discord(self), Teams(self)
        self._webhook, self._push = Webhook(self), Push(self)
        fakes = (self._resend, self._twilio, self._slack, self._discord, self._teams, self._webhook, self._push)
        self._fakes: dict[str, Fake] = {fake.name: fake for fake in fakes}
        self._server = Server(self)
        self.base_url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.01,), name="vendors", daemon=True)
        self.smtp_host = "127.0.0.1"
        self.smtp_port = 0
        self._smtp = SMTPController(
            SMTPHandler(self),
            hostname=self.smtp_host,
            port=0,
            authenticator=self._authenticate,
            auth_require_tls=False,
        )
        self._smtp_running = False

    # URLs to give Pulse

    def resend_url(self) -> str:
        """The Resend API base: Pulse POSTs ``{resend_url}/emails``."""
        return f"{self.base_url}/resend"

    def twilio_url(self) -> str:
        """The Twilio API base: Pulse POSTs ``{twilio_url}/2010-04-01/Accounts/{sid}/Messages.json``."""
        return f"{self.base_url}/twilio"

    def slack_hook(self) -> str:
        """Register a new Slack incoming webhook and return its URL."""
        with self._lock:
            return self._slack.register()

    def discord_hook(self) -> str:
        """Register a new Discord webhook and return its URL (add ``?wait=true`` for a 200 and the message)."""
        with self._lock:
            return self._discord.register()

    def teams_workflow(self) -> str:
        """Register a new Teams (Power Automate) workflow and return its trigger URL, ``sig`` included."""
        with self._lock:
            return self._teams.register()

    def webhook_receiver(self, secret: str | None = None) -> str:
        """Register a generic webhook receiver; with a ``secret`` it requires Pulse's X-Pulse-* signature headers."""
        with self._lock:
            return self._webhook.register(secret)

    def push_subscription(self, application_server_key: str | None = None) -> dict[str, Any]:
        """A new PushSubscription JSON (real P-256 key and auth secret; the fake keeps the private key to decrypt).

        With ``application_server_key`` (base64url VAPID public key), a push signed by another key gets 403.
        """
        with self._lock:
            return self._push.register(application_server_key)

    def unsubscribe(self, subscription: Mapping[str, Any], status: int = 410) -> None:
        """From now on the push service answers ``status`` (404 or 410) for this subscription."""
        sub_id = str(subscription["endpoint"]).rsplit("/", 1)[-1]
        with self._lock:
            self._push.subscriptions[sub_id].gone = status

    # What arrived

    def received(self, vendor: str) -> list[Received]:
        """The accepted (2xx) deliveries to ``vendor``, in order; an idempotent repeat is not a new delivery."""
        with self._lock:
            return list(self._received[self._known(vendor)])

    def attempts(self, vendor: str) -> list[Received]:
        """Every request that reached ``vendor``, accepted or not, in order."""
        with self._lock:
            return list(self._attempts[self._known(vendor)])

    def wait_received(self, vendor: str, count: int, timeout: float = 30) -> list[Received]:
        """Wait until ``vendor`` accepted at least ``count`` deliveries; return them all."""
        self._known(vendor)
        with self._changed:
            if not self._changed.wait_for(lambda: len(self._received[vendor]) >= count, timeout):
                got, tried = len(self._received[vendor]), len(self._attempts[vendor])
                raise AssertionError(
                    f"timed out after {timeout} s waiting for {count} {vendor} deliveries: "
                    f"{got} accepted of {tried} attempts"
                )
            return list(self._received[vendor])

    # What the fakes do

    def script(self, vendor: str, *answers: Answer) -> None:
        """Answer the next ``len(answers)`` requests to ``vendor`` with these instead (they still count as attempts,
        never as accepted deliveries)."""
        with self._lock:
            self._scripts[self._known(vendor)].extend(answers)

    def delay(self, vendor: str, seconds: float) -> None:
        """Answer each request to ``vendor`` ``seconds`` after it arrived (requests are served at once, each
        in its own thread)."""
        with self._lock:
            self._delays[self._known(vendor)] = seconds

    def limit(self, vendor: str, per_second: float, burst: int) -> None:
        """Rate-limit ``vendor`` per destination to ``per_second`` with bursts of ``burst``; 0 per second: no limit."""
        with self._lock:
            self._limits[self._known(vendor)] = (per_second, max(1, burst)) if per_second > 0 else (0.0, 0)
            for key in [key for key in self._buckets if key[0] == vendor]:
                del self._buckets[key]

    # Life cycle

    def start(self) -> Vendors:
        self._thread.start()
        self._smtp.start()
        self._smtp_running = True
        self.smtp_port = self._smtp.port
        return self

    def close(self) -> None:
        """Stop both servers; hung requests end and open connections are shut."""
        self._closing.set()
        if self._thread.is_alive():
            self._server.shutdown()
        self._server.server_close()
        with self._lock:
            connections = list(self._connections)
        for connection in connections:
            try:
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        if self._smtp_running:
            self._smtp_running = False
            self._smtp.stop()

    def __enter__(self) -> Vendors:
        return self.start()

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.close()

    # Internals

    def _known(self, vendor: str) -> str:
        if vendor not in self._attempts:
            raise ValueError(f"unknown vendor {vendor!r}: one of {', '.join(VENDORS)}")
        return vendor

    def _track(self, connection: socket.socket, open_: bool) -> None:
        with self._lock:
            if open_:
                self._connections.add(connection)
            else:
                self._connections.discard(connection)

    def _take(self, vendor: str, destination: str) -> Quota | None:
        """Take a token from ``vendor``'s bucket for ``destination``; None when the vendor has no limit."""
        with self._lock:
            rate, burst = self._limits[vendor]
            if rate <= 0:
                return None
            now = time.monotonic()
            bucket = self._buckets.setdefault((vendor, destination), Bucket(rate, burst, burst, now))
            wait = bucket.take(now)
            return Quota(burst, int(bucket.tokens), (burst - bucket.tokens) / rate, wait)

    def _record(self, received: Received) -> Answer | None:
        """Record an attempt; return the scripted answer for it, if any."""
        with self._changed:
            self._attempts[received.vendor].append(received)
            script = self._scripts[received.vendor]
            answer = script.popleft() if script else None
            self._changed.notify_all()
        return answer

    def _accept(self, received: Received) -> None:
        with self._changed:
            self._received[received.vendor].append(received)
            self._changed.notify_all()

    def _serve(self, request: Request) -> Reply | None:
        """The answer to an HTTP request, or None to hang."""
        fake = self._fakes.get(request.path.split("/")[1] if request.path.startswith("/") else "")
        if fake is None:
            return text_reply(404, "not found")
        received = fake.parse(request)
        if wait := self._delays.get(received.vendor):
            self._closing.wait(wait)
        answer = self._record(received)
        if isinstance(answer, Hang):
            return None
        if isinstance(answer, Fail):
            return fake.fail(answer)
        if isinstance(answer, Forge):
            return answer.answer(request.headers)
        reply = fake.handle(request, received)
        if reply.accept:
            self._accept(received)
        return reply

    def _authenticate(
        self, server: SMTP, session: Session, envelope: Envelope, mechanism: str, auth_data: Any
    ) -> AuthResult:
        expected = (self.smtp_user.encode(), self.smtp_password.encode())
        ok = isinstance(auth_data, LoginPassword) and tuple(auth_data) == expected
        return AuthResult(success=ok, handled=False, auth_data=auth_data if ok else None)  # a failure answers 535

    def _mail(self, session: Session, envelope: Envelope) -> str | Hang:
        """The SMTP reply to a message's DATA, or Hang."""
        content = envelope.original_content or cast(bytes, envelope.content)
        message = cast(EmailMessage, email.message_from_bytes(content, policy=email.policy.default))
        login = session.auth_data.login.decode() if isinstance(session.auth_data, LoginPassword) else ""
        received = Received(
            "smtp",
            "DATA",
            envelope.mail_from or "",
            {"auth": login} if login else {},
            {name.lower(): str(value) for name, value in message.items()},
            content,
            email=message,
            destination=",".join(envelope.rcpt_tos),
        )
        answer = self._record(received)
        if isinstance(answer, Hang):
            return answer
        if isinstance(answer, Fail):
            default = "4.3.0 Try again later" if answer.status < 500 else "5.0.0 Rejected"
            text = answer.body.decode() if answer.body else default
            return f"{answer.status} {text}"
        quota = self._take("smtp", received.destination)
        if quota is not None and quota.retry_after:
            return "451 4.7.1 Rate limit exceeded, try again later"
        self._accept(received)
        return f"250 2.0.0 OK: queued as {secrets.token_hex(6).upper()}"
