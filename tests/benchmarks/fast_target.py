"""A fast local HTTP target for benchmarks: answers every request with a small JSON 200.

    python tests/benchmarks/fast_target.py PORT

One asyncio process. It reads each request whole (head and Content-Length body), answers, and
closes the connection, unless the request asked to keep it alive (``Connection: keep-alive``, as
notification deliveries do): then it waits on it for the next request. Uptime checks send
``Connection: close`` and connect afresh. It counts requests and, for
notification deliveries, distinct X-Pulse-Delivery ids; stopped with SIGTERM or SIGINT it prints
one JSON line: requests, distinct deliveries, and the monotonic times of the first and last request.
"""

import asyncio
import json
import signal
import sys
import time

BODY = b'{"status":"UP","db":{"latency_ms":3}}'
HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " + str(len(BODY)).encode()
ANSWER = HEAD + b"\r\nConnection: close\r\n\r\n" + BODY
KEPT = HEAD + b"\r\nConnection: keep-alive\r\n\r\n" + BODY


async def main(port: int) -> None:
    requests, deliveries, times = 0, set(), []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal requests
        try:
            kept = True
            while kept:
                head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").lower()
                fields = dict(line.split(": ", 1) for line in head.split("\r\n")[1:] if ": " in line)
                await reader.readexactly(int(fields.get("content-length", "0")))
                requests += 1
                deliveries.add(fields.get("x-pulse-delivery"))
                times.append(time.monotonic())
                kept = fields.get("connection", "").strip() == "keep-alive"
                writer.write(KEPT if kept else ANSWER)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, ValueError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", port, backlog=1024)
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        asyncio.get_running_loop().add_signal_handler(sig, stop.set)
    print("ready", flush=True)
    async with server:
        await stop.wait()
    report = {"requests": requests, "distinct": len(deliveries - {None}), "first": min(times, default=None)}
    print(json.dumps({**report, "last": max(times, default=None)}), flush=True)


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1])))
