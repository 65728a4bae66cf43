"""A RabbitMQ node of the test's own that speaks only AMQP over TLS (``amqps://``), as a remote
location reaches the broker: one node of `tests.support.cluster` (own name, ports, data, cookie;
the system's node is untouched) presenting a certificate for ``localhost`` signed by a test CA
(`tests.support.certs.Authority`).

    with TlsBroker(tmp_path) as node:  # about 6 s to boot
        node.add_user("eu", "secret", configure="^uptime\\.eu$", write="^pulse\\.results$", read="^uptime\\.eu$",
                      topics={"pulse.results": ("^eu$", "^$")})
        connection = pika.BlockingConnection(pika.URLParameters(node.url("eu", "secret")))

`url` carries the verification in the URL string, as Pulse's broker URL must: pika's
``ssl_options`` query argument, a Python dict literal (percent-encoded) naming the CA file.
"""

from __future__ import annotations

import zlib
from pathlib import Path
from urllib.parse import quote

from tests.support.certs import Authority
from tests.support.cluster import DIST_OFFSET, Cluster, bind_error
from tests.support.env import NAMESPACE

#: One node per tox environment (``pulse-tls-py312@localhost``...), so environments may run side by side.
NODE = "pulse-tls-" + NAMESPACE.removeprefix("pulse_test_") + "@localhost"
PORTS = range(5791, 5891)  # the node's AMQPS port is one of these whose distribution port (+20000) is free too


def free_port() -> int:
    """A port of PORTS free on 127.0.0.1 together with its distribution port: the first from a
    place of the environment's own, so that environments starting together seldom pick the same."""
    start = zlib.crc32(NODE.encode()) % len(PORTS)
    for port in [*PORTS[start:], *PORTS[:start]]:
        if bind_error("127.0.0.1", port) is None and bind_error("127.0.0.1", port + DIST_OFFSET) is None:
            return port
    raise AssertionError(f"no free port in {PORTS.start}-{PORTS.stop - 1} (with its +{DIST_OFFSET})")


class TlsBroker(Cluster):
    """One RabbitMQ node listening for AMQPS only, on 127.0.0.1:``port`` (by default the first free
    one of PORTS), with a certificate for ``localhost`` signed by ``authority`` (by default a new
    one in ``directory``). ``guest`` has every permission on the vhost ``/``, as on any node. Use
    as a context manager, or call ``start()`` and ``stop()``."""

    def __init__(self, directory: Path, port: int | None = None, authority: Authority | None = None) -> None:
        self.port = port or free_port()
        super().__init__(size=1, base_port=self.port)
        self.node = NODE
        self.nodes = [NODE]
        self.authority = authority or Authority(directory)

    def url(self, user: str = "guest", password: str = "guest", *, cafile: Path | None = None) -> str:
        """An ``amqps://`` URL for ``user`` on the vhost ``/`` at ``localhost``, verifying the node's
        certificate and host name against ``cafile`` (by default the node's CA)."""
        options = quote(repr({"cafile": str(cafile or self.authority.pem)}), safe="")
        return (
            f"amqps://{quote(user, safe='')}:{quote(password, safe='')}@localhost:{self.port}/%2F?ssl_options={options}"
        )

    def add_user(
        self, name: str, password: str, *, configure: str, write: str, read: str, topics: dict[str, tuple[str, str]]
    ) -> None:
        """A user with these permissions on the vhost ``/`` (regular expressions over the names of
        queues and exchanges) and, on each topic exchange of ``topics``, these (write, read)
        regular expressions over routing keys."""
        self.ctl(self.node, "add_user", name, password)
        self.ctl(self.node, "set_permissions", "-p", "/", name, configure, write, read)
        for exchange, (write_keys, read_keys) in topics.items():
            self.ctl(self.node, "set_topic_permissions", "-p", "/", name, exchange, write_keys, read_keys)

    def _write_files(self) -> None:
        super()._write_files()
        certificate, key = self.authority.leaf(["localhost"], days=30)
        settings = [
            "listeners.tcp = none",
            f"listeners.ssl.default = 127.0.0.1:{self.port}",
            f"ssl_options.cacertfile = {self.authority.pem}",
            f"ssl_options.certfile = {certificate}",
            f"ssl_options.keyfile = {key}",
            "ssl_options.verify = verify_none",  # clients log in with a password, not a certificate
            "ssl_options.fail_if_no_peer_cert = false",
        ]
        (self._folder(self.node) / "rabbitmq.conf").write_text("\n".join(settings) + "\n")
