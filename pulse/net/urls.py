"""URLs as a request sends them: parsed, checked, normalised and percent-encoded the way
`requests` and urllib3 do, credentials turned into basic auth."""

from __future__ import annotations

import base64
import dataclasses
import re
from urllib.parse import unquote, urlsplit

DEFAULT_PORTS = {"http": 80, "https": 443}


class FetchError(Exception):
    """A request failed; the text is the error `pulse.net.fetch` returns (it never leaves `fetch`)."""


_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_PATH_CHARS = _UNRESERVED | frozenset("!$&'()*+,;=:@/")
_QUERY_CHARS = _PATH_CHARS | {"?"}
_PLAIN_PATH = re.compile(r"[A-Za-z0-9\-._~!$&'()*+,;=:@/]*")
_PLAIN_QUERY = re.compile(r"[A-Za-z0-9\-._~!$&'()*+,;=:@/?]*")
_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")
_BAD_HOST_CHAR = re.compile(r"[\x00-\x20\x7f%\\\[\]]")
_BRACKETED_HOST = re.compile(r"\[[^\[\]]*:[^\[\]]*\](?::[0-9]*)?")


@dataclasses.dataclass(frozen=True)
class URL:
    """One hop's URL as it is requested.

    Parameters:
      scheme: http or https.
      host: lower case, ASCII (IDNA), no brackets; a trailing dot kept (it matters to DNS only).
      port: the port connected to.
      target: the request target: path and query, normalised and percent-encoded as requests
        does it (dot segments removed, invalid characters encoded, unreserved ones decoded).
    """

    scheme: str
    host: str
    port: int
    target: str

    @property
    def authority(self) -> str:
        """The Host header: no trailing dot or IPv6 zone, the port unless it is the default."""
        host = self.host.rstrip(".")
        if ":" in host:
            host = f"[{host.split('%', 1)[0]}]"
        return host if self.port == DEFAULT_PORTS[self.scheme] else f"{host}:{self.port}"

    @property
    def text(self) -> str:
        """The URL without credentials or fragment: what relative redirects and cookies go by."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        port = "" if self.port == DEFAULT_PORTS[self.scheme] else f":{self.port}"
        return f"{self.scheme}://{host}{port}{self.target}"


def parse(text: str) -> tuple[URL, str | None]:
    """The URL to request and the basic-auth credentials in it; `FetchError` if it is no valid URL."""
    try:
        parts = urlsplit(text.lstrip())
        port = parts.port
        host = parts.hostname or ""
    except ValueError:
        raise FetchError("invalid URL") from None
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS:
        raise FetchError("invalid URL: only http:// and https:// are supported")
    host_port = parts.netloc.rpartition("@")[2]
    if host_port.startswith("["):  # an IPv6 address (urlsplit checked it, not what follows it)
        if not _BRACKETED_HOST.fullmatch(host_port):
            raise FetchError("invalid URL")
    elif not host.isascii():
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError:
            raise FetchError("invalid URL") from None
    if not host or host.startswith(("*", ".")) or (":" not in host and _BAD_HOST_CHAR.search(host)):
        raise FetchError("invalid URL")
    if ":" not in host and (len(host) > 253 or any(len(label) > 63 for label in host.split("."))):
        raise FetchError("invalid URL: a host name has labels of at most 63 characters, 253 in all")
    if port == 0:
        raise FetchError("invalid URL: port 0")
    url = URL(scheme, host, port if port is not None else DEFAULT_PORTS[scheme], _target(parts.path, parts.query))
    return url, _basic_auth(parts.username, parts.password)


def _target(path: str, query: str) -> str:
    """The request target for ``path`` and ``query``, normalised as requests and urllib3 do."""
    if not (_PLAIN_PATH.fullmatch(path) and _PLAIN_QUERY.fullmatch(query) and "/." not in path):
        path = _encode(_remove_dot_segments(path), _PATH_CHARS)
        query = _encode(query, _QUERY_CHARS)
        path, query = _unquote_unreserved(path), _unquote_unreserved(query)
    return f"{path or '/'}?{query}" if query else path or "/"


def _remove_dot_segments(path: str) -> str:
    """``path`` without its ``.`` and ``..`` segments (RFC 3986 5.2.4)."""
    output: list[str] = []
    for segment in path.split("/"):
        if segment == "..":
            if output:
                output.pop()
        elif segment != ".":
            output.append(segment)
    if path.startswith("/") and (not output or output[0]):
        output.insert(0, "")
    if path.endswith(("/.", "/..")):
        output.append("")
    return "/".join(output)


def _encode(component: str, allowed: frozenset[str]) -> str:
    """Percent-encode what ``allowed`` lacks: escapes upper-cased, a ``%`` kept only when every
    ``%`` starts an escape."""
    component, escapes = _ESCAPE.subn(lambda m: m.group(0).upper(), component)
    raw = component.encode("utf-8", "surrogatepass")
    keep_percent = escapes == raw.count(b"%")
    return "".join(
        chr(byte) if chr(byte) in allowed or (keep_percent and byte == 0x25) else f"%{byte:02X}" for byte in raw
    )


def _unquote_unreserved(text: str) -> str:
    """Decode the escapes of unreserved characters (``%7E`` is ``~``); keep the others."""
    return _ESCAPE.sub(lambda m: c if (c := chr(int(m.group(0)[1:], 16))) in _UNRESERVED else m.group(0), text)


def _basic_auth(username: str | None, password: str | None) -> str | None:
    """The Authorization header for credentials in a URL (requests' rules: both parts present,
    one non-empty, percent-decoded, Latin-1)."""
    if username is None or password is None or not (username or password):
        return None
    try:
        credentials = f"{unquote(username)}:{unquote(password)}".encode("latin-1")
    except UnicodeEncodeError:
        raise FetchError("invalid URL") from None
    return "Basic " + base64.b64encode(credentials).decode("ascii")
