"""The fake SMTP server: aiosmtpd on 127.0.0.1 and a free port, AUTH LOGIN or PLAIN optional.

The standards: RFC 5321, "Simple Mail Transfer Protocol" (https://www.rfc-editor.org/rfc/rfc5321), and RFC 4954,
"SMTP Service Extension for Authentication" (https://www.rfc-editor.org/rfc/rfc4954: a wrong password is 535).

`Vendors` checks the login and records each message (`Vendors._authenticate`, `Vendors._mail`); a scripted `Fail`
answers its reply code to DATA, a `Hang` holds DATA until the fakes close.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import SMTP, Envelope, Session

from tests.support.vendors.base import Hang

if TYPE_CHECKING:
    from tests.support.vendors.facade import Vendors


class _QuietLogin(logging.Filter):
    """Drop aiosmtpd's own deprecation warning about Session.login_data, logged on every successful AUTH."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "login_data is deprecated" not in record.getMessage()


logging.getLogger("mail.log").addFilter(_QuietLogin())


class SMTPController(Controller):
    """A Controller that may listen on port 0: it reads the port it got before its first connection."""

    def _trigger_server(self) -> None:
        assert isinstance(self.server, asyncio.Server)
        self.port = self.server.sockets[0].getsockname()[1]
        super()._trigger_server()


class SMTPHandler:
    def __init__(self, vendors: Vendors) -> None:
        self.vendors = vendors

    async def handle_DATA(self, server: SMTP, session: Session, envelope: Envelope) -> str:  # noqa: N802 - aiosmtpd's
        answer = self.vendors._mail(session, envelope)
        if isinstance(answer, Hang):
            await asyncio.get_running_loop().run_in_executor(None, self.vendors._closing.wait)
            return "421 4.3.2 Service shutting down"
        return answer
