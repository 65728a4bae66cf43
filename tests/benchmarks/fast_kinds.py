"""Fast local targets for the tcp and dns check kinds in benchmarks.

    python tests/benchmarks/fast_kinds.py TCP_PORT DNS_PORT

One asyncio process on 127.0.0.1: a TCP server that accepts each connection and closes it when the
client does (a tcp check with nothing to send connects and hangs up), and a UDP DNS server that
answers every question with an A record 127.0.0.1 (dnspython builds the answer). It counts
connections and queries; stopped with SIGTERM or SIGINT it prints one JSON line: tcp, dns.
"""

import asyncio
import json
import signal
import sys

import dns.message
import dns.rrset


async def main(tcp_port: int, dns_port: int) -> None:
    counted = {"tcp": 0, "dns": 0}

    async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        counted["tcp"] += 1
        try:
            await reader.read(1)  # until the client closes (or sends something)
        except ConnectionError:
            pass
        finally:
            writer.close()

    class Answer(asyncio.DatagramProtocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            self.transport = transport

        def datagram_received(self, data: bytes, addr: tuple) -> None:
            counted["dns"] += 1
            query = dns.message.from_wire(data)
            reply = dns.message.make_response(query)
            question = query.question[0]
            reply.answer.append(dns.rrset.from_text(question.name, 60, "IN", "A", "127.0.0.1"))
            self.transport.sendto(reply.to_wire(), addr)  # type: ignore[attr-defined]

    loop = asyncio.get_running_loop()
    server = await asyncio.start_server(accept, "127.0.0.1", tcp_port, backlog=1024)
    transport, _ = await loop.create_datagram_endpoint(Answer, local_addr=("127.0.0.1", dns_port))
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    print("ready", flush=True)
    async with server:
        await stop.wait()
    transport.close()
    print(json.dumps(counted), flush=True)


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), int(sys.argv[2])))
