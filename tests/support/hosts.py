"""Other hosts on this machine, for tests: Linux network namespaces joined to the root one by veth pairs.

    with Host("a") as host:
        host.forward(5432)                                  # host.gateway:5432 -> 127.0.0.1:5432
        api = host.forward(15672, 0).port                   # host.gateway:<api> -> 127.0.0.1:15672
        worker = host.popen([sys.executable, "-m", "dramatiq", "pulse.actors"], env=...)
        ...
        host.kill()                                         # the host died: SIGKILL all of it

A host is a namespace ``pulse-test-<name>-<pid>`` (``pid``: the test process that made it) with its
own loopback and one link to the root namespace: the veth pair ``pt<slot>r`` (root side) and
``pt<slot>h`` (host side). It has no default route: it reaches only the root side of its link.

Address plan: host ``slot`` N (1..254, the first free one, taken atomically by creating the veth
pair, so two hosts, or two test runs at once, never share one) owns ``10.213.N.0/30``: the root side
`gateway` is ``10.213.N.1`` and the host's `address` ``10.213.N.2``. Nothing else on the machine may
route any of ``10.213.0.0/16``; a host refuses to start if something does.

PostgreSQL and RabbitMQ listen on 127.0.0.1, which inside a host is the host's own loopback:
`Host.forward` makes ``gateway:port`` (or another port of the gateway) reach ``127.0.0.1:port`` of
the root namespace through a `Relay`, so those servers see connections come from loopback. Servers
of the test itself can bind the gateway address (or 0.0.0.0).

Making a host first removes namespaces ``pulse-test-*-<pid>`` whose process is gone (a crashed
run's leftovers); their root-side veths go with them, within moments, as the kernel deletes them.
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from tests.support.forward import Relay

ROOT = Path(__file__).resolve().parents[2]
PREFIX = "pulse-test-"
NETWORK = ipaddress.IPv4Network("10.213.0.0/16")
SLOTS = range(1, 255)
KILL_TIMEOUT_S = 10.0  # seconds a process may take to die, or to enter its host
IP = shutil.which("ip") or "ip"  # absolute, so the PATH a host's command is given does not matter


class HostsUnavailableError(RuntimeError):
    """This machine cannot make hosts (not root, no iproute2, or namespaces not permitted)."""


def ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run iproute2's ``ip ARGS``; with ``check``, fail with its error output if it fails."""
    result = subprocess.run([IP, *args], capture_output=True, text=True, timeout=30)
    if check and result.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: {result.stderr.strip()}")
    return result


def namespace_pids(namespace: str) -> list[int]:
    """The processes in ``namespace`` (none once it is gone)."""
    return [int(pid) for pid in ip("netns", "pids", namespace, check=False).stdout.split()]


def kill_namespace(namespace: str) -> None:
    """SIGKILL every process in ``namespace`` until none is left (processes may fork meanwhile)."""
    deadline = time.monotonic() + KILL_TIMEOUT_S
    while pids := namespace_pids(namespace):
        if time.monotonic() > deadline:
            raise RuntimeError(f"processes {pids} of {namespace} survive SIGKILL")
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.02)


def remove_leftovers() -> None:
    """Delete the namespaces of test processes that are gone, with every process in them."""
    for line in ip("netns", "list").stdout.splitlines():
        namespace = line.split()[0]
        owner = re.fullmatch(re.escape(PREFIX) + r".*-(\d+)", namespace)
        if owner and not os.path.exists(f"/proc/{owner[1]}"):
            kill_namespace(namespace)
            ip("netns", "delete", namespace, check=False)


def check_network_is_free() -> None:
    """Fail if a route other than the hosts' own links (a slot's /30 from its gateway, whatever the
    link's name: while being deleted it is shown as ``if<index>``) overlaps `NETWORK`."""
    for route in json.loads(ip("-j", "-4", "route", "show").stdout):
        if route["dst"] == "default":
            continue
        network = ipaddress.IPv4Network(route["dst"])
        if network.subnet_of(NETWORK) and network.prefixlen == 30 and route.get("prefsrc") == str(network[1]):
            continue
        if network.overlaps(NETWORK):
            raise RuntimeError(f"{NETWORK} is already routed on this machine ({route}): the hosts need it")


class Host:
    """Another host: a network namespace linked to the root one, its processes and its relays."""

    def __init__(self, name: str) -> None:
        if os.geteuid() != 0:
            raise HostsUnavailableError("network namespaces need root (ip netns add)")
        if shutil.which(IP) is None:
            raise HostsUnavailableError("iproute2's ip not found: install the Debian package iproute2")
        self.namespace = f"{PREFIX}{name}-{os.getpid()}"
        self.processes: list[subprocess.Popen[Any]] = []
        self.relays: list[Relay] = []
        self.slot = 0  # none yet
        self.closed = False
        remove_leftovers()
        check_network_is_free()
        added = ip("netns", "add", self.namespace, check=False)
        if added.returncode != 0:
            raise HostsUnavailableError(f"ip netns add {self.namespace}: {added.stderr.strip()}")
        try:
            self._link()
        except BaseException:
            self.close()
            raise

    def _link(self) -> None:
        for slot in SLOTS:
            pair = (f"pt{slot}r", "type", "veth", "peer", "name", f"pt{slot}h", "netns", self.namespace)
            added = ip("link", "add", *pair, check=False)
            if added.returncode == 0:
                self.slot = slot
                break
            if "File exists" not in added.stderr:  # not merely another host's (of any test run) slot
                raise RuntimeError(f"ip link add {' '.join(pair)}: {added.stderr.strip()}")
        else:
            raise RuntimeError(f"no free slot for a host: pt{SLOTS[0]}r..pt{SLOTS[-1]}r all exist")
        ip("addr", "add", f"{self.gateway}/30", "dev", self.root_link)
        ip("link", "set", self.root_link, "up")
        ip("-n", self.namespace, "addr", "add", f"{self.address}/30", "dev", f"pt{slot}h")
        ip("-n", self.namespace, "link", "set", f"pt{slot}h", "up")
        ip("-n", self.namespace, "link", "set", "lo", "up")

    @property
    def root_link(self) -> str:
        """The root side of the host's veth pair."""
        return f"pt{self.slot}r"

    @property
    def gateway(self) -> str:
        """The root side's address: what processes in the host connect to."""
        return f"10.213.{self.slot}.1"

    @property
    def address(self) -> str:
        """The host's own address, which servers in the root namespace see connections come from."""
        return f"10.213.{self.slot}.2"

    def forward(self, port: int, gateway_port: int | None = None) -> Relay:
        """Make ``gateway:gateway_port`` reach ``127.0.0.1:port`` of the root namespace, until `close`.
        ``gateway_port`` is ``port`` by default, 0 for any free one (the relay's `port`): a server
        listening on 0.0.0.0 (RabbitMQ's management API, 15672) already holds ``gateway:port``, and
        answers there as to another machine (RabbitMQ's guest may log in only from loopback)."""
        listen = (self.gateway, port if gateway_port is None else gateway_port)
        relay = Relay(listen, ("127.0.0.1", port))
        self.relays.append(relay)
        return relay

    def loopback(self, *ports: int) -> None:
        """Make ``127.0.0.1:port`` inside the host reach ``127.0.0.1:port`` of the root namespace, for
        each port, over the host's link: a relay in the host to the gateway, and `forward` on from
        there. So addresses the tests use (the broker's, the database's, a target's URL) are the
        same inside every host, and the traffic crosses the veth pair. The relay in the host dies
        with the host (`kill`), cutting its connections as a host that dies would."""
        for port in ports:
            self.forward(port)
        relay = [sys.executable, "-m", "tests.support.hosts", self.gateway, *map(str, ports)]
        process = self.popen(relay, cwd=ROOT, stdout=subprocess.PIPE, text=True)
        assert process.stdout and process.stdout.readline().strip() == "ready", f"the relay in {self.namespace}"

    def popen(self, command: Sequence[str], env: dict[str, str] | None = None, **kwargs: Any) -> subprocess.Popen[Any]:
        """Start ``command`` inside the host, in a session (and process group) of its own; ``env``
        and ``kwargs`` as for `subprocess.Popen` (``env=None``: this process's environment). Returns
        once the process is inside (``ip netns exec`` enters the namespace only after it started),
        so `kill` cannot miss it."""
        process = subprocess.Popen(
            [IP, "netns", "exec", self.namespace, *command], env=env, start_new_session=True, **kwargs
        )
        self.processes.append(process)
        deadline = time.monotonic() + KILL_TIMEOUT_S
        while not self._inside(process.pid) and process.poll() is None:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{command} did not enter {self.namespace}")
            time.sleep(0.001)
        return process

    def _inside(self, pid: int) -> bool:
        """Whether process ``pid`` is in the host's network namespace."""
        try:
            own = os.stat(f"/proc/{pid}/ns/net")
        except FileNotFoundError:  # gone
            return False
        host = os.stat(f"/var/run/netns/{self.namespace}")  # where ip netns keeps it
        return (own.st_dev, own.st_ino) == (host.st_dev, host.st_ino)

    def kill(self) -> None:
        """The host dies: SIGKILL every process in it, and reap those `popen` started (within
        `KILL_TIMEOUT_S` seconds, or fail). The host stays up: `popen` may start others."""
        kill_namespace(self.namespace)
        for process in self.processes:
            process.wait(KILL_TIMEOUT_S)

    def close(self) -> None:
        """Kill the host's processes, stop its relays, delete its link and namespace; again does nothing."""
        if self.closed:
            return
        self.closed = True
        try:
            self.kill()
        finally:
            for relay in self.relays:
                relay.close()
            if self.slot:
                ip("link", "delete", self.root_link)  # both ends, at once
            ip("netns", "delete", self.namespace)

    def __enter__(self) -> Host:
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.close()


def relay_to(gateway: str, ports: Sequence[int]) -> None:
    """Inside a host: relay ``127.0.0.1:port`` to ``gateway:port`` for each port, until killed."""
    for port in ports:
        Relay(("127.0.0.1", port), (gateway, port))
    print("ready", flush=True)
    signal.pause()


if __name__ == "__main__":
    relay_to(sys.argv[1], [int(port) for port in sys.argv[2:]])
