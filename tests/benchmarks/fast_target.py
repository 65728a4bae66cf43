"""A fast local HTTP target for benchmarks: answers every request with a small JSON 200.

    python tests/benchmarks/fast_target.py PORT

One asyncio process; it closes each connection after its answer (checks connect afresh) and
prints how many requests it answered when stopped with SIGTERM or SIGINT.
"""

import asyncio
import signal
import sys

BODY = b'{"status":"UP","db":{"latency_ms":3}}'
ANSWER = (
    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n"
    b"Content-Length: " + str(len(BODY)).encode() + b"\r\n\r\n" + BODY
)


async def main(port: int) -> None:
    answered = 0

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal answered
        try:
            await reader.readuntil(b"\r\n\r\n")
            writer.write(ANSWER)
            await writer.drain()
            answered += 1
        except (asyncio.IncompleteReadError, ConnectionError):
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
    print(f"answered {answered}", flush=True)


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1])))
