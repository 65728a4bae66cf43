"""Response bodies: read within the deadline, at most `MAX_BODY` bytes, gzip and deflate decoded
as they arrive (so a small compressed body cannot blow up into gigabytes)."""

from __future__ import annotations

import http.client
import zlib

MAX_BODY = 1024 * 1024
"""Bytes of (decoded) body kept; the rest is not read."""

_CHUNK = 64 * 1024


class _Decoder:
    """Decodes a gzip or deflate body as it arrives, as urllib3 did: gzip members in a row (junk
    after a complete member ignored), deflate with or without its zlib wrapper. A truncated body
    decodes to what arrived; anything else undecodable raises `zlib.error`."""

    def __init__(self, gzip: bool) -> None:
        self._gzip = gzip
        self._obj = zlib.decompressobj(16 + zlib.MAX_WBITS if gzip else zlib.MAX_WBITS)
        self._members = 0
        self._done = False
        self._head = b""  # deflate: what came before the format was known
        self._known = gzip

    def __call__(self, data: bytes, limit: int) -> bytes:
        """Up to ``limit`` bytes decoded from ``data``."""
        if not self._gzip:
            return self._deflate(data, limit)
        out = b""
        while data and not self._done and len(out) < limit:
            try:
                out += self._obj.decompress(data, limit - len(out))
            except zlib.error:
                if not self._members:
                    raise
                self._done = True
                break
            if not self._obj.eof:
                break
            data = self._obj.unused_data
            self._obj = zlib.decompressobj(16 + zlib.MAX_WBITS)
            self._members += 1
        return out

    def _deflate(self, data: bytes, limit: int) -> bytes:
        if self._known:
            return self._obj.decompress(data, limit)
        self._head += data
        try:
            out = self._obj.decompress(data, limit)
        except zlib.error:  # no zlib wrapper: raw deflate
            self._known = True
            self._obj = zlib.decompressobj(-zlib.MAX_WBITS)
            return self._obj.decompress(self._head, limit)
        if out:
            self._known, self._head = True, b""
        return out


def _decoder(content_encoding: str | None) -> _Decoder | None:
    """The decoder for a Content-Encoding: gzip or deflate; None for none or an unknown one."""
    codings = [c for c in (part.strip().lower() for part in (content_encoding or "").split(",")) if c != "identity"]
    codings = [c for c in codings if c]
    if not codings:
        return None
    if len(codings) > 1:
        raise zlib.error(f"more than one content coding: {content_encoding}")
    if codings[0] in ("gzip", "x-gzip", "deflate"):
        return _Decoder(gzip=codings[0] != "deflate")
    return None


def read_body(response: http.client.HTTPResponse) -> bytes:
    """Read up to `MAX_BODY` decoded bytes; every read is bounded by the request's deadline."""
    decode = _decoder(response.getheader("Content-Encoding"))
    chunks: list[bytes] = []
    size = 0
    while size < MAX_BODY:
        chunk = response.read1(_CHUNK if decode else min(_CHUNK, MAX_BODY - size))
        if not chunk:
            if response.length:  # the connection closed before Content-Length bytes came
                raise http.client.IncompleteRead(b"", response.length)
            break
        if decode is not None:
            chunk = decode(chunk, MAX_BODY - size)
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)
